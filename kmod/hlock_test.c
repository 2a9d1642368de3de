// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: what only the test build has (hlock_test.h): stall points, and
 * the switches a test sets to see its checks fail.
 *
 * /sys/kernel/debug/hlock/test_stall, root only:
 *
 *   write "POINT NAME"     arm POINT for NAME; POINT is one of
 *                          reclaim   hl_res_reclaim(), the children count
 *                                    read, the head not locked
 *                          wait      hl_lock_call(), a blocking call that
 *                                    dropped the locker lock, not asleep
 *                          table     hl_snap_req(), a record of the lock
 *                                    table made, the other lockers to come
 *                          bast      hl_clk_work() of a cluster resource,
 *                                    a blocking AST noted, not taken in
 *                          ast       hl_clk_ast() of a cluster resource,
 *                                    the answer noted, the work not queued
 *                          lease_work  hl_lease_work(), queued, the locker
 *                                    lock not taken
 *                          release   hl_file_release_all(), a batch of
 *                                    releases done, the locker lock
 *                                    dropped
 *                          close     hl_file_release(), before anything
 *                                    is withdrawn or released
 *                          and NAME is the resource's name (its last path
 *                          component), for lease_work, release and close
 *                          the command name of the locker's last lock
 *                          call
 *   write "go"             let a stalled point go on (or disarm it)
 *   read                   "idle", "armed" or "stalled"
 *
 * One point is armed at a time, and it stalls once.  A stall sleeps, but
 * for the reclaim walk's, which sits in an RCU read section and spins;
 * each gives up whatever the test does, the spinning one after
 * HL_TEST_STALL_MS, the others after HL_TEST_SLEEP_MS: a test that dies
 * never leaves a CPU spinning, nor a work item held for long.  That time
 * is the clock's, not a count of mdelay() calls, which under emulation
 * can be much shorter than they ask (on 6.1 in qemu, 5000 of them took
 * less than half a second).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/panic.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>

#include "hlock_internal.h"
#include "hlock_test.h"

/* Longest a point stalls: well below the soft-lockup and RCU-stall limits. */
#define HL_TEST_STALL_MS	5000
/* A point that sleeps holds its CPU from nobody: a slow VM gets longer. */
#define HL_TEST_SLEEP_MS	20000

enum { HL_TS_IDLE, HL_TS_ARMED, HL_TS_STALLED };

static const char *const hl_ts_names[] = {
	[HL_TS_IDLE] = "idle",
	[HL_TS_ARMED] = "armed",
	[HL_TS_STALLED] = "stalled",
};

/*
 * The points that may sleep while they stall: all but the reclaim walk's,
 * which sits in an RCU read section.  One that spins keeps its CPU: a
 * kworker bound there (the one a test's reclaim pass waits for, say)
 * waits the whole stall, and the test may never see it stall.
 */
static const bool hl_tp_sleeps[HL_TP_NR] = {
	[HL_TP_LEASE_WORK] = true,
	[HL_TP_WAIT] = true,
	[HL_TP_TABLE] = true,
	[HL_TP_BAST] = true,
	[HL_TP_AST] = true,
	[HL_TP_RELEASE] = true,
	[HL_TP_CLOSE] = true,
};

static const char *const hl_tp_names[HL_TP_NR] = {
	[HL_TP_RECLAIM] = "reclaim",
	[HL_TP_LEASE_WORK] = "lease_work",
	[HL_TP_WAIT] = "wait",
	[HL_TP_TABLE] = "table",
	[HL_TP_BAST] = "bast",
	[HL_TP_AST] = "ast",
	[HL_TP_RELEASE] = "release",
	[HL_TP_CLOSE] = "close",
};

static DEFINE_SPINLOCK(hl_test_lock);
static struct {
	int state;			/* HL_TS_* */
	enum hl_test_point tp;		/* the point armed */
	char name[NAME_MAX + 1];	/* for this resource name */
	unsigned int len;
} hl_test;

/**
 * hl_test_stall() - Stall here if a test armed this point for @name.
 * @tp: The point.
 * @name: The resource's name (not NUL-terminated).
 * @len: Its length.
 *
 * Context: any that may spin for HL_TEST_STALL_MS, or sleep for
 * HL_TEST_SLEEP_MS if the point is one that sleeps (hl_tp_sleeps[]).
 */
void hl_test_stall(enum hl_test_point tp, const char *name, unsigned int len)
{
	u64 deadline;

	if (READ_ONCE(hl_test.state) != HL_TS_ARMED)
		return;
	spin_lock(&hl_test_lock);
	if (hl_test.state != HL_TS_ARMED || hl_test.tp != tp ||
	    hl_test.len != len || memcmp(hl_test.name, name, len)) {
		spin_unlock(&hl_test_lock);
		return;
	}
	WRITE_ONCE(hl_test.state, HL_TS_STALLED);
	spin_unlock(&hl_test_lock);
	/*
	 * By the clock: a count of mdelay()s is not one where the delay
	 * loop's calibration is off (qemu's TCG: 5000 mdelay(1) took 3 ms
	 * on 6.1, and the stall gave up before any test saw it).
	 */
	deadline = ktime_get_ns() + (hl_tp_sleeps[tp] ? HL_TEST_SLEEP_MS :
				     HL_TEST_STALL_MS) * NSEC_PER_MSEC;
	while (ktime_get_ns() < deadline) {
		if (READ_ONCE(hl_test.state) != HL_TS_STALLED)
			return;
		if (hl_tp_sleeps[tp])
			usleep_range(1000, 2000);
		else
			mdelay(1);
	}
	pr_warn("test stall at %s: not let go in %u ms\n", hl_tp_names[tp],
		hl_tp_sleeps[tp] ? HL_TEST_SLEEP_MS : HL_TEST_STALL_MS);
	WRITE_ONCE(hl_test.state, HL_TS_IDLE);
}

/**
 * hl_test_stall_path() - hl_test_stall() for the last component of a path.
 * @tp: The point.
 * @path: The path (not NUL-terminated).
 * @len: Its length.
 *
 * Context: as hl_test_stall().
 */
void hl_test_stall_path(enum hl_test_point tp, const char *path,
			unsigned int len)
{
	const char *name = path + len;

	if (READ_ONCE(hl_test.state) != HL_TS_ARMED)
		return;
	while (name > path && name[-1] != '/')
		name--;
	hl_test_stall(tp, name, path + len - name);
}

static ssize_t hl_test_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	char buf[NAME_MAX + 16], *name;
	enum hl_test_point tp;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	strim(buf);
	if (!strcmp(buf, "go")) {
		WRITE_ONCE(hl_test.state, HL_TS_IDLE);
		return count;
	}
	name = strchr(buf, ' ');
	if (!name)
		return -EINVAL;
	*name++ = '\0';
	for (tp = 0; tp < HL_TP_NR; tp++)
		if (!strcmp(buf, hl_tp_names[tp]))
			break;
	if (tp == HL_TP_NR || !*name || strlen(name) > NAME_MAX)
		return -EINVAL;
	spin_lock(&hl_test_lock);
	if (hl_test.state != HL_TS_IDLE) {
		spin_unlock(&hl_test_lock);
		return -EBUSY;
	}
	hl_test.tp = tp;
	hl_test.len = strlen(name);
	memcpy(hl_test.name, name, hl_test.len);
	WRITE_ONCE(hl_test.state, HL_TS_ARMED);
	spin_unlock(&hl_test_lock);
	return count;
}

static ssize_t hl_test_read(struct file *file, char __user *ubuf,
			    size_t count, loff_t *ppos)
{
	const char *s = hl_ts_names[READ_ONCE(hl_test.state)];
	char buf[16];
	int n = scnprintf(buf, sizeof(buf), "%s\n", s);

	return simple_read_from_buffer(ubuf, count, ppos, buf, n);
}

static const struct file_operations hl_test_fops = {
	.owner = THIS_MODULE,
	.read = hl_test_read,
	.write = hl_test_write,
	.llseek = noop_llseek,
};

/*
 * test_skip_conflict: grant new requests without the conflict check, so
 * that hlock_torture's checks can be seen to fail (scripts/torture
 * --broken).  A broken lock manager: every report that follows says so.
 */
bool hl_test_skip_conflict;

static int hl_skip_conflict_set(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_bool(val, kp);

	if (!ret && hl_test_skip_conflict) {
		pr_warn("test_skip_conflict: grants ignore conflicts\n");
		add_taint(TAINT_TEST, LOCKDEP_STILL_OK);
	}
	return ret;
}

static const struct kernel_param_ops hl_skip_conflict_ops = {
	.set = hl_skip_conflict_set,
	.get = param_get_bool,
};
module_param_cb(test_skip_conflict, &hl_skip_conflict_ops,
		&hl_test_skip_conflict, 0644);
MODULE_PARM_DESC(test_skip_conflict,
		 "Test build only: grant new requests without the conflict check (taints the kernel)");

/*
 * test_dlm_fail: the next N DLM lock and unlock requests of cluster lock
 * spaces fail with ENOMEM before they reach the DLM, as if it had refused
 * them (hlock_cluster_test.sh's refused requests).
 */
static atomic_t hl_test_dlm_fail = ATOMIC_INIT(0);

static int hl_test_dlm_fail_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret = kstrtouint(val, 0, &n);

	if (ret)
		return ret;
	if (n > INT_MAX)
		return -EINVAL;
	atomic_set(&hl_test_dlm_fail, n);
	return 0;
}

static int hl_test_dlm_fail_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&hl_test_dlm_fail));
}

static const struct kernel_param_ops hl_test_dlm_fail_ops = {
	.set = hl_test_dlm_fail_set,
	.get = hl_test_dlm_fail_get,
};
module_param_cb(test_dlm_fail, &hl_test_dlm_fail_ops, NULL, 0644);
MODULE_PARM_DESC(test_dlm_fail,
		 "Test build only: the next N DLM lock and unlock requests of resources fail with ENOMEM, as if the DLM refused them (reads what is left)");

/**
 * hl_test_dlm_failed() - Whether a test asked for this DLM request to fail.
 *
 * Context: any.
 * Return: true for the next test_dlm_fail requests, then false.
 */
bool hl_test_dlm_failed(void)
{
	return atomic_add_unless(&hl_test_dlm_fail, -1, 0);
}

/**
 * hl_test_debugfs() - Create /sys/kernel/debug/hlock/test_stall.
 * @dir: hlock's debugfs directory.
 */
void hl_test_debugfs(struct dentry *dir)
{
	debugfs_create_file("test_stall", 0600, dir, NULL, &hl_test_fops);
}
