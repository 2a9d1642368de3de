/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock core: the grant policy of the hierarchical lock manager.
 *
 * This file and hlock_core.c are plain C: they build in the kernel and in
 * the userspace unit test (kmod/test), which supplies <linux/list.h> and
 * friends through a small shim.  Nothing here sleeps, allocates or locks;
 * the caller (hlock_dev.c) serialises every call with one spinlock and
 * supplies memory and the hooks declared at the end.
 *
 * Vocabulary, after MongoDB's lock manager:
 * - a lock head (struct hl_head) is one resource: per-mode counts of the
 *   granted requests and of the waiting ones, their bitmasks, the list of
 *   granted requests and the FIFO conflict queue;
 * - a request (struct hl_req) is what one locker holds or waits for on one
 *   resource, with a count of the acquisitions it stands for;
 * - a locker (struct hl_locker) is one open file of /dev/hlock, with its
 *   requests and one operation slot (struct hl_op) for the path lock that
 *   is in flight: intents root first, then the mode on the path.
 */
#ifndef _HLOCK_CORE_H
#define _HLOCK_CORE_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/types.h>
#else
#include "shim.h"
#endif

#include "../uapi/linux/hlock.h"

/* Levels of a path including the root. */
#define HL_MAX_LEVELS		(HLOCK_MAX_DEPTH + 1)
/* Acquisitions one request may stand for; unlock returns the count. */
#define HL_MAX_COUNT		0x7fffffffU

/* States of a request. */
enum hl_req_state {
	HL_WAITING,		/* in head->queue */
	HL_GRANTED,		/* in head->granted */
	HL_CONVERTING,		/* in head->granted, waiting for ->convert */
};

/* Request flags (kernel-internal, from HLOCK_F_*). */
#define HL_RF_FRONT		HLOCK_F_FRONT
#define HL_RF_COMPAT_FIRST	HLOCK_F_COMPAT_FIRST
/* The flags were added because this is an S, SIX or X on the root. */
#define HL_RF_AUTO		(1U << 7)

/**
 * struct hl_head - One resource: its granted requests and its queue.
 * @granted: Granted and converting requests, in grant order.
 * @queue: Waiting new requests, FIFO (HLOCK_F_FRONT ones at the front).
 * @granted_count: Granted requests per mode.
 * @wait_count: Waiting requests per mode, conversions by target mode.
 * @granted_mask: Bit m set when @granted_count[m] is non-zero.
 * @wait_mask: Bit m set when @wait_count[m] is non-zero.
 * @compat_first: Granted requests that carry HL_RF_COMPAT_FIRST.
 * @converting: Requests in state HL_CONVERTING.
 * @refs: Requests on this head, child heads, and in-flight operations.
 * @parent: The resource one level up; NULL for the root.
 * @level: Depth below the root (0 for the root).
 *
 * Every field is protected by the caller's lock.
 */
struct hl_head {
	struct list_head granted;
	struct list_head queue;
	unsigned int granted_count[HLOCK_NR_MODES];
	unsigned int wait_count[HLOCK_NR_MODES];
	unsigned int granted_mask;
	unsigned int wait_mask;
	unsigned int compat_first;
	unsigned int converting;
	unsigned int refs;
	struct hl_head *parent;
	unsigned int level;
};

struct hl_locker;

/**
 * struct hl_req - What one locker holds or waits for on one resource.
 * @node: Entry in @head's granted list or queue.
 * @locker_node: Entry in the locker's @reqs once granted.
 * @index_node: Entry in the locker's @index once granted.
 * @head: The resource.
 * @locker: The owner.
 * @mode: Granted mode; for a waiting request, the requested mode.  While
 *	converting, still the mode held.
 * @convert: Target mode of a pending conversion, else HLOCK_NL.
 * @state: enum hl_req_state.
 * @flags: HL_RF_*.
 * @convert_flags: HL_RF_* a pending conversion adds once granted.
 * @own: Acquisitions made on this resource itself.
 * @child: Acquisitions made below this resource, each holding an intent
 *	here.
 * @pin: Set while the locker's operation in flight runs through this
 *	resource: the request stays even with no acquisition left.
 * @since: hl_clock() when it was granted (the first time).
 */
struct hl_req {
	struct list_head node;
	struct list_head locker_node;
	struct hlist_node index_node;
	struct hl_head *head;
	struct hl_locker *locker;
	unsigned char mode;
	unsigned char convert;
	unsigned char state;
	unsigned char flags;
	unsigned char convert_flags;
	unsigned int own;
	unsigned int child;
	unsigned int pin;
	u64 since;
};

/* States of the operation slot. */
enum hl_op_state {
	HL_OP_IDLE,		/* empty */
	HL_OP_SETUP,		/* claimed, being prepared by the caller */
	HL_OP_WAITING,		/* queued at heads[level] */
	HL_OP_GRANTED,		/* every level granted, not yet collected */
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
 * @flags: HLOCK_F_* of the request.
 * @heads: Resources of the path, root first; each holds a reference.
 * @reqs: The locker's request at each level: pinned at the start where
 *	it held one, else the new one once the level is reached.
 * @step: enum hl_op_step per level.
 * @prev: Mode held before a conversion, per level.
 * @prev_flags: Flags of the request before a conversion, per level.
 * @spare: Requests allocated by the caller for levels not yet held.
 * @nr_spare: Entries in @spare.
 * @pinned: hl_op_start() pinned the requests in @reqs.
 * @now: hl_clock() when the operation started or last moved on.
 */
struct hl_op {
	unsigned int state;
	unsigned int nr;
	unsigned int level;
	unsigned int mode;
	unsigned int flags;
	struct hl_head *heads[HL_MAX_LEVELS];
	struct hl_req *reqs[HL_MAX_LEVELS];
	unsigned char step[HL_MAX_LEVELS];
	unsigned char prev[HL_MAX_LEVELS];
	unsigned char prev_flags[HL_MAX_LEVELS];
	struct hl_req *spare[HL_MAX_LEVELS];
	unsigned int nr_spare;
	bool pinned;
	u64 now;
};

/* Buckets of a locker's index before it ever grows (a power of two). */
#define HL_INDEX_INLINE_BITS	3
/* ...and at most, as a power of two (a million buckets). */
#define HL_INDEX_MAX_BITS	20

/**
 * struct hl_locker - One locker: its requests and its operation slot.
 * @reqs: Granted (and converting) requests, one per resource.
 * @index: Hash of @reqs by resource, 1 << @index_bits buckets: finding
 *	the locker's request on a resource is O(1), however many it holds.
 * @index_bits: Size of @index.
 * @nr_reqs: Entries in @reqs.
 * @op: The operation slot.
 * @index_inline: @index until it grows (hl_locker_index_swap()).
 */
struct hl_locker {
	struct list_head reqs;
	struct hlist_head *index;
	unsigned int index_bits;
	unsigned int nr_reqs;
	struct hl_op op;
	struct hlist_head index_inline[1 << HL_INDEX_INLINE_BITS];
};

extern const unsigned int hl_conflict_mask[HLOCK_NR_MODES];

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

unsigned int hl_sup(unsigned int a, unsigned int b);
bool hl_covers(unsigned int held, unsigned int m);

void hl_head_init(struct hl_head *h, struct hl_head *parent);
void hl_head_get(struct hl_head *h);
void hl_head_put(struct hl_head *h);

void hl_locker_init(struct hl_locker *lk);
struct hl_req *hl_locker_find(struct hl_locker *lk, struct hl_head *h);
unsigned int hl_locker_index_wanted(const struct hl_locker *lk);
struct hlist_head *hl_locker_index_swap(struct hl_locker *lk,
					struct hlist_head *index,
					unsigned int bits);
unsigned int hl_op_reqs_needed(struct hl_locker *lk);
int hl_op_start(struct hl_locker *lk, unsigned int mode, unsigned int flags);
void hl_op_cancel(struct hl_locker *lk);
void hl_op_finish(struct hl_locker *lk);
bool hl_op_busy(struct hl_locker *lk, struct hl_head *h);
int hl_unlock(struct hl_locker *lk, struct hl_head *h);
int hl_downgrade(struct hl_locker *lk, struct hl_head *h, unsigned int mode);
unsigned int hl_held(struct hl_locker *lk, struct hl_head *h);
void hl_locker_release_all(struct hl_locker *lk);

/* Hooks the caller implements. */

/* The grant policy in force: HLOCK_POLICY_BATCH or HLOCK_POLICY_FIFO. */
unsigned int hl_grant_policy(void);
/* @lk's operation was granted while it waited. */
void hl_op_granted(struct hl_locker *lk);
/* @h lost its last reference: unlink it, put its parent, free it. */
void hl_head_unused(struct hl_head *h);
/* Free a request that hl_op_start() took from the spares. */
void hl_req_free(struct hl_req *req);
/* A monotonic clock in ns. */
u64 hl_clock(void);

/*
 * Events of an operation, for statistics and tracing; @level is the level
 * of lk->op concerned and @mode the mode asked for there.
 */
/* The level is asked for (counted even if it never is granted). */
void hl_note_acquire(struct hl_locker *lk, unsigned int level,
		     unsigned int mode);
/* The level has to wait. */
void hl_note_wait(struct hl_locker *lk, unsigned int level, unsigned int mode);
/* The level was granted, at once or (@waited) after hl_note_wait(). */
void hl_note_granted(struct hl_locker *lk, unsigned int level,
		     unsigned int mode, bool waited);
/* The waiting level was withdrawn. */
void hl_note_withdrawn(struct hl_locker *lk, unsigned int level,
		       unsigned int mode);
/* @req starts converting to @target. */
void hl_note_convert(struct hl_req *req, unsigned int target);
/* @req is released. */
void hl_note_release(struct hl_req *req);

#endif /* _HLOCK_CORE_H */
