/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_yield.c: yield (HLOCK_IOC_YIELD): release everything, let the
 * waiters in, re-acquire.
 */
#ifndef _HLOCK_YIELD_H
#define _HLOCK_YIELD_H

#include <linux/types.h>

struct hl_file;
struct task_struct;

/**
 * struct hl_yield_state - A locker's yield.
 * @on: A yield is between its release and the end of its re-acquisition:
 *	lock calls of tasks other than @task (io_uring's included), unlock,
 *	downgrade and yield fail with EBUSY meanwhile.  Every lock call
 *	reads it.
 * @task: The task that yields, read only while @on is set.
 *
 * Under the locker lock.
 */
struct hl_yield_state {
	bool on;
	struct task_struct *task;
};

int hl_do_yield(struct hl_file *f, s64 timeout_ns);

#endif /* _HLOCK_YIELD_H */
