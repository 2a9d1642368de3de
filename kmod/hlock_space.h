/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_space.c: resources.  Their table, the paths that name them, their
 * allocation (requests too) and the reclaim of unused ones.
 */
#ifndef _HLOCK_SPACE_H
#define _HLOCK_SPACE_H

#include <linux/types.h>

struct hl_head;
struct hl_locker;
struct hl_ns;
struct hl_path;
struct hl_req;
struct hl_res;
struct hl_waitq;
struct seq_file;

int hl_space_init(void);
void hl_space_exit(void);
int hl_path_parse(struct hl_path *p, const char *buf, unsigned int len);
struct hl_head *hl_path_find(struct hl_head *root, const struct hl_path *p,
			     const char *buf);
struct hl_res *hl_root_alloc(void);
void hl_root_free(struct hl_res *root);
void hl_ns_retire(struct hl_ns *ns);
unsigned int hl_path_len(const struct hl_head *h);
void hl_path_fill(const struct hl_head *h, char *dst, unsigned int len);
struct hl_req *hl_req_alloc(void);
struct hl_waitq *hl_waitq_alloc(void);
void hl_space_waitq_free(struct hl_waitq *wq);
void hl_space_show(struct seq_file *m);
void hl_space_reclaim(void);
struct hl_head *hl_space_lookup(struct hl_locker *lk, unsigned int level);
int hl_space_create(struct hl_locker *lk, unsigned int level);
void hl_space_req_free(struct hl_req *req);
void hl_space_for_each(void (*fn)(struct hl_res *r, void *arg), void *arg);

extern const struct hl_hooks hl_space_hooks;

#endif /* _HLOCK_SPACE_H */
