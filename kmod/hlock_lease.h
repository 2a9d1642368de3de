/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_lease.c: leases (HLOCK_FEAT_LEASE), their renewal and their
 * takeover, and a locker's leases.
 */
#ifndef _HLOCK_LEASE_H
#define _HLOCK_LEASE_H

#include <linux/hrtimer.h>
#include <linux/list.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include "hlock_core.h"

struct hl_file;
struct hlock_record_ext;
struct mem_cgroup;

/**
 * struct hl_res_leases - The expired leases whose acquisitions hold a mode
 *	on a resource (hl_res's @leases), made the first time one is filed
 *	there: most resources never have one.
 * @list: By that mode (struct hl_lease.exp[] of this level): a request
 *	that starts to wait here on a conflict with one of them has it
 *	taken over.
 * @tail: For each list, NULL or the first of a run of leases of one
 *	locker that ends the list: what a waiter of that locker left there,
 *	all its own.  Its next waiter stops there.
 *
 * Protected by the resource's head lock.
 */
struct hl_res_leases {
	struct hlist_head list[HLOCK_NR_MODES];
	struct hl_lease *tail[HLOCK_NR_MODES];
};

/**
 * struct hl_lease - A lease on a locker's request.
 * @node: Entry in hl_leases.held, then in hl_leases.stale once taken over.
 * @req: The request; NULL once taken over.
 * @len: Its length in ns, as the last lock call with a lease set it.
 * @expires: hl_clock() when it expires, unless renewed.
 * @doomed: Bit 0 set once a conflicting waiter claimed it: it is taken
 *	over as soon as no operation of its locker runs through it.
 * @expired: It is filed in the expired lists of its resources (@exp).
 * @taker: Pid (in the initial namespace) of the locker that claimed it,
 *	0 when not known.
 * @taker_comm: Its command name then.
 * @exp: Entry in hl_res.leases of each level of the path, root first.
 * @path_len: Bytes of @path.
 * @path: The path, NUL-terminated: what HLOCK_IOC_UNLOCK matches once the
 *	lease was taken over.
 *
 * Each @exp[l] is protected by the head lock of level l; @doomed is
 * atomic; @taker and @taker_comm are written by the claimer that set
 * @doomed, for the log only; the rest is protected by the locker lock.
 */
struct hl_lease {
	struct list_head node;
	struct hl_req *req;
	u64 len;
	u64 expires;
	unsigned long doomed;
	bool expired;
	pid_t taker;
	char taker_comm[HLOCK_COMM_LEN];
	struct hlist_node exp[HL_MAX_LEVELS];
	unsigned int path_len;
	char path[];
};

/**
 * struct hl_leases - A locker's leases.
 * @held: Leases on requests it holds.
 * @stale: Leases taken over whose path was not unlocked since.
 * @nr_stale: Entries in @stale; read without the lock by poll (POLLPRI).
 * @want: lease_ns of the lock call in flight (0: none).
 * @spare: A lease allocated for it, with room for its path (its path_len
 *	says how much), used if its grant makes a new one.
 * @taking: A takeover is releasing requests: their leases go stale.
 * @taken: Takeovers of the locker's leases so far: a yield that finds it
 *	moved while it re-acquired lost what it gave back (hl_do_yield()).
 * @deferred: A doomed lease waits for the operation in flight to end.
 * @granted: The lease the grant of the call in flight made or restarted,
 *	until the call is collected: a withdrawal of the call puts it back
 *	as it was (hl_lease_withdrawn()).
 * @old_len: Its length before that grant, 0 if the grant made it.
 * @old_expires: Its expiry before that grant.
 * @timer: Fires at the earliest expiry of @held.
 * @work: Expires and takes over leases in process context.
 * @memcg: The memory cgroup of the first caller that asked the locker
 *	for a lease, or NULL: what filing its leases allocates is charged
 *	there, in its work's kworker as in a caller's context.
 *
 * Under the locker lock, but for @nr_stale's reads.  Every lock call
 * looks at @held, @want and @deferred: they come first.
 */
struct hl_leases {
	struct list_head held;
	s64 want;
	bool deferred;
	bool taking;
	unsigned int nr_stale;
	struct list_head stale;
	struct hl_lease *spare;
	struct hl_lease *granted;
	u64 old_len;
	u64 old_expires;
	unsigned long taken;
	struct hrtimer timer;
	struct work_struct work;
	struct mem_cgroup *memcg;
};

void hl_lease_init(struct hl_file *f);
int hl_lease_prepare(struct hl_file *f, s64 lease_ns);
void hl_lease_grant(struct hl_file *f);
void hl_lease_op_end(struct hl_file *f);
void hl_lease_withdrawn(struct hl_file *f);
void hl_lease_unlocked(struct hl_file *f, struct hl_head *h);
void hl_lease_refile(struct hl_file *f, struct hl_head *h);
bool hl_lease_stale(struct hl_file *f, const char *buf, unsigned int len);
void hl_lease_release(struct hl_req *req);
int hl_do_renew(struct hl_file *f);
void hl_lease_forget(struct hl_file *f);
void hl_lease_close(struct hl_file *f);
void hl_lease_fill(const struct hl_req *req, struct hlock_record_ext *ext);
void hl_lease_claim(struct hl_locker *lk, struct hl_head *h, unsigned int mode);

extern const struct hl_hooks hl_lease_hooks;

#endif /* _HLOCK_LEASE_H */
