/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_kapi.c: the in-kernel API (include/hlock_kernel.h, whose functions
 * it defines), and a kernel locker's state.
 */
#ifndef _HLOCK_KAPI_H
#define _HLOCK_KAPI_H

#include <linux/atomic.h>
#include <linux/workqueue.h>

#include "hlock_internal.h"
#include "include/hlock_kernel.h"

/**
 * struct hl_kapi - A kernel locker's asynchronous calls.
 * @done: What to call when the asynchronous call in flight ends: set when
 *	it is made, cleared once its completion is on its way, by @post's
 *	worker.  Under the locker lock.  Another asynchronous call is made
 *	only when it is NULL.
 * @data: The pointer to call it with.
 * @res: The call's result, for @post.
 * @post: Calls @done on hlock's kernel API workqueue, never inside another
 *	hlock call: a completion that calls the API, which may grant and so
 *	complete another locker's call, nests in nothing.
 * @calls: Completions taken out of the slot and not yet called: a kernel
 *	locker is destroyed only once none is left.
 * @dead: hlock_locker_destroy() began: calls fail with -ESHUTDOWN (those
 *	of its completions, which may still run).  Set under the locker lock.
 */
struct hl_kapi {
	hlock_done_fn done;
	void *data;
	int res;
	struct work_struct post;
	atomic_t calls;
	bool dead;
};

int hl_kapi_init(void);
void hl_kapi_exit(void);

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
