// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: leases and their takeover.
 *
 * A lock call with lease_ns holds its acquisition under a lease that
 * runs from the grant; HLOCK_IOC_RENEW starts every lease of the locker
 * again.  A lease that expired is taken over only when a request waits
 * on a conflict with it; until then it stays held.  Two events can bring
 * the two together, and each is O(1) under a head lock:
 *
 * - the lease expires (the locker's timer, then its work item): the lease
 *   is filed on the resource of each level of its path, under the mode
 *   its acquisition holds there (hl_res.leases), and hl_head_waited() says
 *   whether anyone, here or on another node, waits on a conflict with that
 *   mode;
 * - a request starts to wait (hl_lease_claim(); a try never waits), or
 *   another node does (a blocking AST): the lists of the modes it
 *   conflicts with hold exactly the leases it claims.
 *
 * A claimed ("doomed") lease is taken over by its own locker's work item,
 * under that locker's lock and no head lock, as an unlock would: the
 * acquisition and whatever the locker acquired below the path are
 * released with their intents, and the waiters are granted in order.  The
 * path of each lease so released goes stale: its next HLOCK_IOC_UNLOCK
 * says ESTALE, and poll() reports POLLPRI until then.
 *
 * Lock order as everywhere: the locker lock, then one head lock at a
 * time.  The work item takes no other locker's lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/memcontrol.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "hlock_internal.h"
#include "hlock_hooks.h"
#include "hlock_lease.h"
#include "hlock_stats.h"
#include "hlock_test.h"
#include "hlock_ticket.h"
#include "hlock_trace.h"

/* Leases the work item expires between two looks at the scheduler. */
#define HL_LEASE_BATCH	64
/* After memory for a resource's lease lists was lacking, try again then. */
#define HL_LEASE_RETRY_NS	(10 * NSEC_PER_MSEC)

/* The mode @l's acquisition holds at level @level (head lock held). */
static unsigned int hl_lease_mode(const struct hl_lease *l, unsigned int level)
{
	const struct hl_req *req = l->req;

	return level == req->head->level ? req->mode : hl_intent(req->mode);
}

/* Let @l's locker take it over: a request of @taker waits on it. */
static void hl_lease_doom(struct hl_lease *l, struct hl_file *taker)
{
	struct hl_file *f = hl_file_of(l->req->locker);

	if (test_and_set_bit(0, &l->doomed))
		return;
	if (taker) {
		l->taker = hl_file_pid_ns(taker, &init_pid_ns);
		memcpy(l->taker_comm, taker->comm, sizeof(l->taker_comm));
	}
	/* Its locker closes only after its leases left every list. */
	queue_work(system_wq, &f->leases.work);
}

/* Take @l off the expired lists of @h and the levels above it. */
static void hl_lease_unfile_from(struct hl_lease *l, struct hl_head *h);

/*
 * A resource's lists, for a lease of @f.  Charged to the memory cgroup of
 * the locker's first lease (hl_lease_prepare()), whichever context files
 * it: most often the locker's work, in a kworker, which charges nobody.
 */
static struct hl_res_leases *hl_res_leases_alloc(struct hl_file *f)
{
	struct mem_cgroup *old = set_active_memcg(f->leases.memcg);
	struct hl_res_leases *rl = kzalloc(sizeof(*rl), GFP_KERNEL_ACCOUNT);

	set_active_memcg(old);
	return rl;
}

/*
 * File the expired @l on every level of its path, and claim it at once if
 * a request already waits on a conflict with it there.  A resource gets
 * its lists with the first lease filed there.  Context: the locker lock
 * held; may sleep.  Return: false when memory for the lists was lacking:
 * then @l is filed nowhere, and its locker's work tries again a while
 * later (hl_lease_arm()).
 */
static bool hl_lease_file(struct hl_lease *l)
{
	struct hl_res_leases *spare = NULL;
	struct hl_head *h;

	const struct hl_req *own = l->req;

	for (h = l->req->head; h; h = h->parent, own = own ? own->up : NULL) {
		struct hl_res *r = hl_res_of(h);
		unsigned int m;

		if (!READ_ONCE(r->leases) && !spare) {
			spare = hl_res_leases_alloc(hl_file_of(l->req->locker));
			if (!spare) {
				if (h != l->req->head)
					hl_lease_unfile_from(l, l->req->head);
				return false;
			}
		}
		hl_head_lock(h);
		if (!r->leases) {
			WRITE_ONCE(r->leases, spare);
			spare = NULL;
		}
		m = hl_lease_mode(l, h->level);
		hlist_add_head(&l->exp[h->level], &r->leases->list[m]);
		/*
		 * Waiters here or on other nodes (hl_head_waited()), but for
		 * the locker's own conversion: its own wait claims nothing of
		 * its lease, as in hl_lease_claim().
		 */
		if (hl_conflicts(m, hl_head_waited_but(h, own))) {
			struct hl_req *w = hl_queue_first(h, 0);

			hl_lease_doom(l, w && w->locker != l->req->locker ?
				      hl_file_of(w->locker) : NULL);
		}
		hl_head_unlock(h);
	}
	kfree(spare);
	l->expired = true;
	return true;
}

/*
 * Take @l off the expired list of @h, whichever mode's it is on.  Context:
 * the head lock of @h held.
 */
static void hl_lease_unfile_one(struct hl_lease *l, struct hl_head *h)
{
	struct hl_res *r = hl_res_of(h);
	struct hlist_node *next = l->exp[h->level].next;
	unsigned int m;

	hl_assert_head_locked(h);
	/* The run behind a tail is one locker's: the next one starts it. */
	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++)
		if (r->leases->tail[m] == l)
			r->leases->tail[m] = hlist_entry_safe(next,
							      struct hl_lease,
							      exp[h->level]);
	hlist_del_init(&l->exp[h->level]);
}

/*
 * Take @l off the expired lists of @h and every level above it, as far as
 * it is filed there.  Context: the locker lock held.
 */
static void hl_lease_unfile_from(struct hl_lease *l, struct hl_head *h)
{
	for (; h; h = h->parent) {
		hl_head_lock(h);
		if (!hlist_unhashed(&l->exp[h->level]))
			hl_lease_unfile_one(l, h);
		hl_head_unlock(h);
	}
}

/* Take @l off the expired lists.  Context: the locker lock held. */
static void hl_lease_unfile(struct hl_lease *l)
{
	if (!l->expired)
		return;
	hl_lease_unfile_from(l, l->req->head);
	l->expired = false;
}

/*
 * When a lease of @len ns started at @now ends: beyond what a ktime_t
 * counts (a lease_ns near S64_MAX), never, which is KTIME_MAX to the
 * timer.  Unclamped, ns_to_ktime() would make that end a negative time.
 */
static u64 hl_lease_end(u64 now, u64 len)
{
	return min_t(u64, now + len, KTIME_MAX);
}

/*
 * Fire at the earliest expiry of the locker's leases, if any; after a
 * lease could not be filed (@retry), not before HL_LEASE_RETRY_NS.
 */
static void hl_lease_arm(struct hl_file *f, bool retry)
{
	u64 next = U64_MAX;
	struct hl_lease *l;

	lockdep_assert_held(&f->lock);
	list_for_each_entry(l, &f->leases.held, node)
		if (!l->expired && l->expires < next)
			next = l->expires;
	if (retry)
		next = max(next, hl_clock() + HL_LEASE_RETRY_NS);
	if (next != U64_MAX)
		hrtimer_start(&f->leases.timer, ns_to_ktime(next),
			      HRTIMER_MODE_ABS);
}

/* Arm the timer for @l if it expires before what it is set for. */
static void hl_lease_arm_one(struct hl_file *f, struct hl_lease *l)
{
	ktime_t at = ns_to_ktime(l->expires);

	if (!hrtimer_is_queued(&f->leases.timer) ||
	    ktime_before(at, hrtimer_get_expires(&f->leases.timer)))
		hrtimer_start(&f->leases.timer, at, HRTIMER_MODE_ABS);
}

/*
 * Whether a lock call of @l's locker runs through @l's request: it found
 * it on its way (a pin), or made it and was not collected yet (an
 * asynchronous call granted meanwhile: its caller does not know of the
 * grant).  Its lease is then not taken over.  Context: f->lock held.
 */
static bool hl_lease_in_flight(struct hl_file *f, const struct hl_lease *l)
{
	const struct hl_op *op = &f->lk.op;
	unsigned int i;

	lockdep_assert_held(&f->lock);
	if (l->req->pin)
		return true;
	if (op->state == HL_OP_IDLE)
		return false;
	for (i = 0; i < op->nr; i++)
		if (op->reqs[i] == l->req)
			return true;
	return false;
}

/*
 * Take @l over: release its acquisition, what the locker holds below it
 * and their intents.  Context: the locker lock held, no head lock.
 */
static void hl_lease_take(struct hl_file *f, struct hl_lease *l,
			  struct hl_grants *g)
{
	unsigned int mode = l->req->mode;
	pid_t victim = hl_file_pid_ns(f, &init_pid_ns);

	/* Users choose paths and command names: escape them. */
	if (l->taker)
		pr_info_ratelimited("lease of pid %d (%*pE) on \"%*pE\" expired: taken over for pid %d (%*pE)\n",
				    victim,
				    (int)strnlen(f->comm, sizeof(f->comm)),
				    f->comm, l->path_len, l->path, l->taker,
				    (int)strnlen(l->taker_comm,
						 sizeof(l->taker_comm)),
				    l->taker_comm);
	else
		pr_info_ratelimited("lease of pid %d (%*pE) on \"%*pE\" expired: taken over for a waiter, of another node or gone\n",
				    victim,
				    (int)strnlen(f->comm, sizeof(f->comm)),
				    f->comm, l->path_len, l->path);
	trace_hlock_takeover(victim, l->path, mode);
	hl_stat_add(f, takeovers, 1);
	f->leases.taken++;
	f->leases.taking = true;
	hl_release_tree(&f->lk, l->req, g);
	f->leases.taking = false;
}

/*
 * Expire the leases due, take over the doomed ones that no operation in
 * flight runs through, arm the timer for the next expiry.
 *
 * One pass over the leases, then the takeovers, newest lease first: a
 * takeover walks the locker's requests newer than the lease's own
 * (hl_release_tree()), and the newer doomed ones are gone by then, so n
 * leases claimed at once cost O(n), not O(n^2).  A takeover may release
 * other doomed leases (below its path): they leave the list it works on.
 * The CPU is offered between steps; the locker lock is a mutex.
 */
static void hl_lease_work(struct work_struct *work)
{
	struct hl_file *f = container_of(work, struct hl_file, leases.work);
	struct hl_lease *l, *tmp;
	unsigned int n = 0, stale;
	LIST_HEAD(doomed);
	bool changed, retry = false;
	struct hl_grants g;
	u64 now;

	hl_grants_init(&g);
	hl_test_stall(HL_TP_LEASE_WORK, f->comm,
		      strnlen(f->comm, sizeof(f->comm)));
	mutex_lock(&f->lock);
	stale = f->leases.nr_stale;
	f->leases.deferred = false;
	now = hl_clock();
	list_for_each_entry_safe(l, tmp, &f->leases.held, node) {
		/* Out of memory for a resource's lists: filed later. */
		if (!l->expired && l->expires <= now && !hl_lease_file(l))
			retry = true;
		if (test_bit(0, &l->doomed)) {
			if (hl_lease_in_flight(f, l))
				f->leases.deferred = true;
			else
				/* At the front: newest first. */
				list_move(&l->node, &doomed);
		}
		/* A mutex: the CPU may go to others, the lock stays. */
		if (++n % HL_LEASE_BATCH == 0)
			cond_resched();
	}
	while ((l = list_first_entry_or_null(&doomed, struct hl_lease,
					     node))) {
		/* Held again: the release moves it to the stale list. */
		list_move_tail(&l->node, &f->leases.held);
		hl_lease_take(f, l, &g);
		cond_resched();
	}
	hl_lease_arm(f, retry);
	/* Everything taken over: its ticket goes to whoever waits for one. */
	hl_ticket_put_idle(f, &g);
	changed = f->leases.nr_stale != stale;
	if (changed)
		WRITE_ONCE(f->gen, f->gen + 1);
	mutex_unlock(&f->lock);
	/* POLLPRI is set: its pollers and the slot's sleepers wake. */
	if (changed)
		wake_up_interruptible_poll(&f->wq, EPOLLPRI);
	hl_grants_continue(&g);
}

static enum hrtimer_restart hl_lease_timer_fn(struct hrtimer *timer)
{
	struct hl_file *f = container_of(timer, struct hl_file, leases.timer);

	/* The locker lock is a mutex: expire in process context. */
	queue_work(system_wq, &f->leases.work);
	return HRTIMER_NORESTART;
}

/**
 * hl_lease_init() - Set up a new locker's leases.
 * @f: The locker.
 */
void hl_lease_init(struct hl_file *f)
{
	INIT_LIST_HEAD(&f->leases.held);
	INIT_LIST_HEAD(&f->leases.stale);
	hrtimer_init(&f->leases.timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	f->leases.timer.function = hl_lease_timer_fn;
	INIT_WORK(&f->leases.work, hl_lease_work);
}

/**
 * hl_lease_prepare() - A lock call asks for a lease: keep its length, and
 *	memory for a new lease, before anything is granted.
 * @f: The locker, its operation claimed and its path set.
 * @lease_ns: The length, 0 for no lease.
 *
 * Context: f->lock held; may sleep.
 * Return: 0 or -ENOMEM.
 */
int hl_lease_prepare(struct hl_file *f, s64 lease_ns)
{
	struct hl_lease *l = f->leases.spare;
	unsigned int len = f->path.len;

	lockdep_assert_held(&f->lock);
	f->leases.want = lease_ns;
	if (!lease_ns)
		return 0;
	/* What the work allocates for the locker is charged here (NULL: root). */
	if (!f->leases.memcg)
		f->leases.memcg = get_mem_cgroup_from_mm(current->mm);
	/* A spare's path_len is the room it has; kept if it is enough. */
	if (l && l->path_len >= len)
		return 0;
	l = kmalloc(struct_size(l, path, len + 1), GFP_KERNEL_ACCOUNT);
	if (!l)
		return -ENOMEM;
	l->path_len = len;
	kfree(f->leases.spare);
	f->leases.spare = l;
	return 0;
}

/**
 * hl_lease_grant() - The lock call in flight was granted: its lease, if it
 *	asked for one, starts now.
 * @f: The locker, its operation in HL_OP_GRANTED.
 *
 * The lease is the request's: a lock call with a lease on a path the
 * locker holds already sets its length and starts it again.
 *
 * Context: f->lock held.
 */
void hl_lease_grant(struct hl_file *f)
{
	struct hl_op *op = &f->lk.op;
	struct hl_req *req = op->reqs[op->nr - 1];
	struct hl_lease *l = req->lease;

	lockdep_assert_held(&f->lock);
	if (!f->leases.want)
		return;
	if (!l) {
		l = f->leases.spare;
		f->leases.spare = NULL;
		memset(l, 0, sizeof(*l));
		l->req = req;
		l->path_len = f->path.len;
		memcpy(l->path, f->pathbuf, f->path.len + 1);
		list_add_tail(&l->node, &f->leases.held);
		req->lease = l;
	}
	/* Until the call is collected, a withdrawal puts it back. */
	f->leases.granted = l;
	f->leases.old_len = l->len;
	f->leases.old_expires = l->expires;
	hl_lease_unfile(l);
	l->len = f->leases.want;
	l->expires = hl_lease_end(hl_clock(), l->len);
	f->leases.want = 0;
	hl_lease_arm_one(f, l);
}

/*
 * Unfile @l and refile it with the modes its acquisition holds now; out
 * of memory for a resource's lists, the locker's work files it later.
 * Context: f->lock held; may sleep.
 */
static void hl_lease_refile_one(struct hl_file *f, struct hl_lease *l)
{
	if (l && l->expired) {
		hl_lease_unfile(l);
		if (!hl_lease_file(l))
			hl_lease_arm(f, true);
	}
}

/**
 * hl_lease_op_end() - An operation of the locker ends (collected or
 *	undone): the leases it converted hold new modes, and a takeover it
 *	held off may go on.
 * @f: The locker, its slot not emptied yet.
 *
 * Context: f->lock held.
 */
void hl_lease_op_end(struct hl_file *f)
{
	struct hl_op *op = &f->lk.op;
	unsigned int l;

	lockdep_assert_held(&f->lock);
	f->leases.want = 0;
	f->leases.granted = NULL;
	/* Most lockers hold no lease: nothing to refile, nothing deferred. */
	if (likely(list_empty(&f->leases.held) && !f->leases.deferred))
		return;
	if (op->state == HL_OP_GRANTED)
		for (l = 0; l < op->nr; l++)
			hl_lease_refile_one(f, op->reqs[l]->lease);
	if (f->leases.deferred)
		queue_work(system_wq, &f->leases.work);
}

/* Free @l, off every list.  Context: f->lock held. */
static void hl_lease_free(struct hl_file *f, struct hl_lease *l)
{
	if (f->leases.granted == l)
		f->leases.granted = NULL;
	hl_lease_unfile(l);
	l->req->lease = NULL;
	list_del(&l->node);
	kfree(l);
}

/**
 * hl_lease_withdrawn() - The lock call in flight was withdrawn after its
 *	grant (an unlock of its path, a ring's cancel): the lease the grant
 *	made goes, the one it restarted runs on as before the call.
 * @f: The locker, its operation just undone.
 *
 * A failed call leaves everything as it was: a lease that the caller never
 * got must not be taken over for it later, nor one it held outlive what it
 * was asked for.  A lease put back that expired meanwhile is filed again,
 * and claimed if a waiter conflicts with it.
 *
 * Context: f->lock held.
 */
void hl_lease_withdrawn(struct hl_file *f)
{
	struct hl_lease *l = f->leases.granted;

	lockdep_assert_held(&f->lock);
	if (!l)
		return;
	f->leases.granted = NULL;
	if (!f->leases.old_len) {
		hl_lease_free(f, l);
		return;
	}
	hl_lease_unfile(l);
	l->len = f->leases.old_len;
	l->expires = f->leases.old_expires;
	if (l->expires > hl_clock())
		clear_bit(0, &l->doomed);
	/* Expired, but no memory to file it: the work files it later. */
	hl_lease_arm(f, l->expires <= hl_clock() && !hl_lease_file(l));
}

/**
 * hl_lease_refile() - The locker downgraded its request on @h: a lease on
 *	it keeps running with the new mode.
 * @f: The locker.
 * @h: The resource, held by the locker.
 *
 * Context: f->lock held; may sleep.
 */
void hl_lease_refile(struct hl_file *f, struct hl_head *h)
{
	struct hl_req *req;

	lockdep_assert_held(&f->lock);
	if (likely(list_empty(&f->leases.held)))
		return;
	req = hl_locker_find(&f->lk, h);
	if (req)
		hl_lease_refile_one(f, req->lease);
}

/**
 * hl_lease_unlocked() - An unlock left no acquisition on @h itself: its
 *	lease, if any, ends with them (what is held below keeps the request).
 * @f: The locker.
 * @h: The resource.
 *
 * Context: f->lock and the RCU read lock held.
 */
void hl_lease_unlocked(struct hl_file *f, struct hl_head *h)
{
	struct hl_req *req;

	lockdep_assert_held(&f->lock);
	if (likely(list_empty(&f->leases.held)))
		return;
	req = hl_locker_find(&f->lk, h);
	if (req && !req->own && req->lease)
		hl_lease_free(f, req->lease);
}

/**
 * hl_lease_release() - A request with a lease is released: the lease ends,
 *	or goes stale when a takeover releases it.
 * @req: The request, still on its resource.
 *
 * Context: its locker's lock held, no head lock.
 */
void hl_lease_release(struct hl_req *req)
{
	struct hl_file *f = hl_file_of(req->locker);
	struct hl_lease *l = req->lease;

	lockdep_assert_held(&f->lock);
	if (!f->leases.taking) {
		hl_lease_free(f, l);
		return;
	}
	if (f->leases.granted == l)
		f->leases.granted = NULL;
	hl_lease_unfile(l);
	req->lease = NULL;
	l->req = NULL;
	list_move_tail(&l->node, &f->leases.stale);
	WRITE_ONCE(f->leases.nr_stale, f->leases.nr_stale + 1);
}

/**
 * hl_lease_stale() - Whether an unlock of a path finds it taken over; if
 *	so, it does once.
 * @f: The locker.
 * @buf: The path.
 * @len: Its length.
 *
 * Context: f->lock held.
 * Return: true (the unlock says ESTALE) once per takeover of the path.
 */
bool hl_lease_stale(struct hl_file *f, const char *buf, unsigned int len)
{
	struct hl_lease *l;

	lockdep_assert_held(&f->lock);
	if (likely(list_empty(&f->leases.stale)))
		return false;
	list_for_each_entry(l, &f->leases.stale, node) {
		if (l->path_len == len && !memcmp(l->path, buf, len)) {
			list_del(&l->node);
			kfree(l);
			WRITE_ONCE(f->leases.nr_stale, f->leases.nr_stale - 1);
			/* POLLPRI may clear: the slot's sleepers look again. */
			WRITE_ONCE(f->gen, f->gen + 1);
			f->wake = true;
			return true;
		}
	}
	return false;
}

/**
 * hl_lease_claim() - A request starts to wait on @h: it claims the expired
 *	leases there whose mode conflicts with the one it asks for.
 * @lk: Its locker, or NULL for a wait of another node, which claims them
 *	all.
 * @h: The resource.
 * @mode: The mode it asks for.
 *
 * One step per lease claimed, and one per mode: the lists are by mode.
 * The locker's own leases are left alone, and left at the end of each list
 * it walked, all of the list by then: its next wait stops where they start
 * (hl_res_leases.tail), so a locker's own expired leases cost its waits
 * nothing, however many it holds.  New leases are filed at the front.  A
 * try never gets here: it does not wait (op_wait_claims()).
 *
 * Context: the head lock of @h held.
 */
void hl_lease_claim(struct hl_locker *lk, struct hl_head *h, unsigned int mode)
{
	struct hl_res *r = hl_res_of(h);
	struct hlist_node *tmp;
	struct hl_lease *l;
	unsigned int m;

	hl_assert_head_locked(h);
	/* No lease was ever filed here. */
	if (!r->leases)
		return;
	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++) {
		if (!hl_conflicts(mode, hl_mode_bit(m)))
			continue;
		hlist_for_each_entry_safe(l, tmp, &r->leases->list[m],
					  exp[h->level]) {
			if (l->req->locker == lk) {
				/* Only its own from here on. */
				if (l == r->leases->tail[m])
					break;
				continue;
			}
			hl_lease_unfile_one(l, h);
			hl_lease_doom(l, lk ? hl_file_of(lk) : NULL);
		}
		/* What is left is all its own. */
		r->leases->tail[m] = hlist_entry_safe(r->leases->list[m].first,
						      struct hl_lease,
						      exp[h->level]);
	}
}

/**
 * hl_do_renew() - HLOCK_IOC_RENEW: start every lease of the locker again.
 * @f: The locker.
 *
 * A lease a waiter already claimed is not renewed: it is taken over.
 *
 * Context: process context, may sleep.
 * Return: how many leases were renewed.
 */
int hl_do_renew(struct hl_file *f)
{
	struct hl_lease *l;
	unsigned int i = 0;
	int n = 0;
	u64 now;

	mutex_lock(&f->lock);
	now = hl_clock();
	list_for_each_entry(l, &f->leases.held, node) {
		/* A locker may hold max_locks_per_locker leases. */
		if (++i % HL_LEASE_BATCH == 0)
			cond_resched();
		hl_lease_unfile(l);
		if (test_bit(0, &l->doomed))
			continue;
		l->expires = hl_lease_end(now, l->len);
		n++;
	}
	hl_lease_arm(f, false);
	mutex_unlock(&f->lock);
	return n;
}

/**
 * hl_lease_forget() - Everything the locker held was released, by its
 *	close or its owner's exit: the takeovers its leases met are owed to
 *	nobody any more (no ESTALE, no POLLPRI).
 * @f: The locker.
 *
 * Context: f->lock held.
 */
void hl_lease_forget(struct hl_file *f)
{
	struct hl_lease *l, *tmp;

	lockdep_assert_held(&f->lock);
	list_for_each_entry_safe(l, tmp, &f->leases.stale, node)
		kfree(l);
	INIT_LIST_HEAD(&f->leases.stale);
	WRITE_ONCE(f->leases.nr_stale, 0);
}

/**
 * hl_lease_close() - A locker closes, everything it held released: free
 *	its stale leases, stop its timer and work item.
 * @f: The locker.
 *
 * Context: process context, no hlock lock held.
 */
void hl_lease_close(struct hl_file *f)
{
	mutex_lock(&f->lock);
	WARN_ON_ONCE(!list_empty(&f->leases.held));
	hl_lease_forget(f);
	kfree(f->leases.spare);
	f->leases.spare = NULL;
	mutex_unlock(&f->lock);
	/* No lease is filed any more: nobody queues the work again. */
	hrtimer_cancel(&f->leases.timer);
	cancel_work_sync(&f->leases.work);
	hrtimer_cancel(&f->leases.timer);
	mem_cgroup_put(f->leases.memcg);
	f->leases.memcg = NULL;
}

/**
 * hl_lease_fill() - The lease fields of a lock record.
 * @req: A granted (or converting) request.
 * @ext: Its record's extension: lease_ns and HLOCK_REC_LEASE are set when
 *	@req holds a lease, left alone otherwise.
 *
 * Context: the lock of @req's locker held.
 */
void hl_lease_fill(const struct hl_req *req, struct hlock_record_ext *ext)
{
	const struct hl_lease *l = req->lease;

	lockdep_assert_held(&hl_file_of(req->locker)->lock);
	if (!l)
		return;
	ext->flags |= HLOCK_REC_LEASE;
	ext->lease_ns = (s64)(l->expires - hl_clock());
}

/* The host's hooks: leases: granted after a wait, released, claimed by a wait. */
const struct hl_hooks hl_lease_hooks = {
	.lease_grant = hl_lease_grant,
	.lease_release = hl_lease_release,
	.lease_claim = hl_lease_claim,
};
