// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: one resource's DLM lock in a cluster lock space (hlock_cluster.c
 * binds the space).
 *
 * Node-level caching, as GFS2's glocks do it: each resource of the space
 * has one DLM lock per node (struct hl_clk), in the mode that covers what
 * this node's lockers hold and want.  The core grants a request only when
 * that mode covers it (hl_head's node_mode); when it does not, the request
 * waits in the queue like any other, and the DLM lock converts up.  The
 * DLM lock is kept after the last local release, so relocking costs no
 * round trip, until a blocking AST says that another node waits: from
 * then on new local requests that conflict with it wait too (hl_head's
 * remote_mask), and once the local holders allow it the DLM lock goes
 * down to what they still hold, NL when nothing, and the other node gets
 * its turn.  Up from NL is a new DLM lock in the other of two slots (the
 * NL one is dropped once it is asked), so that it queues behind the
 * nodes that wait (hlock_node.c says why).  (With the parameter
 * cluster_cache off it goes down at every release instead, so that every
 * lock is a DLM round trip: for comparison.)  What to ask and when is the
 * core's (hlock_node.c): this file calls the DLM, takes its answers in
 * and hands them to the core.
 *
 * DLM modes NL, CR, CW, PR, PW and EX are hlock's NL, IS, IX, S, SIX and X,
 * with the same numbers and the same compatibility matrix.
 *
 * Resource names: DLM names are at most DLM_RESNAME_MAXLEN (64) bytes.  A
 * resource's name is a byte saying how it was made, then either its path
 * as it is ('p', paths of up to 63 bytes; the root is "p" alone) or the
 * SHA-256 of the path ('h', 32 bytes).  The two kinds cannot meet (their
 * first bytes differ), two paths of one kind have the same name only if
 * they are equal or their digests collide, and every node computes the
 * same name for the same path.
 *
 * Context of the DLM's callbacks: they must not sleep and may run in
 * softirq.  They only note what happened and queue the resource's work
 * (hl_clk_work()), which does the rest in process context: dlm_lock()
 * may sleep, and continuing the lockers it grants takes their mutexes.
 *
 * Locking: a resource's hl_clk is protected by its head lock, but for
 * @done and @basts, which the callbacks set atomically.  One work item
 * per resource, and a workqueue does not run one item twice at once, so
 * there is at most one DLM request in flight per resource (@busy).
 *
 * Lifetimes: a resource whose node has a DLM lock on it, or a request in
 * flight, or whose work is queued or running (@refs), is not freed
 * (hl_cluster_may_free()) until its lockspace is released.  The
 * completion AST holds @refs from before it sets @done, the answer the
 * work takes in, until its work is queued, which holds them on until that
 * pass ends: the work may answer the request and a reclaim pass look at
 * the resource before the callback is done with its hl_clk.  The binding
 * outlives every callback (hl_cluster_leave()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/sha2.h>
#include <linux/slab.h>

#include "hlock_dlm.h"
#include "hlock_clk.h"
#include "hlock_locker.h"
#include "hlock_lvb.h"
#include "hlock_test.h"

/*
 * hl_clk_update() - The core's hook (hl_node_update()): the needs of a
 * cluster head may have changed.  Context: head lock.
 */
void hl_clk_update(struct hl_head *h)
{
	struct hl_clk *c = hl_res_of(h)->clk;
	bool up = hl_cluster_up(c->cl);

	lockdep_assert_held(&h->lock);
	if (hl_node_target(h, &c->node, up) >= 0 ||
	    hl_node_cancel_due(h, &c->node, hl_cluster_live(c->cl)))
		hl_clk_queue(c);
}

/* The completion AST: a request of a slot's lock ended (lksb.sb_status). */
static void hl_clk_ast(void *arg)
{
	struct hl_clk_slot *s = arg;
	struct hl_clk *c = s->c;
	struct hl_cluster *cl = c->cl;

	/*
	 * The section: hl_cluster_leave() waits for it after setting @dead.
	 * Once @done is set, a pass of the work that something else queued
	 * may take the answer in, and a reclaim pass find the resource
	 * unused: @refs keeps it until this pass's own work is queued, which
	 * keeps it on.  Not a grace period: the queued work outlives one.
	 */
	rcu_read_lock();
	atomic_inc(&c->refs);
	/* Counted before the work can see the answer. */
	smp_mb__after_atomic();
	set_bit(s - c->slot, &c->done);
	/* Test build: a test holds the callback here (hlock_test.h). */
	hl_test_stall(HL_TP_AST, c->r->name, c->r->len);
	hl_clk_queue(c);
	/* Last touch of @c: the reclaim pass reads @refs with acquire. */
	atomic_dec_return_release(&c->refs);
	hl_cluster_answered(cl);
	rcu_read_unlock();
}

/* The blocking AST: another node waits for @mode. */
static void hl_clk_bast(void *arg, int mode)
{
	struct hl_clk_slot *s = arg;
	struct hl_clk *c = s->c;

	if (mode <= HLOCK_NL || mode >= HLOCK_NR_MODES)
		return;
	rcu_read_lock();
	atomic_or(hl_mode_bit(mode), &c->basts);
	atomic_long_inc(&c->cl->basts);
	hl_clk_queue(c);
	rcu_read_unlock();
}

/* The request in flight ended: take in its result.  Context: head lock. */
static void hl_clk_result(struct hl_clk *c, struct hl_head *h)
{
	struct dlm_lksb *lksb = &c->slot[c->node.slot].lksb;
	int status = lksb->sb_status;
	enum hl_node_answer a;

	switch (status) {
	case 0:
		a = HL_NODE_GRANTED;
		break;
	case -DLM_ECANCEL:
		a = HL_NODE_CANCELLED;
		break;
	case -EAGAIN:
		/* DLM_LKF_NOQUEUE: not now. */
		a = HL_NODE_REFUSED;
		break;
	case -EDEADLK:
		a = HL_NODE_DEADLOCK;
		break;
	default:
		if (!c->node.unlocking)
			pr_warn_ratelimited("DLM lock of a resource in lockspace %s: %d\n",
					    c->cl->name, status);
		a = HL_NODE_FAILED;
		break;
	}
	if (hl_node_answer(h, &c->node, a))
		hl_lvb_load(c->r, lksb->sb_flags & DLM_SBF_VALNOTVALID ?
				  NULL : (const u8 *)c->lvb);
}

/*
 * The DLM refused the request @call of @c at once, with @err (no memory,
 * say): nothing will answer it, so nothing is in flight.  The DLM lock
 * is as it was; the head grants what it covers again after a refused
 * unlock, and no more than it did after a refused conversion.  The
 * try-locks it was for give up.  Every resource's work asks again in
 * HL_RETRY_MS: what waits would otherwise wait for good.  A refused
 * cancel leaves the request to its answer.
 * Context: process context, no lock held.
 */
static void hl_clk_refused(struct hl_clk *c, unsigned int call, int err)
{
	struct hl_cluster *cl = c->cl;
	struct hl_head *h = &c->r->head;

	pr_warn_ratelimited("DLM request in lockspace %s: %d; asking again in %u ms\n",
			    cl->name, err, HL_RETRY_MS);
	if (call == HL_NODE_CANCEL)
		return;
	hl_cluster_answered(cl);
	hl_head_lock(h);
	hl_node_failed(h, &c->node);
	WRITE_ONCE(c->passes, c->passes + 1);
	hl_head_unlock(h);
	wake_up_all(&c->answer_wq);
	if (hl_cluster_up(cl))
		queue_delayed_work(system_wq, &cl->resume_work,
				   msecs_to_jiffies(HL_RETRY_MS));
}

/*
 * The unlock of hl_clk_drop() ended with @status: -DLM_EUNLOCK, or it
 * failed and the NL lock stays until the lockspace goes.  Context: head
 * lock.
 */
static void hl_clk_dropped(struct hl_clk *c, struct hl_head *h, int status)
{
	if (status != -DLM_EUNLOCK)
		pr_warn_ratelimited("NL lock of a resource in lockspace %s stays: %d\n",
				    c->cl->name, status);
	hl_node_dropped(h, &c->node);
}

/*
 * Unlock the NL lock in @s, which the lock granted in the other slot
 * replaces.  Context: process context, no lock held.
 */
static void hl_clk_drop(struct hl_clk *c, struct hl_clk_slot *s)
{
	struct hl_head *h = &c->r->head;
	int ret;

	hl_cluster_sent(c->cl);
	ret = (*hl_dlm.unlock)(c->cl->ls, s->lksb.sb_lkid, 0, &s->lksb, s);
	if (!ret)
		return;
	hl_cluster_answered(c->cl);
	hl_head_lock(h);
	hl_clk_dropped(c, h, ret);
	hl_head_unlock(h);
	hl_clk_queue(c);
}

/* One pass of hl_clk_work(). */
static void hl_clk_pass(struct hl_clk *c)
{
	struct hl_head *h = &c->r->head;
	struct hl_node_req req;
	struct hl_clk_slot *s;
	struct hl_grants g;
	unsigned int basts;
	int ret;
	u32 flags = DLM_LKF_VALBLK;

	hl_grants_init(&g);
	/*
	 * Test build: a test holds a blocking AST back here, to make a
	 * reclaim pass meet it (hl_cluster_may_free()).
	 */
	if (atomic_read(&c->basts))
		hl_test_stall(HL_TP_BAST, c->r->name, c->r->len);
	hl_head_lock(h);
	/* The NL lock a new lock replaced is gone. */
	if (test_and_clear_bit(!c->node.slot, &c->done))
		hl_clk_dropped(c, h, c->slot[!c->node.slot].lksb.sb_status);
	if (test_and_clear_bit(c->node.slot, &c->done))
		hl_clk_result(c, h);
	WRITE_ONCE(c->passes, c->passes + 1);
	basts = atomic_xchg(&c->basts, 0);
	hl_node_pass(h, &c->node, basts, hl_cluster_up(c->cl),
		     hl_cluster_live(c->cl), &g, &req);
	/* Going down from SIX or X, or away: publish this node's value. */
	if (req.store)
		hl_lvb_store(c->r, c->lvb);
	if (req.convert)
		flags |= DLM_LKF_CONVERT;
	if (req.noqueue)
		flags |= DLM_LKF_NOQUEUE;
	hl_head_unlock(h);
	hl_grants_continue(&g);
	/* After the continuations: a try-lock looks at its slot on waking. */
	wake_up_all(&c->answer_wq);
	/* A cancel ends the request in flight; its AST answers both. */
	if (req.call == HL_NODE_LOCK || req.call == HL_NODE_UNLOCK)
		hl_cluster_sent(c->cl);
	if (req.call != HL_NODE_NONE)
		pr_debug("lockspace %s, resource %*pE: %s %s (flags %#x)\n",
			 c->cl->name, c->namelen, c->name,
			 req.call == HL_NODE_LOCK ? "lock" :
			 req.call == HL_NODE_CANCEL ? "cancel" : "unlock",
			 req.call == HL_NODE_LOCK ? hl_mode_name(req.mode) : "",
			 flags);
	/* The new lock was granted: the NL lock it replaces goes. */
	if (req.drop)
		hl_clk_drop(c, &c->slot[!req.slot]);
	if (req.call == HL_NODE_NONE)
		return;
	s = &c->slot[req.slot];
	if (req.call != HL_NODE_CANCEL && hl_test_dlm_failed())
		ret = -ENOMEM;
	else if (req.call == HL_NODE_LOCK)
		ret = (*hl_dlm.lock)(c->cl->ls, req.mode, &s->lksb, flags,
				     c->name, c->namelen, 0, hl_clk_ast, s,
				     hl_clk_bast);
	else if (req.call == HL_NODE_UNLOCK)
		ret = (*hl_dlm.unlock)(c->cl->ls, s->lksb.sb_lkid,
				       DLM_LKF_VALBLK, &s->lksb, s);
	else
		/* The request's own completion AST says how it ended. */
		ret = (*hl_dlm.unlock)(c->cl->ls, s->lksb.sb_lkid,
				       DLM_LKF_CANCEL, &s->lksb, s);
	if (ret)
		hl_clk_refused(c, req.call, ret);
}

static void hl_clk_work(struct work_struct *work)
{
	struct hl_clk *c = container_of(work, struct hl_clk, work);

	hl_clk_pass(c);
	/*
	 * Last touch of @c: from here on a reclaim pass may free it (it
	 * reads @refs with acquire).
	 */
	atomic_dec_return_release(&c->refs);
}

static void hl_clk_name(struct hl_clk *c, const char *path, unsigned int len)
{
	if (len + 1 <= DLM_RESNAME_MAXLEN) {
		c->name[0] = HL_NAME_PATH;
		memcpy(c->name + 1, path, len);
		c->namelen = len + 1;
		return;
	}
	c->name[0] = HL_NAME_HASH;
	sha256(path, len, c->name + 1);
	c->namelen = 1 + SHA256_DIGEST_SIZE;
}

/**
 * hl_cluster_try_wait() - Let a try-lock that waits only for this node's
 *	DLM lock wait for the DLM's answer.
 * @f: The locker, its lock held; its operation waits.
 * @g: Lockers that the caller's grant passes granted, run here.
 *
 * A try-lock in a cluster space must not fail only because this node does
 * not hold the resource yet: the conversion it needs is asked with
 * DLM_LKF_NOQUEUE, which the DLM grants or refuses at once.  Drops and
 * retakes the locker lock.
 *
 * Context: process context, the locker lock held; may sleep.
 * Return: 1 when it waited (look at the slot again), 0 when the try gives
 * up (a conflict on this node, or the DLM refused), -EINTR on a signal,
 * -ENOLINK when this node lost the cluster meanwhile.
 */
int hl_cluster_try_wait(struct hl_file *f, struct hl_grants *g)
{
	struct hl_op *op = &f->lk.op;
	unsigned long passes;
	unsigned int seen;
	struct hl_head *h;
	struct hl_req *req;
	struct hl_clk *c;
	bool ok;
	int ret;

	lockdep_assert_held(&f->lock);
	if (op->state != HL_OP_WAITING || f->tk.pending)
		return 0;
	/* The operation holds its waiting level: the head stays. */
	h = op->heads[op->level];
	req = op->reqs[op->level];
	c = hl_res_of(h)->clk;
	if (!c)
		return 0;
	hl_head_lock(h);
	ok = req->state == HL_GRANTED ||
	     hl_node_try_ok(h, &c->node, req, hl_cluster_up(c->cl));
	passes = c->passes;
	hl_head_unlock(h);
	if (!ok)
		return 0;
	seen = f->gen;
	hl_file_unlock(f);
	hl_grants_run(g);
	/*
	 * Until the level is granted (the DLM's grant runs the grant pass
	 * before it wakes us), or the work passed again (the DLM answered,
	 * or refused, or what it waits for changed: look again).  The
	 * request stays: only this call may withdraw the operation.
	 */
	ret = wait_event_interruptible(c->answer_wq,
				       READ_ONCE(req->state) == HL_GRANTED ||
				       READ_ONCE(f->gen) != seen ||
				       READ_ONCE(c->passes) != passes ||
				       READ_ONCE(c->cl->lost));
	mutex_lock(&f->lock);
	if (ret)
		return -EINTR;
	/* Granted first, or the node lost the cluster: the try gives up. */
	return READ_ONCE(c->cl->lost) && READ_ONCE(req->state) != HL_GRANTED ?
	       -ENOLINK : 1;
}

/**
 * hl_cluster_res_init() - Make a new resource of a cluster space one.
 * @r: The resource, not yet visible to anyone.
 * @cl: The binding of its space.
 * @path: Its whole path (empty for the root).
 * @len: Bytes of @path.
 *
 * Context: process context, may sleep.
 * Return: 0 or -ENOMEM.
 */
int hl_cluster_res_init(struct hl_res *r, struct hl_cluster *cl,
			const char *path, unsigned int len)
{
	struct hl_clk *c;

	/* The caller's error path frees what was allocated (hl_res_free()). */
	if (hl_lvb_prepare(r))
		return -ENOMEM;
	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return -ENOMEM;
	INIT_WORK(&c->work, hl_clk_work);
	init_waitqueue_head(&c->answer_wq);
	atomic_set(&c->basts, 0);
	atomic_set(&c->refs, 0);
	hl_node_init(&r->head, &c->node);
	c->r = r;
	c->cl = cl;
	c->slot[0].c = c;
	c->slot[1].c = c;
	c->slot[0].lksb.sb_lvbptr = c->lvb;
	c->slot[1].lksb.sb_lvbptr = c->lvb;
	hl_clk_name(c, path, len);
	if (!len)
		cl->root = r;
	r->clk = c;
	return 0;
}

/**
 * hl_cluster_of() - The binding of a cluster resource's space.
 * @r: A resource.
 *
 * Return: the binding, or NULL when @r is not in a cluster space.
 */
struct hl_cluster *hl_cluster_of(struct hl_res *r)
{
	return r->clk ? r->clk->cl : NULL;
}

/**
 * hl_cluster_may_free() - Whether an unused cluster resource may go.
 * @r: The resource, unused as far as the core knows.
 *
 * Not while this node has a DLM lock on it, or a request in flight, until
 * the lockspace is released: the first call starts its unlock, and a
 * later one (the next reclaim pass) lets it go.
 *
 * Context: head lock of @r, in a live space or an RCU read-side section
 * (hl_cluster_queue()).
 * Return: true when it may be freed.
 */
bool hl_cluster_may_free(struct hl_res *r)
{
	struct hl_clk *c = r->clk;

	lockdep_assert_held(&r->head.lock);
	/* Released: no callback can come for it any more. */
	if (!c || READ_ONCE(c->cl->released))
		return true;
	/*
	 * A callback may still come: for the answer, or for the lock; or
	 * one is still at it, or the work is.
	 */
	if (c->node.busy || c->node.drop || atomic_read_acquire(&c->refs))
		return false;
	if (!c->node.exists)
		return true;
	/*
	 * dlm_unlock() may sleep: the work calls it.  Not once the binding
	 * ends, or while this node lost the cluster: the lock then stays
	 * until the lockspace is released.
	 */
	if (hl_node_want_unlock(&r->head, &c->node, hl_cluster_up(c->cl)))
		hl_clk_queue(c);
	return false;
}

/**
 * hl_cluster_rec() - What a lock record says of a resource's DLM lock.
 * @h: The head of the resource.
 * @node_mode: Set to the mode this node holds from the DLM there.
 *
 * Context: head lock of @h.
 * Return: HLOCK_REC_CLUSTER and HLOCK_REC_REMOTE_WAIT as they stand (0,
 * and @node_mode untouched, outside a cluster space).
 */
unsigned int hl_cluster_rec(struct hl_head *h, u32 *node_mode)
{
	struct hl_clk *c = hl_res_of(h)->clk;

	lockdep_assert_held(&h->lock);
	if (!c)
		return 0;
	*node_mode = c->node.mode;
	return HLOCK_REC_CLUSTER | (h->remote_mask ? HLOCK_REC_REMOTE_WAIT : 0);
}

/**
 * hl_cluster_res_free() - Free what a resource had of a cluster space.
 * @r: The resource, unreachable.
 */
void hl_cluster_res_free(struct hl_res *r)
{
	kfree(r->clk);
	r->clk = NULL;
}

/**
 * hl_cluster_head_lost() - Whether this node lost the cluster of a cluster head.
 * @h: The head.
 *
 * Context: head lock.
 * Return: true once hl_cluster_lost_work() declared it.
 */
bool hl_cluster_head_lost(const struct hl_head *h)
{
	return READ_ONCE(hl_res_of(h)->clk->cl->lost);
}

/* One resource of a lost space: its waiters fail, its holders are told. */
void hl_clk_lost(struct hl_res *r, void *arg)
{
	struct hl_lost_walk *w = arg;
	struct hl_clk *c = r->clk;

	if (!c || c->cl != w->cl)
		return;
	hl_head_lock(&r->head);
	hl_node_lost_notify(&r->head, &w->g);
	hl_head_unlock(&r->head);
	/* Try-locks waiting for the DLM's answer look again. */
	wake_up_all(&c->answer_wq);
}

/* After a recovery: let every resource's work make what it held back. */
void hl_clk_resume(struct hl_res *r, void *arg)
{
	struct hl_cluster *cl = arg;
	struct hl_clk *c = r->clk;

	if (!c || c->cl != cl)
		return;
	hl_head_lock(&r->head);
	/* A dead one may be freed: its work must not be queued again. */
	if (!r->head.dead)
		hl_clk_queue(c);
	hl_head_unlock(&r->head);
}
