// SPDX-License-Identifier: GPL-2.0
/*
 * hlock core: what this node holds of a cluster head in the DLM, and every
 * transition of it (plain C, with hlock_core.c).
 *
 * A head of a cluster lock space has one DLM lock per node (struct
 * hl_node).  The host (hlock_clk.c) only talks to the DLM: it calls
 * hl_node_pass() under the head lock when something happened, with the
 * answer and the blocking ASTs that came, sends the request that pass
 * asked for once it dropped the lock, and runs a pass again when the pass
 * asked to be looked at later.  This file decides what to ask and keeps
 * the head's node_mode (what the core may grant: never more than the DLM
 * gave this node, and while a conversion down is in flight, no more than
 * the lower of the two modes) and remote_mask (the modes other nodes wait
 * for) true through each step:
 *
 *   none --pass: need more--> the lock made in NL (EXPEDITE: granted at
 *                             once, whatever waits)
 *   exists, idle --pass: need more--> busy: up, a conversion queued behind
 *                             the conversions that wait (QUECVT), or for a
 *                             holder's conversion, at once if it can be;
 *                             for try-locks alone, answered at once first
 *                             (NOQUEUE), then queued; from IX to S or back,
 *                             down to IS first
 *   busy --answer: refused (NOQUEUE)--> as it was; the nodes in the way
 *                             were told, the next request is queued
 *   exists, idle --pass: others wait--> busy: down to what the holders
 *                             keep, a conversion granted at once
 *   busy --answer: granted--> mode = asked; others' waits end if it went
 *                             down
 *   busy --answer: cancelled / failed--> as it was
 *   busy --answer: conversion deadlock--> down to what the holders hold;
 *                             if that is all it holds, their conversions
 *                             that need more fail (EDEADLK), and nothing is
 *                             asked again for a probe interval
 *   exists, others wait, quiet for a probe interval --pass--> probe: the
 *                             mode held asked again, twice; a blocking AST
 *                             between the two answers says who still waits
 *   exists, head idle --pass with unlock wanted--> unlocking --answer-->
 *                             none, others' waits end
 *
 * Up is always a conversion of the one lock; up for new requests has
 * DLM_LKF_QUECVT.  The DLM grants a plain conversion that is compatible
 * with the granted modes at once, ahead of every request that waits, and
 * grants waiting conversions before any new request (the VMS rules 6-3 to
 * 6-7 that fs/dlm follows): a node that gave way and converted up again
 * would pass the node it gave way to whenever a third one still held a
 * mode blocking that one, so two reader nodes taking turns would starve a
 * writer, and so would two nodes that only go down to IS for a waiting
 * SIX.  With QUECVT a conversion is granted at once only while no other
 * waits, and the waiting ones are granted first come, first served; a new
 * request would queue behind every conversion, so the lock is made in NL
 * first, which EXPEDITE grants at once, and is converted from there.  Up
 * for a holder's conversion is a plain conversion, granted as a
 * conversion is on one node: at once when compatible with the holders,
 * whatever waits (its holder blocks the waiters already); the DLM refuses
 * it when it and another node's waiting conversion each wait for the
 * other's mode.  The NL lock also keeps the resource's value block while
 * nobody holds the resource: the DLM frees it with the last lock.
 *
 * Other nodes' waits come from blocking ASTs, one per grant of this node's
 * lock and mode of the waiter; a waiter that gives up (a timeout, a
 * cancel) tells nobody.  So while this node keeps a mode that other nodes
 * wait for, it probes every probe interval (hl_node_probe_ns()): it asks
 * for the mode it holds, which the DLM grants at once and which re-arms
 * the blocking AST; a second request's answer comes after any blocking AST
 * the first one's grant sent.  What was not said again between the two
 * answers is nobody's wait any more.
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
	/* What it grants waits for the DLM: no fast path. */
	h->fast = HL_FAST_SHUT;
	h->node_mode = HLOCK_NL;
	h->remote_mask = 0;
	n->remote_at = 0;
	n->deadlk_at = 0;
	n->mode = HLOCK_NL;
	n->asked = HLOCK_NL;
	n->hold = HLOCK_NL;
	n->probe = HL_PROBE_NONE;
	n->probe_seen = 0;
	n->busy = false;
	n->exists = false;
	n->unlocking = false;
	n->unlock = false;
	n->deadlk = false;
	n->cancelling = false;
	n->down = false;
	n->noqueue = false;
	n->refused = false;
	n->failed = false;
	n->try_gen = 0;
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

/*
 * Whether what the DLM said of a request for try-locks (@n->refused, or
 * @n->failed) is about the try-locks that wait now: some wait, and none
 * of them came after all those it was about had gone (@h->try_gen).
 */
static bool node_of_tries(const struct hl_head *h, const struct hl_node *n)
{
	return h->try_waiting && n->try_gen == h->try_gen;
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

/* Whether other nodes wait for a mode that what this node holds blocks. */
static bool node_blocks_remote(const struct hl_head *h,
			       const struct hl_node *n)
{
	return n->exists && hl_conflicts(n->mode, h->remote_mask);
}

/*
 * The next step from the mode held towards @target: @target, unless the
 * two are side by side (IX and S, neither covers the other), where the
 * step is down to what both cover, granted at once; the next pass goes up
 * from there.  So every conversion asked is either down, and never
 * cancelled, or up, queued and cancelled when nobody wants it any more
 * (hl_node_cancel_due()); a conversion from IX to S would be both.
 */
static unsigned int node_step(const struct hl_node *n, unsigned int target)
{
	if (n->exists && !hl_covers(target, n->mode) &&
	    !hl_covers(n->mode, target))
		return hl_meet(n->mode, target);
	return target;
}

/**
 * hl_node_target() - What the DLM lock should become now.
 * @h: The head.
 * @n: Its node lock.
 * @up: A new DLM request may be made (the lockspace is live and not being
 *	left).
 *
 * Down to what the local holders keep when another node waits for a mode
 * that conflicts with this node's, up to it when their conversions need
 * more; else up to what they need, when that is not covered.  After a
 * conversion deadlock, down to what the holders hold, and nothing more
 * until that changes or the probe interval is over.  From IX to S or
 * back, down to IS first (node_step()).
 *
 * Return: a mode, or -1 for nothing to do.
 */
int hl_node_target(const struct hl_head *h, const struct hl_node *n, bool up)
{
	unsigned int keep, need, hold;

	hl_assert_head_locked(h);
	if (n->busy || !up || h->dead)
		return -1;
	/*
	 * The DLM refused the call for the try-locks that wait at once:
	 * they give up (hl_node_try_ok()), and nothing is asked for them.
	 */
	if (n->failed && node_of_tries(h, n) && hl_node_tries_only(h))
		return -1;
	if (n->deadlk) {
		hold = hl_node_hold(h);
		return hold != n->mode ? (int)hold : -1;
	}
	keep = hl_node_keep(h);
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
		 * though another node waits.  The holder already blocks it;
		 * holding back would deadlock the two nodes.
		 */
		if (!hl_covers(n->mode, keep))
			return node_step(n, keep);
		if (!hl_conflicts(n->mode, h->remote_mask))
			return -1;
		if (hl_conflicts(keep, h->remote_mask))
			return -1;
		return keep;
	}
	need = hl_node_need(h);
	if (hl_covers(n->mode, need) && (n->exists || need == HLOCK_NL))
		return -1;
	return node_step(n, need);
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

/*
 * Take in the answer to the request in flight.  Return: true when the
 * host must load the lock value block the DLM gave (the lock went up from
 * less than SIX, or was made: the value the last writer left, or the news
 * that one died with it).  From SIX or X, this node's own value is the
 * newest; a probe moves nothing.
 */
static bool node_answer(struct hl_head *h, struct hl_node *n,
			enum hl_node_answer a, u64 now)
{
	bool load = false;

	n->busy = false;
	n->cancelling = false;
	n->noqueue = false;
	/* The next request for the tries that wait is queued, or not. */
	n->refused = a == HL_NODE_REFUSED;
	n->try_gen = h->try_gen;
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
		 * lock is gone).  Kept, it would hold back every conflicting
		 * local request, and no blocking AST would ever come to
		 * clear it.
		 */
		h->remote_mask = 0;
		return false;
	}
	if (n->probe == HL_PROBE_FIRST || n->probe == HL_PROBE_SECOND) {
		if (a != HL_NODE_GRANTED)
			n->probe = HL_PROBE_NONE;
		else if (n->probe == HL_PROBE_FIRST)
			n->probe = HL_PROBE_BETWEEN;
		else
			n->probe = HL_PROBE_DONE;
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
	case HL_NODE_DEADLOCK:
		/*
		 * Another node converts too, and the DLM refused ours (see
		 * hl_node_pass()).
		 */
		n->deadlk = true;
		n->hold = hl_node_hold(h);
		n->deadlk_at = now;
		break;
	case HL_NODE_CANCELLED:
		/*
		 * The conversion stays in the mode held.  What may be granted
		 * went down to the lower mode only for a conversion down,
		 * which is never cancelled.
		 */
	case HL_NODE_REFUSED:
		/*
		 * Asked with NOQUEUE for try-locks, not grantable now: the
		 * nodes in the way were told (NOQUEUEBAST), and the next
		 * request, queued, gives those that only cache it the time
		 * to let go.
		 */
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
 * The try-locks it was for give up, as they do when another node holds
 * on.  (A refused cancel leaves the request to its own answer: not for
 * this function.)
 */
void hl_node_failed(struct hl_head *h, struct hl_node *n)
{
	hl_assert_head_locked(h);
	n->busy = false;
	n->noqueue = false;
	if (n->unlocking)
		h->node_mode = n->mode;
	/* The try-locks it was for give up (hl_node_try_ok()). */
	n->failed = !n->unlocking;
	n->try_gen = h->try_gen;
	n->unlocking = false;
	n->probe = HL_PROBE_NONE;
}

/*
 * Blocking ASTs came (@basts, modes): those for a mode this node blocks
 * are other nodes' waits; others are stale (this node went down since).
 * Context: after the answer that came before them was taken in.
 */
static void node_basts(struct hl_head *h, struct hl_node *n,
		       unsigned int basts, u64 now)
{
	if (!basts || !n->exists || !hl_conflicts(n->mode, basts))
		return;
	hl_node_remote(h, basts);
	n->remote_at = now;
	if (n->probe != HL_PROBE_NONE && n->probe != HL_PROBE_FIRST)
		n->probe_seen |= basts;
}

/*
 * A probe's second answer came: the waits not said again since the first
 * one's are over.  Every blocking AST the first one's grant sent came
 * before the second answer, and was taken in by now (node_basts()).
 */
static void node_probed(struct hl_head *h, struct hl_node *n, u64 now)
{
	n->probe = HL_PROBE_NONE;
	h->remote_mask &= n->probe_seen;
	n->remote_at = now;
}

/*
 * A conversion deadlock was answered: give up what the holders do not
 * hold (hl_node_target()), or, when they hold all the node holds, refuse
 * their conversions that need more (EDEADLK), which the DLM refused for
 * them.  What changed since (a holder let go, the probe interval passed)
 * ends it: the node asks again as usual.
 */
static void node_deadlk(struct hl_head *h, struct hl_node *n, u64 now,
			u64 wait, struct hl_grants *g)
{
	unsigned int hold = hl_node_hold(h);

	if (hold != n->hold || (wait && now >= n->deadlk_at + wait)) {
		n->deadlk = false;
		return;
	}
	if (hold == n->mode)
		hl_node_refuse(h, g);
}

/* Ask the DLM for @target: a new lock in NL first, else a conversion. */
static void node_ask(struct hl_head *h, struct hl_node *n, unsigned int target,
		     struct hl_node_req *req)
{
	n->busy = true;
	n->failed = false;
	req->call = HL_NODE_LOCK;
	if (!n->exists) {
		/* The lock is made in NL, granted at once; then converted. */
		n->asked = HLOCK_NL;
		n->down = false;
		req->mode = HLOCK_NL;
		req->expedite = true;
		return;
	}
	n->asked = target;
	req->mode = target;
	req->convert = true;
	/*
	 * Up for new requests: behind the conversions that wait, first come
	 * first served.  Up for a holder's conversion: at once when the
	 * other nodes' grants allow it, as a conversion is granted here
	 * (the holder blocks what waits already).
	 */
	req->quecvt = !hl_covers(n->mode, target) &&
		      hl_covers(n->mode, hl_node_keep(h));
	/*
	 * Up for try-locks alone: answered at once, the first time (a try
	 * waits for no other node); the DLM tells the nodes in the way.
	 */
	if (req->quecvt && !(n->refused && node_of_tries(h, n)) &&
	    hl_node_tries_only(h)) {
		req->noqueue = true;
		n->noqueue = true;
	}
	/*
	 * From now on the DLM may hold this node to the lower of the two
	 * modes at any moment: grant no more than that until the answer
	 * comes (a conversion up keeps the mode held).  Never side by side
	 * (node_step()).
	 */
	n->down = !hl_covers(target, n->mode);
	h->node_mode = hl_meet(h->node_mode, target);
}

/* Ask for the mode held again: a probe (the value block stays as it is). */
static void node_probe(struct hl_node *n, struct hl_node_req *req)
{
	n->busy = true;
	n->asked = n->mode;
	n->down = false;
	n->probe = n->probe == HL_PROBE_BETWEEN ? HL_PROBE_SECOND :
		   HL_PROBE_FIRST;
	if (n->probe == HL_PROBE_FIRST)
		n->probe_seen = 0;
	req->call = HL_NODE_LOCK;
	req->mode = n->mode;
	req->convert = true;
	req->probe = true;
}

/**
 * hl_node_pass() - Look at a cluster head after an event, and say what to
 *	ask of the DLM.
 * @h: The head.
 * @n: Its node lock.
 * @ev: What happened: the answer to the request in flight, if it came,
 *	and the blocking ASTs that came since the last pass.
 * @up: A new DLM request may be made.
 * @live: The DLM may be called (cancels).
 * @g: Where the lockers its grant pass granted are collected.
 * @req: Set to the call to make once the head lock is dropped.
 */
void hl_node_pass(struct hl_head *h, struct hl_node *n,
		  const struct hl_node_event *ev, bool up, bool live,
		  struct hl_grants *g, struct hl_node_req *req)
{
	u64 wait = hl_node_probe_ns(), due;
	int target;

	hl_assert_head_locked(h);
	req->call = HL_NODE_NONE;
	req->mode = HLOCK_NL;
	req->convert = false;
	req->quecvt = false;
	req->noqueue = false;
	req->expedite = false;
	req->probe = false;
	req->load = ev->answered && node_answer(h, n, ev->answer, ev->now);
	req->store = false;
	req->later = 0;
	node_basts(h, n, ev->basts, ev->now);
	if (n->probe == HL_PROBE_DONE)
		node_probed(h, n, ev->now);
	if (n->deadlk)
		node_deadlk(h, n, ev->now, wait, g);
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
	if (target >= 0) {
		/* What must change comes first: a probe between stops. */
		n->probe = HL_PROBE_NONE;
		node_ask(h, n, target, req);
		return;
	}
	if (req->call != HL_NODE_NONE || n->busy || !up || !wait)
		return;
	/* The second probe follows the first's answer at once. */
	if (n->probe == HL_PROBE_BETWEEN && node_blocks_remote(h, n)) {
		node_probe(n, req);
		return;
	}
	n->probe = HL_PROBE_NONE;
	if (n->deadlk)
		req->later = n->deadlk_at + wait;
	if (!node_blocks_remote(h, n))
		return;
	due = n->remote_at + wait;
	if (ev->now >= due) {
		node_probe(n, req);
		return;
	}
	if (!req->later || due < req->later)
		req->later = due;
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
 * A try waits for nothing on this node, nor for what another node waits
 * for; it waits for the DLM's answers that come at once (a lock made in
 * NL, a conversion asked with NOQUEUE, one that goes down, a probe), and
 * for a while for a queued one: the one that follows a NOQUEUE refusal,
 * which told the nodes in the way, so that one that only caches a
 * conflicting mode lets go meanwhile.
 *
 * Return: 0 when the try gives up (a conflict on this node, another
 * node's wait, a request the DLM refused at once, nothing to ask); 1 when
 * it waits for an answer that comes at once; 2 when it waits for a queued
 * request, for as long as the host lets tries wait.
 */
int hl_node_try_ok(const struct hl_head *h, const struct hl_node *n,
		   const struct hl_req *req, bool up)
{
	hl_assert_head_locked(h);
	if ((n->failed && node_of_tries(h, n)) ||
	    (!n->busy && hl_node_target(h, n, up) < 0) ||
	    !hl_node_only(h, req))
		return 0;
	/* Queued for more: it may wait for long. */
	if (n->busy && !n->noqueue && !n->unlocking &&
	    !hl_covers(n->mode, n->asked))
		return 2;
	return 1;
}
