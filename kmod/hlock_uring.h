/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_uring.c: lock, unlock and downgrade through io_uring, and the
 * state of a locker's lock in flight there.
 */
#ifndef _HLOCK_URING_H
#define _HLOCK_URING_H

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/types.h>
#include <linux/workqueue.h>

struct hl_file;
struct io_uring_cmd;

/**
 * struct hl_ring - A locker's lock in flight through io_uring.
 * @cmd: Its command, from its submission until whoever ends it (the
 *	continuation of its grant, its timer, an unlock of its path,
 *	io_uring's cancel or the watchdog) takes it out, under the locker
 *	lock: exactly one of them completes it.  Set by hl_ring_arm() and
 *	cleared by hl_ring_disarm() only, which watch and unwatch it.
 * @deadline: When it times out; KTIME_MAX for never.
 * @timer: Fires at @deadline.
 * @expire: Ends it in process context once @timer fired.
 * @watch: Entry in the watchdog's list while @cmd is set, on kernels
 *	whose io_uring cannot cancel a driver's command (before 6.7).
 * @doomed_since: There, under its mutex: jiffies when the watchdog first
 *	saw @cmd's submitter or ring going away, 0 if it did not.
 */
struct hl_ring {
	struct io_uring_cmd *cmd;
	ktime_t deadline;
	struct hrtimer timer;
	struct work_struct expire;
	struct list_head watch;
	unsigned long doomed_since;
};

void hl_ring_init(struct hl_file *f);
void hl_ring_arm(struct hl_file *f, struct io_uring_cmd *cmd, s64 timeout_ns,
		 unsigned int issue_flags);
struct io_uring_cmd *hl_ring_disarm(struct hl_file *f);
void hl_ring_post(struct io_uring_cmd *cmd, int res);
void hl_ring_release(struct hl_file *f);
int hl_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);
void hl_ring_exit(void);

#endif /* _HLOCK_URING_H */
