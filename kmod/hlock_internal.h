/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock: what the files of the kernel glue share: the structures several
 * of them use (resources, lock spaces, lockers) and the lock order.  Each
 * file declares what it exports in its own header, as below.
 *
 *   hlock_core.c      the grant policy and the protocol (plain C;
 *                     hlock_core.h)
 *   hlock_deadlock.c  the deadlock search (plain C, with hlock_core.c)
 *   hlock_node.c      cluster heads: what this node holds in the DLM, and
 *                     every change of it (plain C, with hlock_core.c)
 *   hlock_host.c      the kernel as the core's host (hlock_host.h): the
 *                     only calls out of the core
 *   hlock_space.c     resources: the table, paths, reclaim of unused
 *                     resources (hlock_space.h)
 *   hlock_ns.c        lock spaces, one per IPC namespace (hlock_ns.h)
 *   hlock_locker.c    lockers: lock, unlock, wait, continuations, close
 *                     (hlock_locker.h)
 *   hlock_stats.c     statistics, the slow-wait log, tracepoints
 *                     (hlock_stats.h, hlock_trace.h)
 *   hlock_table.c     the lock table (HLOCK_IOC_TABLE) and debugfs
 *                     (hlock_table.h)
 *   hlock_why.c       fencing tokens and lockers' descriptions (hlock_why.h)
 *   hlock_uring.c     lock, unlock and downgrade through io_uring
 *                     (hlock_uring.h)
 *   hlock_yield.c     yield: release everything, let waiters in,
 *                     re-acquire (hlock_yield.h)
 *   hlock_ticket.c    read and write ticket pools (hlock_ticket.h)
 *   hlock_lease.c     leases, their renewal and their takeover
 *                     (hlock_lease.h)
 *   hlock_lvb.c       lock value blocks and blocking notifications
 *                     (hlock_lvb.h)
 *   hlock_kapi.c      the in-kernel API (include/hlock_kernel.h)
 *   hlock_cluster.c   cluster lock spaces on the kernel's DLM
 *                     (hlock_cluster.h)
 *   hlock_main.c      the device, its ioctls, module parameters, init
 *                     (hlock_main.h)
 *   hlock_test.c      stall points, in the test build only (hlock_test.h)
 *   hlock_torture_*.c hlock_torture.ko, the torture test and benchmark of
 *                     the in-kernel API, in the test build only
 *                     (hlock_torture.h)
 *
 * Lock order: hl_file.lock (a mutex, one per locker), then a head lock
 * (hl_head.lock, a spinlock, never two at once), then a partition lock
 * (hl_part.lock).  A ticket pool's lock (a spinlock) nests inside
 * hl_file.lock only, never with a head lock.  RCU protects resources
 * between a lookup and the request that keeps them.  Nothing that disables preemption is held for
 * work whose size a user chooses.
 */
#ifndef _HLOCK_INTERNAL_H
#define _HLOCK_INTERNAL_H

#include <linux/atomic.h>
#include <linux/cache.h>
#include <linux/hrtimer.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rhashtable.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "hlock_core.h"
#include "include/hlock_kernel.h"
/* The per-locker state of the features, embedded in struct hl_file. */
#include "hlock_lease.h"
#include "hlock_stats.h"
#include "hlock_ticket.h"
#include "hlock_uring.h"

/**
 * struct hl_res - A resource: its lock head and its name.
 * @head: The lock head (hlock_core), protected by its lock (head.lock);
 *	head.parts are its per-CPU partitions, once it has had a child.
 * @node: Entry in the resource table.
 * @children: Child resources in the table.
 * @rcu: Frees the resource after a grace period.
 * @leases: Expired leases whose acquisition holds a mode here, by that
 *	mode (struct hl_lease.exp[] of this level), under the head lock: a
 *	request that starts to wait here on a conflict with one of them
 *	has it taken over (hlock_lease.c).
 * @lease_tail: For each list of @leases, NULL or the first of a run of
 *	leases of one locker that ends the list: what a waiter of that
 *	locker left there, all its own.  Its next waiter stops there.
 * @lvb: Its lock value block (hlock_lvb.c), NULL until one is set; under
 *	the head lock.
 * @clk: In a cluster lock space, this node's DLM lock on the resource
 *	(hlock_cluster.c); else NULL.  Set before the resource is visible.
 * @len: Length of @name.
 * @name: The last component of the path, not NUL-terminated.
 *
 * A resource stays in the table while it is unused, so that locking the
 * same paths again finds it (and writes nothing shared); hl_reclaim()
 * frees those with nothing on them and no children, after marking them
 * dead under the head lock.
 */
struct hl_res {
	struct hl_head head;
	struct rhash_head node;
	atomic_t children;
	struct rcu_head rcu;
	struct hlist_head leases[HLOCK_NR_MODES];
	struct hl_lease *lease_tail[HLOCK_NR_MODES];
	struct hl_lvb *lvb;
	struct hl_clk *clk;
	unsigned int len;
	char name[];
};

/*
 * The fencing token of a grant in a cluster lock space until its holder
 * asks for it (HLOCK_IOC_TOKEN): drawn then, from the DLM.
 */
#define HL_TOKEN_UNDRAWN	U64_MAX

/**
 * struct hl_ns - A lock space: the resources and statistics of one IPC
 *	namespace (hlock_ns.c).
 * @root: Its root resource.
 * @ipc: The namespace, referenced while the space lives.
 * @user_ns: The user namespace owning it, where lockers need CAP_SYS_NICE
 *	to jump queues.
 * @inum: The namespace's inode number, as /proc/PID/ns/ipc shows it.
 * @ref: References: its lockers.
 * @stats: Its statistics, per CPU.
 * @lockers: Its lockers by id, for its lock table.
 * @graph: Its wait-for graph, as the deadlock search keeps it.
 * @dead_node: Entry in the reclaim worker's list once it ended.
 * @cl: Its binding to a DLM lockspace (hlock_cluster.c), or NULL.
 * @end_work: Ends it, once its last locker is gone, when it has @cl.
 * @token: The last fencing token drawn in it (hl_token_next()), on a
 *	cache line of its own: every new grant writes it.
 */
struct hl_ns {
	struct hl_res *root;
	struct ipc_namespace *ipc;
	struct user_namespace *user_ns;
	unsigned int inum;
	refcount_t ref;
	struct hlock_stats __percpu *stats;
	struct xarray lockers;
	struct hl_graph graph;
	struct list_head dead_node;
	struct hl_cluster *cl;
	struct work_struct end_work;
	atomic64_t token ____cacheline_aligned_in_smp;
};

/**
 * struct hl_path - A parsed path: where the names of its levels are.
 * @nr: Levels, the root included.
 * @len: Bytes of the whole path.
 * @off: Offset of each level's name in the path (the root's is empty).
 * @nlen: Length of each level's name.
 *
 * Offsets rather than pointers: the path is parsed on the caller's stack
 * and kept in its locker (hl_file.pathbuf) as it is.
 */
struct hl_path {
	unsigned int nr;
	unsigned int len;
	u16 off[HL_MAX_LEVELS];
	u16 nlen[HL_MAX_LEVELS];
};

/**
 * struct hl_file - A locker: one open file description of /dev/hlock.
 * @lk: The locker (hlock_core).
 * @ns: Its lock space, that of the IPC namespace it was opened in.
 * @root: The root of @ns.
 * @may_jump: The opener had CAP_SYS_NICE in the user namespace owning @ns:
 *	the locker may ask to jump queues, and its root S, SIX and X do.
 * @lock: The locker lock: protects @lk and the fields below but for
 *	@ref, @wq and @granted; @gen is written under it and read without.
 * @ref: References: the file, and continuations due (hl_grant_notify()).
 * @id: Its index in ns->lockers, for the lock table.
 * @wq: Where the locker's waiters and pollers sleep.
 * @granted: Set when the operation in flight is done (granted or failed)
 *	while waiting; read without the lock by poll.
 * @gen: Generation of the operation slot: bumped, with a wake-up of @wq,
 *	on every transition a sleeper may wait for (granted, collected or
 *	withdrawn).  Sleepers wait for it to move, then look again under
 *	the lock: a flag could be set and cleared again while they sleep.
 * @wake: @gen moved: wake @wq once the lock is dropped.
 * @async: The operation in flight was queued with HLOCK_F_ASYNC; only
 *	such an operation can be collected by HLOCK_IOC_WAIT or cancelled by
 *	HLOCK_IOC_UNLOCK.
 * @yielding: A yield (hlock_yield.c) is between its release and the end
 *	of its re-acquisition: lock calls of tasks other than @yielder
 *	(io_uring's included), unlock, downgrade and yield fail with EBUSY
 *	meanwhile.  Next to the fields every lock call reads, in what was
 *	padding; @yielder is read only while it is set.
 * @owner: The process of the last lock call (thread group leader's pid);
 *	RCU-protected, for the lock tables of other lockers.
 * @proc_owner: With HLOCK_OWNER_PROCESS, the process the locks belong to
 *	(a reference to its thread group's pid), NULL when they belong to
 *	the file; under @lock.
 * @comm: Its command name then.
 * @stats: The locker's statistics.
 * @wait_start: hl_clock() when the waiting level began to wait.
 * @waited: Time the operation in flight has waited so far.
 * @wait_level: Level of its first wait, HL_NO_WAIT before one.
 * @nr_slow: Entries in @slow_pids.
 * @slow_pids: Holders that blocked its first wait, for the slow-wait log.
 * @last_path: @path is that of the last lock collected, whose target is
 *	lk.last while the locker holds it.
 * @heads_nr: Levels of @path whose resources are in lk.op.heads.  They
 *	stay allocated, without references, as long as no resource died
 *	since @heads_gen (hl_space_gen()): a lock call finds them there
 *	instead of looking them up again.
 * @heads_gen: The generation before they were looked up.
 * @path: The path of the operation in flight or of the last one, parsed.
 * @pathbuf: That path, NUL-terminated.
 * @why: The locker's description (HLOCK_IOC_DESCRIBE), NUL-terminated
 *	and zero-padded; empty when it has none.
 * @ring: Its lock in flight through io_uring, if any; under @lock.  Last:
 *	only ring locks use it, and the fields every lock call uses keep
 *	their places.
 * @yielder: Under @lock, while @yielding, the task that yields.
 * @tk: Its ticket; only limited pools use it.
 * @leases: Its leases (HLOCK_FEAT_LEASE), under @lock.
 * @kdone: A kernel locker's asynchronous call in flight: what to call
 *	when it ends (hlock_kapi.c); under @lock.
 * @kdata: The pointer to call it with.
 * @kcalls: Completions taken out of the slot and not yet called: a kernel
 *	locker is destroyed only once none is left.
 * @events: HL_EVENT_*_BIT, atomic: BLOCKING set under a head lock by
 *	hl_note_blocking() while WANT is, cleared by HLOCK_IOC_EVENTS; read
 *	by poll.
 */
struct hl_file {
	struct hl_locker lk;
	struct hl_ns *ns;
	struct hl_head *root;
	bool may_jump;
	struct mutex lock;
	refcount_t ref;
	u32 id;
	wait_queue_head_t wq;
	bool granted;
	unsigned int gen;
	bool wake;
	bool async;
	bool yielding;
	struct pid __rcu *owner;
	struct pid *proc_owner;
	char comm[HLOCK_COMM_LEN];
	struct hlock_stats stats;
	u64 wait_start;
	u64 waited;
	unsigned int wait_level;
	unsigned int nr_slow;
	pid_t slow_pids[HL_SLOW_PIDS];
	bool last_path;
	unsigned int heads_nr;
	unsigned long heads_gen;
	struct hl_path path;
	char pathbuf[HLOCK_PATH_MAX + 1];
	char why[HLOCK_WHY_LEN];
	struct hl_ring ring;
	struct task_struct *yielder;
	struct hl_ticket tk;
	struct hl_leases leases;
	hlock_done_fn kdone;
	void *kdata;
	atomic_t kcalls;
	unsigned long events;
};

/*
 * A kernel locker (hlock_kernel.h) is a locker without a file: the type
 * other modules see, of the same allocation.
 */
struct hlock_locker {
	struct hl_file f;
};

static inline struct hl_file *hl_file_of(struct hl_locker *lk)
{
	return container_of(lk, struct hl_file, lk);
}

static inline struct hl_res *hl_res_of(const struct hl_head *h)
{
	return container_of(h, struct hl_res, head);
}

/* A mode a lock call may ask for. */
static inline bool hl_mode_valid(unsigned int mode)
{
	return mode >= HLOCK_IS && mode <= HLOCK_X;
}

#endif /* _HLOCK_INTERNAL_H */
