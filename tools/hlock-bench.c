// SPDX-License-Identifier: GPL-2.0
/*
 * hlock-bench: what the statistics cost on the uncontended path, and
 * whether that path slows down as a locker holds more resources.
 *
 * Times lock+unlock pairs by one locker on one path with the module
 * parameter "stats" on and off, in alternating rounds so that drift of
 * the (noisy, emulated) machine hits both alike, and reports the ratio
 * of the medians.  Absolute times under TCG mean little; the ratio is the
 * result.  `make bench` runs it in a VM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hlock.h"

#define STATS_PARAM	"/sys/module/hlock/parameters/stats"
#define MAX_ROUNDS	101

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int set_stats(int on)
{
	int fd = open(STATS_PARAM, O_WRONLY);
	int ok;

	if (fd < 0)
		return -errno;
	ok = write(fd, on ? "Y" : "N", 1) == 1;
	close(fd);
	return ok ? 0 : -EIO;
}

/* ns per lock+unlock pair over @iters pairs. */
static double run(int fd, const char *path, int mode, long iters)
{
	int64_t t0 = now_ns();
	long i;

	for (i = 0; i < iters; i++) {
		if (hlock_lock(fd, path, mode, 0, 0) ||
		    hlock_unlock(fd, path) != 0) {
			fprintf(stderr, "hlock-bench: lock/unlock failed\n");
			exit(1);
		}
	}
	return (double)(now_ns() - t0) / iters;
}

/* Intents a lock of @path takes: the root and every proper prefix. */
static int intents(const char *path)
{
	int n = 0;

	if (!*path)
		return 0;
	for (; *path; path++)
		n += *path == '/';
	return n + 1;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *path = "bench/db/coll";
	double on[MAX_ROUNDS], off[MAX_ROUNDS];
	long iters = 20000, held = 1000, i;
	int rounds = 7, c, fd, r, ret;
	double empty, full;
	char name[32];

	while ((c = getopt(argc, argv, "n:r:p:H:")) != -1) {
		switch (c) {
		case 'H':
			held = atol(optarg);
			break;
		case 'n':
			iters = atol(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'p':
			path = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: hlock-bench [-n pairs] [-r rounds] [-p path] [-H held]\n");
			return 64;
		}
	}
	if (iters < 1 || rounds < 1 || rounds > MAX_ROUNDS || held < 0) {
		fprintf(stderr, "hlock-bench: bad -n, -r or -H\n");
		return 64;
	}
	fd = hlock_open();
	if (fd < 0) {
		fprintf(stderr, "hlock-bench: %s: %s\n", HLOCK_DEVICE,
			strerror(-fd));
		return 69;
	}
	/* Warm up caches and the resources of the path. */
	run(fd, path, HLOCK_X, iters / 10 + 1);
	for (r = 0; r < rounds; r++) {
		/* Alternate which goes first, so neither always runs warm. */
		int first = r & 1;

		ret = set_stats(first);
		if (!ret) {
			(first ? on : off)[r] = run(fd, path, HLOCK_X, iters);
			ret = set_stats(!first);
		}
		if (ret) {
			fprintf(stderr, "hlock-bench: %s: %s\n", STATS_PARAM,
				strerror(-ret));
			return 1;
		}
		(first ? off : on)[r] = run(fd, path, HLOCK_X, iters);
	}
	set_stats(1);
	qsort(on, rounds, sizeof(on[0]), cmp);
	qsort(off, rounds, sizeof(off[0]), cmp);
	printf("uncontended lock+unlock of \"%s\" (X and %d intents), median of %d rounds x %ld pairs:\n",
	       path, intents(path), rounds, iters);
	printf("  stats off: %.0f ns/pair (baseline)\n", off[rounds / 2]);
	printf("  stats on:  %.0f ns/pair\n", on[rounds / 2]);
	printf("  ratio on/off: %.3f\n", on[rounds / 2] / off[rounds / 2]);

	/* The same pairs while the locker holds many other resources. */
	empty = run(fd, path, HLOCK_X, iters);
	for (i = 0; i < held; i++) {
		snprintf(name, sizeof(name), "held/%ld", i);
		ret = hlock_lock(fd, name, HLOCK_S, 0, 0);
		if (ret) {
			fprintf(stderr, "hlock-bench: %s: %s\n", name,
				strerror(-ret));
			return 1;
		}
	}
	full = run(fd, path, HLOCK_X, iters);
	printf("the same while the locker holds %ld other resources:\n",
	       held);
	printf("  holding none: %.0f ns/pair (baseline)\n", empty);
	printf("  holding %ld: %.0f ns/pair\n", held, full);
	printf("  ratio: %.3f\n", full / empty);
	return 0;
}
