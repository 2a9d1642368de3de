// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_chaos: processes killed with SIGKILL at random points, round after
 * round, and then nothing left in the module.
 *
 * Each round forks CHAOS_PROCS worker processes of three kinds: one actor
 * with two lockers of its own; two actor threads sharing a locker (and each
 * with one of its own); and pairs of processes sharing a locker the test
 * opened before forking them (and each with one of its own).  An actor
 * does random operations on a few overlapping paths, so that contention is
 * real: locks that wait forever, for a while or not at all, conversions
 * (the same path again in a stronger mode), recursion, HLOCK_F_ASYNC
 * requests left pending, collected by hlock_wait() or cancelled by
 * unlocking, downgrades, unlocks, and lockers closed and opened again.
 *
 * Before each call that may block and after each grant, an actor says
 * in shared memory what it is doing (holding, waiting, converting, async
 * pending), under a command name (PR_SET_NAME) that is a tag new for each
 * lock call: the kernel puts that name on every record of the locker in
 * the lock table.  The test then kills at two kinds of point:
 *
 *  - hunted: it looks for an actor in the state hit least often so far,
 *    checks in the lock table that the state is real (the tagged locker's
 *    request granted, waiting, or converting), kills its process, and
 *    counts the state as hit only if the actor had not moved on when it
 *    died (its word in shared memory is unchanged);
 *  - random: after a random delay, any worker; and at the end of each
 *    round, all the workers left, one by one at random moments.
 *
 * Killed workers are replaced until the round's kills are done.  After
 * every round, with all workers gone, debugfs' hlock/resources must show no
 * request and a fresh locker's lock table must be empty; every
 * CHAOS_RECLAIM_EVERY rounds and at the end, after debugfs' reclaim, no
 * resource and no ended lock space either.  The statistics have no gauge
 * of what is held or waited for now (all their figures are cumulative):
 * what is current is the lock table and debugfs; the statistics must only
 * have counted at least what the actors saw (timeouts, grants), a cancel
 * for each async request killed pending on a private locker, and some
 * interrupted waits.  At the end every state must have been hit at least
 * once: a run that never reached them has not tested them.  An actor that
 * sees a result the API does not allow for its call fails the test, and so
 * does one whose own locker, once granted, does not hold exactly what it
 * asked for.  kmemleak, on the debug kernel, is checked by the VM harness
 * after rmmod.
 *
 * HLOCK_CHAOS_ROUNDS sets the rounds (default CHAOS_ROUNDS);
 * HLOCK_CHAOS_SECONDS a time budget: once it is spent, the round that
 * runs is the last, if at least CHAOS_MIN_ROUNDS (or all) have run (a
 * busy host or a slow kernel runs fewer rounds, never too few to reach
 * every state); HLOCK_CHAOS_SEED the seed of the random choices
 * (default: the time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

/* The harness's macros trip -Wextra, as hlock_test.c explains. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

#define CHAOS_ROUNDS		120
#define CHAOS_MIN_ROUNDS	30
/* Workers alive at once, and actors (threads) per worker at most. */
#define CHAOS_PROCS		6
#define CHAOS_ACTORS		2
#define CHAOS_SLOTS		(CHAOS_PROCS * CHAOS_ACTORS)
/* Kills in a round before the round's end kills the rest. */
#define CHAOS_KILLS		12
/* One kill in this many is random rather than hunted. */
#define CHAOS_RANDOM_ONE_IN	3
#define CHAOS_HUNT_NS		(300 * MS)
#define CHAOS_HUNT_POLL_US	500
#define CHAOS_RANDOM_DELAY_US	20000
#define CHAOS_RECLAIM_EVERY	4
/* A worker the test lost track of dies of this. */
#define CHAOS_ALARM_S		120
#define CHAOS_TIMEOUT_S		1500
#define DEBUGFS_RECLAIM		"/sys/kernel/debug/hlock/reclaim"
#define DEBUGFS_LOCKS		"/sys/kernel/debug/hlock/locks"
#define SYSFS_STATS		"/sys/module/hlock/parameters/stats"

/* What an actor says it does. */
enum {
	ST_IDLE,
	ST_HOLDING,	/* just granted, holds the path */
	ST_WAITING,	/* in a lock call that may wait */
	ST_CONVERTING,	/* in a lock call on a held path, stronger mode */
	ST_ASYNC,	/* an HLOCK_F_ASYNC request queued, not collected */
	NR_ST,
};

static const char *const st_name[NR_ST] = {
	"idle", "holding", "waiting", "converting", "async pending",
};

/* What the actors did, counted in shared memory. */
enum {
	C_LOCKS, C_GRANTS, C_CONVERSIONS, C_RECURSIONS, C_ASYNC, C_COLLECTED,
	C_CANCELLED, C_TIMEOUTS, C_BUSY, C_DOWNGRADES, C_UNLOCKS, C_REOPENS,
	C_DEADLOCKS, NR_C,
};

static const char *const c_name[NR_C] = {
	"lock calls", "grants", "conversions", "recursions", "async queued",
	"async collected", "async cancelled (own locker)", "timeouts", "busy",
	"downgrades", "unlocks", "reopens", "deadlocks refused",
};

/*
 * An actor's word: its state, the path index of the call, whether the
 * locker is its own, and the tag its command name carries ("hc<tag>").
 * One atomic store publishes all of it.
 */
#define W_STATE(w)	((int)((w) & 0xff))
#define W_PATH(w)	((int)(((w) >> 8) & 0xff))
#define W_PRIV(w)	((int)(((w) >> 16) & 1))
#define W_TAG(w)	((uint32_t)((w) >> 32))

struct chaos_shared {
	atomic_uint tag;
	atomic_uint_least64_t word[CHAOS_SLOTS];
	atomic_long n[NR_C];
	atomic_int failed;
	char why[256];
};

static struct chaos_shared *sh;

static const char *const paths[] = {
	"", "db", "db/c1", "db/c2", "db/c1/o", "dbb", "dbb/c",
};

#define NR_PATHS	((int)ARRAY_SIZE(paths))

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The modes each mode covers, as a bit mask. */
static const unsigned char covered[HLOCK_NR_MODES] = {
	[NL]  = 1 << NL,
	[IS]  = 1 << NL | 1 << IS,
	[IX]  = 1 << NL | 1 << IS | 1 << IX,
	[S]   = 1 << NL | 1 << IS | 1 << S,
	[SIX] = 1 << NL | 1 << IS | 1 << IX | 1 << S | 1 << SIX,
	[X]   = 0x3f,
};

/* The weakest mode covering @a and @b: what locking @b over @a asks for. */
static int mode_sup(int a, int b)
{
	static const int order[] = { NL, IS, IX, S, SIX, X };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(order); i++)
		if ((covered[order[i]] & (1 << a | 1 << b)) == (1 << a | 1 << b))
			return order[i];
	return X;
}

/* ------------------------------------------------------------------ */
/* The actors */

struct actor {
	int slot;
	uint64_t s;
	int fd[2];
	bool priv[2];
	/* The path of the async request it queued on fd[k], or -1. */
	int pending[2];
	uint32_t pending_tag[2];
};

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	if (!atomic_exchange(&sh->failed, 1)) {
		va_start(ap, fmt);
		vsnprintf(sh->why, sizeof(sh->why), fmt, ap);
		va_end(ap);
	}
	_exit(3);
}

static void count(int c)
{
	atomic_fetch_add(&sh->n[c], 1);
}

static void say(struct actor *a, int st, int path, int k, uint32_t tag)
{
	atomic_store(&sh->word[a->slot], (uint64_t)st | (uint64_t)path << 8 |
		     (uint64_t)(k >= 0 && a->priv[k]) << 16 |
		     (uint64_t)tag << 32);
}

/* A new tag, put on this thread's command name for the next lock call. */
static uint32_t new_tag(void)
{
	uint32_t tag = atomic_fetch_add(&sh->tag, 1) + 1;
	char name[16];

	snprintf(name, sizeof(name), "hc%u", tag);
	prctl(PR_SET_NAME, name);
	return tag;
}

static void nap(struct actor *a, unsigned int max_us)
{
	usleep(rnd(&a->s) % max_us);
}

static int pick_path(struct actor *a)
{
	/* The root seldom: its S and X stop everybody. */
	return rnd(&a->s) % 20 ? 1 + rnd(&a->s) % (NR_PATHS - 1) : 0;
}

static int pick_mode(struct actor *a)
{
	static const int modes[] = { IS, IS, IX, IX, S, S, S, SIX, X, X, X };

	return modes[rnd(&a->s) % ARRAY_SIZE(modes)];
}

/* A path fd[k] holds in a mode below X, or -1 (a few tries). */
static int pick_held(struct actor *a, int k, bool below_x)
{
	int i, p, h;

	for (i = 0; i < 8; i++) {
		p = pick_path(a);
		h = hlock_held(a->fd[k], paths[p]);
		if (h > NL && (!below_x || h < X))
			return p;
	}
	return -1;
}

/*
 * A result a lock call with @flags and @tmo may have; anything else fails
 * the test.  EBUSY: a request in flight on the locker, ours or, on a
 * shared locker, a partner's.  EDEADLK: a call that may wait closed a
 * cycle of waits.
 */
static void check_lock(struct actor *a, int k, int p, int mode,
		       unsigned int flags, int64_t tmo, int ret)
{
	bool async = flags & ASYNC;

	if (ret == 0 || (ret == -EINPROGRESS && async) ||
	    (ret == -EAGAIN && !async && !tmo) ||
	    (ret == -ETIMEDOUT && !async && tmo > 0) ||
	    (ret == -EDEADLK && (async || tmo)))
		return;
	if (ret == -EBUSY && (!a->priv[k] || a->pending[k] >= 0)) {
		count(C_BUSY);
		return;
	}
	fail("lock %s %s (flags %#x, timeout %lld) on a %s locker: %s",
	     mname(mode), paths[p], flags, (long long)tmo,
	     a->priv[k] ? "private" : "shared", strerror(-ret));
}

/*
 * A lock call on fd[k]: @conv asks for a conversion of a held path.
 * Says what it may wait in first, and what it holds after.
 */
static void do_lock(struct actor *a, int k, bool conv)
{
	int fd = a->fd[k], p, held, mode, ret, r;
	unsigned int flags = 0;
	int64_t tmo;
	uint32_t tag;

	p = conv ? pick_held(a, k, true) : pick_path(a);
	if (p < 0)
		return;
	held = hlock_held(fd, paths[p]);
	if (held < 0)
		fail("held %s: %s", paths[p], strerror(-held));
	mode = pick_mode(a);
	if (held > NL && held < X && (conv || rnd(&a->s) % 3 == 0)) {
		while (mode_sup(held, mode) == held)
			mode = pick_mode(a);
	} else if (held > NL && rnd(&a->s) % 6 == 0) {
		mode = held;
	}
	/* Async 20 %, try 15 %, a timeout 40 %, forever 25 %. */
	r = rnd(&a->s) % 20;
	if (r < 4) {
		flags = ASYNC;
		tmo = 0;
	} else if (r < 7) {
		tmo = 0;
	} else if (r < 15) {
		tmo = (1 + rnd(&a->s) % 30) * MS;
	} else {
		tmo = -1;
	}
	tag = new_tag();
	say(a, mode_sup(held, mode) != held && held > NL ? ST_CONVERTING :
	    ST_WAITING, p, k, tag);
	count(C_LOCKS);
	ret = hlock_lock(fd, paths[p], mode, flags, tmo);
	check_lock(a, k, p, mode, flags, tmo, ret);
	if (ret == -EINPROGRESS) {
		count(C_ASYNC);
		a->pending[k] = p;
		a->pending_tag[k] = tag;
		say(a, ST_ASYNC, p, k, tag);
		/* Stay pending a while: a kill may find it. */
		nap(a, 10000);
		return;
	}
	say(a, ST_IDLE, p, k, tag);
	if (ret == -EAGAIN || ret == -ETIMEDOUT)
		count(C_TIMEOUTS);
	if (ret == -EDEADLK)
		count(C_DEADLOCKS);
	if (ret)
		return;
	count(C_GRANTS);
	if (held == mode)
		count(C_RECURSIONS);
	else if (held > NL && mode_sup(held, mode) != held)
		count(C_CONVERSIONS);
	/* A locker of our own: it holds exactly what was asked for. */
	if (a->priv[k] && hlock_held(fd, paths[p]) != mode_sup(held, mode))
		fail("lock %s over %s on %s granted, but %s held",
		     mname(mode), mname(held), paths[p],
		     mname(hlock_held(fd, paths[p])));
	say(a, ST_HOLDING, p, k, tag);
	if (rnd(&a->s) % 2)
		nap(a, 5000);
}

/* Collect, cancel or leave the async request pending on fd[k]. */
static void settle(struct actor *a, int k)
{
	int fd = a->fd[k], p = a->pending[k], ret;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int64_t tmo;

	say(a, ST_ASYNC, p, k, a->pending_tag[k]);
	switch (rnd(&a->s) % 4) {
	case 0:
		poll(&pfd, 1, rnd(&a->s) % 20);
		tmo = 0;
		break;
	case 1:
		tmo = rnd(&a->s) % 2 ? -1 : (int64_t)(1 + rnd(&a->s) % 20) * MS;
		break;
	case 2:
		say(a, ST_IDLE, p, k, 0);
		ret = hlock_unlock(fd, paths[p]);
		if (ret < 0 && a->priv[k])
			fail("unlock %s to cancel: %s", paths[p],
			     strerror(-ret));
		a->pending[k] = -1;
		if (a->priv[k])
			count(C_CANCELLED);
		return;
	default:
		return;
	}
	ret = hlock_wait(fd, tmo);
	if (ret == -EAGAIN || ret == -ETIMEDOUT)
		return;
	a->pending[k] = -1;
	/* A later level of the path closed a cycle: the call failed. */
	if (ret == -EDEADLK) {
		count(C_DEADLOCKS);
		say(a, ST_IDLE, p, k, 0);
		return;
	}
	if (!ret) {
		count(C_COLLECTED);
		say(a, ST_HOLDING, p, k, a->pending_tag[k]);
		nap(a, 5000);
		return;
	}
	/* Another actor of a shared locker cancelled or collected it. */
	if (a->priv[k] || (ret != -ENOENT && ret != -EBUSY))
		fail("wait for %s: %s", paths[p], strerror(-ret));
	say(a, ST_IDLE, p, k, 0);
}

static void do_unlock(struct actor *a, int k)
{
	int p = pick_held(a, k, false), ret;

	if (p < 0)
		return;
	say(a, ST_IDLE, p, k, 0);
	ret = hlock_unlock(a->fd[k], paths[p]);
	if (ret >= 0 && p == a->pending[k]) {
		/* Unlocking the target withdraws the request instead. */
		a->pending[k] = -1;
		if (a->priv[k])
			count(C_CANCELLED);
	} else if (ret >= 0) {
		count(C_UNLOCKS);
	}
	/* ENOENT: held only as an intent of a descendant. */
	else if (ret != -ENOENT &&
		 (ret != -EBUSY || (a->priv[k] && a->pending[k] < 0)))
		fail("unlock %s: %s", paths[p], strerror(-ret));
}

static void do_downgrade(struct actor *a, int k)
{
	int p = pick_held(a, k, false), held, mode, ret;

	if (p < 0)
		return;
	held = hlock_held(a->fd[k], paths[p]);
	if (held <= IS)
		return;
	do
		mode = IS + rnd(&a->s) % (held - IS);
	while (!(covered[held] & 1 << mode));
	say(a, ST_IDLE, p, k, 0);
	ret = hlock_downgrade(a->fd[k], paths[p], mode);
	if (!ret) {
		count(C_DOWNGRADES);
		if (a->priv[k] && hlock_held(a->fd[k], paths[p]) != mode)
			fail("downgrade %s to %s: %s held", paths[p],
			     mname(mode),
			     mname(hlock_held(a->fd[k], paths[p])));
		return;
	}
	/* EINVAL: a descendant needs more; ENOENT: a partner unlocked it. */
	if (ret != -EINVAL && (ret != -ENOENT || a->priv[k]) &&
	    (ret != -EBUSY || (a->priv[k] && a->pending[k] < 0)))
		fail("downgrade %s %s to %s: %s", paths[p], mname(held),
		     mname(mode), strerror(-ret));
}

static void __attribute__((noreturn)) actor_run(struct actor *a)
{
	int k;

	for (;;) {
		k = rnd(&a->s) % 2;
		/* A locker with a request in flight mostly answers EBUSY. */
		if (a->pending[k] >= 0 && rnd(&a->s) % 4) {
			settle(a, k);
			continue;
		}
		switch (rnd(&a->s) % 100) {
		case 0 ... 44:
			do_lock(a, k, false);
			break;
		case 45 ... 59:
			do_lock(a, k, true);
			break;
		case 60 ... 79:
			do_unlock(a, k);
			break;
		case 80 ... 89:
			do_downgrade(a, k);
			break;
		case 90 ... 92:
			if (!a->priv[k])
				break;
			say(a, ST_IDLE, 0, k, 0);
			close(a->fd[k]);
			a->fd[k] = hlock_open();
			if (a->fd[k] < 0)
				fail("open: %s", strerror(-a->fd[k]));
			a->pending[k] = -1;
			count(C_REOPENS);
			break;
		default:
			say(a, ST_IDLE, 0, -1, 0);
			nap(a, 3000);
			break;
		}
	}
}

static void *actor_thread(void *arg)
{
	actor_run(arg);
}

/* Kinds of worker. */
enum {
	K_SOLO,		/* one actor, two lockers of its own */
	K_THREADS,	/* two actor threads sharing a locker */
	K_PAIR,		/* one of two processes sharing a locker */
	NR_K,
};

static void actor_init(struct actor *a, int slot, uint64_t seed, int shared)
{
	int k;

	memset(a, 0, sizeof(*a));
	a->slot = slot;
	a->s = seed | 1;
	for (k = 0; k < 2; k++) {
		a->pending[k] = -1;
		a->priv[k] = !(k == 0 && shared >= 0);
		a->fd[k] = a->priv[k] ? hlock_open() : shared;
		if (a->fd[k] < 0)
			fail("open: %s", strerror(-a->fd[k]));
	}
}

/* A worker process: @shared is a locker shared with others, or -1. */
static void __attribute__((noreturn))
worker(pid_t parent, int idx, int kind, int shared, uint64_t seed)
{
	static struct actor actors[CHAOS_ACTORS];
	pthread_t th;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	alarm(CHAOS_ALARM_S);
	close_inherited(shared, -1);
	if (kind == K_THREADS) {
		shared = hlock_open();
		if (shared < 0)
			fail("open: %s", strerror(-shared));
		actor_init(&actors[1], idx * CHAOS_ACTORS + 1, rnd(&seed),
			   shared);
		if (pthread_create(&th, NULL, actor_thread, &actors[1]))
			fail("pthread_create failed");
	}
	actor_init(&actors[0], idx * CHAOS_ACTORS, rnd(&seed), shared);
	actor_run(&actors[0]);
}

/* ------------------------------------------------------------------ */
/* The killer */

struct proc {
	pid_t pid;
	int kind;
	int partner;	/* the process sharing its locker, or -1 */
};

struct chaos {
	struct __test_metadata *_metadata;
	uint64_t s;
	struct proc proc[CHAOS_PROCS];
	int probe;			/* a locker of our own, for the table */
	long kills, hunted, random, at_end, shared_kills, spawned[NR_K];
	long hit[NR_ST], async_private_hits;
	long random_in[NR_ST];
};

static void spawn(struct chaos *c, int i, int kind, int shared)
{
	struct __test_metadata *_metadata = c->_metadata;
	uint64_t seed = rnd(&c->s);
	pid_t parent = getpid();
	int j;

	for (j = 0; j < CHAOS_ACTORS; j++)
		atomic_store(&sh->word[i * CHAOS_ACTORS + j], 0);
	fflush(stdout);
	fflush(stderr);
	c->proc[i].pid = fork();
	ASSERT_LE(0, c->proc[i].pid);
	if (!c->proc[i].pid)
		worker(parent, i, kind, shared, seed);
	c->proc[i].kind = kind;
	c->proc[i].partner = -1;
	c->spawned[kind]++;
}

/* Fill the empty places: a pair where two are free, now and then. */
static void fill(struct chaos *c)
{
	struct __test_metadata *_metadata = c->_metadata;
	int i, j, fd;

	for (i = 0; i < CHAOS_PROCS; i++) {
		if (c->proc[i].pid)
			continue;
		for (j = i + 1; j < CHAOS_PROCS && c->proc[j].pid; j++)
			;
		if (j < CHAOS_PROCS && rnd(&c->s) % 2) {
			fd = hlock_open();
			ASSERT_LE(0, fd);
			spawn(c, i, K_PAIR, fd);
			spawn(c, j, K_PAIR, fd);
			close(fd);
			c->proc[i].partner = j;
			c->proc[j].partner = i;
		} else {
			spawn(c, i, rnd(&c->s) % 2 ? K_SOLO : K_THREADS, -1);
		}
	}
}

/* The actors' failure, if any, as the test's. */
static void check_actors(struct chaos *c)
{
	struct __test_metadata *_metadata = c->_metadata;

	ASSERT_EQ(0, atomic_load(&sh->failed)) {
		TH_LOG("an actor failed: %s", sh->why);
	}
}

/* SIGKILL worker @i and reap it: it must die of that kill. */
static void kill_proc(struct chaos *c, int i)
{
	struct __test_metadata *_metadata = c->_metadata;
	struct proc *pr = &c->proc[i];
	int status;

	if (pr->kind == K_THREADS || pr->partner >= 0)
		c->shared_kills++;
	kill(pr->pid, SIGKILL);
	/* Dead within a minute, or stuck: then it shows where. */
	status = wait_child_within(pr->pid, 60);
	c->kills++;
	if (pr->partner >= 0)
		c->proc[pr->partner].partner = -1;
	pr->pid = 0;
	pr->partner = -1;
	check_actors(c);
	ASSERT_TRUE(status >= 0 && WIFSIGNALED(status) &&
		    WTERMSIG(status) == SIGKILL) {
		TH_LOG("worker %d: status %#x", i, status);
	}
}

/*
 * What the lock table shows of the actor whose word is @w: the state it
 * says, if the records tagged with its name bear it out, else ST_IDLE.
 */
static int confirmed(uint64_t w, const void *table, int n)
{
	const struct hlock_lock_record *rec = table;
	bool granted = false, waiting = false, converting = false;
	char tag[16];
	int i;

	snprintf(tag, sizeof(tag), "hc%u", W_TAG(w));
	for (i = 0; i < n; i++, rec = hlock_record_next(rec)) {
		if (strcmp(rec->comm, tag))
			continue;
		if (rec->state == HLOCK_STATE_WAITING)
			waiting = true;
		else if (rec->state == HLOCK_STATE_CONVERTING)
			converting = true;
		else if (!strcmp(hlock_record_path(rec), paths[W_PATH(w)]))
			granted = true;
	}
	switch (W_STATE(w)) {
	case ST_HOLDING:
		return granted ? ST_HOLDING : ST_IDLE;
	case ST_WAITING:
	case ST_CONVERTING:
		/* A new request may convert an intent on an ancestor. */
		return converting ? ST_CONVERTING :
		       waiting ? ST_WAITING : ST_IDLE;
	case ST_ASYNC:
		return waiting || converting ? ST_ASYNC : ST_IDLE;
	}
	return ST_IDLE;
}

/* Kill a worker at a random moment, after a random delay. */
static void kill_random(struct chaos *c, unsigned int max_us)
{
	int i, j, start = rnd(&c->s) % CHAOS_PROCS;
	uint64_t w;

	usleep(rnd(&c->s) % max_us);
	for (i = 0; i < CHAOS_PROCS; i++) {
		int idx = (start + i) % CHAOS_PROCS;

		if (!c->proc[idx].pid)
			continue;
		for (j = 0; j < CHAOS_ACTORS; j++) {
			w = atomic_load(&sh->word[idx * CHAOS_ACTORS + j]);
			if (w)
				c->random_in[W_STATE(w)]++;
		}
		kill_proc(c, idx);
		return;
	}
}

/*
 * Kill an actor seen in state @want, found within CHAOS_HUNT_NS; count
 * the state as hit if the actor was still in it when it died.
 * Return: whether one was found.
 */
static bool hunt(struct chaos *c, int want)
{
	struct __test_metadata *_metadata = c->_metadata;
	int64_t end = now_ns() + CHAOS_HUNT_NS;
	const int start = rnd(&c->s) % CHAOS_SLOTS;
	void *table;
	uint64_t w;
	int n, i, k;

	do {
		check_actors(c);
		n = hlock_table_alloc(c->probe, &table);
		ASSERT_LE(0, n);
		for (i = 0; i < CHAOS_SLOTS; i++) {
			k = (start + i) % CHAOS_SLOTS;
			w = atomic_load(&sh->word[k]);
			if (!c->proc[k / CHAOS_ACTORS].pid || !w ||
			    confirmed(w, table, n) != want)
				continue;
			kill_proc(c, k / CHAOS_ACTORS);
			/* Unchanged: it died before it could move on. */
			if (atomic_load(&sh->word[k]) == w) {
				c->hit[want]++;
				if (want == ST_ASYNC && W_PRIV(w))
					c->async_private_hits++;
			}
			free(table);
			return true;
		}
		free(table);
		usleep(CHAOS_HUNT_POLL_US);
	} while (now_ns() < end);
	return false;
}

/* The state hit least so far. */
static int least_hit(struct chaos *c)
{
	int st, best = ST_HOLDING;

	for (st = ST_HOLDING; st < NR_ST; st++)
		if (c->hit[st] < c->hit[best])
			best = st;
	return best;
}

/* Show what is left, where the checks found something. */
static void dump_leftovers(struct __test_metadata *_metadata)
{
	static char buf[16384];
	char *line, *save;

	if (read_file_str(DEBUGFS_LOCKS, buf, sizeof(buf)))
		return;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		TH_LOG("left: %s", line);
}

/* With every worker gone: nothing may be left. */
static void check_empty(struct chaos *c, int round, bool reclaim)
{
	struct __test_metadata *_metadata = c->_metadata;
	void *table = NULL;
	int fd, n;

	ASSERT_EQ(0, debugfs_figure("requests")) {
		TH_LOG("round %d: requests left", round);
		dump_leftovers(_metadata);
	}
	fd = hlock_open();
	ASSERT_LE(0, fd);
	n = hlock_table_alloc(fd, &table);
	free(table);
	close(fd);
	ASSERT_EQ(0, n) {
		TH_LOG("round %d: a fresh locker's table has records", round);
	}
	if (!reclaim)
		return;
	ASSERT_EQ(0, write_file_str(DEBUGFS_RECLAIM, "1", 0));
	ASSERT_EQ(0, debugfs_figure("resources")) {
		TH_LOG("round %d: resources left after reclaim", round);
	}
	ASSERT_EQ(0, debugfs_figure("spaces_ended"));
	ASSERT_EQ(1, debugfs_figure("spaces"));
}

static void round_run(struct chaos *c, int round, bool reclaim)
{
	struct __test_metadata *_metadata = c->_metadata;
	int kill, i, idx;

	c->probe = hlock_open();
	ASSERT_LE(0, c->probe);
	for (kill = 0; kill < CHAOS_KILLS; kill++) {
		fill(c);
		if (rnd(&c->s) % CHAOS_RANDOM_ONE_IN && hunt(c, least_hit(c))) {
			c->hunted++;
			continue;
		}
		c->random++;
		kill_random(c, CHAOS_RANDOM_DELAY_US);
	}
	/* The rest, one by one, each at some moment of its own. */
	for (i = 0; i < CHAOS_PROCS; i++) {
		idx = (i + round) % CHAOS_PROCS;
		if (!c->proc[idx].pid)
			continue;
		usleep(rnd(&c->s) % 3000);
		kill_proc(c, idx);
		c->at_end++;
	}
	close(c->probe);
	c->probe = -1;
	check_empty(c, round, reclaim);
}

/* "holding N, waiting N, ...": @n by state, from state @first on. */
static const char *per_state(char *buf, size_t size, const long *n,
			     int first)
{
	size_t len = 0;
	int st;

	buf[0] = '\0';
	for (st = first; st < NR_ST && len < size; st++)
		len += snprintf(buf + len, size - len, "%s%s %ld",
				st > first ? ", " : "", st_name[st], n[st]);
	return buf;
}

static long stats_total(const struct hlock_stats *st)
{
	long sum = 0;
	int l, m;

	for (l = 0; l < HLOCK_NR_LEVELS; l++)
		for (m = 0; m < HLOCK_NR_MODES; m++)
			sum += st->level[l].acquire_count[m];
	return sum;
}

static int global_stats(struct hlock_stats *st)
{
	int fd = hlock_open(), ret;

	if (fd < 0)
		return fd;
	ret = hlock_stats(fd, HLOCK_STATS_GLOBAL, st);
	close(fd);
	return ret;
}

FIXTURE(chaos) {
	struct chaos c;
};

FIXTURE_SETUP(chaos)
{
	memset(&self->c, 0, sizeof(self->c));
	self->c.probe = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	if (debugfs_figure("requests") < 0)
		SKIP(return, "debugfs' hlock/resources is not readable");
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
}

FIXTURE_TEARDOWN(chaos)
{
	int i;

	for (i = 0; i < CHAOS_PROCS; i++)
		stop_child(self->c.proc[i].pid);
}

TEST_F_TIMEOUT(chaos, sigkill_anywhere_leaves_nothing, CHAOS_TIMEOUT_S)
{
	const char *env_rounds = getenv("HLOCK_CHAOS_ROUNDS");
	const char *env_seed = getenv("HLOCK_CHAOS_SEED");
	const char *env_secs = getenv("HLOCK_CHAOS_SECONDS");
	int rounds = env_rounds ? atoi(env_rounds) : CHAOS_ROUNDS;
	int64_t budget = env_secs ? atol(env_secs) * 1000000000LL : 0;
	uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0) :
			(uint64_t)now_ns();
	long acquired, timeouts, interrupts, cancels, deadlocks;
	struct hlock_stats st0, st1;
	struct chaos *c = &self->c;
	char stats_on[8] = "Y", line[160];
	int64_t start = now_ns();
	bool last = false;
	int round, i;

	c->_metadata = _metadata;
	c->s = seed | 1;
	TH_LOG("seed %#llx, %d rounds", (unsigned long long)seed, rounds);
	ASSERT_LT(0, rounds);
	read_file_str(SYSFS_STATS, stats_on, sizeof(stats_on));
	ASSERT_EQ(0, global_stats(&st0));
	for (round = 0; !last; round++) {
		last = round == rounds - 1 ||
		       (budget > 0 && now_ns() - start >= budget &&
			round + 1 >= CHAOS_MIN_ROUNDS);
		round_run(c, round, last || round % CHAOS_RECLAIM_EVERY ==
			  CHAOS_RECLAIM_EVERY - 1);
	}
	if (round < rounds)
		TH_LOG("time budget of %s s spent: %d rounds of %d", env_secs,
		       round, rounds);
	rounds = round;
	ASSERT_EQ(0, global_stats(&st1));

	TH_LOG("%d rounds in %.1f s: %ld kills (%ld hunted, %ld random or after a fruitless hunt, %ld at round ends), %ld of processes sharing a locker",
	       rounds, (now_ns() - start) / 1e9, c->kills, c->hunted,
	       c->random, c->at_end, c->shared_kills);
	TH_LOG("states hit (seen in the lock table, unchanged at death): %s (%ld async on private lockers)",
	       per_state(line, sizeof(line), c->hit, ST_HOLDING),
	       c->async_private_hits);
	TH_LOG("random kills by announced state: %s",
	       per_state(line, sizeof(line), c->random_in, ST_IDLE));
	TH_LOG("workers: %ld solo, %ld with two threads, %ld in pairs",
	       c->spawned[K_SOLO], c->spawned[K_THREADS], c->spawned[K_PAIR]);
	for (i = 0; i < NR_C; i++)
		TH_LOG("actors: %-28s %ld", c_name[i],
		       atomic_load(&sh->n[i]));
	acquired = stats_total(&st1) - stats_total(&st0);
	timeouts = st1.timeouts - st0.timeouts;
	interrupts = st1.interrupts - st0.interrupts;
	cancels = st1.cancels - st0.cancels;
	deadlocks = st1.deadlocks - st0.deadlocks;
	TH_LOG("statistics: +%ld acquisitions, +%ld timeouts, +%ld interrupts, +%ld cancels, +%ld deadlocks",
	       acquired, timeouts, interrupts, cancels, deadlocks);

	/* Every state was reached, and killed in. */
	EXPECT_LT(0, c->hit[ST_HOLDING]);
	EXPECT_LT(0, c->hit[ST_WAITING]);
	EXPECT_LT(0, c->hit[ST_CONVERTING]);
	EXPECT_LT(0, c->hit[ST_ASYNC]);
	EXPECT_LT(0, c->shared_kills);
	EXPECT_LT(0, atomic_load(&sh->n[C_CONVERSIONS]));
	EXPECT_LT(0, atomic_load(&sh->n[C_RECURSIONS]));
	EXPECT_LT(0, atomic_load(&sh->n[C_DOWNGRADES]));
	EXPECT_LT(0, atomic_load(&sh->n[C_COLLECTED]));
	if (stats_on[0] != 'Y') {
		TH_LOG("statistics are off: their checks are left out");
		return;
	}
	/* The module counted at least what the actors saw. */
	EXPECT_LE(atomic_load(&sh->n[C_GRANTS]), acquired);
	EXPECT_LE(atomic_load(&sh->n[C_TIMEOUTS]), timeouts);
	EXPECT_LE(atomic_load(&sh->n[C_DEADLOCKS]), deadlocks);
	/*
	 * On a locker of one actor's own, a request withdrawn by unlock is
	 * one cancel, and so is one killed pending (by close).
	 */
	EXPECT_LE(atomic_load(&sh->n[C_CANCELLED]) + c->async_private_hits,
		  cancels);
	/* Some waiter killed while waiting was interrupted. */
	EXPECT_LT(0, interrupts);
}

TEST_HARNESS_MAIN
