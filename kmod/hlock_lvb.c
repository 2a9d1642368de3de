// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: lock value blocks and blocking notifications, on one machine
 * (their ioctls, HLOCK_IOC_LVB and HLOCK_IOC_EVENTS: hlock_lvb_ioctl.c), with the
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
#include "hlock_hooks.h"
#include "hlock_lvb.h"

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
	r->lvb = hl_lvb_alloc();
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

/**
 * hl_lvb_access() - Read or set a resource's lock value block.
 * @h: The resource.
 * @req: The grant on @h of the caller's locker.
 * @set: Set (true) or read (false) the block.
 * @val: HLOCK_LVB_LEN bytes: what is read, or the value to set.
 * @spare: A block (hl_lvb_alloc()) to install if @h has none yet; taken
 *	when used.
 *
 * Context: the head lock of @h held.
 * Return: 0, -EACCES when @req's mode does not allow it, -EAGAIN when a
 * block is needed and *@spare is NULL.
 */
int hl_lvb_access(struct hl_head *h, const struct hl_req *req,
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
	/*
	 * Published when @req goes down, under the head lock: if it holds
	 * the fast path, it goes down on the head from now on.
	 */
	hl_head_settle(h);
	return 0;
}

/**
 * hl_lvb_alloc() - A block for hl_lvb_access() to install; kfree() it when
 *	unused.
 *
 * Context: may sleep.
 * Return: the block, or NULL.
 */
struct hl_lvb *hl_lvb_alloc(void)
{
	return kzalloc(sizeof(struct hl_lvb), GFP_KERNEL_ACCOUNT);
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

/* The host's hooks: value blocks and the lockers' events. */
const struct hl_hooks hl_lvb_hooks = {
	.lvb_flush = hl_lvb_flush,
	.event_blocking = hl_event_blocking,
	.event_lost = hl_event_lost,
};
