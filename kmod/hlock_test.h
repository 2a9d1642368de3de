/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock: windows a test can hold open, in the test build only.
 *
 * make ko (the module make check's VMs load) builds hlock with
 * CONFIG_HLOCK_TEST=y; the module users load (make, DKMS, the packages)
 * has none of this: hl_test_stall() is then an empty inline.
 *
 * A stall point is a place where a race window opens: between a look made
 * without a lock and the lock under which it must be made again.  A test
 * arms one point for one resource name through
 * /sys/kernel/debug/hlock/test_stall, waits until the point stalls, does
 * what the window allows, and lets it go (see hlock_test.c).
 */
#ifndef _HLOCK_TEST_H
#define _HLOCK_TEST_H

struct dentry;

/* Stall points. */
enum hl_test_point {
	/* hl_res_reclaim(): the children count read, the head not locked. */
	HL_TP_RECLAIM,
	/*
	 * hl_lease_work(): queued (a lease expired or was claimed), the
	 * locker lock not taken yet; the name is the command name of the
	 * locker's last lock call.
	 */
	HL_TP_LEASE_WORK,
	/*
	 * hl_lock_call(): a blocking call that waits dropped the locker's
	 * lock and has not begun to sleep; named by its path's last
	 * component.
	 */
	HL_TP_WAIT,
	/*
	 * hl_snap_req(): the lock table's record of a request made, the
	 * walk of the other lockers still to come; named by the request's
	 * resource.  Its locker's lock is held.
	 */
	HL_TP_TABLE,
	/*
	 * hl_clk_work(): a blocking AST is noted (hl_clk's basts), the head
	 * not locked yet, so not taken in.
	 */
	HL_TP_BAST,
	/*
	 * hl_clk_ast(): the answer noted (hl_clk's done), the work not
	 * queued yet.
	 */
	HL_TP_AST,
	/*
	 * hl_file_release_all(): a batch of releases done, the locker lock
	 * dropped, the next batch to come; the name is the command name of
	 * the locker's last lock call.
	 */
	HL_TP_RELEASE,
	/*
	 * hl_file_release(): a locker closes, nothing withdrawn or
	 * released yet, its lock not taken; the name is the command name
	 * of the locker's last lock call.
	 */
	HL_TP_CLOSE,
	HL_TP_NR,
};

#ifdef HLOCK_TEST
void hl_test_stall(enum hl_test_point tp, const char *name, unsigned int len);
void hl_test_stall_path(enum hl_test_point tp, const char *path,
			unsigned int len);
bool hl_test_dlm_failed(void);
void hl_test_debugfs(struct dentry *dir);
#else
static inline void hl_test_stall(enum hl_test_point tp, const char *name,
				 unsigned int len)
{
}

static inline void hl_test_stall_path(enum hl_test_point tp,
				      const char *path, unsigned int len)
{
}

/* Whether a test asked for this DLM request to fail (test_dlm_fail). */
static inline bool hl_test_dlm_failed(void)
{
	return false;
}

static inline void hl_test_debugfs(struct dentry *dir)
{
}
#endif

#endif /* _HLOCK_TEST_H */
