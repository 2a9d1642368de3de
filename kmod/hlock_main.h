/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_main.c: the device, its ioctls, the module's parameters and init.
 */
#ifndef _HLOCK_MAIN_H
#define _HLOCK_MAIN_H

/* The grant policy parameter: HLOCK_POLICY_BATCH or HLOCK_POLICY_FIFO. */
extern unsigned int hl_policy;

#endif /* _HLOCK_MAIN_H */
