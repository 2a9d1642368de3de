// SPDX-License-Identifier: GPL-2.0
/*
 * hlock-uring-demo: one event loop holds hierarchical locks for many
 * simulated clients through a single io_uring.
 *
 * Each client is a locker of its own (its own open of /dev/hlock) and runs
 * a script of transactions drawn from the seed: IX on the database "db"
 * and S or X on one to three of its collections, taken in ascending order
 * so that no cycle of waits can form, or now and then S or X on the whole
 * database.  It holds them for a few ticks of the loop, sometimes
 * downgrades an X to S for a few ticks more, and unlocks them in reverse.
 * Some collection locks carry a short timeout; some are withdrawn, by an
 * unlock of their path, once they have waited a few ticks.
 *
 * Every lock, unlock and downgrade is an SQE of the one ring, at most one
 * lock in flight per client, and each completion goes to its client's
 * state machine by user_data.  A tick is one pass of the loop: each client
 * makes its next move, the ring is submitted, the CQEs are dispatched.
 * The loop sleeps in the ring only when every client waits for a CQE.
 *
 * At the end it prints what was granted, how often a lock waited and the
 * most locks waiting at once, and checks what it can: one CQE per request,
 * no result but the expected ones, the kernel's count of collection locks
 * equal to the requests made, and every locker holding nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "hlock.h"
#include "hlock_uring.h"
/* Before cli_common.h, whose usage_error() prints it. */
#define PROG		"hlock-uring-demo"
#include "cli_common.h"

#define MAX_CLIENTS	10000
#define MAX_COLLS	64
#define MAX_STEPS	4		/* the database and 3 collections */
#define MAX_HOLD	4		/* ticks a transaction holds, at most */
#define MAX_THINK	16		/* ticks between transactions, at most */
#define PATIENCE	3		/* ticks an impatient lock waits */
#define SHORT_TIMEOUT	(2 * 1000000LL)	/* ns, for the timed locks */
#define STALL_SECONDS	10		/* no CQE for this long: a lost one */
#define SQ_ENTRIES	256

/* What a request is, in the low bits of its user_data. */
enum op { OP_LOCK, OP_UNLOCK, OP_DOWNGRADE, OP_WITHDRAW, NR_OPS };
#define OP_BITS		2

static const char *const op_names[NR_OPS] = {
	"lock", "unlock", "downgrade", "withdraw (unlock)",
};

enum phase { P_IDLE, P_LOCK, P_HOLD, P_UNLOCK, P_DONE };

struct step {
	const char *path;
	int mode;
	int64_t timeout_ns;	/* negative: as long as needed */
	bool downgrade;		/* X lowered to S before the release */
	bool impatient;		/* withdrawn after PATIENCE ticks of waiting */
};

struct client {
	int fd;
	uint32_t rng;
	int txns_left;
	enum phase phase;
	struct step step[MAX_STEPS];
	int nsteps;
	int held;		/* steps granted, from step[0] on */
	int hold;		/* ticks left to hold them, or to think */
	int waited;		/* ticks the lock in flight has waited */
	unsigned int pending;	/* 1 << op for each request in flight */
	const char *path[NR_OPS];	/* what each request names */
	bool withdrawn;		/* the lock in flight is being withdrawn */
	bool abort;		/* give back what is held, end the transaction */
};

static struct io_uring ring;
static struct client *clients;
static int nr_clients = 1000, nr_txns = 20, nr_colls = 16;
static unsigned int seed = 1;
static char coll_paths[MAX_COLLS][16];

/* What happened, for the summary and the checks. */
static long submitted[NR_OPS], completed[NR_OPS], granted[HLOCK_NR_MODES];
static long coll_locks, timeouts, cancelled, granted_first, downgrades;
static long unexpected, max_waiting, ticks;
static int nr_done;

/* xorshift32: each client's script depends only on the seed and its index. */
static uint32_t rnd(struct client *c, uint32_t n)
{
	uint32_t x = c->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	c->rng = x;
	return x % n;
}

static void new_txn(struct client *c)
{
	uint32_t r = rnd(c, 1000);
	int k, want;

	memset(c->step, 0, sizeof(c->step));
	c->held = 0;
	c->nsteps = 1;
	c->step[0].path = "db";
	c->step[0].timeout_ns = -1;
	if (r < 4) {
		/* A scan (S) or a rebuild (X) of the whole database. */
		c->step[0].mode = r < 1 ? HLOCK_X : HLOCK_S;
		return;
	}
	c->step[0].mode = HLOCK_IX;
	want = 1 + rnd(c, nr_colls < 3 ? nr_colls : 3);
	/* Distinct collections in ascending order (selection sampling). */
	for (k = 0; k < nr_colls && c->nsteps <= want; k++) {
		struct step *s = &c->step[c->nsteps];

		if (rnd(c, nr_colls - k) >= (uint32_t)(want + 1 - c->nsteps))
			continue;
		s->path = coll_paths[k];
		s->mode = rnd(c, 10) < 6 ? HLOCK_S : HLOCK_X;
		s->timeout_ns = -1;
		r = rnd(c, 100);
		if (r < 10)
			s->timeout_ns = SHORT_TIMEOUT;
		else if (r < 15)
			s->impatient = true;
		s->downgrade = s->mode == HLOCK_X && rnd(c, 5) == 0;
		c->nsteps++;
	}
}

static void submit(struct client *c, enum op op, const char *path, int mode,
		   int64_t timeout_ns)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	int ret;

	if (!sqe) {
		/* The SQ ring is full: hand it to the kernel and go on. */
		ret = io_uring_submit(&ring);
		if (ret < 0)
			cli_die(EX_OSERR, "io_uring_submit: %s", strerror(-ret));
		sqe = io_uring_get_sqe(&ring);
		if (!sqe)
			cli_die(EX_SOFTWARE, "no SQE after a submit");
	}
	if (op == OP_LOCK)
		hlock_prep_lock(sqe, c->fd, path, mode, 0, timeout_ns);
	else if (op == OP_DOWNGRADE)
		hlock_prep_downgrade(sqe, c->fd, path, mode);
	else
		hlock_prep_unlock(sqe, c->fd, path);
	io_uring_sqe_set_data64(sqe, (uint64_t)(c - clients) << OP_BITS | op);
	c->pending |= 1U << op;
	c->path[op] = path;
	submitted[op]++;
}

/* One tick of a client that has nothing in flight, or a waiting lock. */
static void move(struct client *c)
{
	struct step *s = &c->step[c->held];
	int i;

	if (c->pending) {
		if ((c->pending & 1U << OP_LOCK) && s->impatient &&
		    !c->withdrawn && ++c->waited > PATIENCE) {
			c->withdrawn = true;
			submit(c, OP_WITHDRAW, s->path, 0, 0);
		}
		return;
	}
	if (c->abort) {
		c->abort = false;
		c->phase = P_UNLOCK;
	}
	switch (c->phase) {
	case P_IDLE:
		if (c->hold > 0 && --c->hold > 0)
			return;
		if (!c->txns_left) {
			c->phase = P_DONE;
			nr_done++;
			return;
		}
		c->txns_left--;
		new_txn(c);
		c->phase = P_LOCK;
		/* fallthrough */
	case P_LOCK:
		if (c->held < c->nsteps) {
			s = &c->step[c->held];
			c->waited = 0;
			coll_locks += c->held > 0;
			submit(c, OP_LOCK, s->path, s->mode, s->timeout_ns);
			return;
		}
		c->phase = P_HOLD;
		c->hold = 1 + rnd(c, MAX_HOLD);
		return;
	case P_HOLD:
		if (--c->hold > 0)
			return;
		for (i = 1; i < c->held; i++) {
			if (!c->step[i].downgrade)
				continue;
			c->step[i].downgrade = false;
			submit(c, OP_DOWNGRADE, c->step[i].path, HLOCK_S, 0);
			return;
		}
		c->phase = P_UNLOCK;
		/* fallthrough */
	case P_UNLOCK:
		if (c->held) {
			submit(c, OP_UNLOCK, c->step[c->held - 1].path, 0, 0);
			return;
		}
		/* The client thinks before its next transaction. */
		c->phase = P_IDLE;
		c->hold = 1 + rnd(c, MAX_THINK);
		return;
	case P_DONE:
		return;
	}
}

/* The CQE of request @op of client @c; counts it and checks its result. */
static void complete(struct client *c, enum op op, int res)
{
	struct step *s = &c->step[c->held];
	bool ok = !res;

	if (!(c->pending & 1U << op)) {
		fprintf(stderr, PROG ": client %ld: a %s CQE with no %s in flight\n",
			(long)(c - clients), op_names[op], op_names[op]);
		unexpected++;
		return;
	}
	c->pending &= ~(1U << op);
	completed[op]++;
	switch (op) {
	case OP_LOCK:
		if (!res) {
			granted[s->mode]++;
			/* A grant that beat its withdrawal is undone by it. */
			if (c->withdrawn)
				granted_first++;
			else
				c->held++;
		} else if (res == -ETIMEDOUT && s->timeout_ns >= 0) {
			timeouts++;
			ok = true;
		} else if (res == -ECANCELED && c->withdrawn) {
			cancelled++;
			ok = true;
		}
		c->abort |= res != 0;
		break;
	case OP_DOWNGRADE:
		downgrades++;
		c->hold = 1 + rnd(c, MAX_HOLD);
		break;
	case OP_UNLOCK:
		c->held--;
		break;
	default:
		break;
	}
	if (c->withdrawn && !(c->pending & (1U << OP_LOCK | 1U << OP_WITHDRAW))) {
		c->withdrawn = false;
		c->abort = true;
	}
	if (!ok) {
		fprintf(stderr, PROG ": client %ld: %s \"%s\": %d (%s)\n",
			(long)(c - clients), op_names[op], c->path[op], res,
			res < 0 ? strerror(-res) : "acquisitions left");
		unexpected++;
	}
}

static void run(void)
{
	struct __kernel_timespec stall = { .tv_sec = STALL_SECONDS };
	struct io_uring_cqe *cqe;
	unsigned int head, seen;
	long idle, waiting;
	int i, ret;

	while (nr_done < nr_clients) {
		idle = 0;
		waiting = 0;
		for (i = 0; i < nr_clients; i++) {
			struct client *c = &clients[i];

			/* A lock still in flight one tick on waits. */
			waiting += !!(c->pending & 1U << OP_LOCK);
			move(c);
			idle += !c->pending && c->phase != P_DONE;
		}
		if (waiting > max_waiting)
			max_waiting = waiting;
		ret = io_uring_submit(&ring);
		if (ret < 0)
			cli_die(EX_OSERR, "io_uring_submit: %s", strerror(-ret));
		/* Sleep only when every client waits for a CQE. */
		if (!idle && nr_done < nr_clients) {
			ret = io_uring_wait_cqe_timeout(&ring, &cqe, &stall);
			if (ret == -ETIME)
				cli_die(EXIT_FAILURE, "no CQE for %d s with requests in flight",
				    STALL_SECONDS);
			if (ret < 0 && ret != -EINTR)
				cli_die(EX_OSERR, "io_uring_wait_cqe: %s",
				    strerror(-ret));
		}
		seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			uint64_t data = io_uring_cqe_get_data64(cqe);

			if (data >> OP_BITS >= (uint64_t)nr_clients)
				cli_die(EXIT_FAILURE, "a CQE with user_data %#llx",
				    (unsigned long long)data);
			complete(&clients[data >> OP_BITS],
				 data & ((1U << OP_BITS) - 1), cqe->res);
			seen++;
		}
		io_uring_cq_advance(&ring, seen);
		ticks++;
	}
}

static bool check(bool ok, const char *what)
{
	printf("check: %s: %s\n", what, ok ? "ok" : "FAILED");
	return ok;
}

/* Whether the module keeps statistics (its parameter "stats"). */
static bool stats_on(void)
{
	FILE *f = fopen("/sys/module/hlock/parameters/stats", "r");
	int c = f ? fgetc(f) : 'Y';

	if (f)
		fclose(f);
	return c != 'N' && c != '0';
}

/* After the run: the checks, and the kernel's count of waits. */
static bool verify(void)
{
	uint64_t waits[HLOCK_NR_LEVELS] = { 0 }, kernel_colls = 0;
	long holding = 0, stray = 0, lost = 0;
	struct io_uring_cqe *cqe;
	struct hlock_stats st;
	char what[128];
	bool ok = true;
	int i, k, m, l, ret;

	for (i = 0; i < NR_OPS; i++)
		lost += submitted[i] - completed[i];
	/* Nothing in flight: a CQE still in the ring is one too many. */
	stray = io_uring_peek_cqe(&ring, &cqe) == 0;
	for (i = 0; i < nr_clients; i++) {
		int fd = clients[i].fd;

		ret = hlock_stats(fd, HLOCK_STATS_LOCKER, &st);
		if (ret)
			cli_die(EX_OSERR, "hlock_stats: %s", strerror(-ret));
		for (l = 0; l < HLOCK_NR_LEVELS; l++)
			for (m = 0; m < HLOCK_NR_MODES; m++)
				waits[l] += st.level[l].wait_count[m];
		kernel_colls += st.level[HLOCK_LEVEL_COLLECTION].acquire_count[HLOCK_S] +
				st.level[HLOCK_LEVEL_COLLECTION].acquire_count[HLOCK_X];
		holding += hlock_held(fd, "") != HLOCK_NL;
		holding += hlock_held(fd, "db") != HLOCK_NL;
		for (k = 0; k < nr_colls; k++)
			holding += hlock_held(fd, coll_paths[k]) != HLOCK_NL;
	}
	printf("  waited:    %llu times on \"db\", %llu on collections (the lockers' statistics);\n"
	       "             at most %ld locks waiting at once\n",
	       (unsigned long long)waits[HLOCK_LEVEL_DATABASE],
	       (unsigned long long)waits[HLOCK_LEVEL_COLLECTION], max_waiting);
	ok &= check(!lost && !stray, "every request got exactly one CQE");
	ok &= check(!unexpected, "every result was an expected one");
	snprintf(what, sizeof(what),
		 "the kernel counted %llu collection locks, as many as submitted",
		 (unsigned long long)kernel_colls);
	if (stats_on())
		ok &= check(kernel_colls == (uint64_t)coll_locks, what);
	else
		printf("check: the kernel's count of locks: skipped (stats=0)\n");
	ok &= check(!holding, "every locker holds nothing");
	return ok;
}

static void setup(void)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE };
	struct hlock_info info;
	struct rlimit rl;
	int i, ret;

	/* A descriptor per client, the ring's and a few. */
	if (getrlimit(RLIMIT_NOFILE, &rl))
		cli_die(EX_OSERR, "getrlimit: %s", strerror(errno));
	if (rl.rlim_cur < (rlim_t)nr_clients + 16) {
		rl.rlim_cur = rl.rlim_max;
		if (rl.rlim_cur < (rlim_t)nr_clients + 16 ||
		    setrlimit(RLIMIT_NOFILE, &rl))
			cli_die(EX_OSERR, "%d clients need %d descriptors; the limit is %llu",
			    nr_clients, nr_clients + 16,
			    (unsigned long long)rl.rlim_max);
	}
	for (i = 0; i < nr_colls; i++)
		snprintf(coll_paths[i], sizeof(coll_paths[i]), "db/c%d", i);
	clients = calloc(nr_clients, sizeof(*clients));
	if (!clients)
		cli_die(EX_OSERR, "out of memory");
	for (i = 0; i < nr_clients; i++) {
		struct client *c = &clients[i];

		ret = cli_open(PROG, &c->fd);
		if (ret)
			exit(ret);
		c->rng = (seed ^ 0x9e3779b9U * (i + 1)) | 1;
		c->txns_left = nr_txns;
	}
	ret = hlock_info(clients[0].fd, &info);
	if (ret)
		cli_die(EX_OSERR, "hlock_info: %s", strerror(-ret));
	if (!(info.features & HLOCK_FEAT_URING))
		cli_die(EX_UNAVAILABLE, "this hlock module takes no io_uring commands (no HLOCK_FEAT_URING)");
	/* Room for every client's lock and withdrawal at once. */
	p.cq_entries = 2 * nr_clients > 2 * SQ_ENTRIES ? 2 * nr_clients :
							2 * SQ_ENTRIES;
	ret = io_uring_queue_init_params(SQ_ENTRIES, &ring, &p);
	if (ret)
		cli_die(ret == -EPERM || ret == -ENOSYS ? EX_UNAVAILABLE : EX_OSERR,
		    "io_uring_queue_init: %s", strerror(-ret));
}

static void usage_lines(FILE *f)
{
	fputs("Usage:\n"
	      " " PROG " [-n clients] [-t transactions] [-c collections] [-s seed]\n",
	      f);
}

static void __attribute__((noreturn)) help(void)
{
	usage_lines(stdout);
	fputs("\n"
"One event loop holds hierarchical locks from " HLOCK_DEVICE " for many\n"
"simulated clients, each a locker of its own, every lock, unlock and\n"
"downgrade going through a single io_uring.  A client's transactions take\n"
"IX on \"db\" and S or X on 1 to 3 of db/c0, db/c1, ... (some with a 2 ms\n"
"timeout, some withdrawn by an unlock after waiting 3 ticks, some X\n"
"downgraded to S), or S or X on the whole of \"db\", and hold them 1 to 4\n"
"ticks.  At the end it prints the grants, the waits and the most locks\n"
"waiting at once, and checks that each request got one CQE with an\n"
"expected result, that the kernel counted the collection locks submitted,\n"
"and that no locker holds anything.\n"
"\n"
"Options:\n"
" -n, --clients <n>        simulated clients (default 1000)\n"
" -t, --transactions <n>   transactions per client (default 20)\n"
" -c, --collections <n>    collections in \"db\" (default 16, at most 64)\n"
" -s, --seed <n>           seed of the clients' scripts (default 1)\n"
" -h, --help               display this help\n"
"\n"
"Exit status: 0 all checks passed; 1 a check failed, or no CQE came for\n"
"10 s; 64 usage error; 69 " HLOCK_DEVICE " or its io_uring support\n"
"unavailable; 71 system error.\n", stdout);
	exit(0);
}

static long num_arg(const char *s, const char *what, long min, long max)
{
	long v;

	if (!cli_long(s, min, max, &v))
		usage_error("invalid %s '%s' (expected %ld to %ld)", what, s,
			    min, max);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "clients",		required_argument,	NULL, 'n' },
		{ "transactions",	required_argument,	NULL, 't' },
		{ "collections",	required_argument,	NULL, 'c' },
		{ "seed",		required_argument,	NULL, 's' },
		{ "help",		no_argument,		NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct timespec t0, t1;
	int opt, i;
	bool ok;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "n:t:c:s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			nr_clients = num_arg(optarg, "client count", 1, MAX_CLIENTS);
			break;
		case 't':
			nr_txns = num_arg(optarg, "transaction count", 0, 1000000);
			break;
		case 'c':
			nr_colls = num_arg(optarg, "collection count", 1, MAX_COLLS);
			break;
		case 's':
			seed = num_arg(optarg, "seed", 0, UINT32_MAX);
			break;
		case 'h':
			help();
		default:
			bad_option("ntcs", argv[optind - 1]);
		}
	}
	if (optind != argc)
		usage_error("unexpected argument '%s'", argv[optind]);

	setup();
	printf(PROG ": %d clients on one ring, %d transactions each, %d collections, seed %u\n",
	       nr_clients, nr_txns, nr_colls, seed);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("  requests:  %ld locks, %ld unlocks, %ld downgrades, %ld withdrawals in %ld ticks, %.2f s\n",
	       submitted[OP_LOCK], submitted[OP_UNLOCK], submitted[OP_DOWNGRADE],
	       submitted[OP_WITHDRAW], ticks,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	printf("  granted:  ");
	for (i = HLOCK_IS; i < HLOCK_NR_MODES; i++)
		if (granted[i])
			printf(" %s %ld", hlock_mode_name(i), granted[i]);
	printf(" (and %ld downgrades to S)\n", downgrades);
	printf("  gave up:   %ld timed out, %ld withdrawn (%ld cancelled, %ld granted first)\n",
	       timeouts, cancelled + granted_first, cancelled, granted_first);
	ok = verify();
	io_uring_queue_exit(&ring);
	for (i = 0; i < nr_clients; i++)
		close(clients[i].fd);
	printf(PROG ": %s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
