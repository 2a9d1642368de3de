/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock core: the grant policy and the protocol of the hierarchical lock
 * manager.
 *
 * This file and hlock_core.c are plain C: they build in the kernel and in
 * the userspace unit test (kmod/test), which supplies <linux/list.h> and
 * friends through a small shim.  The core never allocates, sleeps or
 * touches a lock itself: it calls the hooks of its host (hlock_host.h),
 * which the kernel implements in hlock_host.c with spinlocks, RCU and
 * slabs, and the unit test with checks that the protocol takes and drops
 * them as documented.
 *
 * Vocabulary, after MongoDB's lock manager:
 * - a lock head (struct hl_head) is one resource: per-mode counts of the
 *   granted requests and of the waiting ones, their bitmasks, the granted
 *   requests per mode, and the FIFO conflict queue (one list per mode,
 *   ordered by a sequence number, so that a grant pass looks at each mode
 *   once instead of walking every waiter);
 * - a partition (struct hl_part) holds the IS and IX requests granted on a
 *   head while it is "partitioned": no S, SIX or X is granted or asked for
 *   there, so intents cannot conflict and are granted on the CPU's own
 *   partition, touching nothing shared (MongoDB partitions its global
 *   resource the same way; percpu-rwsem moves its cost to writers alike);
 * - a head's fast path (hl_head.fast): while nothing else is on a head, one
 *   request is granted there by one atomic exchange and released by
 *   another, on no list of the head and in none of its counts (rwsem's
 *   count word, one owner wide).  Everything that may have to see it takes
 *   the head lock and shuts the fast path first (head_shut()), which makes
 *   the fast holder an ordinary grant on the head: so the waiters, their
 *   deadlock searches, blocking notices and leases all find it there;
 * - a request (struct hl_req) is what one locker holds or waits for on one
 *   resource, with a count of the acquisitions it stands for;
 * - a locker (struct hl_locker) is one open file of /dev/hlock, with its
 *   requests and one operation slot (struct hl_op) for the path lock that
 *   is in flight: intents root first, then the mode on the path.
 *
 * Locking (the hooks name the locks; the glue implements them):
 * - the locker lock protects a locker, its operation slot and the fields
 *   of its requests that only it changes (counts, pins, list and index
 *   entries).  It may sleep; every core function taking a locker needs it.
 * - a head lock protects the head: its counts, masks, lists and queue, and
 *   the state, mode, flags and position of the requests on it.  Heads are
 *   never nested with each other: a path is acquired one level at a time.
 * - a partition lock protects one partition's lists and counts; it nests
 *   inside the head lock (head, then partition), or is taken alone on the
 *   fast path.  hl_head.partitioned changes under the head lock while the
 *   partitions are visited one by one (see depart()).
 * - hl_head.fast is changed by atomic exchanges: by a fast grant or release
 *   with no lock but the locker's, and to HL_FAST_SHUT under the head lock;
 *   from HL_FAST_SHUT back to open only under the head lock, by a store
 *   with release order, so that a fast grant that follows a release made
 *   under the lock sees what was written under the lock released.
 * Lock order: locker, head, partition.  A grant pass runs under a head lock
 * and only collects the lockers it granted (struct hl_grants); the caller
 * continues their operations once it has dropped its own locks
 * (hl_op_continue()), so no locker lock is ever taken inside another.
 */
#ifndef _HLOCK_CORE_H
#define _HLOCK_CORE_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#else
#include "shim.h"
#endif

#include "../uapi/linux/hlock.h"

/* Levels of a path including the root. */
#define HL_MAX_LEVELS		(HLOCK_MAX_DEPTH + 1)
/* Acquisitions one request may stand for; unlock returns the count. */
#define HL_MAX_COUNT		0x7fffffffU
/*
 * (held, target) pairs a conversion can be: IS to IX, S, SIX or X; IX or
 * S to SIX or X; SIX to X.
 */
#define HL_NR_CONV		9
/* Intent modes a partition holds: IS and IX. */
#define HL_NR_PART_MODES	2

/* States of a request. */
enum hl_req_state {
	HL_WAITING,		/* in head->wq->queue[mode] */
	HL_GRANTED,		/* in head->granted[mode] or a partition */
	HL_CONVERTING,		/* granted, and in head->wq->convq[] too */
};

/*
 * Values of hl_head.fast besides a fast holder's request (a pointer, never
 * 0 or 1): the fast path is open (the head is idle), or shut.
 */
#define HL_FAST_OPEN		0UL
#define HL_FAST_SHUT		1UL

/* Request flags (kernel-internal, from HLOCK_F_*). */
#define HL_RF_FRONT		HLOCK_F_FRONT
#define HL_RF_COMPAT_FIRST	HLOCK_F_COMPAT_FIRST
/*
 * The locker may jump queues (the glue decides who may): its S, SIX and X
 * on the root do so.  Only in hl_op_claim()'s flags, never on a request.
 */
#define HL_RF_MAY_JUMP		(1U << 6)
/* The flags were added because this is an S, SIX or X on the root. */
#define HL_RF_AUTO		(1U << 7)
/*
 * The caller will not wait for the operation (a try-lock): a level that
 * cannot be granted at once fails the operation with -EAGAIN, queued
 * nowhere, unless it waits for its cluster node's DLM mode alone; then it
 * queues, claims no lease and is searched for no deadlock, and the glue
 * gives it up unless the DLM answers soon.  Only in hl_op_claim()'s flags.
 */
#define HL_RF_TRY		(1U << 8)

/**
 * struct hl_part - One partition of a head: intents granted on one CPU.
 * @granted: Granted requests, IS then IX.  Sets, not queues: hlists,
 *	which are also cheaper to link on the fast path.
 * @count: Their numbers.
 * @lock: In the kernel, the partition's lock (hl_part_lock()).
 * @cpu: In the kernel, the CPU it belongs to.
 *
 * Protected by the partition's lock.
 */
struct hl_part {
#ifdef __KERNEL__
	spinlock_t lock;
	int cpu;
#endif
	struct hlist_head granted[HL_NR_PART_MODES];
	unsigned int count[HL_NR_PART_MODES];
};

/**
 * struct hl_waitq - The queues of a resource where something waited.
 * @queue: Waiting new requests per mode, each ordered by @hl_req.seq.
 * @convq: Pending conversions per (held, target) pair, ordered by seq.
 * @wait_count: Waiting requests per mode, conversions by target mode.
 * @conv_count: Pending conversions per target mode.
 *
 * A head gets one from the locker of its first waiter (hl_locker's
 * @spare_wq) and keeps it until it is freed: most resources are never
 * waited on, and pay nothing for queues.  Protected by the head lock.
 */
struct hl_waitq {
	struct list_head queue[HLOCK_NR_MODES];
	struct list_head convq[HL_NR_CONV];
	unsigned int wait_count[HLOCK_NR_MODES];
	unsigned int conv_count[HLOCK_NR_MODES];
};

/**
 * struct hl_head - One resource: its granted requests and its queue.
 * @granted: Granted (and converting) requests on the head, per mode held
 *	(sets: hlists, cheap to link).
 * @wq: Its queues, NULL until something first waits here; never NULL
 *	while anything waits (@wait_mask).
 * @granted_count: Granted requests per mode; while @partitioned, those in
 *	the partitions are not counted here.
 * @granted_mask: Bit m set when @granted_count[m] is non-zero.
 * @wait_mask: Bit m set when @wq->wait_count[m] is non-zero.
 * @conv_mask: Bit m set when @wq->conv_count[m] is non-zero.
 * @compat_first: Granted requests that carry HL_RF_COMPAT_FIRST.
 * @fifo: The grant policy the head's grant passes apply: fifo's rules,
 *	else batch's.  Taken up from hl_grant_policy() by the first grant
 *	pass that runs after it changed (nothing is granted from the queue
 *	in between); the deadlock searches go by it too, as long as the
 *	policy in force is still fifo (hl_waits_all_ahead()).
 * @front_seq: Sequence number of the last HLOCK_F_FRONT arrival (falls).
 * @back_seq: Sequence number of the last other arrival (rises).
 * @fast: The fast path: HL_FAST_OPEN while nothing is granted, waits or
 *	is partitioned on the head, so that a new request may take it with
 *	one exchange; a request granted that way (a fast holder), which is
 *	on none of the head's lists and in none of its counts; or
 *	HL_FAST_SHUT, when the head's lists and counts are the whole truth.
 *	It is HL_FAST_SHUT on a cluster head, a dead one, and one with
 *	anything on its lists or partitions: all of these are only ever
 *	changed under the head lock after head_shut().
 * @parent: The resource one level up; NULL for the root.
 * @level: Depth below the root (0 for the root).
 * @has_parts: The glue gave this head partitions.
 * @partitioned: New IS and IX requests are granted in the partitions.
 * @dead: Unlinked by the glue; whoever finds it looks the path up again.
 * @cluster: The resource is in a cluster lock space (hlock_cluster.c):
 *	what it grants must also be covered by what this node holds of it in
 *	the DLM, and the core tells the glue when that may have to change
 *	(hl_node_update()).  Such a head never has partitions.
 * @node_mode: The mode this node holds on the resource in the DLM: a
 *	request is granted only when this covers its mode.  HLOCK_X (covers
 *	everything) when not @cluster.
 * @remote_mask: Modes that other nodes wait for here (their blocking
 *	ASTs): a new request whose mode conflicts with one of them waits,
 *	so that this node lets go instead of starving them.  Pending
 *	conversions do not wait for them (their holders already block the
 *	other nodes, which wait for them in turn).  Cleared when this
 *	node's DLM lock has gone down, or away: then nobody waits for it;
 *	narrowed by a probe to the waits that are still there
 *	(hlock_node.c).
 *	New requests that waited already when it was set (@remote_seq) do
 *	not wait for them either.
 * @remote_seq: @back_seq when @remote_mask was last set from 0: waiting
 *	new requests up to this number came before the other nodes' waits.
 * @remote_front: @front_seq then: the HLOCK_F_FRONT ones down to this
 *	number came before them too.
 * @try_waiting: Requests of try-locks (HL_RF_TRY) waiting here, when
 *	@cluster: the DLM is asked for them with DLM_LKF_NOQUEUE first
 *	(hlock_node.c).
 * @try_gen: Bumped when a try-lock starts to wait here while none does:
 *	what the DLM said for the tries that waited before is not about it.
 *
 * @lock: In the kernel, the head lock (hl_head_lock()).
 * @parts: In the kernel, the per-CPU partitions once @has_parts is set.
 *
 * Every field is protected by the head lock, but @fast (see the rules at
 * the top); @partitioned is also read under a partition lock alone (see
 * depart()).  The fields are packed (a
 * head is most of a resource's slab object): pointers and sequence
 * numbers, then the counts and masks, then the flags.
 */
struct hl_head {
	struct hlist_head granted[HLOCK_NR_MODES];
	struct hl_waitq *wq;
	unsigned long fast;
	struct hl_head *parent;
	s64 front_seq;
	s64 back_seq;
	s64 remote_seq;
	s64 remote_front;
#ifdef __KERNEL__
	struct hl_part __percpu *parts;
#endif
	unsigned int granted_count[HLOCK_NR_MODES];
	unsigned int granted_mask;
	unsigned int wait_mask;
	unsigned int conv_mask;
	unsigned int compat_first;
	unsigned int level;
	unsigned int remote_mask;
	unsigned int try_waiting;
	unsigned int try_gen;
#ifdef __KERNEL__
	spinlock_t lock;
#endif
	bool fifo;
	bool has_parts;
	bool partitioned;
	bool dead;
	bool cluster;
	unsigned char node_mode;
};

struct hl_locker;
struct hl_lease;

/**
 * struct hl_req - What one locker holds or waits for on one resource.
 * @node: Entry in @head's wq->queue[] while waiting...
 * @gnode: ...or, once granted, in @head's or @part's granted[], unless
 *	it is @head's fast holder (hl_head.fast).
 * @conv_node: Entry in @head's wq->convq[] while converting.
 * @locker_node: Entry in the locker's @reqs once granted.
 * @index_node: Entry in the locker's @index once granted.
 * @head: The resource.
 * @locker: The owner.
 * @up: The locker's request on @head's parent (NULL on the root); it
 *	outlives this one, as intents are released deepest first.
 * @part: The partition it is granted in, or NULL when on @head.
 * @seq: Position in the queue or among the conversions.
 * @since: hl_clock_coarse() when it was granted (the first time).
 * @token: Fencing token of the grant it holds: drawn (hl_token_next())
 *	when the operation that made it or converted it is granted, shared
 *	by every level that operation made or converted; 0 until then.
 * @own: Acquisitions made on this resource itself.
 * @child: Acquisitions made below this resource, each holding an intent
 *	here.
 * @pin: Set while the locker's operation in flight runs through this
 *	resource: the request stays even with no acquisition left.
 * @ix_below: The locker's requests on child resources whose mode needs
 *	IX here (IX, SIX or X): what a downgrade must leave.
 * @mode: Granted mode; for a waiting request, the requested mode.  While
 *	converting, still the mode held.
 * @convert: Target mode of a pending conversion, else HLOCK_NL.
 * @state: enum hl_req_state.
 * @flags: HL_RF_*.
 * @convert_flags: HL_RF_* a pending conversion adds once granted.
 * @bast: Its locker was told that it blocks a waiter (hl_note_blocking())
 *	since it was granted in its mode: told once per grant, as DLM sends
 *	one blocking AST per grant.  A granted conversion or a downgrade
 *	re-arms it.
 * @refused: Its pending conversion is refused: the DLM refused this node
 *	the mode it needs as a conversion deadlock (hl_node_refuse()); its
 *	continuation fails it with -EDEADLK.
 * @lease: In the kernel, the glue's lease on the request, or NULL; the
 *	core never looks at it.
 *
 * @node, @conv_node, @part, @seq, @mode, @convert, @state, @flags,
 * @convert_flags, @bast and @refused are protected by the head lock (and @node and
 * @bast in a partition by its lock).  The locker reads @mode and @state without the head lock
 * only while no conversion of the request is pending: nobody else changes
 * them then.  The other fields are protected by the locker lock.
 */
struct hl_req {
	union {
		struct list_head node;
		struct hlist_node gnode;
	};
	struct list_head conv_node;
	struct hlist_node locker_node;
	struct hlist_node index_node;
	struct hl_head *head;
	struct hl_locker *locker;
	struct hl_req *up;
	struct hl_part *part;
	s64 seq;
	u64 since;
	u64 token;
	unsigned int own;
	unsigned int child;
	unsigned int pin;
	unsigned int ix_below;
	unsigned char mode;
	unsigned char convert;
	unsigned char state;
	unsigned char flags;
	unsigned char convert_flags;
	unsigned char bast;
	bool refused;
#ifdef __KERNEL__
	struct hl_lease *lease;
#endif
};

/* States of the operation slot. */
enum hl_op_state {
	HL_OP_IDLE,		/* empty */
	HL_OP_SETUP,		/* claimed by hl_op_claim(), not started */
	HL_OP_WAITING,		/* queued at heads[level] */
	HL_OP_GRANTED,		/* every level granted, not yet collected */
	HL_OP_FAILED,		/* undone after @error, not yet collected */
};

/* What an operation did at one level, so that it can be undone. */
enum hl_op_step {
	HL_STEP_NEW,		/* a new request */
	HL_STEP_RECURSE,	/* one more acquisition of a covering mode */
	HL_STEP_CONVERT,	/* a conversion from prev[level] */
};

/**
 * struct hl_op - The path lock a locker has in flight.
 * @state: enum hl_op_state.
 * @nr: Levels in the path, root included.
 * @level: The level being acquired; @nr once all are granted.
 * @mode: Mode requested on the last level.
 * @intent: hl_intent(@mode), the mode of the levels above the last.
 * @flags: HLOCK_F_* of the request.
 * @error: Why a continuation failed (HL_OP_FAILED).
 * @queued: The request at @level waits in its head (not yet accounted).
 * @pinned: Bit l set when @reqs[l] was pinned on the way (it existed).
 * @heads: Resources of the path, root first, as far as it got.
 * @reqs: The locker's request at each level it got to.
 * @step: enum hl_op_step per level.
 * @prev: Mode held before a conversion, per level.
 * @prev_flags: Flags of the request before a conversion, per level.
 * @now: hl_clock() when a level it waited for was granted.
 * @since: hl_clock_coarse() when the operation started, or when the
 *	level it waited for was granted: the grant time of its new requests.
 */
struct hl_op {
	unsigned int state;
	unsigned int nr;
	unsigned int level;
	unsigned int mode;
	unsigned int intent;
	unsigned int flags;
	int error;
	bool queued;
	unsigned int pinned;
	struct hl_head *heads[HL_MAX_LEVELS];
	struct hl_req *reqs[HL_MAX_LEVELS];
	unsigned char step[HL_MAX_LEVELS];
	unsigned char prev[HL_MAX_LEVELS];
	unsigned char prev_flags[HL_MAX_LEVELS];
	u64 now;
	u64 since;
};

/* Room for lockers met, to begin with (it doubles as needed). */
#define HL_DL_ROOM		16

/**
 * struct hl_dl_node - A waiting locker the search met.
 * @lk: The locker (kept with hl_locker_get(), but for the searcher).
 * @head: The resource where it waited when the walk got to it.
 * @from: Index of the node whose waiting request it blocks.
 * @wait_seq: Its wait_seq when met (it was waiting).
 * @hold_seq: Its hold_seq when met, under the head lock of @from's wait.
 * @ahead: It was met waiting ahead, not holding: its waiting request is
 *	the edge, and its end would be seen under that same head lock.
 */
struct hl_dl_node {
	struct hl_locker *lk;
	struct hl_head *head;
	unsigned int from;
	unsigned int wait_seq;
	unsigned int hold_seq;
	bool ahead;
};

/**
 * struct hl_graph - The wait-for graph of one lock space, as far as the
 *	deadlock search needs state of its own (hlock_deadlock.c).
 * @epoch: Number of the search in progress: a locker whose dl_mark is
 *	@epoch was met by it.
 * @nodes: The search's first HL_DL_ROOM nodes: one search runs at a
 *	time, and most meet a few lockers, so most allocate nothing.
 * @waiting: Lockers of the space with a request waiting, from its
 *	wait_begin() to its wait_end() (hlock_core.c): a cycle needs two of
 *	them, so a wait that finds itself alone needs no search.
 * @lock: In the kernel, the mutex that serializes the searches of the
 *	space (hl_graph_lock()).
 *
 * @epoch, @nodes and every locker's dl_mark are protected by @lock;
 * @waiting is atomic, changed under the head lock of the wait.
 */
struct hl_graph {
	unsigned long epoch;
	atomic_t waiting;
	struct hl_dl_node nodes[HL_DL_ROOM];
#ifdef __KERNEL__
	struct mutex lock;
#endif
};

/* Buckets of a locker's index before it ever grows (a power of two). */
#define HL_INDEX_INLINE_BITS	3
/* ...and at most, as a power of two (a million buckets). */
#define HL_INDEX_MAX_BITS	20

/**
 * struct hl_locker - One locker: its requests and its operation slot.
 * @reqs: Granted (and converting) requests, one per resource, newest
 *	first: ancestors come after their descendants.
 * @index: Hash of @reqs by resource, 1 << @index_bits buckets: finding
 *	the locker's request on a resource is O(1), however many it holds.
 * @index_bits: Size of @index.
 * @nr_reqs: Entries in @reqs.
 * @max_reqs: Most entries an operation may make @reqs hold: a level that
 *	would need one more fails with -ENOLCK.  Set by the glue.
 * @last: The target request of the last path lock collected, while it
 *	is held: the caller may find it by its path without a lookup.
 * @spare: Free requests, at least one per level of the operation in
 *	progress (hl_op_start()), and at most HL_MAX_LEVELS.
 * @nr_spare: Entries in @spare.
 * @spare_wq: Queues for the first head a request of the locker waits on
 *	that has none yet, or NULL; the host gives one before an operation
 *	starts, and again when a level must wait and finds it taken
 *	(hl_waitq_refill()).
 * @grant_node: Entry in a struct hl_grants while a continuation is due.
 * @grant_pending: Bit 0 set while @grant_node is on a struct hl_grants.
 * @graph: The wait-for graph of the locker's lock space.  Set by the glue.
 * @wait_head: The resource where a request of the locker waits, or NULL.
 * @wait_req: That request.
 * @wait_seq: Odd while a request of the locker waits: bumped when one
 *	starts and when it stops waiting (granted or withdrawn).
 * @hold_seq: Bumped whenever a request of the locker is lowered or
 *	released: a deadlock search that finds it unchanged knows that what
 *	the locker held is still held (a fast holder's release bumps it too,
 *	though no search meets a fast holder: the head of a wait is shut).
 * @dl_mark: The hl_graph.epoch of the last search that met the locker.
 * @dl_recheck: A request that waited already gained an edge to the
 *	locker's waiting request: its continuation searches again
 *	(hl_op_continue()).
 * @op: The operation slot.
 * @index_inline: @index until it grows (hl_locker_index_swap()).
 *
 * Protected by the locker lock, but for @grant_node and @grant_pending,
 * which the glue's hl_grant_notify() and its continuation loop own;
 * @wait_head, @wait_req and @wait_seq, which change under the head lock of
 * the resource where the request waits; @hold_seq, which the locker
 * changes under the head lock of the request lowered (under none for a
 * fast holder's release); @dl_recheck, under
 * the head lock of the resource where the request waits; and @dl_mark,
 * under hl_graph.lock.  The deadlock search reads the first four of other
 * lockers under head locks only (READ_ONCE()).
 */
struct hl_locker {
	struct hlist_head reqs;
	struct hlist_head *index;
	unsigned int index_bits;
	unsigned int nr_reqs;
	unsigned int max_reqs;
	struct hl_req *last;
	struct hl_req *spare[HL_MAX_LEVELS];
	unsigned int nr_spare;
	struct hl_waitq *spare_wq;
	struct list_head grant_node;
	unsigned long grant_pending;
	struct hl_graph *graph;
	struct hl_head *wait_head;
	struct hl_req *wait_req;
	unsigned int wait_seq;
	unsigned int hold_seq;
	unsigned long dl_mark;
	bool dl_recheck;
	struct hl_op op;
	struct hlist_head index_inline[1 << HL_INDEX_INLINE_BITS];
};

/**
 * struct hl_grants - Lockers whose waiting level a grant pass granted.
 * @__word: Unused.  A struct whose first member is 16 bytes gets GCC's
 *	16-byte stack alignment on x86-64 (the member's mode is TImode);
 *	the kernel's stack is aligned to 8, so every function with one of
 *	these on its stack (a lock and an unlock call among them) realigned
 *	its frame, about ten instructions a call.  A word first avoids it.
 * @lockers: Lockers, through hl_locker.grant_node (hl_grant_notify()).
 *
 * Filled under head locks by whoever released, cancelled or downgraded;
 * emptied by the same caller once it dropped its locks, continuing each
 * locker's operation under that locker's lock (hl_op_continue()).
 */
struct hl_grants {
	unsigned long __word;
	struct list_head lockers;
};

extern const unsigned int hl_conflict_mask[HLOCK_NR_MODES];
extern const char *const hl_mode_names[HLOCK_NR_MODES];

/* Bit of mode @m in the masks. */
static inline unsigned int hl_mode_bit(unsigned int m)
{
	return 1U << m;
}

/* Whether mode @m conflicts with any mode in @mask. */
static inline bool hl_conflicts(unsigned int m, unsigned int mask)
{
	return hl_conflict_mask[m] & mask;
}

/* The intent an ancestor needs for mode @m below it. */
static inline unsigned int hl_intent(unsigned int m)
{
	if (m == HLOCK_NL)
		return HLOCK_NL;
	return (m == HLOCK_IS || m == HLOCK_S) ? HLOCK_IS : HLOCK_IX;
}

/*
 * Whether nothing is granted or waits on @h (its partitions aside: a
 * partitioned head is not idle by this; a fast holder aside too: shut
 * the fast path first, or look only at a cluster head, which has none).
 * Context: head lock.
 */
static inline bool hl_head_idle(const struct hl_head *h)
{
	return !h->granted_mask && !h->wait_mask;
}

/**
 * hl_head_waited() - The modes someone waits for on a resource.
 * @h: The resource.
 *
 * The one answer to "does anyone wait for this?": the new requests and
 * the conversions (by target) that wait here, and, on a cluster head, the
 * modes other nodes wait for (@h->remote_mask, whose end a probe tells).
 * Lease takeovers, yield, the blocking notifications and the lock table
 * all ask it.  Context: head lock.
 *
 * Return: the modes, as bits.
 */
static inline unsigned int hl_head_waited(const struct hl_head *h)
{
	return h->wait_mask | h->remote_mask;
}

/* The mode an operation asks for at level @l: its mode last, else intent. */
static inline unsigned int hl_op_mode(const struct hl_op *op, unsigned int l)
{
	return l + 1 == op->nr ? op->mode : op->intent;
}

static inline void hl_grants_init(struct hl_grants *g)
{
	INIT_LIST_HEAD(&g->lockers);
}

unsigned int hl_sup(unsigned int a, unsigned int b);
bool hl_covers(unsigned int held, unsigned int m);
const char *hl_mode_name(unsigned int mode);

void hl_head_init(struct hl_head *h, struct hl_head *parent);
void hl_head_set_parts(struct hl_head *h);
void hl_head_settle(struct hl_head *h);
bool hl_head_retire(struct hl_head *h);
void hl_part_init(struct hl_part *p);

void hl_locker_init(struct hl_locker *lk, struct hl_graph *graph);
void hl_locker_limit(struct hl_locker *lk, unsigned int max);
void hl_req_token_set(struct hl_locker *lk, struct hl_req *req, u64 token);
struct hl_req *hl_locker_find(struct hl_locker *lk, struct hl_head *h);

/**
 * hl_locker_index_wanted() - The index size a locker should grow to.
 * @lk: The locker.
 *
 * Inline: every lock call asks.
 *
 * Return: 0 while its index is big enough for every request it holds and
 * a whole path more (two per bucket on average), else the bits of a
 * bigger index, for hl_locker_index_swap().
 */
static inline unsigned int hl_locker_index_wanted(const struct hl_locker *lk)
{
	unsigned int bits = lk->index_bits;

	while ((lk->nr_reqs + HL_MAX_LEVELS) >> (bits + 1) &&
	       bits < HL_INDEX_MAX_BITS)
		bits++;
	return bits > lk->index_bits ? bits : 0;
}

struct hlist_head *hl_locker_index_swap(struct hl_locker *lk,
					struct hlist_head *index,
					unsigned int bits);

/**
 * hl_locker_spares_needed() - Requests to add before a path lock.
 * @lk: The locker, its operation claimed (hl_op_claim()).
 *
 * A level the locker holds nothing on takes a new request, so an
 * operation takes at most one per level.  Only those are asked for: a
 * locker's first lock on a short path allocates no more than it may use.
 *
 * Return: how many hl_locker_add_spare() calls make hl_op_start() safe
 * for the claimed path: it then never runs out of requests half way.
 */
static inline unsigned int hl_locker_spares_needed(const struct hl_locker *lk)
{
	return lk->op.nr > lk->nr_spare ? lk->op.nr - lk->nr_spare : 0;
}

void hl_locker_add_spare(struct hl_locker *lk, struct hl_req *req);

/**
 * hl_locker_waitq_needed() - Whether to give the locker spare queues
 *	(hl_locker_add_waitq()) before a path lock.
 * @lk: The locker.
 *
 * Return: true when it has none.
 */
static inline bool hl_locker_waitq_needed(const struct hl_locker *lk)
{
	return !lk->spare_wq;
}

void hl_locker_add_waitq(struct hl_locker *lk, struct hl_waitq *wq);
bool hl_locker_release_some(struct hl_locker *lk, struct hl_grants *g,
			    unsigned int budget);
bool hl_req_blocks(struct hl_req *req);
unsigned int hl_head_waited_but(const struct hl_head *h,
				const struct hl_req *req);
bool hl_req_blocking(const struct hl_head *h, const struct hl_req *req);
int hl_blocking(struct hl_locker *lk, struct hl_head *h);
void hl_locker_drop_spares(struct hl_locker *lk);

int hl_op_claim(struct hl_locker *lk, unsigned int nr, unsigned int mode,
		unsigned int flags);
int hl_op_start(struct hl_locker *lk, struct hl_grants *g);
int hl_op_continue(struct hl_locker *lk, struct hl_grants *g);
void hl_op_cancel(struct hl_locker *lk, struct hl_grants *g);
int hl_op_refuse(struct hl_locker *lk, unsigned int wait_seq,
		 unsigned int hold_seq, struct hl_grants *g);
void hl_op_finish(struct hl_locker *lk, struct hl_grants *g);
int hl_op_run(struct hl_locker *lk, unsigned int nr, unsigned int mode,
	      unsigned int flags, struct hl_grants *g);
int hl_unlock(struct hl_locker *lk, struct hl_head *h, struct hl_grants *g);
void hl_release_tree(struct hl_locker *lk, struct hl_req *top,
		     struct hl_grants *g);
int hl_downgrade(struct hl_locker *lk, struct hl_head *h, unsigned int mode,
		 struct hl_grants *g);
unsigned int hl_held(struct hl_locker *lk, struct hl_head *h);
void hl_head_granted(struct hl_head *h, unsigned int counts[HLOCK_NR_MODES]);
unsigned int hl_node_keep(const struct hl_head *h);
unsigned int hl_node_hold(const struct hl_head *h);
unsigned int hl_node_need(const struct hl_head *h);
bool hl_node_only(const struct hl_head *h, const struct hl_req *req);
bool hl_node_tries_only(const struct hl_head *h);
void hl_node_refuse(struct hl_head *h, struct hl_grants *g);
void hl_node_remote(struct hl_head *h, unsigned int mask);
void hl_node_changed(struct hl_head *h, struct hl_grants *g);
void hl_node_lost_notify(struct hl_head *h, struct hl_grants *g);

/* States of a probe of other nodes' waits (struct hl_node's @probe). */
enum hl_node_probe {
	HL_PROBE_NONE,
	HL_PROBE_FIRST,		/* the first request in flight */
	HL_PROBE_BETWEEN,	/* its answer came; the second is due */
	HL_PROBE_SECOND,	/* the second request in flight */
	HL_PROBE_DONE,		/* its answer came, not yet taken in */
};

/**
 * struct hl_node - This node's DLM lock on a cluster head (hlock_node.c).
 * @remote_at: hl_clock() when the head's remote_mask was last said by a
 *	blocking AST or a probe: the next probe is due a probe interval
 *	later.
 * @deadlk_at: hl_clock() when the DLM last refused a conversion as a
 *	conversion deadlock.
 * @mode: The mode the DLM granted (HLOCK_NL while there is no lock).  The
 *	head's node_mode, what the core may grant, is never more, and less
 *	while a conversion down is in flight.
 * @asked: Mode of the request in flight.
 * @hold: With @deadlk, what the holders held when the DLM refused.
 * @probe: enum hl_node_probe.
 * @probe_seen: Modes of the blocking ASTs since the first probe's answer.
 * @busy: A request is in flight in the DLM.
 * @exists: The DLM lock exists.
 * @unlocking: The request in flight is its unlock.
 * @unlock: The host wants the head gone: unlock it if still unused.
 * @deadlk: The last conversion was refused as a conversion deadlock: go
 *	down to what is held, and ask for no more until that or the probe
 *	interval is over.
 * @cancelling: The request in flight is being cancelled.
 * @down: The request in flight gives up some of the mode held.
 * @noqueue: The request in flight has DLM_LKF_NOQUEUE: it is answered at
 *	once, granted or refused (for try-locks).
 * @refused: The DLM refused a DLM_LKF_NOQUEUE request for the try-locks
 *	that wait: the next is queued, and they wait for it a while
 *	(hl_node_try_ok()), as the other nodes it told may let go.
 * @failed: The DLM refused the last call at once (no memory, say): the
 *	try-locks it was for give up.
 * @try_gen: The head's try_gen when @refused or @failed was said: they
 *	hold for those try-locks only.
 *
 * Protected by the head lock; only hlock_node.c writes it.
 */
struct hl_node {
	u64 remote_at;
	u64 deadlk_at;
	unsigned char mode;
	unsigned char asked;
	unsigned char hold;
	unsigned char probe;
	unsigned char probe_seen;
	unsigned int try_gen;
	bool busy;
	bool exists;
	bool unlocking;
	bool unlock;
	bool deadlk;
	bool cancelling;
	bool down;
	bool noqueue;
	bool refused;
	bool failed;
};

/* What a pass asks of the DLM (struct hl_node_req). */
enum hl_node_call {
	HL_NODE_NONE,
	HL_NODE_LOCK,		/* a new lock, or a conversion, to @mode */
	HL_NODE_UNLOCK,
	HL_NODE_CANCEL,		/* cancel the request in flight */
};

/* How the DLM answered the request in flight. */
enum hl_node_answer {
	HL_NODE_GRANTED,
	HL_NODE_CANCELLED,
	HL_NODE_REFUSED,	/* NOQUEUE, and not grantable now */
	HL_NODE_DEADLOCK,	/* a conversion deadlock */
	HL_NODE_FAILED,		/* anything else: as if cancelled */
};

/**
 * struct hl_node_event - What a pass of a node lock takes in.
 * @answered: The request in flight was answered...
 * @answer: ...so (enum hl_node_answer).
 * @basts: Modes (bits) of the blocking ASTs that came since the last pass,
 *	after the answer if there is one.
 * @now: hl_clock().
 */
struct hl_node_event {
	bool answered;
	unsigned int answer;
	unsigned int basts;
	u64 now;
};

/**
 * struct hl_node_req - The DLM call a pass asks the host to make.
 * @call: enum hl_node_call.
 * @mode: The mode of HL_NODE_LOCK.
 * @convert: HL_NODE_LOCK converts the existing lock...
 * @quecvt: ...behind the conversions that wait (DLM_LKF_QUECVT): up.
 * @noqueue: HL_NODE_LOCK must be answered at once (DLM_LKF_NOQUEUE), and
 *	the nodes in its way told (DLM_LKF_NOQUEUEBAST).
 * @expedite: HL_NODE_LOCK makes the lock, in NL, granted at once
 *	(DLM_LKF_EXPEDITE).
 * @probe: HL_NODE_LOCK asks for the mode held, without the value block.
 * @load: Load the lock value block the answer brought into the head first.
 * @store: Store the head's lock value block into the DLM's first (the
 *	node goes down from SIX or X, or away).
 * @later: hl_clock() time at which a pass is due (a probe), or 0.
 */
struct hl_node_req {
	unsigned int call;
	unsigned int mode;
	bool convert;
	bool quecvt;
	bool noqueue;
	bool expedite;
	bool probe;
	bool load;
	bool store;
	u64 later;
};

void hl_node_init(struct hl_head *h, struct hl_node *n);
unsigned int hl_meet(unsigned int a, unsigned int b);
void hl_node_release(struct hl_head *h);
int hl_node_target(const struct hl_head *h, const struct hl_node *n, bool up);
bool hl_node_cancel_due(const struct hl_head *h, const struct hl_node *n,
			bool live);
void hl_node_failed(struct hl_head *h, struct hl_node *n);
void hl_node_pass(struct hl_head *h, struct hl_node *n,
		  const struct hl_node_event *ev, bool up, bool live,
		  struct hl_grants *g, struct hl_node_req *req);
bool hl_node_want_unlock(struct hl_head *h, struct hl_node *n, bool up);
int hl_node_try_ok(const struct hl_head *h, const struct hl_node *n,
		   const struct hl_req *req, bool up);

/**
 * struct hl_blockers - Who blocks a request, for the lock table and logs.
 * @nr: Conflicting holders, plus the conflicting waiters ahead that were
 *	looked at (at most @max of those).
 * @max: How many to name.
 * @named: How many are in @reqs.
 * @reqs: The first ones: holders, then waiters ahead.
 */
struct hl_blockers {
	unsigned int nr;
	unsigned int max;
	unsigned int named;
	const struct hl_req *reqs[HLOCK_MAX_BLOCKERS];
};

void hl_head_blockers(struct hl_head *h, const struct hl_req *req,
		      struct hl_blockers *b);

/*
 * Shared by hlock_core.c and hlock_deadlock.c: the rules by which a
 * waiting request waits for others, and the search itself.
 */
void hl_graph_init(struct hl_graph *gr);
struct hl_req *hl_queue_first(struct hl_head *h, unsigned int skip);
bool hl_waits_all_ahead(const struct hl_head *h);
int hl_deadlock_check(struct hl_locker *lk, struct hl_grants *g);
bool hl_op_withdraw(struct hl_locker *lk, struct hl_grants *g);

/* What the core calls outside itself: its host (hlock_host.h). */
#include "hlock_host.h"

#endif /* _HLOCK_CORE_H */
