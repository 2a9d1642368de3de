/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_cluster.c: cluster lock spaces on the kernel's DLM.  A lockspace's
 * join, leave, recovery and binding, and its fencing tokens (each
 * resource's DLM lock: hlock_clk.h).
 */
#ifndef _HLOCK_CLUSTER_H
#define _HLOCK_CLUSTER_H

#include <linux/compiler.h>
#include <linux/ktime.h>
#include <linux/types.h>

struct hl_clk;
struct hl_cluster;
struct hl_file;
struct hl_grants;
struct hl_head;
struct hl_res;

int hl_cluster_init(void);
void hl_cluster_exit(void);
struct hl_cluster *hl_cluster_join(const char *name);
void hl_cluster_retire(struct hl_cluster *cl);
void hl_cluster_leave(struct hl_cluster *cl);
int hl_cluster_wait_left(const char *name);
bool hl_cluster_leaving(const char *name);
void hl_cluster_free(struct hl_cluster *cl);
const char *hl_cluster_name(const struct hl_cluster *cl);
long hl_ioctl_cluster(struct hl_file *f, size_t usize, void __user *uarg);
int hl_cluster_token(struct hl_cluster *cl, u64 *token);
bool hl_cluster_lost(const struct hl_cluster *cl);
bool hl_cluster_caching(void);
u64 hl_cluster_probe_ns(void);
ktime_t hl_cluster_try_deadline(void);

extern const struct hl_hooks hl_cluster_hooks;

#endif /* _HLOCK_CLUSTER_H */
