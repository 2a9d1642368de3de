// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: lock value blocks (HLOCK_IOC_LVB) and blocking notifications
 * (HLOCK_IOC_EVENTS, HLOCK_IOC_BLOCKING), on one machine, with the
 * semantics of the kernel's DLM so that a cluster binding can keep them:
 * DLM's PR, PW and EX are hlock's S, SIX and X.
 *
 * A lock value block is HLOCK_LVB_LEN bytes per resource, allocated the
 * first time a holder sets one (struct hl_lvb), or with the resource in a
 * cluster space, and freed with the resource.
 * Holders of S, SIX or X read the published value; a holder of SIX or X
 * sets a pending one, which the core publishes (hl_lvb_flush()) under
 * the head lock when that grant goes down from SIX or X, before the grant
 * pass that follows: whoever that pass grants reads the new value.  Only
 * one grant of SIX or X can exist on a resource, so one pending slot per
 * resource is enough.
 *
 * A blocking notification is DLM's blocking AST: the core tells a holder's
 * locker, once per grant, that a request started to wait on a conflict
 * with it (hl_event_blocking()); the locker's poll() reports POLLPRI until
 * HLOCK_IOC_EVENTS collects it.  Only lockers that ask for it are told
 * (HLOCK_EVENTS_F_WANT), as DLM sends blocking ASTs only to locks that
 * gave a function for them: the POLLPRI of other lockers still means a
 * lease was taken over, and nothing else.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/poll.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "hlock_internal.h"
#include "hlock_lvb.h"
#include "hlock_ns.h"
#include "hlock_space.h"

/**
 * struct hl_lvb - The lock value block of a resource.
 * @value: The value last published; zeros until one is.
 * @pending: The value @writer set, published when it goes down.
 * @writer: The SIX or X grant that set @pending, or NULL.  Only compared:
 *	a grant going down from SIX or X clears it, so it never outlives
 *	the request.
 *
 * Protected by the head lock of its resource.
 */
struct hl_lvb {
	u8 value[HLOCK_LVB_LEN];
	u8 pending[HLOCK_LVB_LEN];
	const struct hl_req *writer;
};

/**
 * hl_lvb_flush() - A grant went down from SIX or X: publish what it set.
 * @req: The request, lowered or released.
 *
 * Context: the head lock of @req's resource held.
 */
void hl_lvb_flush(struct hl_req *req)
{
	struct hl_head *h = req->head;
	struct hl_lvb *lvb = hl_res_of(h)->lvb;

	lockdep_assert_held(&h->lock);
	if (likely(!lvb) || lvb->writer != req)
		return;
	memcpy(lvb->value, lvb->pending, sizeof(lvb->value));
	lvb->writer = NULL;
}

/**
 * hl_lvb_free() - Free a resource's lock value block, if it has one.
 * @r: The resource, going away.
 */
void hl_lvb_free(struct hl_res *r)
{
	kfree(r->lvb);
}

/**
 * hl_lvb_prepare() - Give a resource its lock value block at once.
 * @r: The resource, not yet visible to anyone.
 *
 * For a resource of a cluster space, whose value may come from another
 * node in a context that cannot allocate (hl_lvb_load()).
 *
 * Context: process context, may sleep.
 * Return: 0 or -ENOMEM.
 */
int hl_lvb_prepare(struct hl_res *r)
{
	r->lvb = kzalloc(sizeof(*r->lvb), GFP_KERNEL_ACCOUNT);
	return r->lvb ? 0 : -ENOMEM;
}

/**
 * hl_lvb_load() - Take in the value of a resource as another node left it.
 * @r: The resource, with its block (hl_lvb_prepare()).
 * @val: HLOCK_LVB_LEN bytes, or NULL when the value was lost (zeros).
 *
 * Only while this node holds no mode that could have set a newer one.
 *
 * Context: the head lock of @r held.
 */
void hl_lvb_load(struct hl_res *r, const u8 *val)
{
	lockdep_assert_held(&r->head.lock);
	if (val)
		memcpy(r->lvb->value, val, HLOCK_LVB_LEN);
	else
		memset(r->lvb->value, 0, HLOCK_LVB_LEN);
}

/**
 * hl_lvb_store() - The value of a resource as this node published it.
 * @r: The resource, with its block (hl_lvb_prepare()).
 * @val: Where to copy it, HLOCK_LVB_LEN bytes.
 *
 * Context: the head lock of @r held.
 */
void hl_lvb_store(struct hl_res *r, u8 *val)
{
	lockdep_assert_held(&r->head.lock);
	memcpy(val, r->lvb->value, HLOCK_LVB_LEN);
}

/*
 * Read (@set false) or set the lock value block of @h, which @req of the
 * caller's locker holds, through @val.  *@spare is a block to install if
 * @h has none yet; taken when used.  Return: 0, -EACCES when @req's mode
 * does not allow it, -EAGAIN when a block is needed and *@spare is NULL.
 * Context: the head lock of @h held.
 */
static int hl_lvb_access(struct hl_head *h, const struct hl_req *req,
			 bool set, u8 *val, struct hl_lvb **spare)
{
	struct hl_res *r = hl_res_of(h);

	lockdep_assert_held(&h->lock);
	/* The mode held, also while a conversion of it waits. */
	if (!hl_covers(req->mode, set ? HLOCK_SIX : HLOCK_S))
		return -EACCES;
	if (!set) {
		if (r->lvb)
			memcpy(val, r->lvb->value, HLOCK_LVB_LEN);
		else
			memset(val, 0, HLOCK_LVB_LEN);
		return 0;
	}
	if (!r->lvb) {
		if (!*spare)
			return -EAGAIN;
		r->lvb = *spare;
		*spare = NULL;
	}
	memcpy(r->lvb->pending, val, HLOCK_LVB_LEN);
	r->lvb->writer = req;
	return 0;
}

/*
 * Find @f's grant on the path @buf (@len bytes) and read or set its
 * resource's block, allocating one when a set needs it.  Context: takes
 * f->lock; may sleep.
 */
static int hl_lvb_path(struct hl_file *f, const char *buf, unsigned int len,
		       bool set, u8 *val)
{
	struct hl_lvb *spare = NULL;
	struct hl_head *h;
	struct hl_req *req;
	struct hl_path p;
	int ret;

	ret = hl_path_parse(&p, buf, len);
	if (ret)
		return ret;
	do {
		mutex_lock(&f->lock);
		/* Under RCU, @h cannot be freed and its address reused. */
		rcu_read_lock();
		h = hl_path_find(f->root, &p, buf);
		req = h ? hl_locker_find(&f->lk, h) : NULL;
		if (req) {
			hl_head_lock(h);
			ret = hl_lvb_access(h, req, set, val, &spare);
			hl_head_unlock(h);
		} else {
			ret = -ENOENT;
		}
		rcu_read_unlock();
		mutex_unlock(&f->lock);
		/* Allocated outside the locks, once: the next pass uses it. */
		if (ret == -EAGAIN) {
			spare = kzalloc(sizeof(*spare), GFP_KERNEL_ACCOUNT);
			if (!spare)
				return -ENOMEM;
		}
	} while (ret == -EAGAIN);
	kfree(spare);
	return ret;
}

/**
 * hl_ioctl_lvb() - HLOCK_IOC_LVB: read or set a path's lock value block.
 * @f: The caller's locker.
 * @usize: Size of the caller's struct hlock_lvb_args.
 * @uarg: It.
 *
 * The value is copied in before any lock is taken and out after they are
 * all dropped, from a buffer filled in full; nothing is written to the
 * caller's memory later (no grant delivers a value by itself).
 *
 * Context: process context, may sleep; takes f->lock.
 * Return: 0 or -errno, as HLOCK_IOC_LVB.
 */
long hl_ioctl_lvb(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_lvb_args args;
	u8 val[HLOCK_LVB_LEN];
	void __user *ubuf;
	char *buf;
	long ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.__pad || args.reserved[0] || args.reserved[1])
		return -EINVAL;
	if (args.op != HLOCK_LVB_GET && args.op != HLOCK_LVB_SET)
		return -EINVAL;
	if (args.path_len > HLOCK_PATH_MAX)
		return -ENAMETOOLONG;
	ubuf = u64_to_user_ptr(args.buf);
	if (args.op == HLOCK_LVB_SET && copy_from_user(val, ubuf, sizeof(val)))
		return -EFAULT;
	buf = memdup_user_nul(u64_to_user_ptr(args.path), args.path_len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = hl_lvb_path(f, buf, args.path_len, args.op == HLOCK_LVB_SET, val);
	kfree(buf);
	if (!ret && args.op == HLOCK_LVB_GET &&
	    copy_to_user(ubuf, val, sizeof(val)))
		ret = -EFAULT;
	return ret;
}

/**
 * hl_event_blocking() - Tell @holder's locker that its grant blocks a
 *	waiter: POLLPRI, until HLOCK_IOC_EVENTS collects it.
 * @holder: A granted request of another locker than the waiter's.
 *
 * The locker's pollers are woken on the first notification only, until it
 * is collected: one wake-up per locker however many grants it holds.  The
 * locker outlives its request, which is on the resource whose head lock
 * the caller holds.
 *
 * Context: a head lock held, maybe a partition lock too.
 */
void hl_event_blocking(struct hl_req *holder)
{
	struct hl_file *f = hl_file_of(holder->locker);

	lockdep_assert_held(&holder->head->lock);
	if (!test_bit(HL_EVENT_WANT_BIT, &f->events.bits))
		return;
	if (!test_and_set_bit(HL_EVENT_BLOCKING_BIT, &f->events.bits))
		wake_up_interruptible_poll(&f->wq, EPOLLPRI);
}

/**
 * hl_event_lost() - Tell @holder's locker that its node lost the cluster of
 *	the grant's lock space: POLLPRI (HLOCK_EVENT_LOST).
 * @holder: A granted request on a cluster head.
 *
 * Context: a head lock held.
 */
void hl_event_lost(struct hl_req *holder)
{
	struct hl_file *f = hl_file_of(holder->locker);

	lockdep_assert_held(&holder->head->lock);
	wake_up_interruptible_poll(&f->wq, EPOLLPRI);
}

/**
 * hl_file_events() - The HLOCK_EVENT_* of a locker that make POLLPRI.
 * @f: The locker.
 *
 * Lockless: poll() asks.
 *
 * Return: HLOCK_EVENT_STALE, HLOCK_EVENT_BLOCKING and HLOCK_EVENT_LOST
 * as they stand.
 */
unsigned int hl_file_events(struct hl_file *f)
{
	return (READ_ONCE(f->leases.nr_stale) ? HLOCK_EVENT_STALE : 0) |
	       (test_bit(HL_EVENT_BLOCKING_BIT, &f->events.bits) ?
		HLOCK_EVENT_BLOCKING : 0) |
	       (hl_ns_lost(f->ns) ? HLOCK_EVENT_LOST : 0);
}

/**
 * hl_ioctl_events() - HLOCK_IOC_EVENTS: set the events asked for, then
 *	say why POLLPRI, collecting HLOCK_EVENT_BLOCKING.
 * @f: The caller's locker.
 * @usize: Size of the caller's struct hlock_events_args.
 * @uarg: It; its @events is set.
 *
 * Context: process context.
 * Return: 0 or -errno.
 */
long hl_ioctl_events(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_events_args __user *u = uarg;
	struct hlock_events_args args;
	unsigned int events;
	long ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags & ~HLOCK_EVENTS_F_WANT || args.__pad ||
	    args.reserved[0] || args.reserved[1])
		return -EINVAL;
	if (args.want & ~HLOCK_EVENT_BLOCKING ||
	    (args.want && !(args.flags & HLOCK_EVENTS_F_WANT)))
		return -EINVAL;
	if (args.flags & HLOCK_EVENTS_F_WANT) {
		if (args.want)
			set_bit(HL_EVENT_WANT_BIT, &f->events.bits);
		else if (test_and_clear_bit(HL_EVENT_WANT_BIT, &f->events.bits))
			clear_bit(HL_EVENT_BLOCKING_BIT, &f->events.bits);
	}
	events = hl_file_events(f) & (HLOCK_EVENT_STALE | HLOCK_EVENT_LOST);
	if (test_and_clear_bit(HL_EVENT_BLOCKING_BIT, &f->events.bits))
		events |= HLOCK_EVENT_BLOCKING;
	if (put_user(events, &u->events)) {
		/* Not seen: still pending. */
		if (events & HLOCK_EVENT_BLOCKING)
			set_bit(HL_EVENT_BLOCKING_BIT, &f->events.bits);
		return -EFAULT;
	}
	return 0;
}
