// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: yield (HLOCK_IOC_YIELD), MongoDB's saveLockStateAndUnlock and
 * restoreLockState as one call.
 *
 * A yield that finds a waiter in the way of what its locker holds saves
 * what the locker holds (paths, modes, acquisition counts: resources
 * unused after the release may be reclaimed, so no head pointer is kept),
 * releases everything as close does, runs the continuations of the
 * waiters that granted before asking for anything again, then locks each
 * saved path again through the lock call's own machinery (hl_lock_call()),
 * oldest request first, which is root first: a request's parent is always
 * older than it.  Each resource is locked in the mode it was held in, as
 * often as it was acquired; one held only for the intents of its
 * descendants is locked once in its mode too, so that it comes back in
 * that mode, and that acquisition is dropped once its descendants hold it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "hlock_internal.h"
#include "hlock_locker.h"
#include "hlock_space.h"
#include "hlock_stats.h"
#include "hlock_ticket.h"
#include "hlock_yield.h"
#include "hlock_trace.h"

/* Requests looked at between two looks at the scheduler. */
#define HL_YIELD_BATCH	64

/**
 * struct hl_saved - One request of a yielding locker.
 * @off: Offset of its path, NUL-terminated, in hl_yield.paths.
 * @len: Length of the path.
 * @mode: The mode held.
 * @flags: HLOCK_F_FRONT and HLOCK_F_COMPAT_FIRST it carried, but for those
 *	the root's S, SIX and X get by themselves (they come back alone).
 * @own: Acquisitions made on the resource itself; 0 when it was held only
 *	for the intents of descendants.
 * @lease_ns: Length of its lease, 0 for none: it comes back with one.
 */
struct hl_saved {
	size_t off;
	u16 len;
	u8 mode;
	u8 flags;
	u32 own;
	u64 lease_ns;
};

/**
 * struct hl_yield - What a yielding locker held.
 * @nr: Its requests.
 * @reqs: They, oldest first (so every parent before its children).
 * @paths: Their paths.
 */
struct hl_yield {
	unsigned int nr;
	struct hl_saved *reqs;
	char *paths;
};

/*
 * Whether a waiter or a pending conversion conflicts with something the
 * locker holds, or a locker waits for a ticket of the pool it holds one
 * of: only then is there anyone to yield to.  O(1) per request, one head
 * lock at a time.  Context: f->lock held, no operation in flight.
 */
static bool hl_yield_needed(struct hl_file *f)
{
	struct hl_req *req;
	unsigned int n = 0;

	lockdep_assert_held(&f->lock);
	if (hl_ticket_contended(f))
		return true;
	hlist_for_each_entry(req, &f->lk.reqs, locker_node) {
		if (hl_req_blocks(req))
			return true;
		if (!(++n % HL_YIELD_BATCH))
			cond_resched();
	}
	return false;
}

/*
 * Save what the locker holds into @y, allocating first: on -ENOMEM
 * nothing was released.  Its requests and their ancestors are alive: the
 * locker holds them.  Context: f->lock held, no operation in flight.
 */
static int hl_yield_save(struct hl_file *f, struct hl_yield *y)
{
	struct hl_locker *lk = &f->lk;
	struct hl_req *req;
	size_t bytes = 0, off = 0;
	unsigned int i;

	lockdep_assert_held(&f->lock);
	hlist_for_each_entry(req, &lk->reqs, locker_node)
		bytes += hl_path_len(req->head) + 1;
	y->nr = lk->nr_reqs;
	y->reqs = kvmalloc_array(y->nr, sizeof(*y->reqs), GFP_KERNEL_ACCOUNT);
	y->paths = kvmalloc(bytes, GFP_KERNEL_ACCOUNT);
	if (!y->reqs || !y->paths)
		return -ENOMEM;
	/* lk->reqs is newest first: fill from the end. */
	i = y->nr;
	hlist_for_each_entry(req, &lk->reqs, locker_node) {
		struct hl_saved *s = &y->reqs[--i];
		/* No conversion is pending: only the locker changes them. */
		unsigned int flags = READ_ONCE(req->flags);

		s->len = hl_path_len(req->head);
		s->off = off;
		hl_path_fill(req->head, y->paths + off, s->len);
		off += s->len + 1;
		s->mode = READ_ONCE(req->mode);
		s->flags = flags & HL_RF_AUTO ? 0 :
			   flags & (HLOCK_F_FRONT | HLOCK_F_COMPAT_FIRST);
		s->own = req->own;
		/* A lease comes back as long as it was, from the new grant. */
		s->lease_ns = req->lease ? req->lease->len : 0;
		if (!(i % HL_YIELD_BATCH))
			cond_resched();
	}
	return 0;
}

static void hl_yield_free(struct hl_yield *y)
{
	kvfree(y->reqs);
	kvfree(y->paths);
}

/*
 * Drop the acquisition that brought back the mode of a request saved with
 * no acquisition of its own: its descendants hold it now, in that mode.
 * Context: f->lock held.
 */
static void hl_yield_drop(struct hl_file *f, const char *buf,
			  unsigned int len, struct hl_grants *g)
{
	struct hl_path p;
	struct hl_head *h;
	int ret;

	ret = hl_path_parse(&p, buf, len);
	if (!ret) {
		rcu_read_lock();
		h = hl_path_find(f->root, &p, buf);
		ret = h ? hl_unlock(&f->lk, h, g) : -ENOENT;
		rcu_read_unlock();
	}
	/* Nobody else may unlock while the locker yields. */
	WARN_ON_ONCE(ret);
}

/*
 * Lock again what @y saved, under one deadline.  A lease given back may
 * expire while a later lock call waits, and be taken over, or one not yet
 * released when the yield's release dropped the lock between batches: the
 * locker then lost part of what it yielded (@taken: the takeovers counted
 * before the release), and the restore fails with -ESTALE.
 * Context: f->lock held (dropped while a lock call waits).  Return: 0, or
 * the error of the lock call that failed, or -ESTALE; what was locked
 * before stays locked.
 */
static int hl_yield_restore(struct hl_file *f, const struct hl_yield *y,
			    unsigned long taken, s64 timeout_ns,
			    ktime_t deadline, struct hl_grants *g)
{
	unsigned int i;
	u32 n;
	int ret;

	for (i = 0; i < y->nr; i++) {
		const struct hl_saved *s = &y->reqs[i];

		for (n = max(s->own, 1U); n; n--) {
			ret = hl_lock_call(f, y->paths + s->off, s->len,
					   s->mode, s->flags, timeout_ns,
					   s->lease_ns, deadline,
					   TASK_INTERRUPTIBLE, g);
			if (ret)
				return ret;
			/* Counts are the caller's to choose: stay killable. */
			cond_resched();
			if (fatal_signal_pending(current))
				return -EINTR;
		}
	}
	/* The lock was held since the last call returned: no takeover since. */
	if (f->leases.taken != taken)
		return -ESTALE;
	for (i = 0; i < y->nr; i++)
		if (!y->reqs[i].own)
			hl_yield_drop(f, y->paths + y->reqs[i].off,
				      y->reqs[i].len, g);
	return 0;
}

/**
 * hl_do_yield() - HLOCK_IOC_YIELD.
 * @f: The locker.
 * @timeout_ns: As in struct hlock_yield_args.
 *
 * Context: process context, may sleep.
 * Return: 0 or -errno, as HLOCK_IOC_YIELD.
 */
int hl_do_yield(struct hl_file *f, s64 timeout_ns)
{
	ktime_t deadline = hl_deadline(timeout_ns);
	struct hl_yield y = { };
	unsigned long taken;
	struct hl_grants g;
	int ret;

	hl_grants_init(&g);
	mutex_lock(&f->lock);
	/* The owner's exit releases: the slot is looked at after. */
	ret = hl_file_wait_exit(f);
	if (ret)
		goto out_unlock;
	/* Async, ring or another thread's lock in flight, or its yield. */
	if (f->lk.op.state != HL_OP_IDLE || f->yielder) {
		ret = -EBUSY;
		goto out_unlock;
	}
	ret = 0;
	if (!hl_yield_needed(f))
		goto out_unlock;
	ret = hl_yield_save(f, &y);
	if (ret)
		goto out_unlock;
	f->yielder = current;
	hl_stat_add(f, yields, 1);
	if (trace_hlock_yield_enabled())
		trace_hlock_yield(hl_file_pid_ns(f, &init_pid_ns), y.nr,
				  timeout_ns);
	/*
	 * Counted before the release, which drops the lock between batches:
	 * a lease taken over meanwhile is lost as one taken over later is.
	 */
	taken = f->leases.taken;
	hl_file_release_all(f, &g);
	/*
	 * The waiters the release granted move on before anything is asked
	 * for again: a waiter first in its queue is granted ahead of the
	 * re-acquisition, which queues behind whatever still waits.
	 */
	hl_file_unlock(f);
	hl_grants_run(&g);
	mutex_lock(&f->lock);
	ret = hl_yield_restore(f, &y, taken, timeout_ns, deadline, &g);
	/* Failed: the locker holds nothing, as after a close. */
	if (ret)
		hl_file_release_all(f, &g);
	f->yielder = NULL;
out_unlock:
	hl_file_unlock(f);
	hl_grants_run(&g);
	hl_yield_free(&y);
	return ret;
}
