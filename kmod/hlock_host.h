/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock core's host: everything the grant logic (hlock_core.c and
 * hlock_deadlock.c) needs from outside itself, and nothing else.  The core
 * calls no other function of the module and writes no structure but its
 * own (scripts/seam-check checks both).
 *
 * Two hosts implement this header:
 * - the kernel, in hlock_host.c alone, which hands each hook to the
 *   feature it concerns (statistics, leases, value blocks, the cluster...);
 * - the userspace unit test (kmod/test/core_test.c, and core_bench.c), with
 *   checks that the core takes and drops the locks as documented.
 * The locks and RCU below are inline in the kernel (they are on the lock
 * path) and functions in the unit test.
 *
 * Context rules stated here are checked where the core relies on them
 * (hl_assert_head_locked(), hl_assert_locker_locked()).
 */
#ifndef _HLOCK_HOST_H
#define _HLOCK_HOST_H

#ifdef HLOCK_TEST
/*
 * Test build only (hlock_test.c's test_skip_conflict): a new request is
 * granted without the conflict check, so that hlock_torture's invariant
 * checks can be seen to fail.  Elsewhere a constant the compiler drops.
 */
extern bool hl_test_skip_conflict;
#else
#define hl_test_skip_conflict	false
#endif

/* The grant policy in force: HLOCK_POLICY_BATCH or HLOCK_POLICY_FIFO. */
unsigned int hl_grant_policy(void);
/* A monotonic clock in ns. */
u64 hl_clock(void);
/*
 * A stamp of when a request was granted, for how long it is held: a
 * clock of the host's own, coarse and cheap to read, as every lock call
 * reads it.  The kernel's is CLOCK_BOOTTIME as of the last tick, never
 * ahead of the precise one the lock table reads against it; inline, a
 * base plus an offset with no clocksource read (not ktime_get_coarse_ns(),
 * whose timespec costs several times as many instructions).
 */
#ifdef __KERNEL__
static inline u64 hl_clock_coarse(void)
{
	return ktime_get_coarse_boottime_ns();
}
#else
u64 hl_clock_coarse(void);
#endif
/*
 * Whether resources below @h exist: a head with children is never
 * retired.  Context: head lock held, after every partition of @h was
 * locked once since the last request on @h left (hl_head_retire()).
 */
bool hl_head_has_children(const struct hl_head *h);
/* Free a request the locker does not keep as a spare. */
void hl_req_free(struct hl_req *req);
/*
 * Give @lk spare queues (hl_locker_add_waitq()): a level of its operation
 * must wait where there are none, and found the spare taken by an earlier
 * level's wait.  Context: the locker lock held, no
 * other hlock lock, not in an RCU read section; may sleep.  Return: 0 or
 * -ENOMEM.
 */
int hl_waitq_refill(struct hl_locker *lk);
/* Free queues a locker kept as a spare when it goes (hl_locker_drop_spares()). */
void hl_waitq_free(struct hl_waitq *wq);
/*
 * The next fencing token of @lk's lock space: strictly greater than every
 * one drawn there before.  Called once per operation granted that made a
 * new request or a conversion.  Context: the locker lock held.
 */
u64 hl_token_next(struct hl_locker *lk);

/*
 * The head lock of @h; the partition lock of the CPU the caller runs on
 * (it may move on: the one it locked is still a correct one, only a
 * farther one); the lock of partition @p of @h (which has partitions).
 */
#ifdef __KERNEL__
/* Spinlocks in the structures, taken inline on the lock path. */
static inline void hl_head_lock(struct hl_head *h)
	__acquires(h)
{
	spin_lock(&h->lock);
}

static inline void hl_head_unlock(struct hl_head *h)
	__releases(h)
{
	spin_unlock(&h->lock);
}

static inline struct hl_part *hl_part_lock_local(struct hl_head *h)
	__acquires(h)
{
	struct hl_part *p = raw_cpu_ptr(h->parts);

	spin_lock(&p->lock);
	return p;
}

static inline void hl_part_lock(struct hl_head *h, struct hl_part *p)
	__acquires(p)
{
	spin_lock(&p->lock);
}

static inline void hl_part_unlock(struct hl_head *h, struct hl_part *p)
	__releases(p)
{
	spin_unlock(&p->lock);
}

/*
 * The lock rules the core states, checked: with lockdep in the kernel (the
 * locker lock is the glue's, so its check is a hook, compiled only with
 * lockdep), and against the locks it pretends to take in the unit test.
 */
static inline void hl_assert_head_locked(const struct hl_head *h)
{
	lockdep_assert_held(&h->lock);
}

static inline void hl_assert_part_locked(const struct hl_head *h,
					 const struct hl_part *p)
{
	lockdep_assert_held(&p->lock);
}

#ifdef CONFIG_LOCKDEP
void hl_assert_locker_locked(const struct hl_locker *lk);
#else
static inline void hl_assert_locker_locked(const struct hl_locker *lk)
{
}
#endif
#else
#ifdef HL_NO_ASSERTS
/* The benchmark's build: no checks, as in a kernel without lockdep. */
static inline void hl_assert_head_locked(const struct hl_head *h)
{
}

static inline void hl_assert_part_locked(const struct hl_head *h,
					 const struct hl_part *p)
{
}

static inline void hl_assert_locker_locked(const struct hl_locker *lk)
{
}
#else
void hl_assert_head_locked(const struct hl_head *h);
void hl_assert_part_locked(const struct hl_head *h, const struct hl_part *p);
void hl_assert_locker_locked(const struct hl_locker *lk);
#endif
void hl_head_lock(struct hl_head *h) __acquires(h);
void hl_head_unlock(struct hl_head *h) __releases(h);
struct hl_part *hl_part_lock_local(struct hl_head *h) __acquires(h);
void hl_part_lock(struct hl_head *h, struct hl_part *p) __acquires(p);
void hl_part_unlock(struct hl_head *h, struct hl_part *p) __releases(p);
#endif
/* The partition after @p (NULL: the first), or NULL after the last. */
struct hl_part *hl_part_next(struct hl_head *h, struct hl_part *p);

/*
 * Resources are looked up under hl_rcu_lock(): a head found there stays
 * valid until hl_rcu_unlock(), and once a request is on it, as long as
 * that request.  Nothing may sleep in between.
 */
#ifdef __KERNEL__
/* In the kernel they are RCU's own read lock, inline on the lock path. */
static inline void hl_rcu_lock(void)
	__acquires(RCU)
{
	rcu_read_lock();
}

static inline void hl_rcu_unlock(void)
	__releases(RCU)
{
	rcu_read_unlock();
}
#else
void hl_rcu_lock(void);
void hl_rcu_unlock(void);
#endif
/*
 * How many levels of op.heads[], from the root, still hold the resources
 * of the operation's path as the locker's last lock call left them: the
 * operation takes those without hl_head_lookup(), once it saw they are
 * not dead.  Asked once per read section, not once per level.  Context:
 * hl_rcu_lock() and the locker lock held; true until the section ends.
 */
unsigned int hl_heads_known(struct hl_locker *lk);
/*
 * The head of level @level of @lk's operation, below op.heads[level - 1],
 * or NULL when it does not exist.  Context: hl_rcu_lock() and the locker
 * lock held.
 */
struct hl_head *hl_head_lookup(struct hl_locker *lk, unsigned int level);
/*
 * Create the head of level @level, unless another caller just did or a
 * dead one is still on its way out.  Return: 0 (look it up again) or
 * -ENOMEM.  Context: the locker lock held; may sleep.
 */
int hl_head_create(struct hl_locker *lk, unsigned int level);

/*
 * @lk's waiting level was granted under a head lock: add it to @g, once,
 * for the caller to continue.  Context: a head lock held.
 */
void hl_grant_notify(struct hl_locker *lk, struct hl_grants *g);
/* @lk's operation reached HL_OP_GRANTED or HL_OP_FAILED while waiting. */
void hl_op_done(struct hl_locker *lk);

/*
 * Events of an operation, for statistics and tracing; @level is the level
 * of lk->op concerned and @mode the mode asked for there.  Context: the
 * locker lock held.
 */
/*
 * Levels @from to @to - 1 of the operation were asked for and granted at
 * once, and level @to was asked for too if it @waits (it is counted even
 * if it never is granted): one call for a run of levels, not one per
 * level.  Level l asks for hl_op_mode(op, l).
 */
void hl_note_acquired(struct hl_locker *lk, unsigned int from,
		      unsigned int to, bool waits);
/* The level has to wait; @req is the waiting request (head lock held). */
void hl_note_wait(struct hl_locker *lk, unsigned int level, unsigned int mode,
		  const struct hl_req *req);
/*
 * A level of a lock call that waits (not a try) starts to wait on @h for
 * @mode, right after hl_note_wait(), or other nodes start to wait there
 * (@lk NULL): what it may claim there, it claims (the glue's expired
 * leases that conflict with @mode, which their lockers then give up; a
 * locker's own are not in its way).  Context: the head lock of @h held,
 * and the locker lock of @lk.
 */
void hl_wait_claim(struct hl_locker *lk, struct hl_head *h, unsigned int mode);
/* The level was granted after hl_note_wait(). */
void hl_note_granted(struct hl_locker *lk, unsigned int level,
		     unsigned int mode);
/* The waiting level was withdrawn. */
void hl_note_withdrawn(struct hl_locker *lk, unsigned int level,
		       unsigned int mode);
/* @req starts converting to @target. */
void hl_note_convert(struct hl_req *req, unsigned int target);
/*
 * @req is released.  In the kernel a test inline, on the path of every
 * level a lock call releases: only a request with a lease, or any while
 * the hlock_release tracepoint is on (hl_release_traced, which its
 * registration sets), calls the host.
 */
#ifdef __KERNEL__
extern bool hl_release_traced;
void hl_note_release_slow(struct hl_req *req);

static inline void hl_note_release(struct hl_req *req)
{
	if (unlikely(req->lease || READ_ONCE(hl_release_traced)))
		hl_note_release_slow(req);
}
#else
void hl_note_release(struct hl_req *req);
#endif
/*
 * The fast path of @h was shut with a fast holder on it, which is now an
 * ordinary grant on the head (hl_head.fast): the switch from the fast
 * path to the slow one, counted for the tests.  Context: head lock.
 */
void hl_note_fast_shut(const struct hl_head *h);
/*
 * A request started to wait on a conflict with @holder, a granted request
 * of another locker whose locker was not told since @holder was granted
 * in its mode: tell it (DLM's blocking AST).  Called once per grant.
 * Context: the head lock of @holder's resource held, and the lock of its
 * partition if it is in one; must not sleep.
 */
void hl_note_blocking(struct hl_req *holder);
/*
 * @req, which held SIX or X, was just lowered or released, before the
 * grant pass that follows: the lock value block its holder set, if any,
 * is published now, so that every request the pass grants sees it.  A
 * fast holder's release publishes nothing: the host settles a holder on
 * its head (hl_head_settle()) when it sets a block.
 * Context: the head lock of @req's resource held; must not sleep.
 */
void hl_lvb_publish(struct hl_req *req);
/*
 * What a @cluster head holds or waits for changed, or its grant pass ran:
 * the host runs a pass of its node lock (hl_node_pass()) when
 * hl_node_target() or hl_node_cancel_due() says the DLM lock must change.
 * Context: head lock.
 */
void hl_node_update(struct hl_head *h);
/*
 * Whether this node keeps a cluster head's DLM lock after the last local
 * release (the cluster_cache parameter): if not, what may be granted goes
 * down with every release (hl_node_release()).
 */
bool hl_node_caching(void);
/*
 * How often, in ns of hl_clock(), a node that other nodes wait for asks
 * whether they still do (a probe, hlock_node.c), and how long it asks for
 * nothing more after the DLM refused it a conversion as a deadlock; 0:
 * never, and until a holder lets go.
 */
u64 hl_node_probe_ns(void);
/*
 * Whether this node lost the cluster of the @cluster head @h: nothing is
 * granted there any more, and what waits there fails with -ENOLINK.  Once
 * true, it stays true.  Context: head lock.
 */
bool hl_node_lost(const struct hl_head *h);
/*
 * A granted request on a head whose node lost the cluster: tell its
 * locker.  Context: head lock; must not sleep.
 */
void hl_note_lost(struct hl_req *holder);
/*
 * The waiting level closes a cycle of waits, or the DLM refused its node
 * the conversion it waits for as a deadlock: it is withdrawn next and
 * fails with EDEADLK (unless granted at that very moment).  Context: the
 * locker lock held (and hl_graph_lock(), from the search); the level still
 * waits.
 */
void hl_note_deadlock(struct hl_locker *lk, unsigned int level,
		      unsigned int mode);

/*
 * The deadlock search (hlock_deadlock.c).  Whether it is on; the lock that
 * serializes searches in one space (may sleep; taken under the locker
 * lock, never under a head lock; not killable: the search may be another
 * locker's, run by whichever task granted it); references that keep a locker the
 * search met (hl_locker_get() under the head lock of a resource where the
 * locker has a request; hl_locker_put() with no head lock held); memory
 * for its lists (may sleep); and a chance for others to run between its
 * steps.
 */
bool hl_deadlock_detect(void);
void hl_graph_lock(struct hl_graph *gr);
void hl_graph_unlock(struct hl_graph *gr);
void hl_locker_get(struct hl_locker *lk);
void hl_locker_put(struct hl_locker *lk);
void *hl_dl_alloc(size_t n, size_t size);
void hl_dl_free(void *p);
void hl_resched(void);

#endif /* _HLOCK_HOST_H */
