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
struct io_uring_cmd;
struct pid_namespace;

struct hl_file *hl_file_new(struct hl_ns *ns);
int hl_file_open(struct file *file);
void hl_file_release(struct hl_file *f);
void hl_file_put(struct hl_file *f);
int hl_file_pid_ns(struct hl_file *f, struct pid_namespace *ns);
int hl_do_lock(struct hl_file *f, const char *buf, unsigned int len,
	       unsigned int mode, unsigned int flags, s64 timeout_ns,
	       s64 lease_ns);
int hl_do_path(struct hl_file *f, unsigned int op, const char *buf,
	       unsigned int len, unsigned int mode);
int hl_do_ring_lock(struct hl_file *f, struct io_uring_cmd *cmd,
		    unsigned int issue_flags, const char *buf, unsigned int len,
		    unsigned int mode, unsigned int flags, s64 timeout_ns);
struct io_uring_cmd *hl_do_ring_expire(struct hl_file *f, int *res);
struct io_uring_cmd *hl_do_ring_cancel(struct hl_file *f,
				       struct io_uring_cmd *cmd,
				       bool (*doomed)(struct io_uring_cmd *cmd));
int hl_do_wait(struct hl_file *f, s64 timeout_ns);
bool hl_file_polled(struct hl_file *f);
void hl_grants_continue(struct hl_grants *g);
void hl_file_unlock(struct hl_file *f);
void hl_file_ticket_put(struct hl_file *f, struct hl_grants *g);
long hl_ioctl_owner(struct hl_file *f, size_t usize, void __user *uarg);
void hl_file_owner_exit(struct hl_file *f);
int hl_file_wait_exit(struct hl_file *f);
int hl_file_waitq_refill(struct hl_file *f);
ktime_t hl_deadline(s64 timeout_ns);
int hl_lock_call(struct hl_file *f, const char *buf, unsigned int len,
		 unsigned int mode, unsigned int flags, s64 timeout_ns,
		 s64 lease_ns, ktime_t deadline, unsigned int state,
		 struct hl_grants *g);
void hl_file_release_all(struct hl_file *f, struct hl_grants *g);
void hl_locker_op_done(struct hl_locker *lk);
extern bool hl_deadlock_on;

/**
 * hl_grants_run() - Continue the operations a caller's grant passes
 *	granted, if any (most calls granted nobody).
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
