/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock: the features' answers to the core's calls.
 *
 * hlock_host.c answers every call the core makes outside itself
 * (hlock_host.h).  Where the answer is a feature's, the host makes a static
 * call whose target the feature gives when the module loads: each feature
 * that answers something fills a struct hl_hooks with its part, and
 * hl_init() hands them to hl_hooks_set() before anything can lock.  So the
 * host names no feature, and a feature's calls into the core (a lease's
 * takeover, a DLM answer) close no loop through the host.  A static call is
 * a direct call patched in place: a hook costs what the call it replaces
 * cost.
 */
#ifndef _HLOCK_HOOKS_H
#define _HLOCK_HOOKS_H

#include <linux/types.h>

struct hl_file;
struct hl_head;
struct hl_locker;
struct hl_ns;
struct hl_req;
struct hl_waitq;

/**
 * struct hl_hooks - What the features do for the core's host.
 *
 * Each member answers the hlock_host.h call of the like name; see there.
 * A feature sets its members only, the others stay NULL.
 *
 * @head_lookup: A level of a lock call's path, if it exists (hlock_space.c).
 * @head_create: Create that level's resource.
 * @req_free: Free a request.
 * @waitq_alloc: Queues for a head that has none.
 * @waitq_free: Free them.
 * @ns_put: A locker's last reference drops its lock space's (hlock_ns.c).
 * @note_acquired: Count a run of levels granted (hlock_stats.c).
 * @note_wait: A level starts to wait.
 * @note_granted: A level that waited is granted.
 * @note_withdrawn: A level that waited is withdrawn.
 * @note_convert: A request converts.
 * @note_deadlock: A wait was refused as a deadlock.
 * @note_release: Trace a request's release (only while traced).
 * @slow_log: A call that waited is granted: the slow-wait log.
 * @lease_grant: A call that waited is granted: its lease (hlock_lease.c).
 * @lease_release: A request with a lease is released.
 * @lease_claim: A wait claims the expired leases in its way.
 * @lvb_flush: A writer of a value block goes down (hlock_lvb.c).
 * @event_blocking: A holder blocks a waiter: its event.
 * @event_lost: A holder lost its cluster: its event.
 * @node_update: A cluster head changed (hlock_clk.c).
 * @node_lost: Whether this node lost a cluster head's cluster.
 * @node_caching: Whether cluster heads keep their DLM lock when idle
 *	(hlock_cluster.c).
 * @node_probe_ns: How long a cluster try waits for other nodes.
 */
struct hl_hooks {
	struct hl_head *(*head_lookup)(struct hl_locker *lk, unsigned int level);
	int (*head_create)(struct hl_locker *lk, unsigned int level);
	void (*req_free)(struct hl_req *req);
	struct hl_waitq *(*waitq_alloc)(void);
	void (*waitq_free)(struct hl_waitq *wq);
	void (*ns_put)(struct hl_ns *ns);
	void (*note_acquired)(struct hl_locker *lk, unsigned int from,
			      unsigned int to, bool waits);
	void (*note_wait)(struct hl_locker *lk, unsigned int level,
			  unsigned int mode, const struct hl_req *req);
	void (*note_granted)(struct hl_locker *lk, unsigned int level,
			     unsigned int mode);
	void (*note_withdrawn)(struct hl_locker *lk, unsigned int level,
			       unsigned int mode);
	void (*note_convert)(struct hl_req *req, unsigned int target);
	void (*note_deadlock)(struct hl_locker *lk, unsigned int level,
			      unsigned int mode);
	void (*note_release)(struct hl_req *req);
	void (*slow_log)(struct hl_file *f);
	void (*lease_grant)(struct hl_file *f);
	void (*lease_release)(struct hl_req *req);
	void (*lease_claim)(struct hl_locker *lk, struct hl_head *h,
			    unsigned int mode);
	void (*lvb_flush)(struct hl_req *req);
	void (*event_blocking)(struct hl_req *holder);
	void (*event_lost)(struct hl_req *holder);
	void (*node_update)(struct hl_head *h);
	bool (*node_lost)(const struct hl_head *h);
	bool (*node_caching)(void);
	u64 (*node_probe_ns)(void);
};

void hl_hooks_set(const struct hl_hooks *hooks);
int hl_hooks_check(void);

#endif /* _HLOCK_HOOKS_H */
