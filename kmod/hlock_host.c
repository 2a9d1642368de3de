// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: the kernel as the core's host (hlock_host.h).
 *
 * Every function the grant logic calls outside itself is defined here and
 * nowhere else: the kernel's clocks, memory and locks, and one named hook
 * per event a feature acts on.  The host names no feature: it answers a
 * feature's hook by a static call, whose target the feature gave when the
 * module loaded (struct hl_hooks, hlock_hooks.h), so the features' own
 * calls into the core close no loop through here.  Reading down this file
 * says what the core can make the rest of the module do, and who answers:
 *
 *   resources        hl_head_lookup(), hl_head_create(), hl_req_free(),
 *                    hl_head_has_children(), hl_part_next()  (hlock_space.c)
 *   queues           hl_waitq_refill(), hl_waitq_free()      (hlock_space.c)
 *   continuations    hl_grant_notify(), hl_op_done(),         (hl_file.resume:
 *                    hl_grants_continue()                      the call's stage)
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
 *
 * The host keeps what the core asks of the module as a whole: the grant
 * policy (module parameter grant_policy) and the reclaim generation
 * (hl_space_gen()).
 */
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/static_call.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>

#include "hlock_internal.h"
#include "hlock_hooks.h"
#include "hlock_trace.h"

/*
 * The features' answers (struct hl_hooks): one static call each, set by
 * hl_hooks_set() before anything can lock.
 */
#define HL_HOOK_TYPE(name)	(*((struct hl_hooks *)NULL)->name)

DEFINE_STATIC_CALL_NULL(hl_hook_head_lookup, HL_HOOK_TYPE(head_lookup));
DEFINE_STATIC_CALL_NULL(hl_hook_head_create, HL_HOOK_TYPE(head_create));
DEFINE_STATIC_CALL_NULL(hl_hook_req_free, HL_HOOK_TYPE(req_free));
DEFINE_STATIC_CALL_NULL(hl_hook_waitq_alloc, HL_HOOK_TYPE(waitq_alloc));
DEFINE_STATIC_CALL_NULL(hl_hook_waitq_free, HL_HOOK_TYPE(waitq_free));
DEFINE_STATIC_CALL_NULL(hl_hook_ns_put, HL_HOOK_TYPE(ns_put));
DEFINE_STATIC_CALL_NULL(hl_hook_note_acquired, HL_HOOK_TYPE(note_acquired));
DEFINE_STATIC_CALL_NULL(hl_hook_note_wait, HL_HOOK_TYPE(note_wait));
DEFINE_STATIC_CALL_NULL(hl_hook_note_granted, HL_HOOK_TYPE(note_granted));
DEFINE_STATIC_CALL_NULL(hl_hook_note_withdrawn, HL_HOOK_TYPE(note_withdrawn));
DEFINE_STATIC_CALL_NULL(hl_hook_note_convert, HL_HOOK_TYPE(note_convert));
DEFINE_STATIC_CALL_NULL(hl_hook_note_deadlock, HL_HOOK_TYPE(note_deadlock));
DEFINE_STATIC_CALL_NULL(hl_hook_note_release, HL_HOOK_TYPE(note_release));
DEFINE_STATIC_CALL_NULL(hl_hook_slow_log, HL_HOOK_TYPE(slow_log));
DEFINE_STATIC_CALL_NULL(hl_hook_lease_grant, HL_HOOK_TYPE(lease_grant));
DEFINE_STATIC_CALL_NULL(hl_hook_lease_release, HL_HOOK_TYPE(lease_release));
DEFINE_STATIC_CALL_NULL(hl_hook_lease_claim, HL_HOOK_TYPE(lease_claim));
DEFINE_STATIC_CALL_NULL(hl_hook_lvb_flush, HL_HOOK_TYPE(lvb_flush));
DEFINE_STATIC_CALL_NULL(hl_hook_event_blocking, HL_HOOK_TYPE(event_blocking));
DEFINE_STATIC_CALL_NULL(hl_hook_event_lost, HL_HOOK_TYPE(event_lost));
DEFINE_STATIC_CALL_NULL(hl_hook_node_update, HL_HOOK_TYPE(node_update));
DEFINE_STATIC_CALL_NULL(hl_hook_node_lost, HL_HOOK_TYPE(node_lost));
DEFINE_STATIC_CALL_NULL(hl_hook_node_caching, HL_HOOK_TYPE(node_caching));
DEFINE_STATIC_CALL_NULL(hl_hook_node_probe_ns, HL_HOOK_TYPE(node_probe_ns));

/* Point hook @name at @hooks' member, if it has one. */
#define HL_HOOK_SET(hooks, name)					\
	do {								\
		if ((hooks)->name)					\
			static_call_update(hl_hook_##name, (hooks)->name); \
	} while (0)

/**
 * hl_hooks_set() - Take a feature's answers to the core's hooks.
 * @hooks: The members the feature answers; the others are NULL.
 *
 * Context: module init, before anything can lock.
 */
void __init hl_hooks_set(const struct hl_hooks *hooks)
{
	HL_HOOK_SET(hooks, head_lookup);
	HL_HOOK_SET(hooks, head_create);
	HL_HOOK_SET(hooks, req_free);
	HL_HOOK_SET(hooks, waitq_alloc);
	HL_HOOK_SET(hooks, waitq_free);
	HL_HOOK_SET(hooks, ns_put);
	HL_HOOK_SET(hooks, note_acquired);
	HL_HOOK_SET(hooks, note_wait);
	HL_HOOK_SET(hooks, note_granted);
	HL_HOOK_SET(hooks, note_withdrawn);
	HL_HOOK_SET(hooks, note_convert);
	HL_HOOK_SET(hooks, note_deadlock);
	HL_HOOK_SET(hooks, note_release);
	HL_HOOK_SET(hooks, slow_log);
	HL_HOOK_SET(hooks, lease_grant);
	HL_HOOK_SET(hooks, lease_release);
	HL_HOOK_SET(hooks, lease_claim);
	HL_HOOK_SET(hooks, lvb_flush);
	HL_HOOK_SET(hooks, event_blocking);
	HL_HOOK_SET(hooks, event_lost);
	HL_HOOK_SET(hooks, node_update);
	HL_HOOK_SET(hooks, node_lost);
	HL_HOOK_SET(hooks, node_caching);
	HL_HOOK_SET(hooks, node_probe_ns);
}

/**
 * hl_hooks_check() - Whether every hook has its answer.
 *
 * Context: module init, after every hl_hooks_set().
 * Return: 0, or -EINVAL (with a warning) when one has none.
 */
int __init hl_hooks_check(void)
{
	bool missing = !static_call_query(hl_hook_head_lookup) ||
		       !static_call_query(hl_hook_head_create) ||
		       !static_call_query(hl_hook_req_free) ||
		       !static_call_query(hl_hook_waitq_alloc) ||
		       !static_call_query(hl_hook_waitq_free) ||
		       !static_call_query(hl_hook_ns_put) ||
		       !static_call_query(hl_hook_note_acquired) ||
		       !static_call_query(hl_hook_note_wait) ||
		       !static_call_query(hl_hook_note_granted) ||
		       !static_call_query(hl_hook_note_withdrawn) ||
		       !static_call_query(hl_hook_note_convert) ||
		       !static_call_query(hl_hook_note_deadlock) ||
		       !static_call_query(hl_hook_note_release) ||
		       !static_call_query(hl_hook_slow_log) ||
		       !static_call_query(hl_hook_lease_grant) ||
		       !static_call_query(hl_hook_lease_release) ||
		       !static_call_query(hl_hook_lease_claim) ||
		       !static_call_query(hl_hook_lvb_flush) ||
		       !static_call_query(hl_hook_event_blocking) ||
		       !static_call_query(hl_hook_event_lost) ||
		       !static_call_query(hl_hook_node_update) ||
		       !static_call_query(hl_hook_node_lost) ||
		       !static_call_query(hl_hook_node_caching) ||
		       !static_call_query(hl_hook_node_probe_ns);

	return WARN_ON_ONCE(missing) ? -EINVAL : 0;
}

/* The kernel's clocks and the grant policy. */

static unsigned int hl_policy = HLOCK_POLICY_BATCH;
static const char *const hl_policy_names[] = {
	[HLOCK_POLICY_BATCH] = "batch",
	[HLOCK_POLICY_FIFO] = "fifo",
};

static int hl_policy_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(hl_policy_names, val);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(hl_policy, i);
	return 0;
}

static int hl_policy_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", hl_policy_names[READ_ONCE(hl_policy)]);
}

static const struct kernel_param_ops hl_policy_ops = {
	.set = hl_policy_set,
	.get = hl_policy_get,
};
module_param_cb(grant_policy, &hl_policy_ops, NULL, 0644);
MODULE_PARM_DESC(grant_policy,
		 "What a release grants behind the queue head: batch (every compatible waiter) or fifo (up to the first conflict)");

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

/* Resources: hlock_space.c's table, slabs and per-CPU partitions. */

/* Resources died so far: see hl_space_gen().  One writer: reclaim. */
unsigned long hl_space_generation;

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
	return static_call(hl_hook_head_lookup)(lk, level);
}

int hl_head_create(struct hl_locker *lk, unsigned int level)
{
	return static_call(hl_hook_head_create)(lk, level);
}

void hl_req_free(struct hl_req *req)
{
	static_call(hl_hook_req_free)(req);
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
	wq = static_call(hl_hook_waitq_alloc)();
	if (!wq)
		return -ENOMEM;
	hl_locker_add_waitq(lk, wq);
	return 0;
}

void hl_waitq_free(struct hl_waitq *wq)
{
	static_call(hl_hook_waitq_free)(wq);
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
	if (f->lk.index != f->lk.index_inline)
		kvfree(f->lk.index);
	put_pid(rcu_dereference_protected(f->owner, true));
	put_pid(f->proc_owner);
	mutex_destroy(&f->lock);
	static_call(hl_hook_ns_put)(f->ns);
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
		static_call(hl_hook_slow_log)(f);
		static_call(hl_hook_lease_grant)(f);
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

void hl_note_acquired(struct hl_locker *lk, unsigned int from,
		      unsigned int to, bool waits)
{
	static_call(hl_hook_note_acquired)(lk, from, to, waits);
}

void hl_note_wait(struct hl_locker *lk, unsigned int level, unsigned int mode,
		  const struct hl_req *req)
{
	static_call(hl_hook_note_wait)(lk, level, mode, req);
}

void hl_note_granted(struct hl_locker *lk, unsigned int level,
		     unsigned int mode)
{
	static_call(hl_hook_note_granted)(lk, level, mode);
}

void hl_note_withdrawn(struct hl_locker *lk, unsigned int level,
		       unsigned int mode)
{
	static_call(hl_hook_note_withdrawn)(lk, level, mode);
}

void hl_note_convert(struct hl_req *req, unsigned int target)
{
	static_call(hl_hook_note_convert)(req, target);
}

atomic_long_t hl_fast_shuts = ATOMIC_LONG_INIT(0);

/* The host's own count: the slow path pays for it, never the fast one. */
void hl_note_fast_shut(const struct hl_head *h)
{
	atomic_long_inc(&hl_fast_shuts);
}

/*
 * Set while the hlock_release tracepoint has a probe: its registration's
 * own calls (DEFINE_EVENT_FN), so that hl_note_release() needs no look at
 * the tracepoint's key.
 */
bool hl_release_traced;

int hl_release_trace_reg(void)
{
	WRITE_ONCE(hl_release_traced, true);
	return 0;
}

void hl_release_trace_unreg(void)
{
	WRITE_ONCE(hl_release_traced, false);
}

/* The request's lease ends with it (hlock_lease.c); its trace. */
void hl_note_release_slow(struct hl_req *req)
{
	if (unlikely(req->lease))
		static_call(hl_hook_lease_release)(req);
	if (trace_hlock_release_enabled())
		static_call(hl_hook_note_release)(req);
}

void hl_note_deadlock(struct hl_locker *lk, unsigned int level,
		      unsigned int mode)
{
	static_call(hl_hook_note_deadlock)(lk, level, mode);
}

/* Leases: a wait takes over the expired ones in its way (hlock_lease.c). */

void hl_wait_claim(struct hl_locker *lk, struct hl_head *h, unsigned int mode)
{
	static_call(hl_hook_lease_claim)(lk, h, mode);
}

/* Lock value blocks and the lockers' events (hlock_lvb.c). */

void hl_lvb_publish(struct hl_req *req)
{
	/* Most resources never had a value block. */
	if (unlikely(hl_res_of(req->head)->lvb))
		static_call(hl_hook_lvb_flush)(req);
}

void hl_note_blocking(struct hl_req *holder)
{
	static_call(hl_hook_event_blocking)(holder);
}

void hl_note_lost(struct hl_req *holder)
{
	static_call(hl_hook_event_lost)(holder);
}

/* Cluster heads: this node's DLM lock on them (hlock_clk.c). */

void hl_node_update(struct hl_head *h)
{
	static_call(hl_hook_node_update)(h);
}

bool hl_node_lost(const struct hl_head *h)
{
	return static_call(hl_hook_node_lost)(h);
}

bool hl_node_caching(void)
{
	return static_call(hl_hook_node_caching)();
}

u64 hl_node_probe_ns(void)
{
	return static_call(hl_hook_node_probe_ns)();
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
