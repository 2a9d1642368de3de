/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_clk.c: one resource's DLM lock in a cluster lock space.
 */
#ifndef _HLOCK_CLK_H
#define _HLOCK_CLK_H

#include <linux/compiler.h>
#include <linux/ktime.h>
#include <linux/types.h>

struct hl_cluster;
struct hl_file;
struct hl_grants;
struct hl_head;
struct hl_res;

struct hl_cluster *hl_cluster_of(struct hl_res *r);
int hl_cluster_res_init(struct hl_res *r, struct hl_cluster *cl,
			const char *path, unsigned int len);
bool hl_cluster_may_free(struct hl_res *r);
unsigned int hl_cluster_rec(struct hl_head *h, u32 *node_mode);
void hl_cluster_res_free(struct hl_res *r);
int hl_cluster_try_wait(struct hl_file *f, struct hl_grants *g,
			ktime_t *deadline);
void hl_clk_update(struct hl_head *h);
bool hl_cluster_head_lost(const struct hl_head *h);

extern const struct hl_hooks hl_clk_hooks;

#endif /* _HLOCK_CLK_H */
