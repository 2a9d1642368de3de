// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: the kernel as the core's host (hlock_host.h).
 *
 * Every function the grant logic calls outside itself is defined here and
 * nowhere else: the kernel's clocks, memory and locks, the glue's lookup of
 * resources, and one named hook per event a feature acts on, each handed
 * to that feature.  Reading down this file says what the core can make the
 * rest of the module do:
 *
 *   resources        hl_head_lookup(), hl_head_create(), hl_req_free(),
 *                    hl_head_has_children(), hl_part_next()  (hlock_space.c)
 *   queues           hl_waitq_refill(), hl_waitq_free()      (hlock_space.c)
 *   continuations    hl_grant_notify(), hl_op_done(),         (hlock_locker.c's
 *                    hl_grants_continue()                      stage)
 *   statistics       hl_note_*()                              (hlock_stats.c)
 *   leases           hl_wait_claim()                          (hlock_lease.c)
 *   value blocks and events
 *                    hl_lvb_publish(), hl_note_blocking(), hl_note_lost()
 *                                                             (hlock_lvb.c)
 *   the cluster      hl_node_update(), hl_node_lost(),        (hlock_clk.c,
 *                                                             hlock_cluster.c)
 *                    hl_node_caching(), hl_node_probe_ns()
 *   fencing tokens   hl_token_next()
 *   deadlock search  hl_deadlock_detect(), hl_graph_lock()... (hlock_deadlock.c's
 *                    needs: a mutex per space, references, memory)
 */
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "hlock_internal.h"
#include "hlock_clk.h"
#include "hlock_cluster.h"
#include "hlock_lease.h"
#include "hlock_lvb.h"
#include "hlock_main.h"
#include "hlock_ns.h"
#include "hlock_space.h"
#include "hlock_stats.h"
#include "hlock_ticket.h"
#include "hlock_trace.h"

/* The kernel's clocks and the grant policy (hlock_main.c's parameter). */

/**
 * hl_grant_policy() - The grant policy in force.
 *
 * Context: any.
 * Return: HLOCK_POLICY_BATCH or HLOCK_POLICY_FIFO.
 */
unsigned int hl_grant_policy(void)
{
	return READ_ONCE(hl_policy);
}

/**
 * hl_clock() - The clock of grant and wait times.
 *
 * Context: any.
 * Return: CLOCK_MONOTONIC in ns.
 */
u64 hl_clock(void)
{
	return ktime_get_ns();
}

/**
 * hl_clock_coarse() - CLOCK_BOOTTIME as of the last tick.
 *
 * Cheaper (no clocksource read): for how long a lock is held, which the
 * lock table reads against ktime_get_boottime_ns(); never ahead of it.
 * Not ktime_get_coarse_ns(): CLOCK_MONOTONIC's coarse read builds a
 * timespec and normalises it, several times the instructions of a base
 * plus an offset.
 *
 * Context: any.
 * Return: CLOCK_BOOTTIME in ns, at most a tick behind.
 */
u64 hl_clock_coarse(void)
{
	return ktime_get_coarse_boottime_ns();
}

/* Resources: hlock_space.c's table, slabs and per-CPU partitions. */

/* What the last lock call of the locker found (hl_space_gen()). */
unsigned int hl_heads_known(struct hl_locker *lk)
{
	struct hl_file *f = hl_file_of(lk);

	return hl_space_gen() == f->heads_gen ? f->heads_nr : 0;
}

struct hl_head *hl_head_lookup(struct hl_locker *lk, unsigned int level)
{
	if (!level)
		return hl_file_of(lk)->root;
	return hl_space_lookup(lk, level);
}

int hl_head_create(struct hl_locker *lk, unsigned int level)
{
	return hl_space_create(lk, level);
}

void hl_req_free(struct hl_req *req)
{
	hl_space_req_free(req);
}

/*
 * Give a locker spare queues, for the first head its request waits on that
 * has none (struct hl_waitq).  Context: its lock held; may sleep.
 */
int hl_waitq_refill(struct hl_locker *lk)
{
	struct hl_waitq *wq;

	hl_assert_locker_locked(lk);
	if (!hl_locker_waitq_needed(lk))
		return 0;
	wq = hl_waitq_alloc();
	if (!wq)
		return -ENOMEM;
	hl_locker_add_waitq(lk, wq);
	return 0;
}

void hl_waitq_free(struct hl_waitq *wq)
{
	hl_space_waitq_free(wq);
}

/**
 * hl_head_has_children() - Whether resources below @h exist.
 * @h: A resource's head.
 *
 * A child is counted (hl_head_create()) by a locker holding a request on
 * @h, before the child is visible, and uncounted when it is unlinked.
 *
 * Context: @h's head lock held, after hl_head_retire() found it idle.
 * Return: true while @h has children.
 */
bool hl_head_has_children(const struct hl_head *h)
{
	lockdep_assert_held(&h->lock);
	return atomic_read(&hl_res_of(h)->children);
}

/**
 * hl_part_next() - Walk the partitions of a head.
 * @h: A head with partitions.
 * @p: The partition before, or NULL for the first.
 *
 * Return: the next partition (of the next possible CPU), or NULL.
 */
struct hl_part *hl_part_next(struct hl_head *h, struct hl_part *p)
{
	int cpu = cpumask_next(p ? p->cpu : -1, cpu_possible_mask);

	if (cpu >= nr_cpu_ids)
		return NULL;
	return per_cpu_ptr(h->parts, cpu);
}

/* Lockers: their lock, their continuations (hlock_locker.c). */

#ifdef CONFIG_LOCKDEP
/**
 * hl_assert_locker_locked() - The core's check that @lk's lock is held.
 * @lk: The locker.
 */
void hl_assert_locker_locked(const struct hl_locker *lk)
{
	lockdep_assert_held(&container_of(lk, struct hl_file, lk)->lock);
}
#endif

/**
 * hl_grant_notify() - Note a locker whose waiting level was granted.
 * @lk: The locker.
 * @g: Where the granting caller collects them.
 *
 * Context: a head lock held.
 */
void hl_grant_notify(struct hl_locker *lk, struct hl_grants *g)
{
	/* Already due in some caller's list: that continuation will do. */
	if (test_and_set_bit(0, &lk->grant_pending))
		return;
	refcount_inc(&hl_file_of(lk)->ref);
	list_add_tail(&lk->grant_node, &g->lockers);
}

/**
 * hl_grants_continue() - Hand the operations a caller's grant passes
 *	granted back to their lock calls.
 * @g: The lockers hl_grant_notify() collected, if any; empty afterwards.
 *
 * Each goes on in its locker's own stage (hl_file.resume), which also
 * drops the reference hl_grant_notify() took.
 *
 * Context: process context, no hlock lock held; takes each locker's lock.
 */
void hl_grants_continue(struct hl_grants *g)
{
	while (!list_empty(&g->lockers)) {
		struct hl_locker *lk = list_first_entry(&g->lockers,
							struct hl_locker,
							grant_node);
		struct hl_file *f = hl_file_of(lk);

		list_del_init(&lk->grant_node);
		/* From here a new grant queues the locker again. */
		clear_bit(0, &lk->grant_pending);
		/*
		 * Order the clear before the look at the slot the stage makes:
		 * a grant either sees the bit clear and queues the locker
		 * again, or came before, and hl_op_continue() sees it under
		 * the head lock.
		 */
		smp_mb__after_atomic();
		f->resume(f, g);
	}
}

/**
 * hl_file_put() - Drop a reference to a locker.
 * @f: The locker; freed with the last reference.
 */
void hl_file_put(struct hl_file *f)
{
	if (!refcount_dec_and_test(&f->ref))
		return;
	/* Close withdrew its ticket wait and returned its ticket. */
	WARN_ON_ONCE(f->tk.state != HL_TICKET_NONE);
	if (f->lk.index != f->lk.index_inline)
		kvfree(f->lk.index);
	put_pid(rcu_dereference_protected(f->owner, true));
	put_pid(f->proc_owner);
	mutex_destroy(&f->lock);
	hl_ns_put(f->ns);
	kfree(f);
}

/*
 * A waiting operation was granted, or failed.  One granted gets what a
 * grant made at once gets (hl_lock_begin()): its lease, and the slow-wait
 * log.
 */
void hl_op_done(struct hl_locker *lk)
{
	struct hl_file *f = hl_file_of(lk);

	lockdep_assert_held(&f->lock);
	if (lk->op.state == HL_OP_GRANTED) {
		hl_slow_log(f);
		hl_lease_grant(f);
	}
	WRITE_ONCE(f->granted, true);
	hl_slot_changed(f);
}

/**
 * hl_token_next() - Draw the next fencing token of a locker's lock space.
 * @lk: The locker.
 *
 * Context: the locker lock held.
 * Return: a token greater than every one drawn in the space before, or
 * HL_TOKEN_UNDRAWN in a cluster space (hl_file_token() draws it).
 */
u64 hl_token_next(struct hl_locker *lk)
{
	struct hl_file *f = hl_file_of(lk);

	lockdep_assert_held(&f->lock);
	/* A cluster space's tokens come from the DLM, when asked for. */
	if (f->ns->cl)
		return HL_TOKEN_UNDRAWN;
	return atomic64_inc_return(&f->ns->token);
}

/* Statistics, the slow-wait log and tracepoints (hlock_stats.c). */

/*
 * Per run of levels of every lock call: inline here, not handed on.  The
 * levels above the last all count their intent, and every level from
 * HLOCK_LEVEL_OBJECT on counts in one row: the run is counted in a few
 * additions, not two per level.
 */
void hl_note_acquired(struct hl_locker *lk, unsigned int from,
		      unsigned int to, bool waits)
{
	const struct hl_op *op = &lk->op;
	struct hl_file *f = hl_file_of(lk);
	unsigned int i = op->intent, last = op->nr - 1, end = to + waits;
	unsigned int above = min(end, last), l, n;

	if (READ_ONCE(hl_stats_on)) {
		for (l = from; l < above && l < HLOCK_LEVEL_OBJECT; l++)
			__hl_stat_add(f, level[l].acquire_count[i], 1);
		if (l < above) {
			/* The object row counts every level from it on. */
			n = above - l;
			l = HLOCK_LEVEL_OBJECT;
			__hl_stat_add(f, level[l].acquire_count[i], n);
		}
		if (end > last) {
			l = hl_stat_level(last);
			__hl_stat_add(f, level[l].acquire_count[op->mode], 1);
		}
	}
	if (trace_hlock_grant_enabled())
		for (l = from; l < to; l++)
			trace_hlock_grant(hl_stats_pid(f), op->heads[l],
					  hl_op_mode(op, l));
}

void hl_note_wait(struct hl_locker *lk, unsigned int level, unsigned int mode,
		  const struct hl_req *req)
{
	hl_stats_wait(lk, level, mode, req);
}

void hl_note_granted(struct hl_locker *lk, unsigned int level,
		     unsigned int mode)
{
	hl_stats_waited(lk, level, mode);
	if (trace_hlock_grant_enabled())
		trace_hlock_grant(hl_stats_pid(hl_file_of(lk)),
				  lk->op.heads[level], mode);
}

void hl_note_withdrawn(struct hl_locker *lk, unsigned int level,
		       unsigned int mode)
{
	hl_stats_withdrawn(lk, level, mode);
}

void hl_note_convert(struct hl_req *req, unsigned int target)
{
	hl_stats_convert(req, target);
}

/* The request's lease ends with it (hlock_lease.c). */
void hl_note_release(struct hl_req *req)
{
	if (unlikely(req->lease))
		hl_lease_release(req);
	if (trace_hlock_release_enabled())
		trace_hlock_release(hl_stats_pid(hl_file_of(req->locker)),
				    req->head, req->mode);
}

void hl_note_deadlock(struct hl_locker *lk, unsigned int level,
		      unsigned int mode)
{
	hl_stats_deadlock(lk, level, mode);
}

/* Leases: a wait takes over the expired ones in its way (hlock_lease.c). */

void hl_wait_claim(struct hl_locker *lk, struct hl_head *h, unsigned int mode)
{
	hl_lease_claim(lk, h, mode);
}

/* Lock value blocks and the lockers' events (hlock_lvb.c). */

void hl_lvb_publish(struct hl_req *req)
{
	/* Most resources never had a value block. */
	if (unlikely(hl_res_of(req->head)->lvb))
		hl_lvb_flush(req);
}

void hl_note_blocking(struct hl_req *holder)
{
	hl_event_blocking(holder);
}

void hl_note_lost(struct hl_req *holder)
{
	hl_event_lost(holder);
}

/* Cluster heads: this node's DLM lock on them (hlock_clk.c). */

void hl_node_update(struct hl_head *h)
{
	hl_clk_update(h);
}

bool hl_node_lost(const struct hl_head *h)
{
	return hl_cluster_head_lost(h);
}

bool hl_node_caching(void)
{
	return hl_cluster_caching();
}

u64 hl_node_probe_ns(void)
{
	return hl_cluster_probe_ns();
}

/* The deadlock search's needs (hlock_deadlock.c). */

static bool hl_deadlock_on = true;
module_param_named(deadlock_detect, hl_deadlock_on, bool, 0644);
MODULE_PARM_DESC(deadlock_detect,
		 "Refuse with EDEADLK a wait that would close a cycle of waits");

/**
 * hl_deadlock_detect() - Whether waits are searched for deadlocks.
 *
 * Return: the module parameter deadlock_detect.
 */
bool hl_deadlock_detect(void)
{
	return READ_ONCE(hl_deadlock_on);
}

/**
 * hl_graph_lock() - Serialize the deadlock searches of a lock space.
 * @gr: The space's graph.
 *
 * Not killable: the search may be for another locker than the caller's,
 * whose grant the caller's call continues (hl_grants_continue()), and a
 * fatal signal of the caller must not skip it.  A search is bounded, and
 * reschedules as it goes (hl_resched()).
 *
 * Context: process context, a locker lock held; may sleep.
 */
void hl_graph_lock(struct hl_graph *gr)
{
	mutex_lock(&gr->lock);
}

/**
 * hl_graph_unlock() - End a deadlock search.
 * @gr: The space's graph.
 */
void hl_graph_unlock(struct hl_graph *gr)
{
	lockdep_assert_held(&gr->lock);
	mutex_unlock(&gr->lock);
}

/**
 * hl_locker_get() - Keep a locker a deadlock search met.
 * @lk: The locker, which has a request on a resource whose head lock the
 *	caller holds (so its file is not freed yet).
 */
void hl_locker_get(struct hl_locker *lk)
{
	refcount_inc(&hl_file_of(lk)->ref);
}

/**
 * hl_locker_put() - Let go of a locker a deadlock search kept.
 * @lk: The locker; freed here if its file was closed meanwhile.
 *
 * Context: process context, no head lock held.
 */
void hl_locker_put(struct hl_locker *lk)
{
	hl_file_put(hl_file_of(lk));
}

/**
 * hl_dl_alloc() - Memory for a deadlock search's lists.
 * @n: Entries.
 * @size: Bytes of one.
 *
 * Context: process context, may sleep.
 * Return: the memory, charged to the searcher's memory cgroup, or NULL.
 */
void *hl_dl_alloc(size_t n, size_t size)
{
	return kvmalloc_array(n, size, GFP_KERNEL_ACCOUNT);
}

/**
 * hl_dl_free() - Free what hl_dl_alloc() gave.
 * @p: The memory, or NULL.
 */
void hl_dl_free(void *p)
{
	kvfree(p);
}

/**
 * hl_resched() - Let others run between the steps of a long search.
 */
void hl_resched(void)
{
	cond_resched();
}
