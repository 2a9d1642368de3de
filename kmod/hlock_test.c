// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: the test build's stall points (hlock_test.h).
 *
 * /sys/kernel/debug/hlock/test_stall, root only:
 *
 *   write "POINT NAME"     arm POINT for the resource named NAME (its
 *                          last path component); POINT is one of
 *                          reclaim   hl_res_reclaim(), the children count
 *                                    read, the head not locked
 *                          bast      hl_clk_work() of a cluster resource,
 *                                    a blocking AST noted, not taken in
 *                          ast       hl_clk_ast() of a cluster resource,
 *                                    the answer noted, the work not queued
 *   write "go"             let a stalled point go on (or disarm it)
 *   read                   "idle", "armed" or "stalled"
 *
 * One point is armed at a time, and it stalls once.  A stall may sit in
 * an RCU read section (the reclaim walk), so it spins rather than sleeps,
 * and gives up after HL_TEST_STALL_MS whatever the test does: a test that
 * dies never leaves a CPU spinning.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "hlock_internal.h"
#include "hlock_test.h"

/* Longest a point stalls: well below the soft-lockup and RCU-stall limits. */
#define HL_TEST_STALL_MS	5000

enum { HL_TS_IDLE, HL_TS_ARMED, HL_TS_STALLED };

static const char *const hl_ts_names[] = {
	[HL_TS_IDLE] = "idle",
	[HL_TS_ARMED] = "armed",
	[HL_TS_STALLED] = "stalled",
};

static const char *const hl_tp_names[HL_TP_NR] = {
	[HL_TP_RECLAIM] = "reclaim",
	[HL_TP_BAST] = "bast",
	[HL_TP_AST] = "ast",
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
 * Context: any that may spin for HL_TEST_STALL_MS.
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
	deadline = ktime_get_ns() + HL_TEST_STALL_MS * NSEC_PER_MSEC;
	while (ktime_get_ns() < deadline) {
		if (READ_ONCE(hl_test.state) != HL_TS_STALLED)
			return;
		mdelay(1);
	}
	pr_warn("test stall at %s: not let go in %u ms\n", hl_tp_names[tp],
		HL_TEST_STALL_MS);
	WRITE_ONCE(hl_test.state, HL_TS_IDLE);
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

/**
 * hl_test_debugfs() - Create /sys/kernel/debug/hlock/test_stall.
 * @dir: hlock's debugfs directory.
 */
void hl_test_debugfs(struct dentry *dir)
{
	debugfs_create_file("test_stall", 0600, dir, NULL, &hl_test_fops);
}
