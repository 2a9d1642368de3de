/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock inside the kernel: the API other modules use to take the same
 * hierarchical locks that processes take through /dev/hlock.
 *
 * A kernel locker is what an open file of /dev/hlock is to a process: it
 * holds locks, has at most one lock call in flight, and releases
 * everything when destroyed.  Kernel and process lockers of one lock space
 * meet on the same resources (a kernel locker's X blocks a process's S on
 * the same path, and the other way round), and both are in the lock table,
 * a kernel locker under the name of the task that made it.
 *
 * Paths, modes, HLOCK_F_* flags, timeouts and the errors returned are those
 * of hlock_lock(3), with two differences: HLOCK_F_ASYNC is not a flag here
 * (hlock_kernel_lock_async() is the asynchronous call), and a blocking call
 * can choose how it sleeps (HLOCK_KF_KILLABLE, HLOCK_KF_UNINTERRUPTIBLE).
 *
 * Every function may sleep, and none may be called with a spinlock held
 * or from interrupt context.  The calls on one locker are serialised by
 * the locker itself; several threads may share one.
 */
#ifndef _HLOCK_KERNEL_H
#define _HLOCK_KERNEL_H

#include <linux/types.h>
#include "../../uapi/linux/hlock.h"

struct ipc_namespace;
struct hlock_locker;

/*
 * Kernel-only flags of hlock_kernel_lock(), above the HLOCK_F_* bits.  By
 * default a wait ends on any signal (-EINTR), as for a process.
 */
/* Sleep killable: only a fatal signal ends the wait. */
#define HLOCK_KF_KILLABLE		(1U << 24)
/* Sleep uninterruptible: only the grant or the timeout end the wait. */
#define HLOCK_KF_UNINTERRUPTIBLE	(1U << 25)
#define HLOCK_KF_ALL	(HLOCK_KF_KILLABLE | HLOCK_KF_UNINTERRUPTIBLE)

/**
 * typedef hlock_done_fn - Completion of an asynchronous lock.
 * @lk: The locker.
 * @res: What hlock_kernel_lock() would have returned: 0 when granted, or
 *	-ECANCELED when the call was withdrawn (hlock_kernel_unlock() of its
 *	path, or hlock_locker_destroy()), or another -errno when it failed
 *	(-EDEADLK, -ENOMEM...).
 * @data: The caller's pointer.
 *
 * Called exactly once per queued call, in process context, with no hlock
 * lock held, from hlock's workqueue "hlock_kapi" (as the DLM calls its
 * ASTs), never inside the hlock call that granted or withdrew it.  It may
 * call the API on any locker, its own included (another asynchronous call
 * too; once hlock_locker_destroy() of it began, its calls fail with
 * -ESHUTDOWN), but should not sleep for long, nor wait for another
 * completion, nor make a blocking call on its own locker: other
 * completions wait behind it, and hlock_locker_destroy() waits for it.
 */
typedef void (*hlock_done_fn)(struct hlock_locker *lk, int res, void *data);

struct hlock_locker *hlock_locker_create(struct ipc_namespace *ns);
void hlock_locker_destroy(struct hlock_locker *lk);
int hlock_kernel_lock(struct hlock_locker *lk, const char *path,
		      unsigned int mode, unsigned int flags, s64 timeout_ns);
int hlock_kernel_lock_async(struct hlock_locker *lk, const char *path,
			    unsigned int mode, unsigned int flags,
			    hlock_done_fn done, void *data);
int hlock_kernel_unlock(struct hlock_locker *lk, const char *path);
int hlock_kernel_downgrade(struct hlock_locker *lk, const char *path,
			   unsigned int mode);
int hlock_kernel_held(struct hlock_locker *lk, const char *path);
/*
 * For hlock_torture's checks, in the test build of hlock only (make ko,
 * CONFIG_HLOCK_TEST=y): the module users load does not export them.
 */
int hlock_kernel_granted(struct hlock_locker *lk, const char *path,
			 unsigned int counts[HLOCK_NR_MODES]);
unsigned int hlock_kernel_grant_policy(void);

#endif /* _HLOCK_KERNEL_H */
