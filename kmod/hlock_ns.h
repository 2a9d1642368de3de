/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_ns.c: lock spaces, one per IPC namespace, and their binding to a
 * cluster (a DLM lockspace).
 */
#ifndef _HLOCK_NS_H
#define _HLOCK_NS_H

#include <linux/types.h>

#include "../uapi/linux/hlock.h"
#include "hlock_cluster.h"
#include "hlock_internal.h"

struct hl_ns;
struct ipc_namespace;

int hl_ns_init(void);
void hl_ns_exit(void);
struct hl_ns *hl_ns_get(void);
struct hl_ns *hl_ns_get_ipc(struct ipc_namespace *ipc);
void hl_ns_put(struct hl_ns *ns);
struct hl_ns *hl_ns_next(unsigned long *index);
unsigned long hl_ns_count(void);
int hl_ns_rebind(const char *name);
bool hl_ns_is_init(const struct ipc_namespace *ipc);
void hl_ipc_put(struct ipc_namespace *ipc);
struct ipc_namespace *hl_ipc_get_pid(pid_t nr);
int hl_ns_bind(struct ipc_namespace *ipc, const char *name);
void hl_ns_bound(struct ipc_namespace *ipc,
		 char name[HLOCK_CLUSTER_NAME_MAX + 1]);

/**
 * hl_ns_lost() - Whether this node lost the cluster of a lock space.
 * @ns: The lock space.
 *
 * Inline: every lock call asks.
 *
 * Return: false for a space bound to no DLM lockspace; else true once the
 * node lost its cluster, and for good.
 */
static inline bool hl_ns_lost(const struct hl_ns *ns)
{
	return unlikely(ns->cl) && hl_cluster_lost(ns->cl);
}

extern const struct hl_hooks hl_ns_hooks;

#endif /* _HLOCK_NS_H */
