// SPDX-License-Identifier: GPL-2.0
/*
 * hlock core: grant policy, conversions and path operations.
 *
 * Context: every function here runs under the caller's lock and neither
 * sleeps nor allocates; see hlock_core.h.
 */
#include "hlock_core.h"

#define B(m)	(1U << HLOCK_##m)

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

#undef B

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

static void count_add(unsigned int *count, unsigned int *mask, unsigned int m)
{
	if (count[m]++ == 0)
		*mask |= hl_mode_bit(m);
}

static void count_sub(unsigned int *count, unsigned int *mask, unsigned int m)
{
	if (--count[m] == 0)
		*mask &= ~hl_mode_bit(m);
}

/**
 * hl_head_init() - Initialise an empty resource.
 * @h: The resource.
 * @parent: Its parent, whose reference the caller passes to @h; NULL for
 *	the root.
 *
 * The new head holds one reference, the caller's.
 */
void hl_head_init(struct hl_head *h, struct hl_head *parent)
{
	unsigned int m;

	INIT_LIST_HEAD(&h->granted);
	INIT_LIST_HEAD(&h->queue);
	for (m = 0; m < HLOCK_NR_MODES; m++) {
		h->granted_count[m] = 0;
		h->wait_count[m] = 0;
	}
	h->granted_mask = 0;
	h->wait_mask = 0;
	h->compat_first = 0;
	h->converting = 0;
	h->refs = 1;
	h->parent = parent;
	h->level = parent ? parent->level + 1 : 0;
}

/**
 * hl_head_get() - Take a reference on a resource.
 * @h: The resource.
 */
void hl_head_get(struct hl_head *h)
{
	h->refs++;
}

/**
 * hl_head_put() - Drop a reference on a resource.
 * @h: The resource; hl_head_unused() is called when this was the last.
 */
void hl_head_put(struct hl_head *h)
{
	if (--h->refs == 0)
		hl_head_unused(h);
}

/* Change the flags of a granted or converting request. */
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

/* A conversion was granted: it is @req's mode now, with its flags. */
static void convert_done(struct hl_head *h, struct hl_req *req,
			 unsigned int target)
{
	count_sub(h->granted_count, &h->granted_mask, req->mode);
	count_add(h->granted_count, &h->granted_mask, target);
	req->mode = target;
	req_set_flags(h, req, req->flags | req->convert_flags);
	req->convert_flags = 0;
}

static void grant_add(struct hl_head *h, struct hl_req *req)
{
	req->state = HL_GRANTED;
	list_add_tail(&req->node, &h->granted);
	count_add(h->granted_count, &h->granted_mask, req->mode);
	if (req->flags & HL_RF_COMPAT_FIRST)
		h->compat_first++;
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

static void notify_granted(struct hl_req *req);

/*
 * Grant what a release, downgrade or cancel on @h made grantable:
 * pending conversions first, in grant order, then the queue.  If the
 * head of the queue cannot be granted, nothing in the queue is: that is
 * what keeps an X waiter from starving behind a stream of readers.  A
 * conversion still pending after the first pass waits ahead of the whole
 * queue, so its target mode bars queued requests too.
 */
static void grant_pass(struct hl_head *h)
{
	struct hl_req *req, *next;
	unsigned int barrier = 0;
	bool skip, first = true;

	if (h->converting) {
		list_for_each_entry(req, &h->granted, node) {
			if (req->state != HL_CONVERTING)
				continue;
			if (hl_conflicts(req->convert, others_mask(h, req))) {
				barrier |= hl_mode_bit(req->convert);
				continue;
			}
			count_sub(h->wait_count, &h->wait_mask, req->convert);
			convert_done(h, req, req->convert);
			req->convert = HLOCK_NL;
			req->state = HL_GRANTED;
			h->converting--;
			notify_granted(req);
		}
	}

	skip = hl_grant_policy() == HLOCK_POLICY_BATCH;
	list_for_each_entry_safe(req, next, &h->queue, node) {
		if (hl_conflicts(req->mode, h->granted_mask | barrier)) {
			/* The head blocks everything behind it. */
			if (first)
				break;
			/*
			 * batch skips a conflicting waiter and grants what is
			 * compatible behind it; fifo stops, except while a
			 * compatible-first request is granted.
			 */
			if (skip || h->compat_first)
				continue;
			break;
		}
		first = false;
		list_del(&req->node);
		count_sub(h->wait_count, &h->wait_mask, req->mode);
		grant_add(h, req);
		notify_granted(req);
		/* Nothing is compatible with X. */
		if (req->mode == HLOCK_X)
			break;
	}
}

/*
 * Queue or grant a new request for req->mode on @h.  Return: true when
 * granted at once.
 */
static bool head_request(struct hl_head *h, struct hl_req *req)
{
	unsigned int m = req->mode;

	if (hl_conflicts(m, h->granted_mask) ||
	    (!h->compat_first && hl_conflicts(m, h->wait_mask))) {
		req->state = HL_WAITING;
		if (req->flags & HL_RF_FRONT)
			list_add(&req->node, &h->queue);
		else
			list_add_tail(&req->node, &h->queue);
		count_add(h->wait_count, &h->wait_mask, m);
		return false;
	}
	grant_add(h, req);
	return true;
}

/*
 * Convert the granted @req to @target (which covers its mode).  It is
 * granted when compatible with the other holders, whatever waits; else
 * it waits ahead of the queue.  Return: true when granted at once.
 */
static bool head_convert(struct hl_head *h, struct hl_req *req,
			 unsigned int target)
{
	if (!hl_conflicts(target, others_mask(h, req))) {
		bool had_compat_first = h->compat_first;

		convert_done(h, req, target);
		/*
		 * A compatible-first holder lets waiters that are compatible
		 * with the holders go first: grant those that wait now, or
		 * later arrivals would overtake them.
		 */
		if (!had_compat_first && h->compat_first)
			grant_pass(h);
		return true;
	}
	req->state = HL_CONVERTING;
	req->convert = target;
	h->converting++;
	count_add(h->wait_count, &h->wait_mask, target);
	return false;
}

/* Withdraw a waiting request or a pending conversion. */
static void head_cancel(struct hl_head *h, struct hl_req *req)
{
	if (req->state == HL_WAITING) {
		list_del(&req->node);
		count_sub(h->wait_count, &h->wait_mask, req->mode);
	} else {
		count_sub(h->wait_count, &h->wait_mask, req->convert);
		req->convert = HLOCK_NL;
		req->convert_flags = 0;
		req->state = HL_GRANTED;
		h->converting--;
	}
	grant_pass(h);
}

/* Release a granted request. */
static void head_release(struct hl_head *h, struct hl_req *req)
{
	list_del(&req->node);
	count_sub(h->granted_count, &h->granted_mask, req->mode);
	if (req->flags & HL_RF_COMPAT_FIRST)
		h->compat_first--;
	grant_pass(h);
}

/* Lower a granted request to @m, which its mode covers. */
static void head_downgrade(struct hl_head *h, struct hl_req *req,
			   unsigned int m)
{
	count_sub(h->granted_count, &h->granted_mask, req->mode);
	count_add(h->granted_count, &h->granted_mask, m);
	req->mode = m;
	/* The root's automatic flags go with its S, SIX or X. */
	if ((req->flags & HL_RF_AUTO) && (m == HLOCK_IS || m == HLOCK_IX))
		req_set_flags(h, req, 0);
	grant_pass(h);
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
 */
void hl_locker_init(struct hl_locker *lk)
{
	unsigned int b;

	INIT_LIST_HEAD(&lk->reqs);
	lk->index = lk->index_inline;
	lk->index_bits = HL_INDEX_INLINE_BITS;
	lk->nr_reqs = 0;
	for (b = 0; b < ARRAY_SIZE(lk->index_inline); b++)
		INIT_HLIST_HEAD(&lk->index_inline[b]);
	lk->op.state = HL_OP_IDLE;
	lk->op.nr = 0;
	lk->op.nr_spare = 0;
	lk->op.pinned = false;
}

/**
 * hl_locker_find() - The locker's granted or converting request on @h.
 * @lk: The locker.
 * @h: The resource.
 *
 * Return: the request, or NULL.
 */
struct hl_req *hl_locker_find(struct hl_locker *lk, struct hl_head *h)
{
	struct hl_req *req;

	hlist_for_each_entry(req, index_bucket(lk, h), index_node)
		if (req->head == h)
			return req;
	return NULL;
}

/* Add a request that was granted to the locker's list and index. */
static void locker_add(struct hl_locker *lk, struct hl_req *req)
{
	list_add_tail(&req->locker_node, &lk->reqs);
	hlist_add_head(&req->index_node, index_bucket(lk, req->head));
	lk->nr_reqs++;
}

/**
 * hl_locker_index_wanted() - The index size a locker should grow to.
 * @lk: The locker.
 *
 * Return: 0 while its index is big enough for every request it holds and
 * a whole path more (two per bucket on average), else the bits of a
 * bigger index, for hl_locker_index_swap().
 */
unsigned int hl_locker_index_wanted(const struct hl_locker *lk)
{
	unsigned int bits = lk->index_bits;

	while ((lk->nr_reqs + HL_MAX_LEVELS) >> (bits + 1) &&
	       bits < HL_INDEX_MAX_BITS)
		bits++;
	return bits > lk->index_bits ? bits : 0;
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
	list_for_each_entry(req, &lk->reqs, locker_node)
		hlist_add_head(&req->index_node, index_bucket(lk, req->head));
	return old == lk->index_inline ? NULL : old;
}

/**
 * hl_op_reqs_needed() - How many new requests the prepared operation needs.
 * @lk: The locker; op.heads and op.nr are set.
 *
 * Also notes in op.reqs the request the locker holds at each level, for
 * hl_op_start() in the same hold of the caller's lock.
 *
 * Return: the number of levels the locker holds nothing on, less the
 * spares already supplied (0 when there are enough).
 */
unsigned int hl_op_reqs_needed(struct hl_locker *lk)
{
	struct hl_op *op = &lk->op;
	unsigned int l, n = 0;

	for (l = 0; l < op->nr; l++) {
		op->reqs[l] = hl_locker_find(lk, op->heads[l]);
		if (!op->reqs[l])
			n++;
	}
	return n > op->nr_spare ? n - op->nr_spare : 0;
}

/* Mode and flags the operation asks for at level @l. */
static unsigned int op_mode(const struct hl_op *op, unsigned int l)
{
	return l + 1 == op->nr ? op->mode : hl_intent(op->mode);
}

static unsigned int op_flags(const struct hl_op *op, unsigned int l)
{
	unsigned int f = 0;

	if (l + 1 == op->nr) {
		f = op->flags & (HL_RF_FRONT | HL_RF_COMPAT_FIRST);
		/* Global S, SIX and X jump the queue, as in MongoDB. */
		if (l == 0 && (op->mode == HLOCK_S || op->mode == HLOCK_SIX ||
			       op->mode == HLOCK_X))
			f |= HL_RF_FRONT | HL_RF_COMPAT_FIRST | HL_RF_AUTO;
	}
	return f;
}

/* Count one acquisition the operation made at level @l. */
static void op_count(struct hl_op *op, unsigned int l)
{
	if (l + 1 == op->nr)
		op->reqs[l]->own++;
	else
		op->reqs[l]->child++;
}

/* Release a request that has no acquisition left. */
static void req_release(struct hl_req *req)
{
	struct hl_head *h = req->head;

	hl_note_release(req);
	list_del(&req->locker_node);
	hlist_del(&req->index_node);
	req->locker->nr_reqs--;
	head_release(h, req);
	hl_req_free(req);
	hl_head_put(h);
}

/* Release @req if nothing keeps it any more. */
static void req_put(struct hl_req *req)
{
	if (!req->own && !req->child && !req->pin)
		req_release(req);
}

/* Drop one acquisition made at (own) or below (!own) @req. */
static void req_drop(struct hl_req *req, bool own)
{
	if (own)
		req->own--;
	else
		req->child--;
	req_put(req);
}

/*
 * Acquire the levels from op->level on, until one has to wait.
 * Return: true when every level is granted.
 */
static bool op_advance(struct hl_locker *lk)
{
	struct hl_op *op = &lk->op;

	for (; op->level < op->nr; op->level++) {
		unsigned int l = op->level, m = op_mode(op, l);
		struct hl_head *h = op->heads[l];
		struct hl_req *req = op->reqs[l];

		hl_note_acquire(lk, l, m);
		if (!req) {
			req = op->spare[--op->nr_spare];
			req->head = h;
			req->locker = lk;
			req->mode = m;
			req->convert = HLOCK_NL;
			req->flags = op_flags(op, l);
			req->convert_flags = 0;
			req->own = 0;
			req->child = 0;
			req->pin = 0;
			op->reqs[l] = req;
			op->step[l] = HL_STEP_NEW;
			hl_head_get(h);
			if (!head_request(h, req))
				goto wait;
			req->since = op->now;
			locker_add(lk, req);
		} else if (hl_covers(req->mode, m)) {
			op->step[l] = HL_STEP_RECURSE;
		} else {
			unsigned int target = hl_sup(req->mode, m);

			op->step[l] = HL_STEP_CONVERT;
			op->prev[l] = req->mode;
			op->prev_flags[l] = req->flags;
			/* Queue position is moot: conversions go first. */
			req->convert_flags = op_flags(op, l) & ~HL_RF_FRONT;
			hl_note_convert(req, target);
			if (!head_convert(h, req, target))
				goto wait;
		}
		hl_note_granted(lk, l, m, false);
		op_count(op, l);
	}
	op->state = HL_OP_GRANTED;
	return true;
wait:
	hl_note_wait(lk, op->level, op_mode(op, op->level));
	return false;
}

/*
 * A waiting request was granted by a grant pass: count it, continue the
 * locker's operation down the path, and tell the caller when it is done.
 */
static void notify_granted(struct hl_req *req)
{
	struct hl_locker *lk = req->locker;
	struct hl_op *op = &lk->op;

	op->now = hl_clock();
	if (op->step[op->level] == HL_STEP_NEW) {
		req->since = op->now;
		locker_add(lk, req);
	}
	hl_note_granted(lk, op->level, op_mode(op, op->level), true);
	op_count(op, op->level);
	op->level++;
	if (op_advance(lk))
		hl_op_granted(lk);
}

/**
 * hl_op_start() - Start locking the prepared path.
 * @lk: The locker, whose slot is in HL_OP_SETUP with op.heads, op.nr and
 *	enough spares: hl_op_reqs_needed() returned 0 in this same hold of
 *	the caller's lock, so op.reqs is current.
 * @mode: Mode for the last level, HLOCK_IS to HLOCK_X.
 * @flags: HLOCK_F_FRONT and HLOCK_F_COMPAT_FIRST for the last level.
 *
 * Pins the locker's requests on the path, so that unlocking something
 * else while this waits cannot take away a request it will need.
 *
 * Return: 0 when every level was granted (slot in HL_OP_GRANTED),
 * -EINPROGRESS when a level waits (HL_OP_WAITING; hl_op_granted() is
 * called once all levels are granted), -EOVERFLOW when a count would
 * overflow (slot still in HL_OP_SETUP, nothing changed).
 */
int hl_op_start(struct hl_locker *lk, unsigned int mode, unsigned int flags)
{
	struct hl_op *op = &lk->op;
	unsigned int l;

	for (l = 0; l < op->nr; l++) {
		struct hl_req *req = op->reqs[l];

		/* Checked up front: a level must never fail half way. */
		if (req && req->own + req->child >= HL_MAX_COUNT)
			return -EOVERFLOW;
	}
	for (l = 0; l < op->nr; l++)
		if (op->reqs[l])
			op->reqs[l]->pin++;
	op->pinned = true;
	op->now = hl_clock();
	op->mode = mode;
	op->flags = flags;
	op->level = 0;
	op->state = HL_OP_WAITING;
	return op_advance(lk) ? 0 : -EINPROGRESS;
}

/*
 * Unpin the requests the operation started with, deepest first; those
 * it created (HL_STEP_NEW at a level it reached) were never pinned.
 */
static void op_unpin(struct hl_op *op)
{
	unsigned int l = op->nr;

	while (l-- > 0) {
		struct hl_req *req = op->reqs[l];

		if (req && (l >= op->level || op->step[l] != HL_STEP_NEW)) {
			req->pin--;
			req_put(req);
		}
	}
	op->pinned = false;
}

/**
 * hl_op_cancel() - Undo the operation in flight, level by level.
 * @lk: The locker, slot in HL_OP_WAITING or HL_OP_GRANTED.
 *
 * Withdraws the waiting level and undoes every level acquired, deepest
 * first: new requests are released, recursions dropped and conversions
 * turned back into the mode held before.  The locker is left exactly as
 * before hl_op_start(); the slot stays claimed for hl_op_finish().
 */
void hl_op_cancel(struct hl_locker *lk)
{
	struct hl_op *op = &lk->op;
	unsigned int l = op->level;

	if (op->state == HL_OP_WAITING) {
		struct hl_req *req = op->reqs[l];

		hl_note_withdrawn(lk, l, op_mode(op, l));
		head_cancel(req->head, req);
		if (op->step[l] == HL_STEP_NEW) {
			hl_req_free(req);
			hl_head_put(op->heads[l]);
			op->reqs[l] = NULL;
		}
	}
	while (l-- > 0) {
		struct hl_req *req = op->reqs[l];

		if (op->step[l] == HL_STEP_CONVERT) {
			/* Flags first: the downgrade's grant pass obeys them. */
			req_set_flags(req->head, req, op->prev_flags[l]);
			head_downgrade(req->head, req, op->prev[l]);
		}
		if (op->step[l] == HL_STEP_NEW) {
			req_drop(req, l + 1 == op->nr);
			op->reqs[l] = NULL;
		} else if (l + 1 == op->nr) {
			req->own--;
		} else {
			req->child--;
		}
	}
	op->state = HL_OP_SETUP;
}

/**
 * hl_op_finish() - Empty the slot after a grant was collected or undone.
 * @lk: The locker.
 *
 * Unpins the requests the operation started with, frees the unused spares
 * and drops the operation's references on the heads of its path.
 */
void hl_op_finish(struct hl_locker *lk)
{
	struct hl_op *op = &lk->op;
	unsigned int l;

	if (op->pinned)
		op_unpin(op);
	while (op->nr_spare)
		hl_req_free(op->spare[--op->nr_spare]);
	for (l = 0; l < op->nr; l++)
		hl_head_put(op->heads[l]);
	op->nr = 0;
	op->state = HL_OP_IDLE;
}

/**
 * hl_op_busy() - Whether @h is on the path of the operation in flight.
 * @lk: The locker.
 * @h: The resource.
 *
 * While a path lock is in flight, its resources change only through it.
 *
 * Return: true when @h is one of the operation's heads.
 */
bool hl_op_busy(struct hl_locker *lk, struct hl_head *h)
{
	struct hl_op *op = &lk->op;
	unsigned int l;

	if (op->state != HL_OP_WAITING && op->state != HL_OP_GRANTED)
		return false;
	for (l = 0; l < op->nr; l++)
		if (op->heads[l] == h)
			return true;
	return false;
}

/**
 * hl_unlock() - Release one acquisition made on @h and its intents.
 * @lk: The locker; no operation of it may be in flight on @h's path.
 * @h: The resource.
 *
 * Return: the acquisitions made on @h that remain, or -ENOENT when the
 * locker made none there.
 */
int hl_unlock(struct hl_locker *lk, struct hl_head *h)
{
	struct hl_req *reqs[HL_MAX_LEVELS];
	unsigned int l, nr = 0;
	struct hl_head *a;
	int left;

	reqs[0] = hl_locker_find(lk, h);
	if (!reqs[0] || !reqs[0]->own)
		return -ENOENT;
	/* Find them all first: dropping one may free heads above it. */
	for (a = h->parent; a; a = a->parent)
		reqs[++nr] = hl_locker_find(lk, a);
	left = reqs[0]->own - 1;
	req_drop(reqs[0], true);
	for (l = 1; l <= nr; l++)
		req_drop(reqs[l], false);
	return left;
}

/* The intent the locker's requests below @h need there. */
static unsigned int needed_below(struct hl_locker *lk, struct hl_head *h)
{
	unsigned int need = HLOCK_NL;
	struct hl_req *req;
	struct hl_head *a;

	list_for_each_entry(req, &lk->reqs, locker_node) {
		if (req->head->level <= h->level)
			continue;
		for (a = req->head->parent; a && a->level > h->level;)
			a = a->parent;
		if (a == h)
			need = hl_sup(need, hl_intent(req->mode));
	}
	return need;
}

/**
 * hl_downgrade() - Lower the mode held on @h and grant what that allows.
 * @lk: The locker; no operation of it may be in flight on @h's path.
 * @h: The resource.
 * @mode: The new mode, HLOCK_IS to HLOCK_X.
 *
 * Return: 0; -ENOENT when nothing is held on @h; -EINVAL when @mode is not
 * covered by the mode held or does not cover the intent the locker's
 * requests below @h need.
 */
int hl_downgrade(struct hl_locker *lk, struct hl_head *h, unsigned int mode)
{
	struct hl_req *req = hl_locker_find(lk, h);

	if (!req)
		return -ENOENT;
	if (!hl_covers(req->mode, mode) ||
	    !hl_covers(mode, needed_below(lk, h)))
		return -EINVAL;
	if (mode != req->mode)
		head_downgrade(h, req, mode);
	return 0;
}

/**
 * hl_held() - The mode the locker holds on @h.
 * @lk: The locker.
 * @h: The resource.
 *
 * Return: the granted mode (the old one while a conversion waits), or
 * HLOCK_NL.
 */
unsigned int hl_held(struct hl_locker *lk, struct hl_head *h)
{
	struct hl_req *req = hl_locker_find(lk, h);

	return req ? req->mode : HLOCK_NL;
}

/**
 * hl_locker_release_all() - Cancel and release everything of a locker.
 * @lk: The locker, going away.
 */
void hl_locker_release_all(struct hl_locker *lk)
{
	struct hl_req *req, *next;
	unsigned int l = HL_MAX_LEVELS;

	if (lk->op.state == HL_OP_WAITING || lk->op.state == HL_OP_GRANTED)
		hl_op_cancel(lk);
	if (lk->op.state != HL_OP_IDLE)
		hl_op_finish(lk);
	/*
	 * Deepest first, as unlock does, so that no grant pass ever sees a
	 * request whose ancestors' intents are already gone.
	 */
	while (l-- > 0)
		list_for_each_entry_safe(req, next, &lk->reqs, locker_node)
			if (req->head->level == l)
				req_release(req);
}
