// SPDX-License-Identifier: GPL-2.0
/*
 * hlock over io_uring: lock, unlock and downgrade submitted as
 * IORING_OP_URING_CMD on a locker's file descriptor (lib/hlock_uring.h).
 *
 * A ring lock that must wait posts its CQE only when it is granted, when
 * its timeout passes, or with -ECANCELED when it is withdrawn: by an
 * unlock of its path, by the ring's teardown or by its submitter's exit.
 * No io-wq worker waits for it.  The tests hold the ring to the ioctls:
 * the same grant order under both policies, the same results and the same
 * rejections; and after a kill -9, an exec or a ring teardown with locks
 * pending, nothing may be left in the lock table.
 *
 * Conventions:
 *  - Every test runs on three rings (the fixture's variants): a plain one,
 *    one with IORING_SETUP_DEFER_TASKRUN (completions only when the task
 *    asks) and one with IORING_SETUP_SQPOLL (a kernel thread submits).
 *    submit_one() waits until the kernel has taken the SQE, so that a
 *    test may look at the lock table right after it, on every ring.
 *  - Grants an unlock made reach the ring as task work: ring_peek() first
 *    flushes them with io_uring_get_events().  CQEs of one batch come in
 *    no set order: grants are compared as sets.
 *  - Waits for what must happen are bounded by generous guards (SETTLE_NS,
 *    TEARDOWN_NS, EXIT_NS); no upper bound on timing is asserted.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <liburing.h>

/* The harness's macros trip -Wextra, as hlock_test.c explains. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"
#include "hlock_uring.h"

#define POLICY_PARAM	"/sys/module/hlock/parameters/grant_policy"
#define NLOCKERS	8
#define RING_ENTRIES	64
/* The queue of the grant order tests, and the releases that drain it. */
#define NQUEUE		6
#define NSTEPS		(NQUEUE + 1)
/*
 * Lockers of the kill -9 and exec tests, and of the many-pending test, at
 * full size and at the least test_scaled() may make them: still several
 * of the kernel's batches of 64 releases, and a thousand waiters on one
 * ring.
 */
#define KILLED		1000
#define KILLED_LEAST	200
#define MANY		10000
#define MANY_LEAST	1000
#define MANY_CQ		16384
/* Hang guards: how long a ring's teardown or a process's end may take. */
#define TEARDOWN_NS	(20 * SEC)
#define EXIT_NS		(60 * SEC)
/* Five of 6.1's watchdog periods (100 ms). */
#define WATCHDOG_WAIT_US	500000
/* The user_data of a ring unlock, apart from the locks' indexes. */
#define UNLOCK_TAG	(1ULL << 32)

/* ------------------------------------------------------------------ */
/* Helpers */

/* io_uring is absent, forbidden, or lacks @flags here: skip, not fail. */
static bool ring_unavailable(int ret, unsigned int flags)
{
	return ret == -ENOSYS || ret == -EPERM || (flags && ret == -EINVAL);
}

/* A ring with @flags; @cq_entries, if not 0, sizes its CQ.  0 or -errno. */
static int ring_setup(struct io_uring *ring, unsigned int entries,
		      unsigned int flags, unsigned int cq_entries)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	p.flags = flags;
	if (cq_entries) {
		p.flags |= IORING_SETUP_CQSIZE;
		p.cq_entries = cq_entries;
	}
	p.sq_thread_idle = 1000;	/* ms, with IORING_SETUP_SQPOLL */
	return io_uring_queue_init_params(entries, ring, &p);
}

/*
 * Submit what is queued: 0 once the kernel has taken every SQE (with
 * IORING_SETUP_SQPOLL its thread takes them a little later), or -errno;
 * -ETIMEDOUT when the thread took none for EXIT_NS.  The guard is on
 * progress, not on the whole batch, which a debug kernel on a loaded
 * host may take minutes to submit.
 */
static int submit_all(struct io_uring *ring, int *submitted)
{
	int64_t end = now_ns() + EXIT_NS;
	int ret = io_uring_submit(ring);
	unsigned int left, last = ~0U;

	if (ret < 0)
		return ret;
	if (submitted)
		*submitted += ret;
	while ((left = io_uring_sq_ready(ring))) {
		if (left < last) {
			last = left;
			end = now_ns() + EXIT_NS;
		} else if (now_ns() > end) {
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
	return 0;
}

/* Give @sqe, filled by a hlock_prep_*(), @data and submit it: 0 or -errno. */
static int submit_one(struct io_uring *ring, struct io_uring_sqe *sqe,
		      uint64_t data)
{
	int n = 0, ret;

	if (!sqe)
		return -EBUSY;
	io_uring_sqe_set_data64(sqe, data);
	ret = submit_all(ring, &n);
	return ret ? ret : n == 1 ? 0 : -EIO;
}

static int submit_lock(struct io_uring *ring, int fd, const char *path,
		       int mode, int64_t timeout_ns, uint64_t data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (sqe)
		hlock_prep_lock(sqe, fd, path, mode, 0, timeout_ns);
	return submit_one(ring, sqe, data);
}

static int submit_unlock(struct io_uring *ring, int fd, const char *path,
			 uint64_t data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (sqe)
		hlock_prep_unlock(sqe, fd, path);
	return submit_one(ring, sqe, data);
}

/* Any command, every argument as given (the rejection tests). */
static int submit_raw(struct io_uring *ring, int fd, unsigned int cmd,
		      const char *path, int mode, unsigned int flags,
		      int64_t timeout_ns)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (sqe)
		hlock_prep_cmd(sqe, fd, cmd, path, mode, flags, timeout_ns);
	return submit_one(ring, sqe, 0);
}

/*
 * Queue a lock on @path for each of @fd[0..n), user_data its index, mode
 * @modes[i % nmodes], waiting forever, and submit them all: 0 or -errno.
 */
static int submit_locks(struct io_uring *ring, const int *fd, int n,
			const char *path, const int *modes, int nmodes)
{
	struct io_uring_sqe *sqe;
	int i, ret, done = 0;

	for (i = 0; i < n; i++) {
		sqe = io_uring_get_sqe(ring);
		if (!sqe) {
			ret = submit_all(ring, &done);
			if (ret)
				return ret;
			sqe = io_uring_get_sqe(ring);
			if (!sqe)
				return -EBUSY;
		}
		hlock_prep_lock(sqe, fd[i], path, modes[i % nmodes], 0, -1);
		io_uring_sqe_set_data64(sqe, i);
	}
	ret = submit_all(ring, &done);
	return ret ? ret : done == n ? 0 : -EIO;
}

static void take_cqe(struct io_uring *ring, struct io_uring_cqe *cqe,
		     int *res, uint64_t *data)
{
	*res = cqe->res;
	if (data)
		*data = cqe->user_data;
	io_uring_cqe_seen(ring, cqe);
}

/* Flush pending task work, then take a CQE if there is one: 0 or -EAGAIN. */
static int ring_peek(struct io_uring *ring, int *res, uint64_t *data)
{
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_get_events(ring);
	ret = io_uring_peek_cqe(ring, &cqe);
	if (ret)
		return ret;
	take_cqe(ring, cqe, res, data);
	return 0;
}

/* Wait up to @guard ns for a CQE and take it: 0, or -ETIME. */
static int ring_reap(struct io_uring *ring, int64_t guard, int *res,
		     uint64_t *data)
{
	struct __kernel_timespec ts = {
		.tv_sec = guard / SEC, .tv_nsec = guard % SEC,
	};
	struct io_uring_cqe *cqe;
	int ret;

	do
		ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	while (ret == -EINTR);
	if (ret)
		return ret;
	take_cqe(ring, cqe, res, data);
	return 0;
}

/* The CQE of a command that completes at once, else a harness failure. */
#define ASSERT_CQE(ring, want_res, want_data) do {			\
	uint64_t __data = ~0ULL;					\
	int __res = 0;							\
	ASSERT_EQ(0, ring_reap(ring, SETTLE_NS, &__res, &__data))	\
		TH_LOG("no CQE for user_data %llu",			\
		       (unsigned long long)(want_data));		\
	ASSERT_EQ((uint64_t)(want_data), __data);			\
	ASSERT_EQ(want_res, __res);					\
} while (0)

/* No CQE is there, even with task work flushed. */
#define ASSERT_NO_CQE(ring) do {					\
	uint64_t __data = 0;						\
	int __res = 0;							\
	ASSERT_EQ(-EAGAIN, ring_peek(ring, &__res, &__data))		\
		TH_LOG("unexpected CQE: user_data %llu res %d",		\
		       (unsigned long long)__data, __res);		\
} while (0)

/* The res of the one CQE of a command just submitted, after a check. */
static int call_res(struct __test_metadata *_metadata, struct io_uring *ring,
		    int submitted)
{
	int res = 0;

	ASSERT_EQ(0, submitted);
	ASSERT_EQ(0, ring_reap(ring, SETTLE_NS, &res, NULL))
		TH_LOG("the command posted no CQE");
	return res;
}

/* Records in the lock space's table, and how many of them wait. */
struct table_count {
	int records;
	int waits;
};

static int count_table(int fd, struct table_count *tc)
{
	tc->records = table_count_if(fd, record_waits, NULL, &tc->waits);
	return tc->records < 0 ? tc->records : 0;
}

/* The lock space's count of withdrawn requests, or -1. */
static long long cancels(int fd)
{
	struct hlock_stats st;

	return hlock_stats(fd, HLOCK_STATS_GLOBAL, &st) ? -1 :
	       (long long)st.cancels;
}

/*
 * Poll the table every 10 ms, up to @guard ns, until it has @records
 * records (any number if negative) of which @waits wait.  0 or -ETIMEDOUT;
 * @tc holds the last look.
 */
static int await_table(int fd, int records, int waits, int64_t guard,
		       struct table_count *tc)
{
	int64_t end = now_ns() + guard;
	int ret;

	for (;;) {
		ret = count_table(fd, tc);
		if (ret)
			return ret;
		if (tc->waits == waits && (records < 0 || tc->records == records))
			return 0;
		if (now_ns() > end)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

/*
 * Poll debugfs every 10 ms, up to @guard ns, until the module has @want
 * requests allocated (io_uring may drop a closed locker's file a little
 * later).  Returns the last figure, -1 without debugfs.
 */
static long await_requests(long want, int64_t guard)
{
	int64_t end = now_ns() + guard;
	long n;

	while ((n = debugfs_figure("requests")) != want && n >= 0 &&
	       now_ns() < end)
		usleep(10000);
	return n;
}

/* waitpid() for up to @guard ns: the status, or -ETIMEDOUT. */
static int reap_child(pid_t pid, int64_t guard)
{
	int64_t end = now_ns() + guard;
	int status;
	pid_t ret;

	for (;;) {
		ret = waitpid(pid, &status, WNOHANG);
		if (ret == pid)
			return status;
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (now_ns() > end)
			return -ETIMEDOUT;
		usleep(10000);
	}
}

/* Threads of this process that are io-wq workers (iou-wrk-PID). */
static int io_wq_workers(void)
{
	char path[sizeof(((struct dirent *)0)->d_name) + 32], comm[32];
	struct dirent *de;
	DIR *dir;
	int n = 0;

	dir = opendir("/proc/self/task");
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 de->d_name);
		if (!read_file_str(path, comm, sizeof(comm)) &&
		    !strncmp(comm, "iou-wrk", 7))
			n++;
	}
	closedir(dir);
	return n;
}

/* Allow at least @n open files: 0 or -errno. */
static int raise_nofile(rlim_t n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur >= n)
		return 0;
	rl.rlim_cur = n;
	if (rl.rlim_max < n)
		rl.rlim_max = n;
	return setrlimit(RLIMIT_NOFILE, &rl) ? -errno : 0;
}

/* Open @n lockers into @fd: 0 or -errno. */
static int open_lockers(int *fd, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		fd[i] = hlock_open();
		if (fd[i] < 0)
			return fd[i];
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The fixture: lockers and a ring of each variant's kind */

FIXTURE(ur) {
	int fd[NLOCKERS];
	struct io_uring ring;
	bool ring_up;
	bool policy_set;
	pid_t child;
};

FIXTURE_VARIANT(ur) {
	unsigned int ring_flags;
};

FIXTURE_VARIANT_ADD(ur, plain) {
	.ring_flags = 0,
};

/* Completions are posted only when the task enters the kernel for them. */
FIXTURE_VARIANT_ADD(ur, defer_taskrun) {
	.ring_flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
};

/* A kernel thread submits: the SQEs' issuer is not the process. */
FIXTURE_VARIANT_ADD(ur, sqpoll) {
	.ring_flags = IORING_SETUP_SQPOLL,
};

FIXTURE_SETUP(ur)
{
	struct hlock_info info;
	int i, ret;

	self->ring_up = false;
	self->policy_set = false;
	self->child = 0;
	for (i = 0; i < NLOCKERS; i++)
		self->fd[i] = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	ASSERT_EQ(0, open_lockers(self->fd, NLOCKERS));
	ASSERT_EQ(0, hlock_info(self->fd[0], &info));
	if (!(info.features & HLOCK_FEAT_URING))
		SKIP(return, "the module has no io_uring commands");
	ret = ring_setup(&self->ring, RING_ENTRIES, variant->ring_flags, 0);
	if (ring_unavailable(ret, variant->ring_flags))
		SKIP(return, "no io_uring with these flags here: %s",
		     strerror(-ret));
	ASSERT_EQ(0, ret);
	self->ring_up = true;
}

FIXTURE_TEARDOWN(ur)
{
	struct table_count tc;
	int i, fd;

	stop_child(self->child);
	if (self->ring_up)
		io_uring_queue_exit(&self->ring);
	for (i = 0; i < NLOCKERS; i++)
		if (self->fd[i] >= 0)
			close(self->fd[i]);
	if (self->policy_set)
		EXPECT_EQ(0, write_file_str(POLICY_PARAM, "batch", 0));
	/*
	 * Nothing this test made may stay behind, and the next test starts
	 * from an empty lock space.
	 */
	fd = hlock_open();
	EXPECT_LE(0, fd);
	EXPECT_EQ(0, await_table(fd, 0, 0, TEARDOWN_NS, &tc))
		TH_LOG("20 s after the test, %d records, %d waiting",
		       tc.records, tc.waits);
	close(fd);
	if (debugfs_figure("requests") >= 0)
		EXPECT_EQ(0, await_requests(0, TEARDOWN_NS));
}

/* ------------------------------------------------------------------ */
/* 1. Grant order: the ring's equals the ioctls', batch and fifo */

static const int queue_modes[NQUEUE] = { IS, IS, X, X, S, IS };

/*
 * The queue entries each release grants (bit i: entry i): the holder's
 * first, then each granted entry's, lowest first.  See hlock_test.c's
 * batch_grant and fifo_grant for the rules.
 */
static const unsigned int batch_sets[NSTEPS] = {
	0x33,		/* the holder: IS IS . . S IS, past the X's */
	0, 0, 0,	/* entries 0, 1, 4: 5 still holds IS */
	0x04,		/* entry 5: the first X */
	0x08,		/* entry 2: the second X */
	0,		/* entry 3 */
};

static const unsigned int fifo_sets[NSTEPS] = {
	0x03,		/* the holder: IS IS, up to the first X */
	0,		/* entry 0: 1 still holds IS */
	0x04,		/* entry 1: the first X */
	0x08,		/* entry 2: the second X */
	0x30,		/* entry 3: S IS */
	0, 0,		/* entries 4, 5 */
};

/* One run of the grant order scenario. */
struct order {
	const int *fd;		/* [0] the holder, [1..NQUEUE] the queue */
	const char *path;
	struct io_uring *ring;	/* the queue's ring; NULL: the ioctls */
	int unlocks_sent;	/* ring: unlock SQEs, and their CQEs seen */
	int unlocks_seen;
};

/* Grants among @waiting that show now. */
static unsigned int grants_now(struct __test_metadata *_metadata,
			       struct order *o, unsigned int waiting)
{
	unsigned int got = 0;
	uint64_t data;
	int i, res;

	if (!o->ring) {
		for (i = 0; i < NQUEUE; i++) {
			if (!(waiting & (1U << i)))
				continue;
			res = hlock_wait(o->fd[i + 1], 0);
			if (!res)
				got |= 1U << i;
			else
				ASSERT_EQ(-EAGAIN, res) TH_LOG("entry %d", i);
		}
		return got;
	}
	while (!ring_peek(o->ring, &res, &data)) {
		if (data & UNLOCK_TAG) {
			ASSERT_EQ(0, res) TH_LOG("unlock of entry %d",
						 (int)(data & 0xff));
			o->unlocks_seen++;
			continue;
		}
		ASSERT_GT((uint64_t)NQUEUE, data);
		ASSERT_NE(0U, waiting & (1U << data))
			TH_LOG("entry %d completed twice", (int)data);
		ASSERT_EQ(0, res) TH_LOG("lock of entry %d", (int)data);
		got |= 1U << data;
	}
	return got;
}

/* Release entry @who (the holder if -1): the queue's through its ring. */
static void release(struct __test_metadata *_metadata, struct order *o,
		    int who)
{
	if (who < 0 || !o->ring) {
		ASSERT_EQ(0, hlock_unlock(o->fd[who + 1], o->path));
		return;
	}
	ASSERT_EQ(0, submit_unlock(o->ring, o->fd[who + 1], o->path,
				   UNLOCK_TAG | who));
	o->unlocks_sent++;
}

/*
 * The holder takes X, the queue asks for queue_modes, then the holder and
 * each granted entry, lowest first, release in turn.  @sets gets what
 * each release granted: once what @expect says has shown (or SETTLE_NS
 * has passed), whatever has shown.
 */
static void run_order(struct __test_metadata *_metadata, struct order *o,
		      const unsigned int *expect, unsigned int *sets)
{
	unsigned int waiting = (1U << NQUEUE) - 1, held = 0, got;
	int64_t end;
	int i, step, who = -1;

	ASSERT_EQ(0, hlock_lock(o->fd[0], o->path, X, 0, 0));
	for (i = 0; i < NQUEUE; i++) {
		if (o->ring) {
			ASSERT_EQ(0, submit_lock(o->ring, o->fd[i + 1], o->path,
						 queue_modes[i], -1, i));
		} else {
			ASSERT_EQ(-EINPROGRESS,
				  hlock_lock(o->fd[i + 1], o->path,
					     queue_modes[i], ASYNC, 0));
		}
	}
	ASSERT_EQ(0U, grants_now(_metadata, o, waiting));
	for (step = 0; step < NSTEPS; step++) {
		release(_metadata, o, who);
		got = 0;
		end = now_ns() + SETTLE_NS;
		do {
			got |= grants_now(_metadata, o, waiting & ~got);
			if ((got & expect[step]) == expect[step] &&
			    o->unlocks_seen == o->unlocks_sent)
				break;
			usleep(1000);
		} while (now_ns() < end);
		sets[step] = got;
		waiting &= ~got;
		held |= got;
		if (!held)
			break;
		who = __builtin_ctz(held);
		held &= ~(1U << who);
	}
	ASSERT_EQ(0U, waiting) TH_LOG("entries left waiting: %#x", waiting);
	ASSERT_EQ(o->unlocks_sent, o->unlocks_seen);
}

static void grant_order(struct __test_metadata *_metadata, int *fd,
			struct io_uring *ring, const unsigned int *expect)
{
	struct order by_ioctl = { .fd = fd, .path = "order/ioctl" };
	struct order by_ring = { .fd = fd, .path = "order/ring", .ring = ring };
	unsigned int ioctl_sets[NSTEPS] = { 0 }, ring_sets[NSTEPS] = { 0 };
	int step;

	run_order(_metadata, &by_ioctl, expect, ioctl_sets);
	run_order(_metadata, &by_ring, expect, ring_sets);
	for (step = 0; step < NSTEPS; step++) {
		EXPECT_EQ(ioctl_sets[step], ring_sets[step])
			TH_LOG("release %d: the ring granted %#x, the ioctls %#x",
			       step, ring_sets[step], ioctl_sets[step]);
		EXPECT_EQ(expect[step], ioctl_sets[step])
			TH_LOG("release %d: the ioctls granted %#x", step,
			       ioctl_sets[step]);
	}
}

TEST_F_TIMEOUT(ur, grant_order_batch, TEST_TMO)
{
	struct hlock_info info;

	ASSERT_EQ(0, hlock_info(self->fd[0], &info));
	ASSERT_EQ(HLOCK_POLICY_BATCH, (int)info.grant_policy)
		TH_LOG("grant_policy is not batch (did a fifo test not restore it?)");
	grant_order(_metadata, self->fd, &self->ring, batch_sets);
}

TEST_F_TIMEOUT(ur, grant_order_fifo, TEST_TMO)
{
	struct hlock_info info;

	if (access(POLICY_PARAM, W_OK))
		SKIP(return, POLICY_PARAM " is not writable");
	self->policy_set = true;
	ASSERT_EQ(0, write_file_str(POLICY_PARAM, "fifo", 0));
	ASSERT_EQ(0, hlock_info(self->fd[0], &info));
	ASSERT_EQ(HLOCK_POLICY_FIFO, (int)info.grant_policy);
	grant_order(_metadata, self->fd, &self->ring, fifo_sets);
}

/* ------------------------------------------------------------------ */
/* 2. A waiting lock completes when granted, not before */

TEST_F_TIMEOUT(ur, completes_on_grant, TEST_TMO)
{
	const char *p = "grant/r";
	int h = self->fd[0], l = self->fd[1];
	struct table_count tc;

	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_EQ(0, submit_lock(&self->ring, l, p, S, -1, 7));
	ASSERT_NO_CQE(&self->ring);
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(1, tc.waits);
	ASSERT_EQ(NL, hlock_held(l, p));
	ASSERT_EQ(0, hlock_unlock(h, p));
	ASSERT_CQE(&self->ring, 0, 7);
	ASSERT_EQ(S, hlock_held(l, p));
	ASSERT_EQ(IS, hlock_held(l, "grant"));
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(0, tc.waits);
}

/*
 * The holder is another process: its unlock queues the grant as task
 * work to this process, asleep in io_uring_wait_cqe_timeout().
 */
TEST_F_TIMEOUT(ur, granted_by_other_process, TEST_TMO)
{
	const char *p = "other/r";
	int l = self->fd[1], rep[2], go[2], fd, status;
	struct table_count tc;

	ASSERT_EQ(0, pipe(rep));
	ASSERT_EQ(0, pipe(go));
	fflush(NULL);
	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		close_inherited(rep[1], go[0]);
		fd = hlock_open();
		if (fd < 0 || hlock_lock(fd, p, X, 0, 0))
			_exit(2);
		report(rep[1], 'h');
		if (read_report(go[0]) != 'u' || hlock_unlock(fd, p))
			_exit(3);
		_exit(0);
	}
	close(rep[1]);
	close(go[0]);
	ASSERT_EQ('h', read_report(rep[0]));
	ASSERT_EQ(0, submit_lock(&self->ring, l, p, X, -1, 3));
	ASSERT_EQ(0, count_table(l, &tc));
	ASSERT_EQ(1, tc.waits);
	ASSERT_NO_CQE(&self->ring);
	report(go[1], 'u');
	ASSERT_CQE(&self->ring, 0, 3);
	ASSERT_EQ(X, hlock_held(l, p));
	status = wait_child(self->child);
	self->child = 0;
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	close(rep[0]);
	close(go[1]);
}

/* ------------------------------------------------------------------ */
/* 3. Tries, timeouts, immediate grants, unlock counts, downgrades */

TEST_F_TIMEOUT(ur, try_and_timeout, TEST_TMO)
{
	const char *p = "tmo/r";
	int h = self->fd[0], l = self->fd[1];
	struct table_count tc;
	int64_t start;

	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));

	/* A try that would wait: -EAGAIN, and the intent is undone. */
	ASSERT_EQ(0, submit_lock(&self->ring, l, p, S, 0, 1));
	ASSERT_CQE(&self->ring, -EAGAIN, 1);
	ASSERT_EQ(NL, hlock_held(l, p));
	ASSERT_EQ(NL, hlock_held(l, "tmo"));

	/* 50 ms: -ETIMEDOUT, not before 50 ms have passed. */
	start = now_ns();
	ASSERT_EQ(0, submit_lock(&self->ring, l, p, S, 50 * MS, 2));
	ASSERT_CQE(&self->ring, -ETIMEDOUT, 2);
	ASSERT_LE(50 * MS, now_ns() - start);
	ASSERT_EQ(NL, hlock_held(l, p));
	ASSERT_EQ(NL, hlock_held(l, "tmo"));
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(0, tc.waits);

	/* The locker is free again: a new wait is granted when h lets go. */
	ASSERT_EQ(0, submit_lock(&self->ring, l, p, S, 10 * SEC, 3));
	ASSERT_NO_CQE(&self->ring);
	ASSERT_EQ(0, hlock_unlock(h, p));
	ASSERT_CQE(&self->ring, 0, 3);
	ASSERT_EQ(S, hlock_held(l, p));
}

/* An immediate grant is 0; an unlock's CQE counts what remains. */
TEST_F_TIMEOUT(ur, grant_and_unlock_count, TEST_TMO)
{
	struct io_uring *ring = &self->ring;
	const char *p = "count/r";
	int l = self->fd[1];
	int i;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, submit_lock(ring, l, p, S, -1, i));
		ASSERT_CQE(ring, 0, i);
	}
	ASSERT_EQ(S, hlock_held(l, p));
	for (i = 2; i >= 0; i--) {
		ASSERT_EQ(0, submit_unlock(ring, l, p, 10 + i));
		ASSERT_CQE(ring, i, 10 + i);
	}
	ASSERT_EQ(NL, hlock_held(l, p));
	ASSERT_EQ(NL, hlock_held(l, "count"));
	/* Nothing left to unlock: what the ioctl says. */
	ASSERT_EQ(-ENOENT, hlock_unlock(l, p));
	ASSERT_EQ(0, submit_unlock(ring, l, p, 20));
	ASSERT_CQE(ring, -ENOENT, 20);
}

/*
 * An unlock's count comes back whoever issues the command: an io-wq
 * worker (IOSQE_ASYNC, or the next of a link run there) as well as the
 * submitter; and a count is a success, which fails no SQE linked after it.
 */
TEST_F_TIMEOUT(ur, unlock_count_async_and_linked, TEST_TMO)
{
	struct io_uring *ring = &self->ring;
	const char *p = "count/async";
	struct io_uring_sqe *sqe;
	int l = self->fd[1];
	int i, n = 0, res[2];
	uint64_t data;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, hlock_lock(l, p, S, 0, 0));
	/* Issued by io-wq: 3 left. */
	sqe = io_uring_get_sqe(ring);
	ASSERT_NE(NULL, sqe);
	hlock_prep_unlock(sqe, l, p);
	sqe->flags |= IOSQE_ASYNC;
	ASSERT_EQ(0, submit_one(ring, sqe, 1));
	ASSERT_CQE(ring, 3, 1);
	/* An unlock linked to a NOP: 2 left, and the NOP runs. */
	sqe = io_uring_get_sqe(ring);
	ASSERT_NE(NULL, sqe);
	hlock_prep_unlock(sqe, l, p);
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe, 2);
	sqe = io_uring_get_sqe(ring);
	ASSERT_NE(NULL, sqe);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, 3);
	ASSERT_EQ(0, submit_all(ring, &n));
	ASSERT_EQ(2, n);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, ring_reap(ring, SETTLE_NS, &res[i], &data))
			TH_LOG("CQE %d of the link is missing", i);
		ASSERT_EQ((uint64_t)(2 + i), data);
	}
	ASSERT_EQ(2, res[0]);
	ASSERT_EQ(0, res[1]);
	/* An async lock granted at once, its unlock run after it by io-wq. */
	sqe = io_uring_get_sqe(ring);
	ASSERT_NE(NULL, sqe);
	hlock_prep_lock(sqe, l, p, S, 0, -1);
	sqe->flags |= IOSQE_ASYNC | IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe, 4);
	sqe = io_uring_get_sqe(ring);
	ASSERT_NE(NULL, sqe);
	hlock_prep_unlock(sqe, l, p);
	io_uring_sqe_set_data64(sqe, 5);
	n = 0;
	ASSERT_EQ(0, submit_all(ring, &n));
	ASSERT_EQ(2, n);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, ring_reap(ring, SETTLE_NS, &res[i], &data))
			TH_LOG("CQE %d of the async link is missing", i);
		ASSERT_EQ((uint64_t)(4 + i), data);
	}
	ASSERT_EQ(0, res[0]);
	ASSERT_EQ(2, res[1]);
	ASSERT_EQ(1, hlock_unlock(l, p));
	ASSERT_EQ(0, hlock_unlock(l, p));
	ASSERT_EQ(NL, hlock_held(l, p));
}

/* X downgraded to S through the ring lets another S in. */
TEST_F_TIMEOUT(ur, downgrade, TEST_TMO)
{
	struct io_uring *ring = &self->ring;
	const char *p = "down/r";
	int l = self->fd[1], o = self->fd[2];
	struct io_uring_sqe *sqe;

	ASSERT_EQ(0, submit_lock(ring, l, p, X, -1, 1));
	ASSERT_CQE(ring, 0, 1);
	ASSERT_EQ(-EAGAIN, hlock_lock(o, p, S, 0, 0));
	sqe = io_uring_get_sqe(ring);
	ASSERT_NE(NULL, sqe);
	hlock_prep_downgrade(sqe, l, p, S);
	ASSERT_EQ(0, submit_one(ring, sqe, 2));
	ASSERT_CQE(ring, 0, 2);
	ASSERT_EQ(S, hlock_held(l, p));
	/* rule: as with the ioctl, the intent on the parent stays. */
	ASSERT_EQ(IX, hlock_held(l, "down"));
	ASSERT_EQ(0, hlock_lock(o, p, S, 0, 0));
	/* Up is not down: what the ioctl says, through the ring too. */
	ASSERT_EQ(-EINVAL, hlock_downgrade(l, p, X));
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_DOWNGRADE,
					       p, X, 0, 0)));
	ASSERT_EQ(S, hlock_held(l, p));
}

/* A ring wait that would close a cycle is refused, like the ioctl's. */
TEST_F_TIMEOUT(ur, deadlock, TEST_TMO)
{
	struct io_uring *ring = &self->ring;
	int a = self->fd[1], b = self->fd[2];

	ASSERT_EQ(0, hlock_lock(a, "dl/a", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(b, "dl/b", X, 0, 0));
	ASSERT_EQ(0, submit_lock(ring, a, "dl/b", X, -1, 1));
	ASSERT_NO_CQE(ring);
	ASSERT_EQ(0, submit_lock(ring, b, "dl/a", X, -1, 2));
	ASSERT_CQE(ring, -EDEADLK, 2);
	ASSERT_EQ(X, hlock_held(b, "dl/b"));
	ASSERT_EQ(NL, hlock_held(b, "dl/a"));
	ASSERT_NO_CQE(ring);
	ASSERT_EQ(0, hlock_unlock(b, "dl/b"));
	ASSERT_CQE(ring, 0, 1);
	ASSERT_EQ(X, hlock_held(a, "dl/b"));
}

/* ------------------------------------------------------------------ */
/* 4. An unlock of its path cancels a waiting ring lock */

TEST_F_TIMEOUT(ur, cancel_by_unlock, TEST_TMO)
{
	struct io_uring *ring = &self->ring;
	const char *p = "cancel/r";
	int h = self->fd[0], l = self->fd[1];
	int by_ioctl, res[2] = { 1, 1 }, i, r;
	long long before = cancels(h);
	struct table_count tc;
	uint64_t data;

	ASSERT_LE(0, before);
	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));

	/* Through the ioctl. */
	ASSERT_EQ(0, submit_lock(ring, l, p, X, -1, 1));
	ASSERT_NO_CQE(ring);
	by_ioctl = hlock_unlock(l, p);
	ASSERT_LE(0, by_ioctl);
	ASSERT_CQE(ring, -ECANCELED, 1);
	ASSERT_EQ(NL, hlock_held(l, p));
	ASSERT_EQ(NL, hlock_held(l, "cancel"));

	/* Through the ring: the lock's CQE and the unlock's, in any order. */
	ASSERT_EQ(0, submit_lock(ring, l, p, X, -1, 2));
	ASSERT_NO_CQE(ring);
	ASSERT_EQ(0, submit_unlock(ring, l, p, 3));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, ring_reap(ring, SETTLE_NS, &r, &data));
		ASSERT_TRUE(data == 2 || data == 3);
		ASSERT_EQ(1, res[data - 2]) TH_LOG("two CQEs for %d", (int)data);
		res[data - 2] = r;
	}
	ASSERT_EQ(-ECANCELED, res[0]);
	ASSERT_EQ(by_ioctl, res[1]);
	ASSERT_EQ(NL, hlock_held(l, p));
	ASSERT_EQ(NL, hlock_held(l, "cancel"));
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(0, tc.waits);
	ASSERT_EQ(before + 2, cancels(h));

	/* The locker can lock again. */
	ASSERT_EQ(0, hlock_unlock(h, p));
	ASSERT_EQ(0, submit_lock(ring, l, p, X, -1, 4));
	ASSERT_CQE(ring, 0, 4);
	ASSERT_EQ(X, hlock_held(l, p));
}

/* ------------------------------------------------------------------ */
/* 5. The ring's teardown cancels its waiting locks */

TEST_F_TIMEOUT(ur, cancel_by_teardown, TEST_TMO)
{
	const char *p = "teardown/r";
	int h = self->fd[0], l = self->fd[1];
	long long before = cancels(h);
	struct table_count tc;
	int64_t end;
	int ret;

	ASSERT_LE(0, before);
	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_EQ(0, submit_lock(&self->ring, l, p, X, -1, 1));
	ASSERT_EQ(-EBUSY, hlock_lock(l, p, X, 0, 0));
	io_uring_queue_exit(&self->ring);
	self->ring_up = false;

	/* The teardown runs in a kernel worker: poll for its end. */
	end = now_ns() + TEARDOWN_NS;
	while ((ret = hlock_lock(l, p, X, 0, 0)) == -EBUSY && now_ns() < end)
		usleep(10000);
	ASSERT_EQ(-EAGAIN, ret)
		TH_LOG("the locker still has a request in flight after 20 s");
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(0, tc.waits);
	ASSERT_EQ(NL, hlock_held(l, p));
	ASSERT_EQ(NL, hlock_held(l, "teardown"));
	ASSERT_EQ(before + 1, cancels(h));
	ASSERT_EQ(0, hlock_unlock(h, p));
	ASSERT_EQ(0, hlock_lock(l, p, X, 0, 0));
}

/* A thread that submits a lock to a ring it shares, then exits. */
struct submitter {
	struct io_uring *ring;
	int fd;
	const char *path;
	int ret;
};

static void *submit_and_exit(void *arg)
{
	struct submitter *sub = arg;

	sub->ret = submit_lock(sub->ring, sub->fd, sub->path, X, -1, 1);
	return NULL;
}

/*
 * The lock's submitter, a thread, exits while the lock waits; the ring
 * lives on in the process.  The lock stays queued, as io_uring's other
 * requests do (locks belong to lockers, not threads), on 6.1 (whose
 * watchdog looks every 100 ms) as on 6.12, and completes with 0 when
 * granted.  Only on the plain ring: with SQPOLL the submitter is the
 * ring's own thread, and a DEFER_TASKRUN ring takes SQEs from its
 * creator only.
 */
TEST_F_TIMEOUT(ur, submitter_exit, TEST_TMO)
{
	struct submitter sub = {
		.ring = &self->ring, .fd = self->fd[1], .path = "sub/r",
	};
	int h = self->fd[0], l = self->fd[1], res = 0;
	struct io_uring_cqe *cqe;
	struct table_count tc;
	uint64_t data = 0;
	pthread_t thread;

	if (variant->ring_flags)
		SKIP(return, "the plain ring's test");
	ASSERT_EQ(0, hlock_lock(h, sub.path, X, 0, 0));
	ASSERT_EQ(0, pthread_create(&thread, NULL, submit_and_exit, &sub));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ(0, sub.ret);
	/* Several of 6.1's watchdog periods: it must leave the lock be. */
	usleep(WATCHDOG_WAIT_US);
	io_uring_get_events(&self->ring);
	ASSERT_EQ(-EAGAIN, io_uring_peek_cqe(&self->ring, &cqe))
		TH_LOG("a CQE (res %d) came after the submitter exited",
		       cqe->res);
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(1, tc.waits);
	ASSERT_EQ(-EBUSY, hlock_lock(l, "other", X, 0, 0));
	/* Granted: its CQE is posted though its submitter is gone. */
	ASSERT_EQ(0, hlock_unlock(h, sub.path));
	ASSERT_EQ(0, ring_reap(&self->ring, TEARDOWN_NS, &res, &data));
	ASSERT_EQ(1U, data);
	ASSERT_EQ(0, res);
	ASSERT_EQ(X, hlock_held(l, sub.path));
	ASSERT_EQ(0, hlock_unlock(l, sub.path));
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(0, tc.waits);
}

/* ------------------------------------------------------------------ */
/* 6, 10. A process killed, or exec'ing, with ring locks pending */

/*
 * In a child: open @n lockers, submit a lock S on @path for each on one
 * ring of @flags, report 'r' (or 'u': no such ring here), then wait for
 * the parent's word on @go: 'x' to exec a shell that exits at once.
 */
static void __attribute__((noreturn))
pending_child(int rep, int go, const char *path, int n, unsigned int flags)
{
	static const int only_s[] = { S };
	struct io_uring ring;
	int *fd, ret;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close_inherited(rep, go);
	fd = calloc(n, sizeof(*fd));
	if (!fd || raise_nofile(n + 64) || open_lockers(fd, n))
		_exit(2);
	ret = ring_setup(&ring, n, flags, 0);
	if (ring_unavailable(ret, flags))
		report(rep, 'u');
	if (ret)
		_exit(3);
	if (submit_locks(&ring, fd, n, path, only_s, 1))
		_exit(4);
	report(rep, 'r');
	if (read_report(go) == 'x')
		execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
	_exit(5);
}

/*
 * @n locks wait on one ring in a child while we hold X; then it is killed
 * (or execs): it must end, its requests must leave the table, and our
 * unlock must grant nothing.
 */
static void end_with_pending(struct __test_metadata *_metadata,
			     FIXTURE_DATA(ur) *self, unsigned int flags,
			     bool exec)
{
	const char *p = "end/r";
	int h = self->fd[0], rep[2], go[2], status;
	int killed = test_scaled(KILLED, KILLED_LEAST);
	long long before = cancels(h);
	struct table_count base, tc;
	long requests;
	char c;

	if (killed != KILLED)
		TH_LOG("%d pending locks (HLOCK_TEST_SCALE)", killed);

	ASSERT_LE(0, before);
	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_EQ(0, count_table(h, &base));
	/* The module's live requests (debugfs), -1 without debugfs. */
	requests = debugfs_figure("requests");
	ASSERT_EQ(0, pipe(rep));
	ASSERT_EQ(0, pipe(go));
	fflush(NULL);
	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child)
		pending_child(rep[1], go[0], p, killed, flags);
	close(rep[1]);
	close(go[0]);
	c = read_report(rep[0]);
	if (c == 'u')
		SKIP(return, "no io_uring with these flags in the child");
	ASSERT_EQ('r', c) TH_LOG("the child failed to submit its locks");
	ASSERT_EQ(0, await_table(h, -1, killed, SETTLE_NS, &tc))
		TH_LOG("%d waits of %d in the table", tc.waits, killed);

	if (exec)
		report(go[1], 'x');
	else
		ASSERT_EQ(0, kill(self->child, SIGKILL));
	status = reap_child(self->child, EXIT_NS);
	if (status == -ETIMEDOUT)
		self->child = 0;	/* stuck: a wait would hang too */
	ASSERT_LE(0, status) TH_LOG("the child did not end in 60 s: %s",
				    strerror(-status));
	self->child = 0;
	if (exec) {
		ASSERT_TRUE(WIFEXITED(status));
		ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("exec failed?");
	} else {
		ASSERT_TRUE(WIFSIGNALED(status));
		ASSERT_EQ(SIGKILL, WTERMSIG(status));
	}
	ASSERT_EQ(0, await_table(h, base.records, 0, EXIT_NS, &tc))
		TH_LOG("60 s after its end, the table still has %d records, %d waiting (ours: %d)",
		       tc.records, tc.waits, base.records);
	ASSERT_EQ(requests, await_requests(requests, EXIT_NS));
	ASSERT_EQ(before + killed, cancels(h));
	ASSERT_EQ(0, hlock_unlock(h, p));
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(0, tc.records);
	close(rep[0]);
	close(go[1]);
}

TEST_F_TIMEOUT(ur, kill_with_1000_pending, 3 * TEST_TMO)
{
	end_with_pending(_metadata, self, variant->ring_flags, false);
}

TEST_F_TIMEOUT(ur, exec_with_1000_pending, 3 * TEST_TMO)
{
	if (access("/bin/sh", X_OK))
		SKIP(return, "no /bin/sh to exec");
	end_with_pending(_metadata, self, variant->ring_flags, true);
}

/* ------------------------------------------------------------------ */
/* 7. 10,000 waiting locks on one ring, and no io-wq worker */

TEST_F_TIMEOUT(ur, many_pending, 5 * TEST_TMO)
{
	static const int only_s[] = { S };
	const char *p = "many/r";
	int h = self->fd[0], *fd, i, n = 0, res, ret;
	int many = test_scaled(MANY, MANY_LEAST);
	struct table_count tc;
	struct io_uring ring;
	uint64_t data;
	int64_t end;
	char *seen;

	if (many != MANY)
		TH_LOG("%d waiting locks (HLOCK_TEST_SCALE)", many);
	ret = raise_nofile(many + 64);
	if (ret == -EPERM)
		SKIP(return, "may not open %d files", many);
	ASSERT_EQ(0, ret);
	fd = calloc(many, sizeof(*fd));
	seen = calloc(many, 1);
	ASSERT_NE(NULL, fd);
	ASSERT_NE(NULL, seen);
	ASSERT_EQ(0, open_lockers(fd, many));
	ASSERT_EQ(0, ring_setup(&ring, 4096, variant->ring_flags, MANY_CQ));

	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_EQ(0, submit_locks(&ring, fd, many, p, only_s, 1));
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(many, tc.waits);
	io_uring_get_events(&ring);
	ASSERT_EQ(0U, io_uring_cq_ready(&ring));
	ASSERT_EQ(0, io_wq_workers()) TH_LOG("waiting locks started io-wq workers");

	ASSERT_EQ(0, hlock_unlock(h, p));
	/* Each grant may take up to EXIT_NS; the batch, what it takes. */
	end = now_ns() + EXIT_NS;
	while (n < many && now_ns() < end) {
		if (ring_reap(&ring, SEC, &res, &data))
			continue;
		end = now_ns() + EXIT_NS;
		ASSERT_GT((uint64_t)many, data);
		ASSERT_EQ(0, seen[data]) TH_LOG("two CQEs for %d", (int)data);
		ASSERT_EQ(0, res) TH_LOG("lock %d", (int)data);
		seen[data] = 1;
		n++;
	}
	ASSERT_EQ(many, n);
	ASSERT_EQ(0, io_wq_workers());
	ASSERT_EQ(S, hlock_held(fd[0], p));
	ASSERT_EQ(S, hlock_held(fd[many - 1], p));

	for (i = 0; i < many; i++)
		ASSERT_EQ(0, hlock_unlock(fd[i], p));
	ASSERT_EQ(0, count_table(h, &tc));
	ASSERT_EQ(0, tc.records);
	io_uring_queue_exit(&ring);
	for (i = 0; i < many; i++)
		close(fd[i]);
	free(fd);
	free(seen);
}

/* ------------------------------------------------------------------ */
/* 8. Rejections: each alone, everything else valid */

/* What a refused ring command must leave: nothing at all. */
#define ASSERT_UNTOUCHED(fd) do {					\
	ASSERT_EQ(NL, hlock_held(fd, "rej/r"));				\
	ASSERT_EQ(NL, hlock_held(fd, "rej"));				\
} while (0)

TEST_F_TIMEOUT(ur, rejections, TEST_TMO)
{
	struct io_uring *ring = &self->ring;
	const char *p = "rej/r";
	struct hlock_lock_args args;
	int l = self->fd[1], o = self->fd[2], page = getpagesize();
	char *longest, *too_long, *edge;
	int i, len, want;

	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_LOCK, p, S,
					       ASYNC, -1)))
		TH_LOG("HLOCK_F_ASYNC");
	ASSERT_UNTOUCHED(l);
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_LOCK, p, S,
					       0x80, -1)))
		TH_LOG("an unknown flag");
	ASSERT_UNTOUCHED(l);
	ASSERT_EQ(-EINVAL, hlock_lock(l, p, HLOCK_NR_MODES, 0, 0));
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_LOCK, p,
					       HLOCK_NR_MODES, 0, -1)))
		TH_LOG("mode HLOCK_NR_MODES");
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_LOCK, p,
					       0xff, 0, -1)))
		TH_LOG("mode 0xff");
	ASSERT_EQ(-EINVAL, hlock_lock(l, p, NL, 0, 0));
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_LOCK, p,
					       NL, 0, -1)))
		TH_LOG("mode NL");
	ASSERT_UNTOUCHED(l);

	/* Commands the ring does not know. */
	ASSERT_EQ(-ENOTTY, call_res(_metadata, ring,
				    submit_raw(ring, l, _IOW(HLOCK_IOC_MAGIC, 99,
							     struct hlock_lock_args),
					       p, S, 0, -1)));
	ASSERT_EQ(-ENOTTY, call_res(_metadata, ring,
				    submit_raw(ring, l, 0, p, S, 0, -1)));
	ASSERT_UNTOUCHED(l);

	/* Arguments the unlock does not take: what the ioctl says. */
	memset(&args, 0, sizeof(args));
	args.path = (uint64_t)(uintptr_t)p;
	args.path_len = strlen(p);
	args.mode = S;
	ASSERT_EQ(-EINVAL, raw_ioctl(l, HLOCK_IOC_UNLOCK, &args));
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_UNLOCK, p, S,
					       0, 0)))
		TH_LOG("an unlock with a mode");
	args.mode = 0;
	args.timeout_ns = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(l, HLOCK_IOC_UNLOCK, &args));
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_UNLOCK, p, 0,
					       0, 1)))
		TH_LOG("an unlock with a timeout");
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_UNLOCK, p, 0,
					       HLOCK_F_FRONT, 0)))
		TH_LOG("an unlock with a flag");
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_DOWNGRADE, p,
					       S, 0, 1)))
		TH_LOG("a downgrade with a timeout");
	ASSERT_EQ(-EINVAL, call_res(_metadata, ring,
				    submit_raw(ring, l, HLOCK_IOC_DOWNGRADE, p,
					       S, HLOCK_F_FRONT, 0)))
		TH_LOG("a downgrade with a flag");
	ASSERT_UNTOUCHED(l);

	/* Paths: the longest works, one byte more does not. */
	longest = malloc(HLOCK_PATH_MAX + 2);
	ASSERT_NE(NULL, longest);
	memset(longest, 'n', HLOCK_PATH_MAX);
	for (i = HLOCK_NAME_MAX; i < HLOCK_PATH_MAX; i += HLOCK_NAME_MAX + 1)
		longest[i] = '/';
	longest[HLOCK_PATH_MAX] = '\0';
	ASSERT_EQ(0, call_res(_metadata, ring,
			      submit_lock(ring, l, longest, S, -1, 0)));
	ASSERT_EQ(S, hlock_held(l, longest));
	ASSERT_EQ(0, call_res(_metadata, ring,
			      submit_unlock(ring, l, longest, 0)));
	too_long = malloc(HLOCK_PATH_MAX + 2);
	ASSERT_NE(NULL, too_long);
	memset(too_long, 'n', HLOCK_PATH_MAX + 1);
	too_long[HLOCK_PATH_MAX + 1] = '\0';
	ASSERT_EQ(-ENAMETOOLONG, call_res(_metadata, ring,
					  submit_lock(ring, l, too_long, S,
						      -1, 0)));
	ASSERT_EQ(-EFAULT, call_res(_metadata, ring,
				    submit_lock(ring, l, unmapped_page(), S,
						-1, 0)));
	ASSERT_EQ(-EFAULT, call_res(_metadata, ring,
				    submit_lock(ring, l, NULL, S, -1, 0)));
	ASSERT_UNTOUCHED(l);
	free(longest);
	free(too_long);

	/* A path that runs into an unmapped page before its NUL. */
	edge = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, edge);
	ASSERT_EQ(0, munmap(edge + page, page));
	memset(edge + page - 8, 'n', 8);
	ASSERT_EQ(-EFAULT, call_res(_metadata, ring,
				    submit_lock(ring, l, edge + page - 8, S,
						-1, 0)));
	/*
	 * One whose NUL is the last byte before that page: the word read
	 * that runs past it faults, and the bytes are read one by one.
	 */
	memcpy(edge + page - 4, "e/d", 4);
	ASSERT_EQ(0, call_res(_metadata, ring,
			      submit_lock(ring, l, edge + page - 4, S, -1, 0)));
	ASSERT_EQ(S, hlock_held(l, "e/d"));
	ASSERT_EQ(0, call_res(_metadata, ring,
			      submit_unlock(ring, l, edge + page - 4, 0)));
	/*
	 * Paths of every length about the kernel's on-stack path buffer,
	 * then on to past HLOCK_PATH_MAX (too deep or too long): what the
	 * ioctl says, on another locker.
	 */
	for (len = 120; len <= HLOCK_PATH_MAX + 1; len += len < 140 ? 1 : 97) {
		memcpy(edge, "rej/", 4);
		memset(edge + 4, 'n', len - 4);
		edge[len] = '\0';
		for (i = 4 + HLOCK_NAME_MAX; i < len; i += HLOCK_NAME_MAX + 1)
			edge[i] = '/';
		want = hlock_lock(o, edge, S, 0, 0);
		if (len <= 140)
			ASSERT_EQ(0, want);
		if (!want)
			ASSERT_EQ(0, hlock_unlock(o, edge));
		ASSERT_EQ(want, call_res(_metadata, ring,
					 submit_lock(ring, l, edge, S, -1, 0)))
			TH_LOG("a path of %d bytes", len);
		if (want)
			continue;
		ASSERT_EQ(S, hlock_held(l, edge)) TH_LOG("%d bytes", len);
		ASSERT_EQ(0, call_res(_metadata, ring,
				      submit_unlock(ring, l, edge, 0)));
	}
	munmap(edge, page);
	ASSERT_UNTOUCHED(l);

	/* Nothing was left behind: the locker locks at once. */
	ASSERT_EQ(0, call_res(_metadata, ring,
			      submit_lock(ring, l, p, X, -1, 0)));
	ASSERT_EQ(X, hlock_held(l, p));
}

/* A locker with a ring lock in flight takes no other request. */
TEST_F_TIMEOUT(ur, busy, TEST_TMO)
{
	struct io_uring *ring = &self->ring;
	const char *p = "busy/r";
	int h = self->fd[0], l = self->fd[1];

	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_EQ(0, submit_lock(ring, l, p, S, -1, 1));
	ASSERT_NO_CQE(ring);
	ASSERT_EQ(0, submit_lock(ring, l, "busy/other", S, -1, 2));
	ASSERT_CQE(ring, -EBUSY, 2);
	ASSERT_EQ(-EBUSY, hlock_lock(l, "busy/other", S, 0, 0));
	ASSERT_EQ(-EBUSY, hlock_lock(l, "busy/other", S, ASYNC, 0));
	ASSERT_EQ(-EBUSY, hlock_wait(l, 0));
	ASSERT_EQ(NL, hlock_held(l, "busy/other"));
	/* The refusals left the request in flight alone. */
	ASSERT_NO_CQE(ring);
	ASSERT_EQ(0, hlock_unlock(h, p));
	ASSERT_CQE(ring, 0, 1);
	ASSERT_EQ(S, hlock_held(l, p));
}

/* ------------------------------------------------------------------ */
/* 9. IORING_OP_POLL_ADD on a locker with an asynchronous request */

TEST_F_TIMEOUT(ur, poll_add, TEST_TMO)
{
	struct io_uring *ring = &self->ring;
	const char *p = "poll/r";
	int h = self->fd[0], l = self->fd[1];
	struct io_uring_sqe *sqe;
	uint64_t data;
	int res = 0;

	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(l, p, X, ASYNC, -1));
	sqe = io_uring_get_sqe(ring);
	ASSERT_NE(NULL, sqe);
	io_uring_prep_poll_add(sqe, l, POLLIN);
	ASSERT_EQ(0, submit_one(ring, sqe, 5));
	ASSERT_NO_CQE(ring);
	ASSERT_EQ(-EAGAIN, hlock_wait(l, 0));
	ASSERT_NO_CQE(ring);
	ASSERT_EQ(0, hlock_unlock(h, p));
	ASSERT_EQ(0, ring_reap(ring, SETTLE_NS, &res, &data));
	ASSERT_EQ(5U, data);
	ASSERT_TRUE(res > 0 && (res & POLLIN)) TH_LOG("res %d", res);
	ASSERT_EQ(0, hlock_wait(l, 0));
	ASSERT_EQ(X, hlock_held(l, p));
}

/* ------------------------------------------------------------------ */
/* Process-owned lockers (HLOCK_IOC_OWNER): free when waitpid() returns */

/*
 * The child of the owner tests: a process-owned locker holding X on
 * own/x, a ring lock on own/wait (held by the parent) pending on a ring of
 * the variant's kind, the locker's descriptor registered in the ring when
 * @fixed; reports 'r' once the lock waits (the kernel took the SQE), 'e'
 * on an error, then waits to be killed.
 */
static void __attribute__((noreturn))
owned_child(int wfd, unsigned int ring_flags, bool fixed)
{
	struct io_uring_sqe *sqe;
	struct io_uring ring;
	int l = hlock_open();

	if (l < 0 || hlock_owner(l, HLOCK_OWNER_PROCESS) ||
	    hlock_lock(l, "own/x", X, 0, 0) ||
	    ring_setup(&ring, 8, ring_flags, 0) ||
	    (fixed && io_uring_register_files(&ring, &l, 1))) {
		report(wfd, 'e');
		_exit(1);
	}
	sqe = io_uring_get_sqe(&ring);
	hlock_prep_lock(sqe, fixed ? 0 : l, "own/wait", X, 0, -1);
	if (fixed)
		sqe->flags |= IOSQE_FIXED_FILE;
	report(wfd, submit_one(&ring, sqe, 1) ? 'e' : 'r');
	for (;;)
		pause();
}

static void owned_kill(struct __test_metadata *_metadata,
		       FIXTURE_DATA(ur) *self, unsigned int ring_flags,
		       bool fixed)
{
	int pfd[2], h = self->fd[0], o = self->fd[1];
	struct table_count tc;
	pid_t pid;

	ASSERT_EQ(0, hlock_lock(h, "own/wait", X, 0, 0));
	ASSERT_EQ(0, pipe(pfd));
	pid = fork_child(pfd[1], -1);
	ASSERT_LE(0, pid);
	if (!pid)
		owned_child(pfd[1], ring_flags, fixed);
	self->child = pid;
	close(pfd[1]);
	ASSERT_EQ('r', read_report(pfd[0]));
	close(pfd[0]);
	/* The child's X and its lock waiting behind the parent's X. */
	ASSERT_EQ(0, await_table(h, -1, 1, SETTLE_NS, &tc));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_LE(0, reap_child(pid, EXIT_NS));
	self->child = 0;
	/* Right after waitpid(): no wait for io_uring's teardown. */
	ASSERT_EQ(0, hlock_lock(o, "own/x", X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(o, "own/x"));
	ASSERT_EQ(0, hlock_unlock(h, "own/wait"));
}

/* Killed with a lock pending on its ring: its X is free at waitpid(). */
TEST_F_TIMEOUT(ur, owned_free_at_waitpid, TEST_TMO)
{
	owned_kill(_metadata, self, variant->ring_flags, false);
}

/* The same with the locker registered in the ring (a fixed file). */
TEST_F_TIMEOUT(ur, owned_registered_free_at_waitpid, TEST_TMO)
{
	owned_kill(_metadata, self, variant->ring_flags, true);
}

/*
 * Shared by fork: the child's exit releases nothing of its parent's, the
 * owner; by default, the owner's exit releases nothing its child shares.
 */
TEST_F_TIMEOUT(ur, owned_shared_by_fork, TEST_TMO)
{
	int l = self->fd[2];
	pid_t pid;

	ASSERT_EQ(0, hlock_owner(l, HLOCK_OWNER_PROCESS));
	ASSERT_EQ(0, hlock_lock(l, "own/shared", X, 0, 0));
	pid = fork_child(l, -1);
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(0);
	ASSERT_LE(0, reap_child(pid, EXIT_NS));
	ASSERT_EQ(X, hlock_held(l, "own/shared"));
	/* A child that makes itself the owner takes the locks with it. */
	ASSERT_EQ(0, hlock_owner(l, 0));
	pid = fork_child(l, -1);
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(hlock_owner(l, HLOCK_OWNER_PROCESS) ? 1 : 0);
	ASSERT_EQ(0, reap_child(pid, EXIT_NS));
	/* The child took it and exited: its exit released the locks. */
	ASSERT_EQ(NL, hlock_held(l, "own/shared"));
	/* Rejections, one at a time: an unknown flag, a reserved field. */
	ASSERT_EQ(-EINVAL, hlock_owner(l, 2));
	ASSERT_EQ(-EINVAL, raw_ioctl(l, HLOCK_IOC_OWNER,
				     &(struct hlock_owner_args){ .reserved = 1 }));
	ASSERT_EQ(-EFAULT, raw_ioctl(l, HLOCK_IOC_OWNER, NULL));
}

TEST_HARNESS_MAIN
