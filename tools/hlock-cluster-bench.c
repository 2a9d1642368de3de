// SPDX-License-Identifier: GPL-2.0
/*
 * hlock-cluster-bench: what a cluster lock space costs, on a node of
 * scripts/vm-cluster (make bench runs it through scripts/vm-cluster-bench).
 *
 *   hlock-cluster-bench relock [ROUNDS [PAIRS]]
 *	X lock+unlock pairs on one resource, again and again, by a locker of
 *	the cluster lock space (this node keeps the DLM lock: no message)
 *	and by one of a local lock space (a new IPC namespace), PAIRS each,
 *	in ROUNDS interleaved rounds; prints the median ns per pair of each
 *	and the median of the ratios within a round.
 *   hlock-cluster-bench handoff ROUNDS
 *	On nodes 1 and 2 at once (HLOCK_NODE): in round r, node 1 + r % 2
 *	times one X lock+unlock of one resource, which the other node's DLM
 *	lock holds (cached) from the round before, so that the lock waits
 *	for a whole handoff: the blocking AST, the other node's conversion
 *	down, the grant.  Between rounds both nodes meet at a barrier
 *	(vm-cluster-barrier, not timed).  Prints the median of the node's
 *	own rounds, the first two left out (the DLM lock is new there).
 *
 * Prints "bench: KEY VALUE" lines; asserts nothing.  Exit status 1 if a
 * lock call fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hlock.h"

#define MAX_ROUNDS	101

static void die(const char *what, int err)
{
	fprintf(stderr, "hlock-cluster-bench: %s: %s\n", what, strerror(err));
	exit(1);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One X lock+unlock pair of @path on @fd, waiting as long as it takes. */
static void pair(int fd, const char *path)
{
	int ret = hlock_lock(fd, path, HLOCK_X, 0, -1);

	if (ret)
		die("lock", -ret);
	ret = hlock_unlock(fd, path);
	if (ret < 0)
		die("unlock", -ret);
}

/* @n pairs: ns per pair. */
static double pairs(int fd, const char *path, long n)
{
	long long t0 = now_ns();
	long i;

	for (i = 0; i < n; i++)
		pair(fd, path);
	return (double)(now_ns() - t0) / n;
}

static int relock(int rounds, long n)
{
	double cl[MAX_ROUNDS], lo[MAX_ROUNDS], ratio[MAX_ROUNDS];
	const char *path = "bench/relock";
	int fc, fl, r;

	if (rounds < 1 || rounds > MAX_ROUNDS || n < 1)
		die("rounds or pairs", EINVAL);
	/* A locker stays in the space it was opened in. */
	fc = hlock_open();
	if (fc < 0)
		die("open", -fc);
	if (unshare(CLONE_NEWIPC))
		die("unshare(CLONE_NEWIPC)", errno);
	fl = hlock_open();
	if (fl < 0)
		die("open in a new IPC namespace", -fl);
	/* The first pair of each makes the resources (and the DLM lock). */
	pairs(fc, path, 1);
	pairs(fl, path, 1);
	for (r = 0; r < rounds; r++) {
		if (r % 2) {
			lo[r] = pairs(fl, path, n);
			cl[r] = pairs(fc, path, n);
		} else {
			cl[r] = pairs(fc, path, n);
			lo[r] = pairs(fl, path, n);
		}
		ratio[r] = cl[r] / lo[r];
	}
	printf("bench: cluster.relock_ns %.0f\n", median(cl, rounds));
	printf("bench: cluster.local_ns %.0f\n", median(lo, rounds));
	printf("bench: cluster.relock_x_local %.3f\n", median(ratio, rounds));
	return 0;
}

static int handoff(int rounds)
{
	const char *path = "bench/handoff", *env = getenv("HLOCK_NODE");
	double t[MAX_ROUNDS];
	int fd, r, node, n = 0;
	char cmd[64];

	node = env ? atoi(env) : 0;
	if (node < 1 || node > 2 || rounds < 6 || rounds > MAX_ROUNDS)
		die("HLOCK_NODE 1 or 2, and 6 to 101 rounds", EINVAL);
	fd = hlock_open();
	if (fd < 0)
		die("open", -fd);
	for (r = 0; r < rounds; r++) {
		if (r % 2 == node - 1) {
			double ns = pairs(fd, path, 1);

			if (r >= 2)
				t[n++] = ns;
		}
		snprintf(cmd, sizeof(cmd), "vm-cluster-barrier handoff-%d", r);
		if (system(cmd))
			die(cmd, EIO);
	}
	printf("bench: cluster.handoff_us_node%d %.0f\n", node,
	       median(t, n) / 1000);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "relock"))
		return relock(argc > 2 ? atoi(argv[2]) : 15,
			      argc > 3 ? atol(argv[3]) : 2000);
	if (argc == 3 && !strcmp(argv[1], "handoff"))
		return handoff(atoi(argv[2]));
	fprintf(stderr, "usage: hlock-cluster-bench relock [ROUNDS [PAIRS]]\n"
		"       hlock-cluster-bench handoff ROUNDS\n");
	return 64;
}
