/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_locker.c: lockers.  Lock, unlock, wait, the continuations of grants,
 * the owner of a locker's locks, close.
 */
#ifndef _HLOCK_LOCKER_H
#define _HLOCK_LOCKER_H

#include <linux/compiler.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/types.h>

#include "hlock_core.h"

struct file;
struct hl_file;
struct hl_ns;
struct hl_end_ops;
struct hl_ended;

struct hl_file *hl_file_new(struct hl_ns *ns, size_t size);
int hl_file_open(struct file *file);
void hl_file_release(struct hl_file *f);
long hl_ioctl_lock(struct hl_file *f, size_t usize, void __user *uarg);
long hl_ioctl_unlock(struct hl_file *f, size_t usize, void __user *uarg);
long hl_ioctl_path(struct hl_file *f, unsigned int cmd, size_t usize,
		   void __user *uarg);
int hl_do_path(struct hl_file *f, unsigned int op, const char *buf,
	       unsigned int len, unsigned int mode);
int hl_lock_armed(struct hl_file *f, const struct hl_end_ops *end,
		  const char *buf, unsigned int len, unsigned int mode,
		  unsigned int flags, s64 timeout_ns, struct hl_grants *g);
int hl_lock_expire(struct hl_file *f, struct hl_grants *g);
void hl_lock_withdraw(struct hl_file *f, unsigned int why,
		      struct hl_grants *g);
bool hl_end_take(struct hl_file *f, struct hl_grants *g, struct hl_ended *e);
int hl_do_wait(struct hl_file *f, s64 timeout_ns);
bool hl_file_polled(struct hl_file *f);
long hl_ioctl_owner(struct hl_file *f, size_t usize, void __user *uarg);
void hl_file_owner_exit(struct hl_file *f);
int hl_file_wait_exit(struct hl_file *f);
ktime_t hl_deadline(s64 timeout_ns);
int hl_lock_call(struct hl_file *f, const char *buf, unsigned int len,
		 unsigned int mode, unsigned int flags, s64 timeout_ns,
		 s64 lease_ns, ktime_t deadline, unsigned int state,
		 struct hl_grants *g);
void hl_file_release_all(struct hl_file *f, struct hl_grants *g);

/**
 * hl_grants_run() - Hand the operations a caller's grant passes granted
 *	back to their lock calls (hl_grants_continue()), if any: most calls
 *	granted nobody.
 * @g: The lockers; empty afterwards.
 *
 * Context: process context, no hlock lock held.
 */
static inline void hl_grants_run(struct hl_grants *g)
{
	if (!list_empty(&g->lockers))
		hl_grants_continue(g);
}

#endif /* _HLOCK_LOCKER_H */
