/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_lvb_ioctl.c: HLOCK_IOC_LVB and HLOCK_IOC_EVENTS.
 */
#ifndef _HLOCK_LVB_IOCTL_H
#define _HLOCK_LVB_IOCTL_H

#include <linux/compiler.h>
#include <linux/types.h>

struct hl_file;

long hl_ioctl_lvb(struct hl_file *f, size_t usize, void __user *uarg);
unsigned int hl_file_events(struct hl_file *f);
long hl_ioctl_events(struct hl_file *f, size_t usize, void __user *uarg);

#endif /* _HLOCK_LVB_IOCTL_H */
