// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the hlock grant logic, built in userspace with ASan and
 * UBSan.  A tiny "space" here stands in for hlock_dev.c: it names heads
 * by path, supplies spares and plays the lock/unlock/wait glue, and an
 * invariant check runs after every step of the randomized test.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlock_core.h"

#define MAX_HEADS	512
/* lock() flag: the locker may not jump queues (not HL_RF_MAY_JUMP). */
#define HL_RF_NO_JUMP	(1U << 30)
/* Lockers: 16 in most tests, hundreds in those of long lists. */
#define MAX_LOCKERS	320
/* Partitions of every head in this build (the kernel has one per CPU). */
#define NR_PARTS	3

static unsigned int policy = HLOCK_POLICY_BATCH;
static int failures, checks;

#define CHECK(cond, ...)						\
	do {								\
		checks++;						\
		if (!(cond)) {						\
			failures++;					\
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, \
				#cond);					\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
		}							\
	} while (0)

/* A head with its partitions and the state of its (pretend) locks. */
struct thead {
	struct hl_head h;
	struct hl_part parts[NR_PARTS];
	int locked;
	int part_locked[NR_PARTS];
	char path[64];
};

static struct thead *heads[MAX_HEADS];
/* New heads are in a cluster lock space, holding NL in the DLM. */
static bool cluster_heads;
/* Head locks held, and partition locks held: never more than one each. */
static int head_locks, part_locks, rcu_depth;
/* The partition the next fast path "runs on". */
static unsigned int cpu;

struct tlocker {
	struct hl_locker lk;
	int notified;
	/* hl_note_blocking() calls for its requests. */
	int basts;
	char target[64];
	int used;
};

static struct tlocker lockers[MAX_LOCKERS];
/* One more than the highest locker used since the last reset(). */
static int top;

static struct thead *thead_of(struct hl_head *h)
{
	return container_of(h, struct thead, h);
}

unsigned int hl_grant_policy(void)
{
	return policy;
}

void hl_head_lock(struct hl_head *h)
{
	CHECK(!head_locks && !part_locks, "head lock nested");
	CHECK(!thead_of(h)->locked, "head locked twice");
	thead_of(h)->locked = 1;
	head_locks++;
}

void hl_head_unlock(struct hl_head *h)
{
	CHECK(thead_of(h)->locked && !part_locks, "head unlock");
	thead_of(h)->locked = 0;
	head_locks--;
}

void hl_assert_head_locked(const struct hl_head *h)
{
	const struct thead *t = container_of(h, struct thead, h);

	CHECK(t->locked, "head %s not locked", t->path);
}

/* The test drives one locker at a time: its lock is the test's. */
void hl_assert_locker_locked(const struct hl_locker *lk)
{
	CHECK(lk != NULL, "no locker");
}

/* A head has children while a head whose parent it is exists. */
bool hl_head_has_children(const struct hl_head *h)
{
	int i;

	for (i = 0; i < MAX_HEADS; i++)
		if (heads[i] && heads[i]->h.parent == h)
			return true;
	return false;
}

static unsigned int part_index(struct hl_head *h, struct hl_part *p)
{
	return (unsigned int)(p - thead_of(h)->parts);
}

void hl_part_lock(struct hl_head *h, struct hl_part *p)
{
	CHECK(h->has_parts && !part_locks, "partition lock");
	thead_of(h)->part_locked[part_index(h, p)] = 1;
	part_locks++;
}

void hl_assert_part_locked(const struct hl_head *h, const struct hl_part *p)
{
	struct hl_head *mh = (struct hl_head *)h;

	CHECK(thead_of(mh)->part_locked[part_index(mh, (struct hl_part *)p)],
	      "partition not locked");
}

void hl_part_unlock(struct hl_head *h, struct hl_part *p)
{
	CHECK(thead_of(h)->part_locked[part_index(h, p)], "partition unlock");
	thead_of(h)->part_locked[part_index(h, p)] = 0;
	part_locks--;
}

struct hl_part *hl_part_lock_local(struct hl_head *h)
{
	struct hl_part *p = &thead_of(h)->parts[cpu++ % NR_PARTS];

	CHECK(!head_locks, "fast path under a head lock");
	hl_part_lock(h, p);
	return p;
}

struct hl_part *hl_part_next(struct hl_head *h, struct hl_part *p)
{
	unsigned int i = p ? part_index(h, p) + 1 : 0;

	return i < NR_PARTS ? &thead_of(h)->parts[i] : NULL;
}

void hl_req_free(struct hl_req *req)
{
	free(req);
}

/* Queues given to lockers, for the check that none is lost. */
static long waitqs;
/* Calls of the core for queues; set to fail them with -ENOMEM. */
static long refills;
static bool refill_fails;

int hl_waitq_refill(struct hl_locker *lk)
{
	CHECK(!head_locks && !part_locks && !rcu_depth, "refill under a lock");
	refills++;
	if (refill_fails)
		return -ENOMEM;
	if (lk->spare_wq)
		return 0;
	hl_locker_add_waitq(lk, malloc(sizeof(struct hl_waitq)));
	waitqs++;
	return 0;
}

void hl_waitq_free(struct hl_waitq *wq)
{
	free(wq);
	waitqs--;
}

static u64 clock_ns;

u64 hl_clock(void)
{
	return ++clock_ns;
}

u64 hl_clock_coarse(void)
{
	return hl_clock();
}

/* The fencing tokens of the one lock space here. */
static u64 last_token;

u64 hl_token_next(struct hl_locker *lk)
{
	(void)lk;
	CHECK(!head_locks && !part_locks, "token drawn under a head lock");
	return ++last_token;
}

void hl_grant_notify(struct hl_locker *lk, struct hl_grants *g)
{
	CHECK(head_locks == 1, "grant outside a head lock");
	if (lk->grant_pending)
		return;
	lk->grant_pending = 1;
	list_add_tail(&lk->grant_node, &g->lockers);
}

void hl_op_done(struct hl_locker *lk)
{
	container_of(lk, struct tlocker, lk)->notified++;
}

/* Per-locker event counts, checked against the operations' outcomes. */
static unsigned long note_acquire, note_wait, note_granted, note_waited,
	note_withdrawn, note_convert, note_release;

void hl_note_acquired(struct hl_locker *lk, unsigned int from,
		      unsigned int to, bool waits)
{
	CHECK(from <= to && to + waits <= lk->op.nr && to == lk->op.level &&
	      (from < to || waits),
	      "acquired %u to %u (%d) at %u", from, to, waits, lk->op.level);
	note_acquire += to - from + waits;
	note_granted += to - from;
}

void hl_note_wait(struct hl_locker *lk, unsigned int level, unsigned int mode,
		  const struct hl_req *req)
{
	struct hl_blockers b = { .max = HLOCK_MAX_BLOCKERS };

	CHECK(lk->op.level == level && mode, "wait at %u", level);
	CHECK(head_locks == 1, "wait noted outside the head lock");
	hl_head_blockers(req->head, req, &b);
	/* In a cluster lock space it may wait for the node alone. */
	CHECK(b.nr > 0 || req->state != HL_CONVERTING || req->head->cluster,
	      "a conversion waits with no blocker");
	note_wait++;
}

/* Waits that may claim expired leases: never a try's (issue 26). */
static unsigned long wait_claims, remote_claims;

void hl_wait_claim(struct hl_locker *lk, struct hl_head *h, unsigned int mode)
{
	CHECK(thead_of(h)->locked, "claim outside the head lock");
	/* Another node's wait (a blocking AST) claims too. */
	if (!lk) {
		CHECK(h->cluster && (h->remote_mask & hl_mode_bit(mode)),
		      "a remote claim of %u at %s", mode, thead_of(h)->path);
		remote_claims++;
		return;
	}
	CHECK(!(lk->op.flags & HL_RF_TRY), "a try claims");
	CHECK(lk->op.heads[lk->op.level] == h && mode, "claim at %s",
	      thead_of(h)->path);
	wait_claims++;
}

void hl_note_granted(struct hl_locker *lk, unsigned int level,
		     unsigned int mode)
{
	CHECK(lk->op.level == level && mode, "granted at %u", level);
	note_granted++;
	note_waited++;
}

void hl_note_withdrawn(struct hl_locker *lk, unsigned int level,
		       unsigned int mode)
{
	CHECK(lk->op.level == level && mode, "withdrawn at %u", level);
	note_withdrawn++;
}

void hl_note_convert(struct hl_req *req, unsigned int target)
{
	CHECK(hl_covers(target, req->mode) && target != req->mode,
	      "convert %u to %u", req->mode, target);
	note_convert++;
}

void hl_note_release(struct hl_req *req)
{
	CHECK(req->state == HL_GRANTED, "release state %u", req->state);
	note_release++;
}

static unsigned long note_publish;
static const struct hl_req *last_publish;

void hl_note_blocking(struct hl_req *holder)
{
	CHECK(head_locks == 1, "blocking noted outside the head lock");
	CHECK(holder->state != HL_WAITING && holder->bast,
	      "blocking noted for a waiter or an unmarked grant");
	container_of(holder->locker, struct tlocker, lk)->basts++;
}

static unsigned long fast_shuts;

void hl_note_fast_shut(const struct hl_head *h)
{
	(void)h;
	CHECK(head_locks == 1, "fast path shut outside the head lock");
	fast_shuts++;
}

void hl_lvb_publish(struct hl_req *req)
{
	CHECK(head_locks == 1, "published outside the head lock");
	note_publish++;
	last_publish = req;
}

static unsigned long node_updates;

/* The head test_node_*() drive through a simulated DLM, and its kick. */
static struct hl_head *dlm_head;
static struct hl_node *dlm_node;
static bool dlm_kicked;

/* As hlock_cluster.c's hl_clk_update(): a pass when one has work to do. */
void hl_node_update(struct hl_head *h)
{
	CHECK(head_locks == 1 && h->cluster, "node update");
	node_updates++;
	if (h == dlm_head &&
	    (hl_node_target(h, dlm_node, true) >= 0 ||
	     hl_node_cancel_due(h, dlm_node, true)))
		dlm_kicked = true;
}

/* The node keeps its DLM locks after the last release (cluster_cache). */
static bool node_cache = true;

bool hl_node_caching(void)
{
	return node_cache;
}

/* Probes of other nodes' waits: every probe_ns of hl_clock(), 0: never. */
static u64 probe_ns;

u64 hl_node_probe_ns(void)
{
	return probe_ns;
}

/* This node lost the cluster (test_cluster_lost()). */
static bool node_lost;
static unsigned long note_lost;

bool hl_node_lost(const struct hl_head *h)
{
	CHECK(head_locks == 1 && h->cluster, "node lost asked");
	return node_lost;
}

void hl_note_lost(struct hl_req *holder)
{
	CHECK(head_locks == 1 && holder->state != HL_WAITING,
	      "lost noted outside the head lock, or for a waiter");
	note_lost++;
}

/* Deadlock search: on unless a test turns it off; one lock space here. */
static bool detect = true;
static struct hl_graph graph;
static int graph_locked, locker_refs;
static unsigned long note_deadlock, note_dlm_deadlock;
static bool cycle_through(struct hl_locker *start);

bool hl_deadlock_detect(void)
{
	return detect;
}

void hl_graph_lock(struct hl_graph *gr)
{
	CHECK(gr == &graph && !graph_locked && !head_locks && !rcu_depth,
	      "graph lock");
	graph_locked = 1;
}

void hl_graph_unlock(struct hl_graph *gr)
{
	CHECK(gr == &graph && graph_locked, "graph unlock");
	graph_locked = 0;
}

void hl_locker_get(struct hl_locker *lk)
{
	CHECK(head_locks == 1 && graph_locked, "locker kept outside a search");
	(void)lk;
	locker_refs++;
}

void hl_locker_put(struct hl_locker *lk)
{
	CHECK(!head_locks && !part_locks && !rcu_depth && locker_refs > 0,
	      "locker put under a lock");
	(void)lk;
	locker_refs--;
}

/* Allocations the search may still make; negative: no limit. */
static int allocs_left = -1;

void *hl_dl_alloc(size_t n, size_t size)
{
	CHECK(!head_locks && !part_locks && !rcu_depth, "alloc under a lock");
	if (!allocs_left)
		return NULL;
	if (allocs_left > 0)
		allocs_left--;
	return calloc(n, size);
}

void hl_dl_free(void *p)
{
	free(p);
}

/* What a test does "meanwhile", where the search lets others run. */
static void (*meanwhile)(void);

void hl_resched(void)
{
	void (*fn)(void) = meanwhile;

	CHECK(!head_locks && !part_locks && !rcu_depth, "resched under a lock");
	/* Once: it may lock and unlock, which may search again. */
	meanwhile = NULL;
	if (fn)
		fn();
}

/* A refusal from outside runs its continuation (test_refuse()). */
static bool refusing;
static unsigned int note_refused;

void hl_note_deadlock(struct hl_locker *lk, unsigned int level,
		      unsigned int mode)
{
	CHECK(!head_locks && lk->op.level == level && mode,
	      "deadlock noted at %u", level);
	/*
	 * The level still waits: the cycle is there to be seen, unless the
	 * DLM found it, with another node (hl_node_refuse()).
	 */
	if (lk->op.heads[level]->cluster && !graph_locked) {
		note_dlm_deadlock++;
		return;
	}
	/* Or a search made outside the core (hl_op_refuse()). */
	if (refusing) {
		note_refused++;
		return;
	}
	CHECK(graph_locked && cycle_through(lk), "deadlock without a cycle");
	note_deadlock++;
}

static struct hl_head *find_head(const char *path)
{
	int i;

	for (i = 0; i < MAX_HEADS; i++)
		if (heads[i] && !strcmp(heads[i]->path, path))
			return &heads[i]->h;
	return NULL;
}

/* Look up (and create) the head of @path. */
static struct hl_head *get_head(const char *path)
{
	struct hl_head *h = find_head(path), *parent = NULL;
	struct thead *t;
	char up[64];
	char *slash;
	int i;

	if (h)
		return h;
	if (*path) {
		snprintf(up, sizeof(up), "%s", path);
		slash = strrchr(up, '/');
		if (slash)
			*slash = 0;
		else
			up[0] = 0;
		parent = get_head(up);
		/* A parent gets partitions with its first child. */
		if (!parent->has_parts && !parent->cluster) {
			for (i = 0; i < NR_PARTS; i++)
				hl_part_init(&thead_of(parent)->parts[i]);
			hl_head_lock(parent);
			hl_head_set_parts(parent);
			hl_head_unlock(parent);
		}
	}
	for (i = 0; i < MAX_HEADS && heads[i]; i++)
		;
	if (i == MAX_HEADS) {
		fprintf(stderr, "out of heads\n");
		exit(2);
	}
	t = calloc(1, sizeof(*t));
	hl_head_init(&t->h, parent);
	if (cluster_heads) {
		t->h.cluster = true;
		t->h.fast = HL_FAST_SHUT;
		t->h.node_mode = HLOCK_NL;
	}
	snprintf(t->path, sizeof(t->path), "%s", path);
	heads[i] = t;
	return &t->h;
}

/* The prefix of @path with @level components. */
static void prefix(char *buf, size_t size, const char *path,
		   unsigned int level)
{
	const char *p = path;

	while (level && *p) {
		p = strchr(p, '/');
		p = p ? p + 1 : path + strlen(path) + 1;
		level--;
	}
	snprintf(buf, size, "%.*s", level || p == path ? 0 :
		 (int)(p - path - 1), path);
}

void hl_rcu_lock(void)
{
	CHECK(!head_locks && !part_locks && !rcu_depth, "RCU nested");
	rcu_depth++;
}

void hl_rcu_unlock(void)
{
	CHECK(rcu_depth == 1 && !head_locks && !part_locks, "RCU unlock");
	rcu_depth--;
}

/* Every level is looked up: the last call's heads are never reused. */
unsigned int hl_heads_known(struct hl_locker *lk)
{
	(void)lk;
	CHECK(rcu_depth == 1, "known heads outside RCU");
	return 0;
}

struct hl_head *hl_head_lookup(struct hl_locker *lk, unsigned int level)
{
	struct tlocker *t = container_of(lk, struct tlocker, lk);
	struct hl_head *h;
	char buf[64];

	CHECK(rcu_depth == 1, "lookup outside RCU");
	prefix(buf, sizeof(buf), t->target, level);
	h = find_head(buf);
	CHECK(!h || !level || h->parent == lk->op.heads[level - 1],
	      "level %u of %s", level, t->target);
	return h;
}

int hl_head_create(struct hl_locker *lk, unsigned int level)
{
	struct tlocker *t = container_of(lk, struct tlocker, lk);
	char buf[64];

	CHECK(!rcu_depth && !head_locks && !part_locks, "create under a lock");
	prefix(buf, sizeof(buf), t->target, level);
	get_head(buf);
	return 0;
}

/* Continue every locker a grant pass granted, as the glue does. */
static void run_grants(struct hl_grants *g)
{
	while (!list_empty(&g->lockers)) {
		struct hl_locker *lk = list_first_entry(&g->lockers,
							struct hl_locker,
							grant_node);

		list_del(&lk->grant_node);
		INIT_LIST_HEAD(&lk->grant_node);
		lk->grant_pending = 0;
		hl_op_continue(lk, g);
	}
	CHECK(!head_locks && !part_locks && !rcu_depth, "locks left");
}

static struct tlocker *locker(int who)
{
	struct tlocker *t = &lockers[who];

	if (who >= top)
		top = who + 1;
	if (!t->used) {
		hl_locker_init(&t->lk, &graph);
		t->used = 1;
	}
	return t;
}

/* Whether the last lock() made its call in one pass. */
static bool one_pass;

/* The glue's lock: returns 0, -EINPROGRESS, -EBUSY. */
static int lock(int who, const char *path, unsigned int mode,
		unsigned int flags)
{
	struct tlocker *t = locker(who);
	struct hl_grants g;
	unsigned int n, nr = 1;
	const char *p;
	int ret;

	hl_grants_init(&g);
	for (p = path; *p; p++)
		nr += *p == '/';
	nr += *path != 0;
	/* Lockers of these tests may jump queues, but for HL_RF_NO_JUMP. */
	flags = flags & HL_RF_NO_JUMP ? flags & ~HL_RF_NO_JUMP :
		flags | HL_RF_MAY_JUMP;
	/*
	 * Every other call in one pass, as the glue makes a plain one
	 * (hl_op_run(): provisioned first), the others claimed first.
	 */
	one_pass = !one_pass;
	if (!one_pass) {
		ret = hl_op_claim(&t->lk, nr, mode, flags);
		if (ret)
			return ret;
	} else if (t->lk.op.state != HL_OP_IDLE) {
		return -EBUSY;
	}
	/* Grow the index as the glue does, before the operation. */
	n = hl_locker_index_wanted(&t->lk);
	if (n)
		free(hl_locker_index_swap(&t->lk,
					  malloc(sizeof(struct hlist_head) << n),
					  n));
	while (t->lk.nr_spare < nr)
		hl_locker_add_spare(&t->lk, calloc(1, sizeof(struct hl_req)));
	if (hl_locker_waitq_needed(&t->lk))
		hl_waitq_refill(&t->lk);
	snprintf(t->target, sizeof(t->target), "%s", path);
	if (one_pass) {
		ret = hl_op_run(&t->lk, nr, mode, flags, &g);
		CHECK(ret || t->lk.op.state == HL_OP_IDLE,
		      "a pass granted at once leaves the slot empty");
		if (ret && ret != -EINPROGRESS)
			hl_op_finish(&t->lk, &g);
	} else {
		ret = hl_op_start(&t->lk, &g);
		if (ret != -EINPROGRESS)
			hl_op_finish(&t->lk, &g);
	}
	run_grants(&g);
	return ret;
}

/* Collect a granted operation: 0, or -EAGAIN while it waits. */
static int collect(int who)
{
	struct hl_locker *lk = &lockers[who].lk;
	struct hl_grants g;
	int ret;

	hl_grants_init(&g);
	if (!lockers[who].used || lk->op.state == HL_OP_IDLE)
		return -ENOENT;
	ret = hl_op_continue(lk, &g);
	if (ret == -EINPROGRESS)
		return -EAGAIN;
	hl_op_finish(lk, &g);
	run_grants(&g);
	return ret;
}

static void cancel(int who)
{
	struct hl_locker *lk = &lockers[who].lk;
	struct hl_grants g;

	hl_grants_init(&g);
	/* A failed one (a deadlock found by its continuation) is undone. */
	if (lk->op.state != HL_OP_WAITING && lk->op.state != HL_OP_GRANTED &&
	    lk->op.state != HL_OP_FAILED) {
		CHECK(0, "no operation in flight to withdraw");
		return;
	}
	hl_op_cancel(lk, &g);
	hl_op_finish(lk, &g);
	run_grants(&g);
}

/* Whether @path is @target or one of its ancestors. */
static bool on_path(const char *path, const char *target)
{
	size_t n = strlen(path);

	return !strcmp(path, target) || !n ||
	       (!strncmp(path, target, n) && target[n] == '/');
}

static int unlock(int who, const char *path)
{
	struct tlocker *t = locker(who);
	struct hl_head *h = find_head(path);
	struct hl_grants g;
	struct hl_req *req;
	int ret;

	hl_grants_init(&g);
	/* As the glue: by the path, as its last levels may not exist yet. */
	if (t->lk.op.state != HL_OP_IDLE && on_path(path, t->target)) {
		if (strcmp(t->target, path))
			return -EBUSY;
		cancel(who);
		req = h ? hl_locker_find(&t->lk, h) : NULL;
		return req ? (int)req->own : 0;
	}
	if (!h)
		return -ENOENT;
	ret = hl_unlock(&t->lk, h, &g);
	run_grants(&g);
	return ret;
}

static unsigned int held(int who, const char *path)
{
	struct hl_head *h = find_head(path);

	return h ? hl_held(&locker(who)->lk, h) : HLOCK_NL;
}

static int downgrade(int who, const char *path, unsigned int mode)
{
	struct tlocker *t = locker(who);
	struct hl_head *h = find_head(path);
	struct hl_grants g;
	int ret;

	hl_grants_init(&g);
	if (t->lk.op.state != HL_OP_IDLE && on_path(path, t->target))
		return -EBUSY;
	if (!h)
		return -ENOENT;
	ret = hl_downgrade(&t->lk, h, mode, &g);
	run_grants(&g);
	return ret;
}

static void release_all(int who)
{
	struct hl_locker *lk = &lockers[who].lk;
	struct hl_grants g;

	if (!lockers[who].used)
		return;
	hl_grants_init(&g);
	if (lk->op.state == HL_OP_WAITING || lk->op.state == HL_OP_GRANTED)
		hl_op_cancel(lk, &g);
	if (lk->op.state != HL_OP_IDLE)
		hl_op_finish(lk, &g);
	while (!hl_locker_release_some(lk, &g, 3))
		run_grants(&g);
	run_grants(&g);
}

/* Consistency of every head, partition, request and locker. */
/*
 * Whether the grants of @list whose lockers were told they block come
 * after every one that was not (notify_list() relies on it).
 */
static bool marked_suffix(struct hlist_head *list)
{
	struct hl_req *a;
	bool seen = false;

	hlist_for_each_entry(a, list, gnode) {
		if (seen && !a->bast)
			return false;
		seen |= a->bast;
	}
	return true;
}

static void check_invariants(void)
{
	int i, w;

	for (i = 0; i < MAX_HEADS; i++) {
		struct thead *t = heads[i];
		struct hl_head *h;
		unsigned int gc[HLOCK_NR_MODES] = {0}, wc[HLOCK_NR_MODES] = {0};
		unsigned int pc[HLOCK_NR_MODES] = {0}, cc[HLOCK_NR_MODES] = {0};
		unsigned int gm = 0, wm = 0, cm = 0, cf = 0, m, q;
		struct hl_req *a, *b;
		s64 last;

		if (!t)
			continue;
		h = &t->h;
		CHECK(!t->locked, "%s locked", t->path);
		for (m = 0; m < HLOCK_NR_MODES; m++) {
			CHECK(marked_suffix(&h->granted[m]), "%s: told grants before untold ones",
			      t->path);
			hlist_for_each_entry(a, &h->granted[m], gnode) {
				CHECK(a->state != HL_WAITING && a->mode == m &&
				      !a->part && a->head == h, "%s", t->path);
				gc[m]++;
				if (a->flags & HL_RF_COMPAT_FIRST)
					cf++;
			}
			last = INT64_MIN;
			/* Something waits, so the head has its queues. */
			CHECK(h->wq || !h->wait_mask, "%s waits with no queues",
			      t->path);
			if (!h->wq)
				continue;
			list_for_each_entry(a, &h->wq->queue[m], node) {
				CHECK(a->state == HL_WAITING && a->mode == m,
				      "%s queue", t->path);
				CHECK(a->seq > last, "%s queue order", t->path);
				last = a->seq;
				wc[m]++;
			}
		}
		for (q = 0; h->wq && q < HL_NR_CONV; q++) {
			last = INT64_MIN;
			list_for_each_entry(a, &h->wq->convq[q], conv_node) {
				CHECK(a->state == HL_CONVERTING, "%s conv",
				      t->path);
				CHECK(a->seq > last, "%s conv order", t->path);
				last = a->seq;
				wc[a->convert]++;
				cc[a->convert]++;
			}
		}
		if (h->has_parts) {
			for (q = 0; q < NR_PARTS; q++) {
				struct hl_part *p = &t->parts[q];

				CHECK(!t->part_locked[q], "partition locked");
				for (m = 0; m < HL_NR_PART_MODES; m++) {
					unsigned int n = 0;

					CHECK(marked_suffix(&p->granted[m]),
					      "%s: partition's told grants first",
					      t->path);
					hlist_for_each_entry(a, &p->granted[m],
							     gnode) {
						CHECK(a->part == p &&
						      a->mode == HLOCK_IS + m &&
						      a->state == HL_GRANTED,
						      "%s partition", t->path);
						n++;
					}
					CHECK(n == p->count[m], "%s part count",
					      t->path);
					pc[HLOCK_IS + m] += n;
				}
			}
		}
		if (h->partitioned) {
			CHECK(!(gc[HLOCK_S] + gc[HLOCK_SIX] + gc[HLOCK_X]) &&
			      !h->wait_mask, "%s partitioned while strong",
			      t->path);
		} else {
			for (m = 0; m < HLOCK_NR_MODES; m++)
				gc[m] += pc[m];
		}
		for (m = 0; m < HLOCK_NR_MODES; m++) {
			CHECK(gc[m] == h->granted_count[m], "%s granted %u",
			      t->path, m);
			CHECK(wc[m] == (h->wq ? h->wq->wait_count[m] : 0),
			      "%s wait %u", t->path, m);
			CHECK(cc[m] == (h->wq ? h->wq->conv_count[m] : 0),
			      "%s conv %u", t->path, m);
			if (gc[m])
				gm |= 1U << m;
			if (wc[m])
				wm |= 1U << m;
			if (cc[m])
				cm |= 1U << m;
		}
		CHECK(gm == h->granted_mask && wm == h->wait_mask &&
		      cm == h->conv_mask, "%s masks", t->path);
		CHECK(cf == h->compat_first, "%s compat_first", t->path);
		/*
		 * An open or taken fast path: the head's lists, counts and
		 * partitions hold nothing, and its fast holder is a grant of
		 * a locker that has it.
		 */
		if (h->fast != HL_FAST_SHUT) {
			struct hl_req *f = (struct hl_req *)h->fast;

			CHECK(!h->granted_mask && !h->wait_mask &&
			      !h->partitioned && !h->cluster && !h->dead &&
			      !pc[HLOCK_IS] && !pc[HLOCK_IX],
			      "%s: fast path open with something on the head",
			      t->path);
			CHECK(!f || (f->head == h && f->state == HL_GRANTED &&
				     !f->part &&
				     hl_locker_find(f->locker, h) == f),
			      "%s: fast holder", t->path);
		}
		/* Never two conflicting modes granted (partitions included). */
		for (m = 0; m < HLOCK_NR_MODES; m++)
			for (q = 0; q < HLOCK_NR_MODES; q++)
				if ((gc[m] + pc[m] * h->partitioned) &&
				    (gc[q] + pc[q] * h->partitioned) &&
				    (m != q || gc[m] + pc[m] * h->partitioned > 1))
					CHECK(!hl_conflicts(m, 1U << q),
					      "%s: %u vs %u", t->path, m, q);
		(void)b;
	}
	/* The graph counts the lockers that wait, for its searches. */
	for (i = 0, w = 0; w < MAX_LOCKERS; w++)
		i += lockers[w].used && lockers[w].lk.graph == &graph &&
		     (lockers[w].lk.wait_seq & 1);
	CHECK(atomic_read(&graph.waiting) == i, "%d lockers wait, %d counted",
	      i, atomic_read(&graph.waiting));
	for (w = 0; w < MAX_LOCKERS; w++) {
		struct hl_req *r, *p;
		struct hl_head *a;
		unsigned int n;

		if (!lockers[w].used)
			continue;
		n = 0;
		hlist_for_each_entry(r, &lockers[w].lk.reqs, locker_node) {
			unsigned int ix = 0;
			struct hl_req *d;

			n++;
			CHECK(hl_locker_find(&lockers[w].lk, r->head) == r,
			      "locker %d: request not in the index", w);
			CHECK(r->own + r->child + r->pin > 0, "empty request");
			CHECK(!r->up || r->up->head == r->head->parent,
			      "locker %d: up", w);
			hlist_for_each_entry(d, &lockers[w].lk.reqs, locker_node)
				if (d->up == r && hl_intent(d->mode) == HLOCK_IX)
					ix++;
			if (lockers[w].lk.op.state != HL_OP_IDLE)
				continue;
			CHECK(ix == r->ix_below, "locker %d: ix_below %u != %u",
			      w, r->ix_below, ix);
			/* Every ancestor holds the intent this mode needs. */
			for (a = r->head->parent; a; a = a->parent) {
				p = hl_locker_find(&lockers[w].lk, a);
				CHECK(p && hl_covers(p->mode, hl_intent(r->mode)),
				      "locker %d: intent missing", w);
			}
		}
		CHECK(n == lockers[w].lk.nr_reqs, "locker %d: %u requests, %u counted",
		      w, n, lockers[w].lk.nr_reqs);
		/* A spare is the locker's and counts nothing (spare_put()). */
		for (n = 0; n < lockers[w].lk.nr_spare; n++) {
			r = lockers[w].lk.spare[n];
			CHECK(r->locker == &lockers[w].lk && !r->own &&
			      !r->child && !r->pin && !r->ix_below,
			      "locker %d: spare %u not clean", w, n);
		}
	}
	/*
	 * Every grant is on its head's lists, in a partition, or its head's
	 * fast holder: none is lost by a switch.
	 */
	for (i = 0; i < MAX_HEADS; i++) {
		struct hl_head *h = heads[i] ? &heads[i]->h : NULL;
		unsigned int on = 0, mine = 0, m;
		struct hl_req *r;

		if (!h)
			continue;
		for (m = 0; m < HLOCK_NR_MODES; m++)
			hlist_for_each_entry(r, &h->granted[m], gnode)
				on++;
		for (w = 0; w < MAX_LOCKERS; w++) {
			if (!lockers[w].used)
				continue;
			hlist_for_each_entry(r, &lockers[w].lk.reqs, locker_node)
				mine += r->head == h && !r->part &&
					h->fast != (unsigned long)r;
		}
		CHECK(on == mine, "%s: %u grants on the head, %u of lockers",
		      heads[i]->path, on, mine);
	}
}

/*
 * The wait-for graph worked out from scratch, for comparison with the
 * search of hlock_deadlock.c: the request locker @w waits with, and where,
 * or NULL when it does not wait.
 */
static struct hl_req *waiting_req(int w, struct hl_head **hp)
{
	struct hl_locker *lk = &lockers[w].lk;
	struct hl_req *r;

	if (!lockers[w].used || lk->op.state != HL_OP_WAITING ||
	    !lk->op.queued)
		return NULL;
	r = lk->op.reqs[lk->op.level];
	if (!r || r->state == HL_GRANTED)
		return NULL;
	*hp = lk->op.heads[lk->op.level];
	return r;
}

/* Whether locker @a's wait waits for locker @b (see hlock_deadlock.c). */
static bool waits_for(int a, int b)
{
	struct hl_req *r, *q, *first = NULL, *x;
	struct hl_head *h, *hq;
	unsigned int m;
	int w;

	r = waiting_req(a, &h);
	if (!r || a == b || !lockers[b].used)
		return false;
	m = r->state == HL_CONVERTING ? r->convert : r->mode;
	/* b holds a conflicting mode (converting or not). */
	q = hl_locker_find(&lockers[b].lk, h);
	if (q && hl_conflicts(m, 1U << q->mode))
		return true;
	if (r->state != HL_WAITING)
		return false;
	/* b converts to a conflicting mode ahead of every new request. */
	if (q && q->state == HL_CONVERTING && hl_conflicts(m, 1U << q->convert))
		return true;
	q = waiting_req(b, &hq);
	if (!q || hq != h || q->state != HL_WAITING)
		return false;
	for (w = 0; w < top; w++) {
		x = waiting_req(w, &hq);
		if (x && hq == h && x->state == HL_WAITING &&
		    (!first || x->seq < first->seq))
			first = x;
	}
	/*
	 * b is the first of the queue, or a conflicting waiter ahead under
	 * fifo: the policy the head took up, while it is still in force.
	 */
	return q == first ||
	       (h->fifo && policy == HLOCK_POLICY_FIFO && !h->compat_first &&
		q->seq < r->seq && hl_conflicts(m, 1U << q->mode));
}

static bool reaches(int from, int target, bool *seen)
{
	int v;

	for (v = 0; v < top; v++) {
		if (!waits_for(from, v))
			continue;
		if (v == target)
			return true;
		if (seen[v])
			continue;
		seen[v] = true;
		if (reaches(v, target, seen))
			return true;
	}
	return false;
}

/* Whether a cycle of waits goes through @start. */
static bool cycle_through(struct hl_locker *start)
{
	int w = (int)(container_of(start, struct tlocker, lk) - lockers);
	bool seen[MAX_LOCKERS] = { false };

	seen[w] = true;
	return reaches(w, w, seen);
}

static void reset(void)
{
	int w;

	for (w = 0; w < MAX_LOCKERS; w++) {
		release_all(w);
		if (lockers[w].used) {
			hl_locker_drop_spares(&lockers[w].lk);
			if (lockers[w].lk.index != lockers[w].lk.index_inline)
				free(lockers[w].lk.index);
		}
		hl_locker_init(&lockers[w].lk, NULL);
		lockers[w].used = 0;
		lockers[w].notified = 0;
		lockers[w].basts = 0;
	}
	top = 0;
	check_invariants();
	/* Every head is idle; free them all, deepest first. */
	for (w = MAX_HEADS; w-- > 0;) {
		struct thead *t = heads[w];

		if (!t)
			continue;
		hl_head_lock(&t->h);
		CHECK(hl_head_retire(&t->h), "busy head %s", t->path);
		hl_head_unlock(&t->h);
		if (t->h.wq)
			hl_waitq_free(t->h.wq);
		free(t);
		heads[w] = NULL;
	}
	policy = HLOCK_POLICY_BATCH;
}

static const unsigned int modes[] = {
	HLOCK_IS, HLOCK_IX, HLOCK_S, HLOCK_SIX, HLOCK_X,
};

static bool compatible(unsigned int a, unsigned int b)
{
	static const char *const ok[] = {
		"IS IS", "IS IX", "IS S", "IS SIX", "IX IS", "IX IX",
		"S IS", "S S", "SIX IS",
	};
	static const char *const name[] = { "NL", "IS", "IX", "S", "SIX", "X" };
	char pair[16];
	size_t i;

	snprintf(pair, sizeof(pair), "%s %s", name[a], name[b]);
	for (i = 0; i < ARRAY_SIZE(ok); i++)
		if (!strcmp(ok[i], pair))
			return true;
	return false;
}

static void test_matrix(void)
{
	size_t i, j;

	for (i = 0; i < 5; i++) {
		for (j = 0; j < 5; j++) {
			int ret;

			CHECK(lock(0, "m", modes[i], 0) == 0, "holder");
			ret = lock(1, "m", modes[j], 0);
			CHECK(ret == (compatible(modes[i], modes[j]) ? 0 :
				      -EINPROGRESS), "pair %u %u: %d",
			      modes[i], modes[j], ret);
			CHECK(hl_conflicts(modes[i], 1U << modes[j]) ==
			      hl_conflicts(modes[j], 1U << modes[i]),
			      "symmetric");
			check_invariants();
			reset();
		}
	}
}

static void test_sup(void)
{
	CHECK(hl_sup(HLOCK_S, HLOCK_IX) == HLOCK_SIX, "S+IX");
	CHECK(hl_sup(HLOCK_IX, HLOCK_S) == HLOCK_SIX, "IX+S");
	CHECK(hl_sup(HLOCK_IS, HLOCK_S) == HLOCK_S, "IS+S");
	CHECK(hl_sup(HLOCK_IS, HLOCK_IX) == HLOCK_IX, "IS+IX");
	CHECK(hl_sup(HLOCK_SIX, HLOCK_X) == HLOCK_X, "SIX+X");
	CHECK(hl_sup(HLOCK_NL, HLOCK_IS) == HLOCK_IS, "NL+IS");
	CHECK(hl_sup(HLOCK_S, HLOCK_S) == HLOCK_S, "S+S");
	CHECK(!hl_covers(HLOCK_IX, HLOCK_S) && !hl_covers(HLOCK_S, HLOCK_IX),
	      "IX, S incomparable");
}

static void test_fifo_x(void)
{
	int i, j;

	CHECK(lock(0, "q", HLOCK_X, 0) == 0, "holder");
	for (i = 1; i <= 6; i++)
		CHECK(lock(i, "q", HLOCK_X, 0) == -EINPROGRESS, "waiter %d", i);
	for (i = 0; i <= 6; i++) {
		CHECK(unlock(i, "q") == 0, "unlock %d", i);
		for (j = i + 1; j <= 6; j++)
			CHECK(collect(j) == (j == i + 1 ? 0 : -EAGAIN),
			      "after %d: %d", i, j);
		check_invariants();
	}
	reset();
}

/* Queue IS IS X X S IS behind an X holder, then release the X. */
static void grant_example(unsigned int pol)
{
	static const unsigned int q[] = {
		HLOCK_IS, HLOCK_IS, HLOCK_X, HLOCK_X, HLOCK_S, HLOCK_IS,
	};
	int i, want_batch[] = { 0, 0, -EAGAIN, -EAGAIN, 0, 0 };

	policy = pol;
	CHECK(lock(0, "g", HLOCK_X, 0) == 0, "holder");
	for (i = 0; i < 6; i++)
		CHECK(lock(i + 1, "g", q[i], 0) == -EINPROGRESS, "queue %d", i);
	CHECK(unlock(0, "g") == 0, "release");
	for (i = 0; i < 6; i++) {
		int want = pol == HLOCK_POLICY_BATCH ? want_batch[i] :
			   (i < 2 ? 0 : -EAGAIN);

		CHECK(collect(i + 1) == want, "policy %u: %d", pol, i);
	}
	check_invariants();
	if (pol == HLOCK_POLICY_BATCH) {
		/* A late S queues behind the waiting X. */
		CHECK(lock(7, "g", HLOCK_S, 0) == -EINPROGRESS, "late S");
		CHECK(unlock(1, "g") == 0 && unlock(2, "g") == 0, "IS");
		CHECK(unlock(5, "g") == 0, "S");
		CHECK(collect(3) == -EAGAIN, "X waits for the last IS");
		CHECK(unlock(6, "g") == 0, "IS");
		CHECK(collect(3) == 0, "first X");
		CHECK(collect(4) == -EAGAIN && collect(7) == -EAGAIN, "rest");
		CHECK(unlock(3, "g") == 0, "X");
		CHECK(collect(4) == 0 && collect(7) == -EAGAIN, "second X");
		CHECK(unlock(4, "g") == 0, "X");
		CHECK(collect(7) == 0, "late S");
	}
	check_invariants();
	reset();
}

static void test_front_and_compat_first(void)
{
	CHECK(lock(0, "f", HLOCK_X, 0) == 0, "holder");
	CHECK(lock(1, "f", HLOCK_S, 0) == -EINPROGRESS, "S");
	CHECK(lock(2, "f", HLOCK_X, HLOCK_F_FRONT) == -EINPROGRESS, "front X");
	CHECK(unlock(0, "f") == 0, "release");
	CHECK(collect(2) == 0 && collect(1) == -EAGAIN, "front first");
	reset();

	CHECK(lock(0, "c", HLOCK_S, HLOCK_F_COMPAT_FIRST) == 0, "cf S");
	CHECK(lock(1, "c", HLOCK_X, 0) == -EINPROGRESS, "X waits");
	CHECK(lock(2, "c", HLOCK_S, 0) == 0, "S passes the waiting X");
	CHECK(unlock(0, "c") == 0, "cf released");
	CHECK(lock(3, "c", HLOCK_S, 0) == -EINPROGRESS, "back to FIFO");
	reset();

	CHECK(lock(0, "c", HLOCK_X, 0) == 0, "holder");
	CHECK(lock(1, "c", HLOCK_S, HLOCK_F_COMPAT_FIRST) == -EINPROGRESS,
	      "waiting cf");
	CHECK(lock(2, "c", HLOCK_X, 0) == -EINPROGRESS, "X");
	CHECK(lock(3, "c", HLOCK_IS, 0) == -EINPROGRESS, "no effect waiting");
	reset();

	/* Root S gets compatible-first by itself. */
	CHECK(lock(0, "", HLOCK_S, 0) == 0, "root S");
	CHECK(lock(1, "", HLOCK_X, 0) == -EINPROGRESS, "root X");
	CHECK(lock(2, "", HLOCK_S, 0) == 0, "root S passes");
	CHECK(lock(3, "db", HLOCK_IS, 0) == 0, "root IS passes");
	reset();

	/* Not for a locker that may not jump: plain FIFO. */
	CHECK(lock(0, "", HLOCK_S, HL_RF_NO_JUMP) == 0, "root S");
	CHECK(lock(1, "", HLOCK_X, HL_RF_NO_JUMP) == -EINPROGRESS, "root X");
	CHECK(lock(2, "", HLOCK_S, HL_RF_NO_JUMP) == -EINPROGRESS,
	      "root S queues behind the X");
	CHECK(lock(3, "db", HLOCK_IS, 0) == -EINPROGRESS,
	      "root IS queues behind the X");
	CHECK(find_head("")->compat_first == 0, "no compatible-first");
	reset();

	/* A root S reached by conversion gets compatible-first too. */
	CHECK(lock(0, "db", HLOCK_IS, 0) == 0, "root IS");
	CHECK(lock(0, "", HLOCK_S, 0) == 0, "root IS -> S");
	CHECK(lock(1, "", HLOCK_X, 0) == -EINPROGRESS, "root X waits");
	CHECK(lock(2, "", HLOCK_S, 0) == 0, "S passes the X");
	CHECK(unlock(2, "") == 0, "release");
	reset();
	/* ...and loses it when the conversion is undone. */
	CHECK(lock(0, "db", HLOCK_IS, 0) == 0, "root IS");
	CHECK(lock(1, "z", HLOCK_X, 0) == 0, "root IX");
	CHECK(lock(0, "", HLOCK_S, HLOCK_F_ASYNC) == -EINPROGRESS,
	      "IS -> S waits for the IX");
	cancel(0);
	CHECK(find_head("")->compat_first == 0, "no flag after the undo");
	reset();

	/* fifo skips right after a compatible-first grant. */
	policy = HLOCK_POLICY_FIFO;
	CHECK(lock(0, "", HLOCK_X, 0) == 0, "root X");
	CHECK(lock(1, "", HLOCK_S, 0) == -EINPROGRESS, "root S");
	CHECK(lock(2, "x", HLOCK_X, 0) == -EINPROGRESS, "IX");
	CHECK(lock(3, "y", HLOCK_S, 0) == -EINPROGRESS, "IS");
	CHECK(unlock(0, "") == 0, "release");
	CHECK(collect(1) == 0 && collect(2) == -EAGAIN && collect(3) == 0,
	      "cf skip");
	reset();
}

/*
 * A locker past max_reqs resources: the level that would be one too many
 * fails with -ENOLCK, and the locker is as it was.
 */
static void test_limit(void)
{
	struct hl_locker *lk = &locker(0)->lk;

	hl_locker_limit(lk, 3);
	CHECK(lock(0, "a/b", HLOCK_X, 0) == 0, "3 resources");
	CHECK(lk->nr_reqs == 3, "counted");
	CHECK(lock(0, "a/c", HLOCK_X, 0) == -ENOLCK, "a 4th");
	CHECK(lk->nr_reqs == 3, "as it was");
	CHECK(lock(0, "a/b", HLOCK_X, 0) == 0, "recursion needs none");
	CHECK(lock(0, "a", HLOCK_X, 0) == 0, "conversion needs none");
	CHECK(lock(1, "a/c", HLOCK_X, 0) == -EINPROGRESS, "another waits");
	CHECK(lock(2, "x/y/z", HLOCK_S, 0) == 0, "others have their own");
	CHECK(unlock(0, "a") >= 0 && unlock(0, "a/b") >= 0 &&
	      unlock(0, "a/b") >= 0, "released");
	CHECK(collect(1) == 0, "the waiter");
	CHECK(lk->nr_reqs == 0, "nothing left");
	CHECK(lock(0, "d/e/f", HLOCK_S, 0) == -ENOLCK,
	      "4 levels at once, nothing kept");
	CHECK(lk->nr_reqs == 0, "as it was");
	hl_locker_limit(lk, UINT_MAX);
	reset();
}

/*
 * A cycle of @n lockers, each holding X on its own resource and asking for
 * the next one's: the request that closes it is refused, and its locker is
 * left as it was; the others then get their turn one after the other.
 */
static void test_deadlock_cycle(int n)
{
	unsigned long found = note_deadlock;
	char path[16], next[16];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "d/%d", i);
		CHECK(lock(i, path, HLOCK_X, 0) == 0, "own X %d", i);
	}
	for (i = 0; i < n - 1; i++) {
		unsigned long epoch = graph.epoch;

		snprintf(next, sizeof(next), "d/%d", i + 1);
		CHECK(lock(i, next, HLOCK_X, 0) == -EINPROGRESS,
		      "%d of %d waits", i, n);
		CHECK(note_deadlock == found, "no cycle yet");
		/* The first to wait is alone: no cycle, no search. */
		CHECK((graph.epoch != epoch) == (i > 0),
		      "%d of %d: searched %lu times", i, n,
		      graph.epoch - epoch);
	}
	CHECK(lock(n - 1, "d/0", HLOCK_X, 0) == -EDEADLK, "cycle of %d", n);
	CHECK(note_deadlock == found + 1, "counted once");
	CHECK(lockers[n - 1].lk.op.state == HL_OP_IDLE &&
	      held(n - 1, "d/0") == HLOCK_NL &&
	      held(n - 1, "d") == HLOCK_IX && held(n - 1, "") == HLOCK_IX,
	      "the refused locker as it was");
	CHECK(lockers[n - 1].lk.nr_reqs == 3, "no request left behind");
	check_invariants();
	/* Its holder lets go: the chain unwinds from the end. */
	snprintf(path, sizeof(path), "d/%d", n - 1);
	CHECK(unlock(n - 1, path) == 0, "the last lets go");
	for (i = n - 2; i >= 0; i--) {
		snprintf(path, sizeof(path), "d/%d", i);
		snprintf(next, sizeof(next), "d/%d", i + 1);
		CHECK(collect(i) == 0, "%d granted", i);
		CHECK(unlock(i, path) == 0 && unlock(i, next) == 0,
		      "%d lets go", i);
	}
	check_invariants();
	reset();
}

/*
 * Two S holders both converting to X: the second is refused and keeps its
 * S; the first waits on until the second lets go.
 */
static void test_deadlock_conversion(void)
{
	CHECK(lock(0, "c", HLOCK_S, 0) == 0 && lock(1, "c", HLOCK_S, 0) == 0,
	      "two S");
	CHECK(lock(0, "c", HLOCK_X, 0) == -EINPROGRESS, "first S -> X waits");
	CHECK(lock(1, "c", HLOCK_X, 0) == -EDEADLK, "second S -> X refused");
	CHECK(held(1, "c") == HLOCK_S && lockers[1].lk.op.state == HL_OP_IDLE,
	      "still S");
	CHECK(collect(0) == -EAGAIN, "the first still waits");
	/* Also through the intents: S on a/1 against IX for X on a/2. */
	CHECK(lock(2, "a", HLOCK_S, 0) == 0 && lock(3, "a", HLOCK_S, 0) == 0,
	      "two S on a");
	CHECK(lock(2, "a/2", HLOCK_X, 0) == -EINPROGRESS, "IX on a waits");
	CHECK(lock(3, "a/1", HLOCK_X, 0) == -EDEADLK, "the other refused");
	CHECK(held(3, "a") == HLOCK_S && held(3, "a/1") == HLOCK_NL,
	      "as it was");
	CHECK(unlock(1, "c") == 0 && collect(0) == 0, "first gets X");
	CHECK(unlock(3, "a") == 0 && collect(2) == 0, "IX, then X on a/2");
	check_invariants();
	reset();
}

/* Refuse @who's wait from outside (HLOCK_IOC_REFUSE), as the glue does. */
static int refuse(int who, unsigned int wait_seq, unsigned int hold_seq)
{
	struct hl_locker *lk = &lockers[who].lk;
	struct hl_grants g;
	int ret;

	hl_grants_init(&g);
	refusing = true;
	ret = hl_op_refuse(lk, wait_seq, hold_seq, &g);
	refusing = false;
	/* Refused, the wait is gone already: only the collection is left. */
	CHECK(ret || (lk->op.state == HL_OP_FAILED && !lk->op.queued &&
		      !(lk->wait_seq & 1)), "refused, but still waiting");
	run_grants(&g);
	return ret;
}

/*
 * A search made outside the core (across nodes) refuses a wait: only the
 * wait it saw, of a locker that kept its locks since; the call fails with
 * -EDEADLK and leaves the locker as before it, conversions and new
 * requests alike.  A try-lock's wait is never refused.
 */
static void test_refuse(void)
{
	struct hl_locker *lk;
	unsigned int ws, hs;

	CHECK(lock(0, "a/b", HLOCK_X, 0) == 0 && lock(1, "a/c", HLOCK_S, 0) == 0,
	      "setup");
	CHECK(refuse(1, 1, 0) == -ESTALE, "nothing waits");
	CHECK(lock(1, "a/b", HLOCK_S, 0) == -EINPROGRESS, "1 waits");
	lk = &lockers[1].lk;
	ws = lk->wait_seq;
	hs = lk->hold_seq;
	CHECK(ws & 1, "wait_seq odd while waiting");
	CHECK(refuse(1, ws + 2, hs) == -ESTALE, "another wait");
	CHECK(refuse(1, ws, hs + 1) == -ESTALE, "released since");
	CHECK(refuse(1, ws, hs) == 0 && note_refused == 1, "refused, noted");
	CHECK(collect(1) == -EDEADLK, "the call fails");
	CHECK(held(1, "a/c") == HLOCK_S && held(1, "a/b") == HLOCK_NL &&
	      held(1, "a") == HLOCK_IS, "1 as before the call");
	CHECK(refuse(1, ws, hs) == -ESTALE, "not twice");
	check_invariants();
	/* A conversion, refused: the mode held stays. */
	CHECK(lock(2, "q", HLOCK_S, 0) == 0 && lock(3, "q", HLOCK_S, 0) == 0,
	      "two S");
	CHECK(lock(2, "q", HLOCK_X, 0) == -EINPROGRESS, "S -> X waits");
	lk = &lockers[2].lk;
	CHECK(refuse(2, lk->wait_seq, lk->hold_seq) == 0, "conversion refused");
	CHECK(collect(2) == -EDEADLK && held(2, "q") == HLOCK_S, "still S");
	/* A refusal that a grant beats is stale, and the grant stands. */
	CHECK(lock(2, "q", HLOCK_X, 0) == -EINPROGRESS, "S -> X waits again");
	ws = lk->wait_seq;
	hs = lk->hold_seq;
	CHECK(unlock(3, "q") == 0, "the other S goes");
	CHECK(refuse(2, ws, hs) == -ESTALE, "granted first");
	CHECK(collect(2) == 0 && held(2, "q") == HLOCK_X, "X");
	/*
	 * A try-lock never waits here, so it is never refused; one that
	 * waits for its node's DLM mode is not: test_cluster().
	 */
	CHECK(note_refused == 2, "each refusal noted once");
	check_invariants();
	reset();
}

/*
 * A waiter ahead is a blocker under the fifo policy: 2 waits behind 1's X
 * on q, 1 for 0's S there, and 0 closes the cycle by asking for r, 2's.
 * A wait that closes no cycle is left alone; one closed by a level reached
 * after a grant fails the operation, undone.
 */
static void test_deadlock_ahead(void)
{
	policy = HLOCK_POLICY_FIFO;
	CHECK(lock(0, "q", HLOCK_S, 0) == 0 && lock(2, "r", HLOCK_X, 0) == 0,
	      "holders");
	CHECK(lock(3, "q", HLOCK_IX, 0) == -EINPROGRESS, "IX first in line");
	CHECK(lock(1, "q", HLOCK_X, 0) == -EINPROGRESS, "X behind it");
	CHECK(lock(2, "q", HLOCK_S, 0) == -EINPROGRESS, "S behind the X");
	CHECK(lock(0, "r", HLOCK_X, 0) == -EDEADLK, "closes 0-2-1-0");
	CHECK(lockers[0].lk.nr_reqs == 2, "0 as it was");
	check_invariants();
	reset();

	/* Later level: 0 waits at a behind 2, is granted, then meets 1. */
	CHECK(lock(0, "b", HLOCK_X, 0) == 0, "0 holds b");
	CHECK(lock(1, "a/y", HLOCK_S, 0) == 0, "1 holds a/y");
	CHECK(lock(2, "a", HLOCK_S, 0) == 0, "2 holds a");
	CHECK(lock(1, "b", HLOCK_X, 0) == -EINPROGRESS, "1 waits for 0");
	CHECK(lock(0, "a/y", HLOCK_X, 0) == -EINPROGRESS, "0 waits at a");
	CHECK(unlock(2, "a") == 0, "2 lets go");
	CHECK(lockers[0].notified == 1, "the operation ended");
	CHECK(collect(0) == -EDEADLK, "refused at a/y");
	CHECK(held(0, "a") == HLOCK_NL && held(0, "b") == HLOCK_X &&
	      lockers[0].lk.nr_reqs == 2, "0 as it was");
	CHECK(unlock(0, "b") == 0 && collect(1) == 0, "1 goes on");
	check_invariants();
	reset();
}

#define LONG_FIRST	10
#define LONG_LAST	309

/* Holders 100 to 249 let go while the search walks their list. */
static void long_let_go(void)
{
	int i;

	for (i = 100; i < 250; i++)
		CHECK(unlock(i, "big") == 0, "%d lets go meanwhile", i);
}

/*
 * Hundreds of holders on one resource, on the head or in its partitions:
 * the search walks them a batch at a time, giving the lock up in between,
 * and finds the one that waits at the far end of the list (the first
 * granted), also when the list changes under it.
 */
static void test_deadlock_long(void)
{
	const char *const paths[] = { "big", "big", "p" };
	unsigned int round;
	int i;

	for (round = 0; round < ARRAY_SIZE(paths); round++) {
		const char *path = paths[round];

		/* A child gives "p" partitions: its IS go there. */
		if (round == 2)
			CHECK(lock(1, "p/c", HLOCK_IS, 0) == 0, "p/c");
		CHECK(lock(0, "z", HLOCK_X, 0) == 0, "0 holds z");
		for (i = LONG_FIRST; i <= LONG_LAST; i++)
			CHECK(lock(i, path, HLOCK_IS, 0) == 0, "IS %d", i);
		CHECK(round != 2 || find_head(path)->partitioned,
		      "granted in the partitions");
		CHECK(lock(LONG_FIRST, "z", HLOCK_X, 0) == -EINPROGRESS,
		      "the first holder waits for 0");
		if (round == 1)
			meanwhile = long_let_go;
		CHECK(lock(0, path, HLOCK_X, 0) == -EDEADLK,
		      "round %u: found at the end of the list", round);
		CHECK(!meanwhile, "the list changed under the walk");
		CHECK(!locker_refs && !graph_locked, "let go");
		check_invariants();
		reset();
	}
}

/*
 * Out of memory half way (its list of lockers met cannot grow), the
 * search lets go of every locker it kept, and the level waits unchecked.
 */
static void test_deadlock_nomem(void)
{
	int i;

	CHECK(lock(0, "w", HLOCK_X, 0) == 0, "0 holds w");
	for (i = 1; i <= 20; i++) {
		CHECK(lock(i, "big", HLOCK_IS, 0) == 0, "IS %d", i);
		CHECK(lock(i, "w", HLOCK_X, 0) == -EINPROGRESS, "%d waits", i);
	}
	/* The first HL_DL_ROOM nodes are the graph's: the growth fails. */
	allocs_left = 0;
	CHECK(lock(0, "big", HLOCK_X, 0) == -EINPROGRESS, "no verdict");
	allocs_left = -1;
	CHECK(!locker_refs && !graph_locked, "let go");
	CHECK(cycle_through(&lockers[0].lk), "the cycle nobody could check");
	cancel(0);
	reset();
}

/*
 * A wait on a resource without queues takes the locker's spare.  A later
 * level of the same operation asks for new ones only if it must wait too:
 * one that is granted at once needs none, and cannot fail for want of
 * them.  One that must wait and gets none fails with -ENOMEM, the locker
 * as it was.
 */
static void test_refill_lazy(void)
{
	long before;

	/* 0's IX on u waits for 1's S: u's queues are 0's spare. */
	CHECK(lock(1, "u", HLOCK_S, 0) == 0, "1 holds S on u");
	CHECK(lock(0, "u/v", HLOCK_X, 0) == -EINPROGRESS, "0 waits at u");
	CHECK(!lockers[0].lk.spare_wq, "u took the spare");
	/* u/v is free: no queues asked for, none given. */
	before = refills;
	refill_fails = true;
	CHECK(unlock(1, "u") == 0, "1 lets go");
	refill_fails = false;
	CHECK(collect(0) == 0 && held(0, "u/v") == HLOCK_X, "0 granted");
	CHECK(refills == before, "%ld queues asked for", refills - before);
	CHECK(unlock(0, "u/v") == 0, "0 lets go");
	check_invariants();

	/* Again on new resources, where 2's S on p/q makes 0 wait twice. */
	CHECK(lock(1, "p", HLOCK_S, 0) == 0, "1 holds S on p");
	CHECK(lock(2, "p/q", HLOCK_S, 0) == 0, "2 holds S on p/q");
	CHECK(lock(0, "p/q", HLOCK_X, 0) == -EINPROGRESS, "0 waits at p");
	CHECK(!lockers[0].lk.spare_wq, "p took the spare");
	before = refills;
	refill_fails = true;
	CHECK(unlock(1, "p") == 0, "1 lets go");
	refill_fails = false;
	CHECK(refills == before + 1, "%ld queues asked for", refills - before);
	CHECK(collect(0) == -ENOMEM, "0 failed at p/q");
	CHECK(held(0, "p") == HLOCK_NL && held(0, "") == HLOCK_NL &&
	      !lockers[0].lk.nr_reqs, "0 as it was");
	check_invariants();
	/* With queues to be had, it waits there, and is granted. */
	CHECK(lock(0, "p/q", HLOCK_X, 0) == -EINPROGRESS, "0 waits at p/q");
	CHECK(unlock(2, "p/q") == 0 && collect(0) == 0 &&
	      held(0, "p/q") == HLOCK_X, "0 granted");
	CHECK(unlock(0, "p/q") == 0, "0 lets go");
	check_invariants();
	reset();
}

/* Whether a cycle of waits goes through any locker below @n. */
static bool any_cycle(int n)
{
	int w;

	for (w = 0; w < n; w++)
		if (lockers[w].used && cycle_through(&lockers[w].lk))
			return true;
	return false;
}

/*
 * Issue 30, item 4: a cycle closed by a new head of a queue.  D (0) holds
 * S on r2; X (1) IS and Y (2) S on r; F (3) asks IX on r, E (4) X, D SIX,
 * X asks X on r2.  D waits for the head of r's queue, F, which waits for
 * Y alone.  Y lets go: F is granted and E, the new head, is what D waits
 * for now: D -> E -> X (IS) -> D.  Nobody starts to wait, yet the cycle
 * is refused at once, E's wait.  Under batch, and under fifo while a
 * compatible-first request is granted on r (C, 5): both let a waiter
 * pass a conflicting one, so only the head is waited for by all.  Under
 * plain fifo D waits for E from the start, and X's wait is refused.
 * @stale: r was made under fifo, and took up no policy since: waits
 * there are searched under the policy in force, not under fifo.
 */
static void test_deadlock_new_head(unsigned int pol, bool cf, bool stale)
{
	unsigned long found = note_deadlock;
	bool fifo = pol == HLOCK_POLICY_FIFO && !cf;

	if (stale) {
		policy = HLOCK_POLICY_FIFO;
		CHECK(lock(6, "r", HLOCK_X, 0) == 0 && unlock(6, "r") == 0,
		      "r made under fifo");
	}
	policy = pol;
	CHECK(lock(0, "r2", HLOCK_S, 0) == 0, "D holds r2");
	CHECK(lock(1, "r", HLOCK_IS, 0) == 0, "X holds IS");
	CHECK(lock(2, "r", HLOCK_S, 0) == 0, "Y holds S");
	CHECK(!cf || lock(5, "r", HLOCK_IS, HLOCK_F_COMPAT_FIRST) == 0,
	      "C holds IS, compatible-first");
	CHECK(lock(3, "r", HLOCK_IX, 0) == -EINPROGRESS, "F waits");
	CHECK(lock(4, "r", HLOCK_X, 0) == -EINPROGRESS, "E waits");
	CHECK(lock(0, "r", HLOCK_SIX, 0) == -EINPROGRESS, "D waits");
	CHECK(lock(1, "r2", HLOCK_X, 0) == (fifo ? -EDEADLK : -EINPROGRESS),
	      "policy %u cf %d: X's wait", pol, cf);
	CHECK(note_deadlock == found + fifo, "refused at once under fifo");
	CHECK(!any_cycle(7), "no cycle yet");
	CHECK(unlock(2, "r") == 0 && collect(3) == 0, "Y lets go, F granted");
	if (!fifo) {
		CHECK(note_deadlock == found + 1,
		      "policy %u cf %d: the new head's cycle refused", pol, cf);
		CHECK(collect(4) == -EDEADLK, "E refused");
		CHECK(held(4, "r") == HLOCK_NL && !lockers[4].lk.nr_reqs,
		      "E as it was");
		CHECK(collect(0) == -EAGAIN && collect(1) == -EAGAIN,
		      "D and X wait on");
	}
	CHECK(!any_cycle(7), "policy %u cf %d: no cycle left", pol, cf);
	check_invariants();
	/* It unwinds: F and Y go, D gets SIX, then X its X. */
	CHECK(unlock(3, "r") == 0, "F lets go");
	CHECK(fifo ? collect(4) == -EAGAIN : collect(0) == 0, "next");
	check_invariants();
	reset();
}

/*
 * The same cycle closed when the head of the queue is withdrawn rather
 * than granted: F gives up, and E, the new head, is refused.
 */
static void test_deadlock_head_withdrawn(void)
{
	unsigned long found = note_deadlock;

	CHECK(lock(0, "r2", HLOCK_S, 0) == 0 && lock(1, "r", HLOCK_IS, 0) == 0 &&
	      lock(2, "r", HLOCK_S, 0) == 0, "holders");
	CHECK(lock(3, "r", HLOCK_IX, 0) == -EINPROGRESS, "F waits");
	CHECK(lock(4, "r", HLOCK_X, 0) == -EINPROGRESS, "E waits");
	CHECK(lock(0, "r", HLOCK_SIX, 0) == -EINPROGRESS, "D waits");
	CHECK(lock(1, "r2", HLOCK_X, 0) == -EINPROGRESS, "X waits");
	CHECK(note_deadlock == found && !any_cycle(5), "no cycle yet");
	cancel(3);
	CHECK(note_deadlock == found + 1, "the new head's cycle refused");
	CHECK(collect(4) == -EDEADLK, "E refused");
	CHECK(collect(0) == -EAGAIN && collect(1) == -EAGAIN,
	      "D and X wait on");
	CHECK(!any_cycle(5), "no cycle left");
	check_invariants();
	CHECK(unlock(2, "r") == 0 && collect(0) == 0, "Y lets go, D gets SIX");
	check_invariants();
	reset();
}

/*
 * Issue 30, item 4: a cycle closed when a queue's waiters come to wait for
 * every conflicting waiter ahead of them: a compatible-first holder goes
 * under fifo (@change false), or the head takes up fifo at its first
 * grant pass after grant_policy changed from batch (@change true).  G (0)
 * holds IS and J (1) IX on r, and the third holder, K (2), is IX and
 * compatible-first, or a plain IS.  F (3) waits for S, V (4) for X, W (5)
 * for S: each waits for J, and for F, the head of the queue.  G asks X on
 * r2, held by W in S.  K lets go: now W waits for V too, which waits for
 * G: one of V and W is refused, and the others wait on.
 */
static void test_deadlock_all_ahead(bool change)
{
	unsigned long found = note_deadlock;
	int v, w;

	policy = change ? HLOCK_POLICY_BATCH : HLOCK_POLICY_FIFO;
	CHECK(lock(5, "r2", HLOCK_S, 0) == 0, "W holds r2");
	CHECK(lock(0, "r", HLOCK_IS, 0) == 0, "G holds IS");
	CHECK(lock(1, "r", HLOCK_IX, 0) == 0, "J holds IX");
	CHECK(change ? lock(2, "r", HLOCK_IS, 0) == 0 :
	      lock(2, "r", HLOCK_IX, HLOCK_F_COMPAT_FIRST) == 0, "K");
	CHECK(lock(3, "r", HLOCK_S, 0) == -EINPROGRESS, "F waits");
	CHECK(lock(4, "r", HLOCK_X, 0) == -EINPROGRESS, "V waits");
	CHECK(lock(5, "r", HLOCK_S, 0) == -EINPROGRESS, "W waits");
	CHECK(lock(0, "r2", HLOCK_X, 0) == -EINPROGRESS, "G waits");
	CHECK(note_deadlock == found && !any_cycle(6), "no cycle yet");
	if (change)
		policy = HLOCK_POLICY_FIFO;
	CHECK(unlock(2, "r") == 0, "K lets go");
	CHECK(note_deadlock == found + 1, "change %d: refused", change);
	v = collect(4);
	w = collect(5);
	CHECK((v == -EDEADLK) + (w == -EDEADLK) == 1 &&
	      (v == -EAGAIN) + (w == -EAGAIN) == 1, "V %d, W %d", v, w);
	CHECK(collect(3) == -EAGAIN && collect(0) == -EAGAIN,
	      "F and G wait on");
	CHECK(!any_cycle(6), "change %d: no cycle left", change);
	check_invariants();
	reset();
}

/* Searches off: a cycle waits, as before; a try-lock never searches. */
static void test_deadlock_off(void)
{
	unsigned long found = note_deadlock;

	CHECK(lock(0, "x", HLOCK_X, 0) == 0 && lock(1, "y", HLOCK_X, 0) == 0,
	      "holders");
	CHECK(lock(0, "y", HLOCK_X, 0) == -EINPROGRESS, "0 waits");
	CHECK(lock(1, "x", HLOCK_X, HL_RF_TRY) == -EAGAIN,
	      "a try-lock gives up, queued nowhere to search from");
	detect = false;
	CHECK(lock(1, "x", HLOCK_X, 0) == -EINPROGRESS, "no search");
	CHECK(cycle_through(&lockers[1].lk), "a cycle nobody looked for");
	detect = true;
	CHECK(note_deadlock == found, "none counted");
	cancel(1);
	CHECK(collect(0) == -EAGAIN, "0 still waits");
	reset();
}

/*
 * A conversion that makes a head compatible-first lets the waiters that
 * are compatible with the holders go first, at once: a later arrival must
 * not overtake them.  Undoing such a conversion restores the flags before
 * its grant pass runs.
 */
static void test_compat_first_conversion(void)
{
	CHECK(lock(0, "db", HLOCK_IS, 0) == 0, "root IS");
	CHECK(lock(1, "", HLOCK_X, 0) == -EINPROGRESS, "root X waits");
	CHECK(lock(2, "", HLOCK_S, 0) == -EINPROGRESS, "root S waits");
	CHECK(lock(0, "", HLOCK_S, 0) == 0, "root IS -> S at once");
	CHECK(collect(2) == 0, "the waiting S goes with the converted S");
	CHECK(lock(3, "", HLOCK_S, 0) == 0, "a late S");
	CHECK(collect(1) == -EAGAIN, "X still waits");
	check_invariants();
	reset();

	policy = HLOCK_POLICY_FIFO;
	CHECK(lock(0, "db", HLOCK_IS, 0) == 0, "db IS");
	CHECK(lock(4, "db/x", HLOCK_X, 0) == 0, "db IX");
	CHECK(lock(0, "db", HLOCK_S, HLOCK_F_COMPAT_FIRST | HLOCK_F_ASYNC) ==
	      -EINPROGRESS, "db IS -> S waits for the IX");
	CHECK(lock(1, "db", HLOCK_IX, 0) == -EINPROGRESS, "IX queues");
	CHECK(lock(2, "db", HLOCK_X, 0) == -EINPROGRESS, "X queues");
	CHECK(lock(3, "db", HLOCK_IX, 0) == -EINPROGRESS, "IX queues");
	CHECK(unlock(4, "db/x") == 0, "IX released");
	CHECK(lockers[0].lk.op.state == HL_OP_GRANTED, "conversion granted");
	cancel(0);
	CHECK(held(0, "db") == HLOCK_IS, "conversion undone");
	CHECK(find_head("db")->compat_first == 0, "no compatible-first left");
	CHECK(collect(1) == 0, "the first IX");
	CHECK(collect(2) == -EAGAIN && collect(3) == -EAGAIN,
	      "fifo stops at the X");
	check_invariants();
	reset();
}

static void test_conversion(void)
{
	CHECK(lock(0, "v", HLOCK_IS, 0) == 0 && lock(1, "v", HLOCK_IS, 0) == 0,
	      "IS IS");
	CHECK(lock(2, "v", HLOCK_X, 0) == -EINPROGRESS, "X queued");
	CHECK(lock(0, "v", HLOCK_IX, 0) == 0, "conversion wins");
	CHECK(held(0, "v") == HLOCK_IX, "IX");
	reset();

	CHECK(lock(0, "v", HLOCK_S, 0) == 0 && lock(1, "v", HLOCK_S, 0) == 0,
	      "S S");
	CHECK(lock(0, "v", HLOCK_X, 0) == -EINPROGRESS, "convert waits");
	CHECK(held(0, "v") == HLOCK_S, "old mode while converting");
	CHECK(lock(2, "v", HLOCK_IS, 0) == -EINPROGRESS, "IS vs target X");
	CHECK(lock(1, "v", HLOCK_X, 0) == -EDEADLK, "second convert");
	CHECK(held(1, "v") == HLOCK_S, "refused: still S");
	CHECK(unlock(1, "v") == 0, "B releases");
	CHECK(collect(0) == 0 && held(0, "v") == HLOCK_X, "A converted");
	CHECK(collect(2) == -EAGAIN, "IS still waits");
	CHECK(unlock(0, "v") == 1 && held(0, "v") == HLOCK_X, "partial");
	CHECK(unlock(0, "v") == 0, "all");
	CHECK(collect(2) == 0, "IS granted");
	reset();

	CHECK(lock(0, "v", HLOCK_S, 0) == 0 && lock(0, "v", HLOCK_IX, 0) == 0,
	      "S+IX");
	CHECK(held(0, "v") == HLOCK_SIX, "SIX");
	CHECK(lock(1, "v", HLOCK_IS, 0) == 0, "IS with SIX");
	CHECK(lock(2, "v", HLOCK_IX, 0) == -EINPROGRESS, "IX vs SIX");
	reset();

	CHECK(lock(0, "v", HLOCK_X, 0) == 0 && lock(0, "v", HLOCK_S, 0) == 0,
	      "recursion");
	CHECK(held(0, "v") == HLOCK_X, "strongest");
	CHECK(unlock(0, "v") == 1 && unlock(0, "v") == 0 &&
	      held(0, "v") == HLOCK_NL, "counts");
	CHECK(unlock(0, "v") == -ENOENT, "not held");
	reset();
}

static void test_downgrade(void)
{
	CHECK(lock(0, "d", HLOCK_X, 0) == 0, "X");
	CHECK(lock(1, "d", HLOCK_S, 0) == -EINPROGRESS, "S waits");
	CHECK(downgrade(0, "d", HLOCK_IX) == 0, "X->IX");
	CHECK(collect(1) == -EAGAIN, "IX vs S");
	CHECK(downgrade(0, "d", HLOCK_S) == -EINVAL, "IX->S not covered");
	CHECK(downgrade(0, "d", HLOCK_IS) == 0, "IX->IS");
	CHECK(collect(1) == 0, "S granted");
	CHECK(downgrade(2, "d", HLOCK_IS) == -ENOENT, "not held");
	reset();

	CHECK(lock(0, "d/c", HLOCK_X, 0) == 0 && lock(0, "d", HLOCK_X, 0) == 0,
	      "d X, d/c X");
	CHECK(downgrade(0, "d", HLOCK_IS) == -EINVAL, "below IX needed");
	CHECK(downgrade(0, "d", HLOCK_IX) == 0, "IX ok");
	CHECK(downgrade(0, "", HLOCK_IS) == -EINVAL, "root needs IX");
	reset();
}

/* The token of @who's grant on @path, 0 if it holds none. */
static u64 token(int who, const char *path)
{
	struct hl_head *h = find_head(path);
	struct hl_req *req = h ? hl_locker_find(&locker(who)->lk, h) : NULL;

	return req ? req->token : 0;
}

static void test_tokens(void)
{
	u64 t, u, b;

	CHECK(lock(0, "t/a", HLOCK_S, 0) == 0, "S");
	t = token(0, "t/a");
	CHECK(t && token(0, "t") == t && token(0, "") == t,
	      "one token for the operation's levels");
	CHECK(lock(0, "t/a", HLOCK_IS, 0) == 0 && token(0, "t/a") == t,
	      "a recursion keeps the token");
	CHECK(lock(1, "t/a", HLOCK_S, 0) == 0 && token(1, "t/a") > t,
	      "a later grant gets a greater one");
	b = token(1, "t/a");
	CHECK(lock(1, "t/b", HLOCK_IS, 0) == 0 && token(1, "t") > t &&
	      token(1, "t") == token(1, "t/a"), "intents covered: kept");
	CHECK(lock(2, "t/a", HLOCK_X, 0) == -EINPROGRESS && !token(2, "t/a"),
	      "no token while waiting");
	CHECK(!token(2, "t") && !token(2, ""),
	      "intents granted on the way: none until all is granted");
	CHECK(lock(0, "t/a", HLOCK_X, 0) == -EINPROGRESS &&
	      token(0, "t/a") == t, "converting: the held grant's token");
	CHECK(unlock(1, "t/b") == 0 && unlock(1, "t/a") == 0, "B leaves");
	CHECK(collect(0) == 0, "conversion granted");
	u = token(0, "t/a");
	CHECK(u > b && token(0, "t") == u && token(0, "") == u,
	      "the conversion's levels (IS to IX above) get a new token");
	CHECK(unlock(0, "t/a") == 2 && unlock(0, "t/a") == 1 &&
	      unlock(0, "t/a") == 0, "A leaves");
	CHECK(collect(2) == 0 && token(2, "t/a") > u,
	      "the waiter's token is greater than its blocker's");
	reset();
}

static void test_hierarchy(void)
{
	CHECK(lock(0, "db/c", HLOCK_X, 0) == 0, "coll X");
	CHECK(held(0, "db") == HLOCK_IX && held(0, "") == HLOCK_IX, "intents");
	CHECK(lock(1, "db", HLOCK_S, 0) == -EINPROGRESS, "db S blocked");
	cancel(1);
	CHECK(held(1, "") == HLOCK_NL, "rolled back");
	CHECK(lock(1, "db", HLOCK_IS, 0) == 0, "db IS ok");
	CHECK(unlock(0, "db") == -ENOENT, "intent only");
	reset();

	CHECK(lock(0, "db/c", HLOCK_IS, 0) == 0, "coll IS");
	CHECK(lock(1, "db", HLOCK_X, 0) == -EINPROGRESS, "db X waits");
	CHECK(unlock(0, "db/c") == 0, "release");
	CHECK(collect(1) == 0, "db X granted");
	reset();

	CHECK(lock(0, "a/b", HLOCK_S, 0) == 0, "a/b S");
	CHECK(lock(1, "", HLOCK_X, 0) == -EINPROGRESS, "root X waits");
	CHECK(lock(2, "z", HLOCK_IS, 0) == -EINPROGRESS, "IS queues");
	cancel(2);
	CHECK(unlock(0, "a/b") == 0, "release");
	CHECK(collect(1) == 0, "root X");
	reset();

	/* Continuation down the path after a grant at the root. */
	CHECK(lock(0, "", HLOCK_X, 0) == 0, "root X");
	CHECK(lock(1, "db/c", HLOCK_S, 0) == -EINPROGRESS, "queued at root");
	CHECK(lock(2, "db", HLOCK_X, 0) == -EINPROGRESS, "db X queued");
	CHECK(unlock(0, "") == 0, "release");
	CHECK(lockers[1].notified == 1 && collect(1) == 0, "continued");
	CHECK(held(1, "db/c") == HLOCK_S && held(1, "db") == HLOCK_IS, "S");
	CHECK(collect(2) == -EAGAIN, "db X waits for IS");
	CHECK(unlock(1, "db") == -ENOENT, "not locked there");
	reset();

	/* Rollback of ancestors taken and converted by a failed call. */
	CHECK(lock(0, "db/a", HLOCK_IS, 0) == 0, "db/a IS");
	CHECK(lock(1, "db/b", HLOCK_X, 0) == 0, "other holds db/b");
	CHECK(lock(0, "db/b", HLOCK_S, 0) == -EINPROGRESS, "db/b S waits");
	CHECK(held(0, "db") == HLOCK_IS, "intent shared");
	cancel(0);
	CHECK(held(0, "db") == HLOCK_IS && held(0, "db/b") == HLOCK_NL,
	      "as before");
	CHECK(lock(0, "db/b/x", HLOCK_X, 0) == -EINPROGRESS, "X waits");
	CHECK(held(0, "db") == HLOCK_IX, "IS converted to IX");
	CHECK(unlock(0, "db") == -EBUSY, "path busy");
	CHECK(unlock(0, "db/b/x") == 0, "cancel by unlock");
	CHECK(held(0, "db") == HLOCK_IS, "conversion undone");
	check_invariants();
	reset();
}

/* As a lease's takeover: drop every acquisition at and below @path. */
static void release_tree(int who, const char *path)
{
	struct tlocker *t = locker(who);
	struct hl_grants g;

	hl_grants_init(&g);
	hl_release_tree(&t->lk, hl_locker_find(&t->lk, find_head(path)), &g);
	run_grants(&g);
}

/* hl_release_tree(): the subtree goes, whatever its counts; nothing else. */
static void test_release_tree(void)
{
	CHECK(lock(0, "t/a/b", HLOCK_S, 0) == 0, "t/a/b S");
	CHECK(lock(0, "t", HLOCK_X, 0) == 0, "t X");
	CHECK(lock(0, "t", HLOCK_X, 0) == 0, "t X again");
	CHECK(lock(0, "t/c", HLOCK_X, 0) == 0, "t/c X");
	CHECK(lock(0, "u", HLOCK_IX, 0) == 0, "u IX");
	CHECK(lock(1, "t", HLOCK_IS, 0) == -EINPROGRESS, "IS waits");
	CHECK(lock(2, "t/c", HLOCK_S, 0) == -EINPROGRESS, "queued at t");
	release_tree(0, "t");
	CHECK(held(0, "t") == HLOCK_NL && held(0, "t/a") == HLOCK_NL &&
	      held(0, "t/a/b") == HLOCK_NL && held(0, "t/c") == HLOCK_NL,
	      "subtree released");
	CHECK(held(0, "u") == HLOCK_IX && held(0, "") == HLOCK_IX,
	      "the rest kept");
	CHECK(collect(1) == 0 && collect(2) == 0, "waiters granted");
	CHECK(unlock(0, "u") == 0 && held(0, "") == HLOCK_NL, "root goes last");
	check_invariants();
	reset();
}

/*
 * A head is retired only when nothing is on it and nothing is below it:
 * the reclaim of a parent whose child was made and left while the worker
 * looked away must not free the parent under that child.
 */
static void test_retire(void)
{
	struct hl_head *db, *coll;

	CHECK(lock(0, "db/coll", HLOCK_X, 0) == 0, "db/coll X");
	CHECK(unlock(0, "db/coll") == 0, "unlocked");
	db = find_head("db");
	coll = find_head("coll") ? NULL : find_head("db/coll");
	CHECK(db && coll, "both heads made");
	hl_head_lock(db);
	CHECK(!hl_head_retire(db), "idle, but with a child: kept");
	CHECK(!db->dead, "not marked");
	hl_head_unlock(db);
	CHECK(lock(1, "db", HLOCK_IS, 0) == 0, "db still locks");
	CHECK(unlock(1, "db") == 0, "and unlocks");
	check_invariants();
	reset();
}

/* A try that cannot be granted at once claims nothing; a wait does. */
static void test_try_claims_nothing(void)
{
	unsigned long before;

	CHECK(lock(0, "tc/a", HLOCK_X, 0) == 0, "tc/a X");
	before = wait_claims;
	CHECK(lock(1, "tc/a", HLOCK_S, HL_RF_TRY) == -EAGAIN,
	      "a try gives up");
	CHECK(wait_claims == before, "a try claims nothing");
	CHECK(lock(1, "tc", HLOCK_X, HL_RF_TRY) == -EAGAIN, "try at tc");
	CHECK(wait_claims == before, "nor above");
	CHECK(lock(2, "tc/a", HLOCK_S, 0) == -EINPROGRESS &&
	      wait_claims == before + 1, "a wait claims");
	cancel(2);
	CHECK(unlock(0, "tc/a") == 0, "unlocked");
	check_invariants();
	reset();
}

/*
 * A try that gives up queues nothing, not even for an instant: the
 * holders are not told that they block a waiter, the queue stays empty
 * (a compatible request that comes next is granted, a try too), and its
 * statistics see a wait withdrawn at once; a conversion keeps its mode.
 */
static void test_try_queues_nothing(void)
{
	unsigned long wait = note_wait, withdrawn = note_withdrawn;
	struct hl_head *h;

	CHECK(lock(0, "tq/a", HLOCK_S, 0) == 0, "tq/a S");
	lockers[0].basts = 0;
	CHECK(lock(1, "tq/a", HLOCK_X, HL_RF_TRY) == -EAGAIN, "X gives up");
	h = find_head("tq/a");
	CHECK(!h->wait_mask && !h->conv_mask && !lockers[0].basts,
	      "nothing queued, nobody told");
	CHECK(note_wait == wait + 1 && note_withdrawn == withdrawn + 1,
	      "a wait withdrawn at once");
	CHECK(held(1, "tq") == HLOCK_NL && held(1, "") == HLOCK_NL,
	      "its intents undone");
	CHECK(lock(2, "tq/a", HLOCK_S, HL_RF_TRY) == 0, "a compatible try");
	/* A conversion that would wait gives up, the mode held kept. */
	CHECK(lock(2, "tq/a", HLOCK_X, HL_RF_TRY) == -EAGAIN &&
	      held(2, "tq/a") == HLOCK_S && !h->conv_mask &&
	      !lockers[0].basts, "S -> X gives up, S kept");
	CHECK(note_wait == wait + 2 && note_withdrawn == withdrawn + 2,
	      "counted as a wait");
	/* A real wait still tells the holders, once each. */
	CHECK(lock(3, "tq/a", HLOCK_X, 0) == -EINPROGRESS &&
	      lockers[0].basts == 1 && lockers[2].basts == 1,
	      "a wait tells");
	cancel(3);
	CHECK(unlock(0, "tq/a") == 0 && unlock(2, "tq/a") == 0, "unlocked");
	check_invariants();
	reset();
}

/* The request of locker @i on @path (which it holds). */
static struct hl_req *req_of(int i, const char *path)
{
	return hl_locker_find(&lockers[i].lk, find_head(path));
}

static unsigned int part_count(const char *path)
{
	struct thead *t = thead_of(find_head(path));
	unsigned int i, n = 0;

	for (i = 0; i < NR_PARTS; i++)
		n += t->parts[i].count[0] + t->parts[i].count[1];
	return n;
}

/*
 * Intents go to partitions once two lockers meet on a head (one had its
 * fast path), until a strong mode needs the whole view.
 */
static void test_partitions(void)
{
	unsigned long shuts = fast_shuts;

	CHECK(lock(0, "a/x", HLOCK_X, 0) == 0, "a/x X");
	CHECK(find_head("a")->fast == (unsigned long)req_of(0, "a") &&
	      !find_head("a")->partitioned, "one locker: its fast path");
	CHECK(lock(1, "a/y", HLOCK_X, 0) == 0, "a/y X");
	CHECK(fast_shuts == shuts + 2 && find_head("a")->partitioned &&
	      find_head("")->partitioned,
	      "a second locker shuts the fast paths and partitions");
	CHECK(part_count("a") == 0 &&
	      find_head("a")->granted_count[HLOCK_IX] == 2,
	      "both intents on the head");
	CHECK(lock(6, "a/u", HLOCK_X, 0) == 0 && part_count("a") == 1 &&
	      part_count("") == 1,
	      "the third locker's intents are in partitions");
	CHECK(lock(2, "a", HLOCK_S, 0) == -EINPROGRESS, "S waits for the IX");
	CHECK(!find_head("a")->partitioned, "a strong waiter departitions");
	CHECK(find_head("a")->granted_count[HLOCK_IX] == 3, "all counted");
	CHECK(lock(3, "a/z", HLOCK_X, 0) == -EINPROGRESS,
	      "a new IX queues behind the S");
	CHECK(unlock(0, "a/x") == 0 && unlock(6, "a/u") == 0 &&
	      collect(2) == -EAGAIN, "one IX left");
	CHECK(unlock(1, "a/y") == 0, "the last IX released");
	CHECK(collect(2) == 0 && collect(3) == -EAGAIN, "S, IX after it");
	CHECK(unlock(2, "a") == 0 && collect(3) == 0, "IX");
	CHECK(!find_head("a")->partitioned, "not until an intent comes");
	CHECK(lock(4, "a/w", HLOCK_IS, 0) == 0, "an intent");
	CHECK(find_head("a")->partitioned, "partitioned again");
	CHECK(lock(5, "a/v", HLOCK_IS, 0) == 0 && part_count("a") == 1,
	      "and the next intent is in a partition");
	CHECK(unlock(3, "a/z") == 0, "released");
	check_invariants();
	reset();
}

/*
 * The fast path (hl_head.fast): a locker alone on idle heads holds them
 * there, on no list; whatever must see its grants (a waiter, a try that
 * gives up, a conversion, a downgrade, a count, a value block set, a
 * retirement) puts them on the head first, where they are told, counted
 * and released as any grant; an idle head opens again.
 */
static void test_fast_path(void)
{
	unsigned long shuts = fast_shuts, published;
	unsigned int counts[HLOCK_NR_MODES], seq;
	struct hl_head *h, *f;

	CHECK(lock(0, "f/x", HLOCK_X, 0) == 0, "f/x X");
	h = find_head("f/x");
	f = find_head("f");
	CHECK(h->fast == (unsigned long)req_of(0, "f/x") && !h->granted_mask &&
	      hlist_empty(&h->granted[HLOCK_X]), "a fast holder, on no list");
	CHECK(f->fast == (unsigned long)req_of(0, "f") &&
	      find_head("")->fast == (unsigned long)req_of(0, ""),
	      "its intents too");
	check_invariants();
	/* A waiter puts every holder in its way on the head, and tells it. */
	CHECK(lock(1, "f/x", HLOCK_S, 0) == -EINPROGRESS, "S waits");
	CHECK(fast_shuts == shuts + 3 && h->fast == HL_FAST_SHUT &&
	      h->granted_count[HLOCK_X] == 1 && f->partitioned,
	      "three holders on their heads, the intents partitioned");
	CHECK(lockers[0].basts == 1, "the holder is told");
	check_invariants();
	CHECK(unlock(0, "f/x") == 0 && collect(1) == 0,
	      "released on the head: S granted");
	CHECK(h->fast == HL_FAST_SHUT, "shut while S is held");
	CHECK(unlock(1, "f/x") == 0 && h->fast == HL_FAST_OPEN &&
	      f->fast == HL_FAST_SHUT, "idle: open, but not the partitioned");
	check_invariants();

	/* A try that gives up sees the holder; nothing else changes. */
	CHECK(lock(0, "f/x", HLOCK_X, 0) == 0 &&
	      h->fast == (unsigned long)req_of(0, "f/x"), "X, fast again");
	CHECK(lock(1, "f/x", HLOCK_S, HL_RF_TRY) == -EAGAIN &&
	      h->fast == HL_FAST_SHUT && lockers[0].basts == 1,
	      "the try gives up, telling nobody");
	CHECK(unlock(0, "f/x") == 0 && h->fast == HL_FAST_OPEN, "open again");

	/* A downgrade and a conversion are made on the head. */
	CHECK(lock(0, "f/x", HLOCK_X, 0) == 0 &&
	      downgrade(0, "f/x", HLOCK_S) == 0 && h->fast == HL_FAST_SHUT &&
	      h->granted_count[HLOCK_S] == 1, "downgraded on the head");
	CHECK(lock(1, "f/x", HLOCK_S, 0) == 0, "another S with it");
	CHECK(unlock(0, "f/x") == 0 && unlock(1, "f/x") == 0 &&
	      h->fast == HL_FAST_OPEN, "open");
	CHECK(lock(0, "f/x", HLOCK_S, 0) == 0 &&
	      lock(0, "f/x", HLOCK_X, 0) == 0 && h->fast == HL_FAST_SHUT &&
	      h->granted_count[HLOCK_X] == 1 && req_of(0, "f/x")->own == 2,
	      "converted on the head");
	CHECK(unlock(0, "f/x") == 1 && unlock(0, "f/x") == 0 &&
	      h->fast == HL_FAST_OPEN, "open");
	check_invariants();

	/* Counted where counts are asked for. */
	hl_head_granted(h, counts);
	CHECK(!counts[HLOCK_X] && h->fast == HL_FAST_OPEN,
	      "a count of an idle head leaves it open");
	CHECK(lock(0, "f/x", HLOCK_X, 0) == 0, "X");
	hl_head_granted(h, counts);
	CHECK(counts[HLOCK_X] == 1 && h->fast == HL_FAST_SHUT,
	      "a count sees the fast holder");
	CHECK(unlock(0, "f/x") == 0, "unlocked");

	/* A fast release moves hold_seq, as any release does. */
	seq = lockers[0].lk.hold_seq;
	CHECK(lock(0, "g/x", HLOCK_X, 0) == 0 &&
	      find_head("g/x")->fast == (unsigned long)req_of(0, "g/x"),
	      "g/x X, fast");
	CHECK(unlock(0, "g/x") == 0 && lockers[0].lk.hold_seq == seq + 3,
	      "three levels released, three moves");

	/* A value block set: the release publishes it, on the head. */
	published = note_publish;
	CHECK(lock(0, "f/x", HLOCK_X, 0) == 0 &&
	      h->fast != HL_FAST_SHUT, "X, fast");
	hl_head_lock(h);
	hl_head_settle(h);
	hl_head_unlock(h);
	CHECK(h->fast == HL_FAST_SHUT, "settled");
	CHECK(unlock(0, "f/x") == 0 && note_publish == published + 1,
	      "published");

	/* A retirement keeps a head its fast holder holds. */
	CHECK(lock(0, "f/x", HLOCK_X, 0) == 0, "X");
	hl_head_lock(h);
	CHECK(!hl_head_retire(h) && !h->dead && h->fast == HL_FAST_SHUT,
	      "held: kept, the holder on the head");
	hl_head_unlock(h);
	CHECK(unlock(0, "f/x") == 0 && h->fast == HL_FAST_OPEN, "open");
	/* An idle one with children is kept: open again, unpartitioned. */
	hl_head_lock(f);
	hl_head_settle(f);
	CHECK(f->fast == HL_FAST_SHUT, "f shut, idle");
	CHECK(!hl_head_retire(f) && !f->dead && !f->partitioned &&
	      f->fast == HL_FAST_OPEN, "retired in vain: open");
	hl_head_unlock(f);
	check_invariants();
	reset();

	/* A compatible-first holder (the root's X) counts once settled. */
	CHECK(lock(0, "", HLOCK_X, 0) == 0 &&
	      find_head("")->fast == (unsigned long)req_of(0, ""),
	      "the root's X, fast, with its flags");
	CHECK(lock(1, "", HLOCK_IS, HL_RF_NO_JUMP) == -EINPROGRESS &&
	      find_head("")->compat_first == 1, "on the head it counts");
	check_invariants();
	CHECK(unlock(0, "") == 0 && collect(1) == 0 && unlock(1, "") == 0,
	      "released");
	CHECK(find_head("")->fast == HL_FAST_OPEN &&
	      !find_head("")->compat_first, "open, nothing counted");
	check_invariants();
	reset();
}

/* hl_req_blocking() under the head lock, as the glue. */
static bool req_blocking_locked(struct hl_head *h, const struct hl_req *req)
{
	bool r;

	hl_head_lock(h);
	r = hl_req_blocking(h, req);
	hl_head_unlock(h);
	return r;
}

static void head_blockers_locked(struct hl_req *req, struct hl_blockers *b)
{
	hl_head_lock(req->head);
	hl_head_blockers(req->head, req, b);
	hl_head_unlock(req->head);
}

/* A request blocks a waiter: only one whose mode conflicts with it. */
static void test_req_blocks(void)
{
	CHECK(lock(0, "w", HLOCK_IS, 0) == 0 && lock(1, "w", HLOCK_S, 0) == 0,
	      "IS, S");
	CHECK(!hl_req_blocks(req_of(0, "w")) && !hl_req_blocks(req_of(1, "w")),
	      "nobody waits");
	CHECK(lock(2, "w", HLOCK_IX, 0) == -EINPROGRESS, "IX waits");
	CHECK(!hl_req_blocks(req_of(0, "w")), "IS does not block IX");
	CHECK(hl_req_blocks(req_of(1, "w")), "S blocks IX");
	CHECK(!hl_req_blocks(req_of(1, "")), "nothing waits on the root");
	reset();

	CHECK(lock(0, "w", HLOCK_S, 0) == 0 && lock(1, "w", HLOCK_S, 0) == 0,
	      "S, S");
	CHECK(lock(1, "w", HLOCK_X, 0) == -EINPROGRESS, "a conversion waits");
	CHECK(hl_req_blocks(req_of(0, "w")), "S blocks the conversion");
	reset();
}

/* The lockers of grants a new waiter conflicts with are told, once. */
static void test_blocking(void)
{
	CHECK(lock(0, "b", HLOCK_S, 0) == 0 && lock(1, "b", HLOCK_S, 0) == 0,
	      "S, S");
	CHECK(lock(2, "b", HLOCK_IS, 0) == 0, "IS granted");
	CHECK(!lockers[0].basts && !lockers[1].basts, "nobody waits");
	CHECK(lock(3, "b", HLOCK_X, 0) == -EINPROGRESS, "X waits");
	CHECK(lockers[0].basts == 1 && lockers[1].basts == 1 &&
	      lockers[2].basts == 1, "every holder told");
	CHECK(lockers[0].lk.op.state == HL_OP_IDLE &&
	      hl_blocking(&lockers[0].lk, find_head("b")) == 1, "blocking");
	CHECK(hl_blocking(&lockers[0].lk, find_head("")) == 0,
	      "IS on the root blocks nobody");
	CHECK(hl_blocking(&lockers[4].lk, find_head("b")) == -ENOENT,
	      "holds nothing");
	CHECK(lock(4, "b", HLOCK_X, 0) == -EINPROGRESS, "another X waits");
	CHECK(lockers[0].basts == 1 && lockers[1].basts == 1,
	      "told once per grant");
	check_invariants();
	reset();

	/* A waiter compatible with the holders tells nobody. */
	CHECK(lock(0, "c", HLOCK_SIX, 0) == 0, "SIX");
	CHECK(lock(1, "c", HLOCK_X, 0) == -EINPROGRESS &&
	      lockers[0].basts == 1, "X waits, SIX told");
	CHECK(lock(2, "c", HLOCK_S, 0) == -EINPROGRESS &&
	      lockers[0].basts == 1, "S waits too: told once");
	CHECK(downgrade(0, "c", HLOCK_S) == 0, "SIX->S re-arms");
	CHECK(lockers[0].basts == 1, "nobody new waits");
	CHECK(lock(3, "c", HLOCK_IS, 0) == -EINPROGRESS, "IS behind the X");
	CHECK(lockers[0].basts == 1, "IS conflicts with no holder");
	CHECK(lock(4, "c", HLOCK_IX, 0) == -EINPROGRESS &&
	      lockers[0].basts == 2, "IX conflicts with S: told again");
	check_invariants();
	reset();

	/* A conversion tells the others, not its own locker. */
	CHECK(lock(0, "o", HLOCK_S, 0) == 0 && lock(1, "o", HLOCK_S, 0) == 0,
	      "S, S");
	CHECK(lock(0, "o", HLOCK_X, 0) == -EINPROGRESS, "conversion waits");
	CHECK(lockers[1].basts == 1 && !lockers[0].basts, "the other told");
	CHECK(hl_blocking(&lockers[1].lk, find_head("o")) == 1 &&
	      hl_blocking(&lockers[0].lk, find_head("o")) == 0,
	      "its own conversion is no waiter it blocks");
	cancel(0);
	check_invariants();
	CHECK(lock(2, "o", HLOCK_X, 0) == -EINPROGRESS, "X waits");
	CHECK(lockers[0].basts == 0 && lockers[1].basts == 1,
	      "a grant marked by its own conversion is not told again");
	check_invariants();
	reset();

	/* Intents granted in the partitions are told too. */
	CHECK(lock(0, "p/x", HLOCK_X, 0) == 0 && lock(1, "p/y", HLOCK_X, 0) == 0 &&
	      lock(3, "p/w", HLOCK_X, 0) == 0, "p/x, p/y, p/w");
	CHECK(part_count("p") == 1, "an IX in a partition");
	CHECK(lock(2, "p", HLOCK_S, 0) == -EINPROGRESS, "S waits");
	CHECK(lockers[0].basts == 1 && lockers[1].basts == 1 &&
	      lockers[3].basts == 1, "every IX holder told");
	check_invariants();
	reset();
}

/* A SIX or X grant that goes down publishes its lock value block. */
static void test_lvb_publish(void)
{
	unsigned long n = note_publish;

	CHECK(lock(0, "l", HLOCK_X, 0) == 0 && note_publish == n, "X");
	CHECK(downgrade(0, "l", HLOCK_SIX) == 0 && note_publish == n + 1 &&
	      last_publish == req_of(0, "l"), "X->SIX publishes");
	CHECK(downgrade(0, "l", HLOCK_S) == 0 && note_publish == n + 2,
	      "SIX->S publishes");
	CHECK(unlock(0, "l") == 0 && note_publish == n + 2,
	      "S unlock does not");
	CHECK(lock(1, "l", HLOCK_SIX, 0) == 0 && lock(1, "l", HLOCK_X, 0) == 0,
	      "SIX, then X");
	CHECK(unlock(1, "l") == 1 && note_publish == n + 2,
	      "an acquisition left: still X");
	CHECK(unlock(1, "l") == 0 && note_publish == n + 3,
	      "released: published once");
	CHECK(lock(2, "l", HLOCK_IX, 0) == 0 && unlock(2, "l") == 0 &&
	      note_publish == n + 3, "IX publishes nothing");
	reset();
}

/*
 * The DLM (simulated) gives this node @mode on @path, and other nodes now
 * wait for the modes in @remote.
 */
static void node_set(const char *path, unsigned int mode, unsigned int remote)
{
	struct hl_head *h = find_head(path);
	struct hl_grants g;

	hl_grants_init(&g);
	hl_head_lock(h);
	h->node_mode = mode;
	h->remote_mask = remote;
	hl_node_changed(h, &g);
	hl_head_unlock(h);
	run_grants(&g);
}

/* hl_node_need() or hl_node_keep() of @path, under its head lock. */
static unsigned int node_mode_of(const char *path,
				 unsigned int (*fn)(const struct hl_head *))
{
	struct hl_head *h = find_head(path);
	unsigned int m;

	hl_head_lock(h);
	m = fn(h);
	hl_head_unlock(h);
	return m;
}

#define node_need(path)	node_mode_of(path, hl_node_need)
#define node_keep(path)	node_mode_of(path, hl_node_keep)

/*
 * A cluster lock space: a level is granted only once this node holds a
 * covering mode in the DLM, which it keeps (caches) after the release;
 * other nodes' waits hold new conflicting requests back, not conversions.
 */
/* hl_node_only() of the request locker @l's operation waits with. */
static bool node_only(int l)
{
	struct hl_op *op = &lockers[l].lk.op;
	struct hl_head *h = op->heads[op->level];
	bool r;

	hl_head_lock(h);
	r = hl_node_only(h, op->reqs[op->level]);
	hl_head_unlock(h);
	return r;
}

static void test_cluster(void)
{
	unsigned long n;

	cluster_heads = true;
	n = node_updates;
	CHECK(lock(0, "c", HLOCK_X, 0) == -EINPROGRESS, "waits for the node");
	CHECK(node_updates > n && node_need("") == HLOCK_IX,
	      "the root needs IX: %u", node_need(""));
	CHECK(node_only(0), "IX on the root waits for the node alone");
	node_set("", HLOCK_IX, 0);
	CHECK(collect(0) == -EAGAIN && node_need("c") == HLOCK_X,
	      "then c needs X");
	node_set("c", HLOCK_X, 0);
	CHECK(collect(0) == 0 && held(0, "c") == HLOCK_X, "granted");
	CHECK(unlock(0, "c") == 0 && node_keep("c") == HLOCK_NL &&
	      node_need("c") == HLOCK_NL, "released: nothing to keep");
	CHECK(lock(1, "c", HLOCK_S, 0) == 0, "cached: granted at once");
	/* Another node wants S (PR): compatible requests still go. */
	node_set("c", HLOCK_X, hl_mode_bit(HLOCK_S));
	CHECK(lock(2, "c", HLOCK_IS, 0) == 0, "IS beside a remote S");
	CHECK(lock(3, "c", HLOCK_IX, 0) == -EINPROGRESS,
	      "IX waits behind the remote S");
	CHECK(!node_only(3), "IX waits for the remote S, not the node alone");
	CHECK(node_need("c") == HLOCK_S && node_keep("c") == HLOCK_S,
	      "remote waits: keep what is held, %u", node_need("c"));
	/* Its holders of a conflicting mode are told, once a grant. */
	{
		struct hl_head *h = find_head("c");
		int b1 = lockers[1].basts, b2 = lockers[2].basts;
		unsigned long claims = remote_claims;

		hl_head_lock(h);
		hl_node_remote(h, hl_mode_bit(HLOCK_X));
		hl_head_unlock(h);
		/* S was told already, by the IX that waits. */
		CHECK(lockers[1].basts == b1 && lockers[2].basts == b2 + 1,
		      "the IS holder told of a remote X");
		CHECK(remote_claims == claims + 1,
		      "the remote X claims the expired leases in its way");
		CHECK(req_blocking_locked(h, req_of(2, "c")), "IS blocks it");
		CHECK(hl_req_blocks(req_of(2, "c")),
		      "a yield hears of the remote X too");
		hl_head_lock(h);
		hl_node_remote(h, hl_mode_bit(HLOCK_X));
		hl_head_unlock(h);
		CHECK(lockers[2].basts == b2 + 1 && remote_claims == claims + 1,
		      "told once, claimed once");
		h->remote_mask = hl_mode_bit(HLOCK_S);
	}
	/* A holder's conversion does not wait for other nodes. */
	CHECK(lock(2, "c", HLOCK_S, 0) == 0, "IS->S within X");
	CHECK(unlock(1, "c") == 0 && unlock(2, "c") == 1 &&
	      unlock(2, "c") == 0 && node_keep("c") == HLOCK_NL,
	      "holders gone");
	/* The node let go (down to NL); the remote's turn is over. */
	node_set("c", HLOCK_NL, 0);
	CHECK(collect(3) == -EAGAIN && node_need("c") == HLOCK_IX,
	      "IX asks again: %u", node_need("c"));
	node_set("c", HLOCK_IX, 0);
	CHECK(collect(3) == 0, "IX granted");
	/* A conversion beyond the node's mode waits for it, remote or not. */
	node_set("c", HLOCK_IX, hl_mode_bit(HLOCK_X));
	CHECK(lock(3, "c", HLOCK_X, 0) == -EINPROGRESS &&
	      node_keep("c") == HLOCK_X && node_need("c") == HLOCK_X,
	      "IX->X needs X");
	CHECK(node_only(3), "IX->X waits for the node alone, remote X or not");
	node_set("c", HLOCK_X, hl_mode_bit(HLOCK_X));
	CHECK(collect(3) == 0 && held(3, "c") == HLOCK_X, "converted");
	/* FIFO: a waiter for more than the node holds stops the queue. */
	CHECK(unlock(3, "c") == 1 && unlock(3, "c") == 0, "released");
	node_set("c", HLOCK_S, 0);
	CHECK(lock(4, "c", HLOCK_X, 0) == -EINPROGRESS &&
	      lock(5, "c", HLOCK_S, 0) == -EINPROGRESS,
	      "S queues behind the X that waits for the node");
	node_set("c", HLOCK_X, 0);
	CHECK(collect(4) == 0 && collect(5) == -EAGAIN, "X first");
	CHECK(unlock(4, "c") == 0 && collect(5) == 0, "then S");
	/*
	 * A try-lock, HLOCK_F_FRONT or not, that waits for the node alone
	 * may wait for the DLM: whatever happened to an earlier one.
	 */
	CHECK(unlock(5, "c") == 0, "released");
	node_set("c", HLOCK_S, 0);
	{
		struct hl_head *h = find_head("c");
		struct hl_node nd;

		hl_head_lock(h);
		hl_node_init(h, &nd);
		nd.exists = true;
		nd.mode = HLOCK_S;
		h->node_mode = HLOCK_S;
		hl_head_unlock(h);
		CHECK(lock(6, "c", HLOCK_X, HL_RF_TRY | HLOCK_F_FRONT) ==
		      -EINPROGRESS, "a FRONT try of X waits for the node");
		hl_head_lock(h);
		CHECK(hl_node_try_ok(h, &nd, lockers[6].lk.op.reqs[1],
				     true) == 1, "it may wait for the DLM");
		hl_head_unlock(h);
		CHECK(refuse(6, lockers[6].lk.wait_seq,
			     lockers[6].lk.hold_seq) == -ESTALE,
		      "a try's wait is not refused");
		cancel(6);
		CHECK(lock(6, "c", HLOCK_X, HL_RF_TRY) == -EINPROGRESS,
		      "a try of X");
		hl_head_lock(h);
		CHECK(hl_node_try_ok(h, &nd, lockers[6].lk.op.reqs[1],
				     true) == 1, "it may wait for the DLM too");
		hl_node_remote(h, hl_mode_bit(HLOCK_S));
		CHECK(!hl_node_try_ok(h, &nd, lockers[6].lk.op.reqs[1], true),
		      "not once another node waits for S");
		h->remote_mask = 0;
		hl_head_unlock(h);
		cancel(6);
	}
	cluster_heads = false;
	reset();
}

/*
 * A try-lock in a cluster lock space queues only to wait for this node's
 * DLM mode: one that a holder or waiter on this node, or another node's
 * wait, stands in the way of gives up at once, asking the DLM nothing;
 * one that waited for the node at one level and would wait for anything
 * else at the next gives up there, its levels undone; and one that waits
 * for the node stops doing so once another node waits for its own mode.
 */
static void test_cluster_try(void)
{
	struct hl_head *t, *y, *yz;

	cluster_heads = true;
	/* The node holds IX on the root and S on "t", for 0's S there. */
	CHECK(lock(0, "t", HLOCK_S, 0) == -EINPROGRESS, "0 waits for the node");
	node_set("", HLOCK_IX, 0);
	t = find_head("t");
	node_set("t", HLOCK_S, 0);
	CHECK(collect(0) == 0 && held(0, "t") == HLOCK_S, "0 holds S");
	/* A holder here: the try gives up, queued nowhere, asking nothing. */
	CHECK(lock(1, "t", HLOCK_X, HL_RF_TRY) == -EAGAIN &&
	      !t->wait_mask && !t->try_waiting &&
	      node_need("t") == HLOCK_S, "X gives up, the DLM unasked");
	/* So does a conversion. */
	CHECK(lock(1, "t", HLOCK_S, 0) == 0, "1 holds S too");
	CHECK(lock(1, "t", HLOCK_X, HL_RF_TRY) == -EAGAIN &&
	      held(1, "t") == HLOCK_S && !t->conv_mask &&
	      node_need("t") == HLOCK_S, "S -> X gives up, S kept");
	CHECK(unlock(1, "t") == 0, "1 lets go");
	/* Another node waits for X: even IS gives up, queued nowhere. */
	node_set("t", HLOCK_S, hl_mode_bit(HLOCK_X));
	CHECK(lock(1, "t", HLOCK_IS, HL_RF_TRY) == -EAGAIN &&
	      !t->wait_mask && !t->try_waiting, "IS gives up: a remote X");
	node_set("t", HLOCK_S, 0);
	/* Nothing here in the way but the node's S: X waits for the DLM. */
	CHECK(unlock(0, "t") == 0, "0 lets go");
	CHECK(lock(1, "t", HLOCK_X, HL_RF_TRY) == -EINPROGRESS &&
	      t->try_waiting == 1 && node_only(1), "X waits for the node");
	cancel(1);
	/*
	 * An X that came after another node's X waits for that node, not
	 * for this node's DLM mode alone: its own wait hides only itself.
	 */
	node_set("t", HLOCK_S, hl_mode_bit(HLOCK_X));
	CHECK(lock(1, "t", HLOCK_X, 0) == -EINPROGRESS && !node_only(1),
	      "X waits for the other node's X");
	cancel(1);
	node_set("t", HLOCK_S, 0);
	/*
	 * Levels: 2 holds S on "y/z", the node IS on "y".  3's try of X
	 * waits for the node's IX on "y", gets it, then meets 2's S below.
	 */
	CHECK(lock(2, "y/z", HLOCK_S, 0) == -EINPROGRESS, "2 waits at y");
	y = find_head("y");
	node_set("y", HLOCK_IS, 0);
	yz = find_head("y/z");
	node_set("y/z", HLOCK_S, 0);
	CHECK(collect(2) == 0 && held(2, "y/z") == HLOCK_S, "2 holds S");
	CHECK(lock(3, "y/z", HLOCK_X, HL_RF_TRY) == -EINPROGRESS &&
	      node_only(3) && y->try_waiting == 1, "3 waits for IX at y");
	node_set("y", HLOCK_IX, 0);
	CHECK(lockers[3].lk.op.state == HL_OP_FAILED &&
	      lockers[3].lk.op.error == -EAGAIN, "3 gave up at y/z");
	CHECK(collect(3) == -EAGAIN && lockers[3].lk.op.state == HL_OP_IDLE,
	      "collected");
	CHECK(held(3, "y") == HLOCK_NL && held(3, "") == HLOCK_NL &&
	      !y->try_waiting && !yz->wait_mask, "3 as before its call");
	CHECK(unlock(2, "y/z") == 0, "2 lets go");
	cluster_heads = false;
	reset();
}

/*
 * A DLM (simulated) of one resource, "c", and three nodes, each with one
 * lock, as fs/dlm grants them: this node (A, the core under test, driven
 * as hlock_clk.c drives it: hl_node_pass() under the head lock with the
 * answer and the blocking ASTs that came, the call it asks for once the
 * lock is dropped), B, whose conversions the test asks for and cancels,
 * and C, which only holds what the test gives it.  The rules of fs/dlm
 * that the node's protocol relies on:
 * - a conversion is granted at once when it is compatible with the other
 *   granted modes (those of converting locks too), unless it has QUECVT
 *   and another conversion waits (6-3, 6-7); else it waits, in order, and
 *   only the first waiting conversion can be granted (6-3);
 * - a conversion whose granted mode blocks one that waits is refused as a
 *   conversion deadlock (EDEADLK);
 * - a lock made in NL with EXPEDITE is granted at once (6-11);
 * - a grant re-arms its holder's blocking AST; after every grant or wait,
 *   each holder whose mode blocks the highest waiting mode is told of it,
 *   once per grant (grant_pending_locks(), send_blocking_asts()).
 */
enum { NA, NB, NC, NNODES };

static struct {
	struct hl_node n;
	unsigned int gr[NNODES];	/* granted modes (NL: none) */
	unsigned int rq[NNODES];	/* a waiting conversion's, or NL */
	unsigned long order[NNODES];	/* its place in the queue */
	unsigned int highbast[NNODES];
	unsigned long seq;
	bool a_exists;
	bool answer;			/* an answer for A is due... */
	enum hl_node_answer ans;	/* ...this one */
	unsigned int basts;		/* blocking ASTs for A, not taken in */
	unsigned int b_basts;		/* blocking ASTs B got */
	bool b_deadlk;			/* B's last conversion was refused */
	unsigned long calls;
	unsigned long probes;
} dlm;

static bool compat(unsigned int a, unsigned int b)
{
	return !hl_conflicts(a, hl_mode_bit(b));
}

/* Tell node @x of a waiter of mode @m, once per grant of its lock. */
static void dlm_bast(unsigned int x, unsigned int m)
{
	if (dlm.highbast[x] >= m || compat(dlm.gr[x], m) ||
	    dlm.gr[x] == HLOCK_NL)
		return;
	dlm.highbast[x] = m;
	if (x == NA)
		dlm.basts |= hl_mode_bit(m);
	else if (x == NB)
		dlm.b_basts |= hl_mode_bit(m);
}

/* Whether @x's mode @m is compatible with every other node's grant. */
static bool dlm_fits(unsigned int x, unsigned int m)
{
	unsigned int y;

	for (y = 0; y < NNODES; y++)
		if (y != x && !compat(dlm.gr[y], m))
			return false;
	return true;
}

/* The first waiting conversion, or NNODES. */
static unsigned int dlm_first(void)
{
	unsigned int x, best = NNODES;

	for (x = 0; x < NNODES; x++)
		if (dlm.rq[x] != HLOCK_NL &&
		    (best == NNODES || dlm.order[x] < dlm.order[best]))
			best = x;
	return best;
}

static void dlm_grant_to(unsigned int x, unsigned int m)
{
	dlm.gr[x] = m;
	dlm.rq[x] = HLOCK_NL;
	dlm.order[x] = 0;
	dlm.highbast[x] = 0;
	if (x == NA) {
		dlm.answer = true;
		dlm.ans = HL_NODE_GRANTED;
	}
}

/* grant_pending_locks(): grant in order, then tell the holders. */
static void dlm_grant_pending(void)
{
	unsigned int x, high = HLOCK_NL;

	while ((x = dlm_first()) < NNODES && dlm_fits(x, dlm.rq[x]))
		dlm_grant_to(x, dlm.rq[x]);
	for (x = 0; x < NNODES; x++)
		if (dlm.rq[x] > high)
			high = dlm.rq[x];
	if (high == HLOCK_NL)
		return;
	for (x = 0; x < NNODES; x++)
		dlm_bast(x, high);
}

/*
 * Node @x converts to @m (@quecvt: behind the waiting conversions;
 * @noqueue: now or never, and the holders in the way are told).
 * Return: 0 granted, 1 waits, -EDEADLK or -EAGAIN refused.
 */
static int dlm_convert(unsigned int x, unsigned int m, bool quecvt,
		       bool noqueue)
{
	unsigned int y;

	if (dlm_fits(x, m) && (!quecvt || dlm_first() == NNODES)) {
		dlm_grant_to(x, m);
		dlm_grant_pending();
		return 0;
	}
	if (noqueue) {
		for (y = 0; y < NNODES; y++)
			if (y != x)
				dlm_bast(y, m);
		return -EAGAIN;
	}
	for (y = 0; y < NNODES; y++)
		if (dlm.rq[y] != HLOCK_NL && !compat(dlm.gr[x], dlm.rq[y]))
			return -EDEADLK;
	dlm.rq[x] = m;
	dlm.order[x] = ++dlm.seq;
	for (y = 0; y < NNODES; y++)
		if (y != x)
			dlm_bast(y, m);
	return 1;
}

/* B asks for @mode (QUECVT up), or lets go of what it holds (NL). */
static void dlm_b(unsigned int mode)
{
	dlm.b_deadlk = false;
	if (dlm.rq[NB] != HLOCK_NL) {
		/* Cancelled: it tells nobody. */
		dlm.rq[NB] = HLOCK_NL;
		dlm.order[NB] = 0;
	}
	if (mode == HLOCK_NL) {
		dlm.gr[NB] = HLOCK_NL;
		dlm.highbast[NB] = 0;
		dlm_grant_pending();
		return;
	}
	dlm.b_deadlk = dlm_convert(NB, mode, !hl_covers(dlm.gr[NB], mode),
				   false) == -EDEADLK;
}

/* B gives up its waiting conversion (a timeout): it tells nobody. */
static void dlm_b_cancel(void)
{
	dlm.rq[NB] = HLOCK_NL;
	dlm.order[NB] = 0;
	dlm_grant_pending();
}

/* C takes @mode, which nothing of A's or B's blocks, or lets go (NL). */
static void dlm_c(unsigned int mode)
{
	dlm.gr[NC] = mode;
	dlm.highbast[NC] = 0;
	dlm_grant_pending();
}

/* What A's grants on "c" add up to. */
static unsigned int local_sup(struct hl_head *h)
{
	unsigned int m, sup = HLOCK_NL;

	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++)
		if (h->granted_mask & hl_mode_bit(m))
			sup = hl_sup(sup, m);
	return sup;
}

/*
 * The safety of the nodes: what A's lockers were granted is covered by
 * the DLM's grant to A, and the grants are compatible.
 */
static void dlm_check(const char *when)
{
	unsigned int sup = local_sup(dlm_head), x, y;

	CHECK(hl_covers(dlm.gr[NA], sup),
	      "%s: A granted %s under the DLM's %s", when, hl_mode_name(sup),
	      hl_mode_name(dlm.gr[NA]));
	for (x = 0; x < NNODES; x++)
		for (y = x + 1; y < NNODES; y++)
			CHECK(compat(dlm.gr[x], dlm.gr[y]),
			      "%s: nodes %u and %u hold %s and %s", when, x, y,
			      hl_mode_name(dlm.gr[x]), hl_mode_name(dlm.gr[y]));
}

/*
 * One pass of A's work and its DLM call.  @between runs after the pass
 * dropped the head lock, before the call goes out: another CPU's lock
 * call in that window.
 */
static bool dlm_pass(void (*between)(void))
{
	struct hl_node_event ev = { };
	struct hl_node_req req;
	struct hl_grants g;
	unsigned int keep;
	bool did, tries_only;
	int r;

	/*
	 * The root has no DLM of its own here: it keeps X, which a release
	 * lowers when the node does not cache (hl_node_release()).
	 */
	if (find_head("")->node_mode != HLOCK_X)
		node_set("", HLOCK_X, 0);
	hl_grants_init(&g);
	hl_head_lock(dlm_head);
	did = dlm.answer || dlm.basts || dlm_kicked;
	ev.answered = dlm.answer;
	ev.answer = dlm.ans;
	ev.basts = dlm.basts;
	ev.now = clock_ns;
	dlm.answer = false;
	dlm.basts = 0;
	dlm_kicked = false;
	hl_node_pass(dlm_head, &dlm.n, &ev, true, true, &g, &req);
	keep = hl_node_keep(dlm_head);
	tries_only = hl_node_tries_only(dlm_head);
	/* Down (or away): A may not grant above the target meanwhile. */
	if (req.call == HL_NODE_LOCK && !hl_covers(req.mode, dlm.gr[NA]))
		CHECK(hl_covers(req.mode, local_sup(dlm_head)) &&
		      hl_covers(req.mode, dlm_head->node_mode),
		      "going down to %s with %s granted", hl_mode_name(req.mode),
		      hl_mode_name(local_sup(dlm_head)));
	if (req.call == HL_NODE_UNLOCK)
		CHECK(!dlm_head->granted_mask && dlm_head->node_mode == HLOCK_NL,
		      "unlocked while granted");
	hl_head_unlock(dlm_head);
	run_grants(&g);
	if (between)
		between();
	switch (req.call) {
	case HL_NODE_LOCK:
		dlm.calls++;
		CHECK(req.convert == dlm.a_exists && req.expedite == !req.convert,
		      "a conversion of no lock, or a new lock beside one");
		CHECK(!req.expedite || req.mode == HLOCK_NL,
		      "a new lock in %s", hl_mode_name(req.mode));
		/*
		 * Up for new requests queues behind what waits; for a
		 * holder's conversion, down and probes, not.
		 */
		CHECK(req.quecvt == (req.convert &&
				     !hl_covers(dlm.gr[NA], req.mode) &&
				     hl_covers(dlm.gr[NA], keep)),
		      "QUECVT %d from %s to %s", req.quecvt,
		      hl_mode_name(dlm.gr[NA]), hl_mode_name(req.mode));
		CHECK(!req.probe || req.mode == dlm.gr[NA], "a probe moves");
		dlm.probes += req.probe;
		if (req.expedite) {
			dlm.a_exists = true;
			dlm_grant_to(NA, HLOCK_NL);
			break;
		}
		CHECK(dlm.rq[NA] == HLOCK_NL, "two requests in flight");
		/* NOQUEUE: only up, and only for try-locks alone. */
		CHECK(!req.noqueue || (req.quecvt && tries_only),
		      "NOQUEUE for what is not a try");
		r = dlm_convert(NA, req.mode, req.quecvt, req.noqueue);
		if (r < 0) {
			dlm.answer = true;
			dlm.ans = r == -EAGAIN ? HL_NODE_REFUSED :
				  HL_NODE_DEADLOCK;
		}
		did = true;
		break;
	case HL_NODE_UNLOCK:
		dlm.calls++;
		dlm.gr[NA] = HLOCK_NL;
		dlm.a_exists = false;
		dlm.answer = true;
		dlm.ans = HL_NODE_FAILED;	/* -DLM_EUNLOCK */
		dlm_grant_pending();
		did = true;
		break;
	case HL_NODE_CANCEL:
		if (dlm.rq[NA] != HLOCK_NL) {
			dlm.rq[NA] = HLOCK_NL;
			dlm.order[NA] = 0;
			dlm.answer = true;
			dlm.ans = HL_NODE_CANCELLED;
			dlm_grant_pending();
		}
		did = true;
		break;
	}
	dlm_check("after a pass");
	return did;
}

/* Run A's work until it has nothing to do. */
static void dlm_settle(void)
{
	int i;

	for (i = 0; i < 64 && dlm_pass(NULL); i++)
		;
	CHECK(i < 64, "the node's work does not settle");
}

/* lock_in_window() ran. */
static bool window_done;

static void dlm_start(void)
{
	memset(&dlm, 0, sizeof(dlm));
	window_done = false;
	cluster_heads = true;
	probe_ns = 0;
	/* The root: IX and more, in the DLM as far as this test cares. */
	get_head("");
	node_set("", HLOCK_X, 0);
	dlm_head = get_head("c");
	dlm_node = &dlm.n;
	hl_node_init(dlm_head, dlm_node);
}

static void dlm_stop(void)
{
	dlm_head = NULL;
	dlm_node = NULL;
	dlm_kicked = false;
	cluster_heads = false;
	probe_ns = 0;
	reset();
}

/* A local lock call in the window of a conversion down (dlm_pass()). */
static void lock_in_window(void)
{
	if (window_done)
		return;
	window_done = true;
	CHECK(lock(11, "c", HLOCK_X, 0) == -EINPROGRESS,
	      "X granted while the DLM lock goes down");
}

/*
 * Node transitions, as the cluster glue drives them: made in NL, then up
 * on demand, kept after the release (cached), down when another node
 * waits, away when the host wants the resource gone; the window of a
 * conversion down; a holder's conversion that another node's wait must not
 * hold back; a try-lock; a request nobody wants any more cancelled.
 */
static void test_node(void)
{
	unsigned long calls;

	dlm_start();
	CHECK(lock(10, "c", HLOCK_X, 0) == -EINPROGRESS, "X waits for the node");
	dlm_settle();
	CHECK(collect(10) == 0 && dlm.gr[NA] == HLOCK_X && dlm.n.exists &&
	      dlm.calls == 2, "granted once the DLM granted X: NL, then X");
	CHECK(unlock(10, "c") == 0, "released");
	dlm_settle();
	CHECK(dlm.gr[NA] == HLOCK_X, "cached: the DLM lock stays");
	calls = dlm.calls;
	CHECK(lock(10, "c", HLOCK_S, 0) == 0 && dlm.calls == calls,
	      "relocked without a round trip");
	/*
	 * B wants S: A goes down to what its holders keep (S), and
	 * between the pass and the call, a local X must wait.
	 */
	dlm_b(HLOCK_S);
	CHECK(dlm.rq[NB] == HLOCK_S && dlm.basts, "B waits, A is told");
	while (dlm_pass(lock_in_window))
		;
	CHECK(dlm.gr[NA] == HLOCK_S && dlm.gr[NB] == HLOCK_S,
	      "A went down to S, B got S");
	CHECK(collect(11) == -EAGAIN, "the X still waits");
	/*
	 * A's holder converts S->X while B holds S: it waits for B.  Then
	 * B lets go; the conversion goes up.
	 */
	CHECK(lock(10, "c", HLOCK_X, 0) == -EINPROGRESS, "S->X waits");
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_X && collect(10) == -EAGAIN,
	      "queued in the DLM");
	dlm_b(HLOCK_NL);
	dlm_settle();
	CHECK(collect(10) == 0 && held(10, "c") == HLOCK_X, "converted");
	CHECK(unlock(10, "c") == 1 && unlock(10, "c") == 0, "released");
	dlm_settle();
	CHECK(collect(11) == 0, "the other X");
	CHECK(unlock(11, "c") == 0, "released");
	dlm_settle();
	/* The host wants "c" gone: unlocked when idle, not before. */
	CHECK(lock(16, "c", HLOCK_S, 0) == 0, "S, cached");
	hl_head_lock(dlm_head);
	CHECK(!hl_node_want_unlock(dlm_head, &dlm.n, true), "not while held");
	hl_head_unlock(dlm_head);
	CHECK(unlock(16, "c") == 0, "released");
	dlm_settle();
	/*
	 * ...and B's blocking AST comes before the pass that unlocks: the
	 * pass notes it, then unlocks; once the lock is gone, nobody waits
	 * for this node (a blocking AST would never come to say otherwise).
	 */
	dlm_b(HLOCK_X);
	hl_head_lock(dlm_head);
	CHECK(hl_node_want_unlock(dlm_head, &dlm.n, true), "idle: unlock");
	hl_head_unlock(dlm_head);
	dlm_kicked = true;
	dlm_settle();
	CHECK(!dlm.n.exists && dlm.gr[NA] == HLOCK_NL &&
	      dlm_head->node_mode == HLOCK_NL && !dlm_head->remote_mask &&
	      dlm.gr[NB] == HLOCK_X,
	      "unlocked, nothing left of other nodes' waits; B got X");
	dlm_b(HLOCK_NL);
	/*
	 * A holder's conversion is never held back behind another node's
	 * wait (its holder blocks that node already): A holds IS in the
	 * DLM for an IS, B asks X, IS->S goes ahead of B.
	 */
	CHECK(lock(12, "c", HLOCK_IS, 0) == -EINPROGRESS, "IS");
	dlm_settle();
	CHECK(collect(12) == 0 && dlm.gr[NA] == HLOCK_IS, "IS in the DLM");
	dlm_b(HLOCK_X);
	dlm_settle();
	CHECK(dlm.gr[NA] == HLOCK_IS && dlm.rq[NB] == HLOCK_X &&
	      dlm_head->remote_mask == hl_mode_bit(HLOCK_X),
	      "B waits for A's IS, A knows");
	CHECK(lock(12, "c", HLOCK_S, 0) == -EINPROGRESS, "IS->S waits");
	dlm_settle();
	CHECK(collect(12) == 0 && held(12, "c") == HLOCK_S &&
	      dlm.gr[NA] == HLOCK_S, "converted ahead of B's X");
	CHECK(lock(13, "c", HLOCK_IS, 0) == -EINPROGRESS,
	      "a new IS waits behind B's X");
	CHECK(unlock(12, "c") == 1 && unlock(12, "c") == 0, "released");
	dlm_settle();
	CHECK(dlm.gr[NB] == HLOCK_X && dlm.gr[NA] == HLOCK_NL,
	      "A let go, B got X");
	dlm_b(HLOCK_NL);
	dlm_settle();
	CHECK(collect(13) == 0, "then the IS");
	CHECK(unlock(13, "c") == 0, "released");
	dlm_settle();
	/*
	 * A try-lock that waits for the node alone asks the DLM: at once
	 * first (NOQUEUE), which tells B; then queued, for a while.  B only
	 * caches its S, and lets go: the try is granted.
	 */
	dlm_b(HLOCK_S);
	dlm_settle();
	dlm.b_basts = 0;
	CHECK(lock(14, "c", HLOCK_X, HL_RF_TRY) == -EINPROGRESS,
	      "a try of X waits for the DLM");
	hl_head_lock(dlm_head);
	CHECK(hl_node_try_ok(dlm_head, &dlm.n, lockers[14].lk.op.reqs[1],
			     true) == 1, "it may wait for an answer at once");
	hl_head_unlock(dlm_head);
	CHECK(dlm_pass(NULL) && dlm.answer && dlm.ans == HL_NODE_REFUSED &&
	      dlm.b_basts == hl_mode_bit(HLOCK_X),
	      "asked with NOQUEUE: refused, and B is told");
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_X, "asked again, queued");
	hl_head_lock(dlm_head);
	CHECK(hl_node_try_ok(dlm_head, &dlm.n, lockers[14].lk.op.reqs[1],
			     true) == 2, "it may wait for that a while");
	hl_head_unlock(dlm_head);
	dlm_b(HLOCK_NL);
	dlm_settle();
	CHECK(collect(14) == 0 && held(14, "c") == HLOCK_X, "B let go: granted");
	CHECK(unlock(14, "c") == 0, "released");
	dlm_settle();
	/* B holds on: the try gives up, and its request is cancelled. */
	dlm_b(HLOCK_S);
	dlm_settle();
	CHECK(lock(14, "c", HLOCK_X, HL_RF_TRY) == -EINPROGRESS, "a try");
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_X, "refused at once, then queued");
	cancel(14);
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_NL && !dlm.n.refused,
	      "the try gave up: cancelled");
	dlm_b(HLOCK_NL);
	dlm_settle();
	dlm_b(HLOCK_S);
	dlm_settle();
	/* A request whose waiter went away is cancelled. */
	CHECK(lock(15, "c", HLOCK_X, 0) == -EINPROGRESS, "X waits for B");
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_X, "queued in the DLM");
	cancel(15);
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_NL && dlm.gr[NA] != HLOCK_X, "cancelled");
	dlm_b(HLOCK_NL);
	dlm_stop();
}

/*
 * Readers on two nodes do not starve a writer on a third.  A and C hold S,
 * B asks X.  A gives way as soon as its reader lets go (down to NL), and
 * asks for its next reader with a conversion that queues behind B's
 * (QUECVT).  A plain conversion from NL would have been granted at once
 * beside C's S, ahead of B: A and C taking turns like that would keep B
 * waiting for good.
 */
static void test_node_fair(void)
{
	dlm_start();
	dlm_c(HLOCK_S);
	CHECK(lock(30, "c", HLOCK_S, 0) == -EINPROGRESS, "S waits for the node");
	dlm_settle();
	CHECK(collect(30) == 0 && dlm.gr[NA] == HLOCK_S, "S beside C's S");
	dlm_b(HLOCK_X);
	dlm_settle();
	CHECK(dlm.rq[NB] == HLOCK_X &&
	      dlm_head->remote_mask == hl_mode_bit(HLOCK_X),
	      "B's X waits for A and C, A knows");
	CHECK(lock(31, "c", HLOCK_S, 0) == -EINPROGRESS,
	      "the next reader waits behind B");
	CHECK(unlock(30, "c") == 0, "the first reader lets go");
	dlm_settle();
	CHECK(collect(31) == -EAGAIN && dlm.gr[NA] == HLOCK_NL &&
	      dlm.rq[NA] == HLOCK_S && dlm.order[NA] > dlm.order[NB],
	      "A's S queues behind B's X");
	dlm_c(HLOCK_NL);
	dlm_settle();
	CHECK(dlm.gr[NB] == HLOCK_X && collect(31) == -EAGAIN,
	      "C let go: B got X, the reader still waits");
	dlm_b(HLOCK_NL);
	dlm_settle();
	CHECK(collect(31) == 0 && dlm.gr[NA] == HLOCK_S, "then the reader");
	CHECK(unlock(31, "c") == 0, "released");
	dlm_settle();
	/* A request that is cancelled leaves the NL lock as it was. */
	dlm_b(HLOCK_X);
	dlm_settle();
	CHECK(dlm.gr[NB] == HLOCK_X && dlm.gr[NA] == HLOCK_NL && dlm.n.exists,
	      "A gave way to B's X, down to NL");
	CHECK(lock(34, "c", HLOCK_S, 0) == -EINPROGRESS, "S waits for B");
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_S, "asked, queued");
	cancel(34);
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_NL && dlm.n.exists &&
	      dlm.n.mode == HLOCK_NL, "cancelled: the NL lock is the lock");
	dlm_b(HLOCK_NL);
	CHECK(lock(34, "c", HLOCK_S, 0) == -EINPROGRESS, "S asks again");
	dlm_settle();
	CHECK(collect(34) == 0, "granted");
	CHECK(unlock(34, "c") == 0, "released");
	dlm_settle();
	dlm_stop();
}

/*
 * Nor do two nodes that only go down to IS starve a SIX on a third: A's
 * holders keep IS, C holds S, B asks SIX.  A goes down to IS (IS does not
 * block SIX); its next S converts up from IS behind B's SIX, where a plain
 * conversion would be granted at once beside C's S.
 */
static void test_node_fair_is(void)
{
	dlm_start();
	dlm_c(HLOCK_S);
	CHECK(lock(40, "c", HLOCK_S, 0) == -EINPROGRESS &&
	      lock(41, "c", HLOCK_IS, 0) == -EINPROGRESS, "S and IS");
	dlm_settle();
	CHECK(collect(40) == 0 && collect(41) == 0 && dlm.gr[NA] == HLOCK_S,
	      "granted under S");
	dlm_b(HLOCK_SIX);
	dlm_settle();
	CHECK(dlm_head->remote_mask == hl_mode_bit(HLOCK_SIX), "A knows");
	CHECK(unlock(40, "c") == 0, "the S holder lets go");
	dlm_settle();
	CHECK(dlm.gr[NA] == HLOCK_IS && !dlm_head->remote_mask,
	      "down to IS, which SIX does not wait for");
	CHECK(lock(42, "c", HLOCK_S, 0) == -EINPROGRESS, "a new S");
	dlm_settle();
	CHECK(dlm.gr[NA] == HLOCK_IS && dlm.rq[NA] == HLOCK_S &&
	      dlm.order[NA] > dlm.order[NB] && collect(42) == -EAGAIN,
	      "IS->S queues behind B's SIX, not beside C's S");
	dlm_c(HLOCK_NL);
	dlm_settle();
	CHECK(dlm.gr[NB] == HLOCK_SIX && collect(42) == -EAGAIN,
	      "B got SIX first");
	dlm_b(HLOCK_NL);
	dlm_settle();
	CHECK(collect(42) == 0 && dlm.gr[NA] == HLOCK_S, "then A's S");
	CHECK(unlock(42, "c") == 0 && unlock(41, "c") == 0, "released");
	dlm_settle();
	dlm_stop();
}

/*
 * A's X waits for the DLM behind B's S.  B lets go and asks again at once:
 * the DLM grants A's X and tells A that B waits, and A's next pass takes
 * in both.  The X was first: it is granted, then A gives way.  Held back,
 * it would see A's DLM X go to B unused, each time.
 */
static void test_node_first(void)
{
	dlm_start();
	dlm_b(HLOCK_S);
	dlm_settle();
	CHECK(lock(32, "c", HLOCK_X, 0) == -EINPROGRESS, "X waits for B");
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_X && collect(32) == -EAGAIN,
	      "queued in the DLM");
	dlm_b(HLOCK_NL);
	dlm_b(HLOCK_S);
	CHECK(dlm.answer && dlm.basts, "A's X granted, and B waits again");
	dlm_settle();
	CHECK(collect(32) == 0 && dlm.gr[NA] == HLOCK_X &&
	      dlm.rq[NB] == HLOCK_S,
	      "the X that was first is granted, B waits for it");
	CHECK(lock(33, "c", HLOCK_IS, 0) == -EINPROGRESS,
	      "an IS that came after B waits behind it");
	CHECK(unlock(32, "c") == 0, "released");
	dlm_settle();
	CHECK(dlm.gr[NB] == HLOCK_S, "then B");
	dlm_b(HLOCK_NL);
	dlm_settle();
	CHECK(collect(33) == 0, "then the IS");
	CHECK(unlock(33, "c") == 0, "released");
	dlm_settle();
	dlm_stop();
}

/*
 * As test_node_first(), with a privileged HLOCK_F_FRONT X: its sequence
 * number counts down from 0, and it still came before B's wait.  Held
 * back, A's DLM X went to B unused, each time (a cluster interaction test
 * found it: root has CAP_SYS_NICE, so its strong modes on "" jump).
 */
static void test_node_first_front(void)
{
	dlm_start();
	dlm_b(HLOCK_S);
	dlm_settle();
	CHECK(lock(34, "c", HLOCK_X, HLOCK_F_FRONT) == -EINPROGRESS,
	      "a FRONT X waits for B");
	dlm_settle();
	CHECK(dlm.rq[NA] == HLOCK_X && collect(34) == -EAGAIN,
	      "queued in the DLM");
	dlm_b(HLOCK_NL);
	dlm_b(HLOCK_S);
	dlm_settle();
	CHECK(collect(34) == 0 && dlm.gr[NA] == HLOCK_X &&
	      dlm.rq[NB] == HLOCK_S,
	      "the FRONT X that was first is granted, B waits for it");
	CHECK(lock(35, "c", HLOCK_IS, HLOCK_F_FRONT) == -EINPROGRESS,
	      "a FRONT IS that came after B waits behind it");
	CHECK(unlock(34, "c") == 0, "released");
	dlm_settle();
	CHECK(dlm.gr[NB] == HLOCK_S, "then B");
	dlm_b(HLOCK_NL);
	dlm_settle();
	CHECK(collect(35) == 0, "then the IS");
	CHECK(unlock(35, "c") == 0, "released");
	dlm_settle();
	dlm_stop();
}

/*
 * From IX to S, two modes side by side: A caches IX, B holds IX, and a
 * local S waits.  A goes down to IS first (at once), then asks for S,
 * queued behind B.  The reader gives up: A's conversion is cancelled, not
 * left in the DLM's queue to take the lock from B later for nobody.  Asked
 * in one step, the conversion counted as one down and was never cancelled
 * (a cluster interaction test found it).
 */
static void test_node_sideways(void)
{
	dlm_start();
	CHECK(lock(36, "c", HLOCK_IX, 0) == -EINPROGRESS, "IX");
	dlm_settle();
	CHECK(collect(36) == 0 && dlm.gr[NA] == HLOCK_IX, "granted");
	CHECK(unlock(36, "c") == 0, "released; A caches IX");
	dlm_settle();
	dlm_b(HLOCK_IX);
	dlm_settle();
	CHECK(dlm.gr[NB] == HLOCK_IX, "B holds IX beside A");
	CHECK(lock(37, "c", HLOCK_S, 0) == -EINPROGRESS, "an S waits");
	dlm_settle();
	CHECK(dlm.gr[NA] == HLOCK_IS && dlm.rq[NA] == HLOCK_S &&
	      collect(37) == -EAGAIN,
	      "down to IS, then S queued behind B's IX");
	cancel(37);
	dlm_settle();
	CHECK(dlm.gr[NA] == HLOCK_IS && dlm.rq[NA] == HLOCK_NL,
	      "the reader gave up: the conversion is cancelled");
	CHECK(lock(38, "c", HLOCK_IX, 0) == -EINPROGRESS, "IX again");
	dlm_settle();
	CHECK(collect(38) == 0 && dlm.gr[NA] == HLOCK_IX,
	      "granted beside B's IX");
	CHECK(unlock(38, "c") == 0, "released");
	dlm_settle();
	dlm_b(HLOCK_NL);
	dlm_stop();
}

/*
 * Another node's wait that ends tells nobody: A probes.  A's holder keeps
 * S while B waits for X, and A's new readers wait behind B.  B gives up;
 * a probe interval later A asks for S again, twice: no blocking AST comes
 * between the answers, so nobody waits, and the readers go.  While B
 * still waits, the probe's first grant brings the blocking AST again, and
 * they keep waiting.
 */
static void test_node_probe(void)
{
	unsigned long probes;

	dlm_start();
	probe_ns = 1000;
	clock_ns = 10000;
	CHECK(lock(50, "c", HLOCK_S, 0) == -EINPROGRESS, "S");
	dlm_settle();
	CHECK(collect(50) == 0, "granted");
	dlm_b(HLOCK_X);
	dlm_settle();
	CHECK(lock(51, "c", HLOCK_S, 0) == -EINPROGRESS, "a reader waits for B");
	dlm_settle();
	probes = dlm.probes;
	clock_ns += 2000;
	dlm_kicked = true;
	dlm_settle();
	CHECK(dlm.probes == probes + 2 && collect(51) == -EAGAIN &&
	      dlm_head->remote_mask == hl_mode_bit(HLOCK_X),
	      "probed while B waits: it still does");
	hl_head_lock(dlm_head);
	CHECK(hl_req_blocking(dlm_head, req_of(50, "c")),
	      "the holder blocks a waiter");
	hl_head_unlock(dlm_head);
	dlm_b_cancel();
	dlm_settle();
	CHECK(collect(51) == -EAGAIN, "B gave up, and told nobody");
	clock_ns += 2000;
	dlm_kicked = true;
	dlm_settle();
	CHECK(dlm.probes == probes + 4 && !dlm_head->remote_mask &&
	      collect(51) == 0, "probed: nobody waits, the reader goes");
	hl_head_lock(dlm_head);
	CHECK(!hl_req_blocking(dlm_head, req_of(50, "c")), "nor is blocked");
	hl_head_unlock(dlm_head);
	CHECK(unlock(50, "c") == 0 && unlock(51, "c") == 0, "released");
	dlm_settle();
	dlm_b(HLOCK_NL);
	dlm_stop();
}

/*
 * A conversion deadlock across nodes: A's holder and B both hold S and
 * convert to X.  B asked first; the DLM refuses A's conversion.  A's
 * holders hold all A holds (S): the local conversion fails with EDEADLK,
 * and A asks for nothing more, where it asked again and again before.
 * Another local conversion a probe interval later asks once more, and is
 * refused once more.
 */
static void test_node_deadlock(void)
{
	unsigned long calls, dl = note_dlm_deadlock;

	dlm_start();
	probe_ns = 1000;
	clock_ns = 20000;
	CHECK(lock(60, "c", HLOCK_S, 0) == -EINPROGRESS, "S");
	dlm_settle();
	CHECK(collect(60) == 0, "granted");
	dlm_b(HLOCK_S);
	dlm_settle();
	CHECK(dlm.gr[NA] == HLOCK_S && dlm.gr[NB] == HLOCK_S, "both hold S");
	dlm_b(HLOCK_X);
	dlm_settle();
	CHECK(lock(60, "c", HLOCK_X, 0) == -EINPROGRESS, "A's holder converts");
	dlm_settle();
	CHECK(collect(60) == -EDEADLK && held(60, "c") == HLOCK_S &&
	      note_dlm_deadlock == dl + 1,
	      "refused: the holder keeps S, and is told");
	calls = dlm.calls;
	dlm_kicked = true;
	dlm_settle();
	CHECK(dlm.calls == calls, "nothing asked again");
	CHECK(lock(61, "c", HLOCK_X, 0) == -EINPROGRESS, "a new X waits");
	dlm_settle();
	CHECK(dlm.calls == calls, "nor for a new request");
	clock_ns += 2000;
	dlm_kicked = true;
	dlm_settle();
	CHECK(dlm.calls > calls && collect(61) == -EAGAIN,
	      "a probe interval later, asked again");
	cancel(61);
	/* B gives up: A's holder can convert. */
	dlm_b(HLOCK_S);
	dlm_settle();
	clock_ns += 2000;
	CHECK(lock(60, "c", HLOCK_X, 0) == -EINPROGRESS, "converts again");
	dlm_b(HLOCK_NL);
	dlm_settle();
	CHECK(collect(60) == 0 && held(60, "c") == HLOCK_X, "converted");
	CHECK(unlock(60, "c") == 1 && unlock(60, "c") == 0, "released");
	dlm_settle();
	dlm_stop();
}

/*
 * Random lock calls of A's lockers and of node B on "c", with and without
 * caching, probes now and then, checking the nodes' safety after every
 * step (dlm_check()) and that everything is granted once B lets go.
 */
static void test_node_random(unsigned int seed, bool cache)
{
	unsigned int step, who, m;
	int pending[4] = { 0 };

	srand(seed);
	node_cache = cache;
	dlm_start();
	probe_ns = seed % 3 ? 1000 : 0;
	for (step = 0; step < 400; step++) {
		who = 20 + rand() % 4;
		m = HLOCK_IS + rand() % 5;
		switch (rand() % 7) {
		case 0:
		case 1:
			if (pending[who - 20])
				break;
			pending[who - 20] = lock(who, "c", m, 0) == -EINPROGRESS;
			break;
		case 2:
			if (pending[who - 20]) {
				if (collect(who) != -EAGAIN)
					pending[who - 20] = 0;
			} else if (held(who, "c")) {
				unlock(who, "c");
			}
			break;
		case 3:
			if (pending[who - 20] && rand() % 2) {
				cancel(who);
				pending[who - 20] = 0;
			}
			break;
		case 4:
			if (dlm.gr[NB] == HLOCK_NL && dlm.rq[NB] == HLOCK_NL)
				dlm_b(m);
			else if (rand() % 3 == 0)
				dlm_b_cancel();
			else if (rand() % 2)
				dlm_b(HLOCK_NL);
			break;
		case 5:
			dlm_pass(NULL);
			break;
		case 6:
			clock_ns += rand() % 800;
			dlm_kicked = true;
			break;
		}
		dlm_check("a step");
	}
	/*
	 * B lets go, and A's holders release what they hold as they get
	 * it: every waiter is granted in the end (or refused: a conversion
	 * deadlock with B).
	 */
	dlm_b(HLOCK_NL);
	for (step = 0; step < 16; step++) {
		for (who = 20; who < 24; who++)
			if (!pending[who - 20])
				while (held(who, "c"))
					unlock(who, "c");
		clock_ns += 2000;
		dlm_kicked = true;
		dlm_settle();
		for (who = 20; who < 24; who++)
			if (pending[who - 20] && collect(who) != -EAGAIN)
				pending[who - 20] = 0;
	}
	for (who = 20; who < 24; who++)
		CHECK(!pending[who - 20], "seed %u, cache %d: locker %u waits",
		      seed, cache, who);
	node_cache = true;
	dlm_stop();
}

/*
 * The node loses the cluster: a request waiting for the node fails with
 * -ENOLINK once its continuation runs, a conversion too, the holders are
 * told, and nothing new is granted, cached or not; a release still works.
 */
static void test_cluster_lost(void)
{
	struct hl_grants g;
	struct hl_head *h;

	cluster_heads = true;
	CHECK(lock(2, "c", HLOCK_S, 0) == -EINPROGRESS, "waits for the node");
	node_set("", HLOCK_IX, 0);
	node_set("c", HLOCK_S, 0);
	CHECK(collect(2) == 0, "S on c");
	CHECK(lock(0, "c", HLOCK_X, 0) == -EINPROGRESS && collect(0) == -EAGAIN,
	      "X waits");
	CHECK(lock(1, "d", HLOCK_X, 0) == -EINPROGRESS, "waits for the node");
	node_set("d", HLOCK_X, 0);
	CHECK(collect(1) == 0, "X on d");
	CHECK(lock(4, "d", HLOCK_S, 0) == -EINPROGRESS && collect(4) == -EAGAIN,
	      "S waits behind X, the node holding X");
	node_lost = true;
	hl_grants_init(&g);
	h = find_head("c");
	hl_head_lock(h);
	hl_node_lost_notify(h, &g);
	hl_head_unlock(h);
	CHECK(note_lost == 1 && !list_empty(&g.lockers), "holder told, waiter due");
	run_grants(&g);
	/*
	 * A release before the waiter's continuation ran grants it nothing,
	 * though the node's mode still covers it.
	 */
	hl_grants_init(&g);
	h = find_head("d");
	hl_head_lock(h);
	hl_node_lost_notify(h, &g);
	hl_head_unlock(h);
	CHECK(unlock(1, "d") == 0, "X released");
	CHECK(lockers[4].lk.op.reqs[1]->state != HL_GRANTED,
	      "S granted after the node lost the cluster");
	run_grants(&g);
	CHECK(collect(4) == -ENOLINK && held(4, "") == HLOCK_NL,
	      "the S waiter failed, undone");
	CHECK(collect(0) == -ENOLINK && held(0, "c") == HLOCK_NL &&
	      held(0, "") == HLOCK_NL, "the waiter failed, undone");
	CHECK(lock(3, "e", HLOCK_S, 0) == -ENOLINK && held(3, "") == HLOCK_NL,
	      "nothing new");
	CHECK(lock(2, "c", HLOCK_X, 0) == -ENOLINK && held(2, "c") == HLOCK_S,
	      "no conversion");
	CHECK(unlock(2, "c") == 0, "releases work");
	node_lost = false;
	note_lost = 0;
	cluster_heads = false;
	reset();
}

/* Blockers are named and counted in bounded time. */
static void test_blockers(void)
{
	struct hl_blockers b = { .max = HLOCK_MAX_BLOCKERS };
	struct hl_req *req;
	int i;

	CHECK(lock(0, "b", HLOCK_X, 0) == 0, "X holder");
	for (i = 1; i <= 12; i++)
		CHECK(lock(i, "b", HLOCK_S, 0) == -EINPROGRESS, "S %d", i);
	CHECK(lock(13, "b", HLOCK_X, 0) == -EINPROGRESS, "X waiter");
	req = lockers[13].lk.op.reqs[1];
	head_blockers_locked(req, &b);
	CHECK(b.nr == 1 + HLOCK_MAX_BLOCKERS && b.named == HLOCK_MAX_BLOCKERS &&
	      b.reqs[0]->locker == &lockers[0].lk, "X: %u %u", b.nr, b.named);
	req = lockers[12].lk.op.reqs[1];
	head_blockers_locked(req, &b);
	CHECK(b.nr == 1 && b.named == 1, "S: %u %u", b.nr, b.named);
	reset();
}

/* One locker holding hundreds of resources: the index grows, all found. */
static void test_many_held(void)
{
	char path[32];
	int i;

	for (i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "m/%d", i);
		CHECK(lock(0, path, HLOCK_S, 0) == 0, "%s", path);
	}
	CHECK(lockers[0].lk.index_bits > HL_INDEX_INLINE_BITS, "grew to %u",
	      lockers[0].lk.index_bits);
	check_invariants();
	for (i = 0; i < 300; i += 2) {
		snprintf(path, sizeof(path), "m/%d", i);
		CHECK(held(0, path) == HLOCK_S && unlock(0, path) == 0, "%s",
		      path);
	}
	CHECK(lock(1, "m/1", HLOCK_X, 0) == -EINPROGRESS, "m/1 still held");
	CHECK(lock(2, "m/0", HLOCK_X, 0) == 0, "m/0 released");
	check_invariants();
	reset();
}

static unsigned int rnd(unsigned int n)
{
	return (unsigned int)random() % n;
}

/* Random operations with invariant checks; then everything drains. */
static unsigned long random_deadlocks, random_cycles, random_refused;

/*
 * Refuse @w's wait from outside, with its sequence numbers or stale ones:
 * only a waiting call with both current is refused, and fails.
 */
static void random_refuse(int w, unsigned int seed, unsigned int i)
{
	struct hl_locker *lk = &lockers[w].lk;
	unsigned int ws = lk->wait_seq, hs = lk->hold_seq;
	bool waits = lk->op.state == HL_OP_WAITING;
	int stale = rnd(4), ret;

	ret = refuse(w, ws + (stale == 0 ? 2 : 0), hs + (stale == 1));
	CHECK(ret == (waits && stale > 1 ? 0 : -ESTALE),
	      "seed %u step %u: refuse %d: %d", seed, i, w, ret);
	if (!ret) {
		CHECK(collect(w) == -EDEADLK && lk->op.state == HL_OP_IDLE,
		      "seed %u step %u: refused, but not failed", seed, i);
		random_refused++;
	}
}

static void test_random(unsigned int seed, unsigned int steps)
{
	static const char *const paths[] = {
		"", "a", "b", "a/x", "a/y", "b/x", "a/x/1",
	};
	unsigned int i, w;
	int progress, ret, c;

	srandom(seed);
	policy = seed & 1 ? HLOCK_POLICY_FIFO : HLOCK_POLICY_BATCH;
	for (i = 0; i < steps; i++) {
		const char *p = paths[rnd(7)];

		w = rnd(8);
		switch (rnd(9)) {
		case 8: {
			/*
			 * A try: what it cannot get at once it gives up.  It
			 * claims no lease (hl_wait_claim() checks); undoing its
			 * levels may grant others, whose waits further on do.
			 */
			if (lockers[w].used &&
			    lockers[w].lk.op.state != HL_OP_IDLE)
				break;
			ret = lock(w, p, modes[rnd(5)], HL_RF_TRY);
			/* Outside a cluster, a try queues nowhere. */
			CHECK(ret != -EINPROGRESS &&
			      !(lockers[w].lk.wait_seq & 1),
			      "seed %u step %u: a try waits", seed, i);
			break;
		}
		case 0: case 1: case 2:
			ret = lock(w, p, modes[rnd(5)], rnd(4) ? 0 :
				   (rnd(2) ? HLOCK_F_FRONT :
				    HLOCK_F_COMPAT_FIRST));
			/* No wait left in place closes a cycle. */
			CHECK(ret != -EINPROGRESS ||
			      !cycle_through(&lockers[w].lk),
			      "seed %u step %u: a cycle through %u", seed, i,
			      w);
			random_deadlocks += ret == -EDEADLK;
			break;
		case 3: case 4:
			unlock(w, p);
			break;
		case 5:
			collect(w);
			break;
		case 6:
			if (lockers[w].used &&
			    lockers[w].lk.op.state == HL_OP_WAITING && rnd(2))
				cancel(w);
			else
				downgrade(w, p, modes[rnd(5)]);
			break;
		default:
			if (!rnd(8))
				release_all(w);
			else if (!rnd(4) && lockers[w].used)
				random_refuse(w, seed, i);
			else if (!rnd(8))
				/* Taken up by each head at its next pass. */
				policy = policy == HLOCK_POLICY_FIFO ?
					 HLOCK_POLICY_BATCH : HLOCK_POLICY_FIFO;
			break;
		}
		check_invariants();
		for (c = 0; c < MAX_LOCKERS; c++)
			random_cycles += lockers[c].used &&
					 cycle_through(&lockers[c].lk);
	}
	/* Drain: holders without a request in flight let go. */
	do {
		progress = 0;
		for (w = 0; w < MAX_LOCKERS; w++) {
			if (!lockers[w].used)
				continue;
			if (collect(w) == 0)
				progress = 1;
			if (lockers[w].lk.op.state == HL_OP_IDLE &&
			    !hlist_empty(&lockers[w].lk.reqs)) {
				release_all(w);
				progress = 1;
			}
			check_invariants();
		}
		/* Waiters holding locks may deadlock: break one. */
		for (w = 0; !progress && w < MAX_LOCKERS; w++) {
			if (lockers[w].used &&
			    lockers[w].lk.op.state == HL_OP_WAITING) {
				release_all(w);
				progress = 1;
			}
		}
	} while (progress);
	reset();
}

int main(void)
{
	unsigned int seed;

	test_sup();
	test_matrix();
	test_fifo_x();
	grant_example(HLOCK_POLICY_BATCH);
	grant_example(HLOCK_POLICY_FIFO);
	test_front_and_compat_first();
	test_conversion();
	test_compat_first_conversion();
	test_limit();
	test_deadlock_cycle(2);
	test_deadlock_cycle(3);
	test_deadlock_cycle(10);
	test_deadlock_conversion();
	test_refuse();
	test_deadlock_ahead();
	test_deadlock_off();
	test_deadlock_long();
	test_deadlock_nomem();
	test_refill_lazy();
	test_deadlock_new_head(HLOCK_POLICY_BATCH, false, false);
	test_deadlock_new_head(HLOCK_POLICY_BATCH, false, true);
	test_deadlock_new_head(HLOCK_POLICY_FIFO, true, false);
	test_deadlock_new_head(HLOCK_POLICY_FIFO, false, false);
	test_deadlock_head_withdrawn();
	test_deadlock_all_ahead(false);
	test_deadlock_all_ahead(true);
	test_downgrade();
	test_hierarchy();
	test_tokens();
	test_release_tree();
	test_retire();
	test_try_claims_nothing();
	test_try_queues_nothing();
	test_cluster_try();
	test_many_held();
	test_partitions();
	test_fast_path();
	test_blockers();
	test_req_blocks();
	test_blocking();
	test_lvb_publish();
	test_cluster();
	test_node();
	test_node_fair();
	test_node_fair_is();
	test_node_first();
	test_node_first_front();
	test_node_sideways();
	test_node_probe();
	test_node_deadlock();
	for (seed = 1; seed <= 40; seed++) {
		test_node_random(seed, true);
		test_node_random(seed, false);
	}
	test_cluster_lost();
	for (seed = 1; seed <= 400; seed++)
		test_random(seed, 400);
	/* Every level asked for was granted or withdrawn; every wait ended. */
	CHECK(note_acquire == note_granted + note_withdrawn, "%lu != %lu + %lu",
	      note_acquire, note_granted, note_withdrawn);
	CHECK(note_wait == note_waited + note_withdrawn, "%lu != %lu + %lu",
	      note_wait, note_waited, note_withdrawn);
	CHECK(note_convert && note_release, "events seen");
	CHECK(wait_claims && wait_claims <= note_wait, "%lu claims, %lu waits",
	      wait_claims, note_wait);
	CHECK(random_deadlocks > 0, "the random test met deadlocks");
	CHECK(random_cycles == 0, "%lu cycles nobody refused", random_cycles);
	CHECK(random_refused > 0, "the random test refused waits from outside");
	CHECK(!locker_refs && !graph_locked, "searches let go");
	CHECK(!waitqs, "%ld queues not given back", waitqs);
	printf("core_test: %lu deadlocks refused, %lu cycles in place, %lu waits refused from outside\n",
	       random_deadlocks, random_cycles, random_refused);
	printf("core_test: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
