// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: the ioctls of value blocks and events (hlock_lvb.c): read or set a
 * path's lock value block (HLOCK_IOC_LVB), and ask for and collect the
 * events a locker polls for (HLOCK_IOC_EVENTS).  They find the path and the
 * locker's grant; the block and the events themselves are hlock_lvb.c's,
 * which the core's hooks reach without a lock call's machinery.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitops.h>
#include <linux/err.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "hlock_internal.h"
#include "hlock_lvb.h"
#include "hlock_lvb_ioctl.h"
#include "hlock_ns.h"
#include "hlock_space.h"

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
			spare = hl_lvb_alloc();
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
