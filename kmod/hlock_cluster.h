/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_cluster.c: cluster lock spaces on the kernel's DLM.  A lockspace's
 * join, leave, recovery and binding; each resource's DLM lock.
 */
#ifndef _HLOCK_CLUSTER_H
#define _HLOCK_CLUSTER_H

#include <linux/compiler.h>
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
struct hl_cluster *hl_cluster_of(struct hl_res *r);
int hl_cluster_res_init(struct hl_res *r, struct hl_cluster *cl,
			const char *path, unsigned int len);
bool hl_cluster_may_free(struct hl_res *r);
unsigned int hl_cluster_rec(struct hl_head *h, u32 *node_mode);
void hl_cluster_res_free(struct hl_res *r);
int hl_cluster_try_wait(struct hl_file *f, struct hl_grants *g);
long hl_ioctl_cluster(struct hl_file *f, size_t usize, void __user *uarg);
int hl_cluster_token(struct hl_cluster *cl, u64 *token);
bool hl_cluster_lost(const struct hl_cluster *cl);
void hl_clk_update(struct hl_head *h);
bool hl_cluster_head_lost(const struct hl_head *h);
bool hl_cluster_caching(void);

#endif /* _HLOCK_CLUSTER_H */
