// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: hierarchical (multi-granularity) locks for userspace.
 *
 * The device /dev/hlock, its ioctls (copy-in, checks, dispatch; the
 * ioctls of a path are copied in by hlock_locker.c, which inlines their
 * calls into them) and the module's life: at load it hands each
 * feature's answers to the core's hooks to the host.  The module parameters live with what they set.  See
 * hlock_internal.h for how the rest is split and locked.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/miscdevice.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "hlock_internal.h"
#include "hlock_clk.h"
#include "hlock_cluster.h"
#include "hlock_hooks.h"
#include "hlock_kapi.h"
#include "hlock_lease.h"
#include "hlock_locker.h"
#include "hlock_lvb.h"
#include "hlock_lvb_ioctl.h"
#include "hlock_ns.h"
#include "hlock_space.h"
#include "hlock_stats.h"
#include "hlock_table.h"
#include "hlock_ticket.h"
#include "hlock_uring.h"
#include "hlock_why.h"
#include "hlock_yield.h"

/*
 * copy_struct_from_user(), by a copy of constant size when the caller's
 * structure is the one this module knows: that copy skips the run-time
 * object checks of hardened usercopy, on the path of every lock.
 */
static __always_inline int hl_copy_args(void *dst, size_t ksize,
					const void __user *uarg, size_t usize)
{
	if (usize == ksize)
		return copy_from_user(dst, uarg, ksize) ? -EFAULT : 0;
	return copy_struct_from_user(dst, ksize, uarg, usize);
}

/*
 * HLOCK_IOC_WAIT and HLOCK_IOC_YIELD, whose arguments are a timeout and
 * the same other fields, in the same places (hl_init() checks).
 */
static long hl_ioctl_timed(struct hl_file *f, unsigned int nr, size_t usize,
			   void __user *uarg)
{
	struct hlock_wait_args args;
	long ret;

	ret = hl_copy_args(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.__pad || args.reserved[0] || args.reserved[1])
		return -EINVAL;
	if (nr == _IOC_NR(HLOCK_IOC_YIELD))
		return hl_do_yield(f, args.timeout_ns);
	return hl_do_wait(f, args.timeout_ns);
}

static long hl_ioctl_stats(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_stats_args args;
	struct hlock_stats st;
	void __user *dst;
	size_t n;
	long ret;

	ret = hl_copy_args(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.__pad || args.reserved[0] || args.reserved[1])
		return -EINVAL;
	/* Room to grow, but never a length nobody could mean. */
	if (!args.size || args.size > PAGE_SIZE)
		return -EINVAL;
	if (args.scope == HLOCK_STATS_LOCKER) {
		mutex_lock(&f->lock);
		st = f->stats;
		hl_ticket_stats(f, st.tickets);
		mutex_unlock(&f->lock);
	} else if (args.scope == HLOCK_STATS_GLOBAL) {
		hl_stats_sum(f->ns, &st);
		hl_ticket_stats(NULL, st.tickets);
	} else {
		return -EINVAL;
	}
	dst = u64_to_user_ptr(args.stats);
	n = min_t(size_t, args.size, sizeof(st));
	if (copy_to_user(dst, &st, n))
		return -EFAULT;
	if (args.size > n && clear_user(dst + n, args.size - n))
		return -EFAULT;
	return 0;
}

/*
 * HLOCK_IOC_GET_INFO: what this module knows of struct hlock_info, and
 * zeros in the rest of a larger one.
 */
static long hl_ioctl_info(size_t usize, void __user *uarg)
{
	struct hlock_info info;
	size_t n = min(usize, sizeof(info));

	memset(&info, 0, sizeof(info));
	info.abi_version = HLOCK_ABI_VERSION;
	info.max_depth = HLOCK_MAX_DEPTH;
	info.name_max = HLOCK_NAME_MAX;
	info.path_max = HLOCK_PATH_MAX;
	info.flags = HLOCK_F_ALL;
	info.grant_policy = hl_grant_policy();
	info.features = HLOCK_FEAT_URING | HLOCK_FEAT_TICKETS | HLOCK_FEAT_YIELD |
			HLOCK_FEAT_LEASE | HLOCK_FEAT_TOKEN | HLOCK_FEAT_DESCRIBE |
			HLOCK_FEAT_LVB | HLOCK_FEAT_BLOCKING |
			HLOCK_FEAT_CLUSTER | HLOCK_FEAT_CLUSTER_BIND |
			HLOCK_FEAT_OWNER | HLOCK_FEAT_REFUSE;
	if (copy_to_user(uarg, &info, n))
		return -EFAULT;
	if (usize > n && clear_user(uarg + n, usize - n))
		return -EFAULT;
	return 0;
}

/*
 * The commands by number, with the least size of their structure.
 * Commands are matched by number and direction; the size comes from the
 * command, so a later, larger structure is accepted as long as the bytes
 * this module does not know are zero (copy_struct_from_user()), or, for
 * what the module fills, are zeroed.
 */
/* An entry of hl_cmds[]: the command at its number, and its size. */
#define HL_CMD(cmd, type) \
	[_IOC_NR(cmd)] = { (cmd), sizeof(type) }

static const struct {
	unsigned int cmd;
	unsigned int min;
} hl_cmds[] = {
	HL_CMD(HLOCK_IOC_LOCK, struct hlock_lock_args),
	HL_CMD(HLOCK_IOC_UNLOCK, struct hlock_lock_args),
	HL_CMD(HLOCK_IOC_DOWNGRADE, struct hlock_lock_args),
	HL_CMD(HLOCK_IOC_HELD, struct hlock_lock_args),
	HL_CMD(HLOCK_IOC_WAIT, struct hlock_wait_args),
	HL_CMD(HLOCK_IOC_GET_INFO, struct hlock_info),
	HL_CMD(HLOCK_IOC_STATS, struct hlock_stats_args),
	HL_CMD(HLOCK_IOC_TABLE, struct hlock_table_args),
	HL_CMD(HLOCK_IOC_TOKEN, struct hlock_token_args),
	HL_CMD(HLOCK_IOC_DESCRIBE, struct hlock_describe_args),
	HL_CMD(HLOCK_IOC_YIELD, struct hlock_yield_args),
	HL_CMD(HLOCK_IOC_LVB, struct hlock_lvb_args),
	HL_CMD(HLOCK_IOC_EVENTS, struct hlock_events_args),
	HL_CMD(HLOCK_IOC_BLOCKING, struct hlock_lock_args),
	HL_CMD(HLOCK_IOC_CLUSTER, struct hlock_cluster_args),
	HL_CMD(HLOCK_IOC_OWNER, struct hlock_owner_args),
	HL_CMD(HLOCK_IOC_REFUSE, struct hlock_refuse_args),
	[_IOC_NR(HLOCK_IOC_RENEW)] = { HLOCK_IOC_RENEW, 0 },
};

/*
 * Every command by number (lock and unlock too, when their structure is
 * not this module's).  Out of line: the frame and the stack check its
 * commands need are not set up for every lock and unlock.
 */
static noinline long hl_ioctl_cmd(struct hl_file *f, unsigned int cmd,
				  unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);
	unsigned int nr = _IOC_NR(cmd), want;

	/* By number: an index, not a search, on the path of every lock. */
	if (_IOC_TYPE(cmd) != HLOCK_IOC_MAGIC || nr >= ARRAY_SIZE(hl_cmds))
		return -ENOTTY;
	nr = array_index_nospec(nr, ARRAY_SIZE(hl_cmds));
	want = hl_cmds[nr].cmd;
	if (!want || _IOC_DIR(cmd) != _IOC_DIR(want) ||
	    usize < hl_cmds[nr].min || usize > PAGE_SIZE)
		return -ENOTTY;
	switch (nr) {
	case _IOC_NR(HLOCK_IOC_LOCK):
		return hl_ioctl_lock(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_UNLOCK):
		return hl_ioctl_unlock(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_DOWNGRADE):
	case _IOC_NR(HLOCK_IOC_HELD):
	case _IOC_NR(HLOCK_IOC_BLOCKING):
		return hl_ioctl_path(f, want, usize, uarg);
	case _IOC_NR(HLOCK_IOC_WAIT):
	case _IOC_NR(HLOCK_IOC_YIELD):
		return hl_ioctl_timed(f, nr, usize, uarg);
	case _IOC_NR(HLOCK_IOC_STATS):
		return hl_ioctl_stats(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_TABLE):
		return hl_ioctl_table(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_GET_INFO):
		return hl_ioctl_info(usize, uarg);
	case _IOC_NR(HLOCK_IOC_TOKEN):
		return hl_ioctl_token(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_DESCRIBE):
		return hl_ioctl_describe(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_LVB):
		return hl_ioctl_lvb(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_EVENTS):
		return hl_ioctl_events(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_RENEW):
		return arg ? -EINVAL : hl_do_renew(f);
	case _IOC_NR(HLOCK_IOC_CLUSTER):
		return hl_ioctl_cluster(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_OWNER):
		return hl_ioctl_owner(f, usize, uarg);
	case _IOC_NR(HLOCK_IOC_REFUSE):
		return hl_ioctl_refuse(f, usize, uarg);
	}
	return -ENOTTY;
}

static long hl_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct hl_file *f = file->private_data;

	/* Lock and unlock as this module defines them: no lookup at all. */
	if (likely(cmd == HLOCK_IOC_LOCK))
		return hl_ioctl_lock(f, _IOC_SIZE(HLOCK_IOC_LOCK),
				     (void __user *)arg);
	if (likely(cmd == HLOCK_IOC_UNLOCK))
		return hl_ioctl_unlock(f, _IOC_SIZE(HLOCK_IOC_UNLOCK),
				       (void __user *)arg);
	return hl_ioctl_cmd(f, cmd, arg);
}

static __poll_t hl_poll(struct file *file, struct poll_table_struct *wait)
{
	struct hl_file *f = file->private_data;

	poll_wait(file, &f->wq, wait);
	/*
	 * POLLPRI: a lease was taken over and its path not unlocked yet, or
	 * a grant blocks a waiter; HLOCK_IOC_EVENTS tells which.
	 */
	return (hl_file_polled(f) ? EPOLLIN | EPOLLRDNORM : 0) |
	       (hl_file_events(f) ? EPOLLPRI : 0);
}

static int hl_open(struct inode *inode, struct file *file)
{
	int ret = hl_file_open(file);

	if (ret)
		return ret;
	return nonseekable_open(inode, file);
}

/*
 * A descriptor of the locker closes: at its owner's exit (HLOCK_IOC_OWNER),
 * the locks go now, whatever else keeps the file open.
 */
static int hl_flush(struct file *file, fl_owner_t id)
{
	/* Only an exit: the process may own the locks (hlock_locker.c). */
	if (current->flags & PF_EXITING)
		hl_file_owner_exit(file->private_data);
	return 0;
}

static int hl_release(struct inode *inode, struct file *file)
{
	hl_ring_release(file->private_data);
	hl_file_release(file->private_data);
	return 0;
}

static const struct file_operations hl_fops = {
	.owner = THIS_MODULE,
	.open = hl_open,
	.flush = hl_flush,
	.release = hl_release,
	.unlocked_ioctl = hl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.poll = hl_poll,
	.uring_cmd = hl_uring_cmd,
};

static struct miscdevice hl_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "hlock",
	.fops = &hl_fops,
	.mode = 0660,
};

static int __init hl_init(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct hlock_lock_args) != 48);
	BUILD_BUG_ON(sizeof(struct hlock_wait_args) != 32);
	BUILD_BUG_ON(sizeof(struct hlock_info) != 56);
	BUILD_BUG_ON(sizeof(struct hlock_stats_args) != 40);
	BUILD_BUG_ON(sizeof(struct hlock_table_args) != 48);
	BUILD_BUG_ON(sizeof(struct hlock_yield_args) != 32);
	/* hl_ioctl_timed() reads both through struct hlock_wait_args. */
	BUILD_BUG_ON(sizeof(struct hlock_yield_args) !=
		     sizeof(struct hlock_wait_args));
	BUILD_BUG_ON(offsetof(struct hlock_yield_args, flags) !=
		     offsetof(struct hlock_wait_args, flags));
	BUILD_BUG_ON(offsetof(struct hlock_yield_args, reserved) !=
		     offsetof(struct hlock_wait_args, reserved));
	BUILD_BUG_ON(sizeof(struct hlock_uring_args) != 16);
	BUILD_BUG_ON(sizeof(struct hlock_lock_record) != 96);
	BUILD_BUG_ON(sizeof(struct hlock_record_ext) != 88);
	BUILD_BUG_ON(sizeof(struct hlock_token_args) != 40);
	BUILD_BUG_ON(sizeof(struct hlock_describe_args) != 32);
	BUILD_BUG_ON(sizeof(struct hlock_lvb_args) != 48);
	BUILD_BUG_ON(sizeof(struct hlock_events_args) != 32);
	BUILD_BUG_ON(sizeof(struct hlock_cluster_args) != 40);
	BUILD_BUG_ON(sizeof(struct hlock_owner_args) != 8);
	BUILD_BUG_ON(HLOCK_PATH_MAX != 2047);
	/* struct hl_path keeps offsets in a u16. */
	BUILD_BUG_ON(HLOCK_PATH_MAX > U16_MAX);
	BUILD_BUG_ON(HLOCK_COMM_LEN != TASK_COMM_LEN);

	/* The features' answers to the core's hooks, before anything locks. */
	hl_hooks_set(&hl_space_hooks);
	hl_hooks_set(&hl_ns_hooks);
	hl_hooks_set(&hl_stats_hooks);
	hl_hooks_set(&hl_lease_hooks);
	hl_hooks_set(&hl_lvb_hooks);
	hl_hooks_set(&hl_clk_hooks);
	hl_hooks_set(&hl_cluster_hooks);
	ret = hl_hooks_check();
	if (ret)
		return ret;
	ret = hl_kapi_init();
	if (ret)
		return ret;
	ret = hl_space_init();
	if (ret)
		goto err_kapi;
	ret = hl_ns_init();
	if (ret)
		goto err_space;
	/* Bind to the DLM lockspace of the "cluster" parameter, if given. */
	ret = hl_cluster_init();
	if (ret)
		goto err_ns;
	ret = misc_register(&hl_misc);
	if (ret)
		goto err_ns;
	hl_debugfs_init();
	return 0;

err_ns:
	hl_ns_exit();
	hl_cluster_exit();
err_space:
	hl_space_exit();
err_kapi:
	hl_kapi_exit();
	return ret;
}

static void __exit hl_exit(void)
{
	hl_debugfs_exit();
	misc_deregister(&hl_misc);
	hl_ring_exit();
	/* Every file is closed: every locker and resource can go. */
	hl_ns_exit();
	hl_space_exit();
	hl_cluster_exit();
	hl_kapi_exit();
}

module_init(hl_init);
module_exit(hl_exit);

MODULE_DESCRIPTION("Hierarchical multi-granularity locks for userspace");
MODULE_AUTHOR("The hlock authors");
MODULE_LICENSE("GPL");
