/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_why.c: fencing tokens (HLOCK_IOC_TOKEN) and lockers' descriptions
 * (HLOCK_IOC_DESCRIBE).
 */
#ifndef _HLOCK_WHY_H
#define _HLOCK_WHY_H

#include <linux/compiler.h>
#include <linux/types.h>

struct hl_file;

long hl_ioctl_token(struct hl_file *f, size_t usize, void __user *uarg);
long hl_ioctl_describe(struct hl_file *f, size_t usize, void __user *uarg);

#endif /* _HLOCK_WHY_H */
