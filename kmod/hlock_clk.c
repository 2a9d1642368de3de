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
 * its turn.  Up is a conversion that queues behind the conversions that
 * wait (DLM_LKF_QUECVT), from a lock made in NL at once (DLM_LKF_EXPEDITE),
 * so that the nodes take their turns in order (hlock_node.c says why).
 * While other nodes wait for what this node keeps, it asks now and then
 * whether they still do (a probe: the mode it holds, asked again).  (With
 * the parameter cluster_cache off it goes down at every release instead,
 * so that every lock is a DLM round trip: for comparison.)  What to ask
 * and when is the core's (hlock_node.c): this file calls the DLM, takes
 * its answers in and hands them to the core.

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
 * flight, or whose work is queued or running or due later (@refs), is not
 * freed (hl_cluster_may_free()) until its lockspace is released; leaving
 * the lockspace stops the passes due later first (hl_clk_halt()).  The
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
#include "hlock_cluster.h"
#include "hlock_hooks.h"
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

/* The completion AST: the request in flight ended (lksb.sb_status). */
static void hl_clk_ast(void *arg)
{
	struct hl_clk *c = arg;
	struct hl_cluster *cl = c->cl;

	/*
	 * The section around the queueing: hl_cluster_leave() waits for it
	 * after setting @dead (the DLM calls nothing after the lockspace is
	 * released, which comes later still).  Once @done is set, a pass of
	 * the work that something else queued may take the answer in, and a
	 * reclaim pass find the resource unused: @refs keeps it until this
	 * pass's own work is queued, which keeps it on.  Not a grace period:
	 * the queued work outlives one.
	 */
	atomic_inc(&c->refs);
	/* Counted before the work can see the answer. */
	smp_mb__after_atomic();
	set_bit(0, &c->done);
	/*
	 * Test build: a test holds the callback here (hlock_test.h), out of
	 * the section, as it sleeps; @refs keeps the resource meanwhile.
	 */
	hl_test_stall(HL_TP_AST, c->r->name, c->r->len);
	rcu_read_lock();
	hl_clk_queue(c);
	/* Last touch of @c: the reclaim pass reads @refs with acquire. */
	atomic_dec_return_release(&c->refs);
	hl_cluster_answered(cl);
	rcu_read_unlock();
}

/* The blocking AST: another node waits for @mode. */
static void hl_clk_bast(void *arg, int mode)
{
	struct hl_clk *c = arg;

	if (mode <= HLOCK_NL || mode >= HLOCK_NR_MODES)
		return;
	rcu_read_lock();
	atomic_or(hl_mode_bit(mode), &c->basts);
	atomic_long_inc(&c->cl->basts);
	hl_clk_queue(c);
	rcu_read_unlock();
}

/* How the request in flight ended, for the core. */
static enum hl_node_answer hl_clk_answer(struct hl_clk *c)
{
	int status = c->lksb.sb_status;

	switch (status) {
	case 0:
		return HL_NODE_GRANTED;
	case -DLM_ECANCEL:
		return HL_NODE_CANCELLED;
	case -EAGAIN:
		/* DLM_LKF_NOQUEUE: not now. */
		return HL_NODE_REFUSED;
	case -EDEADLK:
		return HL_NODE_DEADLOCK;
	default:
		if (!c->node.unlocking)
			pr_warn_ratelimited("DLM lock of a resource in lockspace %s: %d\n",
					    c->cl->name, status);
		return HL_NODE_FAILED;
	}
}

/*
 * The DLM refused the request @call of @c at once, with @err (no memory,
 * say): nothing will answer it, so nothing is in flight.  The DLM lock
 * is as it was; the head grants what it covers again after a refused
 * unlock, and no more than it did after a refused conversion.  Every
 * resource's work asks again in HL_RETRY_MS: what waits would otherwise
 * wait for good.  A refused cancel leaves the request to its answer: the
 * request it was for was answered already, or is about to be.
 * Context: process context, no lock held.
 */
static void hl_clk_refused(struct hl_clk *c, unsigned int call, int err)
{
	struct hl_cluster *cl = c->cl;
	struct hl_head *h = &c->r->head;

	if (call == HL_NODE_CANCEL) {
		pr_debug("lockspace %s: a cancel came too late: %d\n",
			 cl->name, err);
		return;
	}
	pr_warn_ratelimited("DLM request in lockspace %s: %d; asking again in %u ms\n",
			    cl->name, err, HL_RETRY_MS);
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
 * A pass is due at hl_clock() time @at: run one then, unless one is due
 * sooner.  Counted in @refs while pending.  Context: process context, no
 * lock held; not once the binding is being left (hl_clk_halt()).
 */
static void hl_clk_later(struct hl_clk *c, u64 at)
{
	u64 now = ktime_get_ns();
	unsigned long delay = at > now ? nsecs_to_jiffies(at - now) + 1 : 0;

	atomic_inc(&c->refs);
	/* Pending already: that one is counted; it goes at the new time. */
	if (mod_delayed_work(c->cl->wq, &c->later, delay))
		atomic_dec(&c->refs);
}

static void hl_clk_later_work(struct work_struct *work)
{
	struct hl_clk *c = container_of(to_delayed_work(work), struct hl_clk,
					later);

	rcu_read_lock();
	hl_clk_queue(c);
	rcu_read_unlock();
	/* Last touch of @c (the reclaim pass reads @refs with acquire). */
	atomic_dec_return_release(&c->refs);
}

/* One pass of hl_clk_work(). */
static void hl_clk_pass(struct hl_clk *c)
{
	struct hl_head *h = &c->r->head;
	struct hl_node_event ev = { };
	struct hl_node_req req;
	struct hl_grants g;
	u32 flags = 0;
	int ret;

	hl_grants_init(&g);
	/*
	 * Test build: a test holds a blocking AST back here, to make a
	 * reclaim pass meet it (hl_cluster_may_free()).
	 */
	if (atomic_read(&c->basts))
		hl_test_stall(HL_TP_BAST, c->r->name, c->r->len);
	hl_head_lock(h);
	/*
	 * The answer first, then the blocking ASTs: every one that came
	 * before the answer is seen with it (the DLM calls them in order,
	 * and both reads are ordered), and the core takes the answer in
	 * first (hlock_node.c).
	 */
	ev.answered = test_and_clear_bit(0, &c->done);
	if (ev.answered)
		ev.answer = hl_clk_answer(c);
	ev.basts = atomic_xchg(&c->basts, 0);
	ev.now = hl_clock();
	WRITE_ONCE(c->passes, c->passes + 1);
	hl_node_pass(h, &c->node, &ev, hl_cluster_up(c->cl),
		     hl_cluster_live(c->cl), &g, &req);
	/* Gone up: the value the last writer left, or that it is lost. */
	if (req.load)
		hl_lvb_load(c->r, c->lksb.sb_flags & DLM_SBF_VALNOTVALID ?
				  NULL : (const u8 *)c->lvb);
	/* Going down from SIX or X, or away: publish this node's value. */
	if (req.store)
		hl_lvb_store(c->r, c->lvb);
	hl_head_unlock(h);
	hl_grants_continue(&g);
	/* After the continuations: a try-lock looks at its slot on waking. */
	wake_up_all(&c->answer_wq);
	if (req.later && hl_cluster_up(c->cl))
		hl_clk_later(c, req.later);
	if (req.call == HL_NODE_NONE)
		return;
	/* A cancel ends the request in flight; its AST answers both. */
	if (req.call != HL_NODE_CANCEL)
		hl_cluster_sent(c->cl);
	/*
	 * Every request carries the value block, probes too, though the
	 * value a probe moves is the one the DLM has already (it writes back
	 * what its up read, or reads what is there): the DLM keeps the flags
	 * of a lock's last request, and invalidates the value of a node
	 * that died in SIX or X only if they have DLM_LKF_VALBLK.
	 */
	flags |= DLM_LKF_VALBLK;
	if (req.convert)
		flags |= DLM_LKF_CONVERT;
	if (req.quecvt)
		flags |= DLM_LKF_QUECVT;
	if (req.noqueue)
		flags |= DLM_LKF_NOQUEUE | DLM_LKF_NOQUEUEBAST;
	if (req.expedite)
		flags |= DLM_LKF_EXPEDITE;
	pr_debug("lockspace %s, resource %*pE: %s %s (flags %#x)\n",
		 c->cl->name, c->namelen, c->name,
		 req.call == HL_NODE_LOCK ? "lock" :
		 req.call == HL_NODE_CANCEL ? "cancel" : "unlock",
		 req.call == HL_NODE_LOCK ? hl_mode_name(req.mode) : "", flags);
	/* Test build: refused at once; not a probe, which no call waits for. */
	if (req.call != HL_NODE_CANCEL && !req.probe && hl_test_dlm_failed())
		ret = -ENOMEM;
	else if (req.call == HL_NODE_LOCK)
		ret = (*hl_dlm.lock)(c->cl->ls, req.mode, &c->lksb, flags,
				     c->name, c->namelen, 0, hl_clk_ast, c,
				     hl_clk_bast);
	else if (req.call == HL_NODE_UNLOCK)
		ret = (*hl_dlm.unlock)(c->cl->ls, c->lksb.sb_lkid,
				       DLM_LKF_VALBLK, &c->lksb, c);
	else
		/* The request's own completion AST says how it ended. */
		ret = (*hl_dlm.unlock)(c->cl->ls, c->lksb.sb_lkid,
				       DLM_LKF_CANCEL, &c->lksb, c);
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
 *	DLM lock wait for the DLM.
 * @f: The locker, its lock held; its operation waits.
 * @g: Lockers that the caller's grant passes granted, run here.
 * @deadline: When the try gives up if it waits for a queued request: 0
 *	until it first does, then set (hl_cluster_try_deadline()).
 *
 * A try-lock in a cluster space must not fail only because this node does
 * not hold the resource yet, nor because another node only caches it: the
 * conversion it needs is asked with DLM_LKF_NOQUEUE, which the DLM grants
 * or refuses at once, telling the nodes in its way (NOQUEUEBAST); after a
 * refusal it is asked again, queued, and the try waits for that for
 * cluster_try_ms at most: a node that holds nothing there lets go
 * meanwhile, one that holds on makes the try give up.  Drops and retakes
 * the locker lock.
 *
 * Context: process context, the locker lock held; may sleep.
 * Return: 1 when it waited (look at the slot again), 0 when the try gives
 * up (a conflict on this node, another node's wait, the deadline),
 * -EINTR on a signal, -ENOLINK when this node lost the cluster meanwhile.
 */
int hl_cluster_try_wait(struct hl_file *f, struct hl_grants *g,
			ktime_t *deadline)
{
	struct hl_op *op = &f->lk.op;
	unsigned long passes;
	unsigned int seen;
	struct hl_head *h;
	struct hl_req *req;
	struct hl_clk *c;
	ktime_t left = KTIME_MAX;
	long ret;
	int ok;

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
	ok = req->state == HL_GRANTED ? 1 :
	     hl_node_try_ok(h, &c->node, req, hl_cluster_up(c->cl));
	passes = c->passes;
	hl_head_unlock(h);
	if (!ok)
		return 0;
	/* A queued request: for cluster_try_ms at most, from the first. */
	if (ok == 2) {
		if (!*deadline)
			*deadline = hl_cluster_try_deadline();
		left = ktime_sub(*deadline, ktime_get());
		if (left <= 0)
			return 0;
	}
	seen = f->gen;
	hl_file_unlock(f);
	hl_grants_continue(g);
	/*
	 * Until the level is granted (the DLM's grant runs the grant pass
	 * before it wakes us), or the work passed again (the DLM answered,
	 * or what it waits for changed: look again), or the deadline.  The
	 * request stays: only this call may withdraw the operation.
	 */
#define hl_try_woken() (READ_ONCE(req->state) == HL_GRANTED ||	\
			READ_ONCE(f->gen) != seen ||			\
			READ_ONCE(c->passes) != passes ||		\
			READ_ONCE(c->cl->lost))
	if (left == KTIME_MAX)
		ret = wait_event_interruptible(c->answer_wq, hl_try_woken());
	else
		ret = wait_event_interruptible_hrtimeout(c->answer_wq,
							 hl_try_woken(), left);
#undef hl_try_woken
	mutex_lock(&f->lock);
	if (ret == -ERESTARTSYS)
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
	INIT_DELAYED_WORK(&c->later, hl_clk_later_work);
	init_waitqueue_head(&c->answer_wq);
	atomic_set(&c->basts, 0);
	atomic_set(&c->refs, 0);
	hl_node_init(&r->head, &c->node);
	c->r = r;
	c->cl = cl;
	c->lksb.sb_lvbptr = c->lvb;
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
	if (c->node.busy || atomic_read_acquire(&c->refs))
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

/*
 * A resource of a space being left: its pass due later will not come
 * (none is made due from now on).  Context: the walk's RCU read section.
 */
void hl_clk_halt(struct hl_res *r, void *arg)
{
	struct hl_clk *c = r->clk;

	if (!c || c->cl != arg)
		return;
	/* Cancelled while pending: its count goes (one running ends itself). */
	if (cancel_delayed_work(&c->later))
		atomic_dec(&c->refs);
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

/* The host's hooks: cluster heads: this node's DLM lock on them. */
const struct hl_hooks hl_clk_hooks = {
	.node_update = hl_clk_update,
	.node_lost = hl_cluster_head_lost,
};
