// SPDX-License-Identifier: GPL-2.0
/*
 * hlock core: grant policy, conversions and path operations.
 *
 * Context: see hlock_core.h for which lock each function needs; none of
 * them sleeps, allocates or takes a lock but through the hooks.
 */
#include "hlock_core.h"

#define B(m)	(1U << HLOCK_##m)
#define STRONG	(B(S) | B(SIX) | B(X))

/*
 * Gray's compatibility matrix as conflict masks: IS is compatible with
 * IS, IX, S and SIX; IX with IS and IX; S with IS and S; SIX with IS; X
 * with nothing.  NL conflicts with nothing.
 */
const unsigned int hl_conflict_mask[HLOCK_NR_MODES] = {
	[HLOCK_NL] = 0,
	[HLOCK_IS] = B(X),
	[HLOCK_IX] = B(S) | B(SIX) | B(X),
	[HLOCK_S] = B(IX) | B(SIX) | B(X),
	[HLOCK_SIX] = B(IX) | B(S) | B(SIX) | B(X),
	[HLOCK_X] = B(IS) | B(IX) | B(S) | B(SIX) | B(X),
};

/*
 * The modes each mode covers, in the lattice IS < IX < SIX < X and
 * IS < S < SIX (NL below everything).
 */
static const unsigned int covered_mask[HLOCK_NR_MODES] = {
	[HLOCK_NL] = B(NL),
	[HLOCK_IS] = B(NL) | B(IS),
	[HLOCK_IX] = B(NL) | B(IS) | B(IX),
	[HLOCK_S] = B(NL) | B(IS) | B(S),
	[HLOCK_SIX] = B(NL) | B(IS) | B(IX) | B(S) | B(SIX),
	[HLOCK_X] = B(NL) | B(IS) | B(IX) | B(S) | B(SIX) | B(X),
};

/* The one table of mode names: module, library and tools use it. */
const char *const hl_mode_names[HLOCK_NR_MODES] = {
	[HLOCK_NL] = "NL",
	[HLOCK_IS] = "IS",
	[HLOCK_IX] = "IX",
	[HLOCK_S] = "S",
	[HLOCK_SIX] = "SIX",
	[HLOCK_X] = "X",
};

/*
 * op_level()'s own answer to itself: the head op_level_new() found died,
 * or the locker was given queues (-ENOBUFS, hl_waitq_refill()): look the
 * level up again.  Never leaves op_level().
 */
#define HL_LOOK_AGAIN	2

/*
 * Index of the conversion queue of each (held, target) pair, plus one:
 * 0 marks a pair that is no conversion.
 */
static const unsigned char conv_slot[HLOCK_NR_MODES][HLOCK_NR_MODES] = {
	[HLOCK_IS] = { [HLOCK_IX] = 1, [HLOCK_S] = 2, [HLOCK_SIX] = 3,
		       [HLOCK_X] = 4 },
	[HLOCK_IX] = { [HLOCK_SIX] = 5, [HLOCK_X] = 6 },
	[HLOCK_S] = { [HLOCK_SIX] = 7, [HLOCK_X] = 8 },
	[HLOCK_SIX] = { [HLOCK_X] = 9 },
};

/**
 * hl_covers() - Whether holding @held implies holding @m.
 * @held: A mode.
 * @m: A mode.
 *
 * Return: true when @m is at or below @held in the lattice.
 */
bool hl_covers(unsigned int held, unsigned int m)
{
	return covered_mask[held] & hl_mode_bit(m);
}

/**
 * hl_sup() - The least mode covering both @a and @b.
 * @a: A mode.
 * @b: A mode.
 *
 * Return: the supremum in the lattice (S and IX give SIX).
 */
unsigned int hl_sup(unsigned int a, unsigned int b)
{
	unsigned int m;

	/*
	 * Mode numbers order the lattice linearly (IS < IX < S < SIX < X
	 * extends both chains), so the first mode covering both is the
	 * least upper bound: S and IX give SIX, IS and S give S.
	 */
	for (m = HLOCK_NL; m < HLOCK_X; m++)
		if (hl_covers(m, a) && hl_covers(m, b))
			break;
	return m;
}

/**
 * hl_mode_name() - The name of a mode.
 * @mode: A mode.
 *
 * Return: "NL" to "X", or "?" for a number that is no mode.
 */
const char *hl_mode_name(unsigned int mode)
{
	return mode < HLOCK_NR_MODES ? hl_mode_names[mode] : "?";
}

static void count_add(unsigned int *count, unsigned int *mask, unsigned int m,
		      unsigned int n)
{
	if (!n)
		return;
	count[m] += n;
	*mask |= hl_mode_bit(m);
}

static void count_sub(unsigned int *count, unsigned int *mask, unsigned int m,
		      unsigned int n)
{
	count[m] -= n;
	if (!count[m])
		*mask &= ~hl_mode_bit(m);
}

/* Partition list of an intent mode. */
static unsigned int part_slot(unsigned int m)
{
	return m - HLOCK_IS;
}

/**
 * hl_part_init() - Initialise an empty partition.
 * @p: The partition.
 */
void hl_part_init(struct hl_part *p)
{
	unsigned int i;

	for (i = 0; i < HL_NR_PART_MODES; i++) {
		INIT_HLIST_HEAD(&p->granted[i]);
		p->count[i] = 0;
	}
}

/**
 * hl_head_init() - Initialise an empty resource.
 * @h: The resource.
 * @parent: Its parent; NULL for the root.
 */
void hl_head_init(struct hl_head *h, struct hl_head *parent)
{
	unsigned int i;

	for (i = 0; i < HLOCK_NR_MODES; i++) {
		INIT_HLIST_HEAD(&h->granted[i]);
		h->granted_count[i] = 0;
	}
	h->wq = NULL;
	h->fast = HL_FAST_OPEN;
	h->granted_mask = 0;
	h->wait_mask = 0;
	h->conv_mask = 0;
	h->compat_first = 0;
	h->fifo = hl_grant_policy() == HLOCK_POLICY_FIFO;
	h->front_seq = 0;
	h->back_seq = 0;
	h->parent = parent;
	h->level = parent ? parent->level + 1 : 0;
	h->has_parts = false;
	h->partitioned = false;
	h->dead = false;
	h->cluster = false;
	h->node_mode = HLOCK_X;
	h->remote_mask = 0;
	h->remote_seq = 0;
	h->remote_front = 0;
	h->try_waiting = 0;
	h->try_gen = 0;
}

static void grant_add(struct hl_head *h, struct hl_req *req)
{
	req->state = HL_GRANTED;
	req->part = NULL;
	req->bast = 0;
	hlist_add_head(&req->gnode, &h->granted[req->mode]);
	count_add(h->granted_count, &h->granted_mask, req->mode, 1);
	if (req->flags & HL_RF_COMPAT_FIRST)
		h->compat_first++;
}

/*
 * Shut the fast path of @h (hl_head.fast): from now on every request on
 * @h is decided under its lock, in full view.  A fast holder becomes an
 * ordinary grant on the head, so that whoever comes to wait sees it,
 * names it, tells it that it blocks, and claims its lease.  Everything
 * that changes or counts what is on @h calls this first.  Context: head
 * lock.
 */
static inline void head_shut(struct hl_head *h)
{
	unsigned long old;

	hl_assert_head_locked(h);
	/* Only holders of the head lock move it away from HL_FAST_SHUT. */
	if (likely(READ_ONCE(h->fast) == HL_FAST_SHUT))
		return;
	old = xchg(&h->fast, HL_FAST_SHUT);
	if (old != HL_FAST_OPEN) {
		grant_add(h, (struct hl_req *)old);
		hl_note_fast_shut(h);
	}
}

/**
 * hl_head_settle() - Put a resource's fast holder, if any, on its lists.
 * @h: The resource.
 *
 * For the glue where it changes what a grant on @h must do when it goes
 * (a value block set, which the release publishes under the head lock):
 * until the head is idle again, its grants are made and released there.
 *
 * Context: head lock held.
 */
void hl_head_settle(struct hl_head *h)
{
	head_shut(h);
}

/*
 * Open the fast path of @h again if nothing is on it that a fast grant
 * would not see: nothing granted or waiting on the head, no partitions in
 * use, not a cluster head, not dead.  Called where the head may have
 * become idle: a release, a count, and a retirement that left it alive.
 * A release store: the next holder may take @h by fast_grant() alone,
 * with no head lock to order it after what the last holder wrote, which
 * the lock this caller holds (then drops) ordered before this store.
 * Context: head lock, the fast path shut.
 */
static inline void head_reopen(struct hl_head *h)
{
	hl_assert_head_locked(h);
	if (h->granted_mask || h->wait_mask || h->partitioned || h->cluster ||
	    h->dead)
		return;
	/* Pairs with the next fast_grant()'s exchange: no lock orders it. */
	smp_store_release(&h->fast, HL_FAST_OPEN);
}

/*
 * Grant the new request @req on @h by its fast path, if it is open: one
 * exchange, after which @req is @h's fast holder.  Its fields are all set
 * before the exchange publishes it (a full barrier): head_shut() may read
 * them at once.  Return: true when granted.
 */
static inline bool fast_grant(struct hl_head *h, struct hl_req *req)
{
	unsigned long open = HL_FAST_OPEN;

	/* A plain look first: a shut head costs no atomic operation. */
	if (READ_ONCE(h->fast) != HL_FAST_OPEN)
		return false;
	req->state = HL_GRANTED;
	req->bast = 0;
	return try_cmpxchg(&h->fast, &open, (unsigned long)req);
}

/*
 * Release @req if it is its head's fast holder: one exchange back to
 * open.  Its locker's hold_seq moves as for any release (hold_changed()).
 * Nothing is published: a holder that set a value block was settled on
 * the head first (hl_head_settle()).  Return: false when @req is on the
 * head (it never was a fast holder, or head_shut() made it an ordinary
 * grant): the caller releases it there, under the head lock.
 */
static inline bool fast_release(struct hl_req *req)
{
	unsigned long mine = (unsigned long)req;
	struct hl_locker *lk = req->locker;

	if (READ_ONCE(req->head->fast) != mine ||
	    !try_cmpxchg(&req->head->fast, &mine, HL_FAST_OPEN))
		return false;
	WRITE_ONCE(lk->hold_seq, lk->hold_seq + 1);
	return true;
}

/*
 * Leave partitioned mode: from now on every request is decided on the
 * head, whose counts take in the partitions' grants.  The flag goes first
 * and the partitions are visited one at a time: a fast path that read the
 * old flag under a partition's lock is done before this visits it, so its
 * grant is counted; any later one sees the new flag.  Context: head lock.
 */
static void depart(struct hl_head *h)
{
	struct hl_part *p = NULL;
	unsigned int i;

	hl_assert_head_locked(h);
	if (!h->partitioned)
		return;
	WRITE_ONCE(h->partitioned, false);
	while ((p = hl_part_next(h, p))) {
		hl_part_lock(h, p);
		for (i = 0; i < HL_NR_PART_MODES; i++)
			count_add(h->granted_count, &h->granted_mask,
				  HLOCK_IS + i, p->count[i]);
		hl_part_unlock(h, p);
	}
}

/*
 * Go (back) to partitioned mode if nothing strong is granted, queued or
 * converting: intents cannot conflict then.  An intent request that takes
 * the slow path does this (op_level_new(): it found the fast path taken,
 * or shut), and so does a retirement of a head left busy.  While not
 * partitioned, the partitions change only under the head lock, which the
 * caller holds, so their counts are stable here.  Context: head lock, the
 * fast path shut.
 */
static void repart(struct hl_head *h)
{
	struct hl_part *p = NULL;
	unsigned int i;

	hl_assert_head_locked(h);
	if (!h->has_parts || h->partitioned || h->dead ||
	    (h->granted_mask & STRONG) || h->wait_mask)
		return;
	while ((p = hl_part_next(h, p))) {
		hl_part_lock(h, p);
		for (i = 0; i < HL_NR_PART_MODES; i++)
			count_sub(h->granted_count, &h->granted_mask,
				  HLOCK_IS + i, p->count[i]);
		hl_part_unlock(h, p);
	}
	WRITE_ONCE(h->partitioned, true);
}

/**
 * hl_head_set_parts() - The glue gave @h partitions.
 * @h: The resource, which had none.
 *
 * They are used from the first intent that finds the fast path taken by
 * another request (op_level_new()): a resource only one locker uses at a
 * time is granted on its fast path.
 *
 * Context: head lock held; the partitions are initialised.
 */
void hl_head_set_parts(struct hl_head *h)
{
	hl_assert_head_locked(h);
	/* Pairs with part_grant(), which reads it unlocked. */
	smp_store_release(&h->has_parts, true);
}

/**
 * hl_head_retire() - Mark @h dead if nothing is on it or below it.
 * @h: The resource.
 *
 * A child is made only by a locker holding a request on @h, so once @h
 * is idle under its lock, with every partition's counts taken in, the
 * children count read after that is final: a count read before the lock
 * may be stale by a child made and left meanwhile.
 *
 * Context: head lock held.
 * Return: true when @h is now dead (nobody can find a request on it any
 * more), false when something is on it or it has children.
 */
bool hl_head_retire(struct hl_head *h)
{
	hl_assert_head_locked(h);
	/* A fast holder is a holder: on the head, it keeps @h alive. */
	head_shut(h);
	depart(h);
	if (hl_head_idle(h) && !hl_head_has_children(h)) {
		h->dead = true;
		return true;
	}
	/* Idle, with children: open for the next one, as after a release. */
	if (hl_head_idle(h))
		head_reopen(h);
	else
		repart(h);
	return false;
}

/* Change the flags of a granted or converting request on its head. */
static void req_set_flags(struct hl_head *h, struct hl_req *req,
			  unsigned int flags)
{
	if ((req->flags ^ flags) & HL_RF_COMPAT_FIRST) {
		if (flags & HL_RF_COMPAT_FIRST)
			h->compat_first++;
		else
			h->compat_first--;
	}
	req->flags = flags;
}

static struct hl_req *first_req(struct list_head *l)
{
	return list_empty(l) ? NULL : list_first_entry(l, struct hl_req, node);
}

/**
 * hl_queue_first() - The first waiter of a resource's queue.
 * @h: The resource.
 * @skip: Modes whose queues are not looked at.
 *
 * Context: head lock held.
 * Return: the first waiter, in queue order, among the modes not in @skip,
 * or NULL (also when nothing ever waited on @h).
 */
struct hl_req *hl_queue_first(struct hl_head *h, unsigned int skip)
{
	struct hl_req *best = NULL, *r;
	unsigned int m;

	hl_assert_head_locked(h);
	if (!h->wq)
		return NULL;
	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++) {
		if (skip & hl_mode_bit(m))
			continue;
		r = first_req(&h->wq->queue[m]);
		if (r && (!best || r->seq < best->seq))
			best = r;
	}
	return best;
}

/*
 * @req starts waiting on its head (as a new request or a conversion), or
 * stops (granted or withdrawn): its locker's wait_seq says so, for the
 * deadlock search.  A locker has one request waiting at most.  Context:
 * head lock held.
 */
static void wait_begin(struct hl_req *req)
{
	struct hl_locker *lk = req->locker;

	hl_assert_head_locked(req->head);
	if (unlikely(req->head->cluster) && (lk->op.flags & HL_RF_TRY) &&
	    !req->head->try_waiting++)
		req->head->try_gen++;
	lk->dl_recheck = false;
	WRITE_ONCE(lk->wait_head, req->head);
	WRITE_ONCE(lk->wait_req, req);
	WRITE_ONCE(lk->wait_seq, lk->wait_seq + 1);
	if (lk->graph)
		atomic_inc(&lk->graph->waiting);
}

static void wait_end(struct hl_req *req)
{
	struct hl_locker *lk = req->locker;

	if (unlikely(req->head->cluster) && (lk->op.flags & HL_RF_TRY))
		req->head->try_waiting--;
	WRITE_ONCE(lk->wait_seq, lk->wait_seq + 1);
	WRITE_ONCE(lk->wait_req, NULL);
	WRITE_ONCE(lk->wait_head, NULL);
	if (lk->graph)
		atomic_dec(&lk->graph->waiting);
}

/* Granted modes of the requests on @h other than @req. */
static unsigned int others_mask(const struct hl_head *h,
				const struct hl_req *req)
{
	unsigned int mask = h->granted_mask;

	if (h->granted_count[req->mode] == 1)
		mask &= ~hl_mode_bit(req->mode);
	return mask;
}

/* A conversion was granted: it is @req's mode now, with its flags. */
static void convert_done(struct hl_head *h, struct hl_req *req,
			 unsigned int target)
{
	count_sub(h->granted_count, &h->granted_mask, req->mode, 1);
	hlist_del(&req->gnode);
	hlist_add_head(&req->gnode, &h->granted[target]);
	count_add(h->granted_count, &h->granted_mask, target, 1);
	req->mode = target;
	req->bast = 0;
	req_set_flags(h, req, req->flags | req->convert_flags);
	req->convert_flags = 0;
}

/* Take a pending conversion off its queue; @req is granted in its mode. */
static void conv_remove(struct hl_head *h, struct hl_req *req)
{
	list_del(&req->conv_node);
	count_sub(h->wq->conv_count, &h->conv_mask, req->convert, 1);
	count_sub(h->wq->wait_count, &h->wait_mask, req->convert, 1);
	req->convert = HLOCK_NL;
	req->state = HL_GRANTED;
}

/*
 * Whether a new request of sequence number @seq (0: arriving now) waits
 * for other nodes' turn on @h (@h->remote_mask).  Not if it was waiting
 * here already when the first of them became known: this node asked the
 * DLM for it first, and the blocking AST that says another node waits
 * often comes with the grant (the DLM sends it as it grants this node's
 * request, with the other one queued behind).  Held back, such a request
 * would see every grant go to the other nodes unused.
 */
static bool after_remote(const struct hl_head *h, s64 seq)
{
	/* HLOCK_F_FRONT arrivals count down from 0, the others up. */
	if (seq < 0)
		return seq < h->remote_front;
	return !seq || seq > h->remote_seq;
}

/*
 * Whether what this node holds of @h in the DLM lets a new request for @m
 * (of sequence number @seq, 0 when arriving now) be granted: it covers
 * @m, and no other node waits for a mode that @m conflicts with, unless
 * the request was first.  Always, outside a cluster lock space; never
 * once this node lost the cluster (the others may hold what it holds by
 * now).
 */
static bool node_allows(const struct hl_head *h, unsigned int m, s64 seq)
{
	if (likely(!h->cluster))
		return true;
	return hl_covers(h->node_mode, m) &&
	       !(hl_conflicts(m, h->remote_mask) && after_remote(h, seq)) &&
	       !hl_node_lost(h);
}

/* The same for a conversion to @target: other nodes' waits do not count. */
static bool node_allows_convert(const struct hl_head *h, unsigned int target)
{
	if (likely(!h->cluster))
		return true;
	return hl_covers(h->node_mode, target) && !hl_node_lost(h);
}

/*
 * What a cluster head holds or waits for may have changed: lower what it
 * may grant if the node does not cache, and tell the host.
 */
static void node_changed(struct hl_head *h)
{
	if (unlikely(h->cluster)) {
		hl_node_release(h);
		hl_node_update(h);
	}
}

/*
 * The pending conversion to grant next: the earliest of those whose
 * target is compatible with the other holders.  All conversions of one
 * (held, target) pair stand or fall together (they see the same other
 * holders), so only the first of each pair needs a look.
 */
static struct hl_req *conv_next(struct hl_head *h)
{
	struct hl_req *best = NULL, *r;
	unsigned int i;

	if (!h->conv_mask)
		return NULL;
	for (i = 0; i < HL_NR_CONV; i++) {
		if (list_empty(&h->wq->convq[i]))
			continue;
		r = list_first_entry(&h->wq->convq[i], struct hl_req,
				     conv_node);
		if (hl_conflicts(r->convert, others_mask(h, r)) ||
		    !node_allows_convert(h, r->convert))
			continue;
		if (!best || r->seq < best->seq)
			best = r;
	}
	return best;
}

/*
 * A request that waits already on @req's head gained an edge to @req in
 * the wait-for graph (hlock_deadlock.c), which may close a cycle.  The
 * searches run when a wait starts, and @req's started before: it searches
 * again, from its locker's continuation (hl_op_continue()), which finds
 * every cycle through it.  A try never searches.  Context: head lock.
 */
static void dl_recheck(struct hl_req *req, struct hl_grants *g)
{
	struct hl_locker *lk = req->locker;

	hl_assert_head_locked(req->head);
	if (lk->op.flags & HL_RF_TRY)
		return;
	lk->dl_recheck = true;
	hl_grant_notify(lk, g);
}

/*
 * What the waiters of @h's queue wait for changed without a new wait: its
 * head was granted or withdrawn, and every waiter behind the new one waits
 * for it (hl_queue_first()); or, @ahead, hl_waits_all_ahead() became true,
 * and every waiter waits for the conflicting ones ahead.  Those that
 * gained an edge search again (dl_recheck()): the new head; for @ahead,
 * every waiter, as any may now be waited for.  That walk is O(waiters on
 * @h), as hl_node_lost_notify(), and comes only with a change of
 * grant_policy or the end of a compatible-first grant, both privileged.
 * Context: head lock.
 */
static void queue_changed(struct hl_head *h, struct hl_grants *g, bool ahead)
{
	struct hl_req *req;
	unsigned int m, queued = 0;

	hl_assert_head_locked(h);
	if (!hl_deadlock_detect())
		return;
	if (ahead) {
		for (m = HLOCK_IS; h->wq && m < HLOCK_NR_MODES; m++)
			list_for_each_entry(req, &h->wq->queue[m], node)
				dl_recheck(req, g);
		return;
	}
	/* A head alone in its queue is waited for by no new waiter. */
	if (!h->wq)
		return;
	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++)
		queued += h->wq->wait_count[m] - h->wq->conv_count[m];
	if (queued > 1)
		dl_recheck(hl_queue_first(h, 0), g);
}

/*
 * Take up the grant policy in force on @h, for this pass and the deadlock
 * searches until the next one: both read it from @h->fifo, so they agree
 * on what a waiter waits for.  Return: true when @h takes up fifo now,
 * which makes its waiters wait for the conflicting ones ahead.
 */
static bool take_policy(struct hl_head *h)
{
	bool fifo = hl_grant_policy() == HLOCK_POLICY_FIFO;

	hl_assert_head_locked(h);
	if (likely(h->fifo == fifo))
		return false;
	h->fifo = fifo;
	return fifo;
}

/*
 * Grant what a release, downgrade or cancel on @h made grantable:
 * pending conversions first, then the queue.  If the head of the queue
 * cannot be granted, nothing in the queue is: that is what keeps an X
 * waiter from starving behind a stream of readers.  A conversion still
 * pending waits ahead of the whole queue, so its target mode bars queued
 * requests too.  The work is one step per request granted plus one per
 * mode: each mode's queue is looked at from its front only.  A new head
 * of the queue, or a change of policy, may close a cycle of waits: see
 * queue_changed().
 */
static void grant_pass(struct hl_head *h, struct hl_grants *g)
{
	bool batch, first = true, ahead;
	unsigned int skip = 0;
	struct hl_req *req;

	/* Pending conversions count in wait_mask too. */
	if (!h->wait_mask)
		return;
	ahead = take_policy(h);
	batch = !h->fifo;
	while ((req = conv_next(h))) {
		unsigned int target = req->convert;

		conv_remove(h, req);
		convert_done(h, req, target);
		wait_end(req);
		hl_grant_notify(req->locker, g);
	}
	while ((req = hl_queue_first(h, skip))) {
		if (hl_conflicts(req->mode, h->granted_mask | h->conv_mask) ||
		    !node_allows(h, req->mode, req->seq)) {
			/* The head blocks everything behind it. */
			if (first)
				break;
			/*
			 * batch skips a conflicting waiter and grants what is
			 * compatible behind it; fifo stops, except while a
			 * compatible-first request is granted.  The granted
			 * modes only grow in a pass, so every later waiter of
			 * this mode conflicts too.
			 */
			if (!batch && !h->compat_first)
				break;
			skip |= hl_mode_bit(req->mode);
			continue;
		}
		first = false;
		list_del(&req->node);
		count_sub(h->wq->wait_count, &h->wait_mask, req->mode, 1);
		grant_add(h, req);
		wait_end(req);
		hl_grant_notify(req->locker, g);
		/* Nothing is compatible with X. */
		if (req->mode == HLOCK_X)
			break;
	}
	ahead = ahead && !h->compat_first;
	if (!first || ahead)
		queue_changed(h, g, ahead);
}

/*
 * Tell the lockers of the holders in @list, which hold a mode that
 * conflicts with @waiter's, that they block it, each grant once.  Every
 * list of granted requests keeps its marked (told) requests behind its
 * unmarked ones: a request is marked here only after every one before it,
 * and one that joins a list, or moves within the lists, goes to its front
 * unmarked (grant_add(), convert_done(), req_lower(), part_to_head(),
 * part_grant(), part_change()).  So the walk stops at the first marked
 * request and visits each grant at most once, plus one step per list:
 * however many holders there are, the walks of all waiters together cost
 * no more than the grants made, as a grant pass costs one step per
 * request it grants.  The waiter's own locker's request (the one it
 * converts: a locker has one request per resource) is marked but not
 * told; a granted conversion re-arms it.  Nothing here moves a request
 * within its list: the deadlock search resumes its walks of these lists
 * from a request it saw (hlock_deadlock.c), and one moved to the front
 * behind its back would be missed.
 */
static void notify_list(struct hlist_head *list, const struct hl_req *waiter)
{
	struct hl_req *o;

	hlist_for_each_entry(o, list, gnode) {
		if (o->bast)
			break;
		o->bast = 1;
		if (!waiter || o->locker != waiter->locker)
			hl_note_blocking(o);
	}
}

/*
 * @waiter starts waiting on @h for mode @m (its target, for a
 * conversion), or another node does (@waiter NULL): tell the holders of
 * the modes that conflict with it.  The
 * head is not partitioned (something waits); intents granted in the
 * partitions are still on their lists, which change only under the head
 * lock now: one visit per partition, as hl_head_granted() does.
 * Context: head lock.
 */
static void notify_holders(struct hl_head *h, const struct hl_req *waiter,
			   unsigned int m)
{
	struct hl_part *p = NULL;
	unsigned int c;

	hl_assert_head_locked(h);
	for (c = HLOCK_IS; c < HLOCK_NR_MODES; c++)
		if (hl_conflicts(m, hl_mode_bit(c)))
			notify_list(&h->granted[c], waiter);
	if (!h->has_parts || !hl_conflicts(m, B(IS) | B(IX)))
		return;
	while ((p = hl_part_next(h, p))) {
		hl_part_lock(h, p);
		for (c = HLOCK_IS; c <= HLOCK_IX; c++)
			if (hl_conflicts(m, hl_mode_bit(c)))
				notify_list(&p->granted[part_slot(c)], waiter);
		hl_part_unlock(h, p);
	}
}

/*
 * The queues of @h, which @req is about to wait in: the ones of its locker
 * (hl_locker's spare_wq) if @h has none yet.  Context: head lock, and the
 * locker lock of @req's locker, whose operation has a spare (op_level()).
 */
static struct hl_waitq *head_waitq(struct hl_head *h, struct hl_req *req)
{
	struct hl_locker *lk = req->locker;
	struct hl_waitq *wq = h->wq;
	unsigned int i;

	hl_assert_head_locked(h);
	if (likely(wq))
		return wq;
	hl_assert_locker_locked(lk);
	wq = lk->spare_wq;
	lk->spare_wq = NULL;
	for (i = 0; i < HLOCK_NR_MODES; i++) {
		INIT_LIST_HEAD(&wq->queue[i]);
		wq->wait_count[i] = 0;
		wq->conv_count[i] = 0;
	}
	for (i = 0; i < HL_NR_CONV; i++)
		INIT_LIST_HEAD(&wq->convq[i]);
	h->wq = wq;
	return wq;
}

/*
 * Whether a new request for mode @m on @h must wait: it conflicts with a
 * holder, or with a waiter (unless compatible-first holders let it go
 * first), or the node's DLM lock does not cover it.  Context: head lock.
 */
static inline bool head_must_wait(const struct hl_head *h, unsigned int m)
{
	hl_assert_head_locked(h);
	return likely(!hl_test_skip_conflict) &&
	       (hl_conflicts(m, h->granted_mask) ||
		(!h->compat_first && hl_conflicts(m, h->wait_mask)) ||
		!node_allows(h, m, 0));
}

/*
 * Whether @req, granted on @h, must wait to convert to @target: it
 * conflicts with the other holders, or the node's DLM lock does not cover
 * it.  Context: head lock.
 */
static bool head_convert_must_wait(const struct hl_head *h,
				   const struct hl_req *req,
				   unsigned int target)
{
	hl_assert_head_locked(h);
	return hl_conflicts(target, others_mask(h, req)) ||
	       !node_allows_convert(h, target);
}

/*
 * Whether a try-lock (HL_RF_TRY) gives up rather than queue its new
 * request for @m on @h, which must wait (head_must_wait()): it waits for
 * a holder or a waiter on this node, or for another node's wait.  A try
 * never waits for those, so it never queues for them: queued even for an
 * instant, it would tell the holders that they block a waiter, make an
 * expired lease in its way look claimed, and hold back the requests that
 * come meanwhile, all for a call that is about to fail.  Only a try that
 * waits for this node's DLM mode alone queues, for the glue to ask the
 * DLM (hl_node_try_ok()).  Context: head lock.
 */
static bool try_gives_up(const struct hl_head *h, unsigned int m)
{
	hl_assert_head_locked(h);
	return likely(!h->cluster) ||
	       hl_conflicts(m, h->granted_mask | h->wait_mask | h->remote_mask);
}

/* The same for a conversion of @req to @target: the other holders'. */
static bool try_convert_gives_up(const struct hl_head *h,
				 const struct hl_req *req, unsigned int target)
{
	hl_assert_head_locked(h);
	return hl_conflicts(target, others_mask(h, req));
}

/* Queue a new request for req->mode on @h, which must wait. */
static void head_queue(struct hl_head *h, struct hl_req *req)
{
	struct hl_waitq *wq = head_waitq(h, req);
	unsigned int m = req->mode;

	req->state = HL_WAITING;
	req->part = NULL;
	if (req->flags & HL_RF_FRONT) {
		req->seq = --h->front_seq;
		list_add(&req->node, &wq->queue[m]);
	} else {
		req->seq = ++h->back_seq;
		list_add_tail(&req->node, &wq->queue[m]);
	}
	count_add(h->wq->wait_count, &h->wait_mask, m, 1);
	wait_begin(req);
	node_changed(h);
}

/* Grant a new request on @h that need not wait (!head_must_wait()). */
static void head_grant(struct hl_head *h, struct hl_req *req,
		       struct hl_grants *g)
{
	bool had_compat_first = h->compat_first;

	grant_add(h, req);
	/*
	 * A compatible-first holder lets the waiters compatible with the
	 * holders go first: grant those now, or later arrivals would
	 * overtake them.
	 */
	if (!had_compat_first && h->compat_first && h->wait_mask)
		grant_pass(h, g);
}

/*
 * Convert the granted @req, which is on @h, to @target (which covers its
 * mode).  It is granted when compatible with the other holders, whatever
 * waits; else it waits ahead of the queue.  Return: true when granted at
 * once.
 */
static bool head_convert(struct hl_head *h, struct hl_req *req,
			 unsigned int target, struct hl_grants *g)
{
	if (!head_convert_must_wait(h, req, target)) {
		bool had_compat_first = h->compat_first;

		convert_done(h, req, target);
		/* As in head_grant(). */
		if (!had_compat_first && h->compat_first && h->wait_mask)
			grant_pass(h, g);
		return true;
	}
	req->state = HL_CONVERTING;
	req->convert = target;
	req->refused = false;
	req->seq = ++h->back_seq;
	list_add_tail(&req->conv_node,
		      &head_waitq(h, req)->convq[conv_slot[req->mode][target] - 1]);
	count_add(h->wq->conv_count, &h->conv_mask, target, 1);
	count_add(h->wq->wait_count, &h->wait_mask, target, 1);
	wait_begin(req);
	node_changed(h);
	return false;
}

/* Withdraw a waiting request or a pending conversion. */
static void head_cancel(struct hl_head *h, struct hl_req *req,
			struct hl_grants *g)
{
	bool head = false;

	wait_end(req);
	if (req->state == HL_WAITING) {
		head = hl_deadlock_detect() && hl_queue_first(h, 0) == req;
		list_del(&req->node);
		count_sub(h->wq->wait_count, &h->wait_mask, req->mode, 1);
	} else {
		conv_remove(h, req);
		req->convert_flags = 0;
	}
	grant_pass(h, g);
	/* The pass saw the new head, but not that the old one left. */
	if (head)
		queue_changed(h, g, false);
	node_changed(h);
}

/*
 * The granted @req is lowered or released: its locker's hold_seq says so,
 * for the deadlock search.  Only its locker does this.  Context: the lock
 * of @req's head or partition held, so that a search that looks at the
 * request under that lock either sees it as it was or sees the change.
 */
static void hold_changed(struct hl_req *req)
{
	struct hl_locker *lk = req->locker;

	if (req->part)
		hl_assert_part_locked(req->head, req->part);
	else
		hl_assert_head_locked(req->head);
	WRITE_ONCE(lk->hold_seq, lk->hold_seq + 1);
}

/*
 * Grant a new IS or IX on the caller's partition of @h, if @h is
 * partitioned.  Return: true when granted.
 */
static bool part_grant(struct hl_head *h, struct hl_req *req)
{
	struct hl_part *p;

	if (req->flags || (req->mode != HLOCK_IS && req->mode != HLOCK_IX))
		return false;
	/* Pairs with hl_head_set_parts(): the partitions are ready. */
	if (!smp_load_acquire(&h->has_parts))
		return false;
	p = hl_part_lock_local(h);
	if (!READ_ONCE(h->partitioned)) {
		hl_part_unlock(h, p);
		return false;
	}
	req->state = HL_GRANTED;
	req->part = p;
	req->bast = 0;
	hlist_add_head(&req->gnode, &p->granted[part_slot(req->mode)]);
	p->count[part_slot(req->mode)]++;
	hl_part_unlock(h, p);
	return true;
}

/*
 * Move a granted request from its partition to the head, which is not
 * partitioned (so its counts already hold it).  Context: head lock.
 */
static void part_to_head(struct hl_head *h, struct hl_req *req)
{
	struct hl_part *p = req->part;

	hl_assert_head_locked(h);
	hl_part_lock(h, p);
	hlist_del(&req->gnode);
	p->count[part_slot(req->mode)]--;
	hl_part_unlock(h, p);
	req->part = NULL;
	/* Only unmarked requests go in front (see notify_holders()). */
	req->bast = 0;
	hlist_add_head(&req->gnode, &h->granted[req->mode]);
}

/*
 * Change a request in partition @p from IX to IS or drop it (@m NL).
 * Return: true when done; false when @h is not partitioned, in which case
 * the caller retries under the head lock.
 */
static inline bool part_change(struct hl_head *h, struct hl_req *req,
			       unsigned int m, bool head_locked)
{
	struct hl_part *p = req->part;
	bool partitioned;

	hl_part_lock(h, p);
	partitioned = READ_ONCE(h->partitioned);
	if (!partitioned && !head_locked) {
		hl_part_unlock(h, p);
		return false;
	}
	hold_changed(req);
	hlist_del(&req->gnode);
	p->count[part_slot(req->mode)]--;
	if (m != HLOCK_NL) {
		req->bast = 0;
		hlist_add_head(&req->gnode, &p->granted[part_slot(m)]);
		p->count[part_slot(m)]++;
	}
	hl_part_unlock(h, p);
	if (!partitioned) {
		count_sub(h->granted_count, &h->granted_mask, req->mode, 1);
		count_add(h->granted_count, &h->granted_mask, m, m != HLOCK_NL);
	}
	req->mode = m ? m : req->mode;
	return true;
}

/*
 * Lower the granted @req to @m, which its mode covers, with @flags, or
 * take it off its head or partition (@m HLOCK_NL), and grant what that
 * allows.  Flags first: the grant pass obeys them.
 */
static void req_lower(struct hl_req *req, unsigned int m, unsigned int flags,
		      struct hl_grants *g)
{
	struct hl_head *h = req->head;
	unsigned int old = req->mode;
	bool cf;

	/* Partitioned: nothing waits, nobody to grant. */
	if (req->part && part_change(h, req, m, false))
		return;
	hl_head_lock(h);
	/* A fast holder going down (a downgrade) goes down on the head. */
	head_shut(h);
	cf = h->compat_first;
	if (req->part) {
		part_change(h, req, m, true);
	} else {
		/* The root's automatic flags go with its S, SIX or X. */
		if ((flags & HL_RF_AUTO) && (m == HLOCK_IS || m == HLOCK_IX))
			flags = 0;
		hold_changed(req);
		req_set_flags(h, req, m == HLOCK_NL ? 0 : flags);
		count_sub(h->granted_count, &h->granted_mask, req->mode, 1);
		hlist_del(&req->gnode);
		if (m != HLOCK_NL) {
			req->bast = 0;
			hlist_add_head(&req->gnode, &h->granted[m]);
			count_add(h->granted_count, &h->granted_mask, m, 1);
			req->mode = m;
		}
	}
	/* DLM's rule: a PW or EX holder that goes down writes the block. */
	if (old == HLOCK_SIX || old == HLOCK_X)
		hl_lvb_publish(req);
	grant_pass(h, g);
	/* The last compatible-first grant went: fifo waits for all ahead. */
	if (unlikely(cf) && hl_waits_all_ahead(h))
		queue_changed(h, g, true);
	node_changed(h);
	head_reopen(h);
	hl_head_unlock(h);
}

/*
 * The index bucket of resource @h: a multiplicative hash of its address
 * (the heads are the locker's own keys, so nobody can aim at a bucket).
 */
static struct hlist_head *index_bucket(struct hl_locker *lk,
				       const struct hl_head *h)
{
	u64 key = (u64)(uintptr_t)h * 0x61c8864680b583ebULL;

	return &lk->index[key >> (64 - lk->index_bits)];
}

/**
 * hl_locker_init() - Initialise an empty locker.
 * @lk: The locker.
 * @graph: The wait-for graph of its lock space (the deadlock search).
 */
void hl_locker_init(struct hl_locker *lk, struct hl_graph *graph)
{
	unsigned int b;

	INIT_HLIST_HEAD(&lk->reqs);
	INIT_LIST_HEAD(&lk->grant_node);
	lk->grant_pending = 0;
	lk->index = lk->index_inline;
	lk->index_bits = HL_INDEX_INLINE_BITS;
	lk->nr_reqs = 0;
	lk->max_reqs = UINT_MAX;
	lk->last = NULL;
	lk->nr_spare = 0;
	lk->spare_wq = NULL;
	for (b = 0; b < ARRAY_SIZE(lk->index_inline); b++)
		INIT_HLIST_HEAD(&lk->index_inline[b]);
	lk->graph = graph;
	lk->wait_head = NULL;
	lk->wait_req = NULL;
	lk->wait_seq = 0;
	lk->hold_seq = 0;
	lk->dl_mark = 0;
	lk->dl_recheck = false;
	lk->op.state = HL_OP_IDLE;
	lk->op.nr = 0;
	lk->op.pinned = 0;
	lk->op.queued = false;
}

/**
 * hl_locker_limit() - Set how many requests a locker may hold.
 * @lk: The locker.
 * @max: Most entries an operation may make @lk->reqs hold; a level that
 *	would need one more fails with -ENOLCK.
 *
 * Context: the locker lock held, before hl_op_start().
 */
void hl_locker_limit(struct hl_locker *lk, unsigned int max)
{
	hl_assert_locker_locked(lk);
	lk->max_reqs = max;
}

/**
 * hl_req_token_set() - Give a granted request the fencing token its host
 *	drew for it later (a cluster space's, from the DLM).
 * @lk: The request's locker.
 * @req: The request, granted.
 * @token: The token.
 *
 * Context: the locker lock held.
 */
void hl_req_token_set(struct hl_locker *lk, struct hl_req *req, u64 token)
{
	hl_assert_locker_locked(lk);
	req->token = token;
}

/* hl_locker_find(), inline on the lock path. */
static inline struct hl_req *locker_find(struct hl_locker *lk,
					 struct hl_head *h)
{
	struct hl_req *req;

	hlist_for_each_entry(req, index_bucket(lk, h), index_node)
		if (req->head == h)
			return req;
	return NULL;
}

/**
 * hl_locker_find() - The locker's granted or converting request on @h.
 * @lk: The locker.
 * @h: The resource (only compared, never dereferenced).
 *
 * Return: the request, or NULL.
 */
struct hl_req *hl_locker_find(struct hl_locker *lk, struct hl_head *h)
{
	return locker_find(lk, h);
}

/**
 * hl_locker_index_swap() - Move a locker's index to other buckets.
 * @lk: The locker.
 * @index: 1 << @bits buckets, not initialised.
 * @bits: Their number, as a power of two.
 *
 * Return: the buckets that are no longer used, for the caller to free,
 * or NULL when they were the locker's inline ones.
 */
struct hlist_head *hl_locker_index_swap(struct hl_locker *lk,
					struct hlist_head *index,
					unsigned int bits)
{
	struct hlist_head *old = lk->index;
	struct hl_req *req;
	unsigned int b;

	for (b = 0; b < 1U << bits; b++)
		INIT_HLIST_HEAD(&index[b]);
	lk->index = index;
	lk->index_bits = bits;
	hlist_for_each_entry(req, &lk->reqs, locker_node)
		hlist_add_head(&req->index_node, index_bucket(lk, req->head));
	return old == lk->index_inline ? NULL : old;
}

/**
 * hl_locker_add_spare() - Give the locker a free request.
 * @lk: The locker; hl_locker_spares_needed() is not 0.
 * @req: The request, allocated by the caller.
 */
void hl_locker_add_spare(struct hl_locker *lk, struct hl_req *req)
{
	/* What every spare has (spare_put()). */
	req->locker = lk;
	req->own = 0;
	req->child = 0;
	req->pin = 0;
	req->ix_below = 0;
	lk->spare[lk->nr_spare++] = req;
}

/**
 * hl_locker_add_waitq() - Give the locker spare queues.
 * @lk: The locker; hl_locker_waitq_needed() is true.
 * @wq: The queues, allocated by the caller; the core initialises them.
 */
void hl_locker_add_waitq(struct hl_locker *lk, struct hl_waitq *wq)
{
	hl_assert_locker_locked(lk);
	lk->spare_wq = wq;
}

/*
 * Keep a request that was released for the next path, or free it.  A
 * spare belongs to @lk and counts nothing (own, child, pin and ix_below
 * all 0): a request is released only once they are (req_put(); its
 * children went first, so ix_below is 0 too), or, at the locker's end,
 * with its counts dropped (hl_locker_release_some()); a new request that
 * never got them back goes unused.  So op_level_new() sets none of them.
 */
static void spare_put(struct hl_locker *lk, struct hl_req *req)
{
	if (lk->nr_spare < HL_MAX_LEVELS)
		lk->spare[lk->nr_spare++] = req;
	else
		hl_req_free(req);
}

/**
 * hl_locker_drop_spares() - Free the locker's spare requests and queues.
 * @lk: The locker, going away.
 */
void hl_locker_drop_spares(struct hl_locker *lk)
{
	while (lk->nr_spare)
		hl_req_free(lk->spare[--lk->nr_spare]);
	if (lk->spare_wq)
		hl_waitq_free(lk->spare_wq);
	lk->spare_wq = NULL;
}

/* Whether mode @m needs IX (not only IS) on the ancestors. */
static bool needs_ix(unsigned int m)
{
	return hl_intent(m) == HLOCK_IX;
}

/*
 * @req's mode went from @old to @new: tell its parent's count.  Only the
 * direct children count: a deeper request that needs IX has an IX (or
 * more) on every level between, so its parent there already says so.
 */
static inline void ix_update(struct hl_req *req, unsigned int old,
			     unsigned int new)
{
	if (req->up && needs_ix(old) != needs_ix(new))
		req->up->ix_below += needs_ix(new) ? 1 : -1;
}

/* A new request was granted: the locker holds it from now on. */
static inline void locker_add(struct hl_locker *lk, struct hl_req *req,
			      u64 now)
{
	req->since = now;
	hlist_add_head(&req->locker_node, &lk->reqs);
	hlist_add_head(&req->index_node, index_bucket(lk, req->head));
	lk->nr_reqs++;
	ix_update(req, HLOCK_NL, req->mode);
}

/*
 * Release a request that has no acquisition left.  The locker's list is
 * newest first, so descendants come before their ancestors and releasing
 * from its start is deepest first, as unlock does: no grant pass ever sees
 * a request whose ancestors' intents are already gone.  (An hlist: no
 * DEBUG_LIST check on every release.)
 */
static inline void req_release(struct hl_locker *lk, struct hl_req *req,
			       struct hl_grants *g)
{
	hl_note_release(req);
	if (lk->last == req)
		lk->last = NULL;
	ix_update(req, req->mode, HLOCK_NL);
	hlist_del(&req->locker_node);
	hlist_del(&req->index_node);
	lk->nr_reqs--;
	/*
	 * A fast holder, or an intent in a partition, goes without the head
	 * lock; anything else under it (req_lower()).
	 */
	if (req->part ? !part_change(req->head, req, HLOCK_NL, false) :
			!fast_release(req))
		req_lower(req, HLOCK_NL, 0, g);
	spare_put(lk, req);
}

/* Release @req if nothing keeps it any more. */
static void req_put(struct hl_locker *lk, struct hl_req *req,
		    struct hl_grants *g)
{
	if (!req->own && !req->child && !req->pin)
		req_release(lk, req, g);
}

/* Drop one acquisition made at (@own) or below (!@own) @req. */
static void req_drop(struct hl_locker *lk, struct hl_req *req, bool own,
		     struct hl_grants *g)
{
	if (own)
		req->own--;
	else
		req->child--;
	req_put(lk, req, g);
}

/* Flags the operation asks for at level @l (its mode: hl_op_mode()). */
static unsigned int op_flags(const struct hl_op *op, unsigned int l)
{
	unsigned int f = 0;

	if (l + 1 == op->nr) {
		f = op->flags & (HL_RF_FRONT | HL_RF_COMPAT_FIRST);
		/*
		 * Global S, SIX and X jump the queue, as in MongoDB, when
		 * the locker may.
		 */
		if (l == 0 && (op->flags & HL_RF_MAY_JUMP) &&
		    (op->mode == HLOCK_S || op->mode == HLOCK_SIX ||
		     op->mode == HLOCK_X))
			f |= HL_RF_FRONT | HL_RF_COMPAT_FIRST | HL_RF_AUTO;
	}
	return f;
}

/* Count the acquisition the operation made at level @l. */
static void op_count(struct hl_op *op, unsigned int l)
{
	if (l + 1 == op->nr)
		op->reqs[l]->own++;
	else
		op->reqs[l]->child++;
}

/* Level @l of the operation is granted: account it and move on. */
static inline void op_level_done(struct hl_locker *lk, bool waited)
{
	struct hl_op *op = &lk->op;
	unsigned int l = op->level;

	if (op->step[l] == HL_STEP_NEW)
		locker_add(lk, op->reqs[l], op->since);
	else if (op->step[l] == HL_STEP_CONVERT)
		ix_update(op->reqs[l], op->prev[l], op->reqs[l]->mode);
	if (waited)
		hl_note_granted(lk, l, hl_op_mode(op, l));
	op_count(op, l);
	op->queued = false;
	op->level++;
}

/*
 * A level of @lk's operation waits on @h in @mode.  Unless the caller
 * gives up rather than wait (a try), the wait claims what the glue lets a
 * waiter claim there: expired leases of other lockers that conflict with
 * @mode (hl_wait_claim()).  A try claims nothing: it never waited.
 * Context: head lock held.
 */
static void op_wait_claims(struct hl_locker *lk, struct hl_head *h,
			   unsigned int mode)
{
	hl_assert_head_locked(h);
	if (!(lk->op.flags & HL_RF_TRY))
		hl_wait_claim(lk, h, mode);
}

/* The new request taken for the operation's level goes back unused. */
static inline void op_req_unused(struct hl_locker *lk)
{
	lk->nr_spare++;
	lk->op.reqs[lk->op.level] = NULL;
}

/*
 * The level of a try gives up at once on @h (try_gives_up(),
 * try_convert_gives_up()): nothing queues, but the host hears of a wait
 * for @m withdrawn at once, as of any try that would have waited (its
 * statistics count a wait and name its blockers), with @req looking as it
 * would while it waited (hl_head_blockers()).  A new request goes back to
 * the spares; a conversion keeps its mode.  Out of line: off the path of
 * the levels granted at once.  Context: head lock held, which the caller
 * drops.
 */
static noinline void op_try_gives_up(struct hl_locker *lk, struct hl_head *h,
				     struct hl_req *req, unsigned int m)
{
	struct hl_op *op = &lk->op;
	unsigned int l = op->level;

	bool new = op->step[l] == HL_STEP_NEW;

	hl_assert_head_locked(h);
	if (new) {
		req->state = HL_WAITING;
		req->seq = req->flags & HL_RF_FRONT ? h->front_seq - 1 :
			   h->back_seq + 1;
	} else {
		hl_note_convert(req, m);
		req->state = HL_CONVERTING;
		req->convert = m;
	}
	hl_note_wait(lk, l, m, req);
	/* As hl_op_withdraw() does: the mode asked for, not the target. */
	hl_note_withdrawn(lk, l, hl_op_mode(op, l));
	if (new) {
		op_req_unused(lk);
	} else {
		req->state = HL_GRANTED;
		req->convert = HLOCK_NL;
	}
}

/*
 * The new request @req of the operation's level must wait on @h: queue
 * it, tell the holders in its way, and claim what a waiter may claim.  A
 * try's gives up instead (try_gives_up()), and none queues while neither
 * @h nor the locker has queues for it (op_level_new()'s -ENOBUFS).  Out
 * of line: off the path of the levels granted at once.  Return: 0 queued,
 * else -EAGAIN or -ENOBUFS with @req back among the spares.  Context:
 * head lock held, which the caller drops.
 */
static noinline int op_level_wait(struct hl_locker *lk, struct hl_head *h,
				  struct hl_req *req)
{
	struct hl_op *op = &lk->op;
	unsigned int l = op->level, m = req->mode;

	hl_assert_head_locked(h);
	if (unlikely(op->flags & HL_RF_TRY) && try_gives_up(h, m)) {
		op_try_gives_up(lk, h, req, m);
		return -EAGAIN;
	}
	if (unlikely(!h->wq && !lk->spare_wq)) {
		op_req_unused(lk);
		return -ENOBUFS;
	}
	head_queue(h, req);
	notify_holders(h, req, m);
	hl_note_wait(lk, l, m, req);
	op_wait_claims(lk, h, m);
	return 0;
}

/*
 * A new request for level @l on @h.  Return: 1 granted, 0 queued,
 * HL_LOOK_AGAIN when @h died under us (look it up again), -ENOBUFS when it
 * must wait, and neither @h nor the locker has queues for it: a wait
 * earlier in the operation took the locker's spare (op_level() gives it
 * another, and tries again).  Only a level that must wait asks for
 * queues, so that no allocation can fail a level that would not have
 * waited.  -EAGAIN when a try gives up (try_gives_up()), nothing queued.
 */
static int op_level_new(struct hl_locker *lk, struct hl_head *h,
			unsigned int m, struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	unsigned int l = op->level;
	struct hl_req *req;
	int ret;

	/*
	 * The levels above are granted and on lk->reqs: this one would be
	 * one more resource.
	 */
	if (unlikely(lk->nr_reqs >= lk->max_reqs))
		return -ENOLCK;
	/* A spare's locker and counts are set already (spare_put()). */
	req = lk->spare[--lk->nr_spare];
	req->head = h;
	req->up = l ? op->reqs[l - 1] : NULL;
	req->part = NULL;
	req->token = 0;
	req->mode = m;
	req->convert = HLOCK_NL;
	req->flags = op_flags(op, l);
	req->convert_flags = 0;
	req->refused = false;
	op->reqs[l] = req;
	op->step[l] = HL_STEP_NEW;
	/* Nothing else on @h, or only intents, each on its CPU's partition. */
	if (fast_grant(h, req) || part_grant(h, req))
		return 1;
	hl_head_lock(h);
	if (h->dead || (unlikely(h->cluster) && hl_node_lost(h))) {
		bool lost = !h->dead;

		hl_head_unlock(h);
		op_req_unused(lk);
		return lost ? -ENOLINK : HL_LOOK_AGAIN;
	}
	/* Whatever it meets, it meets on the head, the fast holder too. */
	head_shut(h);
	/*
	 * A strong mode must see the intents granted in the partitions.  An
	 * intent that finds the head unpartitioned partitions it again if it
	 * can: only now, so that strong locks on their own never pay for it,
	 * nor does a resource that one locker at a time uses (its fast path).
	 */
	if (m != HLOCK_IS && m != HLOCK_IX)
		depart(h);
	else
		repart(h);
	if (unlikely(head_must_wait(h, m))) {
		ret = op_level_wait(lk, h, req);
		hl_head_unlock(h);
		return ret;
	}
	head_grant(h, req, g);
	hl_head_unlock(h);
	return 1;
}

/*
 * Convert the locker's @req on @h for level @l.  Return: 1 or 0, or
 * -ENOBUFS or -EAGAIN as op_level_new().
 */
static int op_level_convert(struct hl_locker *lk, struct hl_head *h,
			    struct hl_req *req, unsigned int m,
			    struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	unsigned int l = op->level;
	unsigned int target = hl_sup(req->mode, m);
	bool granted;

	op->step[l] = HL_STEP_CONVERT;
	op->prev[l] = req->mode;
	op->prev_flags[l] = req->flags;
	hl_head_lock(h);
	/* Under the head lock: hl_node_lost_notify() sees what queues before. */
	if (unlikely(h->cluster) && hl_node_lost(h)) {
		hl_head_unlock(h);
		return -ENOLINK;
	}
	/* Conversions are decided on the head, in full view. */
	head_shut(h);
	depart(h);
	if (req->part)
		part_to_head(h, req);
	/* A try gives up before it needs queues, as in op_level_new(). */
	if (unlikely(op->flags & HL_RF_TRY) &&
	    try_convert_gives_up(h, req, target)) {
		op_try_gives_up(lk, h, req, target);
		hl_head_unlock(h);
		return -EAGAIN;
	}
	/* As in op_level_new(). */
	if (unlikely(!h->wq && !lk->spare_wq) &&
	    head_convert_must_wait(h, req, target)) {
		hl_head_unlock(h);
		return -ENOBUFS;
	}
	hl_note_convert(req, target);
	/* Queue position is moot: conversions go first. */
	req->convert_flags = op_flags(op, l) & ~HL_RF_FRONT;
	granted = head_convert(h, req, target, g);
	if (!granted) {
		notify_holders(h, req, target);
		hl_note_wait(lk, l, target, req);
		op_wait_claims(lk, h, target);
	}
	hl_head_unlock(h);
	return granted;
}

/*
 * Acquire level op->level.  @known levels of op->heads[] are known to be
 * the path's (hl_heads_known()); a lookup, which the host may remember,
 * sets it to 0.  Return: 1 when granted, 0 when it waits, -ENOMEM,
 * -EOVERFLOW, -ENOLCK, -ENOLINK or -EAGAIN (a try gave up) when it failed
 * with nothing done at this level.
 * Context: in an RCU read section, which it leaves while it creates the
 * level's resource or gives the locker queues, and enters again.
 */
static int op_level(struct hl_locker *lk, unsigned int *known,
		    struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	unsigned int l = op->level, m = hl_op_mode(op, l);
	struct hl_head *h;
	struct hl_req *req;
	int ret;

	do {
		h = op->heads[l];
		while (l >= *known || READ_ONCE(h->dead)) {
			*known = 0;
			h = hl_head_lookup(lk, l);
			if (h && !READ_ONCE(h->dead))
				break;
			hl_rcu_unlock();
			ret = hl_head_create(lk, l);
			hl_rcu_lock();
			if (ret)
				return ret;
		}
		op->heads[l] = h;
		/*
		 * A locker's request on a resource keeps one on its parent:
		 * below a level that was new to it, it holds nothing.
		 */
		req = l && op->step[l - 1] == HL_STEP_NEW ? NULL :
		      locker_find(lk, h);
		if (!req) {
			ret = op_level_new(lk, h, m, g);
		} else if (req->own + req->child >= HL_MAX_COUNT) {
			ret = -EOVERFLOW;
		} else {
			op->reqs[l] = req;
			req->pin++;
			op->pinned |= 1U << l;
			if (hl_covers(req->mode, m)) {
				op->step[l] = HL_STEP_RECURSE;
				ret = 1;
			} else {
				ret = op_level_convert(lk, h, req, m, g);
				if (unlikely(ret == -ENOBUFS)) {
					/* Pinned again when tried again. */
					req->pin--;
					op->pinned &= ~(1U << l);
				}
			}
		}
		if (unlikely(ret == -ENOBUFS)) {
			/*
			 * It must wait, and an earlier level's wait took the
			 * spare queues.  The section ends meanwhile, so the
			 * heads not held are looked up again.
			 */
			hl_rcu_unlock();
			ret = hl_waitq_refill(lk);
			hl_rcu_lock();
			*known = 0;
			if (ret)
				return ret;
			ret = HL_LOOK_AGAIN;
		}
	} while (ret == HL_LOOK_AGAIN);
	return ret;
}

/*
 * Every level is granted: give the levels the operation made or converted
 * one fencing token, drawn now.  A recursion on the last level is no new
 * grant, and then neither is any level above it (each holds an intent
 * that covers the last level's already).  One draw per operation: the
 * fast path pays for one shared counter, not one per level.
 */
static void op_stamp(struct hl_locker *lk)
{
	struct hl_op *op = &lk->op;
	unsigned int l;
	u64 token;

	if (op->step[op->nr - 1] == HL_STEP_RECURSE)
		return;
	token = hl_token_next(lk);
	for (l = 0; l < op->nr; l++)
		if (op->step[l] != HL_STEP_RECURSE)
			op->reqs[l]->token = token;
}

/*
 * Acquire the levels from op->level on, until one has to wait.
 * Return: 0 when every level is granted, -EINPROGRESS when one waits,
 * else -errno with op->level the level that failed.
 */
static int op_advance(struct hl_locker *lk, struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	unsigned int known, from = op->level;
	int ret = 1;

	/* One read section for the levels, not one each. */
	hl_rcu_lock();
	known = hl_heads_known(lk);
	while (ret > 0 && op->level < op->nr) {
		ret = op_level(lk, &known, g);
		if (ret > 0)
			op_level_done(lk, false);
	}
	/*
	 * A level refused before it was asked for is not counted; one that
	 * waits is, and so is a try's that gave up rather than wait.
	 */
	if (unlikely(ret == -EAGAIN))
		hl_note_acquired(lk, from, op->level, true);
	else if (op->level > from || !ret)
		hl_note_acquired(lk, from, op->level, !ret);
	hl_rcu_unlock();
	if (ret < 0)
		return ret;
	if (!ret) {
		op->queued = true;
		/* Only a request that must wait pays for the search. */
		if (!(op->flags & HL_RF_TRY) && hl_deadlock_check(lk, g))
			return -EDEADLK;
		return -EINPROGRESS;
	}
	op_stamp(lk);
	op->state = HL_OP_GRANTED;
	return 0;
}

/* Undo level @l, which the operation acquired, deepest first. */
static void op_undo_level(struct hl_locker *lk, unsigned int l,
			  struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	struct hl_req *req = op->reqs[l];

	if (op->step[l] == HL_STEP_CONVERT) {
		ix_update(req, req->mode, op->prev[l]);
		req_lower(req, op->prev[l], op->prev_flags[l], g);
	}
	if (op->step[l] == HL_STEP_NEW) {
		req_drop(lk, req, l + 1 == op->nr, g);
		op->reqs[l] = NULL;
	} else if (l + 1 == op->nr) {
		req->own--;
	} else {
		req->child--;
	}
}

/**
 * hl_op_withdraw() - Withdraw the operation's waiting level.
 * @lk: The locker, whose operation has a level queued (op.queued).
 * @g: Lockers that the withdrawal granted.
 *
 * Return: true when it was withdrawn (the level is as if never asked
 * for); false when a grant pass granted it first, in which case it stays
 * queued for the caller to account.
 */
bool hl_op_withdraw(struct hl_locker *lk, struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	struct hl_req *req = op->reqs[op->level];
	struct hl_head *h = op->heads[op->level];
	bool waits;

	hl_head_lock(h);
	waits = req->state != HL_GRANTED;
	if (waits) {
		hl_note_withdrawn(lk, op->level, hl_op_mode(op, op->level));
		head_cancel(h, req, g);
	}
	hl_head_unlock(h);
	if (waits) {
		op->queued = false;
		if (op->step[op->level] == HL_STEP_NEW) {
			spare_put(lk, req);
			op->reqs[op->level] = NULL;
		}
	}
	return waits;
}

/*
 * Withdraw the waiting level, if any, and undo every level acquired,
 * deepest first.  A waiting level that a grant pass granted before its
 * continuation ran is accounted as granted first, then undone.
 */
static void op_undo(struct hl_locker *lk, struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	unsigned int l;

	if (op->queued && !hl_op_withdraw(lk, g)) {
		op->now = hl_clock();
		op->since = hl_clock_coarse();
		op_level_done(lk, true);
	}
	for (l = op->level; l-- > 0;)
		op_undo_level(lk, l, g);
	op->level = 0;
}

/* The body of hl_op_claim(), inlined into hl_op_run() too. */
static __always_inline int op_claim(struct hl_locker *lk, unsigned int nr,
				    unsigned int mode, unsigned int flags)
{
	struct hl_op *op = &lk->op;

	if (op->state != HL_OP_IDLE)
		return -EBUSY;
	op->state = HL_OP_SETUP;
	op->nr = nr;
	op->mode = mode;
	op->intent = hl_intent(mode);
	op->flags = flags;
	op->level = 0;
	op->error = 0;
	op->queued = false;
	op->pinned = 0;
	return 0;
}

/**
 * hl_op_claim() - Claim the operation slot for a path lock.
 * @lk: The locker.
 * @nr: Levels of the path, root included (1 to HL_MAX_LEVELS).
 * @mode: Mode for the last level, HLOCK_IS to HLOCK_X.
 * @flags: HLOCK_F_FRONT and HLOCK_F_COMPAT_FIRST for the last level, and
 *	HL_RF_MAY_JUMP when the locker may jump queues.
 *
 * Return: 0, or -EBUSY when an operation is in flight or uncollected.
 */
int hl_op_claim(struct hl_locker *lk, unsigned int nr, unsigned int mode,
		unsigned int flags)
{
	return op_claim(lk, nr, mode, flags);
}

/* The body of hl_op_start(), inlined into hl_op_run() too. */
static __always_inline int op_start(struct hl_locker *lk,
				    struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	int ret;

	/* Only a grant time, shown at tick resolution, is taken from it. */
	op->since = hl_clock_coarse();
	op->state = HL_OP_WAITING;
	ret = op_advance(lk, g);
	if (ret && ret != -EINPROGRESS) {
		op_undo(lk, g);
		op->state = HL_OP_SETUP;
	}
	return ret;
}

/**
 * hl_op_start() - Start locking the claimed path.
 * @lk: The locker, slot in HL_OP_SETUP, hl_locker_spares_needed() 0.
 * @g: Lockers that undoing a failed start granted.
 *
 * Return: 0 when every level was granted (slot in HL_OP_GRANTED),
 * -EINPROGRESS when a level waits (HL_OP_WAITING; hl_op_done() is called
 * once all levels are granted), or -ENOMEM, -EOVERFLOW, -ENOLCK (one
 * more resource than lk->max_reqs), -ENOLINK (its node lost the cluster)
 * or -EAGAIN (a try, HL_RF_TRY, that would wait for something but its
 * node's DLM mode: nothing queued, see try_gives_up()) with the locker as
 * before (slot back in HL_OP_SETUP).
 */
int hl_op_start(struct hl_locker *lk, struct hl_grants *g)
{
	return op_start(lk, g);
}

/**
 * hl_op_continue() - Move the operation on past a level granted to it.
 * @lk: The locker.
 * @g: Lockers that this continuation's own grant passes granted.
 *
 * Idempotent: it does nothing unless the waiting level was granted, or
 * must be searched again for deadlocks (dl_recheck()).  If a later level
 * fails (no memory for a resource; -EAGAIN for a try that waited for its
 * node's DLM mode, and would wait further down for anything else), the
 * waiting level is on a cluster head whose node lost the cluster
 * (-ENOLINK), or the search finds that a cycle of waits now goes through
 * the waiting level (-EDEADLK), everything is undone and the slot is
 * HL_OP_FAILED with the error.
 *
 * Context: the locker lock, no other hlock lock held; may sleep.
 *
 * Return: 0 when the operation is granted, -EINPROGRESS while it waits,
 * the error of a failed one, -ENOENT when the slot holds no operation.
 */
int hl_op_continue(struct hl_locker *lk, struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	bool granted, lost, refused, recheck;
	unsigned int wanted;
	struct hl_head *h;
	struct hl_req *req;
	int ret;

	hl_assert_locker_locked(lk);
	switch (op->state) {
	case HL_OP_GRANTED:
		return 0;
	case HL_OP_FAILED:
		return op->error;
	case HL_OP_WAITING:
		break;
	default:
		return -ENOENT;
	}
	h = op->heads[op->level];
	req = op->reqs[op->level];
	hl_head_lock(h);
	granted = req->state == HL_GRANTED;
	lost = !granted && unlikely(h->cluster) && hl_node_lost(h);
	refused = !granted && req->refused;
	req->refused = false;
	wanted = req->state == HL_CONVERTING ? req->convert : req->mode;
	recheck = !granted && lk->dl_recheck;
	lk->dl_recheck = false;
	hl_head_unlock(h);
	if (refused)
		hl_note_deadlock(lk, op->level, wanted);
	if (lost || refused || (recheck && hl_deadlock_check(lk, g))) {
		/*
		 * Its node lost the cluster: it will never be granted.  Or
		 * the DLM refused its node the conversion as a deadlock with
		 * another node's (hl_node_refuse()).  Or an edge to its wait
		 * closed a cycle (dl_recheck()): it was withdrawn.
		 */
		op_undo(lk, g);
		op->error = lost ? -ENOLINK : -EDEADLK;
		op->state = HL_OP_FAILED;
		hl_op_done(lk);
		return op->error;
	}
	if (!granted)
		return -EINPROGRESS;
	op->now = hl_clock();
	op->since = hl_clock_coarse();
	op_level_done(lk, true);
	ret = op_advance(lk, g);
	if (ret == -EINPROGRESS)
		return ret;
	if (ret) {
		op_undo(lk, g);
		op->error = ret;
		op->state = HL_OP_FAILED;
	}
	hl_op_done(lk);
	return ret;
}

/**
 * hl_op_refuse() - Refuse a waiting operation that a search made outside
 *	the module found on a cycle of waits (across the nodes of a
 *	cluster: HLOCK_IOC_REFUSE).
 * @lk: The locker.
 * @wait_seq: @lk's wait_seq when the cycle was found: a later wait is not
 *	on it.
 * @hold_seq: @lk's hold_seq then: once it lowered or released a lock, the
 *	others may no longer wait for it.
 * @g: Lockers that the withdrawal and the undoing granted; @lk too, for
 *	its continuation to end the call (hl_op_continue() finds it failed).
 *
 * As the deadlock search refuses a wait: the waiting level is withdrawn,
 * unless a grant came first, and every level acquired is undone; the
 * operation fails with -EDEADLK, all before this returns.  A try-lock's
 * wait is never refused: it gives up by itself.
 *
 * Context: @lk's locker lock; takes the head lock of the wait.
 * Return: 0, or -ESTALE when @lk is no longer in that wait (granted,
 * withdrawn, another one), lowered or released a lock since, or waits as
 * a try-lock; nothing changed then.
 */
int hl_op_refuse(struct hl_locker *lk, unsigned int wait_seq,
		 unsigned int hold_seq, struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	unsigned int wanted;
	struct hl_head *h;

	hl_assert_locker_locked(lk);
	if (op->state != HL_OP_WAITING || !op->queued ||
	    op->flags & HL_RF_TRY || !(wait_seq & 1) ||
	    lk->hold_seq != hold_seq || READ_ONCE(lk->wait_seq) != wait_seq)
		return -ESTALE;
	/*
	 * wait_seq changes under the head lock of the wait, and a new wait
	 * begins only under the locker lock: equal here, the level is in
	 * that wait or was granted meanwhile, which the withdrawal sees.
	 */
	wanted = op->level + 1 == op->nr ? op->mode : op->intent;
	h = op->heads[op->level];
	if (!hl_op_withdraw(lk, g))
		return -ESTALE;
	hl_note_deadlock(lk, op->level, wanted);
	/* Collected as a grant is: under the head lock of the wait. */
	hl_head_lock(h);
	hl_grant_notify(lk, g);
	hl_head_unlock(h);
	op_undo(lk, g);
	op->error = -EDEADLK;
	op->state = HL_OP_FAILED;
	hl_op_done(lk);
	return 0;
}

/**
 * hl_op_cancel() - Undo the operation in flight, level by level.
 * @lk: The locker, slot in HL_OP_WAITING, HL_OP_GRANTED or HL_OP_FAILED.
 * @g: Lockers that the undoing granted.
 *
 * Withdraws the waiting level and undoes every level acquired, deepest
 * first: new requests are released, recursions dropped and conversions
 * turned back into the mode held before.  The locker is left exactly as
 * before hl_op_start(); the slot stays claimed for hl_op_finish().
 */
void hl_op_cancel(struct hl_locker *lk, struct hl_grants *g)
{
	struct hl_op *op = &lk->op;

	if (op->state != HL_OP_FAILED)
		op_undo(lk, g);
	op->state = HL_OP_SETUP;
}

/* The body of hl_op_finish(), inlined into hl_op_run() too. */
static __always_inline void op_finish(struct hl_locker *lk,
				     struct hl_grants *g)
{
	struct hl_op *op = &lk->op;
	unsigned int l = op->nr;

	if (op->state == HL_OP_GRANTED)
		lk->last = op->reqs[op->nr - 1];
	/* Most operations found nothing the locker held: nothing pinned. */
	while (op->pinned && l-- > 0) {
		if (op->pinned & (1U << l)) {
			op->pinned &= ~(1U << l);
			op->reqs[l]->pin--;
			req_put(lk, op->reqs[l], g);
		}
	}
	op->nr = 0;
	op->state = HL_OP_IDLE;
}

/**
 * hl_op_finish() - Empty the slot after a grant was collected or undone.
 * @lk: The locker.
 * @g: Lockers granted when an unpinned request went away.
 *
 * Unpins the requests the operation found on its way, deepest first; a
 * granted one's target becomes the locker's @last.
 */
void hl_op_finish(struct hl_locker *lk, struct hl_grants *g)
{
	op_finish(lk, g);
}

/**
 * hl_op_run() - A path lock in one pass: claim the slot, start the
 *	operation, and empty the slot again when it was granted at once.
 * @lk: The locker; hl_locker_spares_needed() would be 0 for a path of
 *	@nr levels (lk->nr_spare >= @nr).
 * @nr: As hl_op_claim().
 * @mode: As hl_op_claim().
 * @flags: As hl_op_claim().
 * @g: As hl_op_start().
 *
 * Return: 0 when every level was granted: the slot is empty again and
 * lk->last is the request on the last level.  Else as hl_op_claim(), with
 * nothing claimed, or as hl_op_start(), the slot holding the operation.
 */
int hl_op_run(struct hl_locker *lk, unsigned int nr, unsigned int mode,
	      unsigned int flags, struct hl_grants *g)
{
	int ret;

	hl_assert_locker_locked(lk);
	ret = op_claim(lk, nr, mode, flags);
	if (ret)
		return ret;
	ret = op_start(lk, g);
	if (likely(!ret))
		op_finish(lk, g);
	return ret;
}

/**
 * hl_unlock() - Release one acquisition made on @h and its intents.
 * @lk: The locker; no operation of it may be in flight on @h's path.
 * @h: The resource (only compared unless the locker holds it).
 * @g: Lockers the release granted.
 *
 * Return: the acquisitions made on @h that remain, or -ENOENT when the
 * locker made none there.
 */
int hl_unlock(struct hl_locker *lk, struct hl_head *h, struct hl_grants *g)
{
	struct hl_req *req = lk->last, *up;
	bool own = true;
	int left;

	/* Most unlocks are of the last lock taken. */
	if (!req || req->head != h)
		req = locker_find(lk, h);
	if (!req || !req->own)
		return -ENOENT;
	left = req->own - 1;
	/* Deepest first; each request's parent outlives it. */
	for (; req; req = up, own = false) {
		up = req->up;
		req_drop(lk, req, own, g);
	}
	return left;
}

/* Whether @req is @top or lies below it (on the same locker). */
static bool req_within(const struct hl_req *req, const struct hl_req *top)
{
	for (; req; req = req->up)
		if (req == top)
			return true;
	return false;
}

/* Drop every acquisition made on @req itself, and the intents above. */
static void req_drop_own(struct hl_req *req)
{
	unsigned int n = req->own;
	struct hl_req *up;

	req->own = 0;
	for (up = req->up; up; up = up->up)
		up->child -= n;
}

/**
 * hl_release_tree() - Release every acquisition made on a request or below
 *	it, with the intents they hold above it, whatever their counts.
 * @lk: The locker; no operation of it runs through @top (@top->pin is 0).
 * @top: Its request.
 * @g: Lockers the releases granted.
 *
 * Requests below @top come before it on the locker's list (each was made
 * while its parent was held), so the walk stops at @top: first every
 * count is dropped, then what nothing keeps is released deepest first,
 * @top and its ancestors last.  The work is one step per request newer
 * than @top, whatever the acquisition counts.
 */
void hl_release_tree(struct hl_locker *lk, struct hl_req *top,
		     struct hl_grants *g)
{
	struct hl_req *req, *up;
	struct hlist_node *tmp;

	hlist_for_each_entry(req, &lk->reqs, locker_node) {
		if (req == top)
			break;
		if (req->own && req_within(req, top))
			req_drop_own(req);
	}
	req_drop_own(top);
	hlist_for_each_entry_safe(req, tmp, &lk->reqs, locker_node) {
		if (req == top)
			break;
		if (req_within(req, top))
			req_put(lk, req, g);
	}
	for (req = top; req; req = up) {
		up = req->up;
		req_put(lk, req, g);
	}
}

/**
 * hl_downgrade() - Lower the mode held on @h and grant what that allows.
 * @lk: The locker; no operation of it may be in flight on @h's path.
 * @h: The resource (only compared unless the locker holds it).
 * @mode: The new mode, HLOCK_IS to HLOCK_X.
 * @g: Lockers the downgrade granted.
 *
 * Return: 0; -ENOENT when nothing is held on @h; -EINVAL when @mode is not
 * covered by the mode held or does not cover the intent the locker's
 * requests below @h need.
 */
int hl_downgrade(struct hl_locker *lk, struct hl_head *h, unsigned int mode,
		 struct hl_grants *g)
{
	struct hl_req *req = hl_locker_find(lk, h);
	unsigned int need, old;

	if (!req)
		return -ENOENT;
	need = req->ix_below ? HLOCK_IX : req->child ? HLOCK_IS : HLOCK_NL;
	if (!hl_covers(req->mode, mode) || !hl_covers(mode, need))
		return -EINVAL;
	old = req->mode;
	if (mode != old) {
		ix_update(req, old, mode);
		req_lower(req, mode, req->flags, g);
	}
	return 0;
}

/**
 * hl_held() - The mode the locker holds on @h.
 * @lk: The locker.
 * @h: The resource (only compared unless the locker holds it).
 *
 * Return: the granted mode (the old one while a conversion waits), or
 * HLOCK_NL.
 */
unsigned int hl_held(struct hl_locker *lk, struct hl_head *h)
{
	struct hl_req *req = hl_locker_find(lk, h);

	return req ? READ_ONCE(req->mode) : HLOCK_NL;
}

/* The least mode covering every mode whose bit is set in @mask. */
static unsigned int mask_sup(unsigned int mask)
{
	unsigned int m, sup = HLOCK_NL;

	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++)
		if (mask & hl_mode_bit(m))
			sup = hl_sup(sup, m);
	return sup;
}

/**
 * hl_node_keep() - The least mode this node must hold of a cluster head.
 * @h: The head.
 *
 * What its holders hold, and the targets of their pending conversions
 * (a conversion is never made to wait for other nodes: its holder already
 * blocks them).  Context: head lock.
 *
 * Return: a mode, HLOCK_NL when nothing is held.
 */
unsigned int hl_node_keep(const struct hl_head *h)
{
	hl_assert_head_locked(h);
	return mask_sup(h->granted_mask | h->conv_mask);
}

/**
 * hl_node_need() - The least mode this node should hold of a cluster head.
 * @h: The head.
 *
 * hl_node_keep(), and the modes of the new requests that wait, unless
 * other nodes wait (@h->remote_mask): their turn comes first, and asking
 * for more now would only queue behind them in the DLM.  Context: head
 * lock.
 *
 * Return: a mode, HLOCK_NL when nothing is held or wanted.
 */
unsigned int hl_node_need(const struct hl_head *h)
{
	hl_assert_head_locked(h);
	if (h->remote_mask)
		return hl_node_keep(h);
	return mask_sup(h->granted_mask | h->wait_mask);
}

/**
 * hl_node_hold() - The least mode covering what a cluster head's holders
 *	hold, their pending conversions aside.
 * @h: The head.
 *
 * What this node cannot give up in the DLM.  Context: head lock.
 *
 * Return: a mode, HLOCK_NL when nothing is held.
 */
unsigned int hl_node_hold(const struct hl_head *h)
{
	hl_assert_head_locked(h);
	return mask_sup(h->granted_mask);
}

/**
 * hl_node_tries_only() - Whether every request that waits on a cluster head
 *	is a try-lock's.
 * @h: The head.
 *
 * Context: head lock.
 * Return: true when at least one waits, and nothing else does.
 */
bool hl_node_tries_only(const struct hl_head *h)
{
	unsigned int m, waiting = 0;

	hl_assert_head_locked(h);
	if (!h->try_waiting)
		return false;
	for (m = 0; m < HLOCK_NR_MODES; m++)
		waiting += h->wq->wait_count[m];
	return waiting == h->try_waiting;
}

/**
 * hl_node_only() - Whether a request waits for this node's DLM mode alone.
 * @h: A cluster head.
 * @req: A request waiting or converting on it.
 *
 * Nothing on this node stands in its way, nor another node's wait (@h's
 * remote_mask) for a new request: only @h's node_mode does not cover it.
 * Context: head lock.
 *
 * Return: true when it does.
 */
bool hl_node_only(const struct hl_head *h, const struct hl_req *req)
{
	unsigned int m, others;

	hl_assert_head_locked(h);
	if (req->state == HL_CONVERTING) {
		m = req->convert;
		others = others_mask(h, req);
	} else {
		m = req->mode;
		others = h->wait_mask;
		/* Its own wait aside: not another node's, nor a holder. */
		if (h->wq->wait_count[m] == 1)
			others &= ~hl_mode_bit(m);
		others |= h->granted_mask;
		if (after_remote(h, req->seq))
			others |= h->remote_mask;
	}
	return !hl_conflicts(m, others) && !hl_covers(h->node_mode, m);
}

/**
 * hl_node_remote() - Other nodes now wait on a cluster head.
 * @h: The head.
 * @mask: The modes they wait for (bits), from blocking ASTs.
 *
 * New requests that conflict with them wait from now on (@h->remote_mask),
 * this node's holders of a conflicting mode are told that they block a
 * waiter, and a new wait claims the expired leases in its way, as a local
 * waiter does.  Context: head lock.
 */
void hl_node_remote(struct hl_head *h, unsigned int mask)
{
	unsigned int m, new = mask & ~h->remote_mask;

	hl_assert_head_locked(h);
	if (!h->remote_mask) {
		h->remote_seq = h->back_seq;
		h->remote_front = h->front_seq;
	}
	h->remote_mask |= mask;
	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++) {
		if (!(mask & hl_mode_bit(m)))
			continue;
		notify_holders(h, NULL, m);
		/* A wait claims what a local one would (op_wait_claims()). */
		if (new & hl_mode_bit(m))
			hl_wait_claim(NULL, h, m);
	}
}

/**
 * hl_node_changed() - What this node holds of a cluster head, or what other
 *	nodes wait for, changed: grant what that allows.
 * @h: The head, its @node_mode and @remote_mask updated by the caller.
 * @g: Where the lockers granted are collected.
 *
 * Context: head lock.
 */
void hl_node_changed(struct hl_head *h, struct hl_grants *g)
{
	hl_assert_head_locked(h);
	grant_pass(h, g);
	node_changed(h);
}

/* Whether @req's lock call is a try-lock, which withdraws itself. */
static bool req_of_try(const struct hl_req *req)
{
	return req->locker->op.flags & HL_RF_TRY;
}

/**
 * hl_node_lost_notify() - This node lost the cluster of a cluster head
 *	(hl_node_lost() says so from now on): tell everyone on it.
 * @h: The head.
 * @g: Where the lockers of the requests that wait or convert here are
 *	collected, for their continuation to fail them (hl_op_continue());
 *	not try-locks, which wait for the DLM's answer and give up
 *	themselves.
 *
 * The holders are told too (hl_note_lost()).  A request that queues
 * later finds hl_node_lost() true under the head lock and fails at once.
 * O(requests on @h), as a grant pass.
 *
 * Context: head lock.
 */
void hl_node_lost_notify(struct hl_head *h, struct hl_grants *g)
{
	struct hl_req *req;
	unsigned int m, i;

	hl_assert_head_locked(h);
	for (m = 0; m < HLOCK_NR_MODES; m++) {
		hlist_for_each_entry(req, &h->granted[m], gnode)
			hl_note_lost(req);
		if (!h->wq)
			continue;
		list_for_each_entry(req, &h->wq->queue[m], node)
			if (!req_of_try(req))
				hl_grant_notify(req->locker, g);
	}
	for (i = 0; h->wq && i < HL_NR_CONV; i++)
		list_for_each_entry(req, &h->wq->convq[i], conv_node)
			if (!req_of_try(req))
				hl_grant_notify(req->locker, g);
}

/**
 * hl_node_refuse() - The DLM refused this node a conversion as a deadlock,
 *	and the holders of a cluster head hold all the node holds: their
 *	conversions that need more fail.
 * @h: The head.
 * @g: Where the lockers of those conversions are collected, for their
 *	continuation to fail them with -EDEADLK (hl_op_continue()); not
 *	try-locks, which give up by themselves, as they never wait.
 *
 * The DLM found the conversion this node asked for on their behalf and
 * another node's waiting for each other's granted modes: each of them
 * holds a mode that the other node's converter waits for, and waits in
 * turn.  O(pending conversions on @h), as a grant pass.
 *
 * Context: head lock.
 */
void hl_node_refuse(struct hl_head *h, struct hl_grants *g)
{
	struct hl_req *req;
	unsigned int i;

	hl_assert_head_locked(h);
	for (i = 0; h->wq && i < HL_NR_CONV; i++) {
		list_for_each_entry(req, &h->wq->convq[i], conv_node) {
			if (hl_covers(h->node_mode, req->convert) ||
			    req_of_try(req) || req->refused)
				continue;
			req->refused = true;
			hl_grant_notify(req->locker, g);
		}
	}
}

/**
 * hl_head_granted() - The granted requests of a resource, per mode.
 * @h: The resource.
 * @counts: Set to the number of granted requests per mode, those in its
 *	partitions included; a request converting counts in the mode it
 *	holds.
 *
 * A fast holder is counted on the head, where it stays until released
 * (head_shut()); an idle head's fast path stays open.  O(number of CPUs)
 * while @h is partitioned: never user-sized.
 *
 * Context: takes the head lock, then each partition's lock.
 */
void hl_head_granted(struct hl_head *h, unsigned int counts[HLOCK_NR_MODES])
{
	struct hl_part *p = NULL;
	unsigned int m;

	hl_head_lock(h);
	/* A fast holder is counted once it is on the head. */
	head_shut(h);
	for (m = 0; m < HLOCK_NR_MODES; m++)
		counts[m] = h->granted_count[m];
	while (h->partitioned && (p = hl_part_next(h, p))) {
		hl_part_lock(h, p);
		counts[HLOCK_IS] += p->count[part_slot(HLOCK_IS)];
		counts[HLOCK_IX] += p->count[part_slot(HLOCK_IX)];
		hl_part_unlock(h, p);
	}
	/* Nothing was there: open as it was. */
	head_reopen(h);
	hl_head_unlock(h);
}

/**
 * hl_req_blocks() - Whether a granted request stands in a waiter's way.
 * @req: A granted request of a locker with no operation in flight (so no
 *	conversion of it is pending).
 *
 * O(1): a look at its head's masks.  A partitioned head has nothing
 * waiting, so the head's own masks are the whole truth.
 *
 * Context: the locker lock held; takes the head lock.
 * Return: true when a request waits on @req's resource, or a conversion is
 * pending there, or another node waits there (hl_head_waited()), for a
 * mode that conflicts with the mode @req holds.
 */
bool hl_req_blocks(struct hl_req *req)
{
	struct hl_head *h = req->head;
	bool blocks;

	hl_assert_locker_locked(req->locker);
	hl_head_lock(h);
	blocks = hl_req_blocking(h, req);
	hl_head_unlock(h);
	return blocks;
}

/**
 * hl_head_waited_but() - The modes others wait for on a resource.
 * @h: The resource.
 * @req: A request of a locker on @h, or NULL.
 *
 * hl_head_waited(), but for @req's own conversion when nothing else on
 * this node waits for its target: a locker's wait is no claim on its own
 * grants.  Other nodes' waits (@h->remote_mask) all count.  O(1).
 *
 * Context: head lock held.
 * Return: the modes, as bits.
 */
unsigned int hl_head_waited_but(const struct hl_head *h,
				const struct hl_req *req)
{
	unsigned int local = h->wait_mask;

	hl_assert_head_locked(h);
	if (req && req->state == HL_CONVERTING &&
	    h->wq->wait_count[req->convert] == 1)
		local &= ~hl_mode_bit(req->convert);
	return local | h->remote_mask;
}

/**
 * hl_req_blocking() - Whether a grant blocks a waiter now.
 * @h: Its resource.
 * @req: A granted or converting request on @h.
 *
 * As hl_req_blocks(), but for any granted request: a conversion of @req
 * itself does not count, those of other requests do.  O(1).
 *
 * Context: head lock held.
 * Return: true when a request of another waits on @h, or converts there,
 * for a mode that conflicts with the mode @req holds.
 */
bool hl_req_blocking(const struct hl_head *h, const struct hl_req *req)
{
	if (req->state == HL_WAITING)
		return false;
	return hl_conflicts(req->mode, hl_head_waited_but(h, req));
}

/**
 * hl_blocking() - Whether the locker's grant on @h blocks a waiter now.
 * @lk: The locker.
 * @h: The resource (only compared unless the locker holds it).
 *
 * Context: the locker lock held; takes the head lock.
 * Return: 1 or 0 as hl_req_blocking(), -ENOENT when the locker holds
 * nothing on @h.
 */
int hl_blocking(struct hl_locker *lk, struct hl_head *h)
{
	struct hl_req *req = hl_locker_find(lk, h);
	bool blocking;

	hl_assert_locker_locked(lk);
	if (!req)
		return -ENOENT;
	hl_head_lock(h);
	blocking = hl_req_blocking(h, req);
	hl_head_unlock(h);
	return blocking;
}

/**
 * hl_locker_release_some() - Release a locker's requests, deepest first.
 * @lk: The locker, with no operation in flight (hl_op_finish() done).
 * @g: Lockers the releases granted.
 * @budget: How many to release at most in this call.
 *
 * Return: true when the locker holds nothing any more.
 */
bool hl_locker_release_some(struct hl_locker *lk, struct hl_grants *g,
			    unsigned int budget)
{
	struct hl_req *req;

	while (budget-- && !hlist_empty(&lk->reqs)) {
		req = hlist_entry(lk->reqs.first, struct hl_req, locker_node);
		/* As a spare has them (spare_put()): nothing held any more. */
		req->own = 0;
		req->child = 0;
		req_release(lk, req, g);
	}
	return hlist_empty(&lk->reqs);
}

/* Name @o as a blocker, if there is room. */
static bool blocker_add(struct hl_blockers *b, const struct hl_req *o)
{
	if (b->named >= b->max)
		return false;
	b->reqs[b->named++] = o;
	return true;
}

/* Name the holders of mode @c in the partitions of @h. */
static void blockers_in_parts(struct hl_head *h, unsigned int c,
			      struct hl_blockers *b)
{
	struct hl_part *p = NULL;
	const struct hl_req *o;

	while (b->named < b->max && (p = hl_part_next(h, p))) {
		hl_part_lock(h, p);
		hlist_for_each_entry(o, &p->granted[part_slot(c)], gnode)
			if (!blocker_add(b, o))
				break;
		hl_part_unlock(h, p);
	}
}

/**
 * hl_head_blockers() - Who blocks @req on @h.
 * @h: The resource, not partitioned (something waits on it).
 * @req: A waiting or converting request on @h, or a try's that gives up
 *	rather than wait, made to look like one (op_try_gives_up()).
 * @b: Filled in; @b->max says how many to name (at most
 *	HLOCK_MAX_BLOCKERS).
 *
 * Holders of modes that conflict with what @req asks for come first,
 * counted in full; then the conflicting waiters ahead of it in the queue,
 * of which only the first @b->max are looked at.  The work is bounded by
 * @b->max and the number of partitions, whatever the queue holds.
 *
 * Context: head lock held.
 */
void hl_head_blockers(struct hl_head *h, const struct hl_req *req,
		      struct hl_blockers *b)
{
	unsigned int m = req->state == HL_CONVERTING ? req->convert : req->mode;
	unsigned int c, looked = 0;
	const struct hl_req *o;

	hl_assert_head_locked(h);
	b->nr = 0;
	b->named = 0;
	for (c = HLOCK_IS; c < HLOCK_NR_MODES; c++) {
		if (!hl_conflicts(m, hl_mode_bit(c)))
			continue;
		b->nr += h->granted_count[c];
		if (req->state != HL_WAITING && c == req->mode)
			b->nr--;
		hlist_for_each_entry(o, &h->granted[c], gnode)
			if (o != req && !blocker_add(b, o))
				break;
		if (h->has_parts && (c == HLOCK_IS || c == HLOCK_IX))
			blockers_in_parts(h, c, b);
	}
	if (req->state != HL_WAITING)
		return;
	/* Only modes that wait: a try that gave up may find no queues. */
	for (c = HLOCK_IS; c < HLOCK_NR_MODES; c++) {
		if (!hl_conflicts(m, h->wait_mask & hl_mode_bit(c)))
			continue;
		list_for_each_entry(o, &h->wq->queue[c], node) {
			if (o->seq >= req->seq || looked++ >= b->max)
				break;
			b->nr++;
			blocker_add(b, o);
		}
	}
}

/**
 * hl_waits_all_ahead() - Whether a new request waiting on @h waits for
 *	every conflicting waiter ahead of it.
 * @h: The resource.
 *
 * Under the fifo policy, with no compatible-first request granted, a grant
 * pass stops at the first waiter it cannot grant: everything behind waits
 * for it.  Otherwise a pass that granted something skips a conflicting
 * waiter and goes on, so a waiter further back may overtake it; only the
 * first of the queue, which every pass must grant before any other, is
 * waited for by all.  The policy is the one @h took up at its last grant
 * pass (take_policy()) while it is still in force: a change to batch
 * shows at the next pass, before anything more is granted, and a change
 * to fifo only there.
 *
 * Context: head lock held.
 * Return: true in the first case.
 */
bool hl_waits_all_ahead(const struct hl_head *h)
{
	hl_assert_head_locked(h);
	return h->fifo && !h->compat_first &&
	       hl_grant_policy() == HLOCK_POLICY_FIFO;
}
