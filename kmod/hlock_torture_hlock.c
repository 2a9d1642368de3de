// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_torture: the hlock lock type, through the in-kernel API, and the
 * checks only hlock can answer.
 *
 * Each thread has a locker of its own, made in the thread so that the lock
 * table names it.  Besides the shadow counts of the generic loop it checks,
 * on a sample of holds (HLT_CHECK_EVERY), that hlock says the thread holds
 * what it thinks it holds, that every ancestor carries an intent that
 * covers the leaf's mode, and that hlock's own count of granted requests on
 * each of those resources has the thread's mode and nothing that conflicts
 * with it; at quiet points, that nothing is granted on any resource of the
 * torture.
 *
 * Bypasses: an asynchronous request that was queued (-EINPROGRESS) stamps
 * itself from its leaf's clock once the call returned and publishes the
 * stamp in its thread's slot.  Every lock call stamps the leaf's clock
 * before it begins.  A thread granted a new request whose mode conflicts
 * with a published waiter's, and whose own stamp is later, was let in past
 * that waiter: one bypass for it.  The waiter was queued before the later
 * call began and still waits (it clears its slot before it withdraws or
 * holds anything), so under fifo, where a new request never passes a
 * conflicting waiter, any bypass is a breach; under batch it is reported.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/string.h>

#include "hlock_torture.h"

/* A thread's slot: its queued request's mode (0: none), leaf, stamp. */
#define HLT_WSLOT_MODE		GENMASK_ULL(2, 0)
#define HLT_WSLOT_LEAF		GENMASK_ULL(14, 3)
/* How many times later requests passed it, up to the field's maximum. */
#define HLT_WSLOT_BYPASS	GENMASK_ULL(22, 15)
/* The low bits of the stamp; they wrap after 2^41 calls on one leaf. */
#define HLT_WSLOT_STAMP		GENMASK_ULL(63, 23)
#define HLT_STAMP_MAX		FIELD_MAX(HLT_WSLOT_STAMP)
#define HLT_BYPASS_MAX		FIELD_MAX(HLT_WSLOT_BYPASS)

/* 1 in this many queued requests is withdrawn after a short wait. */
#define HLT_CANCEL_EVERY	8
#define HLT_CANCEL_US		20
/* Conversions: a try, a wait of up to this long, or as long as it takes. */
#define HLT_CONVERT_TIMEOUT_NS	NSEC_PER_MSEC
#define HLT_CONVERT_CHOICES	4

/* How a blocking call sleeps: each kind in turn, at random. */
static const unsigned int hlt_sleep_flags[] = {
	0, HLOCK_KF_KILLABLE, HLOCK_KF_UNINTERRUPTIBLE,
};

/* The intent a mode on a leaf needs on every ancestor. */
static unsigned int hlt_intent(unsigned int mode)
{
	return mode == HLOCK_IS || mode == HLOCK_S ? HLOCK_IS : HLOCK_IX;
}

/* A new locker of the initial lock space in @lk, or NULL and an error. */
static int hlt_locker_new(struct hlock_locker **lk)
{
	*lk = hlock_locker_create(NULL);
	if (IS_ERR(*lk)) {
		int ret = PTR_ERR(*lk);

		*lk = NULL;
		return ret;
	}
	return 0;
}

static int hlt_hlock_setup(struct hlt_run *run)
{
	run->fifo = hlock_kernel_grant_policy() == HLOCK_POLICY_FIFO;
	/* The controller's, for the quiet checks. */
	return hlt_locker_new(&run->lk);
}

static void hlt_hlock_teardown(struct hlt_run *run)
{
	hlock_locker_destroy(run->lk);
}

static int hlt_hlock_thread_init(struct hlt_thread *t)
{
	init_completion(&t->done);
	atomic64_set(&t->wslot, 0);
	return hlt_locker_new(&t->lk);
}

static void hlt_hlock_thread_exit(struct hlt_thread *t)
{
	hlock_locker_destroy(t->lk);
	t->lk = NULL;
}

/*
 * Whether @op, just granted, passed the request @u has queued, asked for
 * before @op's call began with a mode that conflicts; if so, count it in
 * @u's slot and set @seen to the slot as it was.
 */
static bool hlt_bypassed(struct hlt_thread *u, const struct hlt_op *op,
			 s64 *seen)
{
	u64 mine = op->start & HLT_STAMP_MAX;
	s64 v = atomic64_read(&u->wslot);

	do {
		if (!FIELD_GET(HLT_WSLOT_MODE, v) ||
		    FIELD_GET(HLT_WSLOT_LEAF, v) != op->leaf->idx ||
		    !hlt_conflicts(op->mode, FIELD_GET(HLT_WSLOT_MODE, v)) ||
		    FIELD_GET(HLT_WSLOT_STAMP, v) >= mine)
			return false;
		if (FIELD_GET(HLT_WSLOT_BYPASS, v) == HLT_BYPASS_MAX)
			break;
	} while (!atomic64_try_cmpxchg(&u->wslot, &v,
				       v + FIELD_PREP(HLT_WSLOT_BYPASS, 1)));
	*seen = v;
	return true;
}

/* @t was granted @op's first acquisition: whom did it pass? */
static void hlt_bypass_scan(struct hlt_thread *t, struct hlt_op *op)
{
	struct hlt_run *run = t->run;
	unsigned int i;
	s64 v;

	if (!atomic_read(&op->leaf->waiters))
		return;
	for (i = 0; i < run->nthreads; i++) {
		if (&run->threads[i] == t || !hlt_bypassed(&run->threads[i], op, &v))
			continue;
		if (run->fifo)
			HLT_BREACH(run, "hlock: fifo: %s on %s (at %llu) passed %s queued at %llu",
				   hlt_mode_names[op->mode], op->leaf->path,
				   op->start & HLT_STAMP_MAX,
				   hlt_mode_names[FIELD_GET(HLT_WSLOT_MODE, v)],
				   (u64)FIELD_GET(HLT_WSLOT_STAMP, v));
	}
}

static void hlt_hlock_done(struct hlock_locker *lk, int res, void *data)
{
	struct hlt_thread *t = data;

	t->done_res = res;
	complete(&t->done);
}

/* Withdraw the published request: it waits no longer, as far as others see. */
static unsigned int hlt_slot_clear(struct hlt_thread *t, struct hlt_leaf *leaf)
{
	s64 v = atomic64_xchg(&t->wslot, 0);

	atomic_dec(&leaf->waiters);
	return FIELD_GET(HLT_WSLOT_BYPASS, v);
}

/*
 * Queue the first acquisition and wait for its completion; now and then
 * withdraw it instead (an unlock of its path).
 */
static int hlt_hlock_async(struct hlt_thread *t, struct hlt_op *op)
{
	struct hlt_leaf *leaf = op->leaf;
	unsigned int passed;
	u64 stamp;
	int ret;

	reinit_completion(&t->done);
	/* Before the call: a later caller that passes it must see it. */
	atomic_inc(&leaf->waiters);
	ret = hlock_kernel_lock_async(t->lk, leaf->path, op->mode, 0,
				      hlt_hlock_done, t);
	if (ret != -EINPROGRESS) {
		atomic_dec(&leaf->waiters);
		return ret;
	}
	hlt_add(&t->st.queued, 1);
	stamp = atomic64_inc_return(&leaf->clock) & HLT_STAMP_MAX;
	atomic64_set(&t->wslot, FIELD_PREP(HLT_WSLOT_MODE, op->mode) |
				FIELD_PREP(HLT_WSLOT_LEAF, leaf->idx) |
				FIELD_PREP(HLT_WSLOT_STAMP, stamp));
	if (!hlt_rand(t, HLT_CANCEL_EVERY)) {
		usleep_range(HLT_CANCEL_US, 2 * HLT_CANCEL_US);
		passed = hlt_slot_clear(t, leaf);
		/* Withdraws it, or releases it if it was granted meanwhile. */
		ret = hlock_kernel_unlock(t->lk, leaf->path);
		wait_for_completion(&t->done);
		if (ret < 0)
			HLT_BREACH(t->run, "hlock: withdrawing %s on %s: %d",
				   hlt_mode_names[op->mode], leaf->path, ret);
		ret = -ECANCELED;
	} else {
		wait_for_completion(&t->done);
		passed = hlt_slot_clear(t, leaf);
		ret = t->done_res;
	}
	if (passed) {
		hlt_add(&t->st.bypasses, passed);
		hlt_stats_max(&t->st.bypass_max, passed);
	}
	return ret;
}

static int hlt_hlock_lock(struct hlt_thread *t, struct hlt_op *op)
{
	const char *path = op->leaf->path;
	unsigned int flags;
	int ret;

	op->start = atomic64_inc_return(&op->leaf->clock);
	switch (op->kind) {
	case HLT_ASYNC:
		ret = hlt_hlock_async(t, op);
		break;
	case HLT_TIMED:
		ret = hlock_kernel_lock(t->lk, path, op->mode, 0,
					op->timeout_ns);
		break;
	default:
		flags = hlt_sleep_flags[hlt_rand(t, ARRAY_SIZE(hlt_sleep_flags))];
		ret = hlock_kernel_lock(t->lk, path, op->mode, flags, -1);
		break;
	}
	if (!ret)
		hlt_bypass_scan(t, op);
	return ret;
}

static int hlt_hlock_convert(struct hlt_thread *t, struct hlt_op *op,
			     unsigned int mode)
{
	s64 timeout;

	switch (hlt_rand(t, HLT_CONVERT_CHOICES)) {
	case 0:
		timeout = 0;
		break;
	case 1:
		timeout = -1;
		break;
	default:
		timeout = HLT_CONVERT_TIMEOUT_NS;
		break;
	}
	return hlock_kernel_lock(t->lk, op->leaf->path, mode, 0, timeout);
}

static int hlt_hlock_downgrade(struct hlt_thread *t, struct hlt_op *op,
			       unsigned int mode)
{
	return hlock_kernel_downgrade(t->lk, op->leaf->path, mode);
}

static void hlt_hlock_unlock(struct hlt_thread *t, struct hlt_op *op,
			     bool last)
{
	int ret = hlock_kernel_unlock(t->lk, op->leaf->path);
	bool gone = ret == HLOCK_NL;

	if (ret < 0 || gone != last)
		HLT_BREACH(t->run, "hlock: unlock %s (%s, %u acquisitions) returned %d",
			   op->leaf->path, hlt_mode_names[op->held], op->nacq,
			   ret);
}

/*
 * hlock's count of granted requests on @path, where the thread holds
 * @mine: at least its own, and no mode that conflicts with it.
 */
static void hlt_granted_check(struct hlt_thread *t, const char *path,
			      unsigned int mine)
{
	unsigned int counts[HLOCK_NR_MODES], c;
	int ret, n;

	ret = hlock_kernel_granted(t->lk, path, counts);
	if (ret) {
		HLT_BREACH(t->run, "hlock: granted on \"%s\": %d", path, ret);
		return;
	}
	if (!counts[mine])
		HLT_BREACH(t->run, "hlock: holding %s on \"%s\", but hlock counts no %s granted",
			   hlt_mode_names[mine], path, hlt_mode_names[mine]);
	for (c = HLOCK_IS; c < HLOCK_NR_MODES; c++) {
		n = counts[c] - (c == mine);
		if (hlt_conflicts(mine, c) && n > 0)
			HLT_BREACH(t->run, "hlock: holding %s on \"%s\": %d other %s granted",
				   hlt_mode_names[mine], path, n,
				   hlt_mode_names[c]);
	}
}

/* While holding @op: hlock's account agrees, on the leaf and above. */
static void hlt_hlock_check(struct hlt_thread *t, struct hlt_op *op)
{
	struct hlt_leaf *leaf = op->leaf;
	unsigned int intent = hlt_intent(op->held), l, len;
	int held;

	held = hlock_kernel_held(t->lk, leaf->path);
	if (held != op->held)
		HLT_BREACH(t->run, "hlock: holding %s on %s, hlock says %d",
			   hlt_mode_names[op->held], leaf->path, held);
	hlt_granted_check(t, leaf->path, op->held);
	/* The root, then each level above the leaf. */
	for (l = 0; l < t->run->depth; l++) {
		len = l ? leaf->ends[l - 1] : 0;
		memcpy(t->prefix, leaf->path, len);
		t->prefix[len] = '\0';
		held = hlock_kernel_held(t->lk, t->prefix);
		if (held < 0 || !hlt_covers(held, intent)) {
			HLT_BREACH(t->run, "hlock: holding %s on %s, but %d on its ancestor \"%s\"",
				   hlt_mode_names[op->held], leaf->path, held,
				   t->prefix);
			continue;
		}
		hlt_granted_check(t, t->prefix, held);
	}
}

/* No thread holds anything: nothing is granted on the torture's paths. */
static void hlt_hlock_quiet_check(struct hlt_run *run)
{
	unsigned int counts[HLOCK_NR_MODES], i, l, m;
	struct hlt_leaf *leaf;
	char path[HLT_PATH_LEN];

	for (i = 0; i < run->nres; i++) {
		leaf = &run->leaves[i];
		/* Each level from the first: the root may be others'. */
		for (l = 0; l < run->depth; l++) {
			memcpy(path, leaf->path, leaf->ends[l]);
			path[leaf->ends[l]] = '\0';
			if (hlock_kernel_granted(run->lk, path, counts)) {
				HLT_BREACH(run, "hlock: granted on %s failed",
					   path);
				continue;
			}
			for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++)
				if (counts[m])
					HLT_BREACH(run, "hlock: %u %s granted on %s when quiet",
						   counts[m],
						   hlt_mode_names[m], path);
		}
	}
}

const struct hlt_type hlt_hlock_type = {
	.name = "hlock",
	.setup = hlt_hlock_setup,
	.teardown = hlt_hlock_teardown,
	.thread_init = hlt_hlock_thread_init,
	.thread_exit = hlt_hlock_thread_exit,
	.lock = hlt_hlock_lock,
	.convert = hlt_hlock_convert,
	.downgrade = hlt_hlock_downgrade,
	.unlock = hlt_hlock_unlock,
	.check = hlt_hlock_check,
	.quiet_check = hlt_hlock_quiet_check,
};
