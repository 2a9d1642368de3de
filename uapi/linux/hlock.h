/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * hlock: hierarchical (multi-granularity) locks for userspace through
 * /dev/hlock.  A resource is a path ("" the root, "db", "db/coll"...);
 * each open file description of /dev/hlock is one locker, in the lock
 * space of its IPC namespace.  All times are nanoseconds on
 * CLOCK_MONOTONIC.
 *
 * The semantics (modes, intents, queues, recursion, tickets, leases,
 * tokens, lock value blocks, blocking notifications) and every ioctl's
 * errors are described in Documentation/userspace-api/hlock.rst; the
 * comments here are short.  scripts/doc-check keeps the names here and
 * there in step.
 */
#ifndef _UAPI_LINUX_HLOCK_H
#define _UAPI_LINUX_HLOCK_H

#include <linux/ioctl.h>
#include <linux/types.h>

/*
 * The ABI version reported by HLOCK_IOC_GET_INFO.  2: the ioctl type
 * moved to HLOCK_IOC_MAGIC, a number no other driver registered.
 */
#define HLOCK_ABI_VERSION	2

/* Lock modes (Gray's multi-granularity modes). */
#define HLOCK_NL	0	/* no lock */
#define HLOCK_IS	1	/* intent shared */
#define HLOCK_IX	2	/* intent exclusive */
#define HLOCK_S		3	/* shared */
#define HLOCK_SIX	4	/* shared with intent exclusive */
#define HLOCK_X		5	/* exclusive */
#define HLOCK_NR_MODES	6

/*
 * Flags of struct hlock_lock_args, for the requested resource only.
 * HLOCK_F_FRONT and HLOCK_F_COMPAT_FIRST need CAP_SYS_NICE (EPERM).
 */
/* Queue at the front of the resource's queue (MongoDB's enqueueAtFront). */
#define HLOCK_F_FRONT		(1U << 0)
/* While granted, new compatible requests bypass conflicting waiters. */
#define HLOCK_F_COMPAT_FIRST	(1U << 1)
/* Do not wait: leave the request queued and return -EINPROGRESS. */
#define HLOCK_F_ASYNC		(1U << 2)
#define HLOCK_F_ALL		(HLOCK_F_FRONT | HLOCK_F_COMPAT_FIRST | \
				 HLOCK_F_ASYNC)

/* Limits of resource paths. */
#define HLOCK_MAX_DEPTH		8	/* levels below the root */
#define HLOCK_NAME_MAX		255	/* bytes in one component */
/* Bytes in a whole path: HLOCK_MAX_DEPTH names and the '/' between them. */
#define HLOCK_PATH_MAX		(HLOCK_MAX_DEPTH * (HLOCK_NAME_MAX + 1) - 1)

/* Values of hlock_info.grant_policy. */
#define HLOCK_POLICY_BATCH	0
#define HLOCK_POLICY_FIFO	1

/**
 * struct hlock_lock_args - Argument of the path ioctls.
 * @path: User pointer to the resource path, @path_len bytes, not
 *	NUL-terminated (a NUL byte in it is -EINVAL).
 * @path_len: Length of @path in bytes; 0 names the global root.
 * @mode: HLOCK_IOC_LOCK: the mode to lock; HLOCK_IOC_DOWNGRADE: the new
 *	mode; must be 0 for the other ioctls.
 * @flags: HLOCK_IOC_LOCK: HLOCK_F_*; must be 0 for the other ioctls.
 * @__pad: Must be zero.
 * @timeout_ns: HLOCK_IOC_LOCK only (else 0): negative waits forever, 0
 *	only tries (-EAGAIN), positive gives up after this many ns
 *	(-ETIMEDOUT).  Ignored with HLOCK_F_ASYNC.
 * @lease_ns: HLOCK_IOC_LOCK only (else 0): 0 for no lease, positive for
 *	a lease of this many ns from the grant (HLOCK_FEAT_LEASE), negative
 *	is EINVAL.
 * @reserved: Must be zero.
 *
 * Used by HLOCK_IOC_LOCK, HLOCK_IOC_UNLOCK, HLOCK_IOC_DOWNGRADE and
 * HLOCK_IOC_HELD.  Larger versions of this structure may be passed; the
 * bytes the kernel does not know must be zero (-E2BIG otherwise).
 */
struct hlock_lock_args {
	__u64 path;
	__u32 path_len;
	__u32 mode;
	__u32 flags;
	__u32 __pad;
	__s64 timeout_ns;
	__s64 lease_ns;
	__u64 reserved;
};

/**
 * struct hlock_wait_args - Argument of HLOCK_IOC_WAIT.
 * @timeout_ns: Negative waits forever, 0 only checks (-EAGAIN), positive
 *	gives up after this many ns (-ETIMEDOUT).  The request stays queued.
 * @flags: Must be zero.
 * @__pad: Must be zero.
 * @reserved: Must be zero.
 */
struct hlock_wait_args {
	__s64 timeout_ns;
	__u32 flags;
	__u32 __pad;
	__u64 reserved[2];
};

/**
 * struct hlock_info - Result of HLOCK_IOC_GET_INFO.
 * @abi_version: HLOCK_ABI_VERSION of the running module.
 * @max_depth: HLOCK_MAX_DEPTH.
 * @name_max: HLOCK_NAME_MAX.
 * @path_max: HLOCK_PATH_MAX.
 * @flags: The HLOCK_F_* flags the module accepts.
 * @grant_policy: HLOCK_POLICY_* in force.
 * @features: HLOCK_FEAT_* the module supports.
 * @reserved: Zero; room for later fields.
 */
struct hlock_info {
	__u32 abi_version;
	__u32 max_depth;
	__u32 name_max;
	__u32 path_max;
	__u32 flags;
	__u32 grant_policy;
	__u64 features;
	__u64 reserved[3];
};

/* Values of hlock_info.features. */
/* Lock, unlock and downgrade as IORING_OP_URING_CMD (see below). */
#define HLOCK_FEAT_URING	(1ULL << 0)
/* Read and write tickets (module parameters read_tickets, write_tickets). */
#define HLOCK_FEAT_TICKETS	(1ULL << 1)
/* HLOCK_IOC_YIELD. */
#define HLOCK_FEAT_YIELD	(1ULL << 2)
/* Leases (hlock_lock_args.lease_ns, HLOCK_IOC_RENEW) and their takeover. */
#define HLOCK_FEAT_LEASE	(1ULL << 3)
/* Fencing tokens: HLOCK_IOC_TOKEN, hlock_record_ext.token. */
#define HLOCK_FEAT_TOKEN	(1ULL << 4)
/* Owner descriptions: HLOCK_IOC_DESCRIBE, hlock_record_ext.why. */
#define HLOCK_FEAT_DESCRIBE	(1ULL << 5)
/* Lock value blocks: HLOCK_IOC_LVB. */
#define HLOCK_FEAT_LVB		(1ULL << 6)
/*
 * Blocking notifications: HLOCK_IOC_EVENTS, HLOCK_IOC_BLOCKING and
 * HLOCK_REC_BLOCKING.
 */
#define HLOCK_FEAT_BLOCKING	(1ULL << 7)
/*
 * Cluster lock spaces on the kernel's DLM (the module parameter cluster):
 * HLOCK_REC_CLUSTER, HLOCK_REC_REMOTE_WAIT and hlock_record_ext.node_mode.
 */
#define HLOCK_FEAT_CLUSTER	(1ULL << 8)
/* HLOCK_IOC_CLUSTER: bind the lock space of any IPC namespace. */
#define HLOCK_FEAT_CLUSTER_BIND	(1ULL << 9)
/* HLOCK_IOC_OWNER: lockers whose locks end with their process. */
#define HLOCK_FEAT_OWNER	(1ULL << 10)
/*
 * HLOCK_TABLE_F_IDS and HLOCK_IOC_REFUSE: a deadlock search made outside
 * the module (across the nodes of a cluster, hlock-deadlockd) names the
 * lockers of the table and refuses one's wait.
 */
#define HLOCK_FEAT_REFUSE	(1ULL << 11)

/* Levels of the statistics: a resource's depth below the root. */
#define HLOCK_LEVEL_GLOBAL	0	/* the root */
#define HLOCK_LEVEL_DATABASE	1
#define HLOCK_LEVEL_COLLECTION	2
#define HLOCK_LEVEL_OBJECT	3	/* and every deeper level */
#define HLOCK_NR_LEVELS		4

/* Values of hlock_stats_args.scope. */
#define HLOCK_STATS_GLOBAL	0	/* the locker's lock space */
#define HLOCK_STATS_LOCKER	1	/* the calling locker */

/**
 * struct hlock_level_stats - Counters of one level, indexed by mode.
 * @acquire_count: Acquisitions asked for, also those that later timed out
 *	or were cancelled; an intent taken on an ancestor counts as that
 *	intent at the ancestor's level.
 * @wait_count: Acquisitions that had to wait.
 * @wait_time_ns: Total time those waited, also when they gave up.
 */
struct hlock_level_stats {
	__u64 acquire_count[HLOCK_NR_MODES];
	__u64 wait_count[HLOCK_NR_MODES];
	__u64 wait_time_ns[HLOCK_NR_MODES];
};

/* Ticket pools (MongoDB's read and write TicketHolders). */
#define HLOCK_TICKET_READ	0	/* root asked for in IS or S */
#define HLOCK_TICKET_WRITE	1	/* root asked for in IX, SIX or X */
#define HLOCK_NR_TICKET_POOLS	2

/**
 * struct hlock_ticket_stats - One ticket pool (MongoDB's
 *	concurrentTransactions), module-wide: the pools are module parameters
 *	shared by every lock space.
 * @out: Tickets held by lockers now.
 * @available: Tickets a locker could take now: @total less @out, 0 when
 *	@out is above it (the pool was lowered) or the pool is unlimited.
 * @total: The pool's size (its module parameter); 0 is unlimited.
 * @waiting: Lockers waiting for a ticket of this pool.
 *
 * In HLOCK_STATS_LOCKER scope, @out and @waiting are the calling locker's
 * own (0 or 1) and @available and @total are the pool's.
 */
struct hlock_ticket_stats {
	__u64 out;
	__u64 available;
	__u64 total;
	__u64 waiting;
};

/**
 * struct hlock_stats - Lock statistics (MongoDB's "locks" section).
 * @level: Counters per level, HLOCK_LEVEL_*.
 * @timeouts: Lock calls that gave up: timeouts, and tries that would
 *	have waited.
 * @interrupts: Waits interrupted by a signal.
 * @cancels: Queued requests withdrawn by HLOCK_IOC_UNLOCK, close, or
 *	their ring's teardown or submitter's exec (io_uring).
 * @deadlocks: Lock calls refused with EDEADLK: their wait would have
 *	closed a cycle of waits.
 * @takeovers: Acquisitions whose expired lease was taken over (in
 *	HLOCK_STATS_LOCKER scope: the locker's acquisitions taken over).
 * @yields: HLOCK_IOC_YIELD calls that released what the locker held.
 * @tickets: The ticket pools, HLOCK_TICKET_*.
 *
 * Later versions may grow this structure at its end; pass its size in
 * hlock_stats_args.size.
 */
struct hlock_stats {
	struct hlock_level_stats level[HLOCK_NR_LEVELS];
	__u64 timeouts;
	__u64 interrupts;
	__u64 cancels;
	__u64 deadlocks;
	__u64 takeovers;
	__u64 yields;
	struct hlock_ticket_stats tickets[HLOCK_NR_TICKET_POOLS];
};

/**
 * struct hlock_stats_args - Argument of HLOCK_IOC_STATS.
 * @stats: User pointer to a struct hlock_stats to fill.
 * @size: Its size, 1 to the page size (else EINVAL); the kernel fills
 *	what both know of and zeroes the rest.
 * @scope: HLOCK_STATS_GLOBAL or HLOCK_STATS_LOCKER.
 * @flags: Must be zero.
 * @__pad: Must be zero.
 * @reserved: Must be zero.
 */
struct hlock_stats_args {
	__u64 stats;
	__u32 size;
	__u32 scope;
	__u32 flags;
	__u32 __pad;
	__u64 reserved[2];
};

/* Values of hlock_lock_record.state. */
#define HLOCK_STATE_GRANTED	0
#define HLOCK_STATE_WAITING	1
#define HLOCK_STATE_CONVERTING	2

/* Blocker pids one lock record carries at most. */
#define HLOCK_MAX_BLOCKERS	8
/* Bytes of a command name, with its NUL. */
#define HLOCK_COMM_LEN		16
/* Bytes of a locker's description (HLOCK_IOC_DESCRIBE), with its NUL. */
#define HLOCK_WHY_LEN		64

/**
 * struct hlock_lock_record - One request of the lock table.
 * @rec_len: Bytes from this record to the next: this header, the path
 *	and its NUL, padded to a multiple of 8, and on modules with
 *	HLOCK_FEAT_TOKEN a struct hlock_record_ext.
 * @path_len: Bytes of the resource path that follows this header (a NUL
 *	comes after them); 0 for the root.
 * @pid: Process that made the locker's last lock call (so, for a locker
 *	shared across fork, not necessarily this request's), in the reader's
 *	pid namespace; 0 when it is not visible there.
 * @mode: Mode held; for a waiting request, the mode asked for.
 * @convert_mode: Target mode of a conversion, else HLOCK_NL.
 * @state: HLOCK_STATE_*.
 * @wait_ns: How long it has waited so far (waiting or converting), else 0.
 * @held_ns: How long it has been held (granted or converting), else 0;
 *	counted from a clock tick, so it may read up to a tick long.
 * @nr_blockers: How many requests block it: every holder of a mode
 *	that conflicts with what it asks for, and the conflicting waiters
 *	ahead of it in the queue, of which at most HLOCK_MAX_BLOCKERS are
 *	counted.
 * @__pad: Zero.
 * @blockers: Pids of the first blockers, holders first, each pid once
 *	(0 when not visible), then zeros.
 * @comm: Command name of @pid, NUL-terminated; empty when @pid is 0.
 *
 * The path follows the header directly, at offset
 * sizeof(struct hlock_lock_record), and a struct hlock_record_ext follows
 * the path when @rec_len leaves room for it (see below).
 */
struct hlock_lock_record {
	__u32 rec_len;
	__u32 path_len;
	__u32 pid;
	__u32 mode;
	__u32 convert_mode;
	__u32 state;
	__u64 wait_ns;
	__u64 held_ns;
	__u32 nr_blockers;
	__u32 __pad;
	__u32 blockers[HLOCK_MAX_BLOCKERS];
	char comm[HLOCK_COMM_LEN];
};

/* Values of hlock_record_ext.flags. */
/* The grant holds a lease (@lease_ns is meaningful). */
#define HLOCK_REC_LEASE		(1U << 0)
/*
 * The grant blocks a waiter: a request waits on the resource, or a
 * conversion of another locker's request is pending there, for a mode
 * that conflicts with the mode held (HLOCK_FEAT_BLOCKING).
 */
#define HLOCK_REC_BLOCKING	(1U << 1)
/*
 * The resource is in a cluster lock space (HLOCK_FEAT_CLUSTER): @node_mode
 * is meaningful.
 */
#define HLOCK_REC_CLUSTER	(1U << 2)
/*
 * Another node waits on the resource for a mode that conflicts with this
 * node's DLM mode there; new requests on this node that conflict with it
 * wait for it too (HLOCK_FEAT_CLUSTER).
 */
#define HLOCK_REC_REMOTE_WAIT	(1U << 3)

/**
 * struct hlock_record_ext - What a lock record carries after its path,
 *	at HLOCK_RECORD_EXT_OFFSET(path_len) from its start, on modules with
 *	HLOCK_FEAT_TOKEN; older modules' records end before it (their
 *	@rec_len says so), and older readers skip it.
 * @token: Fencing token of the grant held (granted or converting), else
 *	0: while waiting, and for an intent a lock call took on its way
 *	while that call still waits further down (the levels one lock call
 *	made or converted share its token, given once all are granted);
 *	in a cluster lock space, also until the holder asked for it
 *	(HLOCK_IOC_TOKEN).
 * @lease_ns: With HLOCK_REC_LEASE, time left on the lease: negative once
 *	it expired (it is taken over only when a conflicting request waits).
 * @flags: HLOCK_REC_*.
 * @node_mode: With HLOCK_REC_CLUSTER, the mode in which this node holds
 *	the resource from the DLM (HLOCK_NL when it holds none); it covers
 *	what this node's lockers hold there, and may be more (the node keeps
 *	it until another node asks).  Else zero.
 * @why: The locker's description (HLOCK_IOC_DESCRIBE), NUL-terminated;
 *	empty when it has none.  Any byte but NUL: escape it to show it.
 */
struct hlock_record_ext {
	__u64 token;
	__s64 lease_ns;
	__u32 flags;
	__u32 node_mode;
	char why[HLOCK_WHY_LEN];
};

/* Offset of a record's struct hlock_record_ext from the record's start. */
#define HLOCK_RECORD_EXT_OFFSET(path_len)				\
	(sizeof(struct hlock_lock_record) + (((path_len) + 8) & ~7UL))

/**
 * struct hlock_record_ids - Whose a lock record is, and which of its waits
 *	and holds, at HLOCK_RECORD_IDS_OFFSET(path_len) from the record's
 *	start when the table was asked for them (HLOCK_TABLE_F_IDS).
 * @serial: The locker's serial number: no other locker had it since the
 *	module loaded.
 * @locker: The locker's number in its lock space (a later locker may
 *	reuse it once this one is closed).
 * @wait_seq: Odd while a request of the locker waits; it changes whenever
 *	one starts or stops waiting.
 * @hold_seq: Changes whenever the locker lowers or releases a request.
 * @__pad: Zero.
 *
 * The same for every record of one locker in one table.  They name a wait
 * to HLOCK_IOC_REFUSE.
 */
struct hlock_record_ids {
	__u64 serial;
	__u32 locker;
	__u32 wait_seq;
	__u32 hold_seq;
	__u32 __pad;
};

/* Offset of a record's struct hlock_record_ids from the record's start. */
#define HLOCK_RECORD_IDS_OFFSET(path_len)				\
	(HLOCK_RECORD_EXT_OFFSET(path_len) + sizeof(struct hlock_record_ext))

/* Flags of struct hlock_table_args. */
/* Each record ends with a struct hlock_record_ids (HLOCK_FEAT_REFUSE). */
#define HLOCK_TABLE_F_IDS	(1U << 0)

/**
 * struct hlock_table_args - Argument of HLOCK_IOC_TABLE.
 * @buf: User pointer to a buffer for the records.
 * @size: Bytes at @buf.
 * @needed: Set to the bytes the whole table needs.
 * @count: Set to the records copied.
 * @flags: 0 or HLOCK_TABLE_F_IDS.
 * @reserved: Must be zero.
 */
struct hlock_table_args {
	__u64 buf;
	__u64 size;
	__u64 needed;
	__u32 count;
	__u32 flags;
	__u64 reserved[2];
};

/*
 * io_uring (HLOCK_FEAT_URING): HLOCK_IOC_LOCK, HLOCK_IOC_UNLOCK and
 * HLOCK_IOC_DOWNGRADE as IORING_OP_URING_CMD, sqe->cmd_op the ioctl number
 * and the 16 command bytes (sqe->cmd) a struct hlock_uring_args; the CQE's
 * res is the ioctl's result or -errno (-ECANCELED for a withdrawn lock).
 */

/**
 * struct hlock_uring_args - The command bytes of a hlock SQE.
 * @path: User pointer to the path, NUL-terminated (at most
 *	HLOCK_PATH_MAX bytes before the NUL; -ENAMETOOLONG otherwise).
 * @op: HLOCK_URING_OP() of the mode, the flags and the timeout.
 */
struct hlock_uring_args {
	__u64 path;
	__u64 op;
};

/*
 * hlock_uring_args.op: bits 0-7 the mode (as hlock_lock_args.mode), bits
 * 8-15 the flags (hlock_lock_args.flags), bits 16-63 the timeout in ns as
 * a signed 48-bit number (hlock_lock_args.timeout_ns): up to
 * HLOCK_URING_TIMEOUT_MAX, about 39 hours.
 */
#define HLOCK_URING_MODE_MASK		0xffULL
#define HLOCK_URING_FLAGS_SHIFT		8
#define HLOCK_URING_FLAGS_MASK		0xffULL
#define HLOCK_URING_TIMEOUT_SHIFT	16
#define HLOCK_URING_TIMEOUT_MAX		((1LL << 47) - 1)
#define HLOCK_URING_OP(mode, flags, timeout_ns)				\
	(((__u64)(mode) & HLOCK_URING_MODE_MASK) |			\
	 (((__u64)(flags) & HLOCK_URING_FLAGS_MASK) <<			\
	  HLOCK_URING_FLAGS_SHIFT) |					\
	 ((__u64)(timeout_ns) << HLOCK_URING_TIMEOUT_SHIFT))

#define HLOCK_IOC_MAGIC		0xBE

/*
 * Every ioctl below can also fail with EFAULT (a bad pointer), EINVAL (a
 * bad mode, unknown flags, non-zero reserved or padding fields), E2BIG (a
 * larger structure whose unknown tail is not zero) and ENOTTY (an unknown
 * command); the path ioctls with EINVAL or ENAMETOOLONG for a bad path and
 * ENOMEM.
 */

/*
 * HLOCK_IOC_LOCK: lock a path, with intents on its ancestors.  Errors:
 * EINPROGRESS, EAGAIN, ETIMEDOUT, EINTR, EBUSY, EOVERFLOW, EPERM, ENOLCK,
 * EDEADLK, ENOLINK (in a cluster lock space, this node lost the cluster).
 */
#define HLOCK_IOC_LOCK		_IOW(HLOCK_IOC_MAGIC, 1, struct hlock_lock_args)
/*
 * HLOCK_IOC_UNLOCK: release one acquisition on a path, or cancel the request
 * queued on it; returns the acquisitions left.  Errors: ENOENT, EBUSY,
 * ESTALE.
 */
#define HLOCK_IOC_UNLOCK	_IOW(HLOCK_IOC_MAGIC, 2, struct hlock_lock_args)
/*
 * HLOCK_IOC_DOWNGRADE: lower the mode held on a path.  Errors: ENOENT,
 * EBUSY.
 */
#define HLOCK_IOC_DOWNGRADE	_IOW(HLOCK_IOC_MAGIC, 3, struct hlock_lock_args)
/* HLOCK_IOC_HELD: returns the mode this locker holds on a path. */
#define HLOCK_IOC_HELD		_IOW(HLOCK_IOC_MAGIC, 4, struct hlock_lock_args)
/*
 * HLOCK_IOC_WAIT: wait for the request queued with HLOCK_F_ASYNC and
 * collect it.  Errors: EAGAIN, ETIMEDOUT, EINTR, ENOENT, EBUSY, EDEADLK,
 * ENOLINK.
 */
#define HLOCK_IOC_WAIT		_IOW(HLOCK_IOC_MAGIC, 5, struct hlock_wait_args)
/* HLOCK_IOC_GET_INFO: fill struct hlock_info. */
#define HLOCK_IOC_GET_INFO	_IOR(HLOCK_IOC_MAGIC, 6, struct hlock_info)

/* HLOCK_IOC_STATS: fill a struct hlock_stats. */
#define HLOCK_IOC_STATS		_IOW(HLOCK_IOC_MAGIC, 7, struct hlock_stats_args)
/*
 * HLOCK_IOC_TABLE: copy the lock table of the locker's lock space.
 * Errors: ENOSPC, ENOMEM.
 */
#define HLOCK_IOC_TABLE		_IOWR(HLOCK_IOC_MAGIC, 8, struct hlock_table_args)

/**
 * struct hlock_yield_args - Argument of HLOCK_IOC_YIELD.
 * @timeout_ns: For the whole re-acquisition: negative waits forever, 0
 *	only tries, positive gives up after this many ns.
 * @flags: Must be zero.
 * @__pad: Must be zero.
 * @reserved: Must be zero.
 */
struct hlock_yield_args {
	__s64 timeout_ns;
	__u32 flags;
	__u32 __pad;
	__u64 reserved[2];
};

/**
 * struct hlock_token_args - Argument of HLOCK_IOC_TOKEN.
 * @path: User pointer to the resource path, @path_len bytes, as in
 *	struct hlock_lock_args.
 * @path_len: Length of @path in bytes; 0 names the global root.
 * @flags: Must be zero.
 * @token: Set to the fencing token of the locker's grant on the path;
 *	its value on input is ignored.
 * @reserved: Must be zero.
 */
struct hlock_token_args {
	__u64 path;
	__u32 path_len;
	__u32 flags;
	__u64 token;
	__u64 reserved[2];
};

/**
 * struct hlock_describe_args - Argument of HLOCK_IOC_DESCRIBE.
 * @why: User pointer to the description, @why_len bytes, not
 *	NUL-terminated (a NUL byte in it is EINVAL).
 * @why_len: Its length: 0 clears the description, more than
 *	HLOCK_WHY_LEN - 1 is ENAMETOOLONG.
 * @flags: Must be zero.
 * @reserved: Must be zero.
 */
struct hlock_describe_args {
	__u64 why;
	__u32 why_len;
	__u32 flags;
	__u64 reserved[2];
};

/*
 * HLOCK_IOC_YIELD: release everything the locker holds, let the waiters
 * in, take it all back.  Errors: ETIMEDOUT, EAGAIN, EINTR, EDEADLK, ENOMEM,
 * ENOLCK, ESTALE, EBUSY.
 */
#define HLOCK_IOC_YIELD		_IOW(HLOCK_IOC_MAGIC, 9, struct hlock_yield_args)
/*
 * HLOCK_IOC_RENEW: renew every lease of the locker; the argument must
 * be 0.  Returns the leases renewed.
 */
#define HLOCK_IOC_RENEW		_IO(HLOCK_IOC_MAGIC, 10)
/*
 * HLOCK_IOC_TOKEN: the fencing token of the locker's grant on a path; in
 * a cluster lock space, drawn from the DLM lockspace's counter by the
 * first call.  Errors: ENOENT, EINTR (a fatal signal while drawing).
 */
#define HLOCK_IOC_TOKEN		_IOWR(HLOCK_IOC_MAGIC, 11, struct hlock_token_args)
/*
 * HLOCK_IOC_DESCRIBE: set the locker's description.  Errors:
 * ENAMETOOLONG.
 */
#define HLOCK_IOC_DESCRIBE	_IOW(HLOCK_IOC_MAGIC, 12, struct hlock_describe_args)

/* Bytes of a lock value block (HLOCK_FEAT_LVB). */
#define HLOCK_LVB_LEN		32

/* Values of hlock_lvb_args.op. */
#define HLOCK_LVB_GET		0	/* copy the published value out */
#define HLOCK_LVB_SET		1	/* give the value to publish */

/**
 * struct hlock_lvb_args - Argument of HLOCK_IOC_LVB.
 * @path: User pointer to the resource path, @path_len bytes, as in
 *	struct hlock_lock_args.
 * @path_len: Length of @path in bytes; 0 names the global root.
 * @op: HLOCK_LVB_GET or HLOCK_LVB_SET.
 * @flags: Must be zero.
 * @__pad: Must be zero.
 * @buf: User pointer to HLOCK_LVB_LEN bytes: filled with the value last
 *	published on the resource (zeros when none was) by HLOCK_LVB_GET,
 *	which needs S, SIX or X held on the path; read by HLOCK_LVB_SET,
 *	which needs SIX or X held and keeps the value pending until that
 *	grant is released or downgraded, which publishes it.
 * @reserved: Must be zero.
 *
 * A resource's lock value block follows DLM's: its PR, PW and EX are
 * hlock's S, SIX and X.  A locker that holds less than the op needs gets
 * EACCES, one that holds nothing on the path ENOENT.  The value lives as
 * long as the resource: once no locker holds or waits on it, it may be
 * lost at any moment, and reads as zeros again.
 */
struct hlock_lvb_args {
	__u64 path;
	__u32 path_len;
	__u32 op;
	__u32 flags;
	__u32 __pad;
	__u64 buf;
	__u64 reserved[2];
};

/* Values of hlock_events_args.events. */
/* A lease of the locker was taken over and its path not unlocked yet. */
#define HLOCK_EVENT_STALE	(1U << 0)
/*
 * A request started to wait on a conflict with a grant of the locker
 * (HLOCK_FEAT_BLOCKING), which asked to be told (HLOCK_EVENTS_F_WANT):
 * each grant says so once, until it is converted or downgraded.  Cleared
 * by HLOCK_IOC_EVENTS.
 */
#define HLOCK_EVENT_BLOCKING	(1U << 1)
/*
 * The locker's cluster lock space lost its cluster: this node's DLM
 * lockspace stayed stopped for longer than the module parameter
 * cluster_grace_ms.  What the locker holds may be held on other nodes
 * too; its lock calls fail with ENOLINK, releases still work.  Stays set.
 */
#define HLOCK_EVENT_LOST	(1U << 2)

/* Flags of struct hlock_events_args. */
/* Set the events the locker asks for to @want first. */
#define HLOCK_EVENTS_F_WANT	(1U << 0)

/**
 * struct hlock_events_args - Argument of HLOCK_IOC_EVENTS: why poll()
 *	reports POLLPRI.
 * @events: Set to the HLOCK_EVENT_* pending; its value on input is
 *	ignored.
 * @flags: 0 or HLOCK_EVENTS_F_WANT.
 * @want: With HLOCK_EVENTS_F_WANT, the events the locker asks for from
 *	now on: 0 or HLOCK_EVENT_BLOCKING (a locker asks for none when it
 *	opens; HLOCK_EVENT_STALE is always on).  Else must be zero.
 * @__pad: Must be zero.
 * @reserved: Must be zero.
 */
struct hlock_events_args {
	__u32 events;
	__u32 flags;
	__u32 want;
	__u32 __pad;
	__u64 reserved[2];
};

/*
 * HLOCK_IOC_LVB: read or set the lock value block of a path.  Errors:
 * ENOENT, EACCES.
 */
#define HLOCK_IOC_LVB		_IOW(HLOCK_IOC_MAGIC, 13, struct hlock_lvb_args)
/*
 * HLOCK_IOC_EVENTS: the HLOCK_EVENT_* that make poll() report POLLPRI;
 * collects HLOCK_EVENT_BLOCKING.
 */
#define HLOCK_IOC_EVENTS	_IOWR(HLOCK_IOC_MAGIC, 14, struct hlock_events_args)
/*
 * HLOCK_IOC_BLOCKING: whether the locker's grant on a path blocks a
 * waiter now (1) or not (0), as HLOCK_REC_BLOCKING.  Errors: ENOENT.
 */
#define HLOCK_IOC_BLOCKING	_IOW(HLOCK_IOC_MAGIC, 15, struct hlock_lock_args)

/* Longest name of a DLM lockspace (HLOCK_IOC_CLUSTER), without its NUL. */
#define HLOCK_CLUSTER_NAME_MAX	64

/* Flags of struct hlock_cluster_args. */
/* Bind the lock space to @name (an empty one: to none); else read. */
#define HLOCK_CLUSTER_F_SET	(1U << 0)

/**
 * struct hlock_cluster_args - Argument of HLOCK_IOC_CLUSTER: the DLM
 *	lockspace the lock space of an IPC namespace is bound to.
 * @name: User pointer to the lockspace's name, @name_len bytes, not
 *	NUL-terminated: letters, digits, '_', '-' and '.'.  Reading, the
 *	name in force is copied there.
 * @name_len: Setting, the length of @name, 0 to bind to no lockspace
 *	(this machine only); more than HLOCK_CLUSTER_NAME_MAX is
 *	ENAMETOOLONG.  Reading, the bytes @name has room for (ERANGE when
 *	too few); set to the length of the name in force, 0 when none.
 * @flags: 0 (read) or HLOCK_CLUSTER_F_SET.
 * @pid: A process of the IPC namespace, as the caller's PID namespace
 *	numbers it; 0 names the caller's own.
 * @__pad: Must be zero.
 * @reserved: Must be zero.
 *
 * Setting, or naming another process, takes CAP_SYS_ADMIN.  A lock space
 * is bound for life: setting it is EBUSY while a locker is open in it.
 * The initial namespace's binding is the module parameter cluster, which
 * this sets too; another's is kept, with its namespace, until it is set
 * to none or the module unloads, and the space joins the lockspace when
 * its first locker opens (that open returns the DLM's error, if any).
 * A lockspace serves one lock space at a time on a node: binding a second
 * one to it is EEXIST when its first locker opens.
 */
struct hlock_cluster_args {
	__u64 name;
	__u32 name_len;
	__u32 flags;
	__s32 pid;
	__u32 __pad;
	__u64 reserved[2];
};

/*
 * HLOCK_IOC_CLUSTER: read or set the DLM lockspace of a lock space
 * (HLOCK_FEAT_CLUSTER_BIND).  Errors: EPERM, ESRCH, EBUSY, ENAMETOOLONG,
 * ERANGE, ENOPROTOOPT (the kernel's DLM is not loaded), ENOTCONN (binding
 * the initial namespace, which joins at once, while this node is not
 * configured in a cluster), EAGAIN (dlm_controld not ready, or a join
 * refused a moment ago), the DLM's when that join fails otherwise.
 */
#define HLOCK_IOC_CLUSTER	_IOWR(HLOCK_IOC_MAGIC, 16, struct hlock_cluster_args)

/* Flags of struct hlock_owner_args. */
/* The locker's locks end with the process that set this. */
#define HLOCK_OWNER_PROCESS	(1U << 0)

/**
 * struct hlock_owner_args - Argument of HLOCK_IOC_OWNER: who a locker's
 *	locks belong to.
 * @flags: 0, the default: to the open file, released at its last close
 *	(a descriptor in any process, a ring's request or registered file
 *	keeps them); or HLOCK_OWNER_PROCESS: to the calling process, released
 *	when it exits (its descriptor table's close of the locker at exit)
 *	even while other references keep the file open.
 * @reserved: Must be zero.
 *
 * A locker shared by fork() or SCM_RIGHTS has one owner: the process that
 * set HLOCK_OWNER_PROCESS last.  The others use the locker as before; their
 * exits release nothing.  Once the owner's exit released the locks, the
 * locker is owned by its file again.
 */
struct hlock_owner_args {
	__u32 flags;
	__u32 reserved;
};

/*
 * HLOCK_IOC_OWNER: set who the locker's locks belong to
 * (HLOCK_FEAT_OWNER).  Errors: EINVAL.
 */
#define HLOCK_IOC_OWNER		_IOW(HLOCK_IOC_MAGIC, 17, struct hlock_owner_args)

/**
 * struct hlock_refuse_args - Argument of HLOCK_IOC_REFUSE: a wait that a
 *	deadlock search made outside the module found on a cycle.
 * @serial: The locker's serial, as its lock records gave it
 *	(struct hlock_record_ids).
 * @locker: Its number.
 * @wait_seq: Its wait_seq then: no other wait of it is refused.
 * @hold_seq: Its hold_seq then: nor one whose locker lowered or released
 *	a lock since.
 * @flags: Must be zero.
 * @reserved: Must be zero.
 */
struct hlock_refuse_args {
	__u64 serial;
	__u32 locker;
	__u32 wait_seq;
	__u32 hold_seq;
	__u32 flags;
	__u64 reserved[2];
};

/*
 * HLOCK_IOC_REFUSE: fail the waiting lock call of a locker of the caller's
 * lock space with EDEADLK, as the deadlock search does: the locker is left
 * as before that call, but for a yield's re-acquisition, which fails the
 * yield holding nothing (HLOCK_FEAT_REFUSE).  Takes CAP_SYS_ADMIN in the
 * user namespace of the lock space's IPC namespace.  Errors: EPERM,
 * EINVAL, ESRCH (no such locker), ESTALE (it is not in that wait any more,
 * lowered or released a lock since, or the wait is a try-lock's).
 */
#define HLOCK_IOC_REFUSE	_IOW(HLOCK_IOC_MAGIC, 18, struct hlock_refuse_args)

#endif /* _UAPI_LINUX_HLOCK_H */
