// SPDX-License-Identifier: GPL-2.0
/*
 * hlock core: what this node holds of a cluster head in the DLM, and every
 * transition of it (plain C, with hlock_core.c).
 *
 * A head of a cluster lock space has one DLM lock per node (struct
 * hl_node).  The host (hlock_cluster.c) only talks to the DLM: it calls
 * hl_node_pass() under the head lock when something happened, sends the
 * request that pass asked for once it dropped the lock, and hands the
 * DLM's answer back to hl_node_answer() (or hl_node_failed() when the DLM
 * refused the call itself).  This file decides what to ask and keeps the
 * head's node_mode (what the core may grant: never more than the DLM gave
 * this node, and while a conversion down is in flight, no more than the
 * lower of the two modes) and remote_mask (the modes other nodes wait
 * for) true through each step:
 *
 *   idle --pass: need more, or others wait--> busy (asked)
 *   busy --answer: granted--> mode = asked; others' waits end if it went
 *                             down
 *   busy --answer: cancelled / refused / conversion deadlock--> as it was
 *   exists, head idle --pass with unlock wanted--> unlocking --answer-->
 *                             none (NL), others' waits end
 *   exists in NL --pass: need more--> a new lock in the other slot
 *                             (@fresh), busy
 *   fresh --answer: granted--> the NL lock dropped (@drop) --its answer-->
 *                             that slot is free again
 *   fresh --answer: cancelled / failed--> back to the NL lock
 *
 * Up from NL is a new DLM lock, never a conversion.  The DLM grants a
 * conversion that is compatible with the granted modes at once, ahead of
 * every request that waits, so a node that gave way (down to NL) and
 * converted up again would pass the node it gave way to whenever a third
 * node still held a mode blocking that one: two reader nodes taking turns
 * would starve a writer for good.  A new request queues behind the
 * waiting ones.  The NL lock stays until the new one is granted: the DLM
 * frees a resource's value block with its last lock, and a cached NL lock
 * is what keeps it while nobody holds the resource (a new request that is
 * cancelled leaves nothing).  Try-locks (DLM_LKF_NOQUEUE) still convert:
 * they ask whether the mode is free now, and wait for nobody.
 *
 * Context: every function here runs under the head lock of @h.
 */
#include "hlock_core.h"

/**
 * hl_node_init() - Make a new head a cluster head that this node holds NL.
 * @h: The head, not yet visible.
 * @n: Its node lock, not yet in the DLM.
 */
void hl_node_init(struct hl_head *h, struct hl_node *n)
{
	h->cluster = true;
	h->node_mode = HLOCK_NL;
	h->remote_mask = 0;
	n->refused_seq = S64_MIN;
	n->mode = HLOCK_NL;
	n->asked = HLOCK_NL;
	n->busy = false;
	n->exists = false;
	n->unlocking = false;
	n->unlock = false;
	n->deadlk = false;
	n->noqueue = false;
	n->cancelling = false;
	n->down = false;
	n->fresh = false;
	n->drop = false;
	n->drop_now = false;
	n->slot = 0;
}

/**
 * hl_meet() - The greatest mode that both @a and @b cover.
 * @a: A mode.
 * @b: A mode.
 *
 * Return: that mode, HLOCK_NL at least.
 */
unsigned int hl_meet(unsigned int a, unsigned int b)
{
	unsigned int m;

	for (m = HLOCK_X; m > HLOCK_NL; m--)
		if (hl_covers(a, m) && hl_covers(b, m))
			break;
	return m;
}

/**
 * hl_node_release() - What a cluster head holds went down: when the node
 *	does not cache its DLM locks, what may be granted goes down with it,
 *	at once (the DLM lock follows, hl_node_target()).
 * @h: The head.
 *
 * Not while anything waits: the request in flight may be for it.
 */
void hl_node_release(struct hl_head *h)
{
	hl_assert_head_locked(h);
	if (!hl_node_caching() && !h->wait_mask)
		h->node_mode = hl_meet(h->node_mode, hl_node_keep(h));
}

/* hl_node_target() without the wait for a slot. */
static int node_target(const struct hl_head *h, const struct hl_node *n,
		       bool up)
{
	unsigned int keep, need;

	if (n->busy || !up || h->dead)
		return -1;
	/*
	 * The DLM refused what the try-locks waiting here asked for: they
	 * give up once they look, and the head's next change says what is
	 * needed then.
	 */
	if (hl_node_refused(h, n->refused_seq))
		return -1;
	keep = hl_node_keep(h);
	if (n->deadlk && keep != n->mode)
		return keep;
	/*
	 * Not caching: a release lowered what may be granted to what is
	 * held (hl_node_release()); the DLM lock follows, before anything
	 * that waits asks for more again.
	 */
	if (!hl_node_caching() && !hl_covers(h->node_mode, n->mode))
		return h->node_mode;
	if (h->remote_mask) {
		/*
		 * A holder converts beyond what this node holds: ask, even
		 * though another node waits.  The holder already blocks it,
		 * and the DLM grants a compatible conversion ahead of waiting
		 * requests; holding back would deadlock the two nodes.
		 */
		if (!hl_covers(n->mode, keep))
			return keep;
		if (!hl_conflicts(n->mode, h->remote_mask))
			return -1;
		if (hl_conflicts(keep, h->remote_mask))
			return -1;
		return keep;
	}
	need = hl_node_need(h);
	if (hl_covers(n->mode, need) && (n->exists || need == HLOCK_NL))
		return -1;
	return need;
}

/* Whether a request for @target goes with DLM_LKF_NOQUEUE. */
static bool node_noqueue(const struct hl_head *h, const struct hl_node *n,
			 unsigned int target)
{
	/* Unless every request here was refused already: they give up. */
	return h->try_waiting && h->back_seq > n->refused_seq &&
	       !hl_covers(n->mode, target);
}

/* Whether a request for @target is a new lock beside the NL one. */
static bool node_fresh(const struct hl_head *h, const struct hl_node *n,
		       unsigned int target)
{
	return n->exists && n->mode == HLOCK_NL && target != HLOCK_NL &&
	       !node_noqueue(h, n, target);
}

/**
 * hl_node_target() - What the DLM lock should become now.
 * @h: The head.
 * @n: Its node lock.
 * @up: A new DLM request may be made (the lockspace is live and not being
 *	left).
 *
 * Down to what the local holders keep when another node waits for a mode
 * that conflicts with this node's (or, after a conversion deadlock, in
 * any case), up to it when their conversions need more; else up to what
 * they need, when that is not covered.
 *
 * Return: a mode, or -1 for nothing to do (also while only try-locks that
 * the DLM refused wait, and while the NL lock that a new lock would
 * replace is still being dropped: its answer runs a pass).
 */
int hl_node_target(const struct hl_head *h, const struct hl_node *n, bool up)
{
	int target;

	hl_assert_head_locked(h);
	target = node_target(h, n, up);
	/* A new lock needs the other slot: its old lock is still going. */
	if (target >= 0 && n->drop && node_fresh(h, n, target))
		return -1;
	return target;
}

/**
 * hl_node_cancel_due() - Whether the request in flight is no longer wanted.
 * @h: The head.
 * @n: Its node lock.
 * @live: The DLM may be called (a cancel too, while the space is left).
 *
 * A request that queues for more than this node holds (up only:
 * cancelled, it leaves the mode as it was) is not wanted once nothing
 * waits on the head (the waiter that asked for it timed out, was
 * interrupted or went away) and the holders have what they need.
 * Cancelled, it leaves the DLM's queue, rather than take the lock from
 * another node later for nobody.
 *
 * Return: true when the host should cancel it.
 */
bool hl_node_cancel_due(const struct hl_head *h, const struct hl_node *n,
			bool live)
{
	hl_assert_head_locked(h);
	return n->busy && !n->down && !n->noqueue && !n->unlocking &&
	       !n->cancelling && live && !hl_covers(n->mode, n->asked) &&
	       !h->wait_mask && hl_covers(n->mode, hl_node_keep(h));
}

/* A new lock was not made: the NL lock beside it is the lock again. */
static void node_unfresh(struct hl_node *n)
{
	n->fresh = false;
	n->slot ^= 1;
	n->exists = true;
	n->mode = HLOCK_NL;
}

/**
 * hl_node_answer() - Take in the DLM's answer to the request in flight.
 * @h: The head.
 * @n: Its node lock.
 * @a: The answer.
 *
 * Return: true when the host must load the lock value block the DLM gave
 * (the lock went up from less than SIX, or was made: the value the last
 * writer left, or the news that one died with it).  From SIX or X, this
 * node's own value is the newest.
 */
bool hl_node_answer(struct hl_head *h, struct hl_node *n,
		    enum hl_node_answer a)
{
	bool load = false;

	hl_assert_head_locked(h);
	n->busy = false;
	n->noqueue = false;
	n->cancelling = false;
	if (n->fresh) {
		/* Nothing was made: the NL lock is the lock again. */
		if (a != HL_NODE_GRANTED) {
			node_unfresh(n);
			return false;
		}
		/* Made: the NL lock goes (next pass, once the DLM is up). */
		n->fresh = false;
		n->drop = true;
		n->drop_now = true;
	}
	if (n->unlocking) {
		n->unlocking = false;
		n->exists = false;
		n->mode = HLOCK_NL;
		h->node_mode = HLOCK_NL;
		/*
		 * As after a conversion down: no other node waits for a lock
		 * this node no longer has.  A blocking AST noted in the pass
		 * that sent the unlock, or while it was in flight, was for
		 * the lock now gone; one that comes after this is stale (the
		 * mode is NL).  Kept, it would hold back every conflicting
		 * local request, and no blocking AST would ever come to
		 * clear it.
		 */
		h->remote_mask = 0;
		return false;
	}
	switch (a) {
	case HL_NODE_GRANTED:
		load = !hl_covers(n->mode, HLOCK_SIX) &&
		       hl_covers(n->asked, n->mode);
		n->exists = true;
		/* Gone down: the other nodes' turn came. */
		if (n->down)
			h->remote_mask = 0;
		n->mode = n->asked;
		h->node_mode = n->asked;
		n->deadlk = false;
		break;
	case HL_NODE_CANCELLED:
		/*
		 * A conversion stays in the mode held, a new lock leaves none
		 * (@exists is still false).  What may be granted went down
		 * to the lower mode only for a conversion down, which is
		 * never cancelled.
		 */
		break;
	case HL_NODE_REFUSED:
		/* Asked with NOQUEUE, not granted now: the try-locks give up. */
		n->refused_seq = h->back_seq;
		break;
	case HL_NODE_DEADLOCK:
		/*
		 * Another node converts too, and the DLM refused ours: go
		 * down to what the local holders keep, then ask again behind
		 * the other node.  If they keep all this node holds, their
		 * conversions deadlock with the other node's holders (as
		 * they would on one machine); the next change on the head (a
		 * release, a timeout, a signal) tries again.
		 */
		n->deadlk = true;
		break;
	case HL_NODE_FAILED:
		break;
	}
	return load;
}

/**
 * hl_node_failed() - The DLM refused the call a pass asked for at once
 *	(no memory, say): nothing will answer it, nothing is in flight.
 * @h: The head.
 * @n: Its node lock.
 *
 * The DLM lock is as it was: after a refused unlock the head may grant
 * what it covers again; after a refused conversion, no more than it did.
 * The try-locks it was for give up.  (A refused cancel leaves the request
 * to its own answer: not for this function.)
 */
void hl_node_failed(struct hl_head *h, struct hl_node *n)
{
	hl_assert_head_locked(h);
	if (n->fresh)
		node_unfresh(n);
	n->busy = false;
	if (n->noqueue)
		n->refused_seq = h->back_seq;
	n->noqueue = false;
	if (n->unlocking)
		h->node_mode = n->mode;
	n->unlocking = false;
}

/**
 * hl_node_dropped() - The NL lock that a new lock replaced is gone (or the
 *	DLM refused to unlock it: then it stays until the lockspace goes).
 * @h: The head.
 * @n: Its node lock.
 */
void hl_node_dropped(struct hl_head *h, struct hl_node *n)
{
	hl_assert_head_locked(h);
	n->drop = false;
}

/**
 * hl_node_pass() - Look at a cluster head after an event, and say what to
 *	ask of the DLM.
 * @h: The head.
 * @n: Its node lock.
 * @basts: Modes (bits) of the blocking ASTs that came since the last pass.
 * @up: A new DLM request may be made.
 * @live: The DLM may be called (cancels).
 * @g: Where the lockers its grant pass granted are collected.
 * @req: Set to the call to make once the head lock is dropped.
 */
void hl_node_pass(struct hl_head *h, struct hl_node *n, unsigned int basts,
		  bool up, bool live, struct hl_grants *g,
		  struct hl_node_req *req)
{
	int target;

	hl_assert_head_locked(h);
	req->call = HL_NODE_NONE;
	req->mode = HLOCK_NL;
	req->convert = false;
	req->noqueue = false;
	req->store = false;
	req->drop = false;
	req->slot = n->slot;
	if (n->drop_now && up) {
		n->drop_now = false;
		req->drop = true;
	}
	/* Blocking ASTs for modes this node no longer blocks are stale. */
	if (basts && hl_conflicts(n->mode, basts))
		hl_node_remote(h, basts);
	hl_node_changed(h, g);
	if (n->unlock) {
		n->unlock = false;
		if (!n->busy && n->exists && up && hl_head_idle(h)) {
			n->busy = true;
			n->unlocking = true;
			h->node_mode = HLOCK_NL;
			req->call = HL_NODE_UNLOCK;
		}
	}
	if (req->call == HL_NODE_NONE && hl_node_cancel_due(h, n, live)) {
		n->cancelling = true;
		req->call = HL_NODE_CANCEL;
	}
	target = req->call == HL_NODE_NONE ? hl_node_target(h, n, up) : -1;
	/*
	 * Going down from SIX or X (or away): the DLM keeps what this node
	 * published, for the next node to go up.  (Up to X from SIX, it
	 * writes nothing, and what it reads is not taken in.)  Not with a
	 * cancel: the request in flight owns the value until its answer.
	 */
	req->store = (req->call == HL_NODE_UNLOCK || target >= 0) &&
		     hl_covers(n->mode, HLOCK_SIX);
	if (target < 0)
		return;
	n->busy = true;
	n->asked = target;
	req->call = HL_NODE_LOCK;
	req->mode = target;
	req->convert = n->exists;
	/*
	 * From now on the DLM may hold this node to the lower of the two
	 * modes at any moment: grant no more than that until the answer
	 * comes (a conversion up keeps the mode held).
	 */
	n->down = !hl_covers(target, n->mode);
	h->node_mode = hl_meet(h->node_mode, target);
	/* Try-locks wait for it: ask for an answer now. */
	if (node_noqueue(h, n, target)) {
		req->noqueue = true;
		n->noqueue = true;
	} else if (node_fresh(h, n, target)) {
		/* Up from NL: a new lock, queued behind what waits. */
		n->fresh = true;
		n->slot ^= 1;
		n->exists = false;
		req->convert = false;
		req->slot = n->slot;
	}
}

/**
 * hl_node_want_unlock() - The host wants an unused cluster head gone: its
 *	DLM lock has to go first.
 * @h: The head, unused as far as the core knows.
 * @n: Its node lock.
 * @up: A new DLM request may be made.
 *
 * Return: true when the host should run a pass (hl_node_pass() unlocks it
 * if the head is still idle then).
 */
bool hl_node_want_unlock(struct hl_head *h, struct hl_node *n, bool up)
{
	hl_assert_head_locked(h);
	if (!hl_head_idle(h) || !up)
		return false;
	n->unlock = true;
	return true;
}

/**
 * hl_node_try_ok() - Whether a try-lock's waiting request may wait for the
 *	DLM's answer.
 * @h: The head.
 * @n: Its node lock.
 * @req: The waiting request.
 * @up: A new DLM request may be made.
 *
 * Return: true when it waits for this node's DLM lock alone, an answer
 * will come soon, and the DLM has not refused it yet.
 */
bool hl_node_try_ok(const struct hl_head *h, const struct hl_node *n,
		    const struct hl_req *req, bool up)
{
	hl_assert_head_locked(h);
	/*
	 * A queued DLM request is out: it may wait for long.  One that only
	 * gives up mode (an unlock, a conversion down: not caching, every
	 * release makes one) is answered at once, as a NOQUEUE one is: wait
	 * for that answer, after which a pass asks for the try's mode.
	 */
	if (n->busy && !n->noqueue && !n->unlocking &&
	    !hl_covers(n->mode, n->asked))
		return false;
	/* Nothing in flight, nothing to ask: no answer would come. */
	if (!n->busy && hl_node_target(h, n, up) < 0)
		return false;
	if (req->seq <= n->refused_seq)
		return false;
	return hl_node_only(h, req);
}
