// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_cluster_interact: where features meet across the nodes of a
 * cluster, the cluster counterpart of hlock_interact.  Run on every node
 * of scripts/vm-cluster by hlock_cluster_interact.sh:
 *
 *   hlock_cluster_interact NODE NODES [SEEDS [STEPS [FIRST [-v]]]]
 *
 * Every node runs the same seeds, SEEDS of them from FIRST (default 6 from
 * 1) of STEPS steps each (default 200; both scaled by HLOCK_TEST_SCALE, at
 * least 2 x 60), over the same paths ("", "a", "a/b", "a/c", "d", "d/e"),
 * with commands of its own: the random stream of a node is seeded by the
 * seed and the node.  -v prints every command.  The defaults take about a
 * minute on 2 nodes of 6.12 under TCG, the VMs' boot aside.
 *
 * Each node has NACTORS actors, child processes with a locker each, that
 * run one command at a time for the node's scheduler (over a socketpair)
 * and answer when done, so that a blocking call waits while the others go
 * on, as in hlock_interact.  The commands: try locks (timeout 0, some with
 * HLOCK_F_FRONT), timed locks with timeouts of 5 to 155 ms (some FRONT),
 * asynchronous locks collected by HLOCK_IOC_WAIT or withdrawn by an
 * unlock of their path, conversions and recursions (a lock of a path held),
 * downgrades, leases (half of the leased locks short, 100 to 300 ms, so
 * that they expire while others wait, the rest longer than a run), renew,
 * yield, close and reopen.  The scheduler also kills an actor (SIGKILL) or
 * asks for a reclaim pass (debugfs' hlock/reclaim) now and then.  The
 * write ticket pool of each node is 1 or 2 during the random steps.  Root
 * in the VMs has CAP_SYS_NICE: its S, SIX and X on the root are FRONT
 * requests by themselves.
 *
 * Invariants:
 *
 * 1. Exclusion across nodes, by a witness: a TCP service on node 1 (port
 *    WITNESS_PORT, over the VMs' Ethernet) to which every locker of every
 *    node reports what it holds, per path, after each call: what held()
 *    says once a call returned, and before a call that may release
 *    (unlock, downgrade, yield, close) what surely stays held once it
 *    returns, acknowledged by the witness before the call is made.  So the
 *    witness knows of a grant only after it happened and forgets it
 *    before it ends: each interval it holds is inside the real one, and
 *    two intervals it holds at once that conflict are a real violation.
 *    It checks each report against the live reports of every other
 *    locker, on any node.  What ends without the locker's consent:
 *     - a kill: the scheduler tells the witness first (acknowledged), and
 *       whatever the killed actor reports later is ignored;
 *     - a lease taken over, which releases the leased path, everything
 *       the locker acquired below it and their intents, at an unknown
 *       time, but never before the lease expired.  The locker knows a
 *       lower bound of that moment on its own clock: the start of the
 *       call that got the lease plus its length (the kernel starts it at
 *       the grant, on the same clock).  A later leased lock of the path
 *       restarts the lease, but one doomed before is taken over all the
 *       same, so the earlier bound is kept; so does a yield, whose
 *       re-acquisition starts the lease again; a renew that returned before
 *       the bound restarts it from the renew.  A leased lock call reports
 *       its bound before it starts, and the lease of a queued
 *       asynchronous call counts from its start.  Each report carries the
 *       earliest bound of all the locker's leases, and the witness ends
 *       every interval of that locker there, mapped to its own clock
 *       through the last exchange with it: the witness time it stamped on
 *       its last answer, plus the locker's time since it received that
 *       answer less 1/SKEW_DIV of it (the two VMs' clocks may run at
 *       slightly different rates) and SKEW_FIXED_NS.  A report that comes
 *       after that moment is not recorded: the locker's holdings are
 *       unknown until it reports again with no lease that may have ended.
 *    Each node also reads its lock table at every step for exclusion and
 *    intents among its own lockers (told apart by their descriptions,
 *    "n<node>.p<pid>.<n>"), as hlock_interact does, and for their
 *    blocking state: a grant is flagged as blocking whenever a request
 *    of another locker of the node waits there for a conflicting mode,
 *    and without one only while the record says another node waits.
 * 2. Every call ends with 0 or an error the reference allows for it there
 *    (a try EAGAIN; a timed lock ETIMEDOUT or EDEADLK; EBUSY only with a
 *    call in flight on the path; ESTALE only on a path once leased, with a
 *    short lease there or above it; ENOENT only for nothing acquired or
 *    what a lease's takeover may have taken; an asynchronous request
 *    never vanishes, and an unlock of its path withdraws it), and within
 *    its timeout plus MARGIN_MS, or the run fails.  A yield that returns 0 gives back the modes held before, a
 *    yield that fails leaves nothing held.  Every CHECK_EVERY steps each
 *    actor checks its own view against the table (hlock_interact's
 *    check) and the node's write tickets out are the actors' tickets.
 * 3. Nothing stays blocked once the remote waiter has gone: at a
 *    checkpoint halfway and at the end of each seed, every actor of every
 *    node releases everything and withdraws its request (no write ticket
 *    is left out, no record in the table), and then, each node in turn
 *    while the others are idle, a locker takes X on every path, which
 *    must be granted within PROBE_MS, and HLOCK_IOC_BLOCKING of that grant
 *    must say 0 within PROBE_MS; and it tries X on every path (plain and
 *    FRONT), which must succeed within PROBE_MS of tries 20 ms apart while
 *    the other node caches the resource.
 * 4. Leases are taken over only when something waited: between two
 *    checkpoints, a node's takeovers need a lock call there that could
 *    wait, or any lock call on another node (a try of another node asks
 *    the DLM to tell this one, which then takes an expired lease over as
 *    for a waiter).  The duels below check it sharply.
 *
 * Then each checkpoint runs three duels, deterministic cases across two
 * nodes on a random path and random modes (the same on both nodes: drawn
 * from a stream seeded by the seed alone, and checked to agree), one
 * holding (H) and one asking (W): a short lease of H that expired with
 * nobody waiting is still held, and is taken over for W's waiter (H is
 * told, its unlock says ESTALE); H's yield with W waiting releases (its
 * yields count goes up) and takes back, and W is granted meanwhile; W's
 * timed lock that gave up stops blocking: H's HLOCK_IOC_BLOCKING says 0
 * again and a new request of H that conflicts only with W's mode is
 * granted; W's try of a conflicting mode fails and one of a compatible
 * mode succeeds; both hold S and convert to X: one gets EDEADLK and the
 * other X; W's asynchronous request is collected once H released, or
 * withdrawn by W's unlock, after which H's grant blocks nobody.  Every
 * kind of duel runs once a seed.  The write ticket pools are unlimited
 * then.
 *
 * A failure names the node, its seed and step, and the command that runs
 * that seed alone, and prints the node's lock table; the witness's
 * conflicts name both lockers.  Once a node's seed failed, every node
 * leaves out the rest of that seed's probes and duels (they learn it at
 * the next barrier, together).  For diagnosis, HLOCK_CI_DUEL=NAME makes
 * every duel one of that kind (none: no duel), HLOCK_CI_PROBES=0 leaves
 * the probes out, HLOCK_CI_KEEP_GOING=1 goes on after a failure
 * (hlock_cluster_interact.sh takes them as arguments too).
 *
 * Bounded waits, the margins of which are the only times the checks
 * depend on: a call's answer, its own timeout plus MARGIN_MS (15 s); a
 * probe, PROBE_MS (10 s: cluster_probe_ms, 500 ms, and the DLM's round
 * trips, on a host so loaded that corosync was seen unscheduled for 4 s in
 * a VM); what a duel must see happen, DUEL_MS (15 s); a barrier,
 * BARRIER_MS; an answer of the witness, WITNESS_MS.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "hlock.h"
#include "hlock_helpers.h"
#include "hlock_table_check.h"

#define NACTORS		4
#define CHECK_EVERY	10
/* Checkpoints a seed: halfway and at the end. */
#define NCHECKPOINTS	2
/* Duels a checkpoint; NDUELS kinds, each once a seed. */
#define DUELS_PER_CP	3
#define MAX_NODES	9
#define WITNESS_PORT	7701
#define WRITE_TICKETS	"/sys/module/hlock/parameters/write_tickets"
#define RECLAIM		"/sys/kernel/debug/hlock/reclaim"
/* How long a call's answer may take beyond its own timeout. */
#define MARGIN_MS	15000
/* The probes' bound: what nothing conflicts with is granted by then. */
#define PROBE_MS	10000
/* A duel's bound for what must be granted. */
#define DUEL_MS		15000
#define BARRIER_MS	180000
#define WITNESS_MS	60000
/* Leases longer than a run: never expire in it. */
#define LONG_LEASE_MS	600000
/* The witness's allowance for the nodes' clocks: 5%, and 10 ms. */
#define SKEW_DIV	20
#define SKEW_FIXED_NS	(10 * MS)

static const char *const paths[] = { "", "a", "a/b", "a/c", "d", "d/e" };
#define NPATHS	((int)(sizeof(paths) / sizeof(paths[0])))

static const int lock_modes[] = { HLOCK_IS, HLOCK_IX, HLOCK_S, HLOCK_SIX,
				  HLOCK_X };

/* ------------------------------------------------------------------ */
/* Modes and paths. */

/* Whether mode @a covers mode @b (IS < IX < SIX < X, IS < S < SIX). */
static bool covers(unsigned int a, unsigned int b)
{
	if (b == HLOCK_NL || a == b || a == HLOCK_X)
		return true;
	switch (a) {
	case HLOCK_SIX:
		return b != HLOCK_X;
	case HLOCK_IX:
	case HLOCK_S:
		return b == HLOCK_IS;
	default:
		return false;
	}
}

/* The greatest mode both @a and @b cover. */
static unsigned int meet(unsigned int a, unsigned int b)
{
	unsigned int m;

	for (m = HLOCK_X; m > HLOCK_NL; m--)
		if (covers(a, m) && covers(b, m))
			break;
	return m;
}

/* Whether paths[@q] is strictly below paths[@p]. */
static bool below(int q, int p)
{
	size_t n = strlen(paths[p]);

	if (q == p)
		return false;
	return !n || (!strncmp(paths[q], paths[p], n) && paths[q][n] == '/');
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

/* ------------------------------------------------------------------ */
/* The witness's protocol: fixed-size messages, one answer each. */

enum { W_HELLO = 1, W_STATE, W_KILL, W_BARRIER };
enum { WK_LOCKER = 1, WK_CONTROL };
enum { WS_OK, WS_CONFLICT, WS_GONE };

struct wmsg {
	uint32_t type;
	uint32_t kind;
	uint32_t node;
	uint32_t slot;
	uint32_t gen;
	uint32_t seq;		/* W_BARRIER: its number */
	int32_t failed;		/* W_BARRIER: the node's seed failed */
	int32_t seed;
	int32_t step;
	/* Local time the sender received the witness's last answer. */
	int64_t t_prev;
	/* Local time before which no lease of the locker ends, or none. */
	int64_t vuln;
	int64_t data[4];	/* W_BARRIER: what the node tells the others */
	uint8_t modes[8];	/* W_STATE: what it holds at least, by path */
	char who[32];		/* W_HELLO: the locker's description */
};

struct wreply {
	int32_t status;
	uint32_t conflicts;	/* the witness's, so far */
	int64_t now;		/* the witness's clock when it answered */
	int64_t data[MAX_NODES][4];	/* W_BARRIER: every node's */
	int32_t failed[MAX_NODES];	/* W_BARRIER: every node's */
	char msg[400];
};

/* Move exactly @len bytes within @ms.  Return: 0 or -errno. */
static int io_all(int fd, void *buf, size_t len, int ms, bool wr)
{
	int64_t end = now_ns() + ms * MS, left;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		struct pollfd p = { .fd = fd, .events = wr ? POLLOUT : POLLIN };

		left = (end - now_ns()) / MS;
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (wr)
			n = send(fd, (char *)buf + done, len - done,
				 MSG_NOSIGNAL);
		else
			n = recv(fd, (char *)buf + done, len - done, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EPIPE;
		done += n;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The witness, on node 1. */

struct wconn {
	int fd;
	int kind;
	int node;
	int slot;
	int gen;
	bool dead;
	char who[32];
	/* What the locker holds at least, until @until (witness time). */
	uint8_t modes[NPATHS];
	int64_t until;
	int seed[NPATHS];
	int step[NPATHS];
	int64_t last_reply;
	bool at_bar;
	uint32_t bar_seq;
	int32_t bar_failed;
	int64_t bar_data[4];
};

#define WCONNS	96
#define WKILLED	4096

static struct {
	struct wconn c[WCONNS];
	int nodes;
	int controls_seen;
	int killed[WKILLED][3];
	int nkilled;
	unsigned int conflicts;
	long reports, unknown, cross, same;
} wit;

static int wit_reply(struct wconn *x, struct wreply *r)
{
	r->conflicts = wit.conflicts;
	r->now = now_ns();
	x->last_reply = r->now;
	return io_all(x->fd, r, sizeof(*r), 5000, true);
}

static bool wit_killed(int node, int slot, int gen)
{
	int i;

	for (i = 0; i < wit.nkilled; i++)
		if (wit.killed[i][0] == node && wit.killed[i][1] == slot &&
		    wit.killed[i][2] == gen)
			return true;
	return false;
}

/* A report of what @x holds: check it against every other live one. */
static void wit_state(struct wconn *x, const struct wmsg *m,
		      struct wreply *r)
{
	int64_t now = now_ns(), until = INT64_MAX, d;
	struct wconn *o;
	int p, i;

	wit.reports++;
	if (x->dead)
		return;
	if (m->vuln != INT64_MAX) {
		d = m->vuln - m->t_prev;
		d -= (d >= 0 ? d : -d) / SKEW_DIV;
		until = x->last_reply + d - SKEW_FIXED_NS;
	}
	x->until = until;
	if (now >= until) {
		/* A lease may have ended: what it holds is unknown. */
		wit.unknown++;
		memset(x->modes, 0, sizeof(x->modes));
		return;
	}
	for (p = 0; p < NPATHS; p++) {
		unsigned int mode = m->modes[p];

		if (mode > x->modes[p] || !covers(x->modes[p], mode)) {
			x->seed[p] = m->seed;
			x->step[p] = m->step;
		}
		x->modes[p] = mode;
		if (mode == HLOCK_NL)
			continue;
		for (i = 0; i < WCONNS; i++) {
			o = &wit.c[i];
			if (o == x || o->fd < 0 || o->kind != WK_LOCKER ||
			    o->dead || now >= o->until ||
			    o->modes[p] == HLOCK_NL)
				continue;
			if (o->node != x->node)
				wit.cross++;
			else
				wit.same++;
			if (!conflict(mode, o->modes[p]) ||
			    r->status == WS_CONFLICT)
				continue;
			wit.conflicts++;
			r->status = WS_CONFLICT;
			snprintf(r->msg, sizeof(r->msg),
				 "witness: %s (node %d, seed %d step %d) holds %s on \"%s\" while %s (node %d) holds %s there, reported at its seed %d step %d",
				 x->who, x->node, m->seed, m->step,
				 hlock_mode_name(mode), paths[p], o->who,
				 o->node, hlock_mode_name(o->modes[p]),
				 o->seed[p], o->step[p]);
			printf("# FAIL %s\n", r->msg);
			fflush(stdout);
		}
	}
}

/* The controls at a barrier: release them once all are, or fail them. */
static void wit_barrier(void)
{
	struct wreply r;
	struct wconn *x;
	int i, at = 0, live = 0;
	bool mixed = false;
	uint32_t seq = 0;

	for (i = 0; i < WCONNS; i++) {
		x = &wit.c[i];
		if (x->fd < 0 || x->kind != WK_CONTROL)
			continue;
		live++;
		if (!x->at_bar)
			continue;
		if (at && x->bar_seq != seq)
			mixed = true;
		seq = x->bar_seq;
		at++;
	}
	if (!at || (!mixed && (at < wit.nodes || live < wit.nodes)))
		return;
	memset(&r, 0, sizeof(r));
	r.status = mixed ? WS_GONE : WS_OK;
	for (i = 0; i < WCONNS; i++) {
		x = &wit.c[i];
		if (x->fd >= 0 && x->kind == WK_CONTROL && x->at_bar &&
		    x->node >= 1 && x->node <= MAX_NODES) {
			memcpy(r.data[x->node - 1], x->bar_data,
			       sizeof(x->bar_data));
			r.failed[x->node - 1] = x->bar_failed;
		}
	}
	for (i = 0; i < WCONNS; i++) {
		x = &wit.c[i];
		if (x->fd < 0 || x->kind != WK_CONTROL || !x->at_bar)
			continue;
		x->at_bar = false;
		wit_reply(x, &r);
	}
}

static void wit_gone(struct wconn *x)
{
	struct wreply r;
	int i;

	close(x->fd);
	x->fd = -1;
	if (x->kind != WK_CONTROL)
		return;
	/* A node gone: the others' barrier never comes. */
	memset(&r, 0, sizeof(r));
	r.status = WS_GONE;
	for (i = 0; i < WCONNS; i++)
		if (wit.c[i].fd >= 0 && wit.c[i].kind == WK_CONTROL &&
		    wit.c[i].at_bar) {
			wit.c[i].at_bar = false;
			wit_reply(&wit.c[i], &r);
		}
}

static void wit_handle(struct wconn *x, const struct wmsg *m)
{
	struct wreply r;
	int i;

	memset(&r, 0, sizeof(r));
	switch (m->type) {
	case W_HELLO:
		x->kind = m->kind;
		x->node = m->node;
		x->slot = m->slot;
		x->gen = m->gen;
		memcpy(x->who, m->who, sizeof(x->who));
		x->who[sizeof(x->who) - 1] = 0;
		x->dead = wit_killed(x->node, x->slot, x->gen);
		x->until = INT64_MAX;
		memset(x->modes, 0, sizeof(x->modes));
		if (x->kind == WK_CONTROL)
			wit.controls_seen++;
		break;
	case W_STATE:
		wit_state(x, m, &r);
		break;
	case W_KILL:
		/* The victim is data[0..2]: node, slot, generation. */
		if (wit.nkilled < WKILLED) {
			wit.killed[wit.nkilled][0] = (int)m->data[0];
			wit.killed[wit.nkilled][1] = (int)m->data[1];
			wit.killed[wit.nkilled][2] = (int)m->data[2];
			wit.nkilled++;
		}
		for (i = 0; i < WCONNS; i++)
			if (wit.c[i].fd >= 0 && wit.c[i].kind == WK_LOCKER &&
			    wit.c[i].node == (int)m->data[0] &&
			    wit.c[i].slot == (int)m->data[1] &&
			    wit.c[i].gen == (int)m->data[2])
				wit.c[i].dead = true;
		break;
	case W_BARRIER:
		x->at_bar = true;
		x->bar_seq = m->seq;
		x->bar_failed = m->failed;
		memcpy(x->bar_data, m->data, sizeof(x->bar_data));
		wit_barrier();
		return;
	default:
		r.status = WS_GONE;
		break;
	}
	if (wit_reply(x, &r))
		wit_gone(x);
}

/*
 * Serve until every node's control came and went (or 10 minutes of
 * silence).  Return: 0, 1 after a conflict, 2 if no report was ever
 * compared with another node's (the check would have been empty).
 */
static int witness_run(int lfd, int nodes, int ready)
{
	struct pollfd pfd[WCONNS + 1];
	int idx[WCONNS + 1];
	struct wmsg m;
	int i, n, k, live;

	wit.nodes = nodes;
	for (i = 0; i < WCONNS; i++)
		wit.c[i].fd = -1;
	if (write(ready, "r", 1) != 1)
		return 3;
	close(ready);
	for (;;) {
		pfd[0].fd = lfd;
		pfd[0].events = POLLIN;
		n = 1;
		live = 0;
		for (i = 0; i < WCONNS; i++) {
			if (wit.c[i].fd < 0)
				continue;
			live += wit.c[i].kind == WK_CONTROL;
			pfd[n].fd = wit.c[i].fd;
			pfd[n].events = POLLIN;
			idx[n++] = i;
		}
		if (wit.controls_seen >= nodes && !live)
			break;
		k = poll(pfd, n, 600000);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (pfd[0].revents & POLLIN) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), one = 1;

			for (i = 0; fd >= 0 && i < WCONNS; i++)
				if (wit.c[i].fd < 0)
					break;
			if (fd >= 0 && i < WCONNS) {
				memset(&wit.c[i], 0, sizeof(wit.c[i]));
				wit.c[i].fd = fd;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
					   sizeof(one));
			} else if (fd >= 0) {
				close(fd);
			}
		}
		for (k = 1; k < n; k++) {
			struct wconn *x = &wit.c[idx[k]];

			if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)) ||
			    x->fd < 0)
				continue;
			if (io_all(x->fd, &m, sizeof(m), 5000, false)) {
				wit_gone(x);
				continue;
			}
			wit_handle(x, &m);
		}
	}
	printf("# witness: %ld reports, %ld after a lease may have ended, %ld comparisons of holders on two nodes, %ld on one node, %u conflicts\n",
	       wit.reports, wit.unknown, wit.cross, wit.same, wit.conflicts);
	fflush(stdout);
	if (wit.conflicts)
		return 1;
	return wit.cross ? 0 : 2;
}

/* ------------------------------------------------------------------ */
/* A witness's client: one connection per locker, one for the control. */

struct wcl {
	int fd;
	int64_t t_prev;
	int node;
	int slot;
	int gen;
	char msg[400];		/* a conflict's, or what failed */
};

static char witness_host[32] = "10.77.0.1";

static int wcl_call(struct wcl *w, struct wmsg *m, struct wreply *r, int ms)
{
	int ret;

	m->node = w->node;
	m->slot = w->slot;
	m->gen = w->gen;
	m->t_prev = w->t_prev;
	ret = io_all(w->fd, m, sizeof(*m), ms, true);
	if (!ret)
		ret = io_all(w->fd, r, sizeof(*r), ms, false);
	w->t_prev = now_ns();
	if (ret)
		snprintf(w->msg, sizeof(w->msg), "witness: %s",
			 strerror(-ret));
	return ret;
}

static int wcl_open(struct wcl *w, int kind, int node, int slot, int gen,
		    const char *who, int wait_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(WITNESS_PORT) };
	int64_t end = now_ns() + wait_ms * MS;
	struct wreply r;
	struct wmsg m;
	int one = 1;

	w->fd = -1;
	w->node = node;
	w->slot = slot;
	w->gen = gen;
	w->msg[0] = 0;
	inet_pton(AF_INET, witness_host, &sa.sin_addr);
	for (;;) {
		w->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (w->fd < 0)
			return -errno;
		if (!connect(w->fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		close(w->fd);
		w->fd = -1;
		if (now_ns() > end) {
			snprintf(w->msg, sizeof(w->msg),
				 "no witness at %s:%d", witness_host,
				 WITNESS_PORT);
			return -ECONNREFUSED;
		}
		sleep_ms(100);
	}
	setsockopt(w->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&m, 0, sizeof(m));
	m.type = W_HELLO;
	m.kind = kind;
	snprintf(m.who, sizeof(m.who), "%s", who);
	return wcl_call(w, &m, &r, WITNESS_MS);
}

static void wcl_close(struct wcl *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

/*
 * Report that the locker holds at least @modes, until @vuln (its clock)
 * at the latest.  Return: 0, 1 for a conflict, or -errno (w->msg says).
 */
static int wcl_state(struct wcl *w, const uint8_t *modes, int64_t vuln,
		     int seed, int step)
{
	struct wreply r;
	struct wmsg m;
	int ret;

	memset(&m, 0, sizeof(m));
	m.type = W_STATE;
	m.seed = seed;
	m.step = step;
	m.vuln = vuln;
	memcpy(m.modes, modes, NPATHS);
	ret = wcl_call(w, &m, &r, WITNESS_MS);
	if (ret)
		return ret;
	if (r.status == WS_CONFLICT) {
		snprintf(w->msg, sizeof(w->msg), "%s", r.msg);
		return 1;
	}
	return 0;
}

/* The modes @fd holds, by path. */
static void held_modes(int fd, uint8_t *modes)
{
	int p, m;

	for (p = 0; p < NPATHS; p++) {
		m = hlock_held(fd, paths[p]);
		modes[p] = m > 0 ? (uint8_t)m : HLOCK_NL;
	}
}

/* ------------------------------------------------------------------ */
/* The actor: one locker, its model of what it holds. */

enum op {
	OP_LOCK, OP_COLLECT, OP_UNLOCK, OP_DOWNGRADE, OP_YIELD, OP_RENEW,
	OP_REOPEN, OP_CHECK, OP_UNWIND, OP_EXIT,
};

static const char *const op_names[] = {
	"lock", "collect", "unlock", "downgrade", "yield", "renew", "reopen",
	"check", "unwind", "exit",
};

enum kind { K_TRY, K_TIMED, K_ASYNC };

static const char *const kind_names[] = { "try", "timed", "async" };

struct cmd {
	int op;
	int path;
	int mode;
	int kind;
	bool front;
	bool pick;		/* a path the actor holds, if any */
	int timeout_ms;
	int lease_ms;
	unsigned int seed;	/* the actor's own choices */
	int run_seed;		/* for the witness's messages */
	int step;
};

struct reply {
	int ret;
	int path;		/* the path the command went to */
	/* OP_CHECK: whether the actor holds a write ticket. */
	int ticket;
	/* Whether a lock call of the actor is queued. */
	int pending;
	char why[1400];
};

struct model {
	int count[NPATHS];	/* acquisitions it made and did not undo */
	bool leased[NPATHS];	/* it asked for a lease on the path */
	/* A short lease was held there: it may be taken over. */
	bool short_ever[NPATHS];
	/* A lease was held there (also a long one, below a short one). */
	bool leased_ever[NPATHS];
	/* A lease may be held there, not ended before lease_dl. */
	bool lease_live[NPATHS];
	int64_t lease_dl[NPATHS];
	int lease_len[NPATHS];	/* ms, its last length */
	int pending;		/* path of its queued async call, or -1 */
	int pending_lease;
	int64_t pending_start;
	/*
	 * While it is queued: on its path and above, the modes the actor
	 * held before the call, lowered as the actor lets go there.
	 */
	uint8_t pre[NPATHS];
	/* A leased lock call about to start: its lease ends after this. */
	int64_t call_dl;
};

static int a_fd;
static int a_node, a_slot, a_gen, a_opens;
/* The locker's description, "n<node>.p<pid>.<n>": whose records are whose. */
static char a_why[40];
static struct model a_m;
static struct wcl a_w;
static int a_seed, a_step;
#define HISTORY	8
static char a_hist[HISTORY][80];
static unsigned int a_nhist;

static int afail(struct reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int afail(struct reply *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return INT32_MIN;
}

static void model_clear(void)
{
	memset(&a_m, 0, sizeof(a_m));
	a_m.pending = -1;
	a_m.call_dl = INT64_MAX;
}

static void model_grant(int path, int lease_ms)
{
	a_m.count[path]++;
	if (lease_ms)
		a_m.leased[path] = true;
}

/* A lock call that started at @t0 with a lease of @len ms was granted. */
static void lease_note(int p, int64_t t0, int len)
{
	int64_t dl = t0 + len * MS;

	if (!len)
		return;
	if (len < LONG_LEASE_MS)
		a_m.short_ever[p] = true;
	a_m.leased_ever[p] = true;
	/* A lease doomed before this call is taken over all the same. */
	if (!a_m.lease_live[p] || dl < a_m.lease_dl[p])
		a_m.lease_dl[p] = dl;
	a_m.lease_live[p] = true;
	a_m.lease_len[p] = len;
}

/* Before which no lease of the locker can end (its clock), or none. */
static int64_t lease_vuln(void)
{
	int64_t v = a_m.call_dl;
	int p;

	for (p = 0; p < NPATHS; p++)
		if (a_m.lease_live[p] && a_m.lease_dl[p] < v)
			v = a_m.lease_dl[p];
	/*
	 * The lease of the request in flight, granted or not: taken over
	 * only once collected, but as soon as that if it expired before.
	 */
	if (a_m.pending >= 0 && a_m.pending_lease &&
	    a_m.pending_start + a_m.pending_lease * MS < v)
		v = a_m.pending_start + a_m.pending_lease * MS;
	return v;
}

/* Whether a lease may have ended by now. */
static bool lease_may_have_ended(void)
{
	return lease_vuln() <= now_ns();
}

/* A path held no more has no lease. */
static void leases_tidy(void)
{
	int p;

	for (p = 0; p < NPATHS; p++)
		if (a_m.lease_live[p] && hlock_held(a_fd, paths[p]) == 0)
			a_m.lease_live[p] = false;
}

/*
 * Whether a takeover may have taken the acquisitions made on @p: a short
 * lease was held on it or above it (what is below a lease goes with it).
 */
static bool maybe_lost(int p)
{
	int q;

	for (q = 0; q < NPATHS; q++)
		if ((q == p || below(p, q)) && a_m.short_ever[q])
			return true;
	return false;
}

/*
 * Whether an unlock of @p may say ESTALE: a lease of it was released by a
 * takeover, of its own short lease or of one above it (a takeover
 * releases what is below, and the leases there go stale too).
 */
static bool stale_possible(int p)
{
	return a_m.leased_ever[p] && maybe_lost(p);
}

/* Whether paths[@q] is paths[@p] or above it. */
static bool on_or_above(int q, int p)
{
	return q == p || below(p, q);
}

/*
 * Tell the witness what the locker holds at least: @held.  A queued call
 * may end without the actor: a deadlock found later, a conversion the DLM
 * refused, its node lost; an unlock of its path withdraws it.  What it
 * took on its way (an intent, a conversion) goes with it then, before the
 * actor can report.  So on its path and above, only what was held before
 * it surely stays.
 */
static int a_report(const uint8_t *held, struct reply *r)
{
	int q, p = a_m.pending, ret;
	uint8_t modes[NPATHS];

	memcpy(modes, held, sizeof(modes));
	for (q = 0; p >= 0 && q < NPATHS; q++) {
		if (!on_or_above(q, p))
			continue;
		a_m.pre[q] = (uint8_t)meet(a_m.pre[q], modes[q]);
		modes[q] = a_m.pre[q];
	}
	ret = wcl_state(&a_w, modes, lease_vuln(), a_seed, a_step);
	if (ret)
		return afail(r, "%s", a_w.msg);
	return 0;
}

/* What it holds now. */
static int report_now(struct reply *r)
{
	uint8_t modes[NPATHS];

	held_modes(a_fd, modes);
	return a_report(modes, r);
}

/*
 * Before an unlock of @p: what it holds but on @p and above it (where
 * the unlock may take what was held before a queued call: a_report()).
 */
static int report_unlock(int p, struct reply *r)
{
	uint8_t modes[NPATHS];
	int q;

	held_modes(a_fd, modes);
	for (q = 0; q < NPATHS; q++) {
		if (!on_or_above(q, p))
			continue;
		modes[q] = HLOCK_NL;
		if (a_m.pending >= 0 && on_or_above(q, a_m.pending))
			a_m.pre[q] = HLOCK_NL;
	}
	return a_report(modes, r);
}

/* Before everything may go: nothing. */
static int report_none(struct reply *r)
{
	uint8_t modes[NPATHS] = { 0 };

	return a_report(modes, r);
}

/* Unlock @p, the witness told first. */
static int a_unlock(int p, struct reply *r)
{
	if (report_unlock(p, r))
		return INT32_MIN;
	return hlock_unlock(a_fd, paths[p]);
}

/*
 * @path was taken over (its unlock said ESTALE): what the actor held
 * below it went too, and says ENOENT rather than ESTALE.
 */
static int model_taken(int path, struct reply *r)
{
	int q, ret;

	a_m.count[path] = 0;
	a_m.leased[path] = false;
	/*
	 * The ESTALE is owed until said, even once the path was locked
	 * again: what is held there now came after the takeover, and one
	 * more unlock says how many acquisitions are left of it (not for
	 * the path of the request in flight: that unlock withdraws it).
	 */
	if (a_m.pending != path && hlock_held(a_fd, paths[path]) > 0) {
		ret = a_unlock(path, r);
		if (ret == INT32_MIN)
			return 1;
		if (ret > 0)
			a_m.count[path] = ret;
	}
	for (q = 0; q < NPATHS; q++)
		if (below(q, path) && hlock_held(a_fd, paths[q]) <= 0) {
			a_m.count[q] = 0;
			a_m.leased[q] = false;
		}
	return 0;
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

	n = own_records(&leased, lease_of);
	if (hlock_held(a_fd, paths[path]) <= 0)
		return 0;
	if (n < 0 || !lease_of[path]) {
		afail(r, "\"%s\" granted with a lease shows none",
		      paths[path]);
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
	snprintf(a_why, sizeof(a_why), "n%d.p%d.%d", a_node, (int)getpid(),
		 a_opens++);
	return hlock_describe(a_fd, a_why);
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
			afail(r, "%s: \"%s\" held in %s, never locked", when,
			      paths[p], hlock_mode_name(m));
			return 1;
		}
	}
	return 0;
}

/*
 * An unlock of the path of the queued request (it said @ret) withdrew it,
 * whether it said ESTALE (a takeover before) or what is left.
 */
static int withdrawn(int path, int ret, struct reply *r)
{
	int w = hlock_wait(a_fd, 0);

	if (w == -ENOENT)
		return 0;
	afail(r, "the unlock of \"%s\" said %d and left the request queued there (wait says %d)",
	      paths[path], ret, w);
	return 1;
}

/* A path the actor holds (@fallback if none), chosen by @st. */
static int held_pick(int fallback, unsigned int *st)
{
	int p, n = 0, held[NPATHS];

	for (p = 0; p < NPATHS; p++)
		if (hlock_held(a_fd, paths[p]) > 0)
			held[n++] = p;
	return n ? held[lrnd(st, n)] : fallback;
}

/* Unlock everything, withdraw the queued request: an empty locker. */
static int unwind(struct reply *r, const char *when)
{
	int p, i, ret;

	if (report_none(r))
		return 1;
	for (p = NPATHS - 1; p >= 0; p--)
		for (i = 0; i < 100000; i++) {
			ret = hlock_unlock(a_fd, paths[p]);
			if (ret <= 0 && ret != -ESTALE)
				break;
		}
	model_clear();
	ret = hlock_wait(a_fd, 0);
	if (ret != -ENOENT) {
		afail(r, "%s: after unlocking everything, wait says %d", when,
		      ret);
		return 1;
	}
	if (held_count()) {
		afail(r, "%s: after unlocking everything, %d paths held",
		      when, held_count());
		return 1;
	}
	return 0;
}

static int act_lock(const struct cmd *c, struct reply *r)
{
	unsigned int st = c->seed, flags = 0;
	int path = c->pick ? held_pick(c->path, &st) : c->path;
	int64_t t0 = now_ns();
	bool ok;
	int ret;

	r->path = path;
	if (c->kind == K_ASYNC)
		flags |= HLOCK_F_ASYNC;
	if (c->front)
		flags |= HLOCK_F_FRONT;
	/*
	 * A new lease ends no sooner than its call's start: the witness
	 * learns of that bound before the call, as it may end before the
	 * report that follows the call comes in.
	 */
	if (c->lease_ms) {
		a_m.call_dl = now_ns() + c->lease_ms * MS;
		if (report_now(r))
			return INT32_MIN;
		t0 = now_ns();
	}
	/* What it holds before a call that may stay queued (a_report()). */
	if (c->kind == K_ASYNC && a_m.pending < 0)
		held_modes(a_fd, a_m.pre);
	ret = hlock_lock_lease(a_fd, paths[path], c->mode, flags,
			       c->kind == K_TRY ? 0 : c->timeout_ms * MS,
			       c->lease_ms * MS);
	a_m.call_dl = INT64_MAX;
	if (a_m.pending >= 0) {
		/* One call in flight at a time. */
		if (ret != -EBUSY)
			return afail(r, "%s %s on \"%s\" with a call in flight on \"%s\" said %d, not EBUSY",
				     kind_names[c->kind],
				     hlock_mode_name(c->mode), paths[path],
				     paths[a_m.pending], ret);
		return ret;
	}
	switch (c->kind) {
	case K_TRY:
		ok = !ret || ret == -EAGAIN;
		break;
	case K_TIMED:
		ok = !ret || ret == -ETIMEDOUT || ret == -EDEADLK;
		break;
	default:
		ok = !ret || ret == -EINPROGRESS || ret == -EDEADLK;
		break;
	}
	if (!ok)
		return afail(r, "%s %s%s on \"%s\" said %d (%s)",
			     kind_names[c->kind], hlock_mode_name(c->mode),
			     c->front ? " (front)" : "", paths[path], ret,
			     strerror(-ret));
	if (!ret) {
		model_grant(path, c->lease_ms);
		lease_note(path, t0, c->lease_ms);
		if (c->lease_ms && lease_shown(path, r))
			return INT32_MIN;
	} else if (ret == -EINPROGRESS) {
		a_m.pending = path;
		a_m.pending_lease = c->lease_ms;
		a_m.pending_start = t0;
	}
	return ret;
}

static int act_collect(const struct cmd *c, struct reply *r)
{
	int p = a_m.pending, ret;

	r->path = p;
	if (p < 0) {
		/* Nothing queued: nothing to collect. */
		ret = hlock_wait(a_fd, 0);
		if (ret != -ENOENT)
			return afail(r, "nothing queued, wait says %d", ret);
		return ret;
	}
	ret = hlock_wait(a_fd, c->timeout_ms * MS);
	if (ret == -EAGAIN || ret == -ETIMEDOUT)
		return ret;
	if (ret == -ENOENT)
		return afail(r, "the request queued on \"%s\" is gone",
			     paths[p]);
	if (ret && ret != -EDEADLK)
		return afail(r, "collecting the request on \"%s\" said %d (%s)",
			     paths[p], ret, strerror(-ret));
	a_m.pending = -1;
	if (!ret) {
		model_grant(p, a_m.pending_lease);
		lease_note(p, a_m.pending_start, a_m.pending_lease);
		if (a_m.pending_lease && lease_shown(p, r))
			return INT32_MIN;
	}
	return ret;
}

static int act_unlock(const struct cmd *c, struct reply *r)
{
	unsigned int st = c->seed;
	int path = c->pick ? held_pick(c->path, &st) : c->path;
	int q = a_m.pending, ret;
	bool anc = q >= 0 && below(q, path);

	r->path = path;
	ret = a_unlock(path, r);
	if (ret == INT32_MIN)
		return ret;
	if (ret == -EBUSY) {
		if (!anc)
			return afail(r, "unlock of \"%s\" said EBUSY, no call in flight below it",
				     paths[path]);
		return ret;
	}
	if (ret == -ESTALE && !stale_possible(path))
		return afail(r, "unlock of \"%s\" said ESTALE, no lease there or above it that could be taken over",
			     paths[path]);
	if (anc && ret != -ESTALE)
		return afail(r, "unlock of \"%s\", above the call in flight on \"%s\", said %d, not EBUSY",
			     paths[path], paths[q], ret);
	if (ret == -ENOENT && a_m.count[path] > 0 && !maybe_lost(path))
		return afail(r, "unlock of \"%s\" said ENOENT, %d acquisitions made there and no lease to lose them",
			     paths[path], a_m.count[path]);
	if (ret < 0 && ret != -ENOENT && ret != -ESTALE)
		return afail(r, "unlock of \"%s\" said %d (%s)", paths[path],
			     ret, strerror(-ret));
	/*
	 * The unlock of the path of the call in flight cancels it, also
	 * when it says ESTALE (the path was taken over before).
	 */
	if (q == path && (ret >= 0 || ret == -ESTALE)) {
		a_m.pending = -1;
		if (withdrawn(path, ret, r))
			return INT32_MIN;
	}
	if (ret == -ESTALE) {
		if (model_taken(path, r))
			return INT32_MIN;
	} else if (ret >= 0) {
		/* What is left: right even after a takeover. */
		a_m.count[path] = ret;
		if (!ret) {
			a_m.leased[path] = false;
			a_m.lease_live[path] = false;
		}
	}
	return ret;
}

/* A random mode below @m that @m covers, or @m. */
static int lower_mode(int m, unsigned int *st)
{
	static const int below_x[] = { HLOCK_SIX, HLOCK_S, HLOCK_IX, HLOCK_IS };
	static const int below_six[] = { HLOCK_S, HLOCK_IX, HLOCK_IS };

	switch (m) {
	case HLOCK_X:
		return below_x[lrnd(st, 4)];
	case HLOCK_SIX:
		return below_six[lrnd(st, 3)];
	case HLOCK_S:
	case HLOCK_IX:
		return HLOCK_IS;
	default:
		return m > 0 ? m : HLOCK_IS;
	}
}

static int act_downgrade(const struct cmd *c, struct reply *r)
{
	unsigned int st = c->seed;
	int path = held_pick(c->path, &st), q = a_m.pending;
	int held = hlock_held(a_fd, paths[path]);
	int mode = c->pick ? lower_mode(held, &st) : c->mode;
	uint8_t modes[NPATHS];
	int ret;

	r->path = path;
	held_modes(a_fd, modes);
	modes[path] = (uint8_t)meet(modes[path], mode);
	if (a_report(modes, r))
		return INT32_MIN;
	ret = hlock_downgrade(a_fd, paths[path], mode);
	if (ret == -EBUSY && !(q >= 0 && (q == path || below(q, path))))
		return afail(r, "downgrade of \"%s\" said EBUSY, no call in flight there",
			     paths[path]);
	if (ret == -ENOENT && held > 0 && !lease_may_have_ended())
		return afail(r, "downgrade of \"%s\", held in %s, said ENOENT",
			     paths[path], hlock_mode_name(held));
	if (ret && ret != -EBUSY && ret != -ENOENT && ret != -EINVAL)
		return afail(r, "downgrade of \"%s\" to %s said %d (%s)",
			     paths[path], hlock_mode_name(mode), ret,
			     strerror(-ret));
	return ret;
}

static int act_yield(const struct cmd *c, struct reply *r)
{
	uint8_t before[NPATHS], after[NPATHS];
	int64_t t0;
	int ret, p;

	if (a_m.pending >= 0) {
		ret = hlock_yield(a_fd, c->timeout_ms * MS);
		if (ret != -EBUSY)
			return afail(r, "yield with a call in flight on \"%s\" said %d, not EBUSY",
				     paths[a_m.pending], ret);
		return ret;
	}
	held_modes(a_fd, before);
	if (report_none(r))
		return INT32_MIN;
	t0 = now_ns();
	ret = hlock_yield(a_fd, c->timeout_ms * MS);
	if (ret && ret != -ETIMEDOUT && ret != -EAGAIN && ret != -EDEADLK &&
	    ret != -ESTALE)
		return afail(r, "yield said %d (%s)", ret, strerror(-ret));
	if (ret) {
		/* Failed: it holds nothing (the ESTALEs come later). */
		for (p = 0; p < NPATHS; p++) {
			a_m.count[p] = 0;
			a_m.leased[p] = false;
			a_m.lease_live[p] = false;
		}
		if (held_count())
			return afail(r, "yield failed with %d, %d paths held",
				     ret, held_count());
		return ret;
	}
	/* Released or not, a lease given back runs from its new grant. */
	for (p = 0; p < NPATHS; p++)
		if (a_m.lease_live[p] &&
		    t0 + a_m.lease_len[p] * MS < a_m.lease_dl[p])
			a_m.lease_dl[p] = t0 + a_m.lease_len[p] * MS;
	held_modes(a_fd, after);
	if (!lease_may_have_ended() && memcmp(before, after, NPATHS))
		for (p = 0; p < NPATHS; p++)
			if (before[p] != after[p])
				return afail(r, "yield said 0, \"%s\" held in %s before and %s after",
					     paths[p], mname(before[p]),
					     mname(after[p]));
	return 0;
}

static int act_renew(struct reply *r)
{
	int64_t t0 = now_ns(), t1;
	int ret, p, live = 0;

	ret = hlock_renew(a_fd);
	t1 = now_ns();
	for (p = 0; p < NPATHS; p++)
		live += a_m.lease_live[p];
	/* The request in flight may have been granted, with its lease. */
	live += a_m.pending >= 0 && a_m.pending_lease;
	if (ret < 0 || ret > live)
		return afail(r, "renew said %d, %d leases at most", ret, live);
	/* Renewed before it could expire: it runs from the renew. */
	for (p = 0; p < NPATHS; p++)
		if (a_m.lease_live[p] && t1 < a_m.lease_dl[p] &&
		    t0 + a_m.lease_len[p] * MS > a_m.lease_dl[p])
			a_m.lease_dl[p] = t0 + a_m.lease_len[p] * MS;
	return ret;
}

static int act_check(struct reply *r)
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
		if (!told || !maybe_lost(p))
			return afail(r, "lost \"%s\" (%d acquisitions)%s",
				     paths[p], a_m.count[p],
				     told ? ", no lease to lose it with" :
				     " untold");
		ret = a_unlock(p, r);
		if (ret == INT32_MIN)
			return ret;
		if (ret != -ESTALE && ret != -ENOENT &&
		    !(a_m.pending == p && ret >= 0))
			return afail(r, "lost \"%s\": unlock says %d",
				     paths[p], ret);
		/* An unlock of the path of the queued request withdraws it. */
		if (a_m.pending == p) {
			a_m.pending = -1;
			if (withdrawn(p, ret, r))
				return INT32_MIN;
		}
		if (model_taken(p, r))
			return INT32_MIN;
	}
	if (unexpected_held(r, "check"))
		return INT32_MIN;
	/* Counted before and after the table: a takeover may come between. */
	for (tries = 0; tries < 5; tries++) {
		nheld = held_count();
		recs = own_records(&leased, lease_of);
		if (held_count() == nheld)
			break;
	}
	if (tries < 5 && recs != nheld && a_m.pending < 0)
		return afail(r, "the table has %d records of mine, held() says %d",
			     recs, nheld);
	memset(&st, 0, sizeof(st));
	if (hlock_stats(a_fd, HLOCK_STATS_LOCKER, &st))
		return afail(r, "no statistics");
	r->ticket = st.tickets[HLOCK_TICKET_WRITE].out != 0;
	if (r->ticket && !nheld && a_m.pending < 0)
		return afail(r, "a write ticket, and nothing held or in flight");
	return 0;
}

static int actor_do(const struct cmd *c, struct reply *r)
{
	r->path = c->path;
	switch (c->op) {
	case OP_LOCK:
		return act_lock(c, r);
	case OP_COLLECT:
		return act_collect(c, r);
	case OP_UNLOCK:
		return act_unlock(c, r);
	case OP_DOWNGRADE:
		return act_downgrade(c, r);
	case OP_YIELD:
		return act_yield(c, r);
	case OP_RENEW:
		return act_renew(r);
	case OP_REOPEN:
		if (report_none(r))
			return INT32_MIN;
		close(a_fd);
		model_clear();
		return a_open();
	case OP_CHECK:
		return act_check(r);
	case OP_UNWIND:
		return unwind(r, "unwind") ? INT32_MIN : 0;
	}
	return -EINVAL;
}

static void actor_run(int sock)
{
	struct reply r;
	struct cmd c;
	int ret;

	memset(&r, 0, sizeof(r));
	model_clear();
	ret = a_open();
	if (ret)
		afail(&r, "cannot open a locker: %d", ret);
	else if (wcl_open(&a_w, WK_LOCKER, a_node, a_slot, a_gen, a_why,
			  WITNESS_MS))
		afail(&r, "%s", a_w.msg);
	/* Ready (or not): the first answer. */
	if (write(sock, &r, sizeof(r)) != (ssize_t)sizeof(r) || r.why[0])
		_exit(3);
	while (read(sock, &c, sizeof(c)) == (ssize_t)sizeof(c)) {
		memset(&r, 0, sizeof(r));
		a_seed = c.run_seed;
		a_step = c.step;
		if (c.op == OP_EXIT) {
			/* Nothing is held after an unwind: said so already. */
			wcl_close(&a_w);
			_exit(0);
		}
		r.ret = actor_do(&c, &r);
		if (r.ret != INT32_MIN) {
			leases_tidy();
			if (report_now(&r))
				r.ret = INT32_MIN;
		}
		r.pending = a_m.pending >= 0;
		snprintf(a_hist[a_nhist++ % HISTORY], sizeof(a_hist[0]),
			 "%d: %s%s%s %s \"%s\" %d/%d/%d=%d", c.step,
			 op_names[c.op], c.op == OP_LOCK ? " " : "",
			 c.op == OP_LOCK ? kind_names[c.kind] : "",
			 hlock_mode_name(c.mode), paths[r.path],
			 c.timeout_ms, c.lease_ms, c.front, r.ret);
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
/* The node's scheduler: the actors, the checks, the checkpoints. */

struct actor {
	pid_t pid;
	int sock;
	int gen;
	bool busy;
	bool pending;		/* a lock call of it may be queued */
	struct cmd cmd;		/* the command it runs while busy */
	int64_t deadline;	/* its answer is due by then */
};

/*
 * For diagnosis (hlock_cluster_interact.sh passes the environment on):
 * HLOCK_CI_DUEL=NAME makes every duel one of that kind (none: no duel),
 * HLOCK_CI_PROBES=0
 * leaves the probes out, HLOCK_CI_KEEP_GOING=1 goes on with the probes
 * and duels of a seed that failed (every failure is printed).
 */
static int duel_only = -1;
static bool no_probes, no_duels, keep_going;

static struct actor actors[NACTORS];
static int node, nodes, gens;
static unsigned int rnd_state, cp_state;
static bool verbose;
static int seed_now, step_now;
static char failure[2048];
static struct wcl ctl;
static int me;
static int write_pool;
/* Since the last checkpoint: lock calls that may wait, tries. */
static long calls_wait, calls_try;

static unsigned int rnd(unsigned int n)
{
	return lrnd(&rnd_state, n);
}

/* The checkpoints' random stream, the same on every node. */
static unsigned int crnd(unsigned int n)
{
	return lrnd(&cp_state, n);
}

/* The node's lock table, for a failure's report. */
static void dump_table(void)
{
	const struct hlock_lock_record *rec;
	void *buf;
	int i, n;

	n = hlock_table_alloc(me, &buf);
	if (n < 0)
		return;
	printf("# the table of node %d, %d records:\n", node, n);
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		const struct hlock_record_ext *ext = hlock_record_ext(rec);

		printf("#   \"%s\" %s%s%s %s %s node %s%s%s%s\n",
		       hlock_record_path(rec), hlock_mode_name(rec->mode),
		       rec->convert_mode ? ">" : "",
		       rec->convert_mode ?
		       hlock_mode_name(rec->convert_mode) : "",
		       hlock_state_name(rec->state),
		       ext ? ext->why : "?",
		       ext ? hlock_mode_name(ext->node_mode) : "?",
		       ext && ext->flags & HLOCK_REC_LEASE ? " lease" : "",
		       ext && ext->flags & HLOCK_REC_BLOCKING ?
		       " blocking" : "",
		       ext && ext->flags & HLOCK_REC_REMOTE_WAIT ?
		       " remote-wait" : "");
	}
	free(buf);
}

/*
 * What this node's DLM shows of the resource of @p (debugfs' dlm/hlock;
 * the node that masters it shows every node's locks), for a report.
 */
static void dump_dlm(int p)
{
	char want[64], line[512];
	size_t wl, l;
	bool in = false;
	int n = 0;
	FILE *f;

	f = fopen("/sys/kernel/debug/dlm/hlock", "r");
	if (!f)
		return;
	wl = (size_t)snprintf(want, sizeof(want), "\"p%s\"", paths[p]);
	printf("# the DLM of node %d on \"%s\":\n", node, paths[p]);
	while (fgets(line, sizeof(line), f) && n < 40) {
		l = strcspn(line, "\n");
		line[l] = 0;
		if (!strncmp(line, "Resource ", 9))
			in = l >= wl && !strcmp(line + l - wl, want);
		if (in && l) {
			printf("#   %s\n", line);
			n++;
		}
	}
	fclose(f);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int more_failures;

static int fail(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (failure[0]) {
		if (more_failures++ < 4 || keep_going) {
			printf("# also: step %d: ", step_now);
			va_start(ap, fmt);
			vprintf(fmt, ap);
			va_end(ap);
			printf("\n");
		}
		return -1;
	}
	more_failures = 0;
	n = snprintf(failure, sizeof(failure), "node %d seed %d step %d: ",
		     node, seed_now, step_now);
	va_start(ap, fmt);
	vsnprintf(failure + n, sizeof(failure) - n, fmt, ap);
	va_end(ap);
	printf("# FAIL %s\n", failure);
	dump_table();
	return -1;
}

/*
 * Meet the other nodes at the next barrier, telling them @data (4
 * numbers) and whether this node's seed failed; every node's come back in
 * @all, and seed_failed is set on every node at once when a node's seed
 * failed: the rest of the seed's checkpoints is left out, in step.
 * Return: 0 or -1.
 */
static unsigned int bar_seq;
static bool seed_failed;
/* A barrier failed: the nodes are out of step, the run ends. */
static bool bailed;
static unsigned int conflicts_seen;

static int barrier(const char *name, const int64_t *data,
		   int64_t all[MAX_NODES][4])
{
	struct wreply r;
	struct wmsg m;
	int i;

	if (bailed)
		return -1;
	bailed = true;
	memset(&m, 0, sizeof(m));
	m.type = W_BARRIER;
	m.seq = ++bar_seq;
	m.seed = seed_now;
	m.step = step_now;
	m.failed = failure[0] != 0;
	if (data)
		memcpy(m.data, data, sizeof(m.data));
	if (wcl_call(&ctl, &m, &r, BARRIER_MS))
		return fail("barrier %s: %s", name, ctl.msg);
	if (r.status != WS_OK)
		return fail("barrier %s: a node is gone or out of step",
			    name);
	bailed = false;
	if (all)
		memcpy(all, r.data, sizeof(r.data));
	for (i = 0; i < nodes && !keep_going; i++)
		seed_failed |= r.failed[i] != 0;
	/* A conflict another node's locker reported fails this seed too. */
	if (r.conflicts > conflicts_seen)
		fail("the witness saw %u conflicts", r.conflicts);
	conflicts_seen = r.conflicts;
	return 0;
}

/* ---- exclusion, from the node's own lock table (hlock_table_check.h) ---- */

static int table_check(const char *when)
{
	char msg[TABLE_MSG_LEN];

	if (table_violation(me, msg, sizeof(msg)) ||
	    table_blocking_violation(me, msg, sizeof(msg)))
		return fail("%s: the table: %s", when, msg);
	return 0;
}

/* ---- actors ---- */

static int spawn(struct actor *a)
{
	struct pollfd p;
	struct reply r;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return fail("socketpair: %s", strerror(errno));
	a->gen = ++gens;
	fflush(stdout);
	a->pid = fork();
	if (a->pid < 0)
		return fail("fork: %s", strerror(errno));
	if (!a->pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close_inherited(sv[1], -1);
		a_node = node;
		a_slot = (int)(a - actors);
		a_gen = a->gen;
		actor_run(sv[1]);
	}
	close(sv[1]);
	a->sock = sv[0];
	a->busy = a->pending = false;
	/* Its first answer: it has a locker and the witness knows it. */
	p.fd = a->sock;
	p.events = POLLIN;
	if (poll(&p, 1, WITNESS_MS) <= 0 ||
	    read(a->sock, &r, sizeof(r)) != (ssize_t)sizeof(r))
		return fail("actor %d did not start", (int)(a - actors));
	if (r.why[0])
		return fail("actor %d: %s", (int)(a - actors), r.why);
	return 0;
}

/* How long @c may take, beyond MARGIN_MS. */
static int cmd_timeout_ms(const struct cmd *c)
{
	switch (c->op) {
	case OP_LOCK:
		return c->kind == K_TIMED ? c->timeout_ms : 0;
	case OP_COLLECT:
	case OP_YIELD:
		return c->timeout_ms;
	default:
		return 0;
	}
}

static void send_cmd(struct actor *a, struct cmd *c)
{
	c->run_seed = seed_now;
	c->step = step_now;
	a->cmd = *c;
	a->busy = true;
	a->deadline = now_ns() + (int64_t)(cmd_timeout_ms(c) + MARGIN_MS) * MS;
	if (c->op == OP_LOCK && c->kind == K_TRY)
		calls_try++;
	else if (c->op == OP_LOCK || c->op == OP_YIELD)
		calls_wait++;
	if (write(a->sock, c, sizeof(*c)) != (ssize_t)sizeof(*c))
		fail("actor %d: cannot send", (int)(a - actors));
	if (verbose)
		printf("# %d.%d actor %d: %s%s%s %s \"%s\" tmo %d lease %d%s%s\n",
		       seed_now, step_now, (int)(a - actors), op_names[c->op],
		       c->op == OP_LOCK ? " " : "",
		       c->op == OP_LOCK ? kind_names[c->kind] : "",
		       hlock_mode_name(c->mode), paths[c->path],
		       c->timeout_ms, c->lease_ms, c->front ? " front" : "",
		       c->pick ? " pick" : "");
}

/* Take an answer of @a, waiting at most @ms.  Return: 1, 0 (none yet). */
static int take_reply(struct actor *a, int ms, struct reply *r)
{
	struct pollfd pfd = { .fd = a->sock, .events = POLLIN };

	if (!a->busy)
		return 0;
	if (poll(&pfd, 1, ms > 0 ? ms : 0) <= 0)
		return 0;
	if (read(a->sock, r, sizeof(*r)) != (ssize_t)sizeof(*r)) {
		fail("actor %d died in %s", (int)(a - actors),
		     op_names[a->cmd.op]);
		a->busy = false;
		return 0;
	}
	a->busy = false;
	a->pending = r->pending;
	if (r->ret == INT32_MIN)
		fail("actor %d (%s): %s", (int)(a - actors),
		     op_names[a->cmd.op], r->why);
	if (verbose)
		printf("# actor %d: %s \"%s\" -> %d\n", (int)(a - actors),
		       op_names[a->cmd.op], paths[r->path], r->ret);
	return 1;
}

/* Records in the table of the lockers whose descriptions start @prefix. */
static int records_of(const char *prefix)
{
	const struct hlock_lock_record *rec;
	size_t len = strlen(prefix);
	int i, n, mine = 0;
	void *buf;

	n = hlock_table_alloc(me, &buf);
	if (n < 0)
		return n;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec))
		mine += !strncmp(hlock_record_why(rec), prefix, len);
	free(buf);
	return mine;
}

/*
 * SIGKILL @a, the witness told first (whatever the actor reports after
 * is ignored): its exit releases what it held without telling it.  Then
 * a new actor takes its place.
 */
static int kill_actor(struct actor *a)
{
	struct wreply r;
	struct wmsg m;
	char prefix[32];
	pid_t pid = a->pid;
	int n;

	memset(&m, 0, sizeof(m));
	m.type = W_KILL;
	m.data[0] = node;
	m.data[1] = a - actors;
	m.data[2] = a->gen;
	if (wcl_call(&ctl, &m, &r, WITNESS_MS))
		return fail("kill: %s", ctl.msg);
	kill(pid, SIGKILL);
	close(a->sock);
	if (waitpid(pid, NULL, 0) != pid)
		return fail("waitpid: %s", strerror(errno));
	a->busy = false;
	if (verbose)
		printf("# %d.%d actor %d killed\n", seed_now, step_now,
		       (int)(a - actors));
	snprintf(prefix, sizeof(prefix), "n%d.p%d.", node, (int)pid);
	n = records_of(prefix);
	if (n)
		return fail("%d records of killed actor %d (pid %d)", n,
			    (int)(a - actors), (int)pid);
	return spawn(a);
}

/* Every actor stuck past its deadline fails the run, and is killed. */
static void check_stuck(void)
{
	int64_t now = now_ns();
	int i;

	for (i = 0; i < NACTORS; i++) {
		struct actor *a = &actors[i];

		if (!a->busy || now < a->deadline)
			continue;
		fail("actor %d stuck in %s \"%s\" (timeout %d ms) for %d ms more",
		     i, op_names[a->cmd.op], paths[a->cmd.path],
		     cmd_timeout_ms(&a->cmd), MARGIN_MS);
		kill_actor(a);
	}
}

/* Let every busy actor finish, each within its deadline. */
static void settle(void)
{
	struct reply r;
	int i;

	for (i = 0; i < NACTORS; i++) {
		struct actor *a = &actors[i];

		if (a->busy)
			take_reply(a, (int)((a->deadline - now_ns()) / MS),
				   &r);
	}
	check_stuck();
}

static uint64_t global_stats(unsigned int *out)
{
	struct hlock_stats st;

	memset(&st, 0, sizeof(st));
	if (hlock_stats(me, HLOCK_STATS_GLOBAL, &st))
		return UINT64_MAX;
	if (out)
		*out = (unsigned int)st.tickets[HLOCK_TICKET_WRITE].out;
	return st.takeovers;
}

/* Run @op on every actor, one after the other. */
static int all_do(int op, unsigned int *tickets)
{
	struct cmd c = { .op = op };
	struct reply r;
	int i;

	if (tickets)
		*tickets = 0;
	for (i = 0; i < NACTORS; i++) {
		send_cmd(&actors[i], &c);
		if (!take_reply(&actors[i], WITNESS_MS + MARGIN_MS, &r)) {
			fail("actor %d does not answer %s", i, op_names[op]);
			kill_actor(&actors[i]);
			continue;
		}
		if (tickets)
			*tickets += r.ticket;
	}
	return failure[0] ? -1 : 0;
}

/*
 * Every actor checks its own view; the write tickets out are theirs (a
 * takeover gives its ticket back in a kworker: looked at again for 5 s).
 */
static void check_all(void)
{
	unsigned int out = 0, tickets = 0;
	int attempt;

	settle();
	for (attempt = 0; attempt < 100; attempt++) {
		usleep(attempt ? 50000 : 20000);
		if (all_do(OP_CHECK, &tickets))
			return;
		global_stats(&out);
		if (out == tickets)
			break;
	}
	if (out != tickets)
		fail("%u write tickets out, the actors hold %u", out, tickets);
	table_check("check");
}

static void reclaim(void)
{
	int ret = write_file_str(RECLAIM, "1", 0);

	if (ret)
		fail("%s: %s", RECLAIM, strerror(-ret));
	else if (verbose)
		printf("# %d.%d reclaim\n", seed_now, step_now);
}

static void random_cmd(struct actor *a, struct cmd *c)
{
	unsigned int r = rnd(100), k;

	memset(c, 0, sizeof(*c));
	c->path = 1 + (int)rnd(NPATHS - 1);
	if (!rnd(12))
		c->path = 0;
	c->mode = lock_modes[rnd(5)];
	c->seed = rnd(1u << 30);
	if (a->pending && r < 30) {
		c->op = OP_COLLECT;
		c->timeout_ms = rnd(3) ? 0 : 20 + (int)rnd(80);
	} else if (r < 45 || r >= 93) {
		c->op = OP_LOCK;
		k = rnd(100);
		c->kind = k < 35 ? K_TRY : k < 75 ? K_TIMED : K_ASYNC;
		c->front = !rnd(5);
		c->pick = rnd(10) < 4;
		c->timeout_ms = 5 + (int)rnd(150);
		k = rnd(4);
		c->lease_ms = k < 2 ? 0 : k == 2 ? 100 + (int)rnd(200) :
			      LONG_LEASE_MS;
	} else if (r < 62) {
		c->op = OP_UNLOCK;
		c->pick = rnd(10) < 7;
	} else if (r < 70) {
		c->op = OP_DOWNGRADE;
		c->pick = rnd(4) != 0;
	} else if (r < 80) {
		c->op = OP_YIELD;
		c->timeout_ms = rnd(4) ? 20 + (int)rnd(280) : 0;
	} else if (r < 88) {
		c->op = OP_RENEW;
	} else {
		c->op = OP_REOPEN;
	}
}

static void run_steps(int from, int to)
{
	struct reply r;
	struct cmd c;
	int i;

	for (step_now = from; step_now < to && !failure[0] && !seed_failed;
	     step_now++) {
		struct actor *a = &actors[rnd(NACTORS)];
		unsigned int what = rnd(100);

		for (i = 0; i < NACTORS; i++)
			take_reply(&actors[i], 0, &r);
		check_stuck();
		if (what < 2) {
			reclaim();
		} else if (what < 4) {
			kill_actor(a);
		} else if (!a->busy) {
			random_cmd(a, &c);
			send_cmd(a, &c);
			take_reply(a, 1 + (int)rnd(3), &r);
		}
		if (step_now % CHECK_EVERY == CHECK_EVERY - 1)
			check_all();
		else
			table_check("step");
	}
}

/* ------------------------------------------------------------------ */
/* Checkpoints: probes and duels, every node in step. */

/* A locker of the checkpoints, and its own witness connection. */
struct aux {
	int fd;
	int opens;
	int64_t vuln;
	struct wcl w;
};

static struct aux aux[2];
static const uint8_t no_modes[NPATHS];

static int aux_open(int i)
{
	char why[32];

	aux[i].vuln = INT64_MAX;
	aux[i].fd = hlock_open();
	if (aux[i].fd < 0)
		return fail("open: %s", strerror(-aux[i].fd));
	snprintf(why, sizeof(why), "n%d.x%d.%d", node, i, aux[i].opens++);
	hlock_describe(aux[i].fd, why);
	return 0;
}

static int aux_send(int i, const uint8_t *modes)
{
	int ret = wcl_state(&aux[i].w, modes, aux[i].vuln, seed_now,
			    step_now);

	return ret ? fail("%s", aux[i].w.msg) : 0;
}

static int aux_report(int i)
{
	uint8_t modes[NPATHS];

	held_modes(aux[i].fd, modes);
	return aux_send(i, modes);
}

/* Unlock @p, the witness told first; return what the unlock said. */
static int aux_unlock(int i, int p)
{
	uint8_t modes[NPATHS];
	int q;

	held_modes(aux[i].fd, modes);
	for (q = 0; q < NPATHS; q++)
		if (q == p || below(p, q))
			modes[q] = HLOCK_NL;
	aux_send(i, modes);
	return hlock_unlock(aux[i].fd, paths[p]);
}

static void aux_close(int i)
{
	if (aux[i].fd < 0)
		return;
	aux_send(i, no_modes);
	close(aux[i].fd);
	aux[i].fd = -1;
}

/*
 * Lock @p in @mode (@flags, @tmo_ms, a lease of @lease_ms) on aux locker
 * @i, and report it; the bound of a new lease is reported before.
 */
static int aux_lock(int i, int p, int mode, unsigned int flags, int tmo_ms,
		    int lease_ms)
{
	int64_t t0;
	int ret;

	if (lease_ms) {
		t0 = now_ns() + lease_ms * MS;
		if (t0 < aux[i].vuln)
			aux[i].vuln = t0;
		aux_report(i);
	}
	ret = hlock_lock_lease(aux[i].fd, paths[p], mode, flags,
			       tmo_ms * MS, lease_ms * MS);
	if (!ret)
		aux_report(i);
	return ret;
}

/* Poll HLOCK_IOC_BLOCKING of @p until it says @want, @ms at most. */
static int wait_blocking(int i, int p, int want, int ms)
{
	int64_t end = now_ns() + ms * MS;
	int b;

	for (;;) {
		b = hlock_blocking(aux[i].fd, paths[p]);
		if (b == want || now_ns() > end)
			return b;
		sleep_ms(10);
	}
}

static long probe_tries, probe_first;

/* Take X on every path, each granted and then blocking nobody. */
static void probe_timed(void)
{
	int p, ret, b;

	if (aux_open(0))
		return;
	for (p = 0; p < NPATHS && (!failure[0] || keep_going); p++) {
		ret = hlock_lock(aux[0].fd, paths[p], HLOCK_X, 0,
				 PROBE_MS * MS);
		if (ret) {
			fail("probe: X on \"%s\" said %d (%s) within %d ms, nothing held on any node",
			     paths[p], ret, strerror(-ret), PROBE_MS);
			dump_dlm(p);
			continue;
		}
		aux_report(0);
		b = wait_blocking(0, p, 0, PROBE_MS);
		if (b)
			fail("probe: X granted on \"%s\" still blocks a waiter %d ms on (HLOCK_IOC_BLOCKING says %d), nothing waits on any node",
			     paths[p], PROBE_MS, b);
		if (b)
			dump_dlm(p);
		aux_unlock(0, p);
	}
	aux_close(0);
}

/*
 * Try X on every path (FRONT every other one) until granted: the other
 * nodes hold nothing, only cache, so it is, within PROBE_MS.
 */
static void probe_try(int cp)
{
	int p, ret, n;
	int64_t end;

	if (aux_open(0))
		return;
	for (p = 0; p < NPATHS && (!failure[0] || keep_going); p++) {
		unsigned int flags = (p + cp) & 1 ? HLOCK_F_FRONT : 0;

		end = now_ns() + PROBE_MS * MS;
		for (n = 1; ; n++) {
			ret = hlock_lock(aux[0].fd, paths[p], HLOCK_X, flags,
					 0);
			if (ret != -EAGAIN || now_ns() > end)
				break;
			sleep_ms(20);
		}
		probe_tries += n;
		probe_first += n == 1 && !ret;
		if (ret) {
			fail("probe: %d tries of X%s on \"%s\" in %d ms, the last said %d (%s), nothing held on any node",
			     n, flags ? " (front)" : "", paths[p], PROBE_MS,
			     ret, strerror(-ret));
			dump_dlm(p);
			continue;
		}
		aux_report(0);
		aux_unlock(0, p);
	}
	aux_close(0);
}

static void probes(int cp)
{
	int i;

	for (i = 1; i <= nodes && !seed_failed; i++) {
		if (i == node) {
			if (i > 1)
				probe_try(cp);
			probe_timed();
		}
		if (barrier("probe", NULL, NULL))
			return;
	}
	if (seed_failed)
		return;
	if (node == 1)
		probe_try(cp);
	barrier("probe-try", NULL, NULL);
}

enum duel {
	D_TAKEOVER, D_YIELD, D_GIVEUP, D_TRY, D_CONVDL, D_ASYNC, NDUELS,
};

static const char *const duel_names[] = {
	"takeover", "yield", "giveup", "try", "convdl", "async",
};

static long duels_run[NDUELS];

/* A random mode that conflicts with @m (common stream). */
static int conflicting(int m)
{
	int c[5], n = 0, i;

	for (i = 0; i < 5; i++)
		if (conflict(m, lock_modes[i]))
			c[n++] = lock_modes[i];
	return c[crnd(n)];
}

/* A random mode compatible with @m, which is below X. */
static int compatible(int m)
{
	int c[5], n = 0, i;

	for (i = 0; i < 5; i++)
		if (!conflict(m, lock_modes[i]))
			c[n++] = lock_modes[i];
	return c[crnd(n)];
}

static uint64_t locker_stat(int i, bool yields)
{
	struct hlock_stats st;

	memset(&st, 0, sizeof(st));
	if (hlock_stats(aux[i].fd, HLOCK_STATS_LOCKER, &st))
		return UINT64_MAX;
	return yields ? st.yields : st.takeovers;
}

#define DUEL_FAIL(fmt, ...)						\
	fail("duel %s on \"%s\", node %d holding %s, node %d asking %s: " fmt, \
	     duel_names[kind], paths[p], h, hlock_mode_name(mh), w,	\
	     hlock_mode_name(mw), ##__VA_ARGS__)

/*
 * One duel between node @h (holding) and node @w (asking) on a random
 * path, the same on every node; nodes that are neither only meet the
 * barriers.
 */

static void duel(int kind)
{
	int64_t data[4] = { 0 }, all[MAX_NODES][4];
	int p = (int)crnd(NPATHS), h, w, mh, mw, mc = 0, ret, b;
	bool held = false, cancel = crnd(2);
	/* Every choice of the common stream here, whatever the role. */
	unsigned int front1 = crnd(2) ? HLOCK_F_FRONT : 0;
	unsigned int front2 = crnd(2) ? HLOCK_F_FRONT : 0;
	const int lease_ms = 200;
	bool was_failed;
	uint64_t before;
	int n;

	h = 1 + (int)crnd(nodes);
	w = 1 + h % nodes;
	was_failed = seed_failed;
	switch (kind) {
	case D_GIVEUP:
		mh = lock_modes[crnd(3)];	/* IS, IX or S */
		break;
	case D_TRY:
		mh = lock_modes[crnd(4)];	/* below X */
		mc = compatible(mh);
		break;
	case D_CONVDL:
		mh = HLOCK_S;
		break;
	default:
		mh = lock_modes[crnd(5)];
		break;
	}
	mw = kind == D_CONVDL ? HLOCK_S : conflicting(mh);
	duels_run[kind]++;
	if (verbose)
		printf("# %d duel %s on \"%s\": node %d %s, node %d %s\n",
		       seed_now, duel_names[kind], paths[p], h,
		       hlock_mode_name(mh), w, hlock_mode_name(mw));
	/* The holder's grant first. */
	if (node == h || (kind == D_CONVDL && node == w)) {
		if (aux_open(0))
			goto bar1;
		ret = aux_lock(0, p, node == h ? mh : mw, 0, DUEL_MS, 0);
		if (ret)
			DUEL_FAIL("node %d's grant said %d (%s), nothing else held",
				  node, ret, strerror(-ret));
		held = !ret;
	}
	if (kind == D_TAKEOVER && node == h && held) {
		/*
		 * No wait of another node in its way, not even one that
		 * ended and was not probed away yet; then a lease, on the
		 * grant (a recursion restarts it), that expires with nobody
		 * waiting: it stays held.
		 */
		for (n = 0; n < NPATHS; n++)
			if ((n == p || below(p, n)) &&
			    wait_blocking(0, n, 0, PROBE_MS))
				DUEL_FAIL("\"%s\" blocks a waiter before anyone waits",
					  paths[n]);
		ret = aux_lock(0, p, mh, 0, DUEL_MS, lease_ms);
		if (ret)
			DUEL_FAIL("the leased recursion said %d", ret);
		sleep_ms(3 * lease_ms);
		if (hlock_held(aux[0].fd, paths[p]) != mh ||
		    (poll_events(aux[0].fd) & POLLPRI) ||
		    locker_stat(0, false))
			DUEL_FAIL("an expired lease was taken over with nobody waiting (held %d, takeovers %llu)",
				  hlock_held(aux[0].fd, paths[p]),
				  (unsigned long long)locker_stat(0, false));
	}
bar1:
	/* The nodes agree on the duel: the common stream is in step. */
	data[3] = cp_state;
	if (barrier(duel_names[kind], data, all) || seed_failed)
		goto out;
	for (n = 0; n < nodes; n++)
		if (all[n][3] != data[3])
			DUEL_FAIL("node %d drew other parameters", n + 1);
	data[3] = 0;
	switch (kind) {
	case D_TAKEOVER:
	case D_YIELD:
		if (node == w) {
			if (aux_open(0))
				break;
			ret = aux_lock(0, p, mw, 0, DUEL_MS, 0);
			if (ret)
				DUEL_FAIL("the asking lock said %d (%s) within %d ms",
					  ret, strerror(-ret), DUEL_MS);
			else
				sleep_ms(30);
			if (!ret)
				aux_unlock(0, p);
			aux_close(0);
		}
		if (node != h || !held)
			break;
		if (kind == D_TAKEOVER) {
			struct pollfd pf = { .fd = aux[0].fd,
					     .events = POLLPRI };

			held = false;
			if (poll(&pf, 1, DUEL_MS) != 1) {
				DUEL_FAIL("the holder was not told of a takeover within %d ms",
					  DUEL_MS);
				break;
			}
			b = hlock_held(aux[0].fd, paths[p]);
			ret = aux_unlock(0, p);
			if (b)
				DUEL_FAIL("told of a takeover, still holds %d",
					  b);
			else if (ret != -ESTALE)
				DUEL_FAIL("taken over, its unlock said %d",
					  ret);
			else if (locker_stat(0, false) != 1)
				DUEL_FAIL("taken over, takeovers say %llu",
					  (unsigned long long)
					  locker_stat(0, false));
			break;
		}
		b = wait_blocking(0, p, 1, DUEL_MS);
		if (b != 1) {
			DUEL_FAIL("the other node's wait never blocked the grant (HLOCK_IOC_BLOCKING says %d)",
				  b);
			break;
		}
		before = locker_stat(0, true);
		aux_send(0, no_modes);
		ret = hlock_yield(aux[0].fd, DUEL_MS * MS);
		if (ret)
			DUEL_FAIL("the yield said %d (%s)", ret,
				  strerror(-ret));
		else if (locker_stat(0, true) != before + 1)
			DUEL_FAIL("a yield with a waiter on node %d released nothing",
				  w);
		else if (hlock_held(aux[0].fd, paths[p]) != mh)
			DUEL_FAIL("after the yield, held in %d",
				  hlock_held(aux[0].fd, paths[p]));
		aux_report(0);
		held = !ret;
		break;
	case D_GIVEUP:
		if (node == w) {
			if (aux_open(0))
				break;
			ret = aux_lock(0, p, mw, 0, 300, 0);
			if (ret != -ETIMEDOUT)
				DUEL_FAIL("the asking lock of 300 ms said %d, not ETIMEDOUT",
					  ret);
			aux_close(0);
		}
		break;
	case D_TRY:
		if (node != w || aux_open(0))
			break;
		ret = hlock_lock(aux[0].fd, paths[p], mw, front1, 0);
		if (ret != -EAGAIN)
			DUEL_FAIL("a try of %s said %d, not EAGAIN",
				  hlock_mode_name(mw), ret);
		if (!ret)
			aux_report(0);
		if (!ret)
			aux_unlock(0, p);
		{
			int64_t end = now_ns() + DUEL_MS * MS;

			for (n = 1; ; n++) {
				ret = hlock_lock(aux[0].fd, paths[p], mc,
						 front2, 0);
				if (ret != -EAGAIN || now_ns() > end)
					break;
				sleep_ms(20);
			}
		}
		if (ret)
			DUEL_FAIL("%d tries of the compatible %s failed in %d ms, the last with %d",
				  n, hlock_mode_name(mc), DUEL_MS, ret);
		else
			aux_report(0);
		if (!ret)
			aux_unlock(0, p);
		aux_close(0);
		break;
	case D_CONVDL:
		if ((node != h && node != w) || !held)
			break;
		data[1] = now_ns();
		ret = hlock_lock(aux[0].fd, paths[p], HLOCK_X, 0,
				 DUEL_MS * MS);
		data[1] = (now_ns() - data[1]) / MS;
		data[0] = ret;
		if (!ret) {
			aux_report(0);
			sleep_ms(20);
		} else if (ret == -EDEADLK &&
			   hlock_held(aux[0].fd, paths[p]) != HLOCK_S) {
			DUEL_FAIL("the refused conversion left %d held",
				  hlock_held(aux[0].fd, paths[p]));
		}
		aux_unlock(0, p);
		aux_close(0);
		held = false;
		break;
	case D_ASYNC:
		if (node != w || aux_open(0))
			break;
		ret = hlock_lock(aux[0].fd, paths[p], mw, HLOCK_F_ASYNC, 0);
		b = hlock_wait(aux[0].fd, 0);
		if (ret != -EINPROGRESS || b != -EAGAIN)
			DUEL_FAIL("the asynchronous request said %d, its wait %d",
				  ret, b);
		if (!cancel)
			break;
		ret = aux_unlock(0, p);
		b = hlock_wait(aux[0].fd, 0);
		if (ret < 0 || b != -ENOENT)
			DUEL_FAIL("its unlock said %d, the wait after it %d",
				  ret, b);
		aux_close(0);
		break;
	}
	if (barrier(duel_names[kind], data, all))
		goto out;
	switch (seed_failed ? -1 : kind) {
	case D_GIVEUP:
		if (node != h || !held)
			break;
		b = wait_blocking(0, p, 0, DUEL_MS);
		if (b)
			DUEL_FAIL("the wait that gave up still blocks the grant %d ms on (HLOCK_IOC_BLOCKING says %d)",
				  DUEL_MS, b);
		if (aux_open(1))
			break;
		ret = hlock_lock(aux[1].fd, paths[p], mh, 0, DUEL_MS * MS);
		if (ret)
			DUEL_FAIL("a second %s here, held back for the wait that gave up, said %d",
				  hlock_mode_name(mh), ret);
		else
			aux_report(1);
		if (!ret)
			aux_unlock(1, p);
		aux_close(1);
		break;
	case D_TRY:
		if (node != h || !held)
			break;
		b = wait_blocking(0, p, 0, DUEL_MS);
		if (b)
			DUEL_FAIL("after the tries, the grant still blocks %d ms on (HLOCK_IOC_BLOCKING says %d)",
				  DUEL_MS, b);
		break;
	case D_CONVDL:
		if (!((all[h - 1][0] == 0 && all[w - 1][0] == -EDEADLK) ||
		      (all[h - 1][0] == -EDEADLK && all[w - 1][0] == 0)))
			DUEL_FAIL("both held S and converted to X: node %d said %lld after %lld ms, node %d %lld after %lld ms, not one EDEADLK and one grant",
				  h, (long long)all[h - 1][0],
				  (long long)all[h - 1][1], w,
				  (long long)all[w - 1][0],
				  (long long)all[w - 1][1]);
		break;
	case D_ASYNC:
		if (node == h && held && !cancel) {
			aux_unlock(0, p);
			held = false;
		}
		if (node == h && held && cancel) {
			b = wait_blocking(0, p, 0, DUEL_MS);
			if (b)
				DUEL_FAIL("after the request was withdrawn, the grant still blocks %d ms on (HLOCK_IOC_BLOCKING says %d)",
					  DUEL_MS, b);
		}
		if (node == w && !cancel && aux[0].fd >= 0) {
			ret = hlock_wait(aux[0].fd, DUEL_MS * MS);
			if (ret)
				DUEL_FAIL("once released, the request's wait said %d",
					  ret);
			else
				aux_report(0);
			if (!ret)
				aux_unlock(0, p);
			aux_close(0);
		}
		break;
	}
	/*
	 * Every node learns whether the duel failed anywhere, and shows then
	 * what it sees, before anything is let go.
	 */
	if (barrier(duel_names[kind], NULL, NULL))
		goto out;
out:
	if (seed_failed && !was_failed) {
		dump_table();
		dump_dlm(p);
	}
	if (held && node == h && aux[0].fd >= 0)
		aux_unlock(0, p);
	aux_close(0);
	aux_close(1);
	if (!bailed)
		barrier(duel_names[kind], NULL, NULL);
}

static int duel_order[NDUELS];
static uint64_t takeovers_base;
/* Where a seed's time went: its steps, its checkpoints (ms). */
static int64_t ms_steps, ms_cps;

/*
 * Everything settles and is released on every node; then the probes and
 * the duels; then the random steps go on.
 */
static void checkpoint(int cp, bool last)
{
	int64_t data[4] = { 0 }, all[MAX_NODES][4];
	unsigned int out = 0;
	char prefix[16];
	uint64_t t;
	long others = 0;
	int i, n;

	check_all();
	all_do(OP_UNWIND, NULL);
	write_file_str(WRITE_TICKETS, "0", 0);
	for (i = 0; i < 100; i++) {
		global_stats(&out);
		if (!out)
			break;
		usleep(50000);
	}
	if (out)
		fail("%u write tickets out, every actor released everything",
		     out);
	snprintf(prefix, sizeof(prefix), "n%d.", node);
	n = records_of(prefix);
	if (n)
		fail("%d records left once every actor released everything",
		     n);
	/* Invariant 4: takeovers only when something waited. */
	t = global_stats(NULL);
	data[0] = calls_wait;
	data[1] = calls_try;
	data[2] = (int64_t)(t - takeovers_base);
	if (barrier("settled", data, all)) {
		bailed = true;
		return;
	}
	for (i = 0; i < nodes; i++)
		if (i + 1 != node)
			others += all[i][0] + all[i][1];
	if (t != takeovers_base && !calls_wait && !others)
		fail("%llu takeovers, and no lock call that could wait here nor any on another node",
		     (unsigned long long)(t - takeovers_base));
	if (!seed_failed && !no_probes)
		probes(cp);
	for (i = 0; i < DUELS_PER_CP && !bailed && !seed_failed && !no_duels;
	     i++)
		duel(duel_only >= 0 ? duel_only :
		     duel_order[(cp * DUELS_PER_CP + i) % NDUELS]);
	takeovers_base = global_stats(NULL);
	calls_wait = 0;
	calls_try = 0;
	if (!last) {
		char buf[16];

		snprintf(buf, sizeof(buf), "%d", write_pool);
		write_file_str(WRITE_TICKETS, buf, 0);
	}
	if (barrier("checkpoint", NULL, NULL))
		bailed = true;
}

static int run_seed(int seed, int steps)
{
	struct cmd c = { .op = OP_EXIT };
	char buf[16], prefix[32];
	int i, cp;

	seed_now = seed;
	step_now = 0;
	failure[0] = 0;
	seed_failed = false;
	rnd_state = (unsigned int)seed * 2654435761u ^ (unsigned int)node *
		    0x9e3779b9u;
	cp_state = (unsigned int)seed * 2246822519u + 1;
	calls_wait = 0;
	calls_try = 0;
	/* Every kind of duel once a seed, in an order of its own. */
	for (i = 0; i < NDUELS; i++)
		duel_order[i] = i;
	for (i = NDUELS - 1; i > 0; i--) {
		int j = (int)crnd(i + 1), t = duel_order[i];

		duel_order[i] = duel_order[j];
		duel_order[j] = t;
	}
	write_pool = 1 + (int)rnd(2);
	snprintf(buf, sizeof(buf), "%d", write_pool);
	if (write_file_str(WRITE_TICKETS, buf, 0))
		fail("cannot set write_tickets");
	for (i = 0; i < NACTORS; i++)
		spawn(&actors[i]);
	if (barrier("seed", NULL, NULL)) {
		bailed = true;
		return -1;
	}
	takeovers_base = global_stats(NULL);
	ms_steps = 0;
	ms_cps = 0;
	for (cp = 0; cp < NCHECKPOINTS && !bailed; cp++) {
		int64_t t0 = now_ns();

		run_steps(cp * steps / NCHECKPOINTS,
			  (cp + 1) * steps / NCHECKPOINTS);
		ms_steps += (now_ns() - t0) / MS;
		t0 = now_ns();
		checkpoint(cp, cp == NCHECKPOINTS - 1);
		ms_cps += (now_ns() - t0) / MS;
	}
	for (i = 0; i < NACTORS; i++) {
		struct reply r;

		if ((actors[i].busy && !take_reply(&actors[i], MARGIN_MS, &r)) ||
		    write(actors[i].sock, &c, sizeof(c)) < 0)
			kill(actors[i].pid, SIGKILL);
		close(actors[i].sock);
		waitpid(actors[i].pid, NULL, 0);
		snprintf(prefix, sizeof(prefix), "n%d.p%d.", node,
			 (int)actors[i].pid);
		if (records_of(prefix))
			fail("actor %d left records at exit", i);
	}
	write_file_str(WRITE_TICKETS, "0", 0);
	return failure[0] ? -1 : 0;
}

/* Node 1: the witness, in a child, listening before this returns. */
static pid_t start_witness(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(WITNESS_PORT),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int lfd, one = 1, pfd[2];
	pid_t pid;
	char ch;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || pipe(pfd))
		return -1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 64))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(pfd[0]);
		_exit(witness_run(lfd, nodes, pfd[1]));
	}
	close(lfd);
	close(pfd[1]);
	if (read(pfd[0], &ch, 1) != 1)
		return -1;
	close(pfd[0]);
	return pid;
}

int main(int argc, char **argv)
{
	int seeds = test_scaled(6, 2), steps = test_scaled(200, 60);
	const char *kernel = getenv("HLOCK_KERNEL");
	int seed, first = 1, passed = 0, failed = 0, i, status;
	int64_t t0 = now_ns();
	pid_t wpid = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: %s NODE NODES [SEEDS [STEPS [FIRST [-v]]]]\n",
			argv[0]);
		return 64;
	}
	node = atoi(argv[1]);
	nodes = atoi(argv[2]);
	if (argc > 3)
		seeds = atoi(argv[3]);
	if (argc > 4)
		steps = atoi(argv[4]);
	if (argc > 5)
		first = atoi(argv[5]);
	if (argc > 6 && !strcmp(argv[6], "-v"))
		verbose = true;
	if (node < 1 || node > nodes || nodes < 2 || nodes > MAX_NODES ||
	    seeds < 1 || steps < NCHECKPOINTS) {
		fprintf(stderr, "%s: bad arguments\n", argv[0]);
		return 64;
	}
	/* HLOCK_CI_DUEL=NAME: every duel of that kind. */
	for (i = 0; getenv("HLOCK_CI_DUEL") && i < NDUELS; i++)
		if (!strcmp(getenv("HLOCK_CI_DUEL"), duel_names[i]))
			duel_only = i;
	no_duels = getenv("HLOCK_CI_DUEL") &&
		   !strcmp(getenv("HLOCK_CI_DUEL"), "none");
	no_probes = getenv("HLOCK_CI_PROBES") &&
		    !strcmp(getenv("HLOCK_CI_PROBES"), "0");
	keep_going = getenv("HLOCK_CI_KEEP_GOING") &&
		     !strcmp(getenv("HLOCK_CI_KEEP_GOING"), "1");
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	printf("TAP version 13\n1..%d\n", seeds + (node == 1));
	if (!have_device() || access(WRITE_TICKETS, W_OK)) {
		printf("Bail out! no %s or no write_tickets parameter\n",
		       HLOCK_DEVICE);
		return 1;
	}
	if (node == 1) {
		wpid = start_witness();
		if (wpid < 0) {
			printf("Bail out! the witness cannot listen on port %d: %s\n",
			       WITNESS_PORT, strerror(errno));
			return 1;
		}
	}
	me = hlock_open();
	if (me < 0) {
		printf("Bail out! no locker: %s\n", strerror(-me));
		return 1;
	}
	if (wcl_open(&ctl, WK_CONTROL, node, 0, 0, "control", BARRIER_MS)) {
		printf("Bail out! %s\n", ctl.msg);
		return 1;
	}
	for (i = 0; i < 2; i++) {
		char who[32];

		aux[i].fd = -1;
		snprintf(who, sizeof(who), "n%d.x%d", node, i);
		if (wcl_open(&aux[i].w, WK_LOCKER, node, 100 + i, 0, who,
			     WITNESS_MS)) {
			printf("Bail out! %s\n", aux[i].w.msg);
			return 1;
		}
	}
	printf("# node %d of %d: %d seeds from %d of %d steps, %d actors a node, checks every %d steps, %d checkpoints of %d duels a seed\n",
	       node, nodes, seeds, first, steps, NACTORS, CHECK_EVERY,
	       NCHECKPOINTS, DUELS_PER_CP);
	for (seed = first; seed < first + seeds && !bailed; seed++) {
		int64_t s0 = now_ns();

		if (run_seed(seed, steps)) {
			printf("# reproduce: scripts/vm-cluster --kernel %s --extra build/selftests/hlock_cluster_interact --extra selftests/hlock_cluster_lib.sh %d selftests/hlock_cluster_interact.sh 1 %d %d -v\n",
			       kernel ? kernel : "6.12", nodes, steps, seed);
			printf("not ok %d seed %d\n", seed - first + 1, seed);
			failed++;
		} else {
			printf("ok %d seed %d (%lld ms: steps %lld, checkpoints %lld)\n",
			       seed - first + 1, seed,
			       (long long)((now_ns() - s0) / MS),
			       (long long)ms_steps, (long long)ms_cps);
			passed++;
		}
	}
	if (bailed)
		printf("Bail out! a barrier failed: the nodes are out of step\n");
	else
		barrier("end", NULL, NULL);
	printf("# duels:");
	for (i = 0; i < NDUELS; i++)
		printf(" %s %ld", duel_names[i], duels_run[i]);
	printf("; probe tries %ld, %ld granted at the first\n", probe_tries,
	       probe_first);
	wcl_close(&ctl);
	for (i = 0; i < 2; i++)
		wcl_close(&aux[i].w);
	if (node == 1) {
		int64_t end = now_ns() + 60 * SEC;

		while (waitpid(wpid, &status, WNOHANG) == 0) {
			if (now_ns() > end) {
				kill(wpid, SIGKILL);
				waitpid(wpid, &status, 0);
				break;
			}
			sleep_ms(100);
		}
		if (WIFEXITED(status) && !WEXITSTATUS(status)) {
			printf("ok %d witness: no two lockers on any node held conflicting modes at once\n",
			       seeds + 1);
			passed++;
		} else {
			printf("not ok %d witness: %s\n", seeds + 1,
			       !WIFEXITED(status) ? "killed" :
			       WEXITSTATUS(status) == 1 ? "conflicts seen" :
			       WEXITSTATUS(status) == 2 ?
			       "no report was ever compared with another node's" :
			       "failed");
			failed++;
		}
	}
	printf("# %lld s\n", (long long)((now_ns() - t0) / SEC));
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       passed, failed);
	return failed || bailed ? 1 : 0;
}
