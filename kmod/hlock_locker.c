// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: lockers.  One per open file of /dev/hlock, with a mutex of its
 * own: lock (by ioctl, whose arguments of a path are copied in here, or
 * through io_uring), unlock, downgrade, wait and close, the continuations
 * of operations a release granted, and the wait for a grant.
 *
 * A release, cancel or downgrade collects the lockers it granted in a
 * struct hl_grants while it holds head locks; once its own locker lock is
 * dropped, hl_grants_run() takes each of theirs in turn and moves their
 * operations on.  No locker lock is ever taken inside another.
 *
 * The stages of a lock call, and what does each:
 *
 *   enter          HLOCK_IOC_LOCK: hl_ioctl() (hlock_main.c) jumps to
 *                  hl_ioctl_lock(), which copies the arguments and the
 *                  path and, inlined, takes the locker lock; io_uring
 *                  (hlock_uring.c) takes it and calls hl_lock_armed(); the
 *                  kernel API: hlock_lock() and hlock_lock_async()
 *                  (hlock_kapi.c) call hl_lock_call()
 *   refuse         hl_lock_begin(): a yield of another task (EBUSY), a
 *                  queue jump without the right (EPERM), a node that lost
 *                  its cluster (ENOLINK)
 *   parse path     hl_file_path(): the locker's last path again, else
 *                  hl_path_parse() (hlock_space.c)
 *   claim op       hl_op_claim() (hlock_core.c) takes the slot.  A plain
 *                  call (hl_call_plain(): the last path, same owner, no
 *                  lease, nothing to prepare, no ticket to take) goes
 *                  from here to the core; the others pass the stages
 *                  of hl_lock_stages():
 *                  hl_locker_limit() if the parameter changed,
 *                  hl_file_owner(), hl_file_set_path()
 *                  (the resources of the levels shared with the last path
 *                  are known); every call: hl_trace_request()
 *   prepare        hl_file_prepare() (index, spare requests),
 *                  hl_lease_prepare(); the slow-wait record reset;
 *                  hl_file_ticket_take() (a limited pool's ticket: may
 *                  leave the operation pending it)
 *   core op start  hl_op_start() (hlock_core.c): level by level, granted
 *                  or waiting; the core counts through hlock_host.c
 *                  (hl_note_acquired(), hl_stats_wait()...).  A try that
 *                  would wait for anything but its node's DLM mode fails
 *                  here with EAGAIN, queued nowhere (hl_gave_up())
 *   wait/continue  hl_lock_call(): a try gives up (hl_lock_try(),
 *                  hl_lock_give_up()) unless it waits for its cluster
 *                  node's DLM lock; an async call returns -EINPROGRESS;
 *                  a blocking one drops the lock and sleeps
 *                  (hl_wait_slot()) until a grant's continuation
 *                  (hl_grants_continue()) or hl_lock_continue() moves the
 *                  operation on, or its timeout or a signal withdraws it
 *                  (hl_lock_give_up()).  A call no thread waits for
 *                  is armed: whoever armed it set its end (hl_file.end),
 *                  which hl_end_take() takes out when a continuation,
 *                  a timer (hl_lock_expire()) or a cancel ends it
 *   collect        a plain call granted at once keeps its path and
 *                  empties the slot (hl_op_finish()); else a grant:
 *                  hl_lease_grant() at once, or
 *                  hl_op_granted_late() after a wait (hl_slow_log(),
 *                  hl_lease_grant()); then hl_op_clear(): the path kept
 *                  for the next call, hl_lease_op_end(), hl_op_finish()
 *                  (hlock_core.c), the slot's generation moved,
 *                  hl_file_ticket_put() once nothing is held
 *   return         hl_file_unlock() wakes the slot's sleepers,
 *                  hl_grants_run() continues the lockers the call granted
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/capability.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "hlock_internal.h"
#include "hlock_clk.h"
#include "hlock_lease.h"
#include "hlock_locker.h"
#include "hlock_ns.h"
#include "hlock_space.h"
#include "hlock_stats.h"
#include "hlock_test.h"
#include "hlock_ticket.h"
#include "hlock_trace.h"

/* Requests close releases between two looks at the scheduler. */
#define HL_RELEASE_BATCH	64
/* Default of max_locks_per_locker. */
#define HL_MAX_LOCKS_DEFAULT	65536

static unsigned int hl_max_locks = HL_MAX_LOCKS_DEFAULT;

static int hl_max_locks_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, UINT_MAX);
}

static const struct kernel_param_ops hl_max_locks_ops = {
	.set = hl_max_locks_set,
	.get = param_get_uint,
};
module_param_cb(max_locks_per_locker, &hl_max_locks_ops, &hl_max_locks,
		0644);
MODULE_PARM_DESC(max_locks_per_locker,
		 "Most resources one locker may hold or wait on (a lock call past it fails with ENOLCK)");

/* The previous owner of a locker, put once no reader can see it. */
struct hl_pid_put {
	struct rcu_head rcu;
	struct pid *pid;
};

static void hl_pid_put_rcu(struct rcu_head *rcu)
{
	struct hl_pid_put *pp = container_of(rcu, struct hl_pid_put, rcu);

	put_pid(pp->pid);
	kfree(pp);
}

/* The caller makes the lock calls of @f from now on.  Context: f->lock. */
static void hl_file_owner(struct hl_file *f)
{
	struct pid *pid = task_tgid(current), *old;
	struct hl_pid_put *pp;

	lockdep_assert_held(&f->lock);
	old = rcu_dereference_protected(f->owner, lockdep_is_held(&f->lock));
	if (old != pid) {
		rcu_assign_pointer(f->owner, get_pid(pid));
		pp = kmalloc(sizeof(*pp), GFP_KERNEL);
		if (pp) {
			pp->pid = old;
			call_rcu(&pp->rcu, hl_pid_put_rcu);
		} else {
			synchronize_rcu();
			put_pid(old);
		}
	}
	/* The name changes seldom: most calls only compare it. */
	if (!hl_mem_eq(f->comm, current->comm, sizeof(f->comm)))
		strscpy_pad(f->comm, current->comm, sizeof(f->comm));
}

/*
 * The one place a ticket is taken: a lock call of a locker that holds
 * nothing takes one, or queues for one, before its operation starts.  A
 * try gives up rather than wait, and is counted so.  Context: f->lock
 * held, the slot claimed.  Return: 0 (go on), -EINPROGRESS (the operation
 * is pending its ticket) or -EAGAIN.
 */
static int hl_file_ticket_take(struct hl_file *f, unsigned int mode,
			       bool try)
{
	int ret;

	lockdep_assert_held(&f->lock);
	if (f->lk.nr_reqs || f->tk.state != HL_TICKET_NONE ||
	    likely(!hl_tickets_limited()))
		return 0;
	ret = hl_ticket_take(f, mode, try);
	if (ret == -EINPROGRESS)
		f->tk.pending = true;
	else if (ret)
		hl_gave_up(f, mode, ret);
	return ret;
}

/*
 * The operation in flight was granted after a wait, for a level or for
 * its ticket: it gets what a grant made at once gets (hl_lock_begin()),
 * its lease, and the slow-wait log (as hl_op_done() does for a level).
 * Context: f->lock held.
 */
static void hl_op_granted_late(struct hl_file *f)
{
	lockdep_assert_held(&f->lock);
	hl_slow_log(f);
	hl_lease_grant(f);
}

/*
 * Once the locker holds nothing and has nothing in flight, it returns its
 * ticket, if it has one (hl_ticket_put_idle()).  Context: f->lock held.
 */
static __always_inline void hl_file_ticket_put(struct hl_file *f,
					       struct hl_grants *g)
{
	lockdep_assert_held(&f->lock);
	if (unlikely(f->tk.state == HL_TICKET_HELD))
		hl_ticket_put_idle(f, g);
}

/*
 * Move the operation in the slot on, as hl_op_continue() does; one pending
 * its ticket starts once the ticket came (and is then done, or waits at a
 * level).  Context: f->lock held.  Return: as hl_op_continue().
 */
static int hl_lock_continue(struct hl_file *f, struct hl_grants *g)
{
	int ret;

	if (likely(!f->tk.pending))
		return hl_op_continue(&f->lk, g);
	if (f->tk.error)
		return f->tk.error;
	if (!hl_ticket_ready(f))
		return -EINPROGRESS;
	ret = hl_op_start(&f->lk, g);
	if (ret == -EINPROGRESS) {
		f->tk.pending = false;
		return ret;
	}
	/* Failed: the slot keeps the operation, not started, until collected. */
	if (ret) {
		f->tk.error = ret;
	} else {
		f->tk.pending = false;
		hl_op_granted_late(f);
	}
	WRITE_ONCE(f->granted, true);
	hl_slot_changed(f);
	return ret;
}

/*
 * Undo the operation in flight, as hl_op_cancel() does; one pending its
 * ticket leaves the pool's queue.  Context: f->lock held.
 */
static void hl_lock_cancel(struct hl_file *f, struct hl_grants *g)
{
	if (likely(!f->tk.pending)) {
		hl_op_cancel(&f->lk, g);
		/* Granted, not collected: its lease goes back as it was. */
		if (unlikely(f->leases.granted))
			hl_lease_withdrawn(f);
		return;
	}
	hl_ticket_withdraw(f);
	f->tk.pending = false;
	f->tk.error = 0;
}

/*
 * Whether the locker has nothing to do with leases: none held, none stale,
 * none asked for by the call in flight, none whose takeover waits for it.
 * Most lockers never take one, and their calls test this once instead of
 * calling into hlock_lease.c.  Context: f->lock held.
 */
static bool hl_leases_idle(const struct hl_file *f)
{
	return !f->leases.want && list_empty(&f->leases.held) &&
	       list_empty(&f->leases.stale) && !f->leases.deferred;
}

/*
 * Empty the slot after its operation was collected or undone.  Inline: on
 * the path of every lock call granted at once.
 */
static __always_inline void hl_op_clear(struct hl_file *f,
					struct hl_grants *g)
{
	/*
	 * A granted path stays in f->path: unlock can find it there, and the
	 * next lock call its resources.
	 */
	f->last_path = f->lk.op.state == HL_OP_GRANTED;
	if (f->last_path)
		f->heads_nr = f->lk.op.nr;
	if (unlikely(!hl_leases_idle(f)))
		hl_lease_op_end(f);
	hl_op_finish(&f->lk, g);
	WRITE_ONCE(f->granted, false);
	f->async = false;
	f->tk.pending = false;
	f->tk.error = 0;
	hl_slot_changed(f);
	hl_file_ticket_put(f, g);
}

/**
 * hl_end_take() - Take the slot's call, over (granted, failed or
 *	withdrawn), out for whoever armed it, and collect the slot.
 * @f: The locker.
 * @g: Where the grants the collection makes go.
 * @e: Set to what hl_end_post() needs; its @ops NULL when nobody armed
 *	the call.
 *
 * Context: f->lock held.
 * Return: false when nobody but a thread waits for the call: the slot is
 * then left to the caller.
 */
bool hl_end_take(struct hl_file *f, struct hl_grants *g, struct hl_ended *e)
{
	lockdep_assert_held(&f->lock);
	e->ops = f->end;
	if (!e->ops)
		return false;
	f->end = NULL;
	e->ops->take(f, e);
	hl_op_clear(f, g);
	return true;
}

/*
 * The lock call's stage that goes on with an operation a grant pass
 * granted: every locker's f->resume, which hl_grants_continue() calls for
 * the lockers a grant collected.  Context: process context, no hlock lock
 * held; takes the locker's lock, and drops the reference the grant took.
 */
static void hl_file_resume(struct hl_file *f, struct hl_grants *g)
{
	struct hl_ended e = { };
	int ret;

	mutex_lock(&f->lock);
	ret = hl_lock_continue(f, g);
	/*
	 * A lock through io_uring, or a kernel locker's asynchronous one, is
	 * collected as soon as it ends.
	 */
	if (ret != -EINPROGRESS)
		hl_end_take(f, g, &e);
	hl_file_unlock(f);
	hl_end_post(f, &e, ret);
	hl_file_put(f);
}

/*
 * Sleep in @state until the slot of @f leaves generation @seen, a signal
 * comes, or @deadline passes (KTIME_MAX: never).  @state is the calling
 * thread's own: TASK_INTERRUPTIBLE, or for a kernel locker's call
 * TASK_KILLABLE or TASK_UNINTERRUPTIBLE; other threads of the locker may
 * make calls meanwhile, with other states.  Return: 0, -EINTR or
 * -ETIMEDOUT; the caller looks at the slot again under the lock in every
 * case.
 */
static int hl_wait_slot(struct hl_file *f, unsigned int seen, ktime_t deadline,
			unsigned int state)
{
	ktime_t left;
	long ret;

	if (unlikely(state != TASK_INTERRUPTIBLE)) {
		/* A kernel locker's call: killable or uninterruptible. */
		left = deadline == KTIME_MAX ? KTIME_MAX :
		       ktime_sub(deadline, ktime_get());
		if (left <= 0)
			return -ETIMEDOUT;
		ret = __wait_event_hrtimeout(f->wq, READ_ONCE(f->gen) != seen,
					     left, state);
	} else if (deadline == KTIME_MAX) {
		ret = wait_event_interruptible(f->wq, READ_ONCE(f->gen) != seen);
	} else {
		left = ktime_sub(deadline, ktime_get());
		if (left <= 0)
			return -ETIMEDOUT;
		ret = wait_event_interruptible_hrtimeout(f->wq,
							 READ_ONCE(f->gen) != seen,
							 left);
	}
	if (ret == -ERESTARTSYS)
		return -EINTR;
	if (ret == -ETIME)
		return -ETIMEDOUT;
	return ret;
}

/**
 * hl_deadline() - When a wait that starts now ends.
 * @timeout_ns: Its length; negative waits forever.
 *
 * Return: the deadline on CLOCK_MONOTONIC, KTIME_MAX for never.
 */
ktime_t hl_deadline(s64 timeout_ns)
{
	return timeout_ns < 0 ? KTIME_MAX : ktime_add_ns(ktime_get(), timeout_ns);
}

/* Withdraw a queued operation on request of its locker, and count it. */
static void hl_op_cancel_counted(struct hl_file *f, unsigned int why,
				 struct hl_grants *g)
{
	hl_note_cancel(f, why);
	hl_lock_cancel(f, g);
}

/*
 * Make sure the locker's index and spares fit the claimed path.
 * Context: f->lock held.
 */
static int hl_file_prepare(struct hl_file *f)
{
	struct hl_locker *lk = &f->lk;
	unsigned int bits = hl_locker_index_wanted(lk);

	if (bits) {
		/* Without a bigger index, lookups only get slower. */
		struct hlist_head *index = kvmalloc_array(1U << bits,
							  sizeof(*index),
							  GFP_KERNEL_ACCOUNT);

		if (index)
			kvfree(hl_locker_index_swap(lk, index, bits));
	}
	while (hl_locker_spares_needed(lk)) {
		struct hl_req *req = hl_req_alloc();

		if (!req)
			return -ENOMEM;
		hl_locker_add_spare(lk, req);
	}
	return unlikely(hl_locker_waitq_needed(lk)) ? hl_waitq_refill(lk) : 0;
}

/*
 * Leading levels, up to @max, that path @p in @buf shares with the
 * locker's path (the root is always shared).
 */
static unsigned int hl_path_shared(const struct hl_file *f,
				   const struct hl_path *p, const char *buf,
				   unsigned int max)
{
	unsigned int l;

	for (l = 1; l < max; l++)
		if (p->nlen[l] != f->path.nlen[l] ||
		    !hl_mem_eq(buf + p->off[l], f->pathbuf + f->path.off[l],
			       p->nlen[l]))
			break;
	return min(l, max);
}

/*
 * The resources of the locker's last path are known (in lk.op.heads)
 * while no resource died since they were found: forget them if one did.
 */
static __always_inline void hl_file_heads_check(struct hl_file *f)
{
	unsigned long gen = hl_space_gen();

	if (unlikely(gen != f->heads_gen)) {
		f->heads_nr = 0;
		f->heads_gen = gen;
	}
}

/*
 * Keep the path of the operation in the locker: it outlives the call.
 * The resources of the levels it shares with the last path stay known.
 */
static void hl_file_set_path(struct hl_file *f, const struct hl_path *p,
			     const char *buf)
{
	hl_file_heads_check(f);
	if (p == &f->path)
		return;
	f->heads_nr = hl_path_shared(f, p, buf, min(p->nr, f->heads_nr));
	f->path = *p;
	memcpy(f->pathbuf, buf, p->len);
	f->pathbuf[p->len] = '\0';
}

/*
 * The parsed form of the path in @buf, @len bytes: the locker's own
 * when it is the locker's last path (parsed already: most calls lock and
 * unlock one path again and again), else parsed into @tmp.  Context:
 * f->lock held.  Return: the path, or ERR_PTR() of hl_path_parse()'s
 * error.
 */
static __always_inline const struct hl_path *
hl_file_path(struct hl_file *f, const char *buf, unsigned int len,
	     struct hl_path *tmp)
{
	int ret;

	lockdep_assert_held(&f->lock);
	if (len == f->path.len && hl_mem_eq(buf, f->pathbuf, len))
		return &f->path;
	ret = hl_path_parse(tmp, buf, len);
	return ret ? ERR_PTR(ret) : tmp;
}

/**
 * hl_file_wait_exit() - Wait until no other task's exit releases the
 *	locker's locks.
 * @f: The locker, its lock held; dropped while the call waits.
 *
 * The owner's exit (hl_file_owner_exit()) releases in batches and drops
 * the lock between them: a call that claimed the slot meanwhile would see
 * the next batch release what it pinned.  Calls that claim the slot (a
 * lock, a yield) wait here first, and look at everything again once they
 * hold the lock again.
 *
 * Context: process context, f->lock held; may sleep.
 * Return: 0, or -EINTR when a fatal signal ended the wait.
 */
int hl_file_wait_exit(struct hl_file *f)
{
	lockdep_assert_held(&f->lock);
	while (unlikely(f->exiting) && f->exiting != current) {
		unsigned int seen = f->gen;
		int ret;

		hl_file_unlock(f);
		ret = wait_event_killable(f->wq, READ_ONCE(f->gen) != seen);
		mutex_lock(&f->lock);
		if (ret)
			return -EINTR;
	}
	return 0;
}

/*
 * Whether a lock call of @f on its last path, with no lease, is a plain
 * one: none of the stages a call may pass through before the core has
 * anything to do for it, so that hl_lock_begin() goes straight to the
 * core.  Each test stands for a stage:
 * - the slot is free (a claim that fails says EBUSY);
 * - lease: none asked for, none held, stale or pending;
 * - prepare: the locker's spares and index fit the path, and the limit
 *   of its locks is the parameter's;
 * - ticket: the call needs none (it holds locks, or has its ticket, or
 *   the pool is unlimited);
 * - owner: the caller's process made the locker's last call, under the
 *   same name.
 * Exit, yield, queue jumps and a lost cluster were refused before.
 * Context: f->lock held.
 */
static __always_inline bool hl_call_plain(const struct hl_file *f,
					  s64 lease_ns)
{
	const struct hl_locker *lk = &f->lk;

	lockdep_assert_held(&f->lock);
	return lk->op.state == HL_OP_IDLE && !lease_ns && hl_leases_idle(f) &&
	       lk->nr_spare >= f->path.nr && !hl_locker_index_wanted(lk) &&
	       lk->max_reqs == READ_ONCE(hl_max_locks) &&
	       (lk->nr_reqs || f->tk.state != HL_TICKET_NONE ||
		likely(!hl_tickets_limited())) &&
	       rcu_access_pointer(f->owner) == task_tgid(current) &&
	       hl_mem_eq(f->comm, current->comm, sizeof(f->comm));
}

/*
 * The stages a lock call that is not plain (hl_call_plain()) may need once
 * it claimed the slot for path @p in @buf: the limit, the owner, the path
 * kept, the index and spares, the lease, the ticket.  Context: f->lock
 * held, the slot claimed.  Return: 0 to start the operation;
 * -EINPROGRESS when it is pending its ticket; else an error.
 */
static int hl_lock_stages(struct hl_file *f, const struct hl_path *p,
			  const char *buf, unsigned int mode,
			  unsigned int flags, s64 timeout_ns, s64 lease_ns,
			  bool try)
{
	struct hl_locker *lk = &f->lk;
	int ret;

	/* The parameter seldom changes: most calls only compare it. */
	if (unlikely(lk->max_reqs != READ_ONCE(hl_max_locks)))
		hl_locker_limit(lk, READ_ONCE(hl_max_locks));
	hl_file_owner(f);
	hl_file_set_path(f, p, buf);
	hl_trace_request(f, mode, flags, timeout_ns);
	ret = hl_file_prepare(f);
	if (!ret && unlikely(lease_ns))
		ret = hl_lease_prepare(f, lease_ns);
	if (ret)
		return ret;
	f->slow.waited = 0;
	f->slow.level = HL_NO_WAIT;
	return hl_file_ticket_take(f, mode, try);
}

/*
 * Start a lock call in the locker's slot: claim it, keep the path, start
 * the operation.  A plain call (hl_call_plain()), most of them, goes from
 * the claim to the core's operation at once, and empties the slot itself
 * when that was granted: nothing else moved.  A try (timeout 0, not
 * async) gives up rather than wait, so it needs no deadlock search.
 * Context: f->lock held.  Return: 0 when granted at once, or an error,
 * with the slot emptied; -EINPROGRESS when a level waits, the slot holding
 * the operation.
 */
static __always_inline int hl_lock_begin(struct hl_file *f, const char *buf,
					 unsigned int len, unsigned int mode,
					 unsigned int flags, s64 timeout_ns,
					 s64 lease_ns, struct hl_grants *g)
{
	bool try = !timeout_ns && !(flags & HLOCK_F_ASYNC);
	struct hl_path tmp __uninitialized;
	struct hl_locker *lk = &f->lk;
	const struct hl_path *p;
	unsigned int opflags;
	int ret;

	lockdep_assert_held(&f->lock);
	/*
	 * The owner's exit releases: everything below is looked at after.
	 * Tested here first: most calls meet no exit.
	 */
	if (unlikely(f->exiting)) {
		ret = hl_file_wait_exit(f);
		if (ret)
			return ret;
	}
	/* A yield owns the locker until everything is back (hl_do_yield()). */
	if (unlikely(f->yielder) && f->yielder != current)
		return -EBUSY;
	/* Only the privileged jump queues (hl_file_open()). */
	if (flags & (HLOCK_F_FRONT | HLOCK_F_COMPAT_FIRST) && !f->may_jump)
		return -EPERM;
	/* Its node lost the cluster: not even a recursion is granted. */
	if (hl_ns_lost(f->ns))
		return -ENOLINK;
	p = hl_file_path(f, buf, len, &tmp);
	if (IS_ERR(p))
		return PTR_ERR(p);
	opflags = flags | (f->may_jump ? HL_RF_MAY_JUMP : 0) |
		  (try ? HL_RF_TRY : 0);
	if (likely(p == &f->path && hl_call_plain(f, lease_ns))) {
		/* What hl_op_clear() leaves in an empty slot. */
		if (IS_ENABLED(CONFIG_PROVE_LOCKING))
			WARN_ON_ONCE(f->granted || f->async || f->tk.pending ||
				     f->tk.error);
		f->last_path = false;
		hl_file_heads_check(f);
		if (trace_hlock_request_enabled())
			hl_trace_request(f, mode, flags, timeout_ns);
		f->slow.waited = 0;
		f->slow.level = HL_NO_WAIT;
		ret = hl_op_run(lk, p->nr, mode, opflags, g);
		if (likely(!ret)) {
			/*
			 * Granted, and the slot emptied: what hl_op_clear()
			 * does besides for a plain call is nothing (no lease,
			 * no ticket, and nobody waits for a free slot to move).
			 */
			f->last_path = true;
			f->heads_nr = p->nr;
			return 0;
		}
		/* A try that would wait gave up, nothing queued. */
		if (ret == -EAGAIN)
			hl_gave_up(f, mode, ret);
	} else {
		ret = hl_op_claim(lk, p->nr, mode, opflags);
		if (ret)
			return ret;
		f->last_path = false;
		ret = hl_lock_stages(f, p, buf, mode, flags, timeout_ns,
				     lease_ns, try);
		if (!ret) {
			ret = hl_op_start(lk, g);
			if (ret == -EAGAIN)
				hl_gave_up(f, mode, ret);
		}
		if (!ret && unlikely(lease_ns))
			hl_lease_grant(f);
	}
	if (ret == -EINPROGRESS)
		return ret;
	hl_op_clear(f, g);
	return ret;
}

/* A try gave up: withdraw its operation, count it.  f->lock held. */
static int hl_lock_give_up(struct hl_file *f, int ret, struct hl_grants *g)
{
	hl_gave_up(f, f->lk.op.mode, ret);
	hl_lock_cancel(f, g);
	hl_op_clear(f, g);
	return ret;
}

/*
 * A try queued: it waits for nothing but the DLM lock of this node in a
 * cluster space (the core gives up any other try before it queues), which
 * it waits for, level by level (hl_cluster_try_wait()), unless the DLM
 * does not answer soon; then it gives up.  f->lock held.
 */
static int hl_lock_try(struct hl_file *f, struct hl_grants *g)
{
	ktime_t deadline = 0;
	int ret, c;

	/* Outside a cluster no try queues (the core's try_gives_up()). */
	if (WARN_ON_ONCE(!f->ns->cl))
		return hl_lock_give_up(f, -EAGAIN, g);
	while ((ret = hl_cluster_try_wait(f, g, &deadline)) > 0) {
		c = hl_lock_continue(f, g);
		if (c != -EINPROGRESS) {
			/* A level further down would wait: given up there. */
			if (c == -EAGAIN)
				hl_gave_up(f, f->lk.op.mode, c);
			hl_op_clear(f, g);
			return c;
		}
	}
	return hl_lock_give_up(f, ret ? ret : -EAGAIN, g);
}

/*
 * The body of hl_lock_call(), inlined into the ioctl's hl_do_lock(), whose
 * deadline and sleep are constants, and out of line for the others.
 */
static __always_inline int
__hl_lock_call(struct hl_file *f, const char *buf, unsigned int len,
	       unsigned int mode, unsigned int flags, s64 timeout_ns,
	       s64 lease_ns, ktime_t deadline, unsigned int state,
	       struct hl_grants *g)
{
	int ret, c;

	lockdep_assert_held(&f->lock);
	ret = hl_lock_begin(f, buf, len, mode, flags, timeout_ns, lease_ns,
			    g);
	if (ret != -EINPROGRESS)
		return ret;
	if (flags & HLOCK_F_ASYNC) {
		f->async = true;
		return ret;
	}
	if (!timeout_ns)
		return hl_lock_try(f, g);
	if (!deadline)
		deadline = hl_deadline(timeout_ns);
	/*
	 * The slot is this call's own (not async): nobody else can collect
	 * or withdraw it; a continuation moves it on.
	 */
	do {
		unsigned int seen = f->gen;

		hl_file_unlock(f);
		hl_grants_run(g);
		/* Where a test may hold the call, unlocked (hlock_test.h). */
		hl_test_stall_path(HL_TP_WAIT, buf, len);
		ret = hl_wait_slot(f, seen, deadline, state);
		mutex_lock(&f->lock);
		/* A grant that raced with the timeout or the signal wins. */
		c = hl_lock_continue(f, g);
		if (c != -EINPROGRESS) {
			hl_op_clear(f, g);
			return c;
		}
	} while (!ret);
	return hl_lock_give_up(f, ret, g);
}

/**
 * hl_lock_call() - The body of a lock call, in the locker's slot.
 * @f: The locker; its lock held, and dropped while the call waits.
 * @buf: The path, NUL-terminated.
 * @len: Its length.
 * @mode: The mode for the last level.
 * @flags: HLOCK_F_*.
 * @timeout_ns: As in struct hlock_lock_args.
 * @lease_ns: As in struct hlock_lock_args: 0, or positive.
 * @deadline: When its waits end (KTIME_MAX: never); 0 to take it from
 *	@timeout_ns when it first waits.  A caller making several calls
 *	under one timeout passes the same deadline to each.
 * @state: How the call sleeps while it waits: TASK_INTERRUPTIBLE, or for
 *	a kernel locker TASK_KILLABLE or TASK_UNINTERRUPTIBLE.  The call's
 *	own, never the locker's: threads share a locker.
 * @g: Lockers its grant passes granted, for the caller to run.
 *
 * Context: process context, f->lock held; may sleep.
 * Return: 0 or -errno, as HLOCK_IOC_LOCK; the slot is empty unless an
 * HLOCK_F_ASYNC call is queued (-EINPROGRESS).
 */
int hl_lock_call(struct hl_file *f, const char *buf, unsigned int len,
		 unsigned int mode, unsigned int flags, s64 timeout_ns,
		 s64 lease_ns, ktime_t deadline, unsigned int state,
		 struct hl_grants *g)
{
	return __hl_lock_call(f, buf, len, mode, flags, timeout_ns, lease_ns,
			      deadline, state, g);
}

/**
 * hl_do_lock() - HLOCK_IOC_LOCK.
 * @f: The locker.
 * @buf: The path, NUL-terminated.
 * @len: Its length.
 * @mode: The mode for the last level.
 * @flags: HLOCK_F_*.
 * @timeout_ns: As in struct hlock_lock_args.
 * @lease_ns: As in struct hlock_lock_args: 0, or positive.
 *
 * Context: process context, may sleep.
 * Return: 0 or -errno, as HLOCK_IOC_LOCK.
 */
static __always_inline int hl_do_lock(struct hl_file *f, const char *buf,
				      unsigned int len, unsigned int mode,
				      unsigned int flags, s64 timeout_ns,
				      s64 lease_ns)
{
	struct hl_grants g;
	int ret;

	hl_grants_init(&g);
	mutex_lock(&f->lock);
	ret = __hl_lock_call(f, buf, len, mode, flags, timeout_ns, lease_ns, 0,
			     TASK_INTERRUPTIBLE, &g);
	hl_file_unlock(f);
	hl_grants_run(&g);
	return ret;
}

/**
 * hl_lock_armed() - A lock call that no thread waits for: should it wait,
 *	its end goes to whoever armed it (io_uring).
 * @f: The locker, its lock held.
 * @end: How its submitter learns of its end (hl_file.end).
 * @buf: The path.
 * @len: Its length.
 * @mode: The mode for the last level.
 * @flags: HLOCK_F_*, HLOCK_F_ASYNC not among them.
 * @timeout_ns: As in struct hlock_lock_args; 0 gives up at once.
 * @g: Where the grants the call makes go.
 *
 * The caller sets up its own state for the wait (a timer, say) before it
 * drops the lock: whoever ends the call takes it under the lock
 * (hl_end_take()).
 *
 * Context: process context, f->lock held.
 * Return: -EINPROGRESS when it waits, with @end in the slot; else its
 * result, as HLOCK_IOC_LOCK's.
 */
int hl_lock_armed(struct hl_file *f, const struct hl_end_ops *end,
		  const char *buf, unsigned int len, unsigned int mode,
		  unsigned int flags, s64 timeout_ns, struct hl_grants *g)
{
	int ret;

	lockdep_assert_held(&f->lock);
	/* Leases need lease_ns, which the ring's command bytes lack. */
	ret = hl_lock_begin(f, buf, len, mode, flags, timeout_ns, 0, g);
	if (ret == -EINPROGRESS) {
		if (!timeout_ns)
			return hl_lock_give_up(f, -EAGAIN, g);
		f->end = end;
	}
	return ret;
}

/**
 * hl_lock_expire() - An armed call's deadline passed: end it.
 * @f: The locker, its lock held, the call armed.
 * @g: Where the grants the withdrawal makes go.
 *
 * A grant that raced with the timeout wins.  The caller then takes the
 * call out (hl_end_take()).
 *
 * Context: process context, f->lock held.
 * Return: the call's result: 0, -ETIMEDOUT or another -errno.
 */
int hl_lock_expire(struct hl_file *f, struct hl_grants *g)
{
	int ret;

	lockdep_assert_held(&f->lock);
	ret = hl_lock_continue(f, g);
	if (ret == -EINPROGRESS) {
		ret = -ETIMEDOUT;
		hl_gave_up(f, f->lk.op.mode, ret);
		hl_lock_cancel(f, g);
	}
	return ret;
}

/**
 * hl_lock_withdraw() - Withdraw an armed call, as a cancel: its
 *	submitter is going away.
 * @f: The locker, its lock held, the call armed.
 * @why: HLOCK_CANCEL_*, for the statistics and the trace.
 * @g: Where the grants the withdrawal makes go.
 *
 * The caller then takes the call out (hl_end_take()).
 *
 * Context: process context, f->lock held.
 */
void hl_lock_withdraw(struct hl_file *f, unsigned int why,
		      struct hl_grants *g)
{
	hl_op_cancel_counted(f, why, g);
}

/**
 * hl_do_wait() - HLOCK_IOC_WAIT: wait for the async request and collect
 *	it.
 * @f: The locker.
 * @timeout_ns: As in struct hlock_wait_args.
 *
 * Returns 0 only when this call collected a grant; if another thread
 * collects the request first and queues a new one, this call waits for
 * the new one.
 *
 * Context: process context, may sleep.
 * Return: 0 or -errno, as HLOCK_IOC_WAIT.
 */
int hl_do_wait(struct hl_file *f, s64 timeout_ns)
{
	ktime_t deadline = hl_deadline(timeout_ns);
	struct hl_locker *lk = &f->lk;
	struct hl_grants g;
	int ret = 0, c;

	hl_grants_init(&g);
	mutex_lock(&f->lock);
	for (;;) {
		unsigned int seen;

		if (lk->op.state == HL_OP_IDLE) {
			/* Nothing queued, or withdrawn while we slept. */
			ret = -ENOENT;
			break;
		}
		if (!f->async) {
			/* Another thread's blocking call owns the slot. */
			ret = -EBUSY;
			break;
		}
		c = hl_lock_continue(f, &g);
		if (c != -EINPROGRESS) {
			/* Granted, also racing a timeout or signal; or failed. */
			ret = c;
			hl_op_clear(f, &g);
			break;
		}
		if (!timeout_ns)
			ret = -EAGAIN;
		if (ret)
			break;
		seen = f->gen;
		hl_file_unlock(f);
		hl_grants_run(&g);
		ret = hl_wait_slot(f, seen, deadline, TASK_INTERRUPTIBLE);
		mutex_lock(&f->lock);
	}
	if (ret == -EINTR)
		hl_stat_add(f, interrupts, 1);
	hl_file_unlock(f);
	hl_grants_run(&g);
	return ret;
}

/*
 * Where path @p in @buf lies against the locker's last path: 0 off it, 1
 * on it above the last level, 2 the last level itself.
 */
static int hl_on_path(struct hl_file *f, const struct hl_path *p,
		      const char *buf)
{
	if (p == &f->path)
		return 2;
	if (p->nr > f->path.nr || hl_path_shared(f, p, buf, p->nr) < p->nr)
		return 0;
	return p->nr == f->path.nr ? 2 : 1;
}

/*
 * The resource of @p: the target of the last lock collected when @p names
 * it (the locker holds it, so it is alive), else looked up.  Context:
 * RCU read lock and f->lock held.
 */
static struct hl_head *hl_file_find(struct hl_file *f, const struct hl_path *p,
				    const char *buf)
{
	if (f->last_path && f->lk.last && p == &f->path)
		return f->lk.last->head;
	return hl_path_find(f->root, p, buf);
}

/*
 * Withdraw the queued lock call, whose path is @p in @buf, on an unlock of
 * that path, and collect the slot.  Context: f->lock held.  Return: the
 * acquisitions left on the path, as an unlock says.
 */
static int hl_unlock_withdraw(struct hl_file *f, const struct hl_path *p,
			      const char *buf, struct hl_grants *g,
			      struct hl_ended *e)
{
	struct hl_locker *lk = &f->lk;
	struct hl_req *req = NULL;
	struct hl_head *h;
	int ret = 0;

	hl_op_cancel_counted(f, HLOCK_CANCEL_UNLOCK, g);
	if (!hl_end_take(f, g, e))
		hl_op_clear(f, g);
	rcu_read_lock();
	h = hl_path_find(f->root, p, buf);
	if (h)
		req = hl_locker_find(lk, h);
	if (req)
		ret = req->own;
	rcu_read_unlock();
	return ret;
}

/* The body of hl_do_path(), for one @op or any. */
static __always_inline int __hl_do_path(struct hl_file *f, unsigned int op,
					const char *buf, unsigned int len,
					unsigned int mode)
{
	struct hl_path tmp __uninitialized;
	struct hl_locker *lk = &f->lk;
	struct hl_ended e = { };
	const struct hl_path *p;
	struct hl_grants g;
	struct hl_head *h;
	bool stale;
	int ret, on;

	hl_grants_init(&g);
	mutex_lock(&f->lock);
	p = hl_file_path(f, buf, len, &tmp);
	if (IS_ERR(p)) {
		ret = PTR_ERR(p);
		goto out_unlock;
	}
	/*
	 * A plain unlock, most of them: of the target of the last lock
	 * collected, which the locker holds (so it stays without RCU), with
	 * nothing in flight, no yield and no lease to hear of it.
	 */
	if (op == HLOCK_IOC_UNLOCK && p == &f->path && f->last_path &&
	    lk->last && lk->op.state == HL_OP_IDLE && !f->yielder &&
	    hl_leases_idle(f)) {
		ret = hl_unlock(lk, lk->last->head, &g);
		/* The last unlock may leave the locker holding nothing. */
		hl_file_ticket_put(f, &g);
		hl_file_unlock(f);
		hl_grants_run(&g);
		return ret;
	}
	/* A yield owns the locker until everything is back. */
	if (f->yielder && op != HLOCK_IOC_HELD && op != HLOCK_IOC_BLOCKING) {
		ret = -EBUSY;
		goto out_unlock;
	}
	/* A lease taken over: its path's next unlock says so, once. */
	stale = op == HLOCK_IOC_UNLOCK && unlikely(!hl_leases_idle(f)) &&
		hl_lease_stale(f, buf, len);
	on = op == HLOCK_IOC_HELD || op == HLOCK_IOC_BLOCKING ||
	     lk->op.state == HL_OP_IDLE ? 0 : hl_on_path(f, p, buf);
	if (on == 2 && op == HLOCK_IOC_UNLOCK && (f->async || f->end)) {
		/*
		 * Unlocking the target withdraws the queued request, whatever
		 * else the unlock reports: a stale lease is said as well.
		 */
		ret = hl_unlock_withdraw(f, p, buf, &g, &e);
		if (stale)
			ret = -ESTALE;
		goto out_unlock;
	}
	if (stale || on) {
		ret = stale ? -ESTALE : -EBUSY;
		goto out_unlock;
	}
	/*
	 * Under RCU, @h cannot be freed and its address reused for another
	 * resource while it is compared with the locker's requests.
	 */
	rcu_read_lock();
	h = hl_file_find(f, p, buf);
	if (op == HLOCK_IOC_HELD)
		ret = h ? hl_held(lk, h) : HLOCK_NL;
	else if (op == HLOCK_IOC_BLOCKING)
		ret = h ? hl_blocking(lk, h) : -ENOENT;
	else if (!h)
		ret = -ENOENT;
	else if (op == HLOCK_IOC_UNLOCK)
		ret = hl_unlock(lk, h, &g);
	else
		ret = hl_downgrade(lk, h, mode, &g);
	/* A lease ends with the last acquisition... */
	if (!ret && op == HLOCK_IOC_UNLOCK && unlikely(!hl_leases_idle(f)))
		hl_lease_unlocked(f, h);
	rcu_read_unlock();
	/*
	 * ...and follows a downgrade, out of the section, as refiling it may
	 * sleep (the locker holds @h: it stays).
	 */
	if (!ret && op == HLOCK_IOC_DOWNGRADE && unlikely(!hl_leases_idle(f)))
		hl_lease_refile(f, h);
out_unlock:
	/* The last unlock (or a cancel) may leave the locker holding nothing. */
	hl_file_ticket_put(f, &g);
	hl_file_unlock(f);
	hl_grants_run(&g);
	hl_end_post(f, &e, -ECANCELED);
	return ret;
}

/**
 * hl_do_path() - HLOCK_IOC_UNLOCK, HLOCK_IOC_DOWNGRADE, HLOCK_IOC_HELD,
 *	HLOCK_IOC_BLOCKING.
 * @f: The locker.
 * @op: The command.
 * @buf: The path.
 * @len: Its length.
 * @mode: The mode of HLOCK_IOC_DOWNGRADE.
 *
 * Context: process context, may sleep.
 * Return: as the command.
 */
int hl_do_path(struct hl_file *f, unsigned int op, const char *buf,
	       unsigned int len, unsigned int mode)
{
	/* Unlock, the one on every pair's path, gets a copy of its own. */
	if (likely(op == HLOCK_IOC_UNLOCK))
		return __hl_do_path(f, HLOCK_IOC_UNLOCK, buf, len, mode);
	return __hl_do_path(f, op, buf, len, mode);
}

/* Paths up to this long are copied on the stack. */
#define HL_SHORT_PATH	127

/* The two u32 that @w, as read from user memory, holds, in their order. */
static __always_inline void hl_word_split(u64 w, u32 *first, u32 *second)
{
	*first = IS_ENABLED(CONFIG_CPU_BIG_ENDIAN) ? upper_32_bits(w) :
						      lower_32_bits(w);
	*second = IS_ENABLED(CONFIG_CPU_BIG_ENDIAN) ? lower_32_bits(w) :
						       upper_32_bits(w);
}

/*
 * struct hlock_lock_args of this module's size, word by word in one
 * user-access window: a lock call's cheapest copy (copy_from_user() costs
 * several times as many instructions for these 48 bytes).  The two pairs
 * of u32 come in one read each (every read is tested for a fault).
 */
static __always_inline int
hl_get_lock_args(struct hlock_lock_args *a,
		 const struct hlock_lock_args __user *u)
{
	const u64 __user *uw = (const u64 __user *)u;
	u64 w1, w2;

	BUILD_BUG_ON(offsetof(struct hlock_lock_args, path_len) != 8 ||
		     offsetof(struct hlock_lock_args, flags) != 16);

	if (!user_access_begin(u, sizeof(*u)))
		return -EFAULT;
	unsafe_get_user(a->path, &u->path, efault);
	unsafe_get_user(w1, uw + 1, efault);
	unsafe_get_user(w2, uw + 2, efault);
	unsafe_get_user(a->timeout_ns, &u->timeout_ns, efault);
	unsafe_get_user(a->lease_ns, &u->lease_ns, efault);
	unsafe_get_user(a->reserved, &u->reserved, efault);
	user_access_end();
	hl_word_split(w1, &a->path_len, &a->mode);
	hl_word_split(w2, &a->flags, &a->__pad);
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/*
 * @len bytes at @u into @buf, @len from one to two sizes of @type: two
 * reads of @type, the first and the last of them, overlapping.  Inside a
 * user-access window; a fault goes to @label.
 */
#define hl_get_two(type, buf, u, len, label)				\
do {									\
	type a_, b_;							\
									\
	unsafe_get_user(a_, (const type __user *)(u), label);		\
	unsafe_get_user(b_,						\
			(const type __user *)((u) + (len) - sizeof(type)), \
			label);						\
	memcpy((buf), &a_, sizeof(type));				\
	memcpy((buf) + (len) - sizeof(type), &b_, sizeof(type));	\
} while (0)

/*
 * A short path, @len bytes at @u, into @buf, never reading past the
 * caller's @len: whole words, the last one ending at @len and overlapping
 * the one before; shorter paths in two reads of half the size or less.
 * A handful of loads for any path a lock call names.  Return: 0 or
 * -EFAULT.
 */
static int hl_get_short_path(char *buf, const char __user *u,
			     unsigned int len)
{
	unsigned int i;

	/* Unaligned user words only where the machine reads them cheaply. */
	if (!IS_ENABLED(CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS))
		return copy_from_user(buf, u, len) ? -EFAULT : 0;
	if (!user_access_begin(u, len))
		return -EFAULT;
	if (len >= sizeof(u64)) {
		u64 w;

		for (i = 0; i + sizeof(u64) < len; i += sizeof(u64)) {
			unsafe_get_user(w, (const u64 __user *)(u + i), efault);
			memcpy(buf + i, &w, sizeof(w));
		}
		i = len - sizeof(u64);
		unsafe_get_user(w, (const u64 __user *)(u + i), efault);
		memcpy(buf + i, &w, sizeof(w));
	} else if (len >= sizeof(u32)) {
		hl_get_two(u32, buf, u, len, efault);
	} else if (len >= sizeof(u16)) {
		hl_get_two(u16, buf, u, len, efault);
	} else if (len) {
		unsafe_get_user(buf[0], u, efault);
	}
	user_access_end();
	return 0;
efault:
	user_access_end();
	return -EFAULT;
}

/*
 * Copy and check the arguments of a path ioctl; then do it.  @cmd is the
 * command as this module defines it, @usize the size the caller's command
 * encodes.  Inlined: lock and unlock get copies of their own, where both
 * are constants and their tests fold away, and where the call's body is
 * inlined too (one frame, one stack check, for the whole call).
 */
static __always_inline long __hl_ioctl_path(struct hl_file *f,
					    unsigned int cmd, size_t usize,
					    void __user *uarg)
{
	/*
	 * Written before it is read: spare it the zeroing a kernel
	 * built with INIT_STACK_ALL_ZERO would do on every call.
	 */
	char short_buf[HL_SHORT_PATH + 1] __uninitialized;
	/* Every field is copied in, or zeroed by copy_struct_from_user(). */
	struct hlock_lock_args args __uninitialized;
	char *buf;
	long ret;

	if (usize == sizeof(args))
		ret = hl_get_lock_args(&args, uarg);
	else
		ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.__pad || args.reserved)
		return -EINVAL;
	/* A lease only on a lock, of a positive length. */
	if (args.lease_ns && (cmd != HLOCK_IOC_LOCK || args.lease_ns < 0))
		return -EINVAL;
	switch (cmd) {
	case HLOCK_IOC_LOCK:
		if (!hl_mode_valid(args.mode) || args.flags & ~HLOCK_F_ALL)
			return -EINVAL;
		break;
	case HLOCK_IOC_DOWNGRADE:
		if (!hl_mode_valid(args.mode) || args.flags || args.timeout_ns)
			return -EINVAL;
		break;
	default:
		if (args.mode || args.flags || args.timeout_ns)
			return -EINVAL;
		break;
	}
	if (args.path_len > HLOCK_PATH_MAX)
		return -ENAMETOOLONG;
	/*
	 * NUL-terminated for the trace events (a NUL inside is -EINVAL);
	 * on the stack when short, so most calls allocate nothing.
	 */
	if (args.path_len <= HL_SHORT_PATH) {
		buf = short_buf;
		if (args.path_len &&
		    hl_get_short_path(buf, u64_to_user_ptr(args.path),
				      args.path_len))
			return -EFAULT;
		buf[args.path_len] = '\0';
	} else {
		buf = memdup_user_nul(u64_to_user_ptr(args.path),
				      args.path_len);
		if (IS_ERR(buf))
			return PTR_ERR(buf);
	}
	/* The path is parsed under the locker's lock (hl_file_path()). */
	if (cmd == HLOCK_IOC_LOCK)
		ret = hl_do_lock(f, buf, args.path_len, args.mode, args.flags,
				 args.timeout_ns, args.lease_ns);
	else if (cmd == HLOCK_IOC_UNLOCK)
		ret = __hl_do_path(f, HLOCK_IOC_UNLOCK, buf, args.path_len, 0);
	else
		ret = hl_do_path(f, cmd, buf, args.path_len, args.mode);
	if (buf != short_buf)
		kfree(buf);
	return ret;
}

/**
 * hl_ioctl_lock() - HLOCK_IOC_LOCK.
 * @f: The locker.
 * @usize: The size of the caller's struct hlock_lock_args.
 * @uarg: It.
 *
 * Context: process context, may sleep.
 * Return: as HLOCK_IOC_LOCK.
 */
long hl_ioctl_lock(struct hl_file *f, size_t usize, void __user *uarg)
{
	return __hl_ioctl_path(f, HLOCK_IOC_LOCK, usize, uarg);
}

/**
 * hl_ioctl_unlock() - HLOCK_IOC_UNLOCK.
 * @f: The locker.
 * @usize: The size of the caller's struct hlock_lock_args.
 * @uarg: It.
 *
 * Context: process context, may sleep.
 * Return: as HLOCK_IOC_UNLOCK.
 */
long hl_ioctl_unlock(struct hl_file *f, size_t usize, void __user *uarg)
{
	return __hl_ioctl_path(f, HLOCK_IOC_UNLOCK, usize, uarg);
}

/**
 * hl_ioctl_path() - The other ioctls of a path: HLOCK_IOC_DOWNGRADE,
 *	HLOCK_IOC_HELD, HLOCK_IOC_BLOCKING.
 * @f: The locker.
 * @cmd: The command, as this module defines it.
 * @usize: The size of the caller's struct hlock_lock_args.
 * @uarg: It.
 *
 * Context: process context, may sleep.
 * Return: as the command.
 */
long hl_ioctl_path(struct hl_file *f, unsigned int cmd, size_t usize,
		   void __user *uarg)
{
	/*
	 * Lock and unlock have functions of their own: refused here, this
	 * copy inlines neither of their bodies.
	 */
	if (WARN_ON_ONCE(cmd == HLOCK_IOC_LOCK || cmd == HLOCK_IOC_UNLOCK))
		return -ENOTTY;
	return __hl_ioctl_path(f, cmd, usize, uarg);
}

/**
 * hl_file_polled() - Whether poll should report the locker ready.
 * @f: The locker.
 *
 * Return: true once its async operation was granted or failed.
 */
bool hl_file_polled(struct hl_file *f)
{
	return READ_ONCE(f->granted);
}

/* The serial of the last locker made (hl_file.serial). */
static atomic64_t hl_serial;

/**
 * hl_file_new() - A new locker in a lock space, owned by the caller.
 * @ns: The lock space; the locker takes this reference.
 * @size: Bytes of the locker's allocation, which starts with it: a kernel
 *	locker's state follows (hlock_kapi.c).
 *
 * Context: process context, may sleep.
 * Return: the locker, zeroed past itself, or an ERR_PTR() (-ENOMEM,
 * -EBUSY); @ns is put on error.
 */
struct hl_file *hl_file_new(struct hl_ns *ns, size_t size)
{
	struct hl_file *f;
	int ret;

	if (WARN_ON_ONCE(size < sizeof(*f))) {
		hl_ns_put(ns);
		return ERR_PTR(-EINVAL);
	}
	f = kzalloc(size, GFP_KERNEL_ACCOUNT);
	if (!f) {
		hl_ns_put(ns);
		return ERR_PTR(-ENOMEM);
	}
	f->ns = ns;
	f->root = &f->ns->root->head;
	/*
	 * Jumping queues is a privilege of the opener, as with other rights
	 * a file carries: CAP_SYS_NICE in the user namespace owning the
	 * lock space.  Unaudited: most openers only queue.
	 */
	f->may_jump = ns_capable_noaudit(f->ns->user_ns, CAP_SYS_NICE);
	hl_locker_init(&f->lk, &f->ns->graph);
	f->resume = hl_file_resume;
	mutex_init(&f->lock);
	refcount_set(&f->ref, 1);
	init_waitqueue_head(&f->wq);
	INIT_LIST_HEAD(&f->tk.node);
	hl_lease_init(f);
	RCU_INIT_POINTER(f->owner, get_pid(task_tgid(current)));
	get_task_comm(f->comm, current);
	f->slow.level = HL_NO_WAIT;
	/* The path of no call yet: the root, parsed (hl_file_path()). */
	hl_path_parse(&f->path, f->pathbuf, 0);
	f->serial = atomic64_inc_return(&hl_serial);
	ret = xa_alloc(&f->ns->lockers, &f->id, f, xa_limit_32b,
		       GFP_KERNEL_ACCOUNT);
	if (ret) {
		put_pid(rcu_dereference_protected(f->owner, true));
		hl_ns_put(f->ns);
		kfree(f);
		return ERR_PTR(ret);
	}
	return f;
}

/**
 * hl_file_open() - A new locker for @file.
 * @file: The file being opened.
 *
 * Return: 0 or -errno.
 */
int hl_file_open(struct file *file)
{
	struct hl_ns *ns = hl_ns_get();
	struct hl_file *f;

	if (IS_ERR(ns))
		return PTR_ERR(ns);
	f = hl_file_new(ns, sizeof(*f));
	if (IS_ERR(f))
		return PTR_ERR(f);
	file->private_data = f;
	return 0;
}

/**
 * hl_file_release_all() - Release everything a locker holds.
 * @f: The locker, with no operation in flight.
 * @g: Lockers the releases granted.
 *
 * Releases in batches, giving the lock and the CPU up in between, so a
 * locker holding many resources never holds anything for long; then
 * returns its ticket, as it holds nothing (close and yield both come here).
 *
 * Context: process context, f->lock held (dropped between batches).
 */
void hl_file_release_all(struct hl_file *f, struct hl_grants *g)
{
	lockdep_assert_held(&f->lock);
	while (!hl_locker_release_some(&f->lk, g, HL_RELEASE_BATCH)) {
		hl_file_unlock(f);
		hl_grants_run(g);
		/* Where a test holds the release between two batches. */
		hl_test_stall(HL_TP_RELEASE, f->comm,
			      strnlen(f->comm, sizeof(f->comm)));
		cond_resched();
		mutex_lock(&f->lock);
		/*
		 * Nobody claimed the slot meanwhile: close has the file to
		 * itself, and a yield or an owner's exit holds off every
		 * other task's lock call (hl_file_wait_exit()).
		 */
		WARN_ON_ONCE(f->lk.op.state != HL_OP_IDLE);
	}
	hl_file_ticket_put(f, g);
}

/*
 * Withdraw what the slot holds and release everything the locker holds,
 * as its last close does.  Context: f->lock held (dropped between batches
 * of releases); the slot idle or holding a call no thread waits in.
 */
static void hl_file_drop_all(struct hl_file *f, struct hl_ended *e,
			     struct hl_grants *g)
{
	struct hl_locker *lk = &f->lk;

	lockdep_assert_held(&f->lock);
	if (lk->op.state == HL_OP_WAITING || f->tk.pending ||
	    (lk->op.state != HL_OP_IDLE && f->async))
		hl_op_cancel_counted(f, HLOCK_CANCEL_CLOSE, g);
	if (!hl_end_take(f, g, e) && lk->op.state != HL_OP_IDLE)
		hl_op_clear(f, g);
	hl_file_release_all(f, g);
}

/**
 * hl_ioctl_owner() - HLOCK_IOC_OWNER: the locks belong to the file, or to
 *	the calling process.
 * @f: The caller's locker.
 * @usize: Size of the caller's struct hlock_owner_args.
 * @uarg: It.
 *
 * Context: process context, may sleep.
 * Return: 0 or -errno.
 */
long hl_ioctl_owner(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_owner_args args;
	struct pid *old;
	long ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags & ~HLOCK_OWNER_PROCESS || args.reserved)
		return -EINVAL;
	mutex_lock(&f->lock);
	old = f->proc_owner;
	f->proc_owner = args.flags ? get_pid(task_tgid(current)) : NULL;
	mutex_unlock(&f->lock);
	put_pid(old);
	return 0;
}

/*
 * Whether the calling task, which exits, ends its process: the whole
 * group exits (exit_group(), a fatal signal), or it is the last of its
 * threads.  Not a thread that exits alone, with a file table of its own,
 * while its process goes on, nor the other threads an exec ends.  (Its
 * group's live count drops before the task closes its files.)
 */
static bool hl_process_exits(void)
{
	const struct signal_struct *sig = current->signal;

	return (current->flags & PF_EXITING) &&
	       ((READ_ONCE(sig->flags) & SIGNAL_GROUP_EXIT) ||
		!atomic_read(&sig->live));
}

/**
 * hl_file_owner_exit() - A task closes a descriptor of the locker as it
 *	exits: if its process owns the locks (HLOCK_OWNER_PROCESS) and ends
 *	with it, they go.
 * @f: The locker.
 *
 * An exiting process closes its descriptors (->flush) before its parent
 * can reap it, whatever else holds the file: a request on a ring, a ring's
 * registered files, another process.  What the slot holds is withdrawn
 * (a ring's lock completes with -ECANCELED) and everything is released,
 * as by the last close; the locker is then its file's again.  Meanwhile
 * other tasks' lock calls and yields wait (hl_file_wait_exit()): the
 * release drops the lock between batches, and what such a call pinned
 * would be released under it.  A blocking call or a yield of another
 * process sharing the locker that owns the slot already: then nothing is
 * done, and the locks stay until the last close.
 *
 * Context: process context, the exiting task; may sleep.
 */
void hl_file_owner_exit(struct hl_file *f)
{
	struct hl_ended e = { };
	struct hl_locker *lk = &f->lk;
	struct pid *owner;
	struct hl_grants g;

	if (!hl_process_exits())
		return;
	hl_grants_init(&g);
	mutex_lock(&f->lock);
	owner = f->proc_owner;
	if (!owner || owner != task_tgid(current) || f->yielder ||
	    (lk->op.state != HL_OP_IDLE && !f->async && !f->end)) {
		mutex_unlock(&f->lock);
		return;
	}
	f->proc_owner = NULL;
	f->exiting = current;
	hl_file_drop_all(f, &e, &g);
	/* Also what the lease work took over between the batches. */
	hl_lease_forget(f);
	f->exiting = NULL;
	/* The calls that wait for the release look again. */
	hl_slot_changed(f);
	hl_file_unlock(f);
	hl_grants_run(&g);
	hl_end_post(f, &e, -ECANCELED);
	put_pid(owner);
}

/**
 * hl_file_release() - Close a locker: cancel, release, put.
 * @f: The locker.
 *
 * Releases as hl_file_release_all() does.  The locker stays in the lock
 * table (and HLOCK_IOC_REFUSE finds it) until its wait is withdrawn and
 * everything it held is released: those stand in others' way until then,
 * and a table without them showed others' grants blocking a waiter it did
 * not list.
 */
void hl_file_release(struct hl_file *f)
{
	struct hl_locker *lk = &f->lk;
	struct hl_ended e = { };
	struct hl_grants g;

	hl_grants_init(&g);
	/* Where a test holds the close, still in the table (hlock_test.h). */
	hl_test_stall(HL_TP_CLOSE, f->comm, strnlen(f->comm, sizeof(f->comm)));
	mutex_lock(&f->lock);
	hl_file_drop_all(f, &e, &g);
	/* It withdrew its ticket wait and returned its ticket. */
	WARN_ON_ONCE(f->tk.state != HL_TICKET_NONE);
	/*
	 * Out of the lock table once empty, under its lock: a walk that got
	 * it before finds nothing held; none gets it after.
	 */
	xa_erase(&f->ns->lockers, f->id);
	hl_locker_drop_spares(lk);
	hl_file_unlock(f);
	hl_grants_run(&g);
	hl_end_post(f, &e, -ECANCELED);
	hl_lease_close(f);
	hl_file_put(f);
}
