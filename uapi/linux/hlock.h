/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * hlock: hierarchical (multi-granularity) locks for userspace through
 * /dev/hlock.
 *
 * A resource is a path: "" is the global root, "db" a database, "db/coll"
 * a collection, up to HLOCK_MAX_DEPTH levels below the root.  Locking a
 * path in S or X takes an intent lock (IS or IX) on every ancestor first.
 * Each open file description of /dev/hlock is one locker; closing it
 * releases everything it holds and cancels what it waits for.
 *
 * All times are nanoseconds on CLOCK_MONOTONIC.
 */
#ifndef _UAPI_LINUX_HLOCK_H
#define _UAPI_LINUX_HLOCK_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* The ABI version reported by HLOCK_IOC_GET_INFO. */
#define HLOCK_ABI_VERSION	1

/* Lock modes (Gray's multi-granularity modes). */
#define HLOCK_NL	0	/* no lock */
#define HLOCK_IS	1	/* intent shared */
#define HLOCK_IX	2	/* intent exclusive */
#define HLOCK_S		3	/* shared */
#define HLOCK_SIX	4	/* shared with intent exclusive */
#define HLOCK_X		5	/* exclusive */
#define HLOCK_NR_MODES	6

/* Flags of struct hlock_lock_args. */
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
	__u64 reserved[2];
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
 * @reserved: Zero; room for later fields.
 */
struct hlock_info {
	__u32 abi_version;
	__u32 max_depth;
	__u32 name_max;
	__u32 path_max;
	__u32 flags;
	__u32 grant_policy;
	__u64 reserved[4];
};

#define HLOCK_IOC_MAGIC		0xB7

/*
 * HLOCK_IOC_LOCK: lock a path, with intents on its ancestors.  Returns 0
 * when granted, or -1 with errno: EINPROGRESS (queued, HLOCK_F_ASYNC),
 * EAGAIN, ETIMEDOUT, EINTR, EBUSY (a request is pending or uncollected),
 * EINVAL, ENAMETOOLONG, EFAULT, ENOMEM.
 */
#define HLOCK_IOC_LOCK		_IOW(HLOCK_IOC_MAGIC, 1, struct hlock_lock_args)
/*
 * HLOCK_IOC_UNLOCK: release one acquisition made on a path and the
 * intents it took, or cancel the request queued (HLOCK_F_ASYNC) on it,
 * also once granted but not yet collected: the locker is then as before
 * that lock call.  Returns how many acquisitions made on the path remain,
 * or -1 with errno ENOENT when neither held nor pending, EBUSY when the
 * path is an ancestor of the request in flight.
 *
 * The mode held never weakens on unlock: while a descendant still holds
 * an intent here, the request stays in its mode (as MongoDB keeps it)
 * until the descendant is unlocked or HLOCK_IOC_DOWNGRADE lowers it.
 */
#define HLOCK_IOC_UNLOCK	_IOW(HLOCK_IOC_MAGIC, 2, struct hlock_lock_args)
/*
 * HLOCK_IOC_DOWNGRADE: lower the mode held on a path, also one held only
 * as an intent for descendants, to a mode the held one covers and that
 * covers the intent the locker's descendants need.  Returns 0, or -1 with
 * errno EINVAL, ENOENT (nothing held), EBUSY (on the path of the request
 * in flight).
 */
#define HLOCK_IOC_DOWNGRADE	_IOW(HLOCK_IOC_MAGIC, 3, struct hlock_lock_args)
/* HLOCK_IOC_HELD: returns the mode this locker holds on a path. */
#define HLOCK_IOC_HELD		_IOW(HLOCK_IOC_MAGIC, 4, struct hlock_lock_args)
/*
 * HLOCK_IOC_WAIT: wait for the request queued with HLOCK_F_ASYNC and
 * collect its grant.  Returns 0, or -1 with errno EAGAIN, ETIMEDOUT, EINTR
 * (the request stays queued), ENOENT (no request is pending), EBUSY (the
 * slot belongs to another thread's blocking HLOCK_IOC_LOCK).
 */
#define HLOCK_IOC_WAIT		_IOW(HLOCK_IOC_MAGIC, 5, struct hlock_wait_args)
/* HLOCK_IOC_GET_INFO: fill struct hlock_info. */
#define HLOCK_IOC_GET_INFO	_IOR(HLOCK_IOC_MAGIC, 6, struct hlock_info)

#endif /* _UAPI_LINUX_HLOCK_H */
