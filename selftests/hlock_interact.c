// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_interact: where features meet.  Seeded random sequences over a few
 * lockers and paths mix try, timed and asynchronous locks, unlock,
 * downgrade, yield, leases with expiry and renewal, a write-ticket pool of
 * one or two, SIGSTOP/SIGCONT, close and SIGKILL; invariants are checked
 * from the lock table and from each locker's own view every few steps.
 *
 * Each locker lives in an actor, a child process that runs one command at
 * a time for the parent and answers when it is done, so that a blocking
 * call (a timed lock, a yield) waits while the others go on.  Every
 * CHECK_EVERY steps the parent lets every actor finish and checks:
 *
 *  - each actor (its own view, against the lock table):
 *    - a path it locked and did not unlock is held, or it was told it lost
 *      it (POLLPRI, then ESTALE once);
 *    - the table's records of its process are exactly the paths held() says
 *      it holds: nothing left behind by a locker it closed;
 *    - a path it holds under a lease shows the lease in the table;
 *    - it holds a write ticket only while it holds something or has a lock
 *      call in flight;
 *  - globally: the write pool's tickets out are the actors' tickets; the
 *    takeovers counted since the last check had a waiter to take them (a
 *    try-lock never takes a lease over); a killed actor leaves no record.
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
#include <sys/socket.h>
#include <sys/wait.h>

#include "hlock.h"
#include "hlock_helpers.h"

#define NACTORS		4
#define CHECK_EVERY	8
#define WRITE_TICKETS	"/sys/module/hlock/parameters/write_tickets"

static const char *const paths[] = { "", "a", "a/b", "a/c", "d", "d/e" };
#define NPATHS	(int)(sizeof(paths) / sizeof(paths[0]))

enum op {
	OP_LOCK, OP_COLLECT, OP_UNLOCK, OP_DOWNGRADE, OP_YIELD, OP_RENEW,
	OP_REOPEN, OP_CHECK, OP_EXIT,
};

static const char *const op_names[] = {
	"lock", "collect", "unlock", "downgrade", "yield", "renew", "reopen",
	"check", "exit",
};

enum kind { K_TRY, K_TIMED, K_ASYNC };

struct cmd {
	int op;
	int path;
	int mode;
	int kind;
	int timeout_ms;
	int lease_ms;
};

struct reply {
	int ret;
	/* OP_CHECK: whether the actor holds a write ticket. */
	int ticket;
	/* OP_CHECK: whether a lock call of the actor is queued. */
	int pending;
	char why[1024];
};

/* ------------------------------------------------------------------ */
/* The actor: one locker, its own model of what it holds. */

struct model {
	int count[NPATHS];	/* acquisitions it made and did not undo */
	bool leased[NPATHS];	/* it asked for a lease on the path */
	int pending;		/* path of its queued async call, or -1 */
	int pending_lease;
};

static int a_fd;
static struct model a_m;
/* The actor's last commands and their results, for a failure's report. */
#define HISTORY	8
static char a_hist[HISTORY][48];
static unsigned int a_nhist;

static void model_clear(void)
{
	memset(&a_m, 0, sizeof(a_m));
	a_m.pending = -1;
}

static void model_grant(int path, int lease_ms)
{
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
	int q;

	a_m.count[path] = 0;
	a_m.leased[path] = false;
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
	pid_t me = getpid();
	int i, n, mine = 0, p;
	void *buf;

	*leased = 0;
	memset(lease_of, 0, NPATHS * sizeof(bool));
	n = hlock_table_alloc(a_fd, &buf);
	if (n < 0)
		return n;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		const struct hlock_record_ext *ext = hlock_record_ext(rec);

		if (rec->pid != (uint32_t)me ||
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
		if (!a_m.count[p] || hlock_held(a_fd, paths[p]) > 0)
			continue;
		told = poll_events(a_fd) & POLLPRI;
		if (!told) {
			snprintf(r->why, sizeof(r->why),
				 "lost \"%s\" (%d acquisitions) untold",
				 paths[p], a_m.count[p]);
			return 1;
		}
		ret = hlock_unlock(a_fd, paths[p]);
		if (ret != -ESTALE && ret != -ENOENT) {
			snprintf(r->why, sizeof(r->why),
				 "lost \"%s\": unlock says %d", paths[p], ret);
			return 1;
		}
		model_taken(p);
	}
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

static int actor_do(const struct cmd *c, struct reply *r)
{
	int ret, p;

	switch (c->op) {
	case OP_LOCK:
		if (a_m.pending >= 0)
			return -EBUSY;
		ret = hlock_lock_lease(a_fd, paths[c->path], c->mode,
				       c->kind == K_ASYNC ? HLOCK_F_ASYNC : 0,
				       c->kind == K_TRY ? 0 :
				       c->kind == K_TIMED ?
				       c->timeout_ms * MS : -1,
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
		if (a_m.pending < 0)
			return -ENOENT;
		ret = hlock_wait(a_fd, c->timeout_ms * MS);
		if (ret == -EAGAIN || ret == -ETIMEDOUT || ret == -EINTR)
			return ret;
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
		/* The unlock of the path of the call in flight cancels it. */
		if (a_m.pending == c->path && ret >= 0)
			a_m.pending = -1;
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
		close(a_fd);
		a_fd = hlock_open();
		model_clear();
		return a_fd < 0 ? a_fd : 0;
	case OP_CHECK:
		return actor_check(r) ? INT32_MIN : 0;
	}
	return -EINVAL;
}

static void actor_run(int sock)
{
	struct cmd c;
	struct reply r;

	a_fd = hlock_open();
	model_clear();
	while (read(sock, &c, sizeof(c)) == (ssize_t)sizeof(c)) {
		memset(&r, 0, sizeof(r));
		if (c.op == OP_EXIT)
			_exit(0);
		r.ret = actor_do(&c, &r);
		r.pending = a_m.pending >= 0;
		snprintf(a_hist[a_nhist++ % HISTORY], sizeof(a_hist[0]),
			 "%s \"%s\" %d/%d/%d/%d=%d", op_names[c.op],
			 paths[c.path], c.mode, c.kind, c.timeout_ms,
			 c.lease_ms, r.ret);
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
};

static struct actor actors[NACTORS];
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
	return 0;
}

static void send_cmd(struct actor *a, const struct cmd *c)
{
	a->cmd = *c;
	a->busy = true;
	if (c->op == OP_LOCK && c->kind != K_TRY)
		waited = true;
	if (c->op == OP_YIELD)
		waited = true;
	if (write(a->sock, c, sizeof(*c)) != (ssize_t)sizeof(*c))
		fail("actor %d: cannot send", (int)(a - actors));
	if (verbose)
		printf("# %d.%d actor %d: %s %s mode %d kind %d tmo %d lease %d\n",
		       seed_now, step_now, (int)(a - actors),
		       op_names[c->op], paths[c->path], c->mode, c->kind,
		       c->timeout_ms, c->lease_ms);
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
		if (!take_reply(&actors[i], 10000, &r))
			return fail("actor %d stuck in %s", i,
				    op_names[actors[i].cmd.op]);
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

/* Records of @pid in the table that @fd reads. */
static int records_of(int fd, pid_t pid)
{
	const struct hlock_lock_record *rec;
	int i, n, mine = 0;
	void *buf;

	n = hlock_table_alloc(fd, &buf);
	if (n < 0)
		return n;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec))
		mine += rec->pid == (uint32_t)pid;
	free(buf);
	return mine;
}

static uint64_t takeovers_seen;

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
			if (!take_reply(&actors[i], 10000, &r))
				return fail("actor %d does not answer the check",
					    i);
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
	int status, n;

	kill(a->pid, SIGKILL);
	if (a->stopped)
		kill(a->pid, SIGCONT);
	close(a->sock);
	if (waitpid(a->pid, &status, 0) != a->pid)
		return fail("waitpid");
	n = records_of(me, a->pid);
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
	if (a->pending && r < 30) {
		c->op = OP_COLLECT;
		c->timeout_ms = rnd(3) ? 0 : 20 + (int)rnd(60);
	} else if (r < 45) {
		c->op = OP_LOCK;
		c->kind = (int)rnd(3);
		c->timeout_ms = 5 + (int)rnd(80);
		c->lease_ms = rnd(2) ? 0 : rnd(4) ? 10 + (int)rnd(60) : 10000;
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
	int i, ret = 0;
	char buf[16];

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
		} else if (!a->busy && !a->stopped) {
			random_cmd(a, &c);
			send_cmd(a, &c);
			take_reply(a, 1 + (int)rnd(3), &r);
		}
		if (step_now % CHECK_EVERY == CHECK_EVERY - 1)
			check_all(me);
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
		if (!failure[0] && records_of(me, actors[i].pid))
			fail("actor %d left records at exit", i);
	}
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
	for (seed = first; seed < first + seeds; seed++) {
		if (run_seed(me, seed, steps)) {
			printf("# %s\n", failure);
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
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       passed, failed);
	return failed ? 1 : 0;
}
