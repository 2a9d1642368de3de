/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_torture: what its files share.
 *
 * One load runs a workload on each lock type of its types parameter in
 * turn: kthreads lock leaf resources in a random mix of modes, hold them a
 * little, maybe convert, recurse or downgrade, and release, while they
 * check that what they were granted agrees with the rules.  hlock is one
 * type (hlock_torture_hlock.c); rwsem, percpu-rwsem and mutex, one lock
 * per leaf, are the others (hlock_torture_ref.c), so that hlock's cost is
 * a ratio measured in one boot.  hlock_torture_main.c has the parameters
 * and the runs, hlock_torture_thread.c the threads' operations and the
 * rules they check, hlock_torture_stats.c the figures and the report,
 * hlock_torture_klock.c the kernel locker a selftest drives.
 */
#ifndef _HLOCK_TORTURE_H
#define _HLOCK_TORTURE_H

#include <linux/atomic.h>
#include <linux/bug.h>
#include <linux/completion.h>
#include <linux/prandom.h>
#include <linux/printk.h>
#include <linux/types.h>
#include <linux/wait.h>

struct dentry;

#include "include/hlock_kernel.h"

/* Wait latencies: bucket k counts waits of 2^k ns up to 2^(k+1) - 1. */
#define HLT_HIST_BUCKETS	40
/*
 * A leaf's path: "hlt" and an index on the first level, "n" and an index
 * on each of up to HLOCK_MAX_DEPTH - 1 more, indexes below HLT_MAX_NRES.
 */
#define HLT_PATH_LEN		96
/* Leaves at the most (the bypass slot has 12 bits for an index). */
#define HLT_MAX_NRES		4096
/* The use_* parameters are percentages. */
#define HLT_PERCENT		100

/* How a thread asks for the first acquisition of an operation. */
enum hlt_kind {
	HLT_BLOCK,	/* waits as long as it takes */
	HLT_TIMED,	/* tries, or waits at most a few ms */
	HLT_ASYNC,	/* queues and is called back (hlock only) */
};

/**
 * struct hlt_leaf - A resource the threads lock, and the torture's own
 *	account of it.
 * @path: Its path, NUL-terminated.
 * @ends: @ends[k] is the length of the prefix of @path that names its
 *	ancestor on level k + 1 (the root is the empty prefix).
 * @idx: Its index; 0 is the hottest.
 * @shadow: Per mode, how many threads hold it in that mode, by their own
 *	count: raised after a grant, lowered before a release.
 * @clock: Stamps the lock calls on it, in the order they begin (bypass).
 * @waiters: Threads whose asynchronous request is queued on it.
 *
 * Everything but the atomics is written once, before any thread runs.
 */
struct hlt_leaf {
	char path[HLT_PATH_LEN];
	u8 ends[HLOCK_MAX_DEPTH];
	unsigned int idx;
	atomic_t shadow[HLOCK_NR_MODES];
	atomic64_t clock;
	atomic_t waiters;
};

/**
 * struct hlt_stats - What one thread did, or the sum of several.
 * @ops: Acquisitions granted, per requested mode.
 * @busy: Tries (timeout 0) that found the lock taken.
 * @timeouts: Timed waits that gave up.
 * @deadlocks: Calls refused with -EDEADLK.
 * @queued: Asynchronous calls that were queued (-EINPROGRESS).
 * @cancels: Queued asynchronous calls withdrawn by an unlock.
 * @converts: Conversions granted.
 * @recursions: Recursive acquisitions.
 * @downgrades: Downgrades made.
 * @checks: Holds on which the lock manager's own account was checked.
 * @bypasses: Times a queued request was passed by a later conflicting one.
 * @bypass_max: The most times one queued request was passed.
 * @wait_max: The longest wait for a grant, in ns.
 * @hist: Waits for a grant, by log2 of their ns.
 *
 * A thread's own are written by it alone, with WRITE_ONCE(), and read by
 * the report at any time.
 */
struct hlt_stats {
	u64 ops[HLOCK_NR_MODES];
	u64 busy;
	u64 timeouts;
	u64 deadlocks;
	u64 queued;
	u64 cancels;
	u64 converts;
	u64 recursions;
	u64 downgrades;
	u64 checks;
	u64 bypasses;
	u64 bypass_max;
	u64 wait_max;
	u64 hist[HLT_HIST_BUCKETS];
};

/**
 * struct hlt_mix - What the threads do, from the parameters; written by
 *	the module's init only.
 * @weights: Per mode, its weight among the modes asked for.
 * @weight_sum: Their sum, not 0.
 * @timeouts: Percent of first acquisitions that try or time out.
 * @async: Percent of them queued asynchronously (hlock).
 * @converts: Percent of operations that lock again.
 * @downgrades: Percent of operations that downgrade.
 */
struct hlt_mix {
	unsigned int weights[HLOCK_NR_MODES];
	unsigned int weight_sum;
	unsigned int timeouts;
	unsigned int async;
	unsigned int converts;
	unsigned int downgrades;
};

extern struct hlt_mix hlt_mix;

struct hlt_run;

/**
 * struct hlt_thread - One torture kthread.
 * @run: Its run.
 * @task: The kthread, with a reference of the run's.
 * @id: Its number in the run.
 * @rnd: Its random numbers.
 * @st: What it did.
 * @lk: hlock: its locker, made and destroyed by the thread itself.
 * @wslot: hlock: its asynchronous request while queued (HLT_WSLOT_*),
 *	0 otherwise; written by the thread, bypass counts added by others.
 * @done: hlock: completed when its queued request ends.
 * @done_res: hlock: how it ended.
 * @prefix: hlock: scratch room for an ancestor's path.
 */
struct hlt_thread {
	struct hlt_run *run;
	struct task_struct *task;
	unsigned int id;
	struct rnd_state rnd;
	struct hlt_stats st;
	struct hlock_locker *lk;
	atomic64_t wslot;
	struct completion done;
	int done_res;
	char prefix[HLT_PATH_LEN];
};

/**
 * struct hlt_op - One operation of a thread: the leaf and what it holds.
 * @leaf: The leaf.
 * @mode: The mode asked for first.
 * @held: The mode the thread holds now, as its shadow counts it.
 * @nacq: Acquisitions made, to be released.
 * @kind: How the first acquisition is asked for.
 * @timeout_ns: HLT_TIMED: its timeout (0: a try).
 * @start: The leaf's clock when the first lock call began.
 */
struct hlt_op {
	struct hlt_leaf *leaf;
	unsigned int mode;
	unsigned int held;
	unsigned int nacq;
	enum hlt_kind kind;
	s64 timeout_ns;
	u64 start;
};

/**
 * struct hlt_type - A lock type: how the generic thread loop locks.
 * @name: As in the types parameter and the report.
 * @held_as: Optional: the mode a thread holds, for its shadow counts, once
 *	granted a mode (a reference lock's read or write side); the mode
 *	itself without it.
 * @setup: Before the threads start: make the run's locks.
 * @teardown: After they stopped: free them.
 * @thread_init: In each thread, before its first operation.
 * @thread_exit: In each thread, after its last.
 * @lock: Make the first acquisition of @op; 0 when granted, or -EAGAIN,
 *	-ETIMEDOUT, -EDEADLK, -ECANCELED when it was not.
 * @convert: Optional: make one more acquisition, asking for @mode; 0
 *	when granted, or -errno as @lock.
 * @downgrade: Optional: lower @op->held to @mode (as @held_as gives it);
 *	0, or -EOPNOTSUPP when the type cannot.
 * @unlock: Release one acquisition; @last says it is the last.
 * @check: Optional: check the lock manager's own account while @op is
 *	held (sampled: it costs calls of the lock manager).
 * @quiet_check: Optional: check it while no thread holds anything.
 */
struct hlt_type {
	const char *name;
	unsigned int (*held_as)(unsigned int mode);
	int (*setup)(struct hlt_run *run);
	void (*teardown)(struct hlt_run *run);
	int (*thread_init)(struct hlt_thread *t);
	void (*thread_exit)(struct hlt_thread *t);
	int (*lock)(struct hlt_thread *t, struct hlt_op *op);
	int (*convert)(struct hlt_thread *t, struct hlt_op *op,
		       unsigned int mode);
	int (*downgrade)(struct hlt_thread *t, struct hlt_op *op,
			 unsigned int mode);
	void (*unlock)(struct hlt_thread *t, struct hlt_op *op, bool last);
	void (*check)(struct hlt_thread *t, struct hlt_op *op);
	void (*quiet_check)(struct hlt_run *run);
};

/**
 * struct hlt_run - The run of one lock type.
 * @type: The type.
 * @threads: Its threads.
 * @nthreads: How many.
 * @leaves: The leaves (shared by every run of the load).
 * @nres: How many.
 * @depth: Their level below the root.
 * @locks: The type's locks, one per leaf (@setup, @teardown).
 * @lk: hlock: the controller's locker, for the quiet checks.
 * @fifo: hlock's grant policy is fifo: any bypass is a breach.
 * @stop: Set when the threads are to end their loop.
 * @pause: Set while the threads are to park (stutter).
 * @parked: Threads parked, or ended.
 * @park_wq: Where parked threads wait for @pause to clear.
 * @ctl_wq: Where the controller waits for @parked.
 * @breaches: Breaches of an invariant seen in this run.
 * @start_ns: When the threads started.
 * @paused_ns: Time spent parked, left out of the rates.
 * @end_ns: When the threads stopped.
 *
 * Written by the controller before the threads start and after they
 * stopped, except the atomics and the flags (READ_ONCE()).
 */
struct hlt_run {
	const struct hlt_type *type;
	struct hlt_thread *threads;
	unsigned int nthreads;
	struct hlt_leaf *leaves;
	unsigned int nres;
	unsigned int depth;
	void *locks;
	struct hlock_locker *lk;
	bool fifo;
	bool stop;
	bool pause;
	atomic_t parked;
	wait_queue_head_t park_wq;
	wait_queue_head_t ctl_wq;
	atomic_t breaches;
	u64 start_ns;
	u64 paused_ns;
	u64 end_ns;
};

/**
 * HLT_BREACH - Report a breach of an invariant: count it, log it (rate
 *	limited) and warn, once per place it is seen from.
 * @run: The run that saw it.
 * @fmt: What was seen, printk style.
 */
#define HLT_BREACH(run, fmt, ...)					\
	do {								\
		atomic_inc(&(run)->breaches);				\
		pr_err_ratelimited("breach: " fmt "\n", ##__VA_ARGS__);	\
		WARN_ONCE(1, "hlock_torture: breach: " fmt "\n",	\
			  ##__VA_ARGS__);				\
	} while (0)

/* Modes and threads: hlock_torture_thread.c. */
extern const char *const hlt_mode_names[HLOCK_NR_MODES];
bool hlt_conflicts(unsigned int a, unsigned int b);
bool hlt_covers(unsigned int held, unsigned int mode);
unsigned int hlt_sup(unsigned int a, unsigned int b);
int hlt_mode_parse(const char *name);
u32 hlt_rand(struct hlt_thread *t, u32 n);
int hlt_thread_fn(void *arg);

/* The lock types. */
extern const struct hlt_type hlt_hlock_type;
extern const struct hlt_type hlt_rwsem_type;
extern const struct hlt_type hlt_percpu_rwsem_type;
extern const struct hlt_type hlt_mutex_type;

/* Figures and report: hlock_torture_stats.c. */

/**
 * hlt_add() - Add to a counter of a thread's own statistics.
 * @c: The counter.
 * @n: What to add.
 *
 * Context: the owning thread.
 */
static inline void hlt_add(u64 *c, u64 n)
{
	WRITE_ONCE(*c, *c + n);
}

void hlt_stats_wait(struct hlt_stats *st, u64 ns);
void hlt_stats_max(u64 *c, u64 v);
void hlt_stats_sum(struct hlt_stats *sum, const struct hlt_run *run);
void hlt_live(struct hlt_run *run);
void hlt_report_interval(struct hlt_run *run);
void hlt_report_run(struct hlt_run *run);
void hlt_report_failed(const struct hlt_type *type, int err);
void hlt_report_end(void);
void hlt_stats_debugfs(struct dentry *dir);

/* The kernel locker: hlock_torture_klock.c. */
int hlt_klock_init(struct dentry *dir);
void hlt_klock_exit(void);

#endif /* _HLOCK_TORTURE_H */
