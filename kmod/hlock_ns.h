/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_ns.c: lock spaces, one per IPC namespace, and their binding to a
 * cluster (a DLM lockspace).
 */
#ifndef _HLOCK_NS_H
#define _HLOCK_NS_H

#include <linux/types.h>

#include "../uapi/linux/hlock.h"

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
bool hl_ns_lost(const struct hl_ns *ns);
void hl_ipc_put(struct ipc_namespace *ipc);
struct ipc_namespace *hl_ipc_get_pid(pid_t nr);
int hl_ns_bind(struct ipc_namespace *ipc, const char *name);
void hl_ns_bound(struct ipc_namespace *ipc,
		 char name[HLOCK_CLUSTER_NAME_MAX + 1]);

#endif /* _HLOCK_NS_H */
