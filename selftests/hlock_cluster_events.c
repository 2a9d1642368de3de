// SPDX-License-Identifier: GPL-2.0
/*
 * A helper of hlock_cluster_test.sh: hold a lock until a waiter blocks on
 * it, on this node or another; or queue locks without blocking.
 *
 *   hlock_cluster_events PATH SECONDS
 *   hlock_cluster_events -l PATH SECONDS
 *   hlock_cluster_events -q PATH SECONDS
 *
 * Takes X on PATH, asks for blocking notifications, prints "held", and
 * polls the locker for POLLPRI for up to SECONDS.  Exits 0 once POLLPRI
 * came with HLOCK_EVENT_BLOCKING and HLOCK_IOC_BLOCKING says that PATH
 * blocks a waiter; then closes the locker, which releases the lock.  Exits
 * 1 otherwise (no notification in time, or a call failed).
 *
 * With -l, it takes S on PATH, prints "held" and waits for POLLPRI with
 * HLOCK_EVENT_LOST: its node lost the cluster.  Then a lock of another
 * path, and a recursion on PATH, must fail with ENOLINK, and the unlock
 * of PATH work.  Exits 0 when all of that held.
 *
 * With -q, it queues S on PATH twice, each on a locker of its own: with
 * HLOCK_F_ASYNC, and through io_uring.  It prints "queued" once both
 * wait (-EINPROGRESS, no POLLIN, no CQE), then waits up to SECONDS for
 * both to complete (POLLIN and hlock_wait(); the CQE), checks that both
 * lockers hold S and prints "granted".  Exits 0 when all of that held.
 *
 * With -e, while another node holds PATH, it ends three io_uring X locks
 * that wait for that node, each on a locker of its own, the three ways a
 * ring lock ends without its grant: by its timeout (300 ms: -ETIMEDOUT),
 * by an unlock of its path (-ECANCELED), and by closing the locker and
 * tearing the ring down (the locker's records go).  Each must end within
 * SECONDS and leave its locker holding nothing, with nothing queued.  It
 * prints "ended" and exits 0 when all of that held.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hlock.h"
#include "hlock_uring.h"

/*
 * Take @mode on @path, ask for @want, print "held", then wait up to
 * @seconds for POLLPRI with @event among the events.  Return: the locker,
 * or -1 (said on stderr).
 */
static int hold_until(const char *path, int mode, unsigned int want,
		      int seconds, unsigned int event)
{
	struct pollfd pfd = { .events = POLLPRI };
	unsigned int events = 0;
	int fd, ret;

	fd = hlock_open();
	if (fd < 0 || hlock_lock(fd, path, mode, 0, -1) ||
	    (want && hlock_events_want(fd, want))) {
		fprintf(stderr, "hlock_cluster_events: cannot hold %s\n", path);
		return -1;
	}
	printf("held\n");
	fflush(stdout);
	pfd.fd = fd;
	ret = poll(&pfd, 1, seconds * 1000);
	if (ret != 1 || !(pfd.revents & POLLPRI)) {
		fprintf(stderr, "hlock_cluster_events: no POLLPRI (%d)\n", ret);
		return -1;
	}
	ret = hlock_events(fd, &events);
	if (ret || !(events & event)) {
		fprintf(stderr, "hlock_cluster_events: events %#x, not %#x (%s)\n",
			events, event, ret ? strerror(-ret) : "");
		return -1;
	}
	return fd;
}

/* -l: wait for HLOCK_EVENT_LOST on @path's S, then check what follows. */
static int lost(const char *path, int seconds)
{
	int fd = hold_until(path, HLOCK_S, 0, seconds, HLOCK_EVENT_LOST);
	int ret;

	if (fd < 0)
		return 1;
	ret = hlock_lock(fd, "lost-other", HLOCK_S, 0, 0);
	if (ret != -ENOLINK) {
		fprintf(stderr, "hlock_cluster_events: a new lock: %d\n", ret);
		return 1;
	}
	ret = hlock_lock(fd, path, HLOCK_S, 0, 0);
	if (ret != -ENOLINK) {
		fprintf(stderr, "hlock_cluster_events: a recursion: %d\n", ret);
		return 1;
	}
	ret = hlock_unlock(fd, path);
	if (ret) {
		fprintf(stderr, "hlock_cluster_events: unlock: %d\n", ret);
		return 1;
	}
	printf("lost\n");
	return 0;
}

/* -q: S on @path, queued with HLOCK_F_ASYNC and through io_uring. */
static int queued(const char *path, int seconds)
{
	struct __kernel_timespec ts = { .tv_sec = seconds };
	struct pollfd pfd = { .events = POLLIN };
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int a, u, ret;

	a = hlock_open();
	u = hlock_open();
	ret = io_uring_queue_init(8, &ring, 0);
	if (a < 0 || u < 0 || ret) {
		fprintf(stderr, "hlock_cluster_events: no lockers or ring (%d)\n",
			ret);
		return 1;
	}
	ret = hlock_lock(a, path, HLOCK_S, HLOCK_F_ASYNC, -1);
	if (ret != -EINPROGRESS) {
		fprintf(stderr, "hlock_cluster_events: async S: %d\n", ret);
		return 1;
	}
	sqe = io_uring_get_sqe(&ring);
	hlock_prep_lock(sqe, u, path, HLOCK_S, 0, -1);
	ret = io_uring_submit(&ring);
	if (ret != 1) {
		fprintf(stderr, "hlock_cluster_events: submit: %d\n", ret);
		return 1;
	}
	pfd.fd = a;
	if (poll(&pfd, 1, 0) || io_uring_peek_cqe(&ring, &cqe) != -EAGAIN) {
		fprintf(stderr, "hlock_cluster_events: S completed at once\n");
		return 1;
	}
	printf("queued\n");
	fflush(stdout);
	ret = poll(&pfd, 1, seconds * 1000);
	if (ret != 1 || !(pfd.revents & POLLIN)) {
		fprintf(stderr, "hlock_cluster_events: no POLLIN (%d)\n", ret);
		return 1;
	}
	ret = hlock_wait(a, 0);
	if (ret) {
		fprintf(stderr, "hlock_cluster_events: async S: %s\n",
			strerror(-ret));
		return 1;
	}
	ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	if (ret || cqe->res) {
		fprintf(stderr, "hlock_cluster_events: io_uring S: %s\n",
			strerror(ret ? -ret : -cqe->res));
		return 1;
	}
	io_uring_cqe_seen(&ring, cqe);
	if (hlock_held(a, path) != HLOCK_S || hlock_held(u, path) != HLOCK_S) {
		fprintf(stderr, "hlock_cluster_events: S not held after its completion\n");
		return 1;
	}
	printf("granted\n");
	io_uring_queue_exit(&ring);
	close(a);
	close(u);
	return 0;
}

#define ENDS_FAIL(...)	do { \
	fprintf(stderr, "hlock_cluster_events: " __VA_ARGS__); \
	fprintf(stderr, "\n"); \
	return 1; \
} while (0)

/*
 * Submit X on @path for locker @fd through @ring, with @timeout_ns (-1:
 * none); it must wait.  Return: 0, or 1 (said on stderr).
 */
static int ring_x(struct io_uring *ring, int fd, const char *path,
		  int64_t timeout_ns)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;

	if (!sqe)
		ENDS_FAIL("no SQE");
	hlock_prep_lock(sqe, fd, path, HLOCK_X, 0, timeout_ns);
	if (io_uring_submit(ring) != 1)
		ENDS_FAIL("submit failed");
	if (!io_uring_peek_cqe(ring, &cqe))
		ENDS_FAIL("X on %s completed at once: %d", path, cqe->res);
	return 0;
}

/* The CQE of the one request in flight on @ring, within @seconds. */
static int ring_end(struct io_uring *ring, int seconds, int *res)
{
	struct __kernel_timespec ts = { .tv_sec = seconds };
	struct io_uring_cqe *cqe;
	int ret;

	ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (ret)
		return ret;
	*res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

/* Locker @fd holds nothing of @path and has nothing queued. */
static int left_nothing(int fd, const char *path, const char *how)
{
	int ret = hlock_held(fd, path);

	if (ret)
		ENDS_FAIL("after %s, %s is held (%d)", how, path, ret);
	ret = hlock_wait(fd, 0);
	if (ret != -ENOENT)
		ENDS_FAIL("after %s, wait says %d", how, ret);
	return 0;
}

/* How many records of the table a locker described as @why has. */
static int records_of(int fd, const char *why)
{
	const struct hlock_lock_record *rec;
	int i, n, mine = 0;
	void *buf;

	n = hlock_table_alloc(fd, &buf);
	if (n < 0)
		return n;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec))
		mine += !strcmp(hlock_record_why(rec), why);
	free(buf);
	return mine;
}

/* -e: the three ends of a ring lock that waits for another node. */
static int ends(const char *path, int seconds)
{
	struct io_uring ring;
	int fd, t, ret, res, i, n = 1;

	if (io_uring_queue_init(8, &ring, 0))
		ENDS_FAIL("no ring");
	/* 1. Its timeout. */
	fd = hlock_open();
	if (fd < 0 || ring_x(&ring, fd, path, 300 * 1000000LL))
		return 1;
	ret = ring_end(&ring, seconds, &res);
	if (ret || res != -ETIMEDOUT)
		ENDS_FAIL("timed X on %s: wait %d, res %d", path, ret,
			  ret ? 0 : res);
	if (left_nothing(fd, path, "a ring lock's timeout"))
		return 1;
	close(fd);
	/* 2. An unlock of its path. */
	fd = hlock_open();
	if (fd < 0 || ring_x(&ring, fd, path, -1))
		return 1;
	usleep(200000);
	ret = hlock_unlock(fd, path);
	if (ret)
		ENDS_FAIL("the unlock of %s, queued through the ring, said %d",
			  path, ret);
	ret = ring_end(&ring, seconds, &res);
	if (ret || res != -ECANCELED)
		ENDS_FAIL("X on %s withdrawn: wait %d, res %d", path, ret,
			  ret ? 0 : res);
	if (left_nothing(fd, path, "a ring lock's withdrawal"))
		return 1;
	/* 3. Its locker closed, then the ring torn down. */
	t = hlock_open();
	if (t < 0 || hlock_describe(t, "ring-teardown") ||
	    ring_x(&ring, t, path, -1))
		return 1;
	usleep(200000);
	if (records_of(fd, "ring-teardown") <= 0)
		ENDS_FAIL("the queued X on %s shows no record", path);
	close(t);
	io_uring_queue_exit(&ring);
	for (i = 0; n > 0 && i < seconds * 100; i++) {
		usleep(10000);
		n = records_of(fd, "ring-teardown");
	}
	if (n)
		ENDS_FAIL("the closed locker kept %d records after its ring went",
			  n);
	close(fd);
	printf("ended\n");
	return 0;
}

int main(int argc, char **argv)
{
	int fd, ret;

	if (argc == 4 && !strcmp(argv[1], "-l"))
		return lost(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "-q"))
		return queued(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "-e"))
		return ends(argv[2], atoi(argv[3]));
	if (argc != 3) {
		fprintf(stderr, "usage: hlock_cluster_events [-l | -q | -e] PATH SECONDS\n");
		return 64;
	}
	fd = hold_until(argv[1], HLOCK_X, HLOCK_EVENT_BLOCKING, atoi(argv[2]),
			HLOCK_EVENT_BLOCKING);
	if (fd < 0)
		return 1;
	ret = hlock_blocking(fd, argv[1]);
	if (ret != 1) {
		fprintf(stderr, "hlock_cluster_events: HLOCK_IOC_BLOCKING %d\n",
			ret);
		return 1;
	}
	printf("blocking\n");
	return 0;
}
