// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_stress: many processes, each with its own locker, hammer a small
 * tree of resources with random modes, timeouts, async requests,
 * conversions, downgrades and unlocks, and check:
 *
 *  - mutual exclusion: a table in shared memory counts, per resource and
 *    mode, the processes holding it.  A process adds itself right after
 *    a grant and removes itself right before any call that may lower what
 *    it holds (unlock, downgrade, close), so the table never claims more
 *    than the kernel grants; after each grant the process checks that no
 *    other process holds a mode incompatible with its own.  The recorded
 *    mode of a resource is what hlock_held() reports, for the target and
 *    for every ancestor (intents count);
 *  - the locker's own view: a granted lock covers the requested mode and
 *    the intents on the ancestors; a failed lock changes nothing; unlock
 *    returns the acquisitions left; a partial unlock does not weaken;
 *    downgrade follows the rules; nothing is left held at the end;
 *  - liveness: a request that waits forever must be granted, or refused
 *    with EDEADLK when its wait would close a cycle (a process that holds
 *    nothing can still close one, by jumping ahead of a waiter with
 *    HLOCK_F_FRONT); only a process that holds nothing waits forever;
 *    after the deadline no process starts anything new, and the parent
 *    fails the run if a child has not finished well after it;
 *  - deadlocks: any wait may be refused with EDEADLK, which must leave
 *    the locker as it was, as any failed call does.
 *
 * Prints kselftest TAP: one test, "hlock_stress".
 *
 *   hlock_stress [-p procs] [-t seconds] [-g grace-seconds] [-s seed] [-v]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "hlock.h"
#include "kselftest.h"

#define MS		1000000LL
#define SEC		(1000 * MS)
#define MAXPROCS	64
#define NRES		10
#define MAX_ACQ		5	/* acquisitions per round at most */

static const char *const res_path[NRES] = {
	"", "a", "b", "a/x", "a/y", "b/x", "a/x/1", "a/y/2", "b/x/3", "b/z",
};
static const int res_parent[NRES] = { -1, 0, 0, 1, 1, 2, 3, 4, 5, 2 };

/* ------------------------------------------------------------------ */
/* The mode algebra */

static bool compatible(int a, int b)
{
	static const unsigned char ok[HLOCK_NR_MODES] = {
		[HLOCK_NL]  = 0x3f,
		[HLOCK_IS]  = 1 << HLOCK_NL | 1 << HLOCK_IS | 1 << HLOCK_IX |
			      1 << HLOCK_S | 1 << HLOCK_SIX,
		[HLOCK_IX]  = 1 << HLOCK_NL | 1 << HLOCK_IS | 1 << HLOCK_IX,
		[HLOCK_S]   = 1 << HLOCK_NL | 1 << HLOCK_IS | 1 << HLOCK_S,
		[HLOCK_SIX] = 1 << HLOCK_NL | 1 << HLOCK_IS,
		[HLOCK_X]   = 1 << HLOCK_NL,
	};

	return ok[a] & (1 << b);
}

/* sup in the lattice IS < IX < SIX < X, IS < S < SIX. */
static int sup(int a, int b)
{
	if (a == b || b == HLOCK_NL)
		return a;
	if (a == HLOCK_NL)
		return b;
	if (a == HLOCK_X || b == HLOCK_X)
		return HLOCK_X;
	if (a == HLOCK_SIX || b == HLOCK_SIX)
		return HLOCK_SIX;
	if (a == HLOCK_IS)
		return b;
	if (b == HLOCK_IS)
		return a;
	return HLOCK_SIX;	/* IX and S */
}

static bool covers(int h, int m)
{
	return sup(h, m) == h;
}

/* The intent a mode needs on the ancestors. */
static int intent(int m)
{
	switch (m) {
	case HLOCK_IS: case HLOCK_S:
		return HLOCK_IS;
	case HLOCK_IX: case HLOCK_SIX: case HLOCK_X:
		return HLOCK_IX;
	default:
		return HLOCK_NL;
	}
}

static bool is_ancestor(int anc, int r)
{
	for (r = res_parent[r]; r >= 0; r = res_parent[r])
		if (r == anc)
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* Shared state */

struct stats {
	unsigned long ops, grants, try_fail, timeouts, async_queued;
	unsigned long forever, recursions, conversions, conv_fail;
	unsigned long downgrades, downgrade_einval, unlocks, reopens;
	unsigned long deadlocks;
	long long max_forever_ns;
};

struct shared {
	int cnt[NRES][HLOCK_NR_MODES];		/* holders per mode */
	unsigned char who[MAXPROCS][NRES];	/* recorded mode per process */
	struct stats st[MAXPROCS];
	char state[MAXPROCS][160];		/* what each child is doing */
	char why[MAXPROCS][512];		/* a child's failure */
	int first_failure;			/* 1 + index of the first */
	int finished[MAXPROCS];
};

static struct shared *sh;
static int nprocs = 8;
static int duration = 10;
static int grace = 60;
static bool verbose;

static int pollin_wait(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* One child */

struct child {
	int idx;
	int fd;
	uint64_t rng;
	int64_t deadline;
	int acq[NRES];		/* acquisitions made on each path */
	int rec[NRES];		/* the mode recorded in the table */
	int hist[NRES];		/* sup of the modes held while acq > 0 */
	struct stats *st;
};

static uint64_t rnd(struct child *c)
{
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 0x2545F4914F6CDD1DULL;
}

static unsigned int pick(struct child *c, unsigned int n)
{
	return (unsigned int)(rnd(c) >> 33) % n;
}

static __attribute__((format(printf, 2, 3), noreturn))
void fail(struct child *c, const char *fmt, ...)
{
	int none = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sh->why[c->idx], sizeof(sh->why[c->idx]), fmt, ap);
	va_end(ap);
	__atomic_compare_exchange_n(&sh->first_failure, &none, c->idx + 1,
				    false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	fprintf(stderr, "# child %d: %s\n", c->idx, sh->why[c->idx]);
	_exit(1);
}

static __attribute__((format(printf, 2, 3)))
void set_state(struct child *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sh->state[c->idx], sizeof(sh->state[c->idx]), fmt, ap);
	va_end(ap);
}

static int nacq(struct child *c)
{
	int r, n = 0;

	for (r = 0; r < NRES; r++)
		n += c->acq[r];
	return n;
}

static void record(struct child *c, int r, int mode)
{
	if (c->rec[r] == mode)
		return;
	if (c->rec[r])
		__atomic_fetch_sub(&sh->cnt[r][c->rec[r]], 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->who[c->idx][r], (unsigned char)mode,
			 __ATOMIC_SEQ_CST);
	if (mode)
		__atomic_fetch_add(&sh->cnt[r][mode], 1, __ATOMIC_SEQ_CST);
	c->rec[r] = mode;
}

/* Before a call that may lower modes on @r and its ancestors. */
static void unrecord_chain(struct child *c, int r)
{
	for (; r >= 0; r = res_parent[r])
		record(c, r, HLOCK_NL);
}

static void unrecord_all(struct child *c)
{
	int r;

	for (r = 0; r < NRES; r++)
		record(c, r, HLOCK_NL);
}

/* The intents held descendants of @r need: by their held modes. */
static int need_by_held(struct child *c, int r)
{
	int d, need = HLOCK_NL;

	for (d = 0; d < NRES; d++)
		if (res_parent[d] == r)
			need = sup(need, intent(c->rec[d]));
	return need;
}

/* ... by the modes of the locks made on them (a lower bound) ... */
static int need_by_locks(struct child *c, int r)
{
	int d, need = HLOCK_NL;

	for (d = 0; d < NRES; d++)
		if (c->acq[d] && is_ancestor(r, d))
			need = sup(need, intent(c->rec[d]));
	return need;
}

/*
 * ... and an upper bound: the held modes of the children, and the
 * strongest modes the locks below ever had (a downgrade below may or
 * may not lower the intents they took).
 */
static int need_upper(struct child *c, int r)
{
	int d, need = need_by_held(c, r);

	for (d = 0; d < NRES; d++)
		if (c->acq[d] && is_ancestor(r, d))
			need = sup(need, intent(c->hist[d]));
	return need;
}

/*
 * Bring the table up to what the kernel says, then check the locker's
 * hierarchy and mutual exclusion.  Modes may only have gone up since the
 * last sync, except where unrecord_chain() cleared them.
 */
static void sync_check(struct child *c, const char *after)
{
	int held[NRES];
	int r, m, q;

	for (r = 0; r < NRES; r++) {
		held[r] = hlock_held(c->fd, res_path[r]);
		if (held[r] < 0 || held[r] >= HLOCK_NR_MODES)
			fail(c, "after %s: hlock_held(\"%s\") = %d", after,
			     res_path[r], held[r]);
		if (!covers(held[r], c->rec[r]))
			fail(c, "after %s: \"%s\" went from %s to %s by itself",
			     after, res_path[r], hlock_mode_name(c->rec[r]),
			     hlock_mode_name(held[r]));
	}
	for (r = 0; r < NRES; r++)
		record(c, r, held[r]);

	for (r = 0; r < NRES; r++) {
		int p = res_parent[r];

		if (p >= 0 && !covers(c->rec[p], intent(c->rec[r])))
			fail(c, "after %s: holds %s on \"%s\" but %s on its parent \"%s\"",
			     after, hlock_mode_name(c->rec[r]), res_path[r],
			     hlock_mode_name(c->rec[p]), res_path[p]);
		if (c->rec[r] && !c->acq[r] && need_by_locks(c, r) == HLOCK_NL)
			fail(c, "after %s: holds %s on \"%s\", locked neither there nor below",
			     after, hlock_mode_name(c->rec[r]), res_path[r]);
		if (c->acq[r] && !c->rec[r])
			fail(c, "after %s: \"%s\" locked %d times but not held",
			     after, res_path[r], c->acq[r]);
	}

	for (r = 0; r < NRES; r++) {
		int mine = c->rec[r];

		if (!mine)
			continue;
		for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++) {
			int n = __atomic_load_n(&sh->cnt[r][m], __ATOMIC_SEQ_CST);

			if (m == mine)
				n--;
			if (n <= 0 || compatible(m, mine))
				continue;
			for (q = 0; q < nprocs; q++)
				if (q != c->idx &&
				    __atomic_load_n(&sh->who[q][r], __ATOMIC_SEQ_CST) == m)
					break;
			fail(c, "after %s: holds %s on \"%s\" while process %d holds %s there",
			     after, hlock_mode_name(mine), res_path[r],
			     q < nprocs ? q : -1, hlock_mode_name(m));
		}
	}
}

static void reopen(struct child *c)
{
	unrecord_all(c);
	close(c->fd);
	memset(c->acq, 0, sizeof(c->acq));
	memset(c->hist, 0, sizeof(c->hist));
	c->fd = hlock_open();
	if (c->fd < 0)
		fail(c, "hlock_open: %s", strerror(-c->fd));
	c->st->reopens++;
	sync_check(c, "reopen");
}

static int pick_res(struct child *c)
{
	/* The root rarely: it serialises everything. */
	if (pick(c, 20) == 0)
		return 0;
	return 1 + (int)pick(c, NRES - 1);
}

static int pick_mode(struct child *c, int r)
{
	if (r == 0) {
		/* S, SIX or X on the root only now and then. */
		if (pick(c, 10))
			return pick(c, 2) ? HLOCK_IS : HLOCK_IX;
	}
	return 1 + (int)pick(c, 5);
}

static unsigned int pick_flags(struct child *c)
{
	unsigned int f = 0;

	if (pick(c, 10) == 0)
		f |= HLOCK_F_FRONT;
	if (pick(c, 10) == 0)
		f |= HLOCK_F_COMPAT_FIRST;
	return f;
}

enum how { H_FOREVER, H_TRY, H_TIMED, H_ASYNC };

static const char *const how_name[] = { "forever", "try", "timed", "async" };

/*
 * Lock @r in @mode.  @how says how to wait; a process that holds
 * anything never waits forever.
 */
static void do_lock(struct child *c, int r, int mode, enum how how)
{
	const char *path = res_path[r];
	bool holding = nacq(c) > 0;
	bool recursive = c->acq[r] && covers(c->rec[r], mode);
	bool conversion = c->acq[r] && !recursive;
	unsigned int flags = pick_flags(c);
	int before[NRES];
	int64_t timeout = 0, t0;
	char what[128];
	int ret;

	if (holding && how == H_FOREVER)
		how = H_TIMED;
	if (how == H_TIMED)
		timeout = (int64_t)(1 + pick(c, 20)) * MS;
	else if (how == H_FOREVER)
		timeout = -1;
	if (how == H_ASYNC)
		flags |= HLOCK_F_ASYNC;

	snprintf(what, sizeof(what), "lock \"%s\" %s flags %#x %s", path,
		 hlock_mode_name(mode), flags, how_name[how]);
	set_state(c, "%s", what);
	memcpy(before, c->rec, sizeof(before));

	t0 = now_ns();
	ret = hlock_lock(c->fd, path, mode, flags, timeout);
	if (ret == -EINPROGRESS && how == H_ASYNC) {
		c->st->async_queued++;
		if (recursive)
			fail(c, "%s: recursive request queued", what);
		if (pick(c, 2)) {
			if (pollin_wait(c->fd, (int)pick(c, 5)) < 0)
				fail(c, "%s: poll: %s", what, strerror(errno));
		}
		if (!holding) {
			/* Holds nothing: may wait forever. */
			set_state(c, "%s: hlock_wait forever", what);
			t0 = now_ns();
			ret = hlock_wait(c->fd, -1);
			if (ret && ret != -EDEADLK)
				fail(c, "%s: hlock_wait(-1) = %d", what, ret);
			c->st->forever++;
		} else {
			int tries = 1 + (int)pick(c, 3);

			do {
				ret = hlock_wait(c->fd, (int64_t)pick(c, 10) * MS);
			} while ((ret == -ETIMEDOUT || ret == -EAGAIN) && --tries);
			if (ret == -ETIMEDOUT || ret == -EAGAIN) {
				/* Give up: close the locker, cancelling it. */
				set_state(c, "%s: abandon", what);
				reopen(c);
				return;
			}
			if (ret && ret != -EDEADLK)
				fail(c, "%s: hlock_wait = %d", what, ret);
		}
	}

	switch (how) {
	case H_FOREVER:
		if (ret && ret != -EDEADLK)
			fail(c, "%s: = %d (%s)", what, ret, strerror(-ret));
		break;
	case H_TRY:
		if (ret && ret != -EAGAIN)
			fail(c, "%s: = %d (%s)", what, ret, strerror(-ret));
		break;
	case H_TIMED:
		if (ret && ret != -ETIMEDOUT && ret != -EDEADLK)
			fail(c, "%s: = %d (%s)", what, ret, strerror(-ret));
		break;
	case H_ASYNC:
		if (ret && ret != -EDEADLK)
			fail(c, "%s: = %d (%s)", what, ret, strerror(-ret));
		break;
	}
	if (recursive && ret)
		fail(c, "%s: recursive request (holding %s) = %d", what,
		     hlock_mode_name(c->rec[r]), ret);

	if (ret) {
		if (ret == -EAGAIN)
			c->st->try_fail++;
		else if (ret == -EDEADLK)
			c->st->deadlocks++;
		else
			c->st->timeouts++;
		if (conversion)
			c->st->conv_fail++;
		sync_check(c, what);
		for (int i = 0; i < NRES; i++)
			if (c->rec[i] != before[i])
				fail(c, "%s: failed (%d) but \"%s\" went from %s to %s",
				     what, ret, res_path[i],
				     hlock_mode_name(before[i]),
				     hlock_mode_name(c->rec[i]));
		return;
	}

	if (timeout < 0 || (how == H_ASYNC && !holding)) {
		long long dt = now_ns() - t0;

		if (dt > c->st->max_forever_ns)
			c->st->max_forever_ns = dt;
		if (how == H_FOREVER)
			c->st->forever++;
	}
	c->acq[r]++;
	c->st->grants++;
	if (recursive)
		c->st->recursions++;
	if (conversion)
		c->st->conversions++;
	sync_check(c, what);
	c->hist[r] = sup(c->hist[r], c->rec[r]);
	if (!covers(c->rec[r], mode))
		fail(c, "%s: granted but holds %s", what,
		     hlock_mode_name(c->rec[r]));
	if (recursive && c->rec[r] != before[r])
		fail(c, "%s: recursive request changed %s to %s", what,
		     hlock_mode_name(before[r]), hlock_mode_name(c->rec[r]));
	for (int p = res_parent[r]; p >= 0; p = res_parent[p])
		if (!covers(c->rec[p], intent(mode)))
			fail(c, "%s: granted but holds %s on ancestor \"%s\"",
			     what, hlock_mode_name(c->rec[p]), res_path[p]);
}

static void do_unlock(struct child *c, int r)
{
	const char *path = res_path[r];
	int before = c->rec[r];
	char what[96];
	int ret;

	snprintf(what, sizeof(what), "unlock \"%s\" (%s, %d times)", path,
		 hlock_mode_name(before), c->acq[r]);
	set_state(c, "%s", what);
	unrecord_chain(c, r);
	ret = hlock_unlock(c->fd, path);
	if (ret != c->acq[r] - 1)
		fail(c, "%s: = %d, expected %d", what, ret, c->acq[r] - 1);
	c->acq[r]--;
	if (!c->acq[r])
		c->hist[r] = HLOCK_NL;
	c->st->unlocks++;
	sync_check(c, what);
	/* rule: a partial unlock never weakens the mode. */
	if (c->acq[r] && c->rec[r] != before)
		fail(c, "%s: partial unlock left %s", what,
		     hlock_mode_name(c->rec[r]));
	/*
	 * Fully unlocked there: with nothing locked below, nothing is held
	 * (sync_check() checks that).  With locks below, the request on r
	 * lives on for their intents and, as "a partial unlock never
	 * weakens the mode", may keep its mode (MongoDB does the same).
	 */
}

static void do_downgrade(struct child *c, int r)
{
	const char *path = res_path[r];
	int h = c->rec[r];
	int m = 1 + (int)pick(c, 5);
	int loose = need_by_locks(c, r), strict = need_upper(c, r);
	bool may_ok, may_einval;
	char what[128];
	int ret;

	/* Mostly modes that h covers. */
	if (pick(c, 5)) {
		while (!covers(h, m))
			m = 1 + (int)pick(c, 5);
	}
	/*
	 * rule: not covered (sup(H, mode) != H) or below what held
	 * descendants need is -EINVAL.  What they need is at least the
	 * intents of the locks below and at most the intents of the modes
	 * held on the children: accept either answer in between.
	 */
	may_ok = covers(h, m) && covers(m, loose);
	may_einval = !covers(h, m) || !covers(m, strict);

	snprintf(what, sizeof(what), "downgrade \"%s\" %s -> %s (below: %s..%s)",
		 path, hlock_mode_name(h), hlock_mode_name(m),
		 hlock_mode_name(loose), hlock_mode_name(strict));
	set_state(c, "%s", what);
	unrecord_chain(c, r);
	ret = hlock_downgrade(c->fd, path, m);
	if (!(ret == 0 && may_ok) && !(ret == -EINVAL && may_einval))
		fail(c, "%s: = %d", what, ret);
	if (ret)
		c->st->downgrade_einval++;
	else
		c->st->downgrades++;
	sync_check(c, what);
	/* Exactly m, unless the intents below are in doubt. */
	if (ret == 0 && (!covers(c->rec[r], m) || !covers(h, c->rec[r]) ||
			 (covers(m, strict) && c->rec[r] != m)))
		fail(c, "%s: done but holds %s", what, hlock_mode_name(c->rec[r]));
	if (ret && c->rec[r] != h)
		fail(c, "%s: refused but holds %s", what, hlock_mode_name(c->rec[r]));
}

static void release_all(struct child *c)
{
	int r;

	while (nacq(c)) {
		do
			r = (int)pick(c, NRES);
		while (!c->acq[r]);
		do_unlock(c, r);
	}
	for (r = 0; r < NRES; r++)
		if (c->rec[r])
			fail(c, "released everything but holds %s on \"%s\"",
			     hlock_mode_name(c->rec[r]), res_path[r]);
}

static int held_res(struct child *c)
{
	int r;

	do
		r = (int)pick(c, NRES);
	while (!c->acq[r]);
	return r;
}

static void one_round(struct child *c)
{
	int r, steps = 1 + (int)pick(c, MAX_ACQ + 2);

	/* The first lock of a round: the locker holds nothing. */
	r = pick_res(c);
	do_lock(c, r, pick_mode(c, r), (enum how)pick(c, 4));
	c->st->ops++;

	while (steps-- > 0 && now_ns() < c->deadline) {
		unsigned int op = pick(c, 100);

		c->st->ops++;
		if (!nacq(c)) {
			r = pick_res(c);
			do_lock(c, r, pick_mode(c, r), (enum how)pick(c, 4));
		} else if (op < 35 && nacq(c) < MAX_ACQ) {
			r = pick_res(c);
			do_lock(c, r, pick_mode(c, r), (enum how)(1 + pick(c, 3)));
		} else if (op < 50) {
			/* Recursion or conversion of a held path. */
			r = held_res(c);
			do_lock(c, r, 1 + (int)pick(c, 5),
				(enum how)(1 + pick(c, 3)));
		} else if (op < 62) {
			do_downgrade(c, held_res(c));
		} else if (op < 80) {
			do_unlock(c, held_res(c));
		} else if (op < 98) {
			set_state(c, "holding");
			usleep(pick(c, 2000));
		} else {
			set_state(c, "reopen while holding");
			reopen(c);
		}
	}
	release_all(c);
}

static void child_main(int idx, uint64_t seed, int64_t deadline)
{
	struct child c;

	memset(&c, 0, sizeof(c));
	c.idx = idx;
	c.rng = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)idx + 1;
	c.deadline = deadline;
	c.st = &sh->st[idx];
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	c.fd = hlock_open();
	if (c.fd < 0)
		fail(&c, "hlock_open: %s", strerror(-c.fd));

	while (now_ns() < deadline)
		one_round(&c);

	/* Drain: nothing new after the deadline. */
	set_state(&c, "draining");
	release_all(&c);
	sync_check(&c, "the end");
	close(c.fd);
	set_state(&c, "done");
	sh->finished[idx] = 1;
	_exit(0);
}

/* ------------------------------------------------------------------ */
/* The parent */

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-p procs] [-t seconds] [-g grace-seconds] [-s seed] [-v]\n",
		argv0);
	exit(KSFT_FAIL);
}

static void summary(void)
{
	struct stats t;
	int i;

	memset(&t, 0, sizeof(t));
	for (i = 0; i < nprocs; i++) {
		struct stats *s = &sh->st[i];

		t.ops += s->ops;
		t.grants += s->grants;
		t.try_fail += s->try_fail;
		t.timeouts += s->timeouts;
		t.async_queued += s->async_queued;
		t.forever += s->forever;
		t.recursions += s->recursions;
		t.conversions += s->conversions;
		t.conv_fail += s->conv_fail;
		t.downgrades += s->downgrades;
		t.downgrade_einval += s->downgrade_einval;
		t.unlocks += s->unlocks;
		t.reopens += s->reopens;
		t.deadlocks += s->deadlocks;
		if (s->max_forever_ns > t.max_forever_ns)
			t.max_forever_ns = s->max_forever_ns;
		if (verbose)
			ksft_print_msg("child %d: %lu ops, %lu grants, %lu unlocks\n",
				       i, s->ops, s->grants, s->unlocks);
	}
	ksft_print_msg("ops %lu: grants %lu (recursive %lu, conversions %lu), "
		       "try failures %lu, timeouts %lu, async queued %lu, "
		       "forever waits %lu (longest %lld ms)\n",
		       t.ops, t.grants, t.recursions, t.conversions,
		       t.try_fail, t.timeouts, t.async_queued, t.forever,
		       t.max_forever_ns / MS);
	ksft_print_msg("failed conversions %lu, downgrades %lu (refused %lu), "
		       "unlocks %lu, lockers reopened %lu, deadlocks refused %lu\n",
		       t.conv_fail, t.downgrades, t.downgrade_einval,
		       t.unlocks, t.reopens, t.deadlocks);
}

static void kill_all(pid_t *pids)
{
	int i;

	for (i = 0; i < nprocs; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	for (i = 0; i < nprocs; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
}

int main(int argc, char **argv)
{
	pid_t pids[MAXPROCS];
	uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
	int64_t deadline, hard;
	int opt, i, left, fd, ret, status, r, m;
	bool ok = true;

	while ((opt = getopt(argc, argv, "p:t:g:s:vh")) != -1) {
		switch (opt) {
		case 'p': nprocs = atoi(optarg); break;
		case 't': duration = atoi(optarg); break;
		case 'g': grace = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'v': verbose = true; break;
		default: usage(argv[0]);
		}
	}
	if (nprocs < 1 || nprocs > MAXPROCS || duration < 0 || grace < 1)
		usage(argv[0]);

	ksft_print_header();
	ksft_set_plan(1);
	if (access(HLOCK_DEVICE, F_OK)) {
		/* Like the harness: a skipped test is no failure (exit 0). */
		ksft_test_result_skip("hlock_stress: " HLOCK_DEVICE
				      " is absent (module not loaded)\n");
		ksft_finished();
	}

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		ksft_exit_fail_perror("mmap");
	memset(sh, 0, sizeof(*sh));

	ksft_print_msg("hlock_stress: %d processes, %d s, seed %llu\n",
		       nprocs, duration, (unsigned long long)seed);
	deadline = now_ns() + (int64_t)duration * SEC;
	hard = deadline + (int64_t)grace * SEC;
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < nprocs; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			ksft_perror("fork");
			nprocs = i;
			kill_all(pids);
			ksft_exit_fail_msg("fork failed\n");
		}
		if (pids[i] == 0)
			child_main(i, seed, deadline);
	}

	left = nprocs;
	while (left > 0) {
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid > 0) {
			for (i = 0; i < nprocs; i++)
				if (pids[i] == pid)
					break;
			if (i < nprocs) {
				pids[i] = 0;
				left--;
				if (!WIFEXITED(status) || WEXITSTATUS(status)) {
					ok = false;
					if (!sh->first_failure)
						ksft_print_msg("child %d died (status %#x) in: %s\n",
							       i, status, sh->state[i]);
				}
			}
			continue;
		}
		if (sh->first_failure) {
			ok = false;
			break;
		}
		if (now_ns() > hard) {
			ok = false;
			ksft_print_msg("children still running %d s after the deadline:\n",
				       grace);
			for (i = 0; i < nprocs; i++)
				if (pids[i] > 0)
					ksft_print_msg("  child %d: %s\n", i,
						       sh->state[i]);
			break;
		}
		usleep(20000);
	}
	kill_all(pids);

	if (sh->first_failure) {
		i = sh->first_failure - 1;
		ksft_print_msg("violation in child %d: %s\n", i, sh->why[i]);
	}
	summary();

	if (ok) {
		/* Every child finished and released everything. */
		for (r = 0; r < NRES; r++)
			for (m = 0; m < HLOCK_NR_MODES; m++)
				if (sh->cnt[r][m]) {
					ksft_print_msg("table: %d holders of %s on \"%s\" left\n",
						       sh->cnt[r][m],
						       hlock_mode_name(m),
						       res_path[r]);
					ok = false;
				}
		fd = hlock_open();
		ret = fd < 0 ? fd : hlock_lock(fd, "", HLOCK_X, 0, 0);
		if (ret) {
			ksft_print_msg("lock \"\" X after the run: %d (%s)\n",
				       ret, strerror(-ret));
			ok = false;
		}
		if (fd >= 0)
			close(fd);
	}

	if (ok)
		ksft_test_result_pass("hlock_stress\n");
	else
		ksft_test_result_fail("hlock_stress\n");
	ksft_exit(ok);
}
