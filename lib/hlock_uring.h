/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libhlock over io_uring: SQE helpers for hlock's lock, unlock and
 * downgrade, in the manner of liburing's io_uring_prep_*().
 *
 *	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
 *
 *	hlock_prep_lock(sqe, fd, "db/coll", HLOCK_X, 0, -1);
 *	io_uring_sqe_set_data64(sqe, session);
 *	io_uring_submit(&ring);
 *
 * The CQE's res is what hlock_lock(), hlock_unlock() or hlock_downgrade()
 * would return, and -ECANCELED for a waiting lock withdrawn by an unlock
 * of its path, the ring's teardown (its last close, as when its process
 * exits) or its submitter's exec.  A lock that waits completes when it is
 * granted or times out.  The path is read when the SQE is issued: in
 * io_uring_submit() on a plain ring, later on an SQPOLL ring or with
 * IOSQE_ASYNC, so keep it valid until the CQE comes.  In a link
 * (IOSQE_IO_LINK), set IOSQE_ASYNC on the hlock SQEs too: some kernels
 * (6.12.117) read a linked command's SQE when it is issued, from an SQ
 * slot that may have been reused by then, unless IOSQE_ASYNC made them
 * copy it at submission.
 *
 * Any ring works, e.g. io_uring_queue_init(entries, &ring, 0).  Whether
 * the running module supports them: hlock_info() sets HLOCK_FEAT_URING in
 * hlock_info.features.  Needs liburing (2.3 or later).
 */
#ifndef LIBHLOCK_URING_H
#define LIBHLOCK_URING_H

#include <stdint.h>
#include <liburing.h>
#include <linux/hlock.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Fill @sqe with a hlock command: io_uring_prep_rw() sets the opcode and
 * @fd and zeroes the other fields but user_data, zeroed here too; then
 * the command number and its 16 command bytes (sqe->cmd, where addr3 and
 * the pad after it lie).
 */
static inline void hlock_prep_cmd(struct io_uring_sqe *sqe, int fd,
				  unsigned int cmd, const char *path, int mode,
				  unsigned int flags, int64_t timeout_ns)
{
	/* What does not fit is made invalid: the CQE says -EINVAL. */
	if (mode < 0 || mode > (int)HLOCK_URING_MODE_MASK)
		mode = (int)HLOCK_URING_MODE_MASK;
	if (flags > HLOCK_URING_FLAGS_MASK)
		flags = HLOCK_URING_FLAGS_MASK;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->user_data = 0;
	/* After prep_rw, which zeroes off: cmd_op is its low half. */
	sqe->cmd_op = cmd;
	sqe->addr3 = (uint64_t)(uintptr_t)path;
	sqe->__pad2[0] = HLOCK_URING_OP(mode, flags, timeout_ns);
}

/*
 * hlock_lock() as an SQE.  A timeout beyond HLOCK_URING_TIMEOUT_MAX
 * (about 39 hours) waits forever.
 */
static inline void hlock_prep_lock(struct io_uring_sqe *sqe, int fd,
				   const char *path, int mode,
				   unsigned int flags, int64_t timeout_ns)
{
	if (timeout_ns < 0 || timeout_ns > HLOCK_URING_TIMEOUT_MAX)
		timeout_ns = -1;
	hlock_prep_cmd(sqe, fd, HLOCK_IOC_LOCK, path, mode, flags,
		       timeout_ns);
}

/* hlock_unlock() as an SQE; the CQE's res is the acquisitions left. */
static inline void hlock_prep_unlock(struct io_uring_sqe *sqe, int fd,
				     const char *path)
{
	hlock_prep_cmd(sqe, fd, HLOCK_IOC_UNLOCK, path, 0, 0, 0);
}

/* hlock_downgrade() as an SQE. */
static inline void hlock_prep_downgrade(struct io_uring_sqe *sqe, int fd,
					const char *path, int mode)
{
	hlock_prep_cmd(sqe, fd, HLOCK_IOC_DOWNGRADE, path, mode, 0, 0);
}

#ifdef __cplusplus
}
#endif

#endif /* LIBHLOCK_URING_H */
