/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_table.c: the lock table (HLOCK_IOC_TABLE) and debugfs.
 */
#ifndef _HLOCK_TABLE_H
#define _HLOCK_TABLE_H

#include <linux/compiler.h>
#include <linux/types.h>

struct hl_file;

long hl_ioctl_table(struct hl_file *f, size_t usize, void __user *uarg);
long hl_ioctl_refuse(struct hl_file *f, size_t usize, void __user *uarg);
void hl_debugfs_init(void);
void hl_debugfs_exit(void);

#endif /* _HLOCK_TABLE_H */
