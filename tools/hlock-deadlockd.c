// SPDX-License-Identifier: GPL-2.0
/*
 * hlock-deadlockd: deadlock detection across the nodes of a cluster lock
 * space.
 *
 * The module refuses a wait that closes a cycle of waits at once, but it
 * sees only its own node's waits.  One daemon runs on each node beside
 * dlm_controld, in the initial IPC namespace, for the lock space the
 * module parameter cluster binds; it follows that binding, and holds no
 * locker open between two looks at the lock table, so as not to stand in
 * the way of binding or unbinding (EBUSY while a locker is open).  The
 * daemons of a DLM lockspace form a corosync closed
 * process group (CPG) named after it, and CPG's agreed order delivers
 * every message to every member in the same order, between the same
 * membership changes.  So every daemon runs the same rounds on the same
 * inputs and reaches the same verdict, with nobody elected:
 *
 *  1. start: a daemon whose node has a cluster wait older than the module
 *     parameter cluster_deadlock_ms sends START, at most once an interval.
 *     A START delivered while a round runs is dropped.
 *  2. snapshot: on START, each member reads its node's lock table with
 *     the lockers' names (HLOCK_TABLE_F_IDS) and sends its cluster records:
 *     the waits, and the grants (those that block someone first, as room
 *     allows).
 *  3. search: once every member's snapshot is in, each daemon builds the
 *     same wait-for graph: a locker waiting on a resource for a mode waits
 *     for every other locker, on any node, that holds a conflicting mode
 *     there.  It looks for a cycle with an edge between two nodes (a cycle
 *     within one node is that node's module's to refuse), and picks as
 *     victim the waiter on it that began to wait last: the one that had
 *     waited least when its node read its table for the round (the
 *     nodes' clocks need not agree; ties: the higher node, then locker).
 *  4. confirm: each member reads its table again and says whether every
 *     locker of its own on the cycle is still in the same wait (wait_seq)
 *     and has lowered or released nothing (hold_seq).  Every snapshot was
 *     read before any confirmation, so when all say yes, every edge held
 *     from the last snapshot to the first confirmation: the cycle existed.
 *  5. refuse: the victim's daemon refuses its wait (HLOCK_IOC_REFUSE),
 *     which the module does only if that wait and those holds are still
 *     the ones named; the call fails with EDEADLK and leaves its locker as
 *     before it.
 *
 * A membership change (a node or daemon gone or come) ends the round in
 * progress: nothing is refused on the word of a member that left, and the
 * survivors start afresh.  A lost node's locks are the DLM's to recover.
 * A round still waiting for a member's answer after ROUND_MAX_S (its
 * daemon stopped, or its node dead but not yet out of the membership) is
 * abandoned by ABORT, delivered in order as everything else.
 *
 * What it does not see yet: waits ordered behind other waiters (FIFO) and
 * a node's new requests waiting for another node's waiters: a cycle only
 * through those waits until a timeout or a signal, as before.
 *
 * Messages are in host byte order: the nodes of one cluster share it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
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
#include <sys/stat.h>

#include <corosync/cpg.h>

#include "hlock.h"
#define PROG		"hlock-deadlockd"
#include "cli_common.h"

#define INTERVAL_PARAM	"/sys/module/hlock/parameters/cluster_deadlock_ms"
#define CLUSTER_PARAM	"/sys/module/hlock/parameters/cluster"
/* Most bytes of records one snapshot sends. */
#define SNAP_MAX	(512 * 1024)
/* Most members a round waits for. */
#define MAX_MEMBERS	64
/* Most lockers of a cycle. */
#define MAX_CYCLE	64
/* Edges one round's search looks at, at most. */
#define SEARCH_BUDGET	(1UL << 24)
/* Intervals between two rounds a node starts for the same old waits. */
#define BACKOFF		16
/* Seconds a round may wait for its members' answers. */
#define ROUND_MAX_S	10

/*
 * The protocol's version, in the group's name: daemons whose messages
 * differ never meet (a rolling upgrade searches each version's nodes
 * apart, and finds no cycle across them meanwhile).
 */
#define DL_VERSION	1

enum dl_type { DL_START = 1, DL_SNAP, DL_CONFIRM, DL_ABORT };

/* A round: who started it, and its number there. */
struct round_id {
	uint64_t member;
	uint64_t seq;
};

struct msg_head {
	uint32_t type;
	uint32_t count;		/* DL_SNAP: records; DL_CONFIRM: 1 for yes */
	struct round_id round;
};

/* One record of a snapshot, its path after it, padded to 8 bytes. */
struct snap_rec {
	uint64_t serial;
	uint64_t wait_ns;	/* how long it had waited, for a wait */
	uint32_t locker;
	uint32_t wait_seq;
	uint32_t hold_seq;
	uint32_t pid;
	uint8_t state;
	uint8_t mode;		/* held; wanted when waiting */
	uint8_t convert;
	uint8_t pad;
	uint16_t path_len;
	uint16_t pad2;
	char comm[HLOCK_COMM_LEN];
	char why[HLOCK_WHY_LEN];
};

/* A member's snapshot of the round, as delivered. */
struct snap {
	uint64_t member;
	bool in;
	uint32_t count;
	char *data;
	size_t len;
};

/* A locker of the graph. */
struct vertex {
	unsigned int member;		/* index in the round's members */
	const struct snap_rec *wait;	/* its waiting record, or NULL */
	const struct snap_rec *any;	/* a record of it, for its names */
};

static struct {
	cpg_handle_t cpg;
	uint64_t me;			/* (nodeid << 32) | pid */
	uint64_t members[MAX_MEMBERS];
	unsigned int nr_members;
	bool verbose;
	unsigned int interval_arg;	/* --interval, 0: the parameter */
	uint64_t seq;			/* rounds this daemon started */
	int64_t last_start;		/* when it last sent START */
	uint64_t last_hash;		/* its old waits then (old_wait()) */
	int64_t round_end;		/* when the last round ended here */
	/* The round in progress. */
	bool active;
	int64_t round_start;		/* when it began here */
	bool abort_sent;
	struct round_id round;
	unsigned int nr_round;
	uint64_t round_members[MAX_MEMBERS];
	struct snap snaps[MAX_MEMBERS];
	bool confirmed[MAX_MEMBERS];
	unsigned int confirms, yes;
	/* Its cycle: lockers, by (snapshot, record). */
	unsigned int cycle_len;
	const struct snap_rec *cycle[MAX_CYCLE];
	unsigned int cycle_member[MAX_CYCLE];
	int victim;
} d;

static volatile sig_atomic_t stop;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned int interval_ms(void)
{
	char buf[32];
	FILE *f;
	unsigned int v = 1000;

	if (d.interval_arg)
		return d.interval_arg;
	f = fopen(INTERVAL_PARAM, "r");
	if (!f)
		return v;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%u", &v) != 1)
		v = 1000;
	fclose(f);
	return v;
}

/* Gray's matrix: whether modes @a and @b may be held together. */
static bool compatible(unsigned int a, unsigned int b)
{
	static const uint8_t ok[HLOCK_NR_MODES] = {
		[HLOCK_NL] = 0x3f,
		[HLOCK_IS] = 0x1f,	/* NL IS IX S SIX */
		[HLOCK_IX] = 0x07,	/* NL IS IX */
		[HLOCK_S] = 0x0b,	/* NL IS S */
		[HLOCK_SIX] = 0x03,	/* NL IS */
		[HLOCK_X] = 0x01,	/* NL */
	};

	return a < HLOCK_NR_MODES && b < HLOCK_NR_MODES && (ok[a] >> b & 1);
}

static size_t rec_size(const struct snap_rec *r)
{
	return sizeof(*r) + ((r->path_len + 8u) & ~7u);
}

static const char *rec_path(const struct snap_rec *r)
{
	return (const char *)(r + 1);
}

static bool rec_waits(const struct snap_rec *r)
{
	return r->state != HLOCK_STATE_GRANTED && (r->wait_seq & 1);
}

/* The mode a waiting record waits for. */
static unsigned int rec_wanted(const struct snap_rec *r)
{
	return r->state == HLOCK_STATE_CONVERTING ? r->convert : r->mode;
}

static const char *mode_name(unsigned int m)
{
	return hlock_mode_name((int)m);
}

static const char *path_shown(const char *p)
{
	return *p ? p : "(global)";
}

static int send_msg(const struct msg_head *h, const void *body, size_t len)
{
	struct iovec iov[2] = {
		{ (void *)h, sizeof(*h) },
		{ (void *)body, len },
	};
	cs_error_t err;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		err = cpg_mcast_joined(d.cpg, CPG_TYPE_AGREED, iov, len ? 2 : 1);
		if (err != CS_ERR_TRY_AGAIN)
			break;
		usleep(10000);
	}
	if (err != CS_OK) {
		logf_("cpg_mcast_joined: error %d", err);
		return -1;
	}
	return 0;
}

/*
 * The node's lock table, with ids.  Return: the records (free() them),
 * their number in *@n; NULL on error, logged once until a read works.
 */
static void *table(int *n)
{
	static bool failing;
	void *buf = NULL;
	/*
	 * A locker for a moment: one held open would be a locker of the lock
	 * space, whose binding cannot change while one is open (EBUSY).
	 */
	int fd = hlock_open();

	*n = fd < 0 ? fd : hlock_table_ids_alloc(fd, &buf);
	if (fd >= 0)
		close(fd);
	if (*n < 0) {
		if (!failing)
			logf_("cannot read the lock table: %s", strerror(-*n));
		failing = true;
		return NULL;
	}
	failing = false;
	return buf;
}

/*
 * The DLM lockspace the initial IPC namespace's lock space is bound to,
 * into @buf ("" when none, or no module).
 */
static void binding(char *buf, size_t size)
{
	FILE *f = fopen(CLUSTER_PARAM, "r");

	buf[0] = 0;
	if (!f)
		return;
	if (!fgets(buf, (int)size, f))
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/*
 * Whether the node has a cluster wait of at least @ms.  Return: 1, 0, or
 * -1 on error.
 */
static int old_wait(unsigned int ms, uint64_t *hash)
{
	const struct hlock_lock_record *rec;
	int i, n, found = 0;
	void *buf = table(&n);

	if (!buf)
		return -1;
	/* FNV-1a of the old waits' names: which waits they are. */
	*hash = 0xcbf29ce484222325ULL;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		const struct hlock_record_ext *ext = hlock_record_ext(rec);
		const struct hlock_record_ids *ids = hlock_record_ids(rec);

		if (!ext || !ids || !(ext->flags & HLOCK_REC_CLUSTER) ||
		    rec->state == HLOCK_STATE_GRANTED ||
		    rec->wait_ns < (uint64_t)ms * 1000000)
			continue;
		found = 1;
		*hash = (*hash ^ ids->serial) * 0x100000001b3ULL;
		*hash = (*hash ^ ids->wait_seq) * 0x100000001b3ULL;
	}
	free(buf);
	return found;
}

/* Append @rec to @out if it fits.  Return: false when it did not. */
static bool snap_add(char *out, size_t *len,
		     const struct hlock_lock_record *rec)
{
	const struct hlock_record_ids *ids = hlock_record_ids(rec);
	struct snap_rec *r = (struct snap_rec *)(out + *len);
	size_t size = sizeof(*r) + ((rec->path_len + 8u) & ~7u);

	if (!ids || rec->path_len > HLOCK_PATH_MAX || *len + size > SNAP_MAX)
		return false;
	memset(r, 0, size);
	r->serial = ids->serial;
	r->locker = ids->locker;
	r->wait_seq = ids->wait_seq;
	r->hold_seq = ids->hold_seq;
	r->pid = rec->pid;
	r->state = (uint8_t)rec->state;
	r->mode = (uint8_t)rec->mode;
	r->convert = (uint8_t)rec->convert_mode;
	r->path_len = (uint16_t)rec->path_len;
	r->wait_ns = rec->state == HLOCK_STATE_GRANTED ? 0 : rec->wait_ns;
	memcpy(r->comm, rec->comm, sizeof(r->comm));
	r->comm[sizeof(r->comm) - 1] = 0;
	memcpy(r->why, hlock_record_why(rec), sizeof(r->why));
	r->why[sizeof(r->why) - 1] = 0;
	memcpy(r + 1, hlock_record_path(rec), rec->path_len);
	*len += size;
	return true;
}

/*
 * Send this node's part of the round: its cluster waits, then the grants
 * that block someone (a waiter here, HLOCK_REC_BLOCKING, or on another
 * node, HLOCK_REC_REMOTE_WAIT), as room allows.  A grant left out only
 * hides an edge: a cycle missed, never one made up.
 */
static void send_snap(void)
{
	const struct hlock_lock_record *rec;
	struct msg_head h = { .type = DL_SNAP, .round = d.round };
	char *out = malloc(SNAP_MAX);
	size_t len = 0;
	int i, n, pass;
	void *buf = table(&n);

	if (!out || !buf)
		n = 0;
	for (pass = 0; pass < 2; pass++) {
		for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
			const struct hlock_record_ext *ext = hlock_record_ext(rec);
			bool waits = rec->state != HLOCK_STATE_GRANTED;
			bool blocks = ext && (ext->flags & (HLOCK_REC_BLOCKING |
						HLOCK_REC_REMOTE_WAIT));

			if (!ext || !(ext->flags & HLOCK_REC_CLUSTER))
				continue;
			if ((pass == 0) != waits || (pass == 1 && !blocks))
				continue;
			if (snap_add(out, &len, rec))
				h.count++;
		}
	}
	free(buf);
	send_msg(&h, out, len);
	free(out);
}

/* Index of @member among the round's members, or -1. */
static int round_index(uint64_t member)
{
	unsigned int i;

	for (i = 0; i < d.nr_round; i++)
		if (d.round_members[i] == member)
			return (int)i;
	return -1;
}

static void round_end(void)
{
	unsigned int i;

	for (i = 0; i < d.nr_round; i++) {
		free(d.snaps[i].data);
		d.snaps[i].data = NULL;
		d.snaps[i].in = false;
	}
	d.active = false;
	d.cycle_len = 0;
	d.round_end = clock_ns(CLOCK_MONOTONIC);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The vertices and records of the round's graph. */
struct graph {
	struct vertex *v;
	unsigned int nv;
	/* Every record, with its vertex. */
	const struct snap_rec **rec;
	unsigned int *rv;
	unsigned int *rm;
	unsigned int nr;
	/* Held records sorted by path, for the edges. */
	unsigned int *held;
	unsigned int nheld;
};

static struct graph *sort_graph;

static int cmp_held(const void *a, const void *b)
{
	const struct snap_rec *x = sort_graph->rec[*(const unsigned int *)a];
	const struct snap_rec *y = sort_graph->rec[*(const unsigned int *)b];
	int c;

	if (x->path_len != y->path_len)
		return x->path_len < y->path_len ? -1 : 1;
	c = memcmp(rec_path(x), rec_path(y), x->path_len);
	return c ? c : (*(const unsigned int *)a > *(const unsigned int *)b) -
		       (*(const unsigned int *)a < *(const unsigned int *)b);
}

/*
 * The node of the round's member @m.  A locker is named by its node and
 * serial, not by the member that sent it: two daemons on one node (a
 * mistake) send the same lockers, which must be one vertex each, or a
 * conversion would wait for its own copy.
 */
static uint32_t node_of(unsigned int m)
{
	return (uint32_t)(d.round_members[m] >> 32);
}

/* Order of records by locker: node, then serial, then place. */
static int cmp_locker(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;
	const struct snap_rec *rx = sort_graph->rec[x], *ry = sort_graph->rec[y];

	if (node_of(sort_graph->rm[x]) != node_of(sort_graph->rm[y]))
		return node_of(sort_graph->rm[x]) < node_of(sort_graph->rm[y]) ?
		       -1 : 1;
	if (rx->serial != ry->serial)
		return rx->serial < ry->serial ? -1 : 1;
	return (x > y) - (x < y);
}

/*
 * Build the graph from the round's snapshots: the same on every member,
 * which all have the same snapshots.
 */
static int graph_build(struct graph *g)
{
	unsigned int m, k, i, total = 0, *order;

	memset(g, 0, sizeof(*g));
	for (m = 0; m < d.nr_round; m++)
		total += d.snaps[m].count;
	g->v = calloc(total + 1, sizeof(*g->v));
	g->rec = calloc(total + 1, sizeof(*g->rec));
	g->rv = calloc(total + 1, sizeof(*g->rv));
	g->rm = calloc(total + 1, sizeof(*g->rm));
	g->held = calloc(total + 1, sizeof(*g->held));
	order = calloc(total + 1, sizeof(*order));
	if (!g->v || !g->rec || !g->rv || !g->rm || !g->held || !order) {
		free(order);
		return -1;
	}
	for (m = 0; m < d.nr_round; m++) {
		const char *p = d.snaps[m].data;
		const char *end = p + d.snaps[m].len;

		for (k = 0; k < d.snaps[m].count; k++) {
			const struct snap_rec *r = (const void *)p;

			if ((size_t)(end - p) < sizeof(*r) ||
			    (size_t)(end - p) < rec_size(r))
				break;
			p += rec_size(r);
			if (r->state != HLOCK_STATE_WAITING)
				g->held[g->nheld++] = g->nr;
			order[g->nr] = g->nr;
			g->rm[g->nr] = m;
			g->rec[g->nr++] = r;
		}
	}
	sort_graph = g;
	/* A vertex per locker (its records are apart in a snapshot). */
	qsort(order, g->nr, sizeof(*order), cmp_locker);
	for (i = 0; i < g->nr; i++) {
		const struct snap_rec *r = g->rec[order[i]];
		unsigned int v = g->nv - 1;

		if (!g->nv ||
		    node_of(g->v[v].member) != node_of(g->rm[order[i]]) ||
		    g->v[v].any->serial != r->serial) {
			v = g->nv++;
			g->v[v].member = g->rm[order[i]];
			g->v[v].any = r;
		}
		if (rec_waits(r))
			g->v[v].wait = r;
		g->rv[order[i]] = v;
	}
	free(order);
	qsort(g->held, g->nheld, sizeof(*g->held), cmp_held);
	return 0;
}

static void graph_free(struct graph *g)
{
	free(g->v);
	free(g->rec);
	free(g->rv);
	free(g->rm);
	free(g->held);
}

/* First index in g->held of a record on the path of @w. */
static unsigned int held_first(struct graph *g, const struct snap_rec *w)
{
	unsigned int lo = 0, hi = g->nheld;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;
		const struct snap_rec *r = g->rec[g->held[mid]];
		int c = r->path_len != w->path_len ?
			(r->path_len < w->path_len ? -1 : 1) :
			memcmp(rec_path(r), rec_path(w), w->path_len);

		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Write @len bytes of @s as hex: what lshlock reads back, any byte. */
static void put_hex(FILE *f, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && s[i]; i++)
		fprintf(f, "%02x", (unsigned char)s[i]);
	if (!i)
		fputc('-', f);
}

/*
 * Tell lshlock who, on other nodes, blocks this node's waits: for each
 * waiting locker of this node, every locker of another node that holds a
 * conflicting mode on its resource, one line each (CLI_REMOTE_BLOCKERS,
 * replaced whole).  As of this round: a wait that began since is not in
 * it, and lshlock matches a line to a wait by the locker's serial and
 * wait_seq, so a line about a wait that ended names nothing.
 */
static void publish(struct graph *g)
{
	char tmp[] = CLI_REMOTE_BLOCKERS ".XXXXXX";
	int mine = round_index(d.me), fd;
	unsigned int v, i;
	FILE *f;

	if (mine < 0 ||
	    (mkdir(CLI_REMOTE_DIR, 0755) && errno != EEXIST))
		return;
	fd = mkstemp(tmp);
	if (fd < 0)
		return;
	fchmod(fd, 0644);
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return;
	}
	for (v = 0; v < g->nv; v++) {
		const struct snap_rec *w = g->v[v].wait;

		if (!w || node_of(g->v[v].member) != node_of((unsigned int)mine))
			continue;
		for (i = held_first(g, w); i < g->nheld; i++) {
			const struct snap_rec *r = g->rec[g->held[i]];
			unsigned int u = g->rv[g->held[i]];

			if (r->path_len != w->path_len ||
			    memcmp(rec_path(r), rec_path(w), w->path_len))
				break;
			if (node_of(g->v[u].member) == node_of(g->v[v].member) ||
			    compatible(rec_wanted(w), r->mode))
				continue;
			fprintf(f, "%" PRIu64 " %u %u %u ", w->serial, w->wait_seq,
				node_of(g->v[u].member), r->pid);
			put_hex(f, r->comm, sizeof(r->comm));
			fputc(' ', f);
			put_hex(f, r->why, sizeof(r->why));
			fputc('\n', f);
		}
	}
	if (fclose(f) || rename(tmp, CLI_REMOTE_BLOCKERS))
		unlink(tmp);
}

/* Whether records @a and @b are on one resource. */
static bool same_path(const struct snap_rec *a, const struct snap_rec *b)
{
	return a->path_len == b->path_len &&
	       !memcmp(rec_path(a), rec_path(b), a->path_len);
}

/*
 * A path of waits from @from to @to, breadth first: a waiting vertex
 * leads to every other locker that holds a conflicting mode on its
 * resource.  @prev[] gets each vertex's predecessor on it (UINT_MAX:
 * not reached), @queue has room for every vertex, and *@budget bounds
 * the edges a round looks at.  Return: true when @to was reached.
 */
static bool bfs(struct graph *g, unsigned int from, unsigned int to,
		unsigned int *prev, unsigned int *queue, unsigned long *budget)
{
	unsigned int head = 0, tail = 0, v, i;

	for (v = 0; v < g->nv; v++)
		prev[v] = UINT_MAX;
	prev[from] = from;
	queue[tail++] = from;
	while (head < tail) {
		const struct snap_rec *w;

		v = queue[head++];
		if (v == to)
			return true;
		w = g->v[v].wait;
		for (i = w ? held_first(g, w) : g->nheld; i < g->nheld; i++) {
			const struct snap_rec *r = g->rec[g->held[i]];
			unsigned int u = g->rv[g->held[i]];

			if (!*budget || !same_path(r, w))
				break;
			--*budget;
			if (u == v || prev[u] != UINT_MAX ||
			    compatible(rec_wanted(w), r->mode))
				continue;
			prev[u] = v;
			queue[tail++] = u;
		}
	}
	return false;
}

/*
 * A cycle of waits with an edge between two nodes: for each such edge
 * v -> u, in the graph's order (the same on every member), a path back
 * from u to v closes one.  Every such cycle has such an edge, so none is
 * missed, whatever cycles within a node share its lockers.  Return: true
 * once it is in d.cycle, v first.
 */
static bool cross_cycle(struct graph *g)
{
	unsigned long budget = SEARCH_BUDGET;
	unsigned int *prev = calloc(g->nv + 1, sizeof(*prev));
	unsigned int *queue = calloc(g->nv + 1, sizeof(*queue));
	unsigned int v, i, x, n;
	bool found = false;

	for (v = 0; prev && queue && v < g->nv && !found && budget; v++) {
		const struct snap_rec *w = g->v[v].wait;

		for (i = w ? held_first(g, w) : g->nheld;
		     i < g->nheld && !found && budget; i++) {
			const struct snap_rec *r = g->rec[g->held[i]];
			unsigned int u = g->rv[g->held[i]];

			if (!same_path(r, w))
				break;
			if (u == v || compatible(rec_wanted(w), r->mode) ||
			    node_of(g->v[u].member) == node_of(g->v[v].member) ||
			    !bfs(g, u, v, prev, queue, &budget))
				continue;
			/* v, then u and on along prev[] back from v. */
			for (n = 1, x = prev[v]; x != u; x = prev[x])
				n++;
			if (n + 1 > MAX_CYCLE)
				continue;
			d.cycle_len = n + 1;
			d.cycle[0] = w;
			d.cycle_member[0] = g->v[v].member;
			for (x = prev[v]; n; x = prev[x], n--) {
				d.cycle[n] = g->v[x].wait;
				d.cycle_member[n] = g->v[x].member;
				if (x == u)
					break;
			}
			found = true;
		}
	}
	if (!budget)
		logf_("a search gave up after %lu edges", SEARCH_BUDGET);
	free(prev);
	free(queue);
	return found;
}

/* Look for a cycle across nodes in the round's snapshots. */
static bool search(void)
{
	struct graph g;
	unsigned int k;
	bool found;

	d.cycle_len = 0;
	if (graph_build(&g)) {
		graph_free(&g);
		logf_("out of memory for a search");
		return false;
	}
	publish(&g);
	found = cross_cycle(&g);
	graph_free(&g);
	if (!found)
		return false;
	/*
	 * The victim: the last to begin to wait, as the snapshots tell it
	 * (the nodes read their tables within moments of each other, and
	 * their clocks need not agree); then the higher names.
	 */
	d.victim = 0;
	for (k = 1; k < d.cycle_len; k++) {
		const struct snap_rec *a = d.cycle[k], *b = d.cycle[d.victim];
		uint64_t ma = d.round_members[d.cycle_member[k]];
		uint64_t mb = d.round_members[d.cycle_member[d.victim]];

		if (a->wait_ns < b->wait_ns ||
		    (a->wait_ns == b->wait_ns &&
		     (ma > mb || (ma == mb && a->serial > b->serial))))
			d.victim = (int)k;
	}
	return true;
}

/* Whether this node's lockers on the cycle are as the snapshot saw them. */
static bool confirm_mine(void)
{
	const struct hlock_lock_record *rec;
	int mine = round_index(d.me), i, n;
	unsigned int k, left = 0;
	bool seen[MAX_CYCLE] = { false };
	void *buf;

	for (k = 0; k < d.cycle_len; k++)
		left += (int)d.cycle_member[k] == mine;
	if (!left)
		return true;
	buf = table(&n);
	if (!buf)
		return false;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		const struct hlock_record_ids *ids = hlock_record_ids(rec);

		for (k = 0; ids && k < d.cycle_len; k++) {
			const struct snap_rec *c = d.cycle[k];

			if ((int)d.cycle_member[k] != mine || seen[k] ||
			    c->serial != ids->serial ||
			    c->locker != ids->locker)
				continue;
			if (c->wait_seq != ids->wait_seq ||
			    c->hold_seq != ids->hold_seq)
				goto stale;
			seen[k] = true;
			left--;
		}
	}
stale:
	free(buf);
	return !left;
}

static void log_cycle(const char *what)
{
	unsigned int k;

	logf_("round %" PRIu64 ".%" PRIu64 ": %s, a cycle of %u lockers:",
	      d.round.member >> 32, d.round.seq, what, d.cycle_len);
	for (k = 0; k < d.cycle_len; k++) {
		const struct snap_rec *c = d.cycle[k];

		logf_("  %s node %" PRIu64 " pid %u (%s) locker %u.%" PRIu64
		      " waits for %s on \"%s\"",
		      (int)k == d.victim ? "*" : " ",
		      d.round_members[d.cycle_member[k]] >> 32, c->pid, c->comm,
		      c->locker, c->serial, mode_name(rec_wanted(c)),
		      path_shown(rec_path(c)));
	}
}

static void deliver_confirm(int from, const struct msg_head *h)
{
	const struct snap_rec *v;
	struct hlock_record_ids ids;
	int ret;

	if (d.confirmed[from])
		return;
	d.confirmed[from] = true;
	d.confirms++;
	d.yes += h->count == 1;
	if (d.confirms < d.nr_round)
		return;
	if (d.yes < d.nr_round) {
		if (d.verbose)
			log_cycle("changed before it was confirmed");
		round_end();
		return;
	}
	v = d.cycle[d.victim];
	if (d.round_members[d.cycle_member[d.victim]] == d.me) {
		memset(&ids, 0, sizeof(ids));
		ids.serial = v->serial;
		ids.locker = v->locker;
		ids.wait_seq = v->wait_seq;
		ids.hold_seq = v->hold_seq;
		ret = hlock_open();
		if (ret < 0) {
			logf_("cannot open /dev/hlock: %s", strerror(-ret));
		} else {
			int fd = ret;

			ret = hlock_refuse(fd, &ids);
			close(fd);
		}
		log_cycle(ret ? "confirmed" : "refused the starred wait");
		if (ret)
			logf_("the refusal found the wait gone: %s",
			      strerror(-ret));
	} else if (d.verbose) {
		log_cycle("confirmed, refused on its node");
	}
	round_end();
}

static void deliver_snap(int from, const struct msg_head *h,
			 const char *body, size_t len)
{
	struct msg_head c = { .type = DL_CONFIRM, .round = d.round };
	unsigned int i;

	if (d.snaps[from].in)
		return;
	d.snaps[from].data = malloc(len + 1);
	if (!d.snaps[from].data) {
		logf_("out of memory for a snapshot");
		return;
	}
	memcpy(d.snaps[from].data, body, len);
	d.snaps[from].len = len;
	/* No more records than the bytes can hold, whatever it says. */
	d.snaps[from].count = h->count < len / sizeof(struct snap_rec) ?
			      h->count : (uint32_t)(len / sizeof(struct snap_rec));
	d.snaps[from].in = true;
	for (i = 0; i < d.nr_round; i++)
		if (!d.snaps[i].in)
			return;
	if (!search()) {
		round_end();
		return;
	}
	memset(d.confirmed, 0, sizeof(d.confirmed));
	d.confirms = d.yes = 0;
	c.count = confirm_mine();
	send_msg(&c, NULL, 0);
}

static void deliver(cpg_handle_t handle, const struct cpg_name *group,
		    uint32_t nodeid, uint32_t pid, void *msg, size_t len)
{
	uint64_t from = (uint64_t)nodeid << 32 | pid;
	const struct msg_head *h = msg;
	int i;

	(void)handle;
	(void)group;
	if (len < sizeof(*h))
		return;
	if (h->type == DL_START) {
		if (d.active)
			return;
		d.active = true;
		d.abort_sent = false;
		d.round_start = clock_ns(CLOCK_MONOTONIC);
		d.round = h->round;
		d.nr_round = d.nr_members;
		memcpy(d.round_members, d.members, sizeof(d.members));
		if (d.verbose)
			logf_("round %" PRIu64 ".%" PRIu64 " begins, %u members",
			      d.round.member >> 32, d.round.seq, d.nr_round);
		memset(d.snaps, 0, sizeof(d.snaps));
		send_snap();
		return;
	}
	if (!d.active || h->round.member != d.round.member ||
	    h->round.seq != d.round.seq)
		return;
	if (h->type == DL_ABORT) {
		logf_("round %" PRIu64 ".%" PRIu64 " abandoned: a member did "
		      "not answer within %d s, nothing refused",
		      d.round.member >> 32, d.round.seq, ROUND_MAX_S);
		round_end();
		d.last_hash = 0;
		return;
	}
	i = round_index(from);
	if (i < 0)
		return;
	if (h->type == DL_SNAP)
		deliver_snap(i, h, (const char *)(h + 1), len - sizeof(*h));
	else if (h->type == DL_CONFIRM && d.cycle_len)
		deliver_confirm(i, h);
}

static void confchg(cpg_handle_t handle, const struct cpg_name *group,
		    const struct cpg_address *members, size_t nr,
		    const struct cpg_address *left, size_t nr_left,
		    const struct cpg_address *joined, size_t nr_joined)
{
	size_t i;

	(void)handle;
	(void)group;
	(void)left;
	(void)joined;
	if (d.active) {
		if (d.verbose || d.cycle_len)
			logf_("membership changed: round %" PRIu64 ".%" PRIu64
			      " ends, nothing refused", d.round.member >> 32,
			      d.round.seq);
		round_end();
	}
	/* A round that ended so found nothing: the same waits may start one. */
	d.last_hash = 0;
	d.nr_members = 0;
	for (i = 0; i < nr && i < MAX_MEMBERS; i++)
		d.members[d.nr_members++] =
			(uint64_t)members[i].nodeid << 32 | members[i].pid;
	qsort(d.members, d.nr_members, sizeof(d.members[0]), cmp_u64);
	if (d.verbose)
		logf_("%zu members (%zu left, %zu joined)", nr, nr_left,
		      nr_joined);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/*
 * Start a round when a cluster wait is old enough, once an interval; end
 * one that a member leaves unanswered (a daemon stopped, or its node dead
 * but not yet out of the membership) for ROUND_MAX_S.
 */
static void tick(void)
{
	struct msg_head h = { .type = DL_START };
	unsigned int ms = interval_ms();
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	int64_t gap = (int64_t)ms * 1000000;
	uint64_t hash;

	if (d.active && !d.abort_sent &&
	    now - d.round_start > (int64_t)ROUND_MAX_S * 1000000000) {
		h.type = DL_ABORT;
		h.round = d.round;
		/* Tried again at the next tick if corosync refused it. */
		d.abort_sent = !send_msg(&h, NULL, 0);
		return;
	}
	if (!ms || d.active || now - d.last_start < gap ||
	    now - d.round_end < gap / 2 || old_wait(ms, &hash) != 1)
		return;
	/*
	 * A new cycle needs a new wait, and the node of that wait starts
	 * the round that finds it: the same old waits as at this node's last
	 * start wait BACKOFF intervals (lshlock's remote blockers are as of
	 * the last round).
	 */
	if (hash == d.last_hash && now - d.last_start < BACKOFF * gap)
		return;
	d.last_start = now;
	d.last_hash = hash;
	h.round.member = d.me;
	h.round.seq = ++d.seq;
	send_msg(&h, NULL, 0);
}

static int usage(FILE *f, int code)
{
	fprintf(f,
		"Usage: " PROG " [--interval MS] [--verbose]\n"
		"Deadlock detection across the nodes of the cluster lock space\n"
		"of the initial IPC namespace (one daemon on every node).\n"
		"  -i, --interval MS  age of a wait before a search (default:\n"
		"                     the module parameter cluster_deadlock_ms)\n"
		"  -v, --verbose      log every round\n"
		"  -h, --help         this text\n");
	return code;
}

/*
 * Search the cycles of lockspace @space with the other nodes' daemons
 * until a signal, or until the lock space's binding changes.  Return: 0,
 * or the exit status of an error of corosync's.
 */
static int serve(const char *space)
{
	cpg_callbacks_t cb = { .cpg_deliver_fn = deliver,
			       .cpg_confchg_fn = confchg };
	char now[HLOCK_CLUSTER_NAME_MAX + 2];
	struct cpg_name group;
	unsigned int nodeid;
	struct pollfd pfd;
	int ret, cfd, status = 0;
	cs_error_t err;

	err = cpg_initialize(&d.cpg, &cb);
	if (err != CS_OK) {
		logf_("cpg_initialize: error %d (is corosync running?)", err);
		return 1;
	}
	group.length = (uint32_t)snprintf(group.value, sizeof(group.value),
					  "hlock-dl%u:%s", DL_VERSION, space);
	err = cpg_join(d.cpg, &group);
	if (err == CS_OK)
		err = cpg_local_get(d.cpg, &nodeid);
	if (err == CS_OK)
		err = cpg_fd_get(d.cpg, &cfd);
	if (err != CS_OK) {
		logf_("joining the group %s: error %d", group.value, err);
		cpg_finalize(d.cpg);
		return 1;
	}
	d.me = (uint64_t)nodeid << 32 | (uint32_t)getpid();
	logf_("node %u: searching lockspace %s for cycles across nodes",
	      nodeid, space);
	pfd.fd = cfd;
	pfd.events = POLLIN;
	while (!stop) {
		unsigned int ms = interval_ms();
		int wait = ms ? (int)(ms / 4 ? ms / 4 : 1) : 1000;

		ret = poll(&pfd, 1, wait);
		if (ret > 0) {
			err = cpg_dispatch(d.cpg, CS_DISPATCH_ALL);
			if (err != CS_OK && err != CS_ERR_TRY_AGAIN) {
				logf_("cpg_dispatch: error %d", err);
				status = 1;
				break;
			}
		} else if (ret < 0 && errno != EINTR) {
			status = 1;
			break;
		}
		binding(now, sizeof(now));
		if (strcmp(now, space)) {
			logf_("the lock space left lockspace %s: leaving its group",
			      space);
			break;
		}
		tick();
	}
	if (d.active)
		round_end();
	d.nr_members = 0;
	unlink(CLI_REMOTE_BLOCKERS);
	cpg_leave(d.cpg, &group);
	cpg_finalize(d.cpg);
	return status;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char space[HLOCK_CLUSTER_NAME_MAX + 2];
	int c, ret;

	while ((c = getopt_long(argc, argv, "i:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			d.interval_arg = (unsigned int)strtoul(optarg, NULL, 10);
			if (!d.interval_arg)
				return usage(stderr, 2);
			break;
		case 'v':
			d.verbose = true;
			break;
		case 'h':
			return usage(stdout, 0);
		default:
			return usage(stderr, 2);
		}
	}
	if (optind != argc)
		return usage(stderr, 2);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	while (!stop) {
		/* Bound by the steps that bind the lock space: wait for them. */
		binding(space, sizeof(space));
		if (!space[0]) {
			sleep(1);
			continue;
		}
		ret = serve(space);
		if (ret)
			return ret;
	}
	return 0;
}
