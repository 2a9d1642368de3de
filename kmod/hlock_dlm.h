/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock: what the two halves of the cluster glue share.  hlock_cluster.c
 * binds a lock space to a DLM lockspace (join, leave, recovery, the
 * fencing token counter, the binding ioctl); hlock_clk.c keeps each
 * resource's DLM lock.  Neither is seen by the rest of the module, which
 * calls what hlock_cluster.h and hlock_clk.h declare.
 */
#ifndef _HLOCK_DLM_H
#define _HLOCK_DLM_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/dlm.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "hlock_internal.h"

/* Kinds of DLM resource names (their first byte). */
#define HL_NAME_PATH		'p'
#define HL_NAME_HASH		'h'
/* The fencing token counter's resource, "t" alone. */
#define HL_NAME_TOKEN		't'

/* Tokens a node reserves in the counter's value at a time. */
#define HL_TOKEN_BATCH		1024

/*
 * After the DLM refused a request synchronously (dlm_lock() or
 * dlm_unlock() returned an error, such as -ENOMEM), every resource's work
 * asks again this long after.
 */
#define HL_RETRY_MS		100

/* The DLM's entry points, taken when binding: hlock does not need dlm.ko. */
struct hl_dlm_ops {
	typeof(dlm_new_lockspace) *new_lockspace;
	typeof(dlm_release_lockspace) *release_lockspace;
	typeof(dlm_lock) *lock;
	typeof(dlm_unlock) *unlock;
};

/**
 * struct hl_ctok - This node's DLM lock on the lockspace's fencing token
 *	counter (see hl_cluster_token()).
 * @lksb: The DLM's status block of the lock; its value block is @lvb.
 * @done: Completed by the completion AST of the request in flight.
 * @work: Gives the counter back when another node wants it.
 * @lock: Serialises draws and the work; held across DLM round trips.
 * @pending: A request is in flight (@done not yet waited for).
 * @mode: The mode held (HLOCK_NL or HLOCK_X), as last answered; HLOCK_NL
 *	too before the first draw, while there is no lock.
 * @asked: The mode of the request in flight.
 * @next: The next token to give, while @mode is HLOCK_X.
 * @ceiling: The greatest token reserved in the counter's value.
 * @lvb: The counter's value block: the last token reserved, little-endian.
 */
struct hl_ctok {
	struct dlm_lksb lksb;
	struct completion done;
	struct work_struct work;
	struct mutex lock;
	bool pending;
	unsigned char mode;
	unsigned char asked;
	u64 next;
	u64 ceiling;
	__le64 lvb[HLOCK_LVB_LEN / sizeof(__le64)];
};

/**
 * struct hl_cluster - A lock space's binding to a DLM lockspace.
 * @ls: The DLM lockspace.
 * @wq: Where the resources' work runs.
 * @dead: Set once the binding ends: no more DLM calls, no work queued by
 *	a callback (which looks at it in an RCU read-side section).
 * @released: The lockspace was released: no callback comes any more, and
 *	the resources may go whatever the DLM had of them.
 * @leaving: Set as the binding starts to end: no new DLM request, but
 *	the answers to those in flight are still taken in, and a request
 *	nobody wants any more is still cancelled.
 * @inflight: DLM requests (locks, conversions, unlocks) not answered yet
 *	by their completion AST.
 * @idle_wq: Where hl_cluster_leave() waits for @inflight to drop to 0.
 * @requests: DLM requests made (locks, conversions, unlocks).
 * @basts: Blocking ASTs received.
 * @tok: The fencing token counter.
 * @root: The root of its space (its other resources are in the table).
 * @stopped: The DLM stopped the lockspace for a recovery (recover_prep):
 *	a DLM call would wait until it ends, so the works make none.
 * @lost: The lockspace stayed stopped for longer than cluster_grace_ms:
 *	this node lost the cluster (hl_cluster_lost_work()).  For good.
 * @lost_work: Declares @lost once the grace is over.
 * @resume_work: Has every resource's work look again once a recovery
 *	ended (recover_done), or a while after the DLM refused a request
 *	synchronously (HL_RETRY_MS).
 * @leave_node: In hl_leaving while hl_cluster_leave() runs.
 * @name: The lockspace's name.
 */
struct hl_cluster {
	dlm_lockspace_t *ls;
	struct workqueue_struct *wq;
	bool dead;
	bool released;
	bool leaving;
	atomic_t inflight;
	wait_queue_head_t idle_wq;
	atomic_long_t requests;
	atomic_long_t basts;
	struct hl_ctok tok;
	struct hl_res *root;
	bool stopped;
	bool lost;
	struct delayed_work lost_work;
	struct delayed_work resume_work;
	struct list_head leave_node;
	char name[DLM_LOCKSPACE_LEN + 1];
};

/**
 * struct hl_clk - This node's DLM lock on one resource of a cluster space.
 * @lksb: The DLM's status block of the lock; its value block is @lvb.
 * @work: Does what a callback or the core asked for (hl_clk_work()).
 * @later: Runs @work when a pass asked to be looked at later (a probe of
 *	other nodes' waits, hlock_node.c), counted in @refs while pending.
 * @r: The resource.
 * @cl: Its space's binding.
 * @done: Bit 0 set by the completion AST of the request in flight.
 * @basts: Modes (bits) of the blocking ASTs not yet looked at.
 * @refs: Passes of @work queued or running, @later pending, and
 *	completion ASTs between setting @done and queueing @work: while not
 *	0, the resource stays (hl_cluster_may_free()).
 * @node: The lock as the core sees it, and what it asks of the DLM next
 *	(hlock_node.c): this file only reads it (@node.exists: @lksb has a
 *	valid lock id).
 * @passes: Passes of the work: a try-lock waiting for an answer looks
 *	again after each (the answer, or a change that makes it moot).
 * @answer_wq: Where try-locks wait for the answer.
 * @namelen: Bytes of @name.
 * @name: The DLM resource name (see the top of the file).
 * @lvb: The lock value block the DLM reads and writes (every request but
 *	a probe has DLM_LKF_VALBLK): the resource's value, copied in before
 *	this node goes down from SIX or X, out after it goes up from less.
 */
struct hl_clk {
	struct dlm_lksb lksb;
	struct work_struct work;
	struct delayed_work later;
	struct hl_res *r;
	struct hl_cluster *cl;
	unsigned long done;
	atomic_t basts;
	atomic_t refs;
	struct hl_node node;
	unsigned long passes;
	wait_queue_head_t answer_wq;
	unsigned char namelen;
	char name[DLM_RESNAME_MAXLEN];
	char lvb[HLOCK_LVB_LEN];
};

/* What hl_cluster_lost_work() walks the resources with. */
struct hl_lost_walk {
	struct hl_cluster *cl;
	struct hl_grants g;
};

/* Whether the DLM may be called for @cl now. */
static inline bool hl_cluster_live(const struct hl_cluster *cl)
{
	return !READ_ONCE(cl->dead) && !READ_ONCE(cl->stopped) &&
	       !READ_ONCE(cl->lost);
}

/* Whether a new DLM request may be made for @cl now. */
static inline bool hl_cluster_up(const struct hl_cluster *cl)
{
	return hl_cluster_live(cl) && !READ_ONCE(cl->leaving);
}

/* A DLM request for @cl goes out. */
static inline void hl_cluster_sent(struct hl_cluster *cl)
{
	atomic_long_inc(&cl->requests);
	atomic_inc(&cl->inflight);
}

/* A DLM request for @cl was answered, or never went out.  Any context. */
static inline void hl_cluster_answered(struct hl_cluster *cl)
{
	if (atomic_dec_and_test(&cl->inflight))
		wake_up(&cl->idle_wq);
}

/*
 * Queue @work on @cl's workqueue unless the binding ends: never into
 * hl_cluster_leave()'s drain.  Context: an RCU read-side section, which
 * hl_cluster_leave() waits for after setting @dead, or the head lock of a
 * resource of a live space.
 */
static inline void hl_cluster_queue(struct hl_cluster *cl,
				    struct work_struct *work)
{
	if (!READ_ONCE(cl->dead))
		queue_work(cl->wq, work);
}

/*
 * Queue @c's work, unless the binding ends, counted in @c->refs until
 * the pass ends.  Context: as hl_cluster_queue().
 */
static inline void hl_clk_queue(struct hl_clk *c)
{
	struct hl_cluster *cl = c->cl;

	if (READ_ONCE(cl->dead))
		return;
	atomic_inc(&c->refs);
	/* Pending already: the pass to come is counted. */
	if (!queue_work(cl->wq, &c->work))
		atomic_dec(&c->refs);
}

/* The DLM's entry points; guarded by hlock_cluster.c's hl_dlm_lock. */
extern struct hl_dlm_ops hl_dlm;

/*
 * hlock_clk.c: a resource of a lost space; a resource after a recovery; a
 * resource of a space being left, whose later passes go.
 */
void hl_clk_lost(struct hl_res *r, void *arg);
void hl_clk_resume(struct hl_res *r, void *arg);
void hl_clk_halt(struct hl_res *r, void *arg);

#endif /* _HLOCK_DLM_H */
