// SPDX-License-Identifier: GPL-2.0
/*
 * hlock yield (HLOCK_IOC_YIELD, hlock_yield()): a locker that others wait
 * for releases everything, lets the waiters it can grant in, and locks it
 * all again, in the same modes and with the same acquisition counts; when
 * it cannot get everything back (timeout, try, signal, deadlock) it holds
 * nothing; when nobody waits for it, nothing is released at all.
 *
 * The waiters are child processes with lockers of their own, blocked in
 * hlock_lock(); a test sees them wait in the lock table before it yields.
 * The order of grants is proved by what each side sees, never by time:
 * the waiter looks at the lock table while it holds what the yielder
 * released, and finds the yielder's request waiting there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

/* The harness's macros trip -Wextra, as hlock_test.c explains. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

/* Lockers of the fixture. */
#define NFDS		4
/* Polls for a wait to show in the lock table, 10 ms apart. */
#define WAIT_POLLS	1000
#define POLL_US		10000
/* Resources of the test that holds many (more than one release batch). */
#define MANY		150
/* How long a wait for what must happen may take at most. */
#define GUARD_NS	(30 * SEC)
/* The nagger's period (ms), for the signal test. */
#define NAG_MS		100

/* What a record of the lock table must be, for table_count_if(). */
struct rec_match {
	pid_t pid;
	const char *path;	/* NULL: any */
	int mode;		/* -1: any */
	bool waits;
};

static bool rec_matches(const struct hlock_lock_record *rec, const void *arg)
{
	const struct rec_match *m = arg;

	return (pid_t)rec->pid == m->pid &&
	       (!m->path || !strcmp(hlock_record_path(rec), m->path)) &&
	       (m->mode < 0 || (int)rec->mode == m->mode) &&
	       (!m->waits || rec->state != HLOCK_STATE_GRANTED);
}

/* Records of the lock table that match @m, or -errno. */
static int records(int fd, const struct rec_match *m)
{
	int n, matched;

	n = table_count_if(fd, rec_matches, m, &matched);
	return n < 0 ? n : matched;
}

/* Poll the table until a request of @pid waits for @mode on @path. */
static bool see_wait(int fd, pid_t pid, const char *path, int mode)
{
	struct rec_match m = { pid, path, mode, true };
	int i;

	for (i = 0; i < WAIT_POLLS; i++) {
		if (records(fd, &m) > 0)
			return true;
		usleep(POLL_US);
	}
	return false;
}

/*
 * A child with a locker of its own that asks for @mode on @path and waits
 * for it.  Once granted: with @watch, it first polls the lock table until
 * a request of process @watch waits on @path for @watch_mode; then it
 * reports 'g' on @wfd; with @ctl >= 0 it holds until a byte comes on
 * @ctl; then it unlocks and exits.  Exit status 0, or 10 + the step that
 * failed.
 */
static pid_t spawn_waiter(const char *path, int mode, int wfd, int ctl,
			  pid_t watch, int watch_mode)
{
	pid_t pid = fork_child(wfd, ctl);
	int fd;

	if (pid)
		return pid;
	fd = hlock_open();
	if (fd < 0)
		_exit(10);
	if (hlock_lock(fd, path, mode, 0, -1))
		_exit(11);
	if (watch && !see_wait(fd, watch, path, watch_mode))
		_exit(12);
	report(wfd, 'g');
	if (ctl >= 0 && read_report(ctl) != 'q')
		_exit(13);
	if (hlock_unlock(fd, path))
		_exit(14);
	_exit(0);
}

static int child_status(pid_t pid)
{
	int status = wait_child(pid);

	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + status;
}

static struct hlock_stats stats_of(int fd, unsigned int scope)
{
	struct hlock_stats st;

	memset(&st, 0xff, sizeof(st));
	hlock_stats(fd, scope, &st);
	return st;
}

/* Whether a read of @rfd finds a byte already there (no waiting). */
static char report_already(int rfd)
{
	char c = 0;
	int fl = fcntl(rfd, F_GETFL);

	fcntl(rfd, F_SETFL, fl | O_NONBLOCK);
	if (read(rfd, &c, 1) != 1)
		c = 0;
	fcntl(rfd, F_SETFL, fl);
	return c;
}

FIXTURE(yield) {
	int fd[NFDS];
	int p[2];		/* reports of a child */
	int ctl[2];		/* orders to a child */
	pid_t child;
	pid_t nagger;
};

FIXTURE_SETUP(yield)
{
	struct hlock_info info;
	int i;

	for (i = 0; i < NFDS; i++)
		self->fd[i] = -1;
	self->child = 0;
	self->nagger = 0;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	for (i = 0; i < NFDS; i++) {
		self->fd[i] = hlock_open();
		ASSERT_LE(0, self->fd[i]);
	}
	ASSERT_EQ(0, hlock_info(self->fd[0], &info));
	if (!(info.features & HLOCK_FEAT_YIELD))
		SKIP(return, "the module has no HLOCK_IOC_YIELD");
	ASSERT_EQ(0, pipe(self->p));
	ASSERT_EQ(0, pipe(self->ctl));
}

FIXTURE_TEARDOWN(yield)
{
	int i;

	stop_child(self->nagger);
	stop_child(self->child);
	for (i = 0; i < NFDS; i++)
		if (self->fd[i] >= 0)
			close(self->fd[i]);
}

/*
 * X held three times on r; a process waits for S.  The yield lets it in:
 * holding S, it sees the yielder's X waiting, and reports so before it
 * unlocks; the yield returns only after that (the report is there without
 * waiting), with X back and held three times.
 */
TEST_F_TIMEOUT(yield, lets_waiter_in, TEST_TMO)
{
	struct hlock_stats before = stats_of(self->fd[0], HLOCK_STATS_LOCKER);
	struct hlock_stats gbefore = stats_of(self->fd[0], HLOCK_STATS_GLOBAL);
	int fd = self->fd[0], i;

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, hlock_lock(fd, "r", X, 0, 0));
	self->child = spawn_waiter("r", S, self->p[1], -1, getpid(), X);
	ASSERT_LT(0, self->child);
	ASSERT_TRUE(see_wait(fd, self->child, "r", S));

	ASSERT_EQ(0, hlock_yield(fd, -1));
	/* Reported while it held S, before it unlocked. */
	ASSERT_EQ('g', report_already(self->p[0]));
	ASSERT_EQ(0, child_status(self->child));
	self->child = 0;

	ASSERT_EQ(X, hlock_held(fd, "r"));
	ASSERT_EQ(IX, hlock_held(fd, ""));
	EXPECT_EQ(before.yields + 1,
		  stats_of(fd, HLOCK_STATS_LOCKER).yields);
	EXPECT_EQ(gbefore.yields + 1,
		  stats_of(fd, HLOCK_STATS_GLOBAL).yields);
	/* The same acquisitions. */
	ASSERT_EQ(2, hlock_unlock(fd, "r"));
	ASSERT_EQ(1, hlock_unlock(fd, "r"));
	ASSERT_EQ(0, hlock_unlock(fd, "r"));
	ASSERT_EQ(NL, hlock_held(fd, ""));
}

/* One resource the restore test holds: its path, mode and own count. */
struct held {
	const char *path;
	int mode;
};

/*
 * Modes made by conversions (S then X below: SIX), a mode kept by a
 * request with no acquisition of its own (X on e, unlocked, while e/f
 * holds IS below it), recursion, intents on several paths, the root
 * locked itself, and more resources than one release batch: all come back
 * as they were, each unlocked as often as it was locked.
 */
TEST_F_TIMEOUT(yield, restores_modes_and_counts, TEST_TMO)
{
	static const struct held want[] = {
		{ "", IX }, { "a", SIX }, { "a/b", X }, { "c", IS },
		{ "c/d", IS }, { "e", X }, { "e/f", IS }, { "g", IX },
		{ "g/h", IX }, { "g/h/i", IX }, { "m", IS },
	};
	int fd = self->fd[0], i;
	char path[32];

	ASSERT_EQ(0, hlock_lock(fd, "", IX, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "a", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "a", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "a/b", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "c/d", IS, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "e", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "e/f", IS, 0, 0));
	ASSERT_EQ(0, hlock_unlock(fd, "e"));
	ASSERT_EQ(0, hlock_lock(fd, "g/h/i", IX, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "g/h/i", IX, 0, 0));
	for (i = 0; i < MANY; i++) {
		snprintf(path, sizeof(path), "m/%d", i);
		ASSERT_EQ(0, hlock_lock(fd, path, IS, 0, 0));
	}
	for (i = 0; i < (int)ARRAY_SIZE(want); i++)
		ASSERT_EQ(want[i].mode, hlock_held(fd, want[i].path))
			TH_LOG("before: entry %d", i);

	/* X on c/d waits for the IS held there. */
	self->child = spawn_waiter("c/d", X, self->p[1], -1, 0, NL);
	ASSERT_LT(0, self->child);
	ASSERT_TRUE(see_wait(fd, self->child, "c/d", X));
	ASSERT_EQ(0, hlock_yield(fd, -1));
	ASSERT_EQ(0, child_status(self->child));
	self->child = 0;
	ASSERT_EQ('g', read_report(self->p[0]));

	for (i = 0; i < (int)ARRAY_SIZE(want); i++)
		ASSERT_EQ(want[i].mode, hlock_held(fd, want[i].path))
			TH_LOG("after: entry %d", i);
	for (i = 0; i < MANY; i++) {
		snprintf(path, sizeof(path), "m/%d", i);
		ASSERT_EQ(IS, hlock_held(fd, path)) TH_LOG("%s", path);
		ASSERT_EQ(0, hlock_unlock(fd, path)) TH_LOG("%s", path);
	}
	/* Two acquisitions on a; the mode stays while a/b holds below. */
	ASSERT_EQ(1, hlock_unlock(fd, "a"));
	ASSERT_EQ(0, hlock_unlock(fd, "a"));
	ASSERT_EQ(SIX, hlock_held(fd, "a"));
	ASSERT_EQ(-ENOENT, hlock_unlock(fd, "a"));
	ASSERT_EQ(0, hlock_unlock(fd, "a/b"));
	ASSERT_EQ(NL, hlock_held(fd, "a"));
	ASSERT_EQ(0, hlock_unlock(fd, "c/d"));
	/* e: no acquisition of its own, X for e/f's sake. */
	ASSERT_EQ(-ENOENT, hlock_unlock(fd, "e"));
	ASSERT_EQ(0, hlock_unlock(fd, "e/f"));
	ASSERT_EQ(NL, hlock_held(fd, "e"));
	ASSERT_EQ(1, hlock_unlock(fd, "g/h/i"));
	ASSERT_EQ(0, hlock_unlock(fd, "g/h/i"));
	ASSERT_EQ(-ENOENT, hlock_unlock(fd, "g/h"));
	ASSERT_EQ(0, hlock_unlock(fd, ""));
	ASSERT_EQ(NL, hlock_held(fd, ""));
	ASSERT_EQ(-ENOENT, hlock_unlock(fd, ""));
}

/*
 * The yields that cannot get everything back, because a waiter let in
 * keeps what it got: a timeout, a try (timeout 0) and a signal.  The
 * locker then holds nothing, and says so; a yield holding nothing is 0.
 */
static void give_up(struct __test_metadata *_metadata,
		    FIXTURE_DATA(yield) *self, int64_t timeout_ns, int err)
{
	struct rec_match mine = { getpid(), NULL, -1, false };
	struct hlock_stats before, after;
	int fd = self->fd[0];

	ASSERT_EQ(0, hlock_lock(fd, "t", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "t", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "t2/u", S, 0, 0));
	self->child = spawn_waiter("t", X, self->p[1], self->ctl[0], 0, NL);
	ASSERT_LT(0, self->child);
	ASSERT_TRUE(see_wait(fd, self->child, "t", X));
	before = stats_of(fd, HLOCK_STATS_LOCKER);
	if (err == -EINTR) {
		ASSERT_EQ(0, install_usr1());
		self->nagger = start_nagger(NAG_MS);
		ASSERT_LT(0, self->nagger);
	}
	ASSERT_EQ(err, hlock_yield(fd, timeout_ns));
	stop_child(self->nagger);
	self->nagger = 0;
	/* The waiter got t, and keeps it. */
	ASSERT_EQ('g', read_report(self->p[0]));

	ASSERT_EQ(NL, hlock_held(fd, "t"));
	ASSERT_EQ(NL, hlock_held(fd, "t2/u"));
	ASSERT_EQ(NL, hlock_held(fd, "t2"));
	ASSERT_EQ(NL, hlock_held(fd, ""));
	ASSERT_EQ(0, records(fd, &mine));
	after = stats_of(fd, HLOCK_STATS_LOCKER);
	EXPECT_EQ(before.yields + 1, after.yields);
	if (err == -EINTR) {
		EXPECT_EQ(before.interrupts + 1, after.interrupts);
	} else {
		EXPECT_EQ(before.timeouts + 1, after.timeouts);
	}
	/* Holding nothing: 0, and no yield counted. */
	ASSERT_EQ(0, hlock_yield(fd, -1));
	EXPECT_EQ(after.yields, stats_of(fd, HLOCK_STATS_LOCKER).yields);
	ASSERT_EQ(-ENOENT, hlock_unlock(fd, "t"));

	report(self->ctl[1], 'q');
	ASSERT_EQ(0, child_status(self->child));
	self->child = 0;
}

TEST_F_TIMEOUT(yield, timeout_holds_nothing, TEST_TMO)
{
	give_up(_metadata, self, 200 * MS, -ETIMEDOUT);
}

TEST_F_TIMEOUT(yield, try_holds_nothing, TEST_TMO)
{
	give_up(_metadata, self, 0, -EAGAIN);
}

TEST_F_TIMEOUT(yield, signal_holds_nothing, TEST_TMO)
{
	give_up(_metadata, self, -1, -EINTR);
}

/*
 * Nobody waits for what the locker holds: a compatible holder of the
 * same resource and a waiter elsewhere (blocked by another locker, its
 * intent on the root compatible with ours) are no reason to yield.  The
 * yield returns 0 at once; the locker's statistics, acquisitions
 * included, do not move: nothing was released or locked again.
 */
TEST_F_TIMEOUT(yield, nobody_waits, TEST_TMO)
{
	struct hlock_stats before, gbefore, after;
	int *fd = self->fd;

	ASSERT_EQ(0, hlock_lock(fd[0], "n", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[0], "m/x", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "n", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "o", X, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[2], "o", X, ASYNC, -1));
	before = stats_of(fd[0], HLOCK_STATS_LOCKER);
	gbefore = stats_of(fd[0], HLOCK_STATS_GLOBAL);

	ASSERT_EQ(0, hlock_yield(fd[0], -1));
	ASSERT_EQ(0, hlock_yield(fd[0], 0));

	after = stats_of(fd[0], HLOCK_STATS_LOCKER);
	ASSERT_EQ(0, memcmp(&before, &after, sizeof(before)));
	ASSERT_EQ(gbefore.yields, stats_of(fd[0], HLOCK_STATS_GLOBAL).yields);
	ASSERT_EQ(S, hlock_held(fd[0], "n"));
	ASSERT_EQ(X, hlock_held(fd[0], "m/x"));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[2], 0));
	ASSERT_EQ(0, hlock_unlock(fd[1], "o"));
	ASSERT_EQ(0, hlock_wait(fd[2], SETTLE_NS));
}

/*
 * A request in flight: an async lock queued, then granted but not yet
 * collected.  The yield is EBUSY, even with a waiter to yield to, and
 * changes nothing.
 */
TEST_F_TIMEOUT(yield, busy_with_request_in_flight, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, hlock_lock(fd[0], "b1", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "b2", X, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[2], "b1", X, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[0], "b2", X, ASYNC, -1));

	ASSERT_EQ(-EBUSY, hlock_yield(fd[0], -1));
	ASSERT_EQ(-EBUSY, hlock_yield(fd[0], 0));
	ASSERT_EQ(X, hlock_held(fd[0], "b1"));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[2], 0));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[0], 0));

	/* Granted, not collected: still in flight. */
	ASSERT_EQ(0, hlock_unlock(fd[1], "b2"));
	ASSERT_EQ(-EBUSY, hlock_yield(fd[0], -1));
	ASSERT_EQ(0, hlock_wait(fd[0], SETTLE_NS));
	ASSERT_EQ(X, hlock_held(fd[0], "b2"));
	ASSERT_EQ(X, hlock_held(fd[0], "b1"));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[2], 0));
}

/* A locker holding nothing, never having locked: 0, nothing counted. */
TEST_F_TIMEOUT(yield, holds_nothing, TEST_TMO)
{
	ASSERT_EQ(0, hlock_yield(self->fd[0], -1));
	ASSERT_EQ(0, hlock_yield(self->fd[0], 0));
	ASSERT_EQ(0, hlock_yield(self->fd[0], 1));
	EXPECT_EQ(0ULL, stats_of(self->fd[0], HLOCK_STATS_LOCKER).yields);
}

/*
 * A deadlock during the re-acquisition.  The yielder Y (fd 0) holds S on
 * a, X on b and X on x, in that order; H (fd 1) waits for b and W (fd 2)
 * for x, and W holds S on a too.  The yield lets H and W in; Y gets a
 * back (S, shared with W) and waits behind H for b.  Meanwhile a helper
 * process collects H's and W's grants, has W ask for X on a (a
 * conversion that waits for Y's S), and lets H go.  Y then gets b, and
 * asks for x, which W holds while it waits for Y: EDEADLK, and Y holds
 * nothing, which lets W's conversion in.
 */
TEST_F_TIMEOUT(yield, deadlock_on_the_way_back, TEST_TMO)
{
	struct hlock_stats gbefore = stats_of(self->fd[0], HLOCK_STATS_GLOBAL);
	int *fd = self->fd;
	pid_t me = getpid();

	ASSERT_EQ(0, hlock_lock(fd[0], "a", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[0], "b", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[0], "x", X, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "b", X, ASYNC, -1));
	ASSERT_EQ(0, hlock_lock(fd[2], "a", S, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[2], "x", X, ASYNC, -1));

	self->child = fork_child(fd[1], fd[2]);
	ASSERT_LE(0, self->child);
	if (!self->child) {
		/*
		 * H and W are let in by the yield; then Y waits for b behind
		 * H (H's request, made by this test's process too, no longer
		 * waits).
		 */
		if (hlock_wait(fd[1], GUARD_NS) || hlock_wait(fd[2], GUARD_NS))
			_exit(10);
		if (!see_wait(fd[1], me, "b", X))
			_exit(11);
		if (hlock_lock(fd[2], "a", X, ASYNC, -1) != -EINPROGRESS)
			_exit(12);
		if (hlock_unlock(fd[1], "b"))
			_exit(13);
		_exit(0);
	}
	ASSERT_EQ(-EDEADLK, hlock_yield(fd[0], -1));
	ASSERT_EQ(0, child_status(self->child));
	self->child = 0;

	ASSERT_EQ(NL, hlock_held(fd[0], "a"));
	ASSERT_EQ(NL, hlock_held(fd[0], "b"));
	ASSERT_EQ(NL, hlock_held(fd[0], "x"));
	ASSERT_EQ(NL, hlock_held(fd[0], ""));
	ASSERT_EQ(0, hlock_wait(fd[2], SETTLE_NS));
	ASSERT_EQ(X, hlock_held(fd[2], "a"));
	ASSERT_EQ(X, hlock_held(fd[2], "x"));
	ASSERT_EQ(gbefore.deadlocks + 1,
		  stats_of(fd[0], HLOCK_STATS_GLOBAL).deadlocks);
	ASSERT_EQ(gbefore.yields + 1,
		  stats_of(fd[0], HLOCK_STATS_GLOBAL).yields);
}

/*
 * While a yield waits on its way back, the locker is the yielder's: a
 * process sharing it cannot unlock or downgrade what is back already (k,
 * off the path the yield waits on), nor lock or yield; it can look.  Once
 * the waiter leaves, the yield ends with everything back.
 */
TEST_F_TIMEOUT(yield, others_busy_meanwhile, TEST_TMO)
{
	int fd = self->fd[0];
	pid_t me = getpid(), helper;

	ASSERT_EQ(0, hlock_lock(fd, "k", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, "t", X, 0, 0));
	self->child = spawn_waiter("t", X, self->p[1], self->ctl[0], 0, NL);
	ASSERT_LT(0, self->child);
	ASSERT_TRUE(see_wait(fd, self->child, "t", X));

	helper = fork_child(fd, self->ctl[1]);
	ASSERT_LE(0, helper);
	if (!helper) {
		/* The yielder waits for t, k back already. */
		if (!see_wait(fd, me, "t", X))
			_exit(10);
		if (hlock_held(fd, "k") != S)
			_exit(11);
		if (hlock_unlock(fd, "k") != -EBUSY)
			_exit(12);
		if (hlock_downgrade(fd, "k", IS) != -EBUSY)
			_exit(13);
		if (hlock_lock(fd, "z", S, 0, 0) != -EBUSY)
			_exit(14);
		if (hlock_yield(fd, 0) != -EBUSY)
			_exit(15);
		/* Let the waiter go: the yield gets t. */
		report(self->ctl[1], 'q');
		_exit(0);
	}
	ASSERT_EQ(0, hlock_yield(fd, -1));
	ASSERT_EQ(0, child_status(helper));
	ASSERT_EQ(0, child_status(self->child));
	self->child = 0;
	ASSERT_EQ(S, hlock_held(fd, "k"));
	ASSERT_EQ(X, hlock_held(fd, "t"));
	ASSERT_EQ(0, hlock_unlock(fd, "t"));
	ASSERT_EQ(0, hlock_unlock(fd, "k"));
	ASSERT_EQ(NL, hlock_held(fd, ""));
}

/* Every rejected argument, one at a time, the rest valid. */
TEST_F_TIMEOUT(yield, bad_arguments, TEST_TMO)
{
	struct hlock_yield_args a;
	int i;

	for (i = 0; i < 4; i++) {
		memset(&a, 0, sizeof(a));
		switch (i) {
		case 0:
			a.flags = 1;
			break;
		case 1:
			a.__pad = 1;
			break;
		case 2:
			a.reserved[0] = 1;
			break;
		case 3:
			a.reserved[1] = 1;
			break;
		}
		ASSERT_EQ(-EINVAL, raw_ioctl(self->fd[0], HLOCK_IOC_YIELD, &a))
			TH_LOG("case %d", i);
	}
	memset(&a, 0, sizeof(a));
	ASSERT_EQ(0, raw_ioctl(self->fd[0], HLOCK_IOC_YIELD, &a));
	ASSERT_EQ(-EFAULT, raw_ioctl(self->fd[0], HLOCK_IOC_YIELD,
				     unmapped_page()));
}

TEST_HARNESS_MAIN
