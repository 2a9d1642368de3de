/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_uring.c: lock, unlock and downgrade through io_uring.
 */
#ifndef _HLOCK_URING_H
#define _HLOCK_URING_H

struct hl_file;
struct io_uring_cmd;

void hl_ring_release(struct hl_file *f);
int hl_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);
void hl_ring_exit(void);

#endif /* _HLOCK_URING_H */
