// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_interact: where features meet.  Seeded random sequences over a few
 * lockers and paths mix try, timed and asynchronous locks (by ioctl and
 * through io_uring), unlock,
 * downgrade, yield, leases with expiry and renewal, a write-ticket pool of
 * one or two, SIGSTOP/SIGCONT, close and SIGKILL, process-owned lockers,
 * lockers shared by fork, threads with file tables of their own; invariants
 * are checked from the lock table and from each locker's own view.
 *
 * Each locker lives in an actor, a child process that runs one command at
 * a time for the parent and answers when it is done, so that a blocking
 * call (a timed lock, a yield) waits while the others go on.  Each locker
 * has a description (HLOCK_IOC_DESCRIBE) of its own, "p<pid>.<n>", which
 * the lock table shows beside its records: that, not the record's pid (the
 * last caller's, a forked child's maybe), says whose a record is.
 *
 * A lock through io_uring (a "ring" lock) is the call in flight as an async
 * one is: collected from its CQE, withdrawn by an unlock of its path
 * (-ECANCELED, which the model reads as hlock_wait()'s ENOENT), refused,
 * timed out, met by forks, threads, yields and the other lockers' leases.
 * A reopen withdraws it first (a ring lock would keep the closed locker
 * open until it ends); a killed actor's ring lets its locker go a moment
 * after its death.
 *
 * The ops beyond lock, collect, unlock, downgrade, yield, renew, reopen:
 *  - owner: hlock_owner() makes the locker process-owned, or the file's.
 *  - thread: a thread takes a file table of its own (unshare(CLONE_FILES))
 *    and exits, closing its copies of the descriptors; the actor waits for
 *    that (a pipe's write end that only the thread's table holds).  Nothing
 *    held may go, nor the queued request: the process lives.
 *  - fork: a child sharing the locker makes lock/unlock pairs, try or
 *    timed, and yields, while the actor makes try/unlock pairs of its own;
 *    then the child exits, is killed, or makes itself the owner and exits.
 *    The model cannot tell what a killed child held (its grants are the
 *    locker's): the actor checks that the child's death released nothing,
 *    then unlocks everything and starts from an empty locker.  A child that
 *    made itself the owner releases everything and withdraws the queued
 *    request at its exit; otherwise the model goes on, the child's pairs
 *    undone, its ESTALEs and failed yields applied.
 *  - side: on a second locker, a child makes itself the owner, holds 70 or
 *    140 paths of its own (its exit releases them in batches, the locker's
 *    mutex dropped in between) and a shared one, forks a grandchild that
 *    locks and unlocks a shared path while the child exits or is killed.
 *    The grandchild's grants must keep the intent above them; afterwards
 *    held() and the table agree, and the owner's paths went all or none.
 *  - refuse: the parent refuses a wait of a busy actor's lockers, named by
 *    the lock table, as a deadlock search across nodes does
 *    (HLOCK_IOC_REFUSE): the wait must be gone when the call returns, and
 *    the actor's call fails with EDEADLK, its locker as it was.
 *  - stale: a lease of the actor on a path of its own is taken over by a
 *    helper locker; the actor queues X there behind it and unlocks the
 *    path: the request must be withdrawn (hlock_wait() says ENOENT), the
 *    unlock saying ESTALE or not.  The random unlocks check the same.
 *
 * Every CHECK_EVERY steps the parent lets every actor finish and checks:
 *
 *  - each actor (its own view, against the lock table):
 *    - a path it locked and did not unlock is held, or it was told it lost
 *      it (POLLPRI, then ESTALE once);
 *    - it holds nothing it did not lock (nor an intent above that);
 *    - the table's records of its locker are exactly the paths held() says
 *      it holds: nothing left behind by a locker it closed;
 *    - a path it holds under a lease shows the lease in the table;
 *    - it holds a write ticket only while it holds something or has a lock
 *      call in flight;
 *  - globally: the write pool's tickets out are the actors' tickets; the
 *    takeovers counted since the last check had a waiter to take them (a
 *    try-lock never takes a lease over); a killed actor leaves no record.
 *
 * At every step, and at every check, the parent reads the lock table for
 * exclusion: no two lockers hold conflicting modes on one resource, and a
 * locker's grant has the intent it needs on each ancestor.  The table is
 * built locker by locker, so a pair seen once may be a release and a grant
 * in between: a failure is one the next two reads still show, the same
 * grants (path, mode, fencing token) of the same lockers.  The same reads
 * check that a grant is shown as blocking a waiter (HLOCK_REC_BLOCKING,
 * what HLOCK_IOC_BLOCKING, yields and the blocking events go by) exactly
 * when the table shows another locker waiting or converting there for a
 * conflicting mode.
 *
 * The module grants a request on an idle resource by its fast path, on no
 * list of the resource, and puts that grant on the resource's lists (the
 * switch) when another request must see it: so every check above runs on
 * fast holders, on ordinary grants, and across the switch.  The run fails
 * unless debugfs' count of switches (fast_shuts) moved, when mounted.
 *
 * A failure names its seed and step, and the command that runs that seed
 * alone; HLOCK_INTERACT_SEED=N does too.
 *
 *   hlock_interact [SEEDS [STEPS [FIRST [-v]]]]
 *
 * runs SEEDS seeds from FIRST (default 12 from 1) of STEPS steps (default
 * 400; both scaled by HLOCK_TEST_SCALE, at least 3 x 100); -v prints every
 * step.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "hlock.h"
#include "hlock_helpers.h"
#include "hlock_table_check.h"
#include "hlock_uring.h"

#define NACTORS		4
#define CHECK_EVERY	8
#define WRITE_TICKETS	"/sys/module/hlock/parameters/write_tickets"

static const char *const paths[] = { "", "a", "a/b", "a/c", "d", "d/e" };
#define NPATHS	(int)(sizeof(paths) / sizeof(paths[0]))

enum op {
	OP_LOCK, OP_COLLECT, OP_UNLOCK, OP_DOWNGRADE, OP_YIELD, OP_RENEW,
	OP_REOPEN, OP_OWNER, OP_THREAD, OP_FORK, OP_SIDE, OP_STALE,
	OP_CHECK, OP_EXIT,
};

static const char *const op_names[] = {
	"lock", "collect", "unlock", "downgrade", "yield", "renew", "reopen",
	"owner", "thread", "fork", "side", "stale", "check", "exit",
};

/* OP_FORK's ends of the child. */
enum { FORK_EXIT, FORK_KILL, FORK_OWNER };

enum kind { K_TRY, K_TIMED, K_ASYNC, K_RING };

struct cmd {
	int op;
	int path;
	int mode;
	int kind;
	int timeout_ms;
	int lease_ms;
	int variant;		/* of owner, thread, fork, side */
	unsigned int seed;	/* of the scripts of fork and side */
};

struct reply {
	int ret;
	/* OP_CHECK: whether the actor holds a write ticket. */
	int ticket;
	/* OP_CHECK: whether a lock call of the actor is queued. */
	int pending;
	/* Whether that call is a ring lock; whether the command made one. */
	int ring;
	int ringed;
	/* Whether the locker is process-owned (HLOCK_OWNER_PROCESS). */
	int owned;
	char why[1024];
};

/* ------------------------------------------------------------------ */
/* The actor: one locker, its own model of what it holds. */

struct model {
	int count[NPATHS];	/* acquisitions it made and did not undo */
	bool leased[NPATHS];	/* it asked for a lease on the path */
	int pending;		/* path of its queued async call, or -1 */
	int pending_lease;
	bool ring;		/* that call is a ring lock */
	/*
	 * A yield that failed (it releases everything) ran while the ring
	 * lock was in flight: granted before it, the grant went with it.
	 */
	bool ring_unsure;
	/* The CQE just taken said granted while ring_unsure held. */
	bool ring_grant_unsure;
	bool owned;		/* process-owned (HLOCK_OWNER_PROCESS) */
};

static int a_fd;
/* The actor's ring, made when it starts (a_ring_ok), for its ring locks. */
static struct io_uring a_ring;
static bool a_ring_ok;
/* The locker's description, "p<pid>.<n>": whose records are whose. */
static char a_why[32];
static int a_opens;
static struct model a_m;
/* The actor's last commands and their results, for a failure's report. */
#define HISTORY	8
static char a_hist[HISTORY][64];
static unsigned int a_nhist;

static void model_clear(void)
{
	memset(&a_m, 0, sizeof(a_m));
	a_m.pending = -1;
}

static void model_grant(int path, int lease_ms)
{
	int held;

	/*
	 * Whether the ring's grant came before the failed yield (which then
	 * released it), the locker says: held() is the mode held, if any.
	 */
	if (a_m.ring_grant_unsure) {
		a_m.ring_grant_unsure = false;
		held = hlock_held(a_fd, paths[path]);
		a_m.count[path] = held > 0 ? a_m.count[path] + 1 : 0;
		return;
	}
	a_m.count[path]++;
	if (lease_ms)
		a_m.leased[path] = true;
}

/* Whether paths[@q] is below paths[@p]. */
static bool below(int q, int p)
{
	size_t n = strlen(paths[p]);

	if (q == p)
		return false;
	return !n || (!strncmp(paths[q], paths[p], n) && paths[q][n] == '/');
}

/*
 * @path was taken over (its unlock said ESTALE): what the actor held
 * below it went too, and says ENOENT rather than ESTALE.
 */
static void model_taken(int path)
{
	int q, ret;

	a_m.count[path] = 0;
	a_m.leased[path] = false;
	/*
	 * The ESTALE is owed until said, even once the path was locked
	 * again: what is held there now came after the takeover, and one
	 * more unlock says how many acquisitions are left of it (not for
	 * the path of the request in flight: that unlock withdraws it).
	 * Each takeover owes one: a path leased and taken over again before
	 * the first was said owes more, which that unlock says first.
	 */
	if (a_m.pending != path && hlock_held(a_fd, paths[path]) > 0) {
		int owed = 0;

		while ((ret = hlock_unlock(a_fd, paths[path])) == -ESTALE &&
		       ++owed < 64)
			;
		if (ret > 0)
			a_m.count[path] = ret;
	}
	for (q = 0; q < NPATHS; q++)
		if (below(q, path) && hlock_held(a_fd, paths[q]) <= 0) {
			a_m.count[q] = 0;
			a_m.leased[q] = false;
		}
}

static bool holds_anything(void)
{
	int p;

	for (p = 0; p < NPATHS; p++)
		if (hlock_held(a_fd, paths[p]) > 0)
			return true;
	return false;
}

/* The actor's records in the table: how many, and *leased of them. */
static int own_records(int *leased, bool lease_of[NPATHS])
{
	const struct hlock_lock_record *rec;
	int i, n, mine = 0, p;
	void *buf;

	*leased = 0;
	memset(lease_of, 0, NPATHS * sizeof(bool));
	n = hlock_table_alloc(a_fd, &buf);
	if (n < 0)
		return n;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		const struct hlock_record_ext *ext = hlock_record_ext(rec);

		if (strcmp(hlock_record_why(rec), a_why) ||
		    rec->state == HLOCK_STATE_WAITING)
			continue;
		mine++;
		if (!ext || !(ext->flags & HLOCK_REC_LEASE))
			continue;
		(*leased)++;
		for (p = 0; p < NPATHS; p++)
			if (!strcmp(paths[p], hlock_record_path(rec)))
				lease_of[p] = true;
	}
	free(buf);
	return mine;
}

/* How many paths the actor's locker holds. */
static int held_count(void)
{
	int p, n = 0;

	for (p = 0; p < NPATHS; p++)
		n += hlock_held(a_fd, paths[p]) > 0;
	return n;
}

/*
 * A lock call with a lease on @path was just granted: unless a takeover
 * came first (the path is not held any more), the table shows its lease.
 */
static int lease_shown(int path, struct reply *r)
{
	bool lease_of[NPATHS];
	int leased, n;

	/*
	 * The table first: a takeover after it shows in held(), and nothing
	 * but the actor itself could lock the path again.
	 */
	n = own_records(&leased, lease_of);
	if (hlock_held(a_fd, paths[path]) <= 0)
		return 0;
	if (n < 0 || !lease_of[path]) {
		snprintf(r->why, sizeof(r->why),
			 "\"%s\" granted with a lease shows none", paths[path]);
		return 1;
	}
	return 0;
}

/* Open the actor's locker, with its own description. */
static int a_open(void)
{
	a_fd = hlock_open();
	if (a_fd < 0)
		return a_fd;
	snprintf(a_why, sizeof(a_why), "p%d.%d", (int)getpid(), a_opens++);
	return hlock_describe(a_fd, a_why);
}

static unsigned int lrnd(unsigned int *st, unsigned int n)
{
	*st = *st * 1103515245u + 12345u;
	return (*st >> 8) % n;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * Whether the locker may hold @p: an acquisition of its own, one below
 * (the intent), or the request in flight there or below.
 */
static bool may_hold(int p)
{
	int q;

	for (q = 0; q < NPATHS; q++)
		if ((q == p || below(q, p)) &&
		    (a_m.count[q] || a_m.pending == q))
			return true;
	return false;
}

/* Nothing is held that the model did not lock. */
static int unexpected_held(struct reply *r, const char *when)
{
	int p, m;

	for (p = 0; p < NPATHS; p++) {
		m = hlock_held(a_fd, paths[p]);
		if (m > 0 && !may_hold(p)) {
			snprintf(r->why, sizeof(r->why),
				 "%s: \"%s\" held in %s, never locked", when,
				 paths[p], hlock_mode_name(m));
			return 1;
		}
	}
	return 0;
}

/* Whether @p is, or lies below, a path the model holds under a lease. */
static bool under_lease(int p)
{
	int q;

	for (q = 0; q < NPATHS; q++)
		if (a_m.leased[q] && (q == p || below(p, q)))
			return true;
	return false;
}

/*
 * What was held is, unless a takeover took it and said so (POLLPRI).
 * With @killed, a sharer was killed: it may have taken the one ESTALE of
 * a takeover and died before it told, so what a lease covered may be
 * gone untold.
 */
static int nothing_lost(struct reply *r, const char *when, bool killed)
{
	int p;

	for (p = 0; p < NPATHS; p++) {
		if (!a_m.count[p] || hlock_held(a_fd, paths[p]) > 0 ||
		    poll_events(a_fd) & POLLPRI || (killed && under_lease(p)))
			continue;
		snprintf(r->why, sizeof(r->why),
			 "%s: lost \"%s\" (%d acquisitions), untold", when,
			 paths[p], a_m.count[p]);
		return 1;
	}
	return 0;
}

/*
 * hlock_wait() on the call in flight, made by ioctl or through the ring:
 * a ring lock's end is its CQE, collected here, which clears a_m.ring (its
 * res may be ETIMEDOUT, the lock's own timeout: a_m.ring says which).  Its
 * -ECANCELED (withdrawn) reads as ENOENT, as hlock_wait() says of a
 * withdrawn request; no CQE within @timeout_ns as EAGAIN.
 */
static int pending_wait(int64_t timeout_ns)
{
	struct __kernel_timespec ts = {
		.tv_sec = timeout_ns / SEC,
		.tv_nsec = timeout_ns % SEC,
	};
	struct io_uring_cqe *cqe;
	int ret;

	if (!a_m.ring)
		return hlock_wait(a_fd, timeout_ns);
	if (timeout_ns)
		ret = io_uring_wait_cqe_timeout(&a_ring, &cqe, &ts);
	else
		ret = io_uring_peek_cqe(&a_ring, &cqe);
	if (ret == -ETIME || ret == -EAGAIN)
		return -EAGAIN;
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&a_ring, cqe);
	a_m.ring = false;
	/* For model_grant(), if this command grants (else cleared). */
	a_m.ring_grant_unsure = a_m.ring_unsure && !ret;
	a_m.ring_unsure = false;
	return ret == -ECANCELED ? -ENOENT : ret;
}

/*
 * The queued request of the model: still there, or granted (then it is
 * collected), never gone.  Return: 1 on a failure, else 0.
 */
static int pending_kept(struct reply *r, const char *when)
{
	int p = a_m.pending, ret;

	if (p < 0)
		return 0;
	ret = pending_wait(0);
	if (ret == -EAGAIN)
		return 0;
	if (ret == -ENOENT) {
		snprintf(r->why, sizeof(r->why),
			 "%s: the request queued on \"%s\" is gone", when,
			 paths[p]);
		return 1;
	}
	a_m.pending = -1;
	if (!ret)
		model_grant(p, a_m.pending_lease);
	return 0;
}

/*
 * An unlock of the path of the queued request (it said @ret) withdrew it,
 * whether it said ESTALE (a takeover before) or what is left.
 */
static int withdrawn(int path, int ret, struct reply *r)
{
	bool ring = a_m.ring;
	/* A ring lock's CQE is posted by task work, by now: a second at most. */
	int w = pending_wait(ring ? SEC : 0);

	if (w == -ENOENT)
		return 0;
	/*
	 * A ring lock granted or failed before the unlock ended then, by its
	 * CQE: the unlock released what it says.
	 */
	if (ring && !a_m.ring)
		return 0;
	snprintf(r->why, sizeof(r->why),
		 "the unlock of \"%s\" said %d and left the request queued there (wait says %d)",
		 paths[path], ret, w);
	return 1;
}

/*
 * Undo one acquisition of @q that a pair made, the model untouched: an
 * ESTALE first is noted in @stale, EBUSY (another call of the locker on
 * the path) is tried again.
 */
static void unlock_pair(int q, bool *stale)
{
	int i, ret;

	for (i = 0; i < 2000; i++) {
		ret = hlock_unlock(a_fd, paths[q]);
		if (ret == -ESTALE) {
			stale[q] = true;
			continue;
		}
		if (ret != -EBUSY)
			return;
		usleep(100);
	}
}

/* Unlock everything, withdraw the queued request: an empty locker. */
static int unwind(struct reply *r, const char *when)
{
	int p, i, ret;

	for (p = NPATHS - 1; p >= 0; p--)
		for (i = 0; i < 100000; i++) {
			ret = hlock_unlock(a_fd, paths[p]);
			if (ret <= 0 && ret != -ESTALE)
				break;
		}
	for (p = 0; p < NPATHS; p++) {
		a_m.count[p] = 0;
		a_m.leased[p] = false;
	}
	/* A ring lock withdrawn: its CQE, then nothing. */
	if (a_m.ring && (pending_wait(SEC), a_m.ring)) {
		snprintf(r->why, sizeof(r->why),
			 "%s: after unlocking everything, no CQE of the ring lock",
			 when);
		return 1;
	}
	a_m.pending = -1;
	ret = hlock_wait(a_fd, 0);
	if (ret != -ENOENT) {
		snprintf(r->why, sizeof(r->why),
			 "%s: after unlocking everything, wait says %d", when,
			 ret);
		return 1;
	}
	return unexpected_held(r, when);
}

/* ---- thread: a file table of its own, then exit ---- */

struct thr {
	int wfd;	/* only the thread's table keeps it in the end */
	int call;	/* what it does on the locker first */
	int path;
	int ret;
};

static void *thread_run(void *arg)
{
	struct thr *t = arg;

	t->ret = unshare(CLONE_FILES) ? -errno : 0;
	if (t->call == 1)
		hlock_held(a_fd, paths[t->path]);
	else if (t->call == 2)
		hlock_renew(a_fd);
	if (write(t->wfd, "u", 1) != 1)
		t->ret = -EIO;
	return NULL;
}

static int actor_thread(const struct cmd *c, struct reply *r)
{
	struct thr t = { .call = c->variant, .path = c->path };
	pthread_t thread;
	int pfd[2], ret;
	char ch;

	if (pipe(pfd))
		return -errno;
	/* Above every other descriptor: the table closes in order. */
	t.wfd = fcntl(pfd[1], F_DUPFD_CLOEXEC, 200);
	close(pfd[1]);
	if (t.wfd < 0 || pthread_create(&thread, NULL, thread_run, &t)) {
		close(pfd[0]);
		if (t.wfd >= 0)
			close(t.wfd);
		return -EAGAIN;
	}
	ret = read(pfd[0], &ch, 1);
	close(t.wfd);
	/* EOF once the thread's table closed, the locker's copy first. */
	while (ret == 1)
		ret = read(pfd[0], &ch, 1);
	pthread_join(thread, NULL);
	close(pfd[0]);
	if (t.ret)
		return t.ret;
	if (nothing_lost(r, a_m.owned ?
			 "a thread of the owner, own file table, exited" :
			 "a thread with its own file table exited", false) ||
	    pending_kept(r, "a thread with its own file table exited"))
		return INT32_MIN;
	return 0;
}

/* ---- fork: a child shares the locker ---- */

/*
 * The child: lock/unlock pairs and yields on the shared locker; tells the
 * actor on @wfd of what the model must learn: 'o' it is the owner now,
 * 'A' + path an ESTALE it took, 'y' a yield starts, then 'Y' it failed
 * (nothing held) or 'z' it did not; killed after a 'y', it may have.
 */
static void __attribute__((noreturn))
sharer_run(const struct cmd *c, int wfd)
{
	static const int modes[] = { HLOCK_IS, HLOCK_IX, HLOCK_S, HLOCK_SIX,
				     HLOCK_X };
	unsigned int st = c->seed;
	bool stale[NPATHS] = { false };
	int i, n, q, ret;
	char ch;

	if (c->variant == FORK_OWNER &&
	    !hlock_owner(a_fd, HLOCK_OWNER_PROCESS) && write(wfd, "o", 1) != 1)
		_exit(1);
	n = 2 + (int)lrnd(&st, 7);
	for (i = 0; i < n; i++) {
		q = (int)lrnd(&st, NPATHS);
		if (!lrnd(&st, 6)) {
			/* 'y' first: killed in it, the yield may fail. */
			if (write(wfd, "y", 1) != 1)
				_exit(1);
			ret = hlock_yield(a_fd, (5 + lrnd(&st, 20)) * MS);
			if (write(wfd, ret && ret != -EBUSY ? "Y" : "z", 1) != 1)
				_exit(1);
			continue;
		}
		ret = hlock_lock(a_fd, paths[q], modes[lrnd(&st, 5)], 0,
				 lrnd(&st, 2) ? 0 : (1 + lrnd(&st, 20)) * MS);
		if (!ret)
			unlock_pair(q, stale);
	}
	for (q = 0; q < NPATHS; q++) {
		ch = (char)('A' + q);
		if (stale[q] && write(wfd, &ch, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

/*
 * A child of @actor dies with it: also when the actor was killed before
 * the prctl(), which then has no death to signal.
 */
static void die_with(pid_t actor)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != actor)
		_exit(1);
}

static int actor_fork(const struct cmd *c, struct reply *r)
{
	static const int modes[] = { HLOCK_IS, HLOCK_IX, HLOCK_S, HLOCK_SIX,
				     HLOCK_X };
	bool stale[NPATHS] = { false }, owner = false, yfail = false;
	bool in_yield = false, ring = a_m.pending >= 0 && a_m.ring;
	unsigned int st = c->seed ^ 0x5bd1e995u;
	int pfd[2], i, n, q, ret;
	pid_t pid, actor = getpid();
	char ch;

	if (pipe(pfd))
		return -errno;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -EAGAIN;
	}
	if (!pid) {
		die_with(actor);
		close(pfd[0]);
		sharer_run(c, pfd[1]);
	}
	close(pfd[1]);
	/* Pairs of the actor's own meanwhile. */
	n = 1 + (int)lrnd(&st, 5);
	for (i = 0; i < n; i++) {
		q = (int)lrnd(&st, NPATHS);
		if (!hlock_lock(a_fd, paths[q], modes[lrnd(&st, 5)], 0, 0))
			unlock_pair(q, stale);
	}
	if (c->variant == FORK_KILL) {
		usleep(lrnd(&st, 4000));
		kill(pid, SIGKILL);
	}
	waitpid(pid, NULL, 0);
	while (read(pfd[0], &ch, 1) == 1) {
		if (ch == 'o')
			owner = true;
		else if (ch == 'Y')
			yfail = true;
		else if (ch == 'y' || ch == 'z')
			in_yield = ch == 'y';
		else if (ch >= 'A' && ch < 'A' + NPATHS)
			stale[ch - 'A'] = true;
	}
	close(pfd[0]);
	if (owner) {
		/*
		 * The owner's exit: everything released, the request too.  A
		 * ring lock may have ended before (its CQE came): released
		 * with the rest.
		 */
		a_m.owned = false;
		ring = a_m.ring;
		ret = pending_wait(ring ? SEC : 0);
		if (ret != -ENOENT && !(ring && !a_m.ring)) {
			snprintf(r->why, sizeof(r->why),
				 "a sharer that owned the locker exited, wait says %d",
				 ret);
			return INT32_MIN;
		}
		a_m.pending = -1;
		for (q = 0; q < NPATHS; q++) {
			a_m.count[q] = 0;
			a_m.leased[q] = false;
		}
		return unexpected_held(r, "a sharer that owned the locker exited") ?
		       INT32_MIN : 0;
	}
	if (yfail || in_yield)
		for (q = 0; q < NPATHS; q++) {
			a_m.count[q] = 0;
			a_m.leased[q] = false;
		}
	for (q = 0; q < NPATHS; q++)
		if (stale[q])
			model_taken(q);
	/* A sharer's end releases nothing, the locker's owner or not. */
	/* A ring lock ends at its grant: the sharer's yield may follow it. */
	if (ring && a_m.ring && (yfail || in_yield))
		a_m.ring_unsure = true;
	if (nothing_lost(r, c->variant == FORK_KILL ? "a sharer was killed" :
			 "a sharer exited", c->variant == FORK_KILL) ||
	    pending_kept(r, "a sharer's end"))
		return INT32_MIN;

	/* A killed one may have left an acquisition: start afresh. */
	if (c->variant == FORK_KILL)
		return unwind(r, "after a killed sharer") ? INT32_MIN : 0;
	return unexpected_held(r, "after a sharer's pairs") ? INT32_MIN : 0;
}

/* ---- side: the owner of a second locker exits under its sharer ---- */

/*
 * The grandchild: lock/unlock pairs of @path in @mode on @l; while it
 * holds the path, the locker holds the intent on each ancestor.  A
 * failure counts only if the path is still held after the look (the
 * owner's exit may release it at any moment).
 */
static void __attribute__((noreturn))
side_sharer(int l, int path, int mode, unsigned int st, int wfd)
{
	char msg[200];
	int i, a, need, ret;

	for (i = 0; i < 40; i++) {
		ret = hlock_lock(l, paths[path], mode, 0,
				 lrnd(&st, 2) ? 0 : (1 + lrnd(&st, 10)) * MS);
		if (ret)
			continue;
		need = mode == HLOCK_IS || mode == HLOCK_S ? HLOCK_IS :
		       HLOCK_IX;
		for (a = 0; path && a < NPATHS; a++) {
			int m;

			if (!below(path, a))
				continue;
			m = hlock_held(l, paths[a]);
			if ((need == HLOCK_IS ? m > 0 :
			     m == HLOCK_IX || m == HLOCK_SIX || m == HLOCK_X) ||
			    hlock_held(l, paths[path]) != mode)
				continue;
			snprintf(msg, sizeof(msg),
				 "side: %s on \"%s\" held, \"%s\" held in %s",
				 hlock_mode_name(mode), paths[path], paths[a],
				 m < 0 ? "error" : hlock_mode_name(m));
			if (write(wfd, msg, strlen(msg)) < 0)
				_exit(1);
			_exit(0);
		}
		for (a = 0; a < 1000 && hlock_unlock(l, paths[path]) == -EBUSY;
		     a++)
			usleep(100);
	}
	_exit(0);
}

/* The records in the table of the locker described @why, by path. */
static int side_records(int fd, const char *why, bool on[NPATHS],
			int *total)
{
	const struct hlock_lock_record *rec;
	int i, n, p;
	void *buf;

	memset(on, 0, NPATHS * sizeof(bool));
	*total = 0;
	n = hlock_table_alloc(fd, &buf);
	if (n < 0)
		return n;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		if (strcmp(hlock_record_why(rec), why))
			continue;
		(*total)++;
		if (rec->state == HLOCK_STATE_WAITING)
			continue;
		for (p = 0; p < NPATHS; p++)
			if (!strcmp(paths[p], hlock_record_path(rec)))
				on[p] = true;
	}
	free(buf);
	return 0;
}

static int actor_side(const struct cmd *c, struct reply *r)
{
	int l, rdy[2], go[2], rep[2], i, nown, ret, p, total;
	unsigned int st = c->seed;
	char why[48], path[32], msg[200];
	bool on[NPATHS], first, last;
	pid_t owner, g = 0, actor = getpid();
	int rep_g[2] = { 0, 0 };
	ssize_t len;

	l = hlock_open();
	if (l < 0)
		return l;
	snprintf(why, sizeof(why), "%s.s%u", a_why, c->seed % 1000);
	nown = c->variant & 1 ? 140 : 70;
	if (hlock_describe(l, why) || pipe(rdy) || pipe(go) || pipe(rep)) {
		close(l);
		return -EIO;
	}
	fflush(stdout);
	owner = fork();
	if (owner < 0)
		nown = 0;
	if (!owner) {
		/* The actor's ends: a read then sees the actor's end. */
		die_with(actor);
		close(rdy[0]);
		close(go[1]);
		ret = hlock_owner(l, HLOCK_OWNER_PROCESS);
		for (i = 0; !ret && i < nown; i++) {
			snprintf(path, sizeof(path), "o%d/%d", (int)actor,
				 i);
			ret = hlock_lock(l, path, HLOCK_S, 0, 0);
		}
		hlock_lock(l, paths[c->path], c->mode, 0, 0);
		g = fork();
		if (!g) {
			close(rep[0]);
			side_sharer(l, (int)lrnd(&st, NPATHS),
				    lrnd(&st, 3) ? HLOCK_X : c->mode, st,
				    rep[1]);
		}
		rep_g[0] = g;
		rep_g[1] = i - (ret != 0);
		if (write(rdy[1], rep_g, sizeof(rep_g)) != sizeof(rep_g))
			_exit(1);
		ret = read(go[0], path, 1);
		_exit(0);
	}
	close(rdy[1]);
	close(go[0]);
	close(rep[1]);
	if (owner > 0 && read(rdy[0], rep_g, sizeof(rep_g)) == sizeof(rep_g)) {
		g = rep_g[0];
		nown = rep_g[1];
		usleep(lrnd(&st, 3000));
		if (c->variant & 2)
			kill(owner, SIGKILL);
		else if (write(go[1], "g", 1) != 1)
			kill(owner, SIGKILL);
	} else if (owner > 0) {
		kill(owner, SIGKILL);
	}
	if (owner > 0)
		waitpid(owner, NULL, 0);
	/* Its child is the actor's now (a subreaper): bounded, 40 pairs. */
	if (g > 0)
		waitpid(g, NULL, 0);
	close(rdy[0]);
	close(go[1]);
	len = read(rep[0], msg, sizeof(msg) - 1);
	close(rep[0]);
	ret = 0;
	if (len > 0) {
		msg[len] = 0;
		snprintf(r->why, sizeof(r->why), "%s", msg);
		ret = INT32_MIN;
	}
	/* What held() says the table shows, and the other way round. */
	if (!ret && !side_records(l, why, on, &total))
		for (p = 0; p < NPATHS; p++) {
			if ((hlock_held(l, paths[p]) > 0) == on[p])
				continue;
			snprintf(r->why, sizeof(r->why),
				 "side: \"%s\" held in %d, the table %s",
				 paths[p], hlock_held(l, paths[p]),
				 on[p] ? "shows it" : "does not");
			ret = INT32_MIN;
			break;
		}
	/* The owner's paths went all, or stayed all (a call in flight). */
	snprintf(path, sizeof(path), "o%d/0", (int)getpid());
	first = hlock_held(l, path) > 0;
	snprintf(path, sizeof(path), "o%d/%d", (int)getpid(), nown - 1);
	last = hlock_held(l, path) > 0;
	if (!ret && nown > 0 && first != last) {
		snprintf(r->why, sizeof(r->why),
			 "side: the owner's exit released o/0 %s, o/%d %s",
			 first ? "no" : "yes", nown - 1, last ? "no" : "yes");
		ret = INT32_MIN;
	}
	close(l);
	if (!ret && !side_records(a_fd, why, on, &total) && total) {
		snprintf(r->why, sizeof(r->why),
			 "side: %d records of the closed locker", total);
		ret = INT32_MIN;
	}
	return ret;
}

/* ---- stale: cancel by unlock after a takeover ---- */

static int actor_stale(struct reply *r)
{
	char p[24], why[48];
	int h, ret, u, w;

	if (a_m.pending >= 0)
		return -EBUSY;
	snprintf(p, sizeof(p), "t%d", (int)getpid());
	ret = hlock_lock_lease(a_fd, p, HLOCK_X, 0, 0, 10 * MS);
	if (ret)
		return ret;
	h = hlock_open();
	snprintf(why, sizeof(why), "%s.h", a_why);
	if (h < 0 || hlock_describe(h, why)) {
		hlock_unlock(a_fd, p);
		return -EIO;
	}
	sleep_ms(30);
	/* A waiter: it takes the expired lease over. */
	ret = hlock_lock(h, p, HLOCK_X, 0, 2 * SEC);
	if (ret) {
		/* No ticket for it, maybe: nothing to see this time. */
		close(h);
		while (hlock_unlock(a_fd, p) == -ESTALE)
			;
		return 1;
	}
	if (!(poll_pri(a_fd) & POLLPRI)) {
		snprintf(r->why, sizeof(r->why),
			 "stale: \"%s\" taken over, untold", p);
		ret = INT32_MIN;
		goto out;
	}
	ret = hlock_lock(a_fd, p, HLOCK_X, HLOCK_F_ASYNC, -1);
	if (ret != -EINPROGRESS) {
		ret = 2;
		goto out;
	}
	u = hlock_unlock(a_fd, p);
	w = hlock_wait(a_fd, 0);
	if (w != -ENOENT) {
		snprintf(r->why, sizeof(r->why),
			 "stale: \"%s\" taken over, X queued behind the new holder, the unlock said %d and left it queued (wait says %d)",
			 p, u, w);
		ret = INT32_MIN;
		goto out;
	}
	hlock_unlock(h, p);
	w = hlock_wait(a_fd, 0);
	ret = hlock_held(a_fd, p);
	if (w != -ENOENT || ret) {
		snprintf(r->why, sizeof(r->why),
			 "stale: after the withdrawing unlock and the holder's, wait says %d, \"%s\" held in %d",
			 w, p, ret);
		ret = INT32_MIN;
		goto out;
	}
	/* The ESTALE, if the unlock did not say it. */
	if (u != -ESTALE)
		hlock_unlock(a_fd, p);
	ret = 0;
out:
	close(h);
	if (ret != INT32_MIN)
		while ((u = hlock_unlock(a_fd, p)) > 0 || u == -ESTALE)
			;
	return ret;
}

static int actor_check(struct reply *r)
{
	bool lease_of[NPATHS], told;
	struct hlock_stats st;
	int p, nheld, recs, leased, ret, tries;

	/*
	 * Taken over: told (POLLPRI), then ESTALE or, below, ENOENT.  The
	 * takeover sets POLLPRI before held() can see the path go: look at
	 * it after.
	 */
	for (p = 0; p < NPATHS; p++) {
		int held;

		if (!a_m.count[p])
			continue;
		held = hlock_held(a_fd, paths[p]);
		if (held > 0)
			continue;
		told = poll_events(a_fd) & POLLPRI;
		if (!told) {
			snprintf(r->why, sizeof(r->why),
				 "lost \"%s\" (%d acquisitions) untold",
				 paths[p], a_m.count[p]);
			return 1;
		}
		ret = hlock_unlock(a_fd, paths[p]);
		/*
		 * An ancestor of the call in flight is that call's: its unlock
		 * says EBUSY and changes nothing.  Looked at again once the
		 * call ended.
		 */
		if (ret == -EBUSY && a_m.pending >= 0 && below(a_m.pending, p))
			continue;
		if (ret != -ESTALE && ret != -ENOENT &&
		    !(a_m.pending == p && ret >= 0)) {
			snprintf(r->why, sizeof(r->why),
				 "lost \"%s\" (%d acquisitions%s, held() %d, queued on \"%s\"): unlock says %d",
				 paths[p], a_m.count[p],
				 a_m.leased[p] ? ", leased" : "", held,
				 a_m.pending >= 0 ? paths[a_m.pending] : "-",
				 ret);
			return 1;
		}
		/* An unlock of the path of the queued request withdraws it. */
		if (a_m.pending == p) {
			a_m.pending = -1;
			if (withdrawn(p, ret, r))
				return 1;
		}
		model_taken(p);
	}
	if (unexpected_held(r, "check"))
		return 1;
	/* Counted before and after the table: a takeover may come between. */
	for (tries = 0; tries < 5; tries++) {
		nheld = held_count();
		recs = own_records(&leased, lease_of);
		if (held_count() == nheld)
			break;
	}
	/* A call in flight has its path to itself: held() may say EBUSY. */
	if (tries < 5 && recs != nheld && a_m.pending < 0) {
		snprintf(r->why, sizeof(r->why),
			 "the table has %d records of mine, held() says %d",
			 recs, nheld);
		return 1;
	}
	memset(&st, 0, sizeof(st));
	if (hlock_stats(a_fd, HLOCK_STATS_LOCKER, &st)) {
		snprintf(r->why, sizeof(r->why), "no statistics");
		return 1;
	}
	r->ticket = st.tickets[HLOCK_TICKET_WRITE].out != 0;
	if (r->ticket && !nheld && a_m.pending < 0) {
		snprintf(r->why, sizeof(r->why),
			 "a write ticket, and nothing held or in flight");
		return 1;
	}
	return 0;
}

/*
 * A lock through the ring, the call in flight until its CQE: one granted
 * or refused at once is there when the submission returns.
 */
static int ring_lock(const struct cmd *c, struct reply *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&a_ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EAGAIN;
	hlock_prep_lock(sqe, a_fd, paths[c->path], c->mode, 0,
			c->timeout_ms ? c->timeout_ms * MS : -1);
	ret = io_uring_submit(&a_ring);
	if (ret != 1) {
		snprintf(r->why, sizeof(r->why), "ring submit says %d", ret);
		return INT32_MIN;
	}
	r->ringed = 1;
	if (!io_uring_peek_cqe(&a_ring, &cqe)) {
		ret = cqe->res;
		io_uring_cqe_seen(&a_ring, cqe);
		if (!ret)
			model_grant(c->path, 0);
		return ret;
	}
	a_m.pending = c->path;
	a_m.pending_lease = 0;
	a_m.ring = true;
	return -EINPROGRESS;
}

static int actor_do(const struct cmd *c, struct reply *r)
{
	bool ring;
	int ret, p;

	switch (c->op) {
	case OP_LOCK:
		if (a_m.pending >= 0)
			return -EBUSY;
		if (c->kind == K_RING && a_ring_ok)
			return ring_lock(c, r);
		/* Without a ring, a ring lock is a timed one. */
		ret = hlock_lock_lease(a_fd, paths[c->path], c->mode,
				       c->kind == K_ASYNC ? HLOCK_F_ASYNC : 0,
				       c->kind == K_TRY ? 0 :
				       c->kind == K_ASYNC ? -1 :
				       (c->timeout_ms ? c->timeout_ms : 50) * MS,
				       c->lease_ms * MS);
		if (!ret) {
			model_grant(c->path, c->lease_ms);
			if (c->lease_ms && lease_shown(c->path, r))
				return INT32_MIN;
		}
		if (ret == -EINPROGRESS) {
			a_m.pending = c->path;
			a_m.pending_lease = c->lease_ms;
		}
		return ret;
	case OP_COLLECT:
		if (a_m.pending < 0) {
			/* Nothing queued: nothing to collect. */
			ret = hlock_wait(a_fd, 0);
			if (ret != -ENOENT) {
				snprintf(r->why, sizeof(r->why),
					 "nothing queued, wait says %d", ret);
				return INT32_MIN;
			}
			return ret;
		}
		ring = a_m.ring;
		ret = pending_wait(c->timeout_ms * MS);
		/* Not yet; a ring lock's CQE ends it whatever it says. */
		if ((!ring || a_m.ring) &&
		    (ret == -EAGAIN || ret == -ETIMEDOUT || ret == -EINTR))
			return ret;
		if (ring && a_m.ring)
			return ret;
		if (ret == -ENOENT) {
			snprintf(r->why, sizeof(r->why),
				 "the request queued on \"%s\" is gone",
				 paths[a_m.pending]);
			return INT32_MIN;
		}
		p = a_m.pending;
		a_m.pending = -1;
		if (!ret) {
			model_grant(p, a_m.pending_lease);
			if (a_m.pending_lease && lease_shown(p, r))
				return INT32_MIN;
		}
		return ret;
	case OP_UNLOCK:
		ret = hlock_unlock(a_fd, paths[c->path]);
		/*
		 * The unlock of the path of the call in flight cancels it,
		 * also when it says ESTALE (the path was taken over before).
		 */
		if (a_m.pending == c->path && (ret >= 0 || ret == -ESTALE)) {
			a_m.pending = -1;
			if (withdrawn(c->path, ret, r))
				return INT32_MIN;
		}
		if (ret == -ESTALE) {
			model_taken(c->path);
		} else if (ret >= 0) {
			/* What is left: right even after a takeover. */
			a_m.count[c->path] = ret;
			if (!ret)
				a_m.leased[c->path] = false;
		}
		return ret;
	case OP_DOWNGRADE:
		return hlock_downgrade(a_fd, paths[c->path], c->mode);
	case OP_YIELD:
		ret = hlock_yield(a_fd, c->timeout_ms * MS);
		/* A ring lock granted as the yield began went with it. */
		if (ret && ret != -EBUSY && a_m.pending >= 0 && a_m.ring)
			a_m.ring_unsure = true;
		if (ret && ret != -EBUSY) {
			/* Failed: it holds nothing (the ESTALEs come later). */
			for (p = 0; p < NPATHS; p++) {
				a_m.count[p] = 0;
				a_m.leased[p] = false;
			}
			if (holds_anything()) {
				snprintf(r->why, sizeof(r->why),
					 "yield failed with %d, something held",
					 ret);
				r->ret = ret;
				return INT32_MIN;
			}
		}
		return ret;
	case OP_RENEW:
		return hlock_renew(a_fd);
	case OP_REOPEN:
		/* Withdrawn first: it would keep the closed locker open. */
		if (a_m.pending >= 0 && a_m.ring) {
			hlock_unlock(a_fd, paths[a_m.pending]);
			pending_wait(SEC);
			if (a_m.ring) {
				snprintf(r->why, sizeof(r->why),
					 "an unlock of \"%s\" left the ring lock there",
					 paths[a_m.pending]);
				return INT32_MIN;
			}
		}
		close(a_fd);
		model_clear();
		return a_open();
	case OP_OWNER:
		ret = hlock_owner(a_fd, c->variant ? HLOCK_OWNER_PROCESS : 0);
		if (!ret)
			a_m.owned = c->variant;
		return ret;
	case OP_THREAD:
		return actor_thread(c, r);
	case OP_FORK:
		return actor_fork(c, r);
	case OP_SIDE:
		return actor_side(c, r);
	case OP_STALE:
		return actor_stale(r);
	case OP_CHECK:
		return actor_check(r) ? INT32_MIN : 0;
	}
	return -EINVAL;
}

static void actor_run(int sock)
{
	struct cmd c;
	struct reply r;

	/* Its side op's grandchild comes back to it when its child exits. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	a_ring_ok = !io_uring_queue_init(8, &a_ring, 0);
	a_open();
	model_clear();
	while (read(sock, &c, sizeof(c)) == (ssize_t)sizeof(c)) {
		memset(&r, 0, sizeof(r));
		if (c.op == OP_EXIT)
			_exit(0);
		/*
		 * A ring lock that ended meanwhile ends in the model first:
		 * the command came after it.
		 */
		a_m.ring_grant_unsure = false;
		if (a_m.pending >= 0 && a_m.ring &&
		    pending_kept(&r, "between two commands"))
			r.ret = INT32_MIN;
		else
			r.ret = actor_do(&c, &r);
		r.pending = a_m.pending >= 0;
		r.ring = r.pending && a_m.ring;
		r.owned = a_m.owned;
		snprintf(a_hist[a_nhist++ % HISTORY], sizeof(a_hist[0]),
			 "%s \"%s\" %d/%d/%d/%d/%d=%d", op_names[c.op],
			 paths[c.path], c.mode, c.kind, c.timeout_ms,
			 c.lease_ms, c.variant, r.ret);
		if (r.ret == INT32_MIN) {
			unsigned int i;

			for (i = a_nhist > HISTORY ? a_nhist - HISTORY : 0;
			     i < a_nhist; i++) {
				size_t n = strlen(r.why);

				snprintf(r.why + n, sizeof(r.why) - n,
					 "; %s", a_hist[i % HISTORY]);
			}
		}
		if (write(sock, &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(3);
	}
	_exit(0);
}

/* ------------------------------------------------------------------ */
/* The parent: the scheduler, the global checks. */

struct actor {
	pid_t pid;
	int sock;
	bool busy;
	bool stopped;
	struct cmd cmd;		/* the command it runs while busy */
	bool pending;		/* a lock call of it may be queued */
	bool ring;		/* that call is a ring lock */
	bool owned;		/* its locker is process-owned */
};

static struct actor actors[NACTORS];
/* Locks made through an actor's ring, over the run. */
static unsigned long ring_locks;
static unsigned int rnd_state;
static bool verbose;
static int seed_now, step_now;
static char failure[1280];
/* Since the last check: did a lock call wait (not a try)? */
static bool waited;

static unsigned int rnd(unsigned int n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return (rnd_state >> 8) % n;
}

static int fail(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (failure[0])
		return -1;
	n = snprintf(failure, sizeof(failure), "seed %d step %d: ", seed_now,
		     step_now);
	va_start(ap, fmt);
	vsnprintf(failure + n, sizeof(failure) - n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- exclusion, from the lock table (hlock_table_check.h) ---- */

static int table_check(int fd, const char *when)
{
	char msg[TABLE_MSG_LEN];

	if (table_violation(fd, msg, sizeof(msg)) ||
	    table_blocking_violation(fd, msg, sizeof(msg)))
		return fail("%s: %s", when, msg);
	return 0;
}

static int spawn(struct actor *a)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	fflush(stdout);
	a->pid = fork();
	if (a->pid < 0)
		return -errno;
	if (!a->pid) {
		close(sv[0]);
		actor_run(sv[1]);
	}
	close(sv[1]);
	a->sock = sv[0];
	a->busy = a->stopped = a->pending = false;
	a->ring = a->owned = false;
	return 0;
}

static void send_cmd(struct actor *a, const struct cmd *c)
{
	a->cmd = *c;
	a->busy = true;
	if (c->op == OP_LOCK && c->kind != K_TRY)
		waited = true;
	if (c->op == OP_YIELD || c->op == OP_FORK || c->op == OP_SIDE ||
	    c->op == OP_STALE)
		waited = true;
	if (write(a->sock, c, sizeof(*c)) != (ssize_t)sizeof(*c))
		fail("actor %d: cannot send", (int)(a - actors));
	if (verbose)
		printf("# %d.%d actor %d: %s %s mode %d kind %d tmo %d lease %d variant %d\n",
		       seed_now, step_now, (int)(a - actors),
		       op_names[c->op], paths[c->path], c->mode, c->kind,
		       c->timeout_ms, c->lease_ms, c->variant);
}

/* Take an answer of @a, waiting at most @ms.  Return: 1, 0 (none yet). */
static int take_reply(struct actor *a, int ms, struct reply *r)
{
	struct pollfd pfd = { .fd = a->sock, .events = POLLIN };

	if (!a->busy)
		return 0;
	if (poll(&pfd, 1, ms) <= 0)
		return 0;
	if (read(a->sock, r, sizeof(*r)) != (ssize_t)sizeof(*r)) {
		fail("actor %d died", (int)(a - actors));
		a->busy = false;
		return 0;
	}
	a->busy = false;
	a->pending = r->pending;
	a->ring = r->ring;
	a->owned = r->owned;
	ring_locks += r->ringed;
	if (r->ret == INT32_MIN)
		fail("actor %d (%s): %s", (int)(a - actors),
		     op_names[a->cmd.op], r->why);
	if (verbose)
		printf("# actor %d: %s -> %d\n", (int)(a - actors),
		       op_names[a->cmd.op], r->ret);
	return 1;
}

/* Let every running actor finish what it runs (a bounded wait each). */
static int settle(void)
{
	struct reply r;
	int i;

	for (i = 0; i < NACTORS; i++) {
		if (actors[i].stopped || !actors[i].busy)
			continue;
		if (!take_reply(&actors[i], 10000, &r)) {
			show_stuck(actors[i].pid);
			return fail("actor %d stuck in %s", i,
				    op_names[actors[i].cmd.op]);
		}
	}
	return 0;
}

static uint64_t global_stats(int fd, unsigned int *out)
{
	struct hlock_stats st;

	memset(&st, 0, sizeof(st));
	if (hlock_stats(fd, HLOCK_STATS_GLOBAL, &st))
		return UINT64_MAX;
	*out = (unsigned int)st.tickets[HLOCK_TICKET_WRITE].out;
	return st.takeovers;
}

/*
 * Records in the table that @fd reads of the lockers of actor @pid (their
 * descriptions start "p<pid>."), whichever process made their last call;
 * with @pid 0, of any actor's lockers.  Or -errno.
 */
static int records_of(int fd, pid_t pid)
{
	const struct hlock_lock_record *rec;
	int i, n, mine = 0;
	char prefix[16];
	const char *why;
	size_t len;
	void *buf;

	len = (size_t)snprintf(prefix, sizeof(prefix), "p%d.", (int)pid);
	n = hlock_table_alloc(fd, &buf);
	if (n < 0)
		return n;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		why = hlock_record_why(rec);
		mine += pid ? !strncmp(why, prefix, len) :
			why[0] == 'p' && why[1] >= '0' && why[1] <= '9';
	}
	free(buf);
	return mine;
}

static uint64_t takeovers_seen;
/* Waits refused from outside (refuse_wait()), over the run. */
static unsigned long refusals;

/*
 * What a deadlock search across nodes does (HLOCK_IOC_REFUSE), from the
 * parent: a wait of @a's lockers, named by the lock table, is refused.
 * The victim's continuation runs inside the call, so the wait must be gone
 * from the table once it returns; the call fails with EDEADLK and leaves
 * the locker as it was, which the actor's own checks see.  Names gone
 * stale meanwhile refuse nothing (ESTALE, ESRCH).
 */
static void refuse_wait(int me, struct actor *a)
{
	const struct hlock_lock_record *rec;
	const struct hlock_record_ids *id;
	struct hlock_record_ids victim;
	bool found = false;
	char prefix[16];
	int i, n, ret;
	size_t len;
	void *buf;

	len = (size_t)snprintf(prefix, sizeof(prefix), "p%d.", (int)a->pid);
	n = hlock_table_ids_alloc(me, &buf);
	if (n < 0) {
		fail("table with ids: %d", n);
		return;
	}
	for (i = 0, rec = buf; i < n && !found;
	     i++, rec = hlock_record_next(rec)) {
		id = hlock_record_ids(rec);
		if (rec->state == HLOCK_STATE_GRANTED || !id ||
		    strncmp(hlock_record_why(rec), prefix, len))
			continue;
		victim = *id;
		found = true;
	}
	free(buf);
	if (!found)
		return;
	ret = hlock_refuse(me, &victim);
	if (verbose)
		printf("# seed %d step %d: refuse a wait of pid %d: %d\n",
		       seed_now, step_now, (int)a->pid, ret);
	if (ret == -ESTALE || ret == -ESRCH)
		return;
	if (ret) {
		fail("refusing a wait of pid %d: %d", (int)a->pid, ret);
		return;
	}
	refusals++;
	n = hlock_table_ids_alloc(me, &buf);
	if (n < 0) {
		fail("table with ids: %d", n);
		return;
	}
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		id = hlock_record_ids(rec);
		if (id && id->serial == victim.serial &&
		    id->wait_seq == victim.wait_seq &&
		    rec->state != HLOCK_STATE_GRANTED) {
			fail("a refused wait of pid %d on \"%s\" is still there",
			     (int)a->pid, hlock_record_path(rec));
			break;
		}
	}
	free(buf);
}

static int check_all(int me)
{
	unsigned int out = 0, tickets = 0;
	struct cmd c = { .op = OP_CHECK };
	bool all_running = true;
	uint64_t takeovers;
	struct reply r;
	int i, attempt;

	if (settle())
		return -1;
	/*
	 * Lease works settle: a claimed lease is taken over, and its
	 * tickets given back, by a kworker, on its own time (a slow VM can
	 * take a while).  Look again until the counts agree, for 5 s at
	 * most: only a count that never agrees is a leak.
	 */
	for (attempt = 0; ; attempt++) {
		usleep(attempt ? 50000 : 20000);
		out = 0;
		tickets = 0;
		all_running = true;
		for (i = 0; i < NACTORS; i++) {
			if (actors[i].stopped) {
				all_running = false;
				continue;
			}
			send_cmd(&actors[i], &c);
			if (!take_reply(&actors[i], 10000, &r)) {
				show_stuck(actors[i].pid);
				return fail("actor %d does not answer the check",
					    i);
			}
			if (failure[0])
				return -1;
			tickets += r.ticket;
			if (r.pending)
				waited = true;
		}
		takeovers = global_stats(me, &out);
		if (!all_running || out == tickets || attempt == 100)
			break;
	}
	if (all_running && out != tickets)
		return fail("%u write tickets out, the actors hold %u", out,
			    tickets);
	if (table_check(me, "check"))
		return -1;
	if (takeovers != takeovers_seen && !waited)
		return fail("%llu takeovers with no lock call waiting",
			    (unsigned long long)(takeovers - takeovers_seen));
	takeovers_seen = takeovers;
	waited = false;
	for (i = 0; i < NACTORS; i++)
		if (actors[i].pending)
			waited = true;
	return 0;
}

static int kill_actor(int me, struct actor *a)
{
	int64_t end = now_ns() + SETTLE_NS;
	int status, n;
	/*
	 * Children of a fork or side op, and a ring lock in flight (io_uring
	 * lets its file go after the ring's process died), may keep a locker
	 * open a while: its last close releases it.  Not the ring of a
	 * process-owned locker's owner: its exit withdraws the ring lock and
	 * releases everything before it can be reaped.
	 */
	bool ring = ((a->pending && a->ring) ||
		     (a->busy && a->cmd.op == OP_LOCK &&
		      a->cmd.kind == K_RING)) &&
		    (!a->owned || (a->busy && a->cmd.op == OP_OWNER));
	bool children = (a->busy && (a->cmd.op == OP_FORK ||
				     a->cmd.op == OP_SIDE)) || ring;

	kill(a->pid, SIGKILL);
	if (a->stopped)
		kill(a->pid, SIGCONT);
	close(a->sock);
	if (waitpid(a->pid, &status, 0) != a->pid)
		return fail("waitpid");
	n = records_of(me, a->pid);
	while (n > 0 && children && now_ns() < end) {
		usleep(10000);
		n = records_of(me, a->pid);
	}
	if (n)
		return fail("%d records of killed pid %d", n, (int)a->pid);
	return spawn(a);
}

static void random_cmd(struct actor *a, struct cmd *c)
{
	static const int modes[] = { HLOCK_IS, HLOCK_IX, HLOCK_S, HLOCK_SIX,
				     HLOCK_X };
	unsigned int r = rnd(100);

	memset(c, 0, sizeof(*c));
	c->path = 1 + (int)rnd(NPATHS - 1);
	if (!rnd(12))
		c->path = 0;
	c->mode = modes[rnd(5)];
	if (!rnd(10)) {
		r = rnd(100);
		c->seed = rnd(1u << 30);
		if (r < 30) {
			c->op = OP_OWNER;
			c->variant = rnd(3) != 0;
		} else if (r < 52) {
			c->op = OP_THREAD;
			c->variant = (int)rnd(3);
		} else if (r < 80) {
			c->op = OP_FORK;
			c->variant = (int)rnd(3);
		} else if (r < 90) {
			c->op = OP_SIDE;
			c->variant = (int)rnd(4);
		} else {
			c->op = OP_STALE;
		}
		return;
	}
	if (a->pending && r < 30) {
		c->op = OP_COLLECT;
		c->timeout_ms = rnd(3) ? 0 : 20 + (int)rnd(60);
	} else if (r < 45) {
		c->op = OP_LOCK;
		c->kind = (int)rnd(4);
		c->timeout_ms = 5 + (int)rnd(80);
		c->lease_ms = rnd(2) ? 0 : rnd(4) ? 10 + (int)rnd(60) : 10000;
		/* A ring lock has no lease; a third of them wait forever. */
		if (c->kind == K_RING) {
			c->lease_ms = 0;
			if (!rnd(3))
				c->timeout_ms = 0;
		}
	} else if (r < 65) {
		c->op = OP_UNLOCK;
	} else if (r < 72) {
		c->op = OP_DOWNGRADE;
	} else if (r < 82) {
		c->op = OP_YIELD;
		c->timeout_ms = rnd(4) ? 20 + (int)rnd(150) : 0;
	} else if (r < 92) {
		c->op = OP_RENEW;
	} else {
		c->op = OP_REOPEN;
	}
}

static int run_seed(int me, int seed, int steps)
{
	struct reply r;
	struct cmd c;
	int i, n, ret = 0;
	char buf[16];
	int64_t end;

	seed_now = seed;
	rnd_state = (unsigned int)seed * 2654435761u;
	failure[0] = 0;
	waited = false;
	snprintf(buf, sizeof(buf), "%u", 1 + rnd(2));
	if (write_file_str(WRITE_TICKETS, buf, 0))
		return fail("cannot set write_tickets");
	for (i = 0; i < NACTORS; i++)
		if (spawn(&actors[i]))
			return fail("cannot fork");
	takeovers_seen = global_stats(me, &(unsigned int){ 0 });
	for (step_now = 0; step_now < steps && !failure[0]; step_now++) {
		struct actor *a = &actors[rnd(NACTORS)];
		unsigned int what = rnd(100);

		for (i = 0; i < NACTORS; i++)
			take_reply(&actors[i], 0, &r);
		if (what < 3) {
			/* SIGSTOP an idle actor, or SIGCONT a stopped one. */
			if (a->stopped) {
				kill(a->pid, SIGCONT);
				a->stopped = false;
			} else if (!a->busy) {
				kill(a->pid, SIGSTOP);
				a->stopped = true;
			}
		} else if (what < 5) {
			kill_actor(me, a);
		} else if (what < 9 && (a->busy || a->pending)) {
			refuse_wait(me, a);
		} else if (!a->busy && !a->stopped) {
			random_cmd(a, &c);
			send_cmd(a, &c);
			take_reply(a, 1 + (int)rnd(3), &r);
		}
		if (step_now % CHECK_EVERY == CHECK_EVERY - 1)
			check_all(me);
		else
			table_check(me, "step");
	}
	for (i = 0; i < NACTORS; i++)
		if (actors[i].stopped) {
			kill(actors[i].pid, SIGCONT);
			actors[i].stopped = false;
		}
	if (!failure[0])
		check_all(me);
	for (i = 0; i < NACTORS; i++) {
		c.op = OP_EXIT;
		/* One that does not finish is killed: its records go too. */
		if ((actors[i].busy && !take_reply(&actors[i], 10000, &r)) ||
		    write(actors[i].sock, &c, sizeof(c)) < 0)
			kill(actors[i].pid, SIGKILL);
		close(actors[i].sock);
		waitpid(actors[i].pid, NULL, 0);
		/*
		 * Its ring lets a lock in flight go a while after its death,
		 * unless the locker is the process's (kill_actor()).
		 */
		end = now_ns() + SETTLE_NS;
		while (!failure[0] && actors[i].ring && !actors[i].owned &&
		       records_of(me, actors[i].pid) && now_ns() < end)
			usleep(10000);
		if (!failure[0] && records_of(me, actors[i].pid))
			fail("actor %d left records at exit", i);
	}
	/*
	 * Nor does a child of an actor killed earlier keep any: the
	 * bounded loops of fork and side children end well within this.
	 */
	end = now_ns() + SETTLE_NS;
	while ((n = records_of(me, 0)) > 0 && now_ns() < end)
		usleep(10000);
	if (!failure[0] && n)
		fail("%d records outlive the actors", n);
	if (failure[0])
		ret = -1;
	write_file_str(WRITE_TICKETS, "0", 0);
	return ret;
}

int main(int argc, char **argv)
{
	int seeds = test_scaled(12, 3), steps = test_scaled(400, 100);
	const char *one = getenv("HLOCK_INTERACT_SEED");
	int me, seed, first = 1, passed = 0, failed = 0;
	long shuts;

	if (argc > 1)
		seeds = atoi(argv[1]);
	if (argc > 2)
		steps = atoi(argv[2]);
	if (argc > 3)
		first = atoi(argv[3]);
	if (argc > 4 && !strcmp(argv[4], "-v"))
		verbose = true;
	if (one) {
		first = atoi(one);
		seeds = 1;
	}
	signal(SIGPIPE, SIG_IGN);
	printf("TAP version 13\n1..%d\n", seeds);
	if (!have_device()) {
		for (seed = first; seed < first + seeds; seed++)
			printf("ok %d # SKIP no %s\n", seed - first + 1,
			       HLOCK_DEVICE);
		printf("# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:%d error:0\n",
		       seeds);
		return 0;
	}
	me = hlock_open();
	if (me < 0 || access(WRITE_TICKETS, W_OK)) {
		printf("Bail out! no locker or no write_tickets parameter\n");
		return 1;
	}
	printf("# %d seeds of %d steps, %d actors, checks every %d steps\n",
	       seeds, steps, NACTORS, CHECK_EVERY);
	shuts = debugfs_figure("fast_shuts");
	for (seed = first; seed < first + seeds; seed++) {
		if (run_seed(me, seed, steps)) {
			printf("# FAIL %s\n", failure);
			printf("# reproduce: %s 1 %d %d -v\n", argv[0], steps,
			       seed);
			printf("not ok %d seed %d\n", seed - first + 1, seed);
			failed++;
		} else {
			printf("ok %d seed %d\n", seed - first + 1, seed);
			passed++;
		}
		fflush(stdout);
	}
	printf("# %lu waits refused from outside, %lu locks through io_uring%s\n",
	       refusals, ring_locks,
	       ring_locks ? "" : " (no ring: those were timed ioctls)");
	/*
	 * The fast path and the switch ran: grants made on idle heads by
	 * one exchange, which others' requests then met and put on the
	 * heads (debugfs' count, when mounted).
	 */
	if (shuts >= 0) {
		shuts = debugfs_figure("fast_shuts") - shuts;
		printf("# %ld fast holders met by a request and put on their heads\n",
		       shuts);
		if (!shuts && !failed) {
			printf("# FAIL no fast holder was met: the fast path or the switch never ran\n");
			failed++;
		}
	}
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       passed, failed);
	return failed ? 1 : 0;
}
