// SPDX-License-Identifier: GPL-2.0
/*
 * hlock deadlock detection: a lock call whose wait would close a cycle of
 * lockers waiting for each other fails at once with EDEADLK and leaves its
 * locker as it was; the others keep waiting, and go on once the refused
 * locker lets go.
 *
 * Most cycles here are built in one process from lockers (open files)
 * whose requests wait asynchronously (HLOCK_F_ASYNC), so that every wait
 * is in place when the next call is made; one test builds its cycle from
 * two processes blocked in the call.  The last test makes thousands of
 * waits that cannot form a cycle (every locker locks in one order) and
 * expects no EDEADLK at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

#define DETECT_PARAM	"/sys/module/hlock/parameters/deadlock_detect"
#define POLICY_PARAM	"/sys/module/hlock/parameters/grant_policy"
/* Lockers of the longest cycle, and of the acyclic test. */
#define MAX_FDS		16
/* Waits the acyclic test makes at least. */
#define ACYCLIC_WAITS	5000
/* Resources it locks, in this order only. */
#define ACYCLIC_RES	12
/* Polls for a child's wait to show in the lock table, 10 ms apart. */
#define WAIT_POLLS	1000

/* The lock space's count of refused calls. */
static long long deadlocks(int fd)
{
	struct hlock_stats st;

	if (hlock_stats(fd, HLOCK_STATS_GLOBAL, &st))
		return -1;
	return (long long)st.deadlocks;
}

/* Requests waiting (or converting) in the lock space, from its table. */
static int waiting(int fd)
{
	int w, n = table_count_if(fd, record_waits, NULL, &w);

	return n < 0 ? n : w;
}

FIXTURE(dl) {
	int fd[MAX_FDS];
	long long before;
};

FIXTURE_SETUP(dl)
{
	int i;

	for (i = 0; i < MAX_FDS; i++)
		self->fd[i] = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	for (i = 0; i < MAX_FDS; i++) {
		self->fd[i] = hlock_open();
		ASSERT_LE(0, self->fd[i]);
	}
	self->before = deadlocks(self->fd[0]);
	ASSERT_LE(0, self->before);
}

FIXTURE_TEARDOWN(dl)
{
	int i;

	/* What a test changed, back to the defaults, also when it failed. */
	write_file_str(DETECT_PARAM, "1", O_WRONLY);
	write_file_str(POLICY_PARAM, "batch", O_WRONLY);
	for (i = 0; i < MAX_FDS; i++)
		if (self->fd[i] >= 0)
			close(self->fd[i]);
}

/*
 * Lockers 0 to n-1 hold X on d/i; each but the last asks for the next
 * one's and waits; the last asks for d/0 and is refused.  Then it lets
 * go, and the chain unwinds from its end.
 */
static void cycle(struct __test_metadata *_metadata, int *fd, int n,
		  long long before)
{
	char path[16], next[16];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "d/%d", i);
		ASSERT_EQ(0, hlock_lock(fd[i], path, X, 0, 0));
	}
	for (i = 0; i < n - 1; i++) {
		snprintf(next, sizeof(next), "d/%d", i + 1);
		ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[i], next, X, ASYNC, -1));
	}
	ASSERT_EQ(before, deadlocks(fd[0]));
	ASSERT_EQ(-EDEADLK, hlock_lock(fd[n - 1], "d/0", X, 0, -1));
	ASSERT_EQ(before + 1, deadlocks(fd[0]));
	/* As it was: X on its own, the intents, nothing on d/0. */
	snprintf(path, sizeof(path), "d/%d", n - 1);
	ASSERT_EQ(X, hlock_held(fd[n - 1], path));
	ASSERT_EQ(NL, hlock_held(fd[n - 1], "d/0"));
	ASSERT_EQ(IX, hlock_held(fd[n - 1], "d"));
	ASSERT_EQ(n - 1, waiting(fd[0]));
	ASSERT_EQ(0, hlock_unlock(fd[n - 1], path));
	for (i = n - 2; i >= 0; i--) {
		snprintf(path, sizeof(path), "d/%d", i);
		snprintf(next, sizeof(next), "d/%d", i + 1);
		ASSERT_EQ(0, hlock_wait(fd[i], 5 * SEC)) TH_LOG("locker %d", i);
		ASSERT_EQ(0, hlock_unlock(fd[i], next));
		ASSERT_EQ(0, hlock_unlock(fd[i], path));
	}
	ASSERT_EQ(0, waiting(fd[0]));
}

TEST_F_TIMEOUT(dl, cycle_of_2, TEST_TMO)
{
	cycle(_metadata, self->fd, 2, self->before);
}

TEST_F_TIMEOUT(dl, cycle_of_3, TEST_TMO)
{
	cycle(_metadata, self->fd, 3, self->before);
}

TEST_F_TIMEOUT(dl, cycle_of_10, TEST_TMO)
{
	cycle(_metadata, self->fd, 10, self->before);
}

/*
 * Two processes, each blocked in the call: the child holds a and waits
 * for b; the parent holds b and asks for a.  The parent is refused; the
 * child gets b once the parent lets go.
 */
TEST_F_TIMEOUT(dl, two_processes_blocked, TEST_TMO)
{
	int p[2], i, status;
	pid_t pid;

	ASSERT_EQ(0, hlock_lock(self->fd[0], "b", X, 0, 0));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(p[0]);
		if (hlock_lock(self->fd[1], "a", X, 0, 0))
			_exit(10);
		report(p[1], 'h');
		/* Blocks until the parent lets go of b. */
		if (hlock_lock(self->fd[1], "b", X, 0, 30 * SEC))
			_exit(11);
		_exit(0);
	}
	close(p[1]);
	ASSERT_EQ('h', read_report(p[0]));
	for (i = 0; i < WAIT_POLLS && waiting(self->fd[0]) < 1; i++)
		usleep(10000);
	ASSERT_EQ(1, waiting(self->fd[0]));
	ASSERT_EQ(-EDEADLK, hlock_lock(self->fd[0], "a", X, 0, -1));
	ASSERT_EQ(X, hlock_held(self->fd[0], "b"));
	ASSERT_EQ(0, hlock_unlock(self->fd[0], "b"));
	status = wait_child(pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(self->before + 1, deadlocks(self->fd[0]));
	close(p[0]);
}

/*
 * The ids of the waiting record on @path in @fd's lock space, from a
 * table with ids: 0, or -ENOENT when none waits there.
 */
static int waiting_ids(int fd, const char *path, struct hlock_record_ids *out)
{
	const struct hlock_lock_record *rec;
	void *buf = NULL;
	int i, n, ret = -ENOENT;

	n = hlock_table_ids_alloc(fd, &buf);
	if (n < 0)
		return n;
	rec = buf;
	for (i = 0; i < n; i++, rec = hlock_record_next(rec)) {
		const struct hlock_record_ids *ids = hlock_record_ids(rec);

		if (!ids)
			break;
		if (rec->state != HLOCK_STATE_GRANTED &&
		    !strcmp(hlock_record_path(rec), path)) {
			*out = *ids;
			ret = 0;
		}
	}
	free(buf);
	return ret;
}

/*
 * HLOCK_IOC_REFUSE: a wait named by the table (as a search across nodes
 * names it) fails with EDEADLK and leaves its locker as it was, a blocking
 * call, an asynchronous one and a conversion alike; a name that is stale
 * (another wait, a release since, a closed locker) refuses nothing.
 */
TEST_F_TIMEOUT(dl, refused_from_outside, TEST_TMO)
{
	struct hlock_record_ids ids, old;
	struct hlock_refuse_args args;
	int *fd = self->fd, p[2], i, status;
	const struct hlock_record_ids *gids;
	void *buf = NULL;
	pid_t pid;

	ASSERT_EQ(0, hlock_lock(fd[0], "o/x", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "o/y", S, 0, 0));
	/* Every record of a table with ids carries them, holders too. */
	ASSERT_LT(0, hlock_table_ids_alloc(fd[0], &buf));
	gids = hlock_record_ids(buf);
	ASSERT_NE(NULL, gids);
	ASSERT_EQ(0U, gids->__pad);
	ASSERT_EQ(0U, gids->wait_seq & 1);
	free(buf);
	/* An asynchronous wait. */
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "o/x", S, ASYNC, -1));
	ASSERT_EQ(0, waiting_ids(fd[0], "o/x", &ids));
	ASSERT_EQ(1U, ids.wait_seq & 1);
	old = ids;
	old.wait_seq += 2;
	ASSERT_EQ(-ESTALE, hlock_refuse(fd[0], &old));
	old = ids;
	old.hold_seq++;
	ASSERT_EQ(-ESTALE, hlock_refuse(fd[0], &old));
	old = ids;
	old.serial++;
	ASSERT_EQ(-ESRCH, hlock_refuse(fd[0], &old));
	memset(&args, 0, sizeof(args));
	args.serial = ids.serial;
	args.locker = ids.locker;
	args.wait_seq = ids.wait_seq;
	args.hold_seq = ids.hold_seq;
	args.flags = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(fd[0], HLOCK_IOC_REFUSE, &args));
	args.flags = 0;
	args.reserved[1] = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(fd[0], HLOCK_IOC_REFUSE, &args));
	/* Only CAP_SYS_ADMIN refuses. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(setresuid(65534, 65534, 65534) ? 9 :
		      hlock_refuse(fd[0], &ids) == -EPERM ? 0 : 10);
	status = wait_child(pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, hlock_refuse(fd[0], &ids));
	ASSERT_EQ(-EDEADLK, hlock_wait(fd[1], 5 * SEC));
	ASSERT_EQ(self->before + 1, deadlocks(fd[0]));
	ASSERT_EQ(S, hlock_held(fd[1], "o/y"));
	ASSERT_EQ(NL, hlock_held(fd[1], "o/x"));
	ASSERT_EQ(IS, hlock_held(fd[1], "o"));
	ASSERT_EQ(-ESTALE, hlock_refuse(fd[0], &ids));
	ASSERT_EQ(0, waiting(fd[0]));
	/* A conversion: S to X behind another S. */
	ASSERT_EQ(0, hlock_lock(fd[2], "o/y", S, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[2], "o/y", X, ASYNC, -1));
	ASSERT_EQ(0, waiting_ids(fd[0], "o/y", &ids));
	ASSERT_EQ(0, hlock_refuse(fd[0], &ids));
	ASSERT_EQ(-EDEADLK, hlock_wait(fd[2], 5 * SEC));
	ASSERT_EQ(S, hlock_held(fd[2], "o/y"));
	/* A call blocked in another process. */
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(p[0]);
		report(p[1], 'w');
		_exit(hlock_lock(fd[3], "o/x", X, 0, 30 * SEC) == -EDEADLK ?
		      0 : 10);
	}
	close(p[1]);
	ASSERT_EQ('w', read_report(p[0]));
	for (i = 0; i < WAIT_POLLS && waiting(fd[0]) < 1; i++)
		usleep(10000);
	ASSERT_EQ(0, waiting_ids(fd[0], "o/x", &ids));
	ASSERT_EQ(0, hlock_refuse(fd[0], &ids));
	status = wait_child(pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(NL, hlock_held(fd[3], "o"));
	/* A closed locker's name names nobody, even a reused number. */
	close(fd[3]);
	fd[3] = hlock_open();
	ASSERT_LE(0, fd[3]);
	ASSERT_EQ(-ESRCH, hlock_refuse(fd[0], &ids));
	ASSERT_EQ(self->before + 3, deadlocks(fd[0]));
	close(p[0]);
}

/*
 * Two S holders both ask for X: the first waits, the second is refused
 * and keeps its S; once it lets go, the first gets X.  Through intents
 * too: S on a by both, then X below a by both.
 */
TEST_F_TIMEOUT(dl, conversion, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, hlock_lock(fd[0], "c", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "c", S, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[0], "c", X, ASYNC, -1));
	ASSERT_EQ(-EDEADLK, hlock_lock(fd[1], "c", X, 0, -1));
	ASSERT_EQ(S, hlock_held(fd[1], "c"));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[0], 0));
	ASSERT_EQ(0, hlock_unlock(fd[1], "c"));
	ASSERT_EQ(0, hlock_wait(fd[0], 5 * SEC));
	ASSERT_EQ(X, hlock_held(fd[0], "c"));

	ASSERT_EQ(0, hlock_lock(fd[2], "a", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[3], "a", S, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[2], "a/1", X, ASYNC, -1));
	/* Refused while asynchronous too. */
	ASSERT_EQ(-EDEADLK, hlock_lock(fd[3], "a/2", X, ASYNC, -1));
	ASSERT_EQ(S, hlock_held(fd[3], "a"));
	ASSERT_EQ(NL, hlock_held(fd[3], "a/2"));
	ASSERT_EQ(0, hlock_unlock(fd[3], "a"));
	ASSERT_EQ(0, hlock_wait(fd[2], 5 * SEC));
	ASSERT_EQ(self->before + 2, deadlocks(fd[0]));
}

/*
 * A cycle closed by a later level of the path: locker 0 waits at a behind
 * locker 2's S, is granted there when 2 lets go, and only then meets
 * locker 1 on a/y, who waits for 0.  The asynchronous call ends with
 * EDEADLK: poll says so, hlock_wait() returns it, and the intent taken on
 * a is undone.
 */
TEST_F_TIMEOUT(dl, later_level, TEST_TMO)
{
	struct pollfd pfd = { .fd = self->fd[0], .events = POLLIN };
	int *fd = self->fd;

	ASSERT_EQ(0, hlock_lock(fd[0], "b", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "a/y", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[2], "a", S, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "b", X, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[0], "a/y", X, ASYNC, -1));
	ASSERT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, hlock_unlock(fd[2], "a"));
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	ASSERT_EQ(-EDEADLK, hlock_wait(fd[0], 0));
	ASSERT_EQ(NL, hlock_held(fd[0], "a"));
	ASSERT_EQ(X, hlock_held(fd[0], "b"));
	ASSERT_EQ(self->before + 1, deadlocks(fd[0]));
	ASSERT_EQ(0, hlock_unlock(fd[0], "b"));
	ASSERT_EQ(0, hlock_wait(fd[1], 5 * SEC));
}

/*
 * Under the fifo policy a waiter waits for every conflicting waiter ahead
 * of it: 2 waits on q behind 1's X, 1 for 0's S, and 0 closes the cycle
 * by asking for r, which 2 holds.  A try never searches: EAGAIN.
 */
TEST_F_TIMEOUT(dl, waiter_ahead_fifo, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, write_file_str(POLICY_PARAM, "fifo", O_WRONLY));
	ASSERT_EQ(0, hlock_lock(fd[0], "q", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[2], "r", X, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[3], "q", IX, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "q", X, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[2], "q", S, ASYNC, -1));
	ASSERT_EQ(-EAGAIN, hlock_lock(fd[0], "r", X, 0, 0));
	ASSERT_EQ(-EDEADLK, hlock_lock(fd[0], "r", X, 0, -1));
	ASSERT_EQ(self->before + 1, deadlocks(fd[0]));
}

/*
 * Issue 30, item 4: a cycle closed by a new head of a queue, with nobody
 * starting to wait.  D (0) holds S on r2; X (1) IS and Y (2) S on r; F
 * (3) asks IX on r, E (4) X, D SIX, and X asks X on r2, all asynchronous.
 * D waits for F, the head of r's queue.  Y lets go: F is granted, and D
 * now waits for E, the new head, which waits for X's IS, whose X on r2
 * waits for D: the new head's wait is refused at once (before the unlock
 * returns, as the continuations of what it granted run in it).  Under
 * batch, and under fifo while a compatible-first request is granted on r
 * (C, 5, which needs CAP_SYS_NICE), where a waiter may pass a conflicting
 * one and only the head is waited for by all.  Under plain fifo, D waits
 * for E from the start and X's wait is refused at once.
 */
static void new_head(struct __test_metadata *_metadata, int *fd,
		     long long before, const char *policy, bool cf)
{
	bool fifo = !strcmp(policy, "fifo") && !cf;

	ASSERT_EQ(0, write_file_str(POLICY_PARAM, policy, O_WRONLY));
	ASSERT_EQ(0, hlock_lock(fd[0], "r2", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "r", IS, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[2], "r", S, 0, 0));
	if (cf)
		ASSERT_EQ(0, hlock_lock(fd[5], "r", IS, HLOCK_F_COMPAT_FIRST,
					0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[3], "r", IX, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[4], "r", X, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[0], "r", SIX, ASYNC, -1));
	if (fifo) {
		ASSERT_EQ(-EDEADLK, hlock_lock(fd[1], "r2", X, ASYNC, -1));
		ASSERT_EQ(before + 1, deadlocks(fd[0]));
		return;
	}
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "r2", X, ASYNC, -1));
	ASSERT_EQ(before, deadlocks(fd[0]));
	ASSERT_EQ(0, hlock_unlock(fd[2], "r"));
	ASSERT_EQ(0, hlock_wait(fd[3], 0));
	ASSERT_EQ(before + 1, deadlocks(fd[0]))
		TH_LOG("%s%s: the new head closed a cycle, nobody refused",
		       policy, cf ? " with compatible-first" : "");
	ASSERT_EQ(-EDEADLK, hlock_wait(fd[4], 0));
	ASSERT_EQ(NL, hlock_held(fd[4], "r"));
	ASSERT_EQ(NL, hlock_held(fd[4], ""));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[0], 0));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[1], 0));
	/* It unwinds: F goes, D gets SIX, lets go of r2, X gets it. */
	ASSERT_EQ(0, hlock_unlock(fd[3], "r"));
	if (cf)
		ASSERT_EQ(0, hlock_unlock(fd[5], "r"));
	ASSERT_EQ(0, hlock_wait(fd[0], 0));
	ASSERT_EQ(0, hlock_unlock(fd[0], "r2"));
	ASSERT_EQ(0, hlock_wait(fd[1], 0));
	ASSERT_EQ(before + 1, deadlocks(fd[0]));
}

TEST_F_TIMEOUT(dl, new_head_batch, TEST_TMO)
{
	new_head(_metadata, self->fd, self->before, "batch", false);
}

TEST_F_TIMEOUT(dl, new_head_fifo_compat_first, TEST_TMO)
{
	new_head(_metadata, self->fd, self->before, "fifo", true);
}

TEST_F_TIMEOUT(dl, new_head_fifo, TEST_TMO)
{
	new_head(_metadata, self->fd, self->before, "fifo", false);
}

/*
 * The same cycle closed when the head of the queue gives up instead of
 * being granted: F's request is cancelled, and E, the new head, refused.
 */
TEST_F_TIMEOUT(dl, new_head_withdrawn, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, hlock_lock(fd[0], "r2", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "r", IS, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[2], "r", S, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[3], "r", IX, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[4], "r", X, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[0], "r", SIX, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "r2", X, ASYNC, -1));
	ASSERT_EQ(self->before, deadlocks(fd[0]));
	ASSERT_EQ(0, hlock_unlock(fd[3], "r"));
	ASSERT_EQ(self->before + 1, deadlocks(fd[0]))
		TH_LOG("the new head closed a cycle, nobody refused");
	ASSERT_EQ(-EDEADLK, hlock_wait(fd[4], 0));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[0], 0));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[1], 0));
	ASSERT_EQ(0, hlock_unlock(fd[2], "r"));
	ASSERT_EQ(0, hlock_wait(fd[0], 0));
}

/*
 * Issue 30, item 4: a cycle closed when a queue's waiters come to wait
 * for every conflicting waiter ahead: under fifo the last compatible-first
 * holder goes (@change false), or the resource takes up fifo, set while
 * they wait under batch, at its next grant pass (@change true).  G (0)
 * holds IS and J (1) IX on r; K (2) holds IX with COMPAT_FIRST, or a
 * plain IS.  F (3) asks S, V (4) X and W (5) S on r: each waits for J and
 * for F, the head.  G asks X on r2, held by W in S.  K lets go: W now
 * waits for V too, which waits for G: one of V and W is refused at once.
 */
static void all_ahead(struct __test_metadata *_metadata, int *fd,
		      long long before, bool change)
{
	int v, w;

	ASSERT_EQ(0, write_file_str(POLICY_PARAM, change ? "batch" : "fifo",
				    O_WRONLY));
	ASSERT_EQ(0, hlock_lock(fd[5], "r2", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[0], "r", IS, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "r", IX, 0, 0));
	ASSERT_EQ(0, change ? hlock_lock(fd[2], "r", IS, 0, 0) :
		     hlock_lock(fd[2], "r", IX, HLOCK_F_COMPAT_FIRST, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[3], "r", S, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[4], "r", X, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[5], "r", S, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[0], "r2", X, ASYNC, -1));
	ASSERT_EQ(before, deadlocks(fd[0]));
	if (change)
		ASSERT_EQ(0, write_file_str(POLICY_PARAM, "fifo", O_WRONLY));
	ASSERT_EQ(0, hlock_unlock(fd[2], "r"));
	ASSERT_EQ(before + 1, deadlocks(fd[0]))
		TH_LOG("%s: fifo's waits closed a cycle, nobody refused",
		       change ? "policy change" : "compatible-first gone");
	v = hlock_wait(fd[4], 0);
	w = hlock_wait(fd[5], 0);
	ASSERT_TRUE((v == -EDEADLK && w == -EAGAIN) ||
		    (v == -EAGAIN && w == -EDEADLK))
		TH_LOG("V %d, W %d", v, w);
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[3], 0));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[0], 0));
}

TEST_F_TIMEOUT(dl, all_ahead_compat_first_goes, TEST_TMO)
{
	all_ahead(_metadata, self->fd, self->before, false);
}

TEST_F_TIMEOUT(dl, all_ahead_policy_change, TEST_TMO)
{
	all_ahead(_metadata, self->fd, self->before, true);
}

/* With deadlock_detect 0, a cycle waits until a timeout ends it. */
TEST_F_TIMEOUT(dl, detection_off, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, hlock_lock(fd[0], "x", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[1], "y", X, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[0], "y", X, ASYNC, -1));
	ASSERT_EQ(0, write_file_str(DETECT_PARAM, "0", O_WRONLY));
	ASSERT_EQ(-ETIMEDOUT, hlock_lock(fd[1], "x", X, 0, 100 * MS));
	ASSERT_EQ(0, write_file_str(DETECT_PARAM, "1", O_WRONLY));
	ASSERT_EQ(-EDEADLK, hlock_lock(fd[1], "x", X, 0, -1));
	ASSERT_EQ(self->before + 1, deadlocks(fd[0]));
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Thousands of waits that close no cycle: each locker locks resources
 * r0 to r11 in that order only, S or X, waiting asynchronously, so every
 * locker waits for one that holds or waits on the same resource and holds
 * only lower ones.  None may be refused.
 */
TEST_F_TIMEOUT(dl, no_false_positive, 300)
{
	int next[MAX_FDS] = { 0 }, pending[MAX_FDS] = { 0 };
	uint64_t seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
	long waits = 0, grants = 0, refused = 0, steps = 0;
	int *fd = self->fd;
	char path[16];
	int i, r, ret;

	TH_LOG("seed %llu", (unsigned long long)seed);
	while (waits < ACYCLIC_WAITS) {
		ASSERT_LT(steps++, 50L * ACYCLIC_WAITS);
		i = rnd(&seed) % MAX_FDS;
		if (pending[i]) {
			ret = hlock_wait(fd[i], 0);
			if (ret == 0) {
				pending[i] = 0;
				grants++;
			} else {
				ASSERT_EQ(-EAGAIN, ret);
				/* Now and then give up the wait instead. */
				if (!(rnd(&seed) % 8)) {
					snprintf(path, sizeof(path), "r%d",
						 next[i] - 1);
					ASSERT_LE(0, hlock_unlock(fd[i], path));
					pending[i] = 0;
					next[i]--;
				}
			}
			continue;
		}
		if (next[i] == ACYCLIC_RES || !(rnd(&seed) % 4)) {
			/* Let go of everything, highest first. */
			for (r = next[i] - 1; r >= 0; r--) {
				snprintf(path, sizeof(path), "r%d", r);
				hlock_unlock(fd[i], path);
			}
			next[i] = 0;
			continue;
		}
		/* A resource above every one it holds. */
		next[i] += rnd(&seed) % (ACYCLIC_RES - next[i]);
		snprintf(path, sizeof(path), "r%d", next[i]++);
		ret = hlock_lock(fd[i], path, rnd(&seed) % 3 ? S : X, ASYNC,
				 -1);
		refused += ret == -EDEADLK;
		ASSERT_NE(-EDEADLK, ret) TH_LOG("%s refused", path);
		if (ret == -EINPROGRESS) {
			pending[i] = 1;
			waits++;
		} else {
			ASSERT_EQ(0, ret);
			grants++;
		}
	}
	TH_LOG("%ld waits, %ld grants in %ld steps, %ld refused", waits,
	       grants, steps, refused);
	ASSERT_EQ(self->before, deadlocks(fd[0]));
}

TEST_HARNESS_MAIN
