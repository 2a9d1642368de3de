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
 *                     only calls out of the core; a locker's references
 *                     and the continuation of its grants, which it hands
 *                     to the locker's own stage (hl_file.resume); the
 *                     features' answers, by static calls (hlock_hooks.h);
 *                     the grant policy parameter
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
 *                     (hlock_uring.h); a call it arms ends through its
 *                     struct hl_end_ops, as a kernel locker's does
 *   hlock_yield.c     yield: release everything, let waiters in,
 *                     re-acquire (hlock_yield.h)
 *   hlock_ticket.c    read and write ticket pools (hlock_ticket.h)
 *   hlock_lease.c     leases, their renewal and their takeover
 *                     (hlock_lease.h)
 *   hlock_lvb.c       lock value blocks and blocking notifications
 *                     (hlock_lvb.h)
 *   hlock_lvb_ioctl.c their ioctls, HLOCK_IOC_LVB and HLOCK_IOC_EVENTS
 *                     (hlock_lvb_ioctl.h)
 *   hlock_kapi.c      the in-kernel API (include/hlock_kernel.h; a kernel
 *                     locker's state follows its struct hl_file:
 *                     hlock_kapi.h)
 *   hlock_cluster.c   cluster lock spaces on the kernel's DLM: binding,
 *                     recovery, fencing tokens (hlock_cluster.h)
 *   hlock_clk.c       a cluster resource's DLM lock (hlock_clk.h; what
 *                     the two share: hlock_dlm.h)
 *   hlock_main.c      the device, its ioctls, init: it hands the
 *                     features' answers to the host (hlock_hooks.h)
 *   hlock_test.c      stall points, in the test build only (hlock_test.h)
 *   hlock_torture_*.c hlock_torture.ko, the torture test and benchmark of
 *                     the in-kernel API, in the test build only
 *                     (hlock_torture.h)
 *
 * Lock order: hl_file.lock (a mutex, one per locker), then a head lock
 * (hl_head.lock, a spinlock, never two at once), then a partition lock
 * (hl_part.lock).  A ticket pool's lock (a spinlock) nests inside
 * hl_file.lock only, never with a head lock.  RCU protects resources
 * between a lookup and the request that keeps them.  Nothing that
 * disables preemption is held for work whose size a user chooses.
 */
#ifndef _HLOCK_INTERNAL_H
#define _HLOCK_INTERNAL_H

#include <linux/atomic.h>
#include <linux/cache.h>
#include <linux/hrtimer.h>
#include <linux/lockdep.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/rhashtable.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "hlock_core.h"
/* The per-locker state of the features, embedded in struct hl_file. */
#include "hlock_lease.h"
#include "hlock_lvb.h"
#include "hlock_stats.h"
#include "hlock_ticket.h"

/**
 * struct hl_res - A resource: its lock head and its name.
 * @head: The lock head (hlock_core), protected by its lock (head.lock);
 *	head.parts are its per-CPU partitions, once it has had a child.
 * @node: Entry in the resource table.
 * @rcu: Frees the resource after a grace period.
 * @leases: The expired leases whose acquisition holds a mode here
 *	(hlock_lease.c), NULL until one is filed here; set under the head
 *	lock.
 * @lvb: Its lock value block (hlock_lvb.c), NULL until one is set; under
 *	the head lock.
 * @clk: In a cluster lock space, this node's DLM lock on the resource
 *	(hlock_clk.c); else NULL.  Set before the resource is visible.
 * @children: Child resources in the table.
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
	struct rcu_head rcu;
	struct hl_res_leases *leases;
	struct hl_lvb *lvb;
	struct hl_clk *clk;
	atomic_t children;
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

struct hl_file;
struct hl_ring;
struct io_uring_cmd;

/**
 * struct hl_ended - A call no thread waited for, taken out of its locker
 *	(hl_end_take()) for hl_end_post().
 * @ops: Whoever armed it; NULL when nobody did.
 * @cmd: Its io_uring command, if io_uring armed it (a kernel locker's
 *	completion stays in the locker until called).
 */
struct hl_ended {
	const struct hl_end_ops *ops;
	struct io_uring_cmd *cmd;
};

/**
 * struct hl_end_ops - How the submitter of a call that no thread waits
 *	for learns of its end: set in the locker (hl_file.end) by whoever
 *	armed the call.
 * @take: The call ended (granted, failed or withdrawn): take it out of
 *	the locker, into @e.  Context: f->lock held.
 * @post: Tell its submitter @res.  Context: no hlock lock held.
 */
struct hl_end_ops {
	void (*take)(struct hl_file *f, struct hl_ended *e);
	void (*post)(struct hl_file *f, const struct hl_ended *e, int res);
};

/**
 * hl_end_post() - Tell the submitter of a call hl_end_take() took out its
 *	result, if anybody armed it.
 * @f: The locker.
 * @e: What hl_end_take() set.
 * @res: The call's result.
 *
 * Context: no hlock lock held.
 */
static inline void hl_end_post(struct hl_file *f, const struct hl_ended *e,
			       int res)
{
	if (e->ops)
		e->ops->post(f, e, res);
}

/**
 * struct hl_file - A locker: one open file description of /dev/hlock.
 * @lk: The locker (hlock_core).
 * @ns: Its lock space, that of the IPC namespace it was opened in.
 * @root: The root of @ns.
 * @lock: The locker lock: protects @lk and the fields below but for
 *	@ref, @wq and @granted; @gen is written under it and read without.
 * @wq: Where the locker's waiters and pollers sleep.
 * @gen: Generation of the operation slot: bumped, with a wake-up of @wq,
 *	on every transition a sleeper may wait for (granted, collected or
 *	withdrawn).  Sleepers wait for it to move, then look again under
 *	the lock: a flag could be set and cleared again while they sleep.
 * @granted: Set when the operation in flight is done (granted or failed)
 *	while waiting; read without the lock by poll.
 * @wake: @gen moved: wake @wq once the lock is dropped.
 * @async: The operation in flight was queued with HLOCK_F_ASYNC; only
 *	such an operation can be collected by HLOCK_IOC_WAIT or cancelled by
 *	HLOCK_IOC_UNLOCK.
 * @may_jump: The opener had CAP_SYS_NICE in the user namespace owning @ns:
 *	the locker may ask to jump queues, and its root S, SIX and X do.
 * @last_path: @path is that of the last lock collected, whose target is
 *	lk.last while the locker holds it.
 * @heads_nr: Levels of @path whose resources are in lk.op.heads.  They
 *	stay allocated, without references, as long as no resource died
 *	since @heads_gen (hl_space_gen()): a lock call finds them there
 *	instead of looking them up again.
 * @heads_gen: The generation before they were looked up.
 * @owner: The process of the last lock call (thread group leader's pid);
 *	RCU-protected, for the lock tables of other lockers.
 * @comm: Its command name then.
 * @yielder: The task whose yield (hlock_yield.c) is between its release
 *	and the end of its re-acquisition, else NULL: lock calls of other
 *	tasks (io_uring's included), unlock, downgrade and yield fail with
 *	EBUSY meanwhile.  Every lock call reads it.
 * @exiting: The task whose exit releases the locks of the process-owned
 *	locker (hl_file_owner_exit()), while it does: other tasks' lock calls
 *	and yields wait until it is done (hl_file_wait_exit()), as the
 *	release drops the lock between its batches.  Every lock call reads
 *	it.
 * @tk: Its ticket (hlock_ticket.c); only limited pools use it, but every
 *	lock call looks at its state.
 * @slow: The waits of the operation in flight (hlock_stats.c).
 * @path: The path of the operation in flight or of the last one, parsed.
 * @pathbuf: That path, NUL-terminated.
 * @stats: The locker's statistics (hlock_stats.c).
 * @leases: Its leases (HLOCK_FEAT_LEASE, hlock_lease.c).
 * @ref: References: the file, and continuations due (hl_grant_notify()).
 * @id: Its index in ns->lockers, for the lock table.
 * @serial: Its number among the lockers made since the module loaded,
 *	never reused: with @id, it names it to HLOCK_IOC_REFUSE.
 * @proc_owner: With HLOCK_OWNER_PROCESS, the process the locks belong to
 *	(a reference to its thread group's pid), NULL when they belong to
 *	the file.
 * @why: The locker's description (HLOCK_IOC_DESCRIBE), NUL-terminated
 *	and zero-padded; empty when it has none.
 * @ring: Its io_uring state (hlock_uring.c), from its first lock through
 *	io_uring that may wait; else NULL.
 * @end: Whoever armed the operation in flight, which no thread waits for
 *	(io_uring, a kernel locker's asynchronous call), learns of its end
 *	so; else NULL.
 * @events: The events it polls for (hlock_lvb.c).
 * @resume: Its lock call's stage that goes on with an operation a grant
 *	pass granted (hl_grants_continue()), set when the locker is made:
 *	a feature hands the grants it made back to the call this way.
 *
 * The fields every lock call reads or writes come first, from @lk to
 * @pathbuf, whose first bytes share @path's last cache line: from @ns to
 * there about 260 bytes, the rest of @lk's last cache line and four more.
 * Then the statistics each level of a lock call counts (@stats), and
 * @leases, whose first fields every lock call looks at (one cache line).
 * Last what a lock call does not touch: a feature a locker does not use
 * costs the lock path no cache line but these.  A feature's fields are in
 * its own structure, declared in its header, under @lock unless it says
 * otherwise.
 */
struct hl_file {
	struct hl_locker lk;
	struct hl_ns *ns;
	struct hl_head *root;
	struct mutex lock;
	wait_queue_head_t wq;
	unsigned int gen;
	bool granted;
	bool wake;
	bool async;
	bool may_jump;
	bool last_path;
	unsigned int heads_nr;
	unsigned long heads_gen;
	struct pid __rcu *owner;
	char comm[HLOCK_COMM_LEN];
	struct task_struct *yielder;
	struct task_struct *exiting;
	struct hl_ticket tk;
	struct hl_slow slow;
	struct hl_path path;
	char pathbuf[HLOCK_PATH_MAX + 1];
	struct hlock_stats stats;
	struct hl_leases leases;
	refcount_t ref;
	u32 id;
	u64 serial;
	struct pid *proc_owner;
	char why[HLOCK_WHY_LEN];
	struct hl_ring *ring;
	const struct hl_end_ops *end;
	struct hl_events events;
	void (*resume)(struct hl_file *f, struct hl_grants *g);
};

/* Defined by the host (hlock_host.c); moved by reclaim (hlock_space.c). */
extern unsigned long hl_space_generation;
/*
 * Fast holders the host saw put on their heads (hl_note_fast_shut()): the
 * switches from the fast path to the slow one, which debugfs shows.
 */
extern atomic_long_t hl_fast_shuts;
/* The hlock_release tracepoint's registration (hl_release_traced). */
int hl_release_trace_reg(void);
void hl_release_trace_unreg(void);

/**
 * hl_space_gen() - The reclaim generation.
 *
 * It moves whenever a resource dies, before it is unlinked and handed to
 * call_rcu().  A resource a locker found while the generation was g is
 * therefore still allocated in any RCU read section that reads g: had it
 * been freed, the grace period before the free would have begun after
 * the move, and a section that reads g began before that.  It may be dead
 * (marked, not yet moved on): look at hl_head.dead before using it.
 *
 * Return: the generation.
 */
static inline unsigned long hl_space_gen(void)
{
	return READ_ONCE(hl_space_generation);
}

static inline struct hl_file *hl_file_of(struct hl_locker *lk)
{
	return container_of(lk, struct hl_file, lk);
}

static inline struct hl_res *hl_res_of(const struct hl_head *h)
{
	return container_of(h, struct hl_res, head);
}

/* @n bytes at @a and @b, n a word size or less: one load each. */
#define HL_SAME(a, b, n) ({					\
	u64 __x = 0, __y = 0;					\
	memcpy(&__x, (a), (n));					\
	memcpy(&__y, (b), (n));					\
	__x == __y; })

/*
 * Whether @len bytes at @a and @b are equal: the paths and names a lock
 * call compares are short, so a few word loads, the last ending at @len
 * and overlapping the one before, not memcmp()'s byte loop.
 */
static __always_inline bool hl_mem_eq(const void *a, const void *b, size_t len)
{
	const char *x = a, *y = b;
	size_t i;

	if (len >= sizeof(u64)) {
		for (i = 0; i + sizeof(u64) < len; i += sizeof(u64))
			if (!HL_SAME(x + i, y + i, sizeof(u64)))
				return false;
		i = len - sizeof(u64);
		return HL_SAME(x + i, y + i, sizeof(u64));
	}
	if (len >= sizeof(u32))
		return HL_SAME(x, y, sizeof(u32)) &&
		       HL_SAME(x + len - sizeof(u32), y + len - sizeof(u32),
			       sizeof(u32));
	if (len >= sizeof(u16))
		return HL_SAME(x, y, sizeof(u16)) &&
		       HL_SAME(x + len - sizeof(u16), y + len - sizeof(u16),
			       sizeof(u16));
	return !len || *x == *y;
}

/**
 * hl_file_pid_ns() - The pid of a locker's owner in a pid namespace.
 * @f: The locker.
 * @ns: The namespace.
 *
 * Context: any; takes the RCU read lock.
 * Return: the pid, or 0 when it is not visible in @ns.
 */
static inline int hl_file_pid_ns(struct hl_file *f, struct pid_namespace *ns)
{
	int nr;

	rcu_read_lock();
	nr = pid_nr_ns(rcu_dereference(f->owner), ns);
	rcu_read_unlock();
	return nr;
}

/*
 * The slot of @f moved on: its sleepers are woken when the lock is
 * dropped (hl_file_unlock()), so that they do not wake only to wait for
 * it.  Context: f->lock held.
 */
static inline void hl_slot_changed(struct hl_file *f)
{
	lockdep_assert_held(&f->lock);
	WRITE_ONCE(f->gen, f->gen + 1);
	f->wake = true;
}

/**
 * hl_file_unlock() - Drop a locker's lock, and wake the sleepers of its
 *	slot if it moved on.
 * @f: The locker, its lock held.
 *
 * A lock granted at once moved nothing, and need not take the wait
 * queue's lock.  The barrier in wq_has_sleeper() pairs with the one a
 * sleeper sets its state with before it looks at f->gen.
 */
static __always_inline void hl_file_unlock(struct hl_file *f)
{
	bool wake = f->wake;

	f->wake = false;
	mutex_unlock(&f->lock);
	/* Every sleeper: a kernel locker's may sleep killable. */
	if (wake && wq_has_sleeper(&f->wq))
		wake_up_poll(&f->wq, EPOLLIN | EPOLLRDNORM);
}

/* Defined in hlock_host.c, beside hl_grant_notify(). */
void hl_grants_continue(struct hl_grants *g);
void hl_file_put(struct hl_file *f);

/* A mode a lock call may ask for. */
static inline bool hl_mode_valid(unsigned int mode)
{
	return mode >= HLOCK_IS && mode <= HLOCK_X;
}

#endif /* _HLOCK_INTERNAL_H */
