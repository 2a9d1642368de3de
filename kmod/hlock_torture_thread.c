// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_torture: the threads' operations, and the rules they are checked
 * against.
 *
 * Each thread loops over operations: a leaf (skewed: low indexes are hot),
 * a mode from the mix, a first acquisition that blocks, is timed or tried,
 * or (hlock) is queued; a short hold, now and then a long one; now and then
 * a conversion or recursion and a downgrade; the release.  Around every
 * grant and release it keeps a shadow count per leaf and mode and checks
 * that no conflicting mode is counted; on a sample of holds the lock type
 * checks the lock manager's own account too (hlock_torture_hlock.c).
 * Between operations it parks when the controller asks, and ends when the
 * run stops.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "hlock_torture.h"

/* 1 in this many holds sleeps, so that others queue behind it. */
#define HLT_LONG_HOLD_EVERY	32
#define HLT_LONG_HOLD_US	50
/* Other holds spin up to this long. */
#define HLT_SHORT_HOLD_NS	1000
/*
 * 1 in this many holds checks the lock manager's own account: about 2
 * calls per level, so that the checks cost hlock's rate a few percent.
 */
#define HLT_CHECK_EVERY		32
/* Timed first acquisitions: half are tries, half wait up to this long. */
#define HLT_TIMEOUT_MAX_NS	(2 * NSEC_PER_MSEC)

const char *const hlt_mode_names[HLOCK_NR_MODES] = {
	[HLOCK_NL] = "NL",
	[HLOCK_IS] = "IS",
	[HLOCK_IX] = "IX",
	[HLOCK_S] = "S",
	[HLOCK_SIX] = "SIX",
	[HLOCK_X] = "X",
};

/*
 * The rules the checks hold hlock to are the torture's own, written apart
 * from hlock_core.c's tables: a mistake there must not be checked against
 * itself.
 */
#define M(m)	BIT(HLOCK_##m)
/* Gray's compatibility matrix: the modes each mode conflicts with. */
static const u8 hlt_conflict_mask[HLOCK_NR_MODES] = {
	[HLOCK_IS] = M(X),
	[HLOCK_IX] = M(S) | M(SIX) | M(X),
	[HLOCK_S] = M(IX) | M(SIX) | M(X),
	[HLOCK_SIX] = M(IX) | M(S) | M(SIX) | M(X),
	[HLOCK_X] = M(IS) | M(IX) | M(S) | M(SIX) | M(X),
};

/* The modes each mode covers: IS < IX < SIX < X and IS < S < SIX. */
static const u8 hlt_cover_mask[HLOCK_NR_MODES] = {
	[HLOCK_NL] = M(NL),
	[HLOCK_IS] = M(NL) | M(IS),
	[HLOCK_IX] = M(NL) | M(IS) | M(IX),
	[HLOCK_S] = M(NL) | M(IS) | M(S),
	[HLOCK_SIX] = M(NL) | M(IS) | M(IX) | M(S) | M(SIX),
	[HLOCK_X] = M(NL) | M(IS) | M(IX) | M(S) | M(SIX) | M(X),
};

#undef M

/**
 * hlt_conflicts() - Whether two modes conflict.
 * @a: A mode.
 * @b: Another.
 *
 * Return: true when a request in @a and one in @b of another locker can
 * never both be granted on one resource.
 */
bool hlt_conflicts(unsigned int a, unsigned int b)
{
	return hlt_conflict_mask[a] & BIT(b);
}

/**
 * hlt_covers() - Whether a mode covers another.
 * @held: The mode held.
 * @mode: The mode asked about.
 *
 * Return: true when holding @held grants at least what @mode would.
 */
bool hlt_covers(unsigned int held, unsigned int mode)
{
	return hlt_cover_mask[held] & BIT(mode);
}

/**
 * hlt_sup() - The weakest mode that covers two modes.
 * @a: A mode.
 * @b: Another.
 *
 * The modes' numbers order the lattice, so the first one that covers both
 * is the supremum (S and IX give SIX).
 *
 * Return: the mode.
 */
unsigned int hlt_sup(unsigned int a, unsigned int b)
{
	unsigned int m;

	for (m = HLOCK_IS; m < HLOCK_X; m++)
		if (hlt_covers(m, a) && hlt_covers(m, b))
			return m;
	return HLOCK_X;
}

/**
 * hlt_mode_parse() - A mode by its name.
 * @name: "IS", "IX", "S", "SIX" or "X", in any case.
 *
 * Return: the mode, or -EINVAL.
 */
int hlt_mode_parse(const char *name)
{
	unsigned int m;

	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++)
		if (!strcasecmp(name, hlt_mode_names[m]))
			return m;
	return -EINVAL;
}

/**
 * hlt_rand() - A random number of a thread's own.
 * @t: The thread.
 * @n: The bound; not 0.
 *
 * Context: the thread @t.
 * Return: a number below @n.
 */
u32 hlt_rand(struct hlt_thread *t, u32 n)
{
	return prandom_u32_state(&t->rnd) % n;
}

/* Hot to cold: leaf i with a weight of about ln(nres / i). */
static struct hlt_leaf *hlt_pick_leaf(struct hlt_thread *t)
{
	u32 r = hlt_rand(t, t->run->nres);

	return &t->run->leaves[hlt_rand(t, r + 1)];
}

static unsigned int hlt_pick_mode(struct hlt_thread *t)
{
	u32 r = hlt_rand(t, hlt_mix.weight_sum);
	unsigned int m;

	for (m = HLOCK_IS; m < HLOCK_X; m++) {
		if (r < hlt_mix.weights[m])
			return m;
		r -= hlt_mix.weights[m];
	}
	return HLOCK_X;
}

static void hlt_pick_kind(struct hlt_thread *t, struct hlt_op *op)
{
	u32 r = hlt_rand(t, HLT_PERCENT);

	if (r < hlt_mix.async) {
		op->kind = HLT_ASYNC;
	} else if (r < hlt_mix.async + hlt_mix.timeouts) {
		op->kind = HLT_TIMED;
		op->timeout_ns = hlt_rand(t, 2) ?
				 hlt_rand(t, HLT_TIMEOUT_MAX_NS) + 1 : 0;
	} else {
		op->kind = HLT_BLOCK;
	}
}

static unsigned int hlt_held_as(struct hlt_thread *t, unsigned int mode)
{
	const struct hlt_type *type = t->run->type;

	return type->held_as ? type->held_as(mode) : mode;
}

/*
 * Count @mode held on the leaf, then check that no other thread counts a
 * mode that conflicts with it.  @also is what this thread counts there
 * already (HLOCK_NL for nothing): a conversion or a downgrade counts the
 * new mode before it drops the old.
 */
static void hlt_shadow_get(struct hlt_thread *t, struct hlt_op *op,
			   unsigned int mode, unsigned int also)
{
	struct hlt_leaf *leaf = op->leaf;
	unsigned int c;
	int n;

	atomic_inc(&leaf->shadow[mode]);
	/* Counted before the others' counts are read: see hlt_shadow_put(). */
	smp_mb__after_atomic();
	for (c = HLOCK_IS; c < HLOCK_NR_MODES; c++) {
		if (!hlt_conflicts(mode, c))
			continue;
		n = atomic_read(&leaf->shadow[c]) - (c == mode) - (c == also);
		if (n > 0)
			HLT_BREACH(t->run,
				   "%s: %s granted on %s while %d other thread(s) hold %s",
				   t->run->type->name, hlt_mode_names[mode],
				   leaf->path, n, hlt_mode_names[c]);
	}
}

/* Stop counting @mode, before it is released. */
static void hlt_shadow_put(struct hlt_op *op, unsigned int mode)
{
	/* After everything done while holding it... */
	smp_mb__before_atomic();
	atomic_dec(&op->leaf->shadow[mode]);
	/* ...and before the release: whoever gets in next sees it gone. */
	smp_mb__after_atomic();
}

/* Count a call that was not granted; anything unexpected is a breach. */
static void hlt_not_granted(struct hlt_thread *t, struct hlt_op *op,
			    const char *what, int ret)
{
	switch (ret) {
	case -EAGAIN:
		hlt_add(&t->st.busy, 1);
		break;
	case -ETIMEDOUT:
		hlt_add(&t->st.timeouts, 1);
		break;
	case -EDEADLK:
		hlt_add(&t->st.deadlocks, 1);
		break;
	case -ECANCELED:
		hlt_add(&t->st.cancels, 1);
		break;
	default:
		HLT_BREACH(t->run, "%s: %s %s on %s: unexpected %d",
			   t->run->type->name, what, hlt_mode_names[op->mode],
			   op->leaf->path, ret);
	}
}

static void hlt_hold(struct hlt_thread *t)
{
	if (!hlt_rand(t, HLT_LONG_HOLD_EVERY))
		usleep_range(HLT_LONG_HOLD_US, 2 * HLT_LONG_HOLD_US);
	else
		ndelay(hlt_rand(t, HLT_SHORT_HOLD_NS));
}

static void hlt_check(struct hlt_thread *t, struct hlt_op *op)
{
	if (t->run->type->check && !hlt_rand(t, HLT_CHECK_EVERY)) {
		t->run->type->check(t, op);
		hlt_add(&t->st.checks, 1);
	}
}

/* Lock the leaf again: a conversion to the supremum, or a recursion. */
static void hlt_convert(struct hlt_thread *t, struct hlt_op *op)
{
	unsigned int want = hlt_pick_mode(t), old = op->held;
	unsigned int now = hlt_held_as(t, hlt_sup(old, want));
	u64 t0 = ktime_get_ns();
	int ret;

	ret = t->run->type->convert(t, op, want);
	if (ret) {
		hlt_not_granted(t, op, "convert to", ret);
		return;
	}
	op->nacq++;
	if (now == old) {
		hlt_add(&t->st.recursions, 1);
		return;
	}
	hlt_stats_wait(&t->st, ktime_get_ns() - t0);
	hlt_add(&t->st.converts, 1);
	hlt_shadow_get(t, op, now, old);
	op->held = now;
	hlt_shadow_put(op, old);
	hlt_check(t, op);
	hlt_hold(t);
}

/*
 * Lower the held mode to one it covers, picked at random.  The new mode
 * is counted and the old one dropped before the call: once it returns,
 * others may be granted what conflicts with the old mode only.
 */
static void hlt_downgrade(struct hlt_thread *t, struct hlt_op *op)
{
	unsigned int old = op->held, to;
	int ret;

	to = hlt_held_as(t, HLOCK_IS + hlt_rand(t, HLOCK_X - HLOCK_IS));
	if (to == old || !hlt_covers(old, to))
		return;
	hlt_shadow_get(t, op, to, old);
	hlt_shadow_put(op, old);
	ret = t->run->type->downgrade(t, op, to);
	if (ret) {
		/* Still held as it was. */
		hlt_shadow_get(t, op, old, to);
		hlt_shadow_put(op, to);
		if (ret != -EOPNOTSUPP)
			HLT_BREACH(t->run, "%s: downgrade %s to %s on %s: %d",
				   t->run->type->name, hlt_mode_names[old],
				   hlt_mode_names[to], op->leaf->path, ret);
		return;
	}
	hlt_add(&t->st.downgrades, 1);
	op->held = to;
	hlt_check(t, op);
}

static void hlt_release(struct hlt_thread *t, struct hlt_op *op)
{
	const struct hlt_type *type = t->run->type;

	for (; op->nacq > 1; op->nacq--)
		type->unlock(t, op, false);
	hlt_shadow_put(op, op->held);
	type->unlock(t, op, true);
}

static void hlt_one_op(struct hlt_thread *t)
{
	const struct hlt_type *type = t->run->type;
	struct hlt_op op = { };
	u64 t0;
	int ret;

	op.leaf = hlt_pick_leaf(t);
	op.mode = hlt_pick_mode(t);
	hlt_pick_kind(t, &op);
	t0 = ktime_get_ns();
	ret = type->lock(t, &op);
	if (ret) {
		hlt_not_granted(t, &op, "lock", ret);
		return;
	}
	hlt_stats_wait(&t->st, ktime_get_ns() - t0);
	hlt_add(&t->st.ops[op.mode], 1);
	op.nacq = 1;
	op.held = hlt_held_as(t, op.mode);
	hlt_shadow_get(t, &op, op.held, HLOCK_NL);
	hlt_check(t, &op);
	hlt_hold(t);
	if (type->convert && hlt_rand(t, HLT_PERCENT) < hlt_mix.converts)
		hlt_convert(t, &op);
	if (type->downgrade && hlt_rand(t, HLT_PERCENT) < hlt_mix.downgrades)
		hlt_downgrade(t, &op);
	hlt_release(t, &op);
}

/* Count this thread parked (or ended) for the controller. */
static void hlt_parked(struct hlt_run *run)
{
	/* Fully ordered: what it released is seen before the count. */
	if (atomic_inc_return(&run->parked) == run->nthreads)
		wake_up(&run->ctl_wq);
}

/* Hold nothing until the controller ends the pause. */
static void hlt_park(struct hlt_run *run)
{
	hlt_parked(run);
	wait_event_interruptible(run->park_wq, !READ_ONCE(run->pause) ||
				 READ_ONCE(run->stop));
	atomic_dec(&run->parked);
}

/**
 * hlt_thread_fn() - A torture thread: operations until the run stops,
 *	parking whenever the controller asks.
 * @arg: The thread's struct hlt_thread.
 *
 * Context: a kthread of the run, which holds a reference to it.
 * Return: 0, or why the lock type could not start it.
 */
int hlt_thread_fn(void *arg)
{
	struct hlt_thread *t = arg;
	struct hlt_run *run = t->run;
	int ret = 0;

	if (run->type->thread_init)
		ret = run->type->thread_init(t);
	if (ret) {
		HLT_BREACH(run, "%s: thread %u could not start: %d",
			   run->type->name, t->id, ret);
		hlt_parked(run);
		return ret;
	}
	while (!READ_ONCE(run->stop)) {
		if (READ_ONCE(run->pause))
			hlt_park(run);
		else
			hlt_one_op(t);
		cond_resched();
	}
	if (run->type->thread_exit)
		run->type->thread_exit(t);
	hlt_parked(run);
	return 0;
}
