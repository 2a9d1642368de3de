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
	 * hl_clk_work(): a blocking AST is noted (hl_clk's basts), the head
	 * not locked yet, so not taken in.
	 */
	HL_TP_BAST,
	/*
	 * hl_clk_ast(): the answer noted (hl_clk's done), the work not
	 * queued yet.
	 */
	HL_TP_AST,
	HL_TP_NR,
};

#ifdef HLOCK_TEST
void hl_test_stall(enum hl_test_point tp, const char *name, unsigned int len);
void hl_test_debugfs(struct dentry *dir);
#else
static inline void hl_test_stall(enum hl_test_point tp, const char *name,
				 unsigned int len)
{
}

static inline void hl_test_debugfs(struct dentry *dir)
{
}
#endif

#endif /* _HLOCK_TEST_H */
