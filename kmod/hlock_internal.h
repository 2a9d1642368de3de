/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock: what the files of the kernel glue share.
 *
 *   hlock_core.c    the grant policy and the protocol (plain C)
 *   hlock_space.c   resources: the table, head and partition locks,
 *                   reclaim of unused resources
 *   hlock_ns.c      lock spaces, one per IPC namespace
 *   hlock_locker.c  lockers: lock, unlock, wait, continuations, close
 *   hlock_stats.c   statistics, the slow-wait log, tracepoints
 *   hlock_table.c   the lock table (HLOCK_IOC_TABLE) and debugfs
 *   hlock_why.c     fencing tokens and lockers' descriptions
 *   hlock_uring.c   lock, unlock and downgrade through io_uring
 *   hlock_yield.c   yield: release everything, let waiters in, re-acquire
 *   hlock_ticket.c  read and write ticket pools
 *   hlock_lease.c   leases, their renewal and their takeover
 *   hlock_lvb.c     lock value blocks and blocking notifications
 *   hlock_kapi.c    the in-kernel API (include/hlock_kernel.h)
 *   hlock_deadlock.c  the deadlock search (plain C, with hlock_core.c)
 *   hlock_node.c    cluster heads: what this node holds in the DLM, and
 *                   every change of it (plain C, with hlock_core.c)
 *   hlock_cluster.c cluster lock spaces on the kernel's DLM
 *   hlock_host.c    the kernel as the core's host (hlock_host.h)
 *   hlock_main.c    the device, its ioctls, module parameters, init
 *   hlock_test.c    stall points, in the test build only (hlock_test.h)
 *
 * Lock order: hl_file.lock (a mutex, one per locker), then a head lock
 * (hl_head.lock, a spinlock, never two at once), then a partition lock
 * (hl_part.lock).  A ticket pool's lock (a spinlock) nests inside
 * hl_file.lock only, never with a head lock.  RCU protects resources between a lookup and the
 * request that keeps them.  Nothing that disables preemption is held for
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

/* Bits of hl_file.events: HLOCK_EVENT_BLOCKING pending, and asked for. */
#define HL_EVENT_BLOCKING_BIT	0
#define HL_EVENT_WANT_BIT	1

/* Blockers the slow-wait log names. */
#define HL_SLOW_PIDS	4
/* hl_file.wait_level before the operation waited. */
#define HL_NO_WAIT	UINT_MAX

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

/* States of hl_ticket.state. */
enum hl_ticket_state {
	HL_TICKET_NONE,		/* no ticket, none waited for */
	HL_TICKET_WAITING,	/* on its pool's list */
	HL_TICKET_HELD,		/* holds one (handed or taken) */
};

/**
 * struct hl_ticket - A locker's ticket (hlock_ticket.c).
 * @node: Entry in its pool's list of waiters while it waits.
 * @since: hl_clock() when it began to wait.
 * @pool: HLOCK_TICKET_* of the ticket it holds or waits for.
 * @state: enum hl_ticket_state.
 * @pending: The operation in the slot is pending its ticket: claimed, not
 *	started; it starts once the ticket is handed over (or failed to,
 *	see @error).
 * @error: Why the operation failed to start once its ticket came; the
 *	slot keeps it, not started, until it is collected.
 *
 * @node and @state are protected by the pool's lock; the locker reads
 * @state under its own lock alone when it is not HL_TICKET_WAITING (only
 * the locker moves it then).  @since and @pool are written under both
 * locks while @state is HL_TICKET_NONE.  @pending and @error are protected
 * by the locker lock.
 */
struct hl_ticket {
	struct list_head node;
	u64 since;
	unsigned int pool;
	unsigned int state;
	bool pending;
	int error;
};

struct io_uring_cmd;

/**
 * struct hl_ring - A locker's lock in flight through io_uring
 *	(hlock_uring.c).
 * @cmd: Its command, from its submission until whoever ends it (the
 *	continuation of its grant, its timer, an unlock of its path,
 *	io_uring's cancel or the watchdog) takes it out, under the locker
 *	lock: exactly one of them completes it.  Set by hl_ring_arm() and
 *	cleared by hl_ring_disarm() only, which watch and unwatch it.
 * @deadline: When it times out; KTIME_MAX for never.
 * @timer: Fires at @deadline.
 * @expire: Ends it in process context once @timer fired.
 * @watch: Entry in the watchdog's list while @cmd is set, on kernels
 *	whose io_uring cannot cancel a driver's command (before 6.7).
 * @doomed_since: There, under its mutex: jiffies when the watchdog first
 *	saw @cmd's submitter or ring going away, 0 if it did not.
 */
struct hl_ring {
	struct io_uring_cmd *cmd;
	ktime_t deadline;
	struct hrtimer timer;
	struct work_struct expire;
	struct list_head watch;
	unsigned long doomed_since;
};

/**
 * struct hl_lease - A lease on a locker's request (hlock_lease.c).
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
 * struct hl_leases - A locker's leases (hlock_lease.c).
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
 * @timer: Fires at the earliest expiry of @held.
 * @work: Expires and takes over leases in process context.
 *
 * Under the locker lock, but for @nr_stale's reads.
 */
struct hl_leases {
	struct list_head held;
	struct list_head stale;
	unsigned int nr_stale;
	s64 want;
	struct hl_lease *spare;
	bool taking;
	bool deferred;
	unsigned long taken;
	struct hrtimer timer;
	struct work_struct work;
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

/* hlock_space.c */
int hl_space_init(void);
void hl_space_exit(void);
int hl_path_parse(struct hl_path *p, const char *buf, unsigned int len);
struct hl_head *hl_path_find(struct hl_head *root, const struct hl_path *p,
			     const char *buf);
struct hl_res *hl_root_alloc(void);
void hl_root_free(struct hl_res *root);
void hl_ns_retire(struct hl_ns *ns);
unsigned long hl_space_gen(void);
unsigned int hl_path_len(const struct hl_head *h);
void hl_path_fill(const struct hl_head *h, char *dst, unsigned int len);
struct hl_req *hl_req_alloc(void);
struct seq_file;
void hl_space_show(struct seq_file *m);
void hl_space_reclaim(void);
struct hl_head *hl_space_lookup(struct hl_locker *lk, unsigned int level);
int hl_space_create(struct hl_locker *lk, unsigned int level);
void hl_space_req_free(struct hl_req *req);

/* hlock_ns.c */
int hl_ns_init(void);
void hl_ns_exit(void);
struct hl_ns *hl_ns_get(void);
struct ipc_namespace;
struct hl_ns *hl_ns_get_ipc(struct ipc_namespace *ipc);
void hl_ns_put(struct hl_ns *ns);
struct hl_ns *hl_ns_next(unsigned long *index);
unsigned long hl_ns_count(void);

/* hlock_main.c */
extern unsigned int hl_policy;

/* hlock_locker.c */
struct hl_file *hl_file_new(struct hl_ns *ns);
int hl_file_open(struct file *file);
void hl_file_release(struct hl_file *f);
void hl_file_put(struct hl_file *f);
int hl_file_pid_ns(struct hl_file *f, struct pid_namespace *ns);
int hl_do_lock(struct hl_file *f, const char *buf, unsigned int len,
	       unsigned int mode, unsigned int flags, s64 timeout_ns,
	       s64 lease_ns);
int hl_do_path(struct hl_file *f, unsigned int op, const char *buf,
	       unsigned int len, unsigned int mode);
int hl_do_ring_lock(struct hl_file *f, struct io_uring_cmd *cmd,
		    unsigned int issue_flags, const char *buf, unsigned int len,
		    unsigned int mode, unsigned int flags, s64 timeout_ns);
struct io_uring_cmd *hl_do_ring_expire(struct hl_file *f, int *res);
struct io_uring_cmd *hl_do_ring_cancel(struct hl_file *f,
				       struct io_uring_cmd *cmd,
				       bool (*doomed)(struct io_uring_cmd *cmd));
int hl_do_wait(struct hl_file *f, s64 timeout_ns);
bool hl_file_polled(struct hl_file *f);
void hl_grants_continue(struct hl_grants *g);
void hl_file_unlock(struct hl_file *f);
void hl_file_ticket_put(struct hl_file *f, struct hl_grants *g);
long hl_ioctl_owner(struct hl_file *f, size_t usize, void __user *uarg);
void hl_file_owner_exit(struct hl_file *f);
ktime_t hl_deadline(s64 timeout_ns);
int hl_lock_call(struct hl_file *f, const char *buf, unsigned int len,
		 unsigned int mode, unsigned int flags, s64 timeout_ns,
		 s64 lease_ns, ktime_t deadline, unsigned int state,
		 struct hl_grants *g);
void hl_file_release_all(struct hl_file *f, struct hl_grants *g);
void hl_locker_op_done(struct hl_locker *lk);
extern bool hl_deadlock_on;

/**
 * hl_grants_run() - Continue the operations a caller's grant passes
 *	granted, if any (most calls granted nobody).
 * @g: The lockers; empty afterwards.
 *
 * Context: process context, no hlock lock held.
 */
static inline void hl_grants_run(struct hl_grants *g)
{
	if (!list_empty(&g->lockers))
		hl_grants_continue(g);
}

/* hlock_yield.c */
int hl_do_yield(struct hl_file *f, s64 timeout_ns);

/* hlock_uring.c */
void hl_ring_init(struct hl_file *f);
void hl_ring_arm(struct hl_file *f, struct io_uring_cmd *cmd, s64 timeout_ns,
		 unsigned int issue_flags);
struct io_uring_cmd *hl_ring_disarm(struct hl_file *f);
void hl_ring_post(struct io_uring_cmd *cmd, int res);
void hl_ring_release(struct hl_file *f);
int hl_uring_cmd(struct io_uring_cmd *cmd, unsigned int issue_flags);
void hl_ring_exit(void);

/* hlock_ticket.c */
int hl_ticket_take(struct hl_file *f, unsigned int mode, bool try);
bool hl_ticket_ready(struct hl_file *f);
void hl_ticket_withdraw(struct hl_file *f);
bool hl_ticket_contended(struct hl_file *f);
void hl_ticket_put(struct hl_file *f, struct hl_grants *g);
void hl_ticket_stats(struct hl_file *f, struct hlock_ticket_stats *ts);
struct dentry;
void hl_ticket_debugfs(struct dentry *dir);

/* hlock_lease.c */
struct hlock_record_ext;
void hl_lease_init(struct hl_file *f);
int hl_lease_prepare(struct hl_file *f, s64 lease_ns);
void hl_lease_grant(struct hl_file *f);
void hl_lease_op_end(struct hl_file *f);
void hl_lease_unlocked(struct hl_file *f, struct hl_head *h);
void hl_lease_refile(struct hl_file *f, struct hl_head *h);
bool hl_lease_stale(struct hl_file *f, const char *buf, unsigned int len);
void hl_lease_release(struct hl_req *req);
int hl_do_renew(struct hl_file *f);
void hl_lease_close(struct hl_file *f);
void hl_lease_fill(const struct hl_req *req, struct hlock_record_ext *ext);
void hl_lease_claim(struct hl_locker *lk, struct hl_head *h, unsigned int mode);

/* hlock_cluster.c */
struct hl_cluster;
struct hl_clk;
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
int hl_ns_rebind(const char *name);
bool hl_ns_is_init(const struct ipc_namespace *ipc);
void hl_ipc_put(struct ipc_namespace *ipc);
struct ipc_namespace *hl_ipc_get_pid(pid_t nr);
int hl_ns_bind(struct ipc_namespace *ipc, const char *name);
void hl_ns_bound(struct ipc_namespace *ipc,
		 char name[HLOCK_CLUSTER_NAME_MAX + 1]);
long hl_ioctl_cluster(struct hl_file *f, size_t usize, void __user *uarg);
int hl_cluster_token(struct hl_cluster *cl, u64 *token);
bool hl_cluster_lost(const struct hl_cluster *cl);
void hl_space_for_each(void (*fn)(struct hl_res *r, void *arg), void *arg);
void hl_clk_update(struct hl_head *h);
bool hl_cluster_head_lost(const struct hl_head *h);
bool hl_cluster_caching(void);

/* hlock_lvb.c */
void hl_lvb_free(struct hl_res *r);
int hl_lvb_prepare(struct hl_res *r);
void hl_lvb_load(struct hl_res *r, const u8 *val);
void hl_lvb_store(struct hl_res *r, u8 *val);
long hl_ioctl_lvb(struct hl_file *f, size_t usize, void __user *uarg);
unsigned int hl_file_events(struct hl_file *f);
long hl_ioctl_events(struct hl_file *f, size_t usize, void __user *uarg);
void hl_lvb_flush(struct hl_req *req);
void hl_event_blocking(struct hl_req *holder);
void hl_event_lost(struct hl_req *holder);

/* A mode a lock call may ask for. */
static inline bool hl_mode_valid(unsigned int mode)
{
	return mode >= HLOCK_IS && mode <= HLOCK_X;
}

/* hlock_stats.c */
extern bool hl_stats_on;
void hl_stats_sum(struct hl_ns *ns, struct hlock_stats *st);
void hl_slow_log(struct hl_file *f);
void hl_gave_up(struct hl_file *f, unsigned int mode, int ret);
void hl_note_cancel(struct hl_file *f, unsigned int why);
void hl_trace_request(struct hl_file *f, unsigned int mode,
		      unsigned int flags, s64 timeout_ns);
void hl_stats_acquire(struct hl_locker *lk, unsigned int level,
		      unsigned int mode);
void hl_stats_wait(struct hl_locker *lk, unsigned int level, unsigned int mode,
		   const struct hl_req *req);
void hl_stats_granted(struct hl_locker *lk, unsigned int level,
		      unsigned int mode, bool waited);
void hl_stats_withdrawn(struct hl_locker *lk, unsigned int level,
			unsigned int mode);
void hl_stats_convert(struct hl_req *req, unsigned int target);
void hl_stats_release(struct hl_req *req);
void hl_stats_deadlock(struct hl_locker *lk, unsigned int level,
		       unsigned int mode);

/* Add @n to one statistic of @f (its lock held) and of its lock space. */
#define hl_stat_add(f, field, n)					\
	do {								\
		if (READ_ONCE(hl_stats_on)) {				\
			(f)->stats.field += (n);			\
			this_cpu_add((f)->ns->stats->field, (n));	\
		}							\
	} while (0)

/* hlock_table.c */
long hl_ioctl_table(struct hl_file *f, size_t usize, void __user *uarg);

/* hlock_why.c */
long hl_ioctl_token(struct hl_file *f, size_t usize, void __user *uarg);
long hl_ioctl_describe(struct hl_file *f, size_t usize, void __user *uarg);
void hl_debugfs_init(void);
void hl_debugfs_exit(void);

#endif /* _HLOCK_INTERNAL_H */
