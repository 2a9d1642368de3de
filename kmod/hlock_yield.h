/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_yield.c: yield (HLOCK_IOC_YIELD): release everything, let the
 * waiters in, re-acquire.
 */
#ifndef _HLOCK_YIELD_H
#define _HLOCK_YIELD_H

#include <linux/types.h>

struct hl_file;

int hl_do_yield(struct hl_file *f, s64 timeout_ns);

#endif /* _HLOCK_YIELD_H */
