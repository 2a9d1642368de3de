// SPDX-License-Identifier: GPL-2.0
/*
 * hlock tickets: the read and write pools (module parameters read_tickets
 * and write_tickets, MongoDB's TicketHolders), taken by a locker's first
 * lock call and returned once it holds nothing.
 *
 * Conventions:
 *  - Each test sets the pools it needs through sysfs and its teardown
 *    sets both back to 0 (unlimited), closing its lockers first; its
 *    setup does too, in case a failed test's teardown did not run.  The
 *    pools are module-wide: in the VM this program is the only thing that
 *    locks while it runs, so their figures are exact.
 *  - That a locker waits for a ticket is seen in the pool's figures
 *    (HLOCK_IOC_STATS): await_waiting() polls them, bounded by SETTLE_NS,
 *    a hang guard, never a timing threshold.
 *  - A blocking lock call waits in a thread of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <liburing.h>

/* The harness's macros trip -Wextra, as hlock_test.c explains. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"
#include "hlock_uring.h"

#define PARAM_DIR	"/sys/module/hlock/parameters/"
#define NLOCKERS	6
#define RD		HLOCK_TICKET_READ
#define WR		HLOCK_TICKET_WRITE
/* A timeout that surely passes while the pool stays full. */
#define SHORT_NS	(50 * MS)
/* How often the nagger interrupts a blocking call, in ms. */
#define NAG_MS		50
#define RING_ENTRIES	8

static const char *const pool_param[HLOCK_NR_TICKET_POOLS] = {
	[RD] = PARAM_DIR "read_tickets",
	[WR] = PARAM_DIR "write_tickets",
};

/* Size a pool: 0 or -errno. */
static int set_pool(int pool, unsigned int n)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", n);
	return write_file_str(pool_param[pool], buf, 0);
}

/* One pool's figures in @scope, as @fd sees them: 0 or -errno. */
static int pool_stats(int fd, unsigned int scope, int pool,
		      struct hlock_ticket_stats *ts)
{
	struct hlock_stats st;
	int ret = hlock_stats(fd, scope, &st);

	if (!ret)
		*ts = st.tickets[pool];
	return ret;
}

/* A pool's figures in @scope, as @fd sees them. */
#define ASSERT_SCOPE(fd, scope, pool, want_out, want_avail, want_total,	\
		     want_wait)						\
	do {								\
		struct hlock_ticket_stats __ts;				\
		ASSERT_EQ(0, pool_stats(fd, scope, pool, &__ts));	\
		EXPECT_EQ((uint64_t)(want_out), __ts.out);		\
		EXPECT_EQ((uint64_t)(want_avail), __ts.available);	\
		EXPECT_EQ((uint64_t)(want_total), __ts.total);		\
		ASSERT_EQ((uint64_t)(want_wait), __ts.waiting);		\
	} while (0)

/* The pool's figures, as the module-wide statistics say. */
#define ASSERT_POOL(fd, pool, out, avail, total, wait)			\
	ASSERT_SCOPE(fd, HLOCK_STATS_GLOBAL, pool, out, avail, total, wait)
/* The pool's figures, as the locker's own statistics say. */
#define ASSERT_MINE(fd, pool, out, avail, total, wait)			\
	ASSERT_SCOPE(fd, HLOCK_STATS_LOCKER, pool, out, avail, total, wait)

/* Wait until @n lockers wait for a ticket of @pool: 0 or -ETIMEDOUT. */
static int await_waiting(int fd, int pool, uint64_t n)
{
	int64_t end = now_ns() + SETTLE_NS;
	struct hlock_ticket_stats ts;

	do {
		if (pool_stats(fd, HLOCK_STATS_GLOBAL, pool, &ts))
			return -EIO;
		if (ts.waiting == n)
			return 0;
		usleep(1000);
	} while (now_ns() < end);
	return -ETIMEDOUT;
}

/* Whether @fd's async request is done (poll() says so within @ms). */
static bool polled(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* A blocking lock call, made by a thread of its own. */
struct blocker {
	pthread_t thread;
	int fd;
	const char *path;
	int mode;
	int ret;
};

static void *blocker_run(void *arg)
{
	struct blocker *b = arg;

	b->ret = hlock_lock(b->fd, b->path, b->mode, 0, -1);
	return NULL;
}

FIXTURE(tk) {
	int fd[NLOCKERS];
};

FIXTURE_SETUP(tk)
{
	struct hlock_info info;
	int i;

	for (i = 0; i < NLOCKERS; i++)
		self->fd[i] = -1;
	if (!have_device())
		SKIP(return, "no " HLOCK_DEVICE);
	for (i = 0; i < NLOCKERS; i++) {
		self->fd[i] = hlock_open();
		ASSERT_LE(0, self->fd[i]);
	}
	ASSERT_EQ(0, hlock_info(self->fd[0], &info));
	if (!(info.features & HLOCK_FEAT_TICKETS))
		SKIP(return, "no HLOCK_FEAT_TICKETS");
	/*
	 * The harness may skip the teardown of a test that failed an
	 * ASSERT (its child's pid, set after setjmp(), can be clobbered by
	 * the longjmp()): start from unlimited pools whatever came before.
	 */
	ASSERT_EQ(0, set_pool(RD, 0));
	ASSERT_EQ(0, set_pool(WR, 0));
	ASSERT_POOL(self->fd[0], RD, 0, 0, 0, 0);
	ASSERT_POOL(self->fd[0], WR, 0, 0, 0, 0);
}

/*
 * Every test ends here: its lockers closed, whatever they held or queued,
 * no ticket may be out and no locker wait for one.
 */
FIXTURE_TEARDOWN(tk)
{
	struct hlock_ticket_stats ts = { 0 };
	int i, fd;

	for (i = 0; i < NLOCKERS; i++)
		if (self->fd[i] >= 0)
			EXPECT_EQ(0, close(self->fd[i]));
	fd = hlock_open();
	if (fd >= 0) {
		for (i = 0; i < HLOCK_NR_TICKET_POOLS; i++) {
			EXPECT_EQ(0, pool_stats(fd, HLOCK_STATS_GLOBAL, i,
						&ts));
			EXPECT_EQ(0ULL, ts.out + ts.waiting);
		}
		close(fd);
	}
	EXPECT_EQ(0, set_pool(RD, 0));
	EXPECT_EQ(0, set_pool(WR, 0));
}

/* N readers hold, the next blocks until one leaves; IS on the root too. */
TEST_F_TIMEOUT(tk, blocking_waits_for_a_reader, TEST_TMO)
{
	struct blocker b = { .path = "t1/b", .mode = IS, .ret = 1 };
	int *fd = self->fd;

	ASSERT_EQ(0, set_pool(RD, 2));
	ASSERT_EQ(0, hlock_lock(fd[0], "t1/a", S, 0, -1));
	ASSERT_EQ(0, hlock_lock(fd[1], "", IS, 0, -1));
	ASSERT_POOL(fd[0], RD, 2, 0, 2, 0);
	b.fd = fd[2];
	ASSERT_EQ(0, pthread_create(&b.thread, NULL, blocker_run, &b));
	ASSERT_EQ(0, await_waiting(fd[0], RD, 1));
	ASSERT_POOL(fd[0], RD, 2, 0, 2, 1);
	ASSERT_MINE(fd[2], RD, 0, 0, 2, 1);
	/* The wait shows in debugfs, where a user can see it. */
	if (!access("/sys/kernel/debug/hlock/tickets", R_OK)) {
		char buf[4096], want[64];

		ASSERT_EQ(0, read_file_str("/sys/kernel/debug/hlock/tickets",
					   buf, sizeof(buf)));
		snprintf(want, sizeof(want), "%-6s %10u %10u %10u\n", "read",
			 2, 2, 1);
		EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
		EXPECT_NE(NULL, strstr(buf, "hlock_ticket_te")) TH_LOG("%s", buf);
	}
	/* The last unlock returns the ticket, which goes to the waiter. */
	ASSERT_EQ(0, hlock_unlock(fd[1], ""));
	ASSERT_EQ(0, pthread_join(b.thread, NULL));
	ASSERT_EQ(0, b.ret);
	ASSERT_EQ(IS, hlock_held(fd[2], "t1/b"));
	ASSERT_POOL(fd[0], RD, 2, 0, 2, 0);
	/* Closing a holder returns its ticket. */
	ASSERT_EQ(0, close(fd[2]));
	fd[2] = -1;
	ASSERT_POOL(fd[0], RD, 1, 1, 2, 0);
	ASSERT_EQ(0, hlock_unlock(fd[0], "t1/a"));
	ASSERT_MINE(fd[0], RD, 0, 2, 2, 0);
	ASSERT_EQ(NL, hlock_held(fd[0], ""));
}

/*
 * HLOCK_F_ASYNC: a call queued for a ticket returns -EINPROGRESS, and
 * poll() and HLOCK_IOC_WAIT work on it as on a lock wait.
 */
TEST_F_TIMEOUT(tk, async_poll_and_wait, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, set_pool(RD, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t2", S, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "t2/x", S, ASYNC, 0));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 1);
	ASSERT_FALSE(polled(fd[1], 0));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[1], 0));
	ASSERT_EQ(-ETIMEDOUT, hlock_wait(fd[1], SHORT_NS));
	/* Still queued; a second lock call finds the slot busy. */
	ASSERT_EQ(-EBUSY, hlock_lock(fd[1], "t2/y", S, 0, 0));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 1);
	ASSERT_EQ(NL, hlock_held(fd[1], "t2/x"));
	ASSERT_EQ(0, hlock_unlock(fd[0], "t2"));
	ASSERT_TRUE(polled(fd[1], SETTLE_NS / MS));
	ASSERT_EQ(0, hlock_wait(fd[1], 0));
	ASSERT_EQ(S, hlock_held(fd[1], "t2/x"));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	ASSERT_EQ(-ENOENT, hlock_wait(fd[1], 0));

	/* A ticket wait, then a lock wait, in one async call. */
	ASSERT_EQ(0, hlock_lock(fd[2], "t2/z", X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[3], "t2/z", S, ASYNC, 0));
	ASSERT_EQ(0, await_waiting(fd[0], RD, 1));
	ASSERT_EQ(0, hlock_unlock(fd[1], "t2/x"));
	/* The ticket came; the lock still waits for the writer. */
	ASSERT_EQ(0, await_waiting(fd[0], RD, 0));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	ASSERT_FALSE(polled(fd[3], 0));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[3], 0));
	ASSERT_EQ(0, hlock_unlock(fd[2], "t2/z"));
	ASSERT_EQ(0, hlock_wait(fd[3], -1));
	ASSERT_EQ(S, hlock_held(fd[3], "t2/z"));
	ASSERT_EQ(0, hlock_unlock(fd[3], "t2/z"));
	ASSERT_POOL(fd[0], RD, 0, 1, 1, 0);
}

/* A timeout, a try and a signal give up, leaving the locker as it was. */
TEST_F_TIMEOUT(tk, timeout_try_signal, TEST_TMO)
{
	struct hlock_stats before, after;
	int *fd = self->fd;
	pid_t nagger;

	ASSERT_EQ(0, set_pool(RD, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t3", IS, 0, -1));
	ASSERT_EQ(0, hlock_stats(fd[1], HLOCK_STATS_LOCKER, &before));

	ASSERT_EQ(-ETIMEDOUT, hlock_lock(fd[1], "t3/a", S, 0, SHORT_NS));
	ASSERT_EQ(-EAGAIN, hlock_lock(fd[1], "t3/a", S, 0, 0));
	ASSERT_EQ(0, install_usr1());
	nagger = start_nagger(NAG_MS);
	ASSERT_LT(0, nagger);
	ASSERT_EQ(-EINTR, hlock_lock(fd[1], "t3/a", S, 0, -1));
	stop_child(nagger);

	ASSERT_EQ(0, hlock_stats(fd[1], HLOCK_STATS_LOCKER, &after));
	EXPECT_EQ(before.timeouts + 2, after.timeouts);
	EXPECT_EQ(before.interrupts + 1, after.interrupts);
	ASSERT_EQ(NL, hlock_held(fd[1], "t3/a"));
	ASSERT_EQ(NL, hlock_held(fd[1], ""));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	/* Nothing was left behind: the locker gets in once there is room. */
	ASSERT_EQ(0, hlock_unlock(fd[0], "t3"));
	ASSERT_EQ(0, hlock_lock(fd[1], "t3/a", S, 0, 0));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
}

/*
 * Waiters get their tickets first come, first served, and a newcomer
 * queues behind them even when it only tries.
 */
TEST_F_TIMEOUT(tk, fifo, TEST_TMO)
{
	int *fd = self->fd, i, j, n;

	ASSERT_EQ(0, set_pool(RD, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t4", S, 0, -1));
	for (i = 1; i < NLOCKERS; i++) {
		ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[i], "t4", S, ASYNC, 0));
		ASSERT_EQ(0, await_waiting(fd[0], RD, i));
	}
	/* A newcomer does not pass them, even by trying. */
	n = hlock_open();
	ASSERT_LE(0, n);
	ASSERT_EQ(-EAGAIN, hlock_lock(n, "t4/n", S, 0, 0));
	close(n);
	ASSERT_EQ(0, hlock_unlock(fd[0], "t4"));
	/* Each leaves in turn; only the next in line gets in. */
	for (i = 1; i < NLOCKERS; i++) {
		ASSERT_EQ(0, hlock_wait(fd[i], SETTLE_NS));
		ASSERT_EQ(S, hlock_held(fd[i], "t4"));
		for (j = i + 1; j < NLOCKERS; j++)
			ASSERT_EQ(-EAGAIN, hlock_wait(fd[j], 0));
		ASSERT_POOL(fd[0], RD, 1, 0, 1, NLOCKERS - 1 - i);
		ASSERT_EQ(0, hlock_unlock(fd[i], "t4"));
	}
	ASSERT_POOL(fd[0], RD, 0, 1, 1, 0);
}

/* The write pool is independent of the read pool. */
TEST_F_TIMEOUT(tk, write_pool_independent, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, set_pool(RD, 1));
	ASSERT_EQ(0, set_pool(WR, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t5/r", S, 0, -1));
	/* X on a path (IX on the root) takes a write ticket. */
	ASSERT_EQ(0, hlock_lock(fd[1], "t5/w", X, 0, -1));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	ASSERT_POOL(fd[0], WR, 1, 0, 1, 0);
	/* Both pools are full: IX, SIX and X wait for writers, IS for readers. */
	ASSERT_EQ(-EAGAIN, hlock_lock(fd[2], "t5/x", IX, 0, 0));
	ASSERT_EQ(-EAGAIN, hlock_lock(fd[2], "", SIX, 0, 0));
	ASSERT_EQ(-EAGAIN, hlock_lock(fd[2], "t5/y", IS, 0, 0));
	/* A reader leaving lets a reader in, not a writer. */
	ASSERT_EQ(0, hlock_unlock(fd[0], "t5/r"));
	ASSERT_EQ(-EAGAIN, hlock_lock(fd[2], "t5/x", IX, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[2], "t5/y", IS, 0, 0));
	ASSERT_EQ(0, hlock_unlock(fd[1], "t5/w"));
	ASSERT_EQ(0, hlock_lock(fd[3], "t5/x", IX, 0, 0));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	ASSERT_POOL(fd[0], WR, 1, 0, 1, 0);

	/* An unlimited write pool takes no tickets and counts none. */
	ASSERT_EQ(0, set_pool(WR, 0));
	ASSERT_EQ(0, hlock_lock(fd[4], "t5/z", X, 0, 0));
	ASSERT_POOL(fd[0], WR, 1, 0, 0, 0);
	ASSERT_EQ(0, hlock_unlock(fd[3], "t5/x"));
	ASSERT_POOL(fd[0], WR, 0, 0, 0, 0);
}

/*
 * Lowering a pool below what is out revokes nothing; raising it, or making
 * it unlimited, lets its waiters in.
 */
TEST_F_TIMEOUT(tk, lower_then_raise, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, set_pool(RD, 3));
	ASSERT_EQ(0, hlock_lock(fd[0], "t6", S, 0, -1));
	ASSERT_EQ(0, hlock_lock(fd[1], "t6", S, 0, -1));
	ASSERT_EQ(0, hlock_lock(fd[2], "t6", S, 0, -1));
	ASSERT_EQ(0, set_pool(RD, 1));
	ASSERT_POOL(fd[0], RD, 3, 0, 1, 0);
	ASSERT_EQ(S, hlock_held(fd[2], "t6"));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[3], "t6", S, ASYNC, 0));
	ASSERT_EQ(0, hlock_unlock(fd[0], "t6"));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[3], 0));
	ASSERT_EQ(0, hlock_unlock(fd[1], "t6"));
	ASSERT_EQ(-EAGAIN, hlock_wait(fd[3], 0));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 1);
	ASSERT_EQ(0, hlock_unlock(fd[2], "t6"));
	ASSERT_EQ(0, hlock_wait(fd[3], SETTLE_NS));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);

	/* Two more wait; raising the pool by two lets both in. */
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[4], "t6", S, ASYNC, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[5], "t6", S, ASYNC, 0));
	ASSERT_EQ(0, await_waiting(fd[0], RD, 2));
	ASSERT_EQ(0, set_pool(RD, 3));
	ASSERT_EQ(0, hlock_wait(fd[4], SETTLE_NS));
	ASSERT_EQ(0, hlock_wait(fd[5], SETTLE_NS));
	ASSERT_POOL(fd[0], RD, 3, 0, 3, 0);

	/* One more waits; making the pool unlimited lets it in. */
	ASSERT_EQ(0, hlock_unlock(fd[5], "t6"));
	ASSERT_EQ(0, set_pool(RD, 2));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[5], "t6", S, ASYNC, 0));
	ASSERT_EQ(0, await_waiting(fd[0], RD, 1));
	ASSERT_EQ(0, set_pool(RD, 0));
	ASSERT_EQ(0, hlock_wait(fd[5], SETTLE_NS));
	/* Its ticket is counted, and comes back as the others' do. */
	ASSERT_POOL(fd[0], RD, 3, 0, 0, 0);
	ASSERT_EQ(0, hlock_unlock(fd[3], "t6"));
	ASSERT_EQ(0, hlock_unlock(fd[4], "t6"));
	ASSERT_EQ(0, hlock_unlock(fd[5], "t6"));
	ASSERT_POOL(fd[0], RD, 0, 0, 0, 0);

	/* Bad sizes are refused. */
	EXPECT_EQ(-EINVAL, set_pool(RD, -1U));
	EXPECT_EQ(-EINVAL, write_file_str(pool_param[RD], "x", 0));
	EXPECT_EQ(-EINVAL, write_file_str(pool_param[WR], "-1", 0));
}

/* Both scopes of the statistics. */
TEST_F_TIMEOUT(tk, stats_scopes, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, set_pool(RD, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t7", IS, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "t7", S, ASYNC, 0));
	ASSERT_EQ(0, set_pool(WR, 2));
	ASSERT_EQ(0, hlock_lock(fd[2], "t7/w", IX, 0, -1));
	ASSERT_POOL(fd[3], RD, 1, 0, 1, 1);
	ASSERT_POOL(fd[3], WR, 1, 1, 2, 0);

	/* Its own ticket or wait (0 or 1) and the pool's size and room. */
	ASSERT_MINE(fd[0], RD, 1, 0, 1, 0);
	ASSERT_MINE(fd[1], RD, 0, 0, 1, 1);
	ASSERT_MINE(fd[1], WR, 0, 1, 2, 0);
	ASSERT_MINE(fd[2], WR, 1, 1, 2, 0);
	ASSERT_MINE(fd[3], WR, 0, 1, 2, 0);
	ASSERT_MINE(fd[3], RD, 0, 0, 1, 0);
}

/*
 * A locker that holds something takes no second ticket, nor swaps its read
 * ticket for a write one when it writes.
 */
TEST_F_TIMEOUT(tk, one_ticket_per_locker, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, set_pool(RD, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t8/a", S, 0, -1));
	ASSERT_EQ(0, set_pool(WR, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t8/b", IS, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[0], "", IS, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[0], "t8/a", S, 0, 0));
	/* The write pool is full, yet the reader may write on its ticket. */
	ASSERT_EQ(0, hlock_lock(fd[1], "t8/w", X, 0, -1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t8/c", X, 0, 0));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	ASSERT_POOL(fd[0], WR, 1, 0, 1, 0);
	/* It keeps it until it holds nothing. */
	ASSERT_EQ(1, hlock_unlock(fd[0], "t8/a"));
	ASSERT_EQ(0, hlock_unlock(fd[0], "t8/a"));
	ASSERT_EQ(0, hlock_unlock(fd[0], "t8/b"));
	ASSERT_EQ(0, hlock_unlock(fd[0], "t8/c"));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	ASSERT_EQ(0, hlock_unlock(fd[0], ""));
	ASSERT_POOL(fd[0], RD, 0, 1, 1, 0);
	/* The other writer keeps its ticket. */
	ASSERT_EQ(X, hlock_held(fd[1], "t8/w"));
	ASSERT_MINE(fd[1], WR, 1, 0, 1, 0);
}

/*
 * Close returns a ticket, handing it to the next waiter, and withdraws a
 * ticket wait.
 */
TEST_F_TIMEOUT(tk, close_returns, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, set_pool(WR, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t9", X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "t9", IX, ASYNC, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[2], "t9/a", X, ASYNC, 0));
	ASSERT_EQ(0, await_waiting(fd[3], WR, 2));
	/* A waiter closed leaves the queue. */
	ASSERT_EQ(0, close(fd[1]));
	fd[1] = -1;
	ASSERT_POOL(fd[3], WR, 1, 0, 1, 1);
	/* A holder closed hands its ticket on. */
	ASSERT_EQ(0, close(fd[0]));
	fd[0] = -1;
	ASSERT_EQ(0, hlock_wait(fd[2], SETTLE_NS));
	ASSERT_EQ(X, hlock_held(fd[2], "t9/a"));
	ASSERT_POOL(fd[3], WR, 1, 0, 1, 0);
	ASSERT_EQ(0, close(fd[2]));
	fd[2] = -1;
	ASSERT_POOL(fd[3], WR, 0, 1, 1, 0);
}

/*
 * A yield returns the ticket with everything else when its pool has a
 * waiter (though nobody waits on what the locker holds): the waiter gets
 * in, and the re-acquisition takes a ticket again, waiting for one as any
 * lock call does.
 */
TEST_F_TIMEOUT(tk, yield_returns_ticket, TEST_TMO)
{
	struct yielder y = { .ret = 1 };
	int *fd = self->fd;

	ASSERT_EQ(0, set_pool(RD, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "ty/a", S, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "ty/b", S, ASYNC, 0));
	ASSERT_EQ(0, await_waiting(fd[2], RD, 1));
	/* Only trying to get it back: the ticket went to the waiter. */
	ASSERT_EQ(-EAGAIN, hlock_yield(fd[0], 0));
	ASSERT_EQ(NL, hlock_held(fd[0], "ty/a"));
	ASSERT_MINE(fd[0], RD, 0, 0, 1, 0);
	ASSERT_EQ(0, hlock_wait(fd[1], SETTLE_NS));
	ASSERT_EQ(S, hlock_held(fd[1], "ty/b"));
	ASSERT_MINE(fd[1], RD, 1, 0, 1, 0);

	/* Waiting to get it back: in once the one let in leaves. */
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[0], "ty/a", S, ASYNC, 0));
	ASSERT_EQ(0, await_waiting(fd[2], RD, 1));
	y.fd = fd[1];
	ASSERT_EQ(0, pthread_create(&y.thread, NULL, yielder_run, &y));
	ASSERT_EQ(0, hlock_wait(fd[0], SETTLE_NS));
	ASSERT_EQ(S, hlock_held(fd[0], "ty/a"));
	/* The yielder now waits for the ticket fd[0] holds. */
	ASSERT_EQ(0, await_waiting(fd[2], RD, 1));
	ASSERT_EQ(1, y.ret);
	ASSERT_EQ(0, hlock_unlock(fd[0], "ty/a"));
	ASSERT_EQ(0, pthread_join(y.thread, NULL));
	ASSERT_EQ(0, y.ret);
	ASSERT_EQ(S, hlock_held(fd[1], "ty/b"));
	ASSERT_MINE(fd[1], RD, 1, 0, 1, 0);
	ASSERT_EQ(0, hlock_unlock(fd[1], "ty/b"));
}

/* A call that fails after its ticket came returns it. */
TEST_F_TIMEOUT(tk, failed_call_returns, TEST_TMO)
{
	int *fd = self->fd;

	ASSERT_EQ(0, set_pool(RD, 1));
	/* The writer takes no ticket: its pool is unlimited. */
	ASSERT_EQ(0, hlock_lock(fd[0], "t10/busy", X, 0, -1));
	ASSERT_EQ(-EAGAIN, hlock_lock(fd[1], "t10/busy", S, 0, 0));
	ASSERT_POOL(fd[0], RD, 0, 1, 1, 0);
	ASSERT_EQ(-ETIMEDOUT, hlock_lock(fd[1], "t10/busy", S, 0, SHORT_NS));
	ASSERT_POOL(fd[0], RD, 0, 1, 1, 0);
	/* Queued on the lock with its ticket, then cancelled by unlock. */
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "t10/busy", S, ASYNC, 0));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	ASSERT_EQ(0, hlock_unlock(fd[1], "t10/busy"));
	ASSERT_POOL(fd[0], RD, 0, 1, 1, 0);
	/* Queued for the ticket, then cancelled by unlock. */
	ASSERT_EQ(0, hlock_lock(fd[2], "t10/r", S, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "t10/busy", S, ASYNC, 0));
	ASSERT_EQ(0, await_waiting(fd[0], RD, 1));
	ASSERT_EQ(-EBUSY, hlock_unlock(fd[1], "t10"));
	ASSERT_EQ(0, hlock_unlock(fd[1], "t10/busy"));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	ASSERT_EQ(-ENOENT, hlock_wait(fd[1], 0));
	/* A failure keeps what the locker held, and so its ticket. */
	ASSERT_EQ(-EAGAIN, hlock_lock(fd[2], "t10/busy", S, 0, 0));
	ASSERT_EQ(S, hlock_held(fd[2], "t10/r"));
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);
	ASSERT_EQ(0, hlock_unlock(fd[2], "t10/r"));
	ASSERT_POOL(fd[0], RD, 0, 1, 1, 0);
}

/* Submit a ring lock of @path in S on @fd, tagged @data: 0 or -errno. */
static int ring_lock(struct io_uring *ring, int fd, const char *path,
		     int64_t timeout_ns, uint64_t data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -EBUSY;
	hlock_prep_lock(sqe, fd, path, S, 0, timeout_ns);
	io_uring_sqe_set_data64(sqe, data);
	return io_uring_submit(ring) == 1 ? 0 : -EIO;
}

/* A ring lock waits for its ticket without a thread; unlock cancels it. */
TEST_F_TIMEOUT(tk, ring, TEST_TMO)
{
	struct io_uring_cqe *cqe;
	struct hlock_info info;
	struct io_uring ring;
	int *fd = self->fd, ret;

	ASSERT_EQ(0, hlock_info(fd[0], &info));
	if (!(info.features & HLOCK_FEAT_URING))
		SKIP(return, "no HLOCK_FEAT_URING");
	ret = io_uring_queue_init(RING_ENTRIES, &ring, 0);
	if (ret == -ENOSYS || ret == -EPERM)
		SKIP(return, "no io_uring");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, set_pool(RD, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t11", S, 0, -1));

	ASSERT_EQ(0, ring_lock(&ring, fd[1], "t11/a", -1, 1));
	ASSERT_EQ(0, await_waiting(fd[0], RD, 1));
	io_uring_get_events(&ring);
	ASSERT_EQ(-EAGAIN, io_uring_peek_cqe(&ring, &cqe));
	/* The ticket comes back: the CQE comes. */
	ASSERT_EQ(0, hlock_unlock(fd[0], "t11"));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(1ULL, cqe->user_data);
	EXPECT_EQ(0, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	ASSERT_EQ(S, hlock_held(fd[1], "t11/a"));

	/* Another waits; an unlock of its path withdraws it. */
	ASSERT_EQ(0, ring_lock(&ring, fd[2], "t11/b", -1, 2));
	ASSERT_EQ(0, await_waiting(fd[0], RD, 1));
	ASSERT_EQ(0, hlock_unlock(fd[2], "t11/b"));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(2ULL, cqe->user_data);
	EXPECT_EQ(-ECANCELED, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	ASSERT_POOL(fd[0], RD, 1, 0, 1, 0);

	/* A ring try that would wait is -EAGAIN at once. */
	ASSERT_EQ(0, ring_lock(&ring, fd[2], "t11/b", 0, 3));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(-EAGAIN, cqe->res);
	io_uring_cqe_seen(&ring, cqe);

	/* One left waiting goes with the ring's teardown. */
	ASSERT_EQ(0, ring_lock(&ring, fd[2], "t11/b", -1, 4));
	ASSERT_EQ(0, await_waiting(fd[0], RD, 1));
	io_uring_queue_exit(&ring);
	ASSERT_EQ(0, await_waiting(fd[0], RD, 0));
	ASSERT_EQ(0, hlock_unlock(fd[1], "t11/a"));
	ASSERT_POOL(fd[0], RD, 0, 1, 1, 0);
}

/* Run lshlock (next to this program) with @args into @buf: its status. */
static int run_lshlock(const char *args, char *buf, size_t size)
{
	char cmd[256];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "./lshlock %s", args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(buf, 1, size - 1, p);
	buf[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* lshlock --stats shows the pools, with -J as MongoDB's serverStatus. */
TEST_F_TIMEOUT(tk, lshlock_stats, TEST_TMO)
{
	int *fd = self->fd;
	char buf[8192];

	if (access("./lshlock", X_OK))
		SKIP(return, "no ./lshlock");
	ASSERT_EQ(0, set_pool(RD, 2));
	ASSERT_EQ(0, set_pool(WR, 1));
	ASSERT_EQ(0, hlock_lock(fd[0], "t12", S, 0, -1));
	ASSERT_EQ(0, hlock_lock(fd[1], "t12w/w", X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[2], "t12w/v", X, ASYNC, 0));
	ASSERT_EQ(0, run_lshlock("--stats -J", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "\"concurrentTransactions\": {"
			       "\"read\": {\"out\": 1, \"available\": 1, "
			       "\"totalTickets\": 2}, "
			       "\"write\": {\"out\": 1, \"available\": 0, "
			       "\"totalTickets\": 1}}")) TH_LOG("%s", buf);
	if (!access("./json_check", X_OK)) {
		char cmd[64];
		FILE *p;

		snprintf(cmd, sizeof(cmd),
			 "./json_check --top-keys concurrentTransactions,hlock");
		p = popen(cmd, "w");
		ASSERT_NE(NULL, p);
		fputs(buf, p);
		ASSERT_EQ(0, pclose(p));
	}
	ASSERT_EQ(0, run_lshlock("--stats", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "tickets: read 1 out, 1 available, 2 total, 0 waiting; write 1 out, 0 available, 1 total, 1 waiting\n"))
		TH_LOG("%s", buf);
}

TEST_HARNESS_MAIN
