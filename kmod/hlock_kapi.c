// SPDX-License-Identifier: GPL-2.0
/*
 * hlock inside the kernel: the API of include/hlock_kernel.h.
 *
 * A kernel locker is a struct hl_file that no file holds: it is made and
 * ended here instead of by open and close, and its calls are those of the
 * ioctls, with the path a kernel string.  Two things only kernel lockers
 * have: a blocking call may sleep killable or uninterruptible (its own
 * way, passed down to hl_lock_call(): threads may share a locker), and an
 * asynchronous call ends by calling back (hl_kapi.done), from a workqueue
 * of its own (hl_kapi_end), as a lock through io_uring ends by posting its
 * completion through task work, and the DLM calls its ASTs from a worker:
 * a callback that calls the API again never nests in the call that ended
 * it.
 */

#include <linux/export.h>
#include <linux/ipc_namespace.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/string.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>

#include "hlock_internal.h"
#include "hlock_kapi.h"
#include "hlock_locker.h"
#include "hlock_ns.h"
#include "hlock_space.h"

static struct hl_file *hl_kfile(struct hlock_locker *lk)
{
	return &lk->f;
}

static struct hlock_locker *hl_klocker(struct hl_file *f)
{
	return container_of(f, struct hlock_locker, f);
}

/*
 * Where completions are called (hl_kapi.post): on the CPU that ended the
 * call, at high priority, as the waiter it replaces would have been woken
 * there.
 */
static struct workqueue_struct *hl_kapi_wq;

/*
 * The asynchronous call in flight ended: its completion is due.  It stays
 * in hl_kapi.done, so that no other asynchronous call is made, until its
 * worker calls it.  Destroying the locker waits until it was called.
 * Context: f->lock held.
 */
static void hl_kapi_take(struct hl_file *f, struct hl_ended *e)
{
	struct hl_kapi *k = &hl_klocker(f)->kapi;

	lockdep_assert_held(&f->lock);
	atomic_inc(&k->calls);
}

/* Hand the completion hl_kapi_take() took to its worker.  No lock held. */
static void hl_kapi_post(struct hl_file *f, const struct hl_ended *e,
			 int res)
{
	struct hl_kapi *k = &hl_klocker(f)->kapi;

	k->res = res;
	queue_work(hl_kapi_wq, &k->post);
}

/*
 * Call a completion.  hl_kapi.done is cleared first, under the locker
 * lock, so that the completion may make another asynchronous call; the
 * locker is not touched after the count of completions due went to 0,
 * when hlock_locker_destroy() may free it.
 */
static void hl_kapi_post_fn(struct work_struct *work)
{
	struct hlock_locker *lk = container_of(work, struct hlock_locker,
					       kapi.post);
	struct hl_file *f = hl_kfile(lk);
	hlock_done_fn done;
	void *data;
	int res;

	mutex_lock(&f->lock);
	done = lk->kapi.done;
	data = lk->kapi.data;
	res = lk->kapi.res;
	lk->kapi.done = NULL;
	lk->kapi.data = NULL;
	mutex_unlock(&f->lock);
	done(lk, res, data);
	if (atomic_dec_and_test(&lk->kapi.calls))
		wake_up_var(&lk->kapi.calls);
}

/**
 * hl_kapi_init() - Make the workqueue of kernel lockers' completions.
 *
 * Return: 0 or -ENOMEM.
 */
int hl_kapi_init(void)
{
	hl_kapi_wq = alloc_workqueue("hlock_kapi", WQ_HIGHPRI, 0);
	return hl_kapi_wq ? 0 : -ENOMEM;
}

/**
 * hl_kapi_exit() - The module goes: every kernel locker was destroyed, so
 *	every completion was called; the workqueue goes once its workers
 *	returned.
 */
void hl_kapi_exit(void)
{
	destroy_workqueue(hl_kapi_wq);
}

static const struct hl_end_ops hl_kapi_end = {
	.take = hl_kapi_take,
	.post = hl_kapi_post,
};

/*
 * The length of kernel path @path, which must fit the ABI's limit.
 * Return: the length, or -EINVAL (NULL) or -ENAMETOOLONG.
 */
static int hl_kpath_len(const char *path)
{
	size_t len;

	if (!path)
		return -EINVAL;
	len = strnlen(path, HLOCK_PATH_MAX + 1);
	return len > HLOCK_PATH_MAX ? -ENAMETOOLONG : len;
}

/**
 * hlock_locker_create() - A new kernel locker.
 * @ns: The IPC namespace whose lock space it locks in; NULL for the
 *	initial one's, which processes of the initial namespaces share.
 *
 * The locker is shown in the lock table under the calling task's pid and
 * name (a kthread's name, for a kthread): make it in the thread that will
 * use it.  A locker of a task that may jump queues (CAP_SYS_NICE, as
 * kthreads have) may use HLOCK_F_FRONT and HLOCK_F_COMPAT_FIRST.
 *
 * Context: process context, may sleep.
 * Return: the locker, or an ERR_PTR() (-ENOMEM, -EBUSY).
 */
struct hlock_locker *hlock_locker_create(struct ipc_namespace *ns)
{
	struct hlock_locker *lk;
	struct hl_ns *space;
	struct hl_file *f;

	space = hl_ns_get_ipc(ns ? ns : init_task.nsproxy->ipc_ns);
	if (IS_ERR(space))
		return ERR_CAST(space);
	f = hl_file_new(space, sizeof(struct hlock_locker));
	if (IS_ERR(f))
		return ERR_CAST(f);
	lk = hl_klocker(f);
	INIT_WORK(&lk->kapi.post, hl_kapi_post_fn);
	return lk;
}
EXPORT_SYMBOL_GPL(hlock_locker_create);

/**
 * hlock_locker_destroy() - End a kernel locker, as closing /dev/hlock
 *	ends a process's.
 * @lk: The locker; NULL or an error pointer does nothing.
 *
 * Withdraws its call in flight (an asynchronous call's completion is
 * called with -ECANCELED), releases everything it holds, granting whom
 * that lets in, and waits until every completion of it was called.  From
 * its start, calls on the locker fail with -ESHUTDOWN: those of its
 * completions, which may still run.  Must not be called from the
 * locker's own completion, nor while another thread is in a call on it.
 *
 * Context: process context, may sleep.
 */
void hlock_locker_destroy(struct hlock_locker *lk)
{
	struct hl_file *f;

	if (IS_ERR_OR_NULL(lk))
		return;
	f = hl_kfile(lk);
	/* Keep it to wait on: the release drops the creator's reference. */
	refcount_inc(&f->ref);
	mutex_lock(&f->lock);
	lk->kapi.dead = true;
	mutex_unlock(&f->lock);
	/*
	 * Completions already due end first: a call of theirs that began
	 * before the flag was set (a blocking lock, say) is over before the
	 * release; those that run later find the flag.
	 */
	wait_var_event(&lk->kapi.calls, !atomic_read(&lk->kapi.calls));
	hl_file_release(f);
	wait_var_event(&lk->kapi.calls, !atomic_read(&lk->kapi.calls));
	hl_file_put(f);
}
EXPORT_SYMBOL_GPL(hlock_locker_destroy);

/*
 * Check a lock call's mode and flags.  Return: the sleep state of its
 * waits, or 0 when they are not valid.
 */
static unsigned int hl_ksleep(unsigned int mode, unsigned int flags)
{
	if (!hl_mode_valid(mode) || flags & ~(HLOCK_F_ALL | HLOCK_KF_ALL) ||
	    flags & HLOCK_F_ASYNC)
		return 0;
	switch (flags & HLOCK_KF_ALL) {
	case 0:
		return TASK_INTERRUPTIBLE;
	case HLOCK_KF_KILLABLE:
		return TASK_KILLABLE;
	case HLOCK_KF_UNINTERRUPTIBLE:
		return TASK_UNINTERRUPTIBLE;
	default:
		return 0;
	}
}

/**
 * hlock_kernel_lock() - Lock a path, as hlock_lock(3) does.
 * @lk: The locker.
 * @path: The path, NUL-terminated ("" is the root).
 * @mode: HLOCK_IS ... HLOCK_X.
 * @flags: HLOCK_F_FRONT, HLOCK_F_COMPAT_FIRST; HLOCK_KF_KILLABLE or
 *	HLOCK_KF_UNINTERRUPTIBLE.
 * @timeout_ns: 0 tries without waiting, negative waits as long as it
 *	takes, positive waits at most that long.
 *
 * Context: process context, may sleep.
 * Return: 0 when granted; -EAGAIN (a try that would wait), -ETIMEDOUT,
 * -EINTR (a signal; with HLOCK_KF_KILLABLE a fatal one), -EDEADLK,
 * -EBUSY (a call is in flight), -EINVAL, -ENAMETOOLONG, -ENOMEM, -EPERM,
 * -E2BIG (max_locks_per_locker), as hlock_lock(3); -ESHUTDOWN once
 * hlock_locker_destroy() began.
 */
int hlock_kernel_lock(struct hlock_locker *lk, const char *path,
		      unsigned int mode, unsigned int flags, s64 timeout_ns)
{
	unsigned int sleep = hl_ksleep(mode, flags);
	struct hl_file *f = hl_kfile(lk);
	struct hl_grants g;
	int len = hl_kpath_len(path), ret;

	if (len < 0)
		return len;
	if (!sleep)
		return -EINVAL;
	hl_grants_init(&g);
	mutex_lock(&f->lock);
	if (unlikely(lk->kapi.dead))
		ret = -ESHUTDOWN;
	else
		ret = hl_lock_call(f, path, len, mode, flags & HLOCK_F_ALL,
				   timeout_ns, 0, 0, sleep, &g);
	hl_file_unlock(f);
	hl_grants_run(&g);
	return ret;
}
EXPORT_SYMBOL_GPL(hlock_kernel_lock);

/**
 * hlock_kernel_lock_async() - Lock a path, without waiting for the grant.
 * @lk: The locker.
 * @path: The path, NUL-terminated.
 * @mode: HLOCK_IS ... HLOCK_X.
 * @flags: HLOCK_F_FRONT, HLOCK_F_COMPAT_FIRST.
 * @done: Called when a call that had to wait ends (see hlock_done_fn).
 * @data: Its pointer.
 *
 * The call waits as long as it takes, unless withdrawn: by
 * hlock_kernel_unlock() of its path, by hlock_locker_destroy(), or refused
 * by the deadlock detector (-EDEADLK).  Until it ends, other calls on the
 * locker but hlock_kernel_held() and that unlock return -EBUSY; another
 * asynchronous call does until @done was called.
 *
 * Context: process context, may sleep.
 * Return: 0 when granted at once (@done is not called), -EINPROGRESS when
 * queued (@done is called once, later, maybe before this returns), or
 * another -errno as hlock_kernel_lock() (@done is not called).
 */
int hlock_kernel_lock_async(struct hlock_locker *lk, const char *path,
			    unsigned int mode, unsigned int flags,
			    hlock_done_fn done, void *data)
{
	struct hl_file *f = hl_kfile(lk);
	struct hl_grants g;
	int len = hl_kpath_len(path), ret;

	if (len < 0)
		return len;
	if (!done || hl_ksleep(mode, flags) != TASK_INTERRUPTIBLE)
		return -EINVAL;
	hl_grants_init(&g);
	mutex_lock(&f->lock);
	if (lk->kapi.dead) {
		ret = -ESHUTDOWN;
	} else if (lk->kapi.done) {
		ret = -EBUSY;
	} else {
		/* Set first: a grant's continuation needs the lock to run. */
		lk->kapi.done = done;
		lk->kapi.data = data;
		f->end = &hl_kapi_end;
		ret = hl_lock_call(f, path, len, mode, flags | HLOCK_F_ASYNC,
				   -1, 0, 0, TASK_INTERRUPTIBLE, &g);
		if (ret != -EINPROGRESS) {
			f->end = NULL;
			lk->kapi.done = NULL;
			lk->kapi.data = NULL;
		}
	}
	hl_file_unlock(f);
	hl_grants_run(&g);
	return ret;
}
EXPORT_SYMBOL_GPL(hlock_kernel_lock_async);

static int hl_kpath(struct hlock_locker *lk, unsigned int op,
		    const char *path, unsigned int mode)
{
	int len = hl_kpath_len(path);

	if (len < 0)
		return len;
	/*
	 * A completion's call on its locker while it is destroyed: read
	 * without the lock, as hlock_locker_destroy() lets the completions
	 * running then end before it releases anything.
	 */
	if (READ_ONCE(lk->kapi.dead))
		return -ESHUTDOWN;
	return hl_do_path(hl_kfile(lk), op, path, len, mode);
}

/**
 * hlock_kernel_unlock() - Release one acquisition of a path, as
 *	hlock_unlock(3) does.
 * @lk: The locker.
 * @path: The path.
 *
 * On the path of its asynchronous call in flight, withdraws the call
 * instead: its completion is called with -ECANCELED, later, from the
 * workqueue (keep its data until then); another asynchronous call on the
 * locker is -EBUSY until it was.
 *
 * Context: process context, may sleep.
 * Return: the acquisitions of @path still held after the release (0 when
 * none), or -ENOENT (not held), -EBUSY (on the way of a blocking call in
 * flight, which an unlock does not withdraw), -ESTALE, -EINVAL,
 * -ENAMETOOLONG, -ESHUTDOWN (hlock_locker_destroy() began).
 */
int hlock_kernel_unlock(struct hlock_locker *lk, const char *path)
{
	return hl_kpath(lk, HLOCK_IOC_UNLOCK, path, HLOCK_NL);
}
EXPORT_SYMBOL_GPL(hlock_kernel_unlock);

/**
 * hlock_kernel_downgrade() - Lower the mode held on a path, as
 *	hlock_downgrade(3) does.
 * @lk: The locker.
 * @path: The path.
 * @mode: The new mode, which the held one must cover.
 *
 * Context: process context, may sleep.
 * Return: 0, or -ENOENT, -EINVAL, -EBUSY, -ENAMETOOLONG, -ESHUTDOWN.
 */
int hlock_kernel_downgrade(struct hlock_locker *lk, const char *path,
			   unsigned int mode)
{
	if (!hl_mode_valid(mode))
		return -EINVAL;
	return hl_kpath(lk, HLOCK_IOC_DOWNGRADE, path, mode);
}
EXPORT_SYMBOL_GPL(hlock_kernel_downgrade);

/**
 * hlock_kernel_held() - The mode a locker holds on a path.
 * @lk: The locker.
 * @path: The path.
 *
 * Context: process context, may sleep.
 * Return: HLOCK_NL ... HLOCK_X (the old mode while a conversion waits), or
 * -EINVAL, -ENAMETOOLONG, -ESHUTDOWN.
 */
int hlock_kernel_held(struct hlock_locker *lk, const char *path)
{
	return hl_kpath(lk, HLOCK_IOC_HELD, path, HLOCK_NL);
}
EXPORT_SYMBOL_GPL(hlock_kernel_held);

#ifdef HLOCK_TEST
/*
 * What hlock_torture checks its invariants with: in the test build only,
 * which is the only one that builds hlock_torture.
 */
/**
 * hlock_kernel_granted() - What all lockers are granted on a path, per
 *	mode: for invariant checks (hlock_torture) and tests.
 * @lk: A locker of the lock space to look in.
 * @path: The path.
 * @counts: Set to the number of granted requests per mode (one per
 *	locker, whatever its acquisition count; a converting request in the
 *	mode it holds); all zero when the resource does not exist.
 *
 * Context: process context; takes the resource's locks.
 * Return: 0, or -EINVAL, -ENAMETOOLONG.
 */
int hlock_kernel_granted(struct hlock_locker *lk, const char *path,
			 unsigned int counts[HLOCK_NR_MODES])
{
	struct hl_file *f = hl_kfile(lk);
	int len = hl_kpath_len(path), ret;
	struct hl_path p;
	struct hl_head *h;

	memset(counts, 0, HLOCK_NR_MODES * sizeof(*counts));
	if (len < 0)
		return len;
	ret = hl_path_parse(&p, path, len);
	if (ret)
		return ret;
	rcu_read_lock();
	h = hl_path_find(f->root, &p, path);
	if (h)
		hl_head_granted(h, counts);
	rcu_read_unlock();
	return 0;
}
EXPORT_SYMBOL_GPL(hlock_kernel_granted);

/**
 * hlock_kernel_grant_policy() - The grant policy in force.
 *
 * Context: any.
 * Return: HLOCK_POLICY_BATCH or HLOCK_POLICY_FIFO (the grant_policy
 * module parameter).
 */
unsigned int hlock_kernel_grant_policy(void)
{
	return hl_grant_policy();
}
EXPORT_SYMBOL_GPL(hlock_kernel_grant_policy);
#endif /* HLOCK_TEST */
