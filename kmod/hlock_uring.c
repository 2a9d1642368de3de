// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: lock, unlock and downgrade submitted through io_uring
 * (IORING_OP_URING_CMD, the argument in the SQE's 16 command bytes).
 *
 * A lock SQE starts its operation as HLOCK_IOC_LOCK does, in the
 * submitter's context.  One granted or refused at once completes there;
 * one that must wait stays in its locker's slot with its command
 * (hl_ring.cmd), armed with hl_ring_end, and returns -EIOCBQUEUED, so that
 * no thread waits for it.  Whoever ends it later takes the command out
 * under the locker lock (hl_end_take()):
 *
 *   - the continuation of the release that granted it (hl_grants_run()),
 *   - its timer, through a work item (hl_ring_expire_fn()),
 *   - an unlock of its path, through the ring or the ioctl,
 *   - io_uring's cancel at ring teardown (the last close of the ring, as
 *     when its process exits or is killed) or exec: a command marked
 *     cancelable gets ->uring_cmd() with IO_URING_F_CANCEL (6.7 and
 *     later),
 *   - before 6.7, where io_uring cannot cancel a driver's command and a
 *     pending one would hold its ring (and exec, and an exiting SQPOLL
 *     thread) for ever, a watchdog that withdraws the locks io_uring
 *     waits for, or whose ring was closed.
 *
 * A thread that exits alone leaves its locks queued, as io_uring leaves
 * its other requests: they complete when granted (or their ring goes).
 *
 * Exactly one of them completes the command, through task work in the
 * submitter's context (hl_ring_post()).  A handler never returns -EAGAIN:
 * io_uring would retry the command in an io-wq worker.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <asm/word-at-a-time.h>

/*
 * Kbuild defines HL_RING_CANCELABLE when the kernel has
 * <linux/io_uring/cmd.h> (6.7 and later): whole SQEs for drivers, and
 * commands io_uring cancels.  Without it, this is 6.1.y's interface.
 */
#ifdef HL_RING_CANCELABLE
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
/* The watchdog reads the request's task and ring (cmd_to_io_kiocb()). */
#include <linux/io_uring_types.h>
#include <linux/percpu-refcount.h>
#include <linux/sched/signal.h>
#endif

#include "hlock_internal.h"
#include "hlock_locker.h"
#include "hlock_trace.h"
#include "hlock_uring.h"

/**
 * struct hl_ring - A locker's io_uring state (hl_file.ring): its lock in
 *	flight there.
 * @f: The locker.
 * @cmd: Its command, from its submission until whoever ends it (the
 *	continuation of its grant, its timer, an unlock of its path,
 *	io_uring's cancel or the watchdog) takes it out, under the locker
 *	lock: exactly one of them completes it.  Set by hl_ring_arm() and
 *	cleared by hl_ring_take() only, which watch and unwatch it.
 * @deadline: When it times out; KTIME_MAX for never.
 * @timer: Fires at @deadline.
 * @expire: Ends it in process context once @timer fired.
 * @watch: Entry in the watchdog's list while @cmd is set, on kernels
 *	whose io_uring cannot cancel a driver's command (before 6.7).
 * @doomed_since: There, under its mutex: jiffies when the watchdog first
 *	saw @cmd's submitter or ring going away, 0 if it did not.
 * @armed: There, the commands watched so far, under both locks: which
 *	one the watchdog judged, when it comes to withdraw it.
 */
struct hl_ring {
	struct hl_file *f;
	struct io_uring_cmd *cmd;
	ktime_t deadline;
	struct hrtimer timer;
	struct work_struct expire;
	struct list_head watch;
	unsigned long doomed_since;
	unsigned long armed;
};

static const struct hl_end_ops hl_ring_end;
static struct io_uring_cmd *hl_ring_cancel(struct hl_file *f,
					   struct io_uring_cmd *cmd,
					   bool (*doomed)(struct io_uring_cmd *c),
					   unsigned long armed);

/* Paths up to this long are read onto the stack. */
#define HL_RING_SHORT_PATH	128

/* What a command keeps in its pdu until its task work completes it. */
struct hl_ring_pdu {
	int res;
};

static struct hl_ring_pdu *hl_ring_pdu(struct io_uring_cmd *cmd)
{
	BUILD_BUG_ON(sizeof(struct hl_ring_pdu) > sizeof(cmd->pdu));
	return (struct hl_ring_pdu *)cmd->pdu;
}

/* The command's bytes in its SQE; copied before the handler returns. */
static const struct hlock_uring_args *hl_ring_args(struct io_uring_cmd *cmd)
{
#ifdef HL_RING_CANCELABLE
	return io_uring_sqe_cmd(cmd->sqe);
#else
	return cmd->cmd;
#endif
}

static void hl_ring_tw(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	io_uring_cmd_done(cmd, hl_ring_pdu(cmd)->res, 0, issue_flags);
}

/*
 * hl_ring_post() - Complete a command taken out of its locker.
 * @cmd: The command.
 * @res: The CQE's result.
 *
 * The CQE is posted by task work in the submitter's context (or, once it
 * exited, io_uring's fallback worker).  @cmd is not touched afterwards.
 *
 * Context: any; no hlock lock need be dropped.
 */
static void hl_ring_post(struct io_uring_cmd *cmd, int res)
{
	hl_ring_pdu(cmd)->res = res;
	io_uring_cmd_complete_in_task(cmd, hl_ring_tw);
}

#ifdef HL_RING_CANCELABLE
/*
 * A lock that waits is cancelable: io_uring calls back at its ring's
 * teardown and its submitter's exec.  Issued inline, the ring's lock is held and marking takes no
 * lock, so it is done here, under the locker lock, only for the locks
 * that wait; issued unlocked (io-wq), hl_uring_cmd() marked it before
 * anyone could see it.
 */
static void hl_ring_mark(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	if (!(issue_flags & IO_URING_F_UNLOCKED))
		io_uring_cmd_mark_cancelable(cmd, issue_flags);
}

static void hl_watch_add(struct hl_ring *r)
{
}

static void hl_watch_del(struct hl_ring *r)
{
}

/**
 * hl_ring_exit() - The module goes: nothing of the ring glue may run.
 */
void hl_ring_exit(void)
{
}
#else
/* io_uring cannot cancel a command: hl_watch_fn() stands in. */
static void hl_ring_mark(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
}

/* How often the watchdog looks, while locks are in flight. */
#define HL_WATCH_PERIOD		(HZ / 10)
/* Lockers it withdraws from per look at its list. */
#define HL_WATCH_BATCH		32

/* The rings of the lockers with a lock in flight, under hl_watch_lock. */
static LIST_HEAD(hl_watch_list);
static DEFINE_MUTEX(hl_watch_lock);
static void hl_watch_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(hl_watch_work, hl_watch_fn);

/*
 * Whether io_uring waits for @cmd to complete, or its ring is closed:
 * io_uring then counts on the driver, and would wait for ever (exec, an
 * exiting SQPOLL thread) or keep the ring, the file and the module.
 * io_uring_cancel_generic() marks its task (in_idle) while it waits, in
 * exec, at an SQPOLL thread's exit and at every task's exit; a task's
 * exit (PF_EXITING, set right after) does not wait, and its locks stay
 * queued, as its other requests do, until granted or its ring goes.  An
 * SQPOLL thread (an io thread) waits for all its requests before its
 * exit, whatever its flags say: in_idle alone dooms its commands.  The
 * request keeps its task and ring, so their fields are there to read.
 * Context: @cmd in flight (its locker lock or hl_watch_lock held).
 */
static bool hl_ring_doomed(struct io_uring_cmd *cmd)
{
	struct io_kiocb *req = cmd_to_io_kiocb(cmd);
	struct task_struct *t = req->task;
	struct io_uring_task *tctx = READ_ONCE(t->io_uring);

	return (tctx && atomic_read(&tctx->in_idle) &&
		(!(t->flags & PF_EXITING) || (t->flags & PF_IO_WORKER))) ||
	       percpu_ref_is_dying(&req->ctx->refs);
}

/* @r's locker has a lock in flight: watch it.  Context: its lock held. */
static void hl_watch_add(struct hl_ring *r)
{
	lockdep_assert_held(&r->f->lock);
	mutex_lock(&hl_watch_lock);
	if (list_empty(&hl_watch_list))
		schedule_delayed_work(&hl_watch_work, HL_WATCH_PERIOD);
	r->doomed_since = 0;
	r->armed++;
	/* Added twice, it would cut others off the list. */
	if (!WARN_ON_ONCE(!list_empty(&r->watch)))
		list_add_tail(&r->watch, &hl_watch_list);
	mutex_unlock(&hl_watch_lock);
}

/* @r's lock in flight ended.  Context: its locker's lock held. */
static void hl_watch_del(struct hl_ring *r)
{
	lockdep_assert_held(&r->f->lock);
	mutex_lock(&hl_watch_lock);
	list_del_init(&r->watch);
	mutex_unlock(&hl_watch_lock);
}

/*
 * Whether @f's lock in flight has looked doomed for a whole watchdog
 * period.  A task's exit passes through io_uring's cancel (in_idle set)
 * before PF_EXITING is set, for a moment that looks like exec's wait; a
 * waiter that is still there a period later is exec's or a dying SQPOLL
 * thread's.  Context: hl_watch_lock held.
 */
static bool hl_watch_doomed(struct hl_ring *r)
{
	unsigned long now = jiffies;

	lockdep_assert_held(&hl_watch_lock);
	if (!hl_ring_doomed(r->cmd)) {
		r->doomed_since = 0;
		return false;
	}
	/* 0 means never seen: a jiffies value of 0 is taken as 1. */
	if (!r->doomed_since) {
		r->doomed_since = now ?: 1;
		return false;
	}
	return time_after_eq(now, r->doomed_since + HL_WATCH_PERIOD);
}

/*
 * Withdraw the locks in flight whose submitter or ring is going away, a
 * batch at a time: the list is walked under a mutex (so with reschedules),
 * the lockers found are withdrawn from with it dropped.
 */
static void hl_watch_fn(struct work_struct *work)
{
	struct hl_file *doomed[HL_WATCH_BATCH];
	unsigned long armed[HL_WATCH_BATCH];
	struct io_uring_cmd *cmd;
	unsigned int n, i;
	struct hl_ring *r;
	bool more;

	do {
		n = 0;
		mutex_lock(&hl_watch_lock);
		list_for_each_entry(r, &hl_watch_list, watch) {
			if (hl_watch_doomed(r)) {
				/* Its file is open while its lock is in flight. */
				refcount_inc(&r->f->ref);
				armed[n] = r->armed;
				doomed[n++] = r->f;
				if (n == HL_WATCH_BATCH)
					break;
			}
			cond_resched();
		}
		more = !list_empty(&hl_watch_list);
		mutex_unlock(&hl_watch_lock);
		for (i = 0; i < n; i++) {
			/*
			 * Looked at again under its lock: it may have ended,
			 * and another command come, doomed for no period yet.
			 */
			cmd = hl_ring_cancel(doomed[i], NULL, hl_ring_doomed,
					     armed[i]);
			if (cmd)
				hl_ring_post(cmd, -ECANCELED);
			hl_file_put(doomed[i]);
		}
	} while (n == HL_WATCH_BATCH);
	if (more)
		schedule_delayed_work(&hl_watch_work, HL_WATCH_PERIOD);
}

/**
 * hl_ring_exit() - The module goes: stop the watchdog.
 *
 * Every file is closed, so no lock is in flight and the watchdog does not
 * come back.
 */
void hl_ring_exit(void)
{
	cancel_delayed_work_sync(&hl_watch_work);
}
#endif /* HL_RING_CANCELABLE */

static enum hrtimer_restart hl_ring_timer_fn(struct hrtimer *timer)
{
	struct hl_ring *r = container_of(timer, struct hl_ring, timer);

	/* The locker lock is a mutex: time out in process context. */
	queue_work(system_wq, &r->expire);
	return HRTIMER_NORESTART;
}

/*
 * The ring's lock in flight timed out: end it, unless it ended since the
 * timer fired.  A grant that raced with the timeout wins.
 */
static void hl_ring_expire_fn(struct work_struct *work)
{
	struct hl_ring *r = container_of(work, struct hl_ring, expire);
	struct hl_file *f = r->f;
	struct hl_ended e = { };
	struct hl_grants g;
	int res = 0;

	hl_grants_init(&g);
	mutex_lock(&f->lock);
	if (f->end == &hl_ring_end &&
	    ktime_compare(ktime_get(), r->deadline) >= 0) {
		res = hl_lock_expire(f, &g);
		hl_end_take(f, &g, &e);
	}
	hl_file_unlock(f);
	hl_grants_run(&g);
	hl_end_post(f, &e, res);
}

/*
 * The io_uring state of @f, made by its first lock through io_uring that
 * may wait: most lockers never need it.  Return: it, or NULL (-ENOMEM).
 */
static struct hl_ring *hl_ring_get(struct hl_file *f)
{
	struct hl_ring *r = READ_ONCE(f->ring);

	if (likely(r))
		return r;
	r = kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return NULL;
	r->f = f;
	hrtimer_init(&r->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	r->timer.function = hl_ring_timer_fn;
	INIT_WORK(&r->expire, hl_ring_expire_fn);
	INIT_LIST_HEAD(&r->watch);
	/* Two submitters at once: the first one's stays. */
	if (cmpxchg(&f->ring, NULL, r)) {
		kfree(r);
		r = READ_ONCE(f->ring);
	}
	return r;
}

/*
 * hl_ring_arm() - A lock through io_uring waits: put its command in the
 * slot, time it, watch it.  @timeout_ns is positive, or negative for
 * none; @issue_flags are those of the command's issue, going on.
 *
 * The one place a command enters the slot, as hl_ring_take() is the one
 * where it leaves: on 6.1 a command in the slot is always on the
 * watchdog's list, so none can be missed at its ring's teardown.
 * Context: f->lock held, the lock armed (hl_lock_armed()).
 */
static void hl_ring_arm(struct hl_ring *r, struct io_uring_cmd *cmd,
			s64 timeout_ns, unsigned int issue_flags)
{
	lockdep_assert_held(&r->f->lock);
	WARN_ON_ONCE(r->cmd);
	r->cmd = cmd;
	hl_ring_mark(cmd, issue_flags);
	r->deadline = KTIME_MAX;
	if (timeout_ns > 0) {
		r->deadline = ktime_add_ns(ktime_get(), timeout_ns);
		hrtimer_start(&r->timer, r->deadline, HRTIMER_MODE_ABS);
	}
	hl_watch_add(r);
}

/*
 * The ring's lock ended (hl_end_take()): take its command out of the
 * slot.  A timer already firing queues its work item, which finds nothing
 * to do; hl_ring_release() waits for both.  Context: f->lock held.
 */
static void hl_ring_take(struct hl_file *f, struct hl_ended *e)
{
	struct hl_ring *r = f->ring;

	lockdep_assert_held(&f->lock);
	if (r->deadline != KTIME_MAX)
		hrtimer_try_to_cancel(&r->timer);
	hl_watch_del(r);
	e->cmd = r->cmd;
	r->cmd = NULL;
}

/* Complete the command hl_ring_take() took.  No hlock lock held. */
static void hl_ring_end_post(struct hl_file *f, const struct hl_ended *e,
			     int res)
{
	hl_ring_post(e->cmd, res);
}

/* How a lock through io_uring ends, in its locker (hl_file.end). */
static const struct hl_end_ops hl_ring_end = {
	.take = hl_ring_take,
	.post = hl_ring_end_post,
};

/*
 * Withdraw the ring's lock in flight: @cmd, or with @cmd NULL the one in
 * flight if it is the @armed'th watched and @doomed says so.  Out of
 * line: inlined, its frame would make every command's issue dearer.
 * Context: process context, no hlock lock held.  Return: the command
 * withdrawn, which the caller completes with -ECANCELED, or NULL.
 */
static noinline struct io_uring_cmd *hl_ring_cancel(struct hl_file *f,
					   struct io_uring_cmd *cmd,
					   bool (*doomed)(struct io_uring_cmd *),
					   unsigned long armed)
{
	struct hl_ended e = { };
	struct io_uring_cmd *c;
	struct hl_grants g;

	hl_grants_init(&g);
	mutex_lock(&f->lock);
	c = f->end == &hl_ring_end ? f->ring->cmd : NULL;
	if (c && (cmd ? c == cmd : f->ring->armed == armed && doomed(c))) {
		hl_lock_withdraw(f, HLOCK_CANCEL_RING, &g);
		hl_end_take(f, &g, &e);
	} else {
		c = NULL;
	}
	hl_file_unlock(f);
	hl_grants_run(&g);
	return c;
}

/**
 * hl_ring_release() - A locker's file closes: its io_uring state goes.
 * @f: The locker, no lock in flight through io_uring (that would keep
 *	its file open).
 *
 * Its timer and work item stop first.
 *
 * Context: process context, no hlock lock held.
 */
void hl_ring_release(struct hl_file *f)
{
	struct hl_ring *r = f->ring;

	if (!r)
		return;
	WARN_ON_ONCE(r->cmd);
	hrtimer_cancel(&r->timer);
	cancel_work_sync(&r->expire);
	f->ring = NULL;
	kfree(r);
}

/*
 * A lock through io_uring: one that must wait stays in the slot with
 * @cmd, and whoever ends it later takes @cmd out under the locker lock.
 * Return: -EIOCBQUEUED when it waits, else its result, as
 * HLOCK_IOC_LOCK's.
 */
static int hl_ring_lock(struct hl_file *f, struct io_uring_cmd *cmd,
			unsigned int issue_flags, const char *buf,
			unsigned int len, unsigned int mode,
			unsigned int flags, s64 timeout_ns)
{
	struct hl_ring *r = NULL;
	struct hl_grants g;
	int ret;

	/* A try never waits: no state for it. */
	if (timeout_ns) {
		r = hl_ring_get(f);
		if (!r)
			return -ENOMEM;
	}
	hl_grants_init(&g);
	mutex_lock(&f->lock);
	ret = hl_lock_armed(f, &hl_ring_end, buf, len, mode, flags,
			    timeout_ns, &g);
	if (ret == -EINPROGRESS) {
		hl_ring_arm(r, cmd, timeout_ns, issue_flags);
		ret = -EIOCBQUEUED;
	}
	hl_file_unlock(f);
	hl_grants_run(&g);
	return ret;
}

/*
 * The NUL-terminated path at @u into @buf, @size bytes with the NUL, a
 * word at a time in one user-access window, as strncpy_from_user() reads
 * (a word may go past the NUL, never past @size), without its object
 * checks: most paths are short.  A word that faults, at the end of a
 * mapping, is read again a byte at a time.  Return: its length, @size
 * when it does not fit, or -EFAULT.
 */
static long hl_ring_get_path(char *buf, const char __user *u, long size)
{
	const struct word_at_a_time constants = WORD_AT_A_TIME_CONSTANTS;
	long i = 0;

	/* A path at the top of the address space: the careful way. */
	if (!user_access_begin(u, size)) {
		i = strncpy_from_user(buf, u, size);
		return i < 0 ? -EFAULT : i;
	}
	/* Unaligned words only where the machine reads them cheaply. */
	for (; (IS_ENABLED(CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS) ||
		IS_ALIGNED((unsigned long)u, sizeof(unsigned long))) &&
	       i + (long)sizeof(unsigned long) <= size;
	     i += sizeof(unsigned long)) {
		unsigned long c, data;

		unsafe_get_user(c, (const unsigned long __user *)(u + i),
				bytes);
		memcpy(buf + i, &c, sizeof(c));
		if (has_zero(c, &data, &constants)) {
			data = prep_zero_mask(c, data, &constants);
			data = create_zero_mask(data);
			user_access_end();
			return i + find_zero(data);
		}
	}
bytes:
	for (; i < size; i++) {
		unsafe_get_user(buf[i], u + i, efault);
		if (!buf[i])
			break;
	}
	user_access_end();
	return i;
efault:
	user_access_end();
	return -EFAULT;
}

/* Lock, unlock or downgrade @path, @len bytes at @buf. */
static int hl_ring_do(struct hl_file *f, struct io_uring_cmd *cmd,
		      unsigned int issue_flags, const char *buf,
		      unsigned int len, unsigned int mode, unsigned int flags,
		      s64 timeout_ns)
{
	if (cmd->cmd_op == HLOCK_IOC_LOCK)
		return hl_ring_lock(f, cmd, issue_flags, buf, len, mode,
				    flags, timeout_ns);
	return hl_do_path(f, cmd->cmd_op, buf, len, mode);
}

/* Check a command's arguments, read its path, do it. */
static int hl_ring_issue(struct hl_file *f, struct io_uring_cmd *cmd,
			 unsigned int issue_flags)
{
	const struct hlock_uring_args *uargs = hl_ring_args(cmd);
	char short_buf[HL_RING_SHORT_PATH] __uninitialized;
	unsigned int mode, flags;
	const char __user *upath;
	s64 timeout_ns;
	char *buf;
	long len;
	u64 op;
	int ret;

	/* The SQE is the submitter's to reuse: read it once. */
	upath = u64_to_user_ptr(READ_ONCE(uargs->path));
	op = READ_ONCE(uargs->op);
	mode = op & HLOCK_URING_MODE_MASK;
	flags = (op >> HLOCK_URING_FLAGS_SHIFT) & HLOCK_URING_FLAGS_MASK;
	timeout_ns = (s64)op >> HLOCK_URING_TIMEOUT_SHIFT;
	/* Registered buffers mean nothing here. */
	if (cmd->flags & IORING_URING_CMD_FIXED)
		return -EINVAL;
	switch (cmd->cmd_op) {
	case HLOCK_IOC_LOCK:
		/* The ring is the asynchronous path. */
		if (!hl_mode_valid(mode) ||
		    flags & ~(HLOCK_F_ALL & ~HLOCK_F_ASYNC))
			return -EINVAL;
		break;
	case HLOCK_IOC_DOWNGRADE:
		if (!hl_mode_valid(mode) || flags || timeout_ns)
			return -EINVAL;
		break;
	case HLOCK_IOC_UNLOCK:
		if (mode || flags || timeout_ns)
			return -EINVAL;
		break;
	default:
		return -ENOTTY;
	}
	buf = short_buf;
	len = hl_ring_get_path(buf, upath, sizeof(short_buf));
	if (len == sizeof(short_buf)) {
		buf = kmalloc(HLOCK_PATH_MAX + 1, GFP_KERNEL);
		if (!buf)
			return -ENOMEM;
		len = strncpy_from_user(buf, upath, HLOCK_PATH_MAX + 1);
		if (len < 0)
			len = -EFAULT;
		if (len > HLOCK_PATH_MAX)
			len = -ENAMETOOLONG;
	}
	ret = len < 0 ? len : hl_ring_do(f, cmd, issue_flags, buf, len, mode,
					 flags, timeout_ns);
	if (buf != short_buf)
		kfree(buf);
	return ret;
}

/**
 * hl_uring_cmd() - The device's ->uring_cmd: HLOCK_IOC_LOCK,
 *	HLOCK_IOC_UNLOCK and HLOCK_IOC_DOWNGRADE through io_uring.
 * @cmd: The command.
 * @issue_flags: IO_URING_F_* of this call.
 *
 * Context: process context (the submitter, its SQPOLL thread, an io-wq
 * worker, or io_uring's cancel), may sleep.
 * Return: 0 or a negative result to post, or -EIOCBQUEUED when the
 * command is completed later (or was already, through
 * io_uring_cmd_done()); never a positive value (see above).
 */
int hl_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct hl_file *f = cmd->file->private_data;
	bool marked = false;
	int ret;

#ifdef HL_RING_CANCELABLE
	if (issue_flags & IO_URING_F_CANCEL) {
		/*
		 * Ring teardown or exec: withdraw it if it still waits.  Its
		 * CQE goes through task work, as every other: completed here,
		 * a DEFER_TASKRUN ring's CQE would be posted by io_uring's
		 * exit worker, not its submitter, which io_uring forbids.
		 */
		if (hl_ring_cancel(f, cmd, NULL, 0))
			hl_ring_post(cmd, -ECANCELED);
		return 0;
	}
	/*
	 * Issued unlocked, marking takes the ring's lock, never to be taken
	 * under a locker lock: mark it now, before anyone can see it.
	 */
	if (cmd->cmd_op == HLOCK_IOC_LOCK && issue_flags & IO_URING_F_UNLOCKED) {
		io_uring_cmd_mark_cancelable(cmd, issue_flags);
		marked = true;
	}
#endif
	ret = hl_ring_issue(f, cmd, issue_flags);
	if (ret == -EIOCBQUEUED)
		return ret;
	/*
	 * What is not in flight is completed here, but for the plain results
	 * every kernel completes alike.  Once marked, only io_uring_cmd_done()
	 * unmarks it.  -EAGAIN is not returned: io_uring would retry the
	 * command in an io-wq worker.  A positive result (an unlock's count
	 * of acquisitions left) is not returned either: 6.1's io_uring takes
	 * any result but 0 from a driver for an error to handle, completes it
	 * as failed when issued inline (failing the SQEs linked after it),
	 * and drops it unposted when issued by io-wq (IOSQE_ASYNC, or the
	 * next of a link run there), leaving a request in flight for ever:
	 * its ring's teardown, and an exiting SQPOLL thread, wait for it.
	 */
	if (marked || ret > 0 || ret == -EAGAIN) {
		io_uring_cmd_done(cmd, ret, 0, issue_flags);
		return -EIOCBQUEUED;
	}
	return ret;
}
