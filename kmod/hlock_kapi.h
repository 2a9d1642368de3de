/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_kapi.c: the in-kernel API (include/hlock_kernel.h, whose functions
 * it defines), and a kernel locker's state.
 */
#ifndef _HLOCK_KAPI_H
#define _HLOCK_KAPI_H

#include <linux/atomic.h>

#include "hlock_internal.h"

/**
 * struct hl_kapi - A kernel locker's asynchronous calls.
 * @done: What to call when the asynchronous call in flight ends; NULL
 *	when none is.  Under the locker lock.
 * @data: The pointer to call it with.
 * @calls: Completions taken out of the slot and not yet called: a kernel
 *	locker is destroyed only once none is left.
 */
struct hl_kapi {
	hlock_done_fn done;
	void *data;
	atomic_t calls;
};

/**
 * struct hlock_locker - A kernel locker (include/hlock_kernel.h): a locker
 *	without a file, the type other modules see.
 * @f: The locker.
 * @kapi: Its asynchronous calls.
 */
struct hlock_locker {
	struct hl_file f;
	struct hl_kapi kapi;
};

#endif /* _HLOCK_KAPI_H */
