// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: statistics, the slow-wait log and tracepoints.
 *
 * Statistics are kept per locker (under its lock) and per lock space in
 * per-CPU counters summed on read, so the uncontended path writes no
 * shared cache line for them.  The hooks hl_note_*() of hlock_core feed
 * both, and the tracepoints.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/ratelimit.h>
#include <linux/string.h>

#include "hlock_internal.h"
#include "hlock_hooks.h"
#include "hlock_stats.h"

#define CREATE_TRACE_POINTS
#include "hlock_trace.h"

bool hl_stats_on = true;
module_param_named(stats, hl_stats_on, bool, 0644);
MODULE_PARM_DESC(stats, "Keep lock statistics (module-wide and per locker)");

static unsigned int hl_slow_ms = 100;
module_param_named(slow_ms, hl_slow_ms, uint, 0644);
MODULE_PARM_DESC(slow_ms,
		 "Log acquisitions that waited at least this long, in ms (0: off)");

/**
 * hl_stats_pid() - A locker's owner, as tracepoints and logs name it.
 * @f: The locker.
 *
 * Return: its tgid in the initial PID namespace, 0 if gone.
 */
int hl_stats_pid(struct hl_file *f)
{
	return hl_file_pid_ns(f, &init_pid_ns);
}

/* Remember who holds what @req waits for, for the slow-wait log. */
static void hl_note_blockers(struct hl_file *f, unsigned int level,
			     const struct hl_req *req)
{
	struct hl_blockers b = { .max = HL_SLOW_PIDS };
	unsigned int i, j;

	f->slow.level = level;
	f->slow.nr = 0;
	hl_head_blockers(req->head, req, &b);
	for (i = 0; i < b.named; i++) {
		const struct hl_req *o = b.reqs[i];
		pid_t pid;

		/* Holders only: waiters ahead are not "held by". */
		if (o->state == HL_WAITING)
			continue;
		pid = hl_stats_pid(hl_file_of(o->locker));
		for (j = 0; j < f->slow.nr && f->slow.pids[j] != pid; j++)
			;
		if (j == f->slow.nr)
			f->slow.pids[f->slow.nr++] = pid;
	}
}

/**
 * hl_stats_wait() - A level of an operation starts to wait.
 * @lk: The locker.
 * @level: The level.
 * @mode: The mode asked for there.
 * @req: The waiting request.
 *
 * Context: the locker lock and the head lock held.
 */
void hl_stats_wait(struct hl_locker *lk, unsigned int level, unsigned int mode,
		   const struct hl_req *req)
{
	struct hl_file *f = hl_file_of(lk);

	f->slow.wait_start = hl_clock();
	hl_stat_add(f, level[hl_stat_level(level)].wait_count[mode], 1);
	if (f->slow.level == HL_NO_WAIT)
		hl_note_blockers(f, level, req);
	trace_hlock_wait(hl_stats_pid(f), req->head, mode);
}

/* Account the wait of @level that ends at @now. */
static void hl_note_waited(struct hl_file *f, unsigned int level,
			   unsigned int mode, u64 now)
{
	u64 ns = now - f->slow.wait_start;

	f->slow.waited += ns;
	hl_stat_add(f, level[hl_stat_level(level)].wait_time_ns[mode], ns);
}

/*
 * The grant events of levels @from to @to of the operation, while traced.
 * Out of line: the loop's registers would be saved and restored on every
 * lock call.
 */
static noinline void hl_trace_grants(struct hl_locker *lk, unsigned int from,
				     unsigned int to)
{
	const struct hl_op *op = &lk->op;
	struct hl_file *f = hl_file_of(lk);
	unsigned int l;

	for (l = from; l < to; l++)
		trace_hlock_grant(hl_stats_pid(f), op->heads[l],
				  hl_op_mode(op, l));
}

/**
 * hl_stats_acquired() - A run of levels of a lock call was granted at once.
 * @lk: The locker.
 * @from: The first level of the run.
 * @to: The level after the run.
 * @waits: Whether level @to waits (it counts as acquired too).
 *
 * Per run of levels of every lock call: the levels above the last all
 * count their intent, and every level from HLOCK_LEVEL_OBJECT on counts in
 * one row, so the run is counted in a few additions, not two per level.
 *
 * Context: the locker lock held.
 */
static void hl_stats_acquired(struct hl_locker *lk, unsigned int from,
			      unsigned int to, bool waits)
{
	const struct hl_op *op = &lk->op;
	struct hl_file *f = hl_file_of(lk);
	unsigned int i = op->intent, last = op->nr - 1, end = to + waits;
	unsigned int above = min(end, last), l, n;

	if (READ_ONCE(hl_stats_on)) {
		for (l = from; l < above && l < HLOCK_LEVEL_OBJECT; l++)
			__hl_stat_add(f, level[l].acquire_count[i], 1);
		if (l < above) {
			/* The object row counts every level from it on. */
			n = above - l;
			l = HLOCK_LEVEL_OBJECT;
			__hl_stat_add(f, level[l].acquire_count[i], n);
		}
		if (end > last) {
			l = hl_stat_level(last);
			__hl_stat_add(f, level[l].acquire_count[op->mode], 1);
		}
	}
	if (trace_hlock_grant_enabled())
		hl_trace_grants(lk, from, to);
}

/**
 * hl_stats_waited() - A level that waited was granted: account its wait,
 *	and trace the grant.
 * @lk: The locker.
 * @level: The level.
 * @mode: The mode asked for there.
 *
 * Context: the locker lock held.
 */
void hl_stats_waited(struct hl_locker *lk, unsigned int level,
		     unsigned int mode)
{
	hl_note_waited(hl_file_of(lk), level, mode, lk->op.now);
	if (trace_hlock_grant_enabled())
		trace_hlock_grant(hl_stats_pid(hl_file_of(lk)),
				  lk->op.heads[level], mode);
}

/* A request's release, while the tracepoint is on (hl_note_release()). */
static void hl_stats_release(struct hl_req *req)
{
	trace_hlock_release(hl_stats_pid(hl_file_of(req->locker)), req->head,
			    req->mode);
}

/**
 * hl_stats_withdrawn() - A waiting level of an operation was withdrawn.
 * @lk: The locker.
 * @level: The level.
 * @mode: The mode asked for there.
 *
 * Context: the locker lock held.
 */
void hl_stats_withdrawn(struct hl_locker *lk, unsigned int level,
			unsigned int mode)
{
	hl_note_waited(hl_file_of(lk), level, mode, hl_clock());
}

/**
 * hl_stats_convert() - A request starts converting.
 * @req: The request.
 * @target: The mode it converts to.
 *
 * Context: its locker's lock held.
 */
void hl_stats_convert(struct hl_req *req, unsigned int target)
{
	if (trace_hlock_convert_enabled())
		trace_hlock_convert(hl_stats_pid(hl_file_of(req->locker)), req->head,
				    target);
}

/**
 * hl_stats_deadlock() - A waiting level would close a cycle of waits, or
 *	the DLM refused its node the conversion it waits for as a deadlock.
 * @lk: The locker; the level is withdrawn next, and the call fails with
 *	EDEADLK.
 * @level: The level.
 * @mode: The mode asked for there.
 */
void hl_stats_deadlock(struct hl_locker *lk, unsigned int level,
		       unsigned int mode)
{
	struct hl_file *f = hl_file_of(lk);

	lockdep_assert_held(&f->lock);
	hl_stat_add(f, deadlocks, 1);
	if (trace_hlock_deadlock_enabled())
		trace_hlock_deadlock(hl_stats_pid(f), lk->op.heads[level], mode);
}

/**
 * hl_trace_request() - Trace a lock call.
 * @f: The locker, its path set.
 * @mode: The mode asked for.
 * @flags: Its flags.
 * @timeout_ns: Its timeout.
 */
void hl_trace_request(struct hl_file *f, unsigned int mode,
		      unsigned int flags, s64 timeout_ns)
{
	if (trace_hlock_request_enabled())
		trace_hlock_request(hl_stats_pid(f), f->pathbuf, mode, flags,
				    timeout_ns);
}

/**
 * hl_gave_up() - A lock call gave up; count and trace it.
 * @f: The locker.
 * @mode: The mode asked for.
 * @ret: -EINTR, or a timeout (-ETIMEDOUT, -EAGAIN).
 *
 * Context: the locker lock held.
 */
void hl_gave_up(struct hl_file *f, unsigned int mode, int ret)
{
	if (ret == -EINTR) {
		hl_stat_add(f, interrupts, 1);
		trace_hlock_cancel(hl_stats_pid(f), f->pathbuf, mode,
				   HLOCK_CANCEL_SIGNAL);
	} else {
		hl_stat_add(f, timeouts, 1);
		trace_hlock_timeout(hl_stats_pid(f), f->pathbuf, mode);
	}
}

/**
 * hl_note_cancel() - A queued request is withdrawn by unlock, close or
 *	its ring going away.
 * @f: The locker.
 * @why: HLOCK_CANCEL_UNLOCK, HLOCK_CANCEL_CLOSE or HLOCK_CANCEL_RING.
 *
 * Context: the locker lock held.
 */
void hl_note_cancel(struct hl_file *f, unsigned int why)
{
	hl_stat_add(f, cancels, 1);
	trace_hlock_cancel(hl_stats_pid(f), f->pathbuf, f->lk.op.mode, why);
}

/**
 * hl_slow_log() - Log an operation that waited at least slow_ms.
 * @f: The locker, whose operation was just granted.
 *
 * Context: the locker lock held.
 */
void hl_slow_log(struct hl_file *f)
{
	u64 ms = READ_ONCE(hl_slow_ms);
	char pids[HL_SLOW_PIDS * 12] = "";
	unsigned int i, n = 0;

	if (!ms || f->slow.waited < ms * NSEC_PER_MSEC)
		return;
	for (i = 0; i < f->slow.nr; i++)
		n += scnprintf(pids + n, sizeof(pids) - n, "%s%d",
			       i ? ", " : "", f->slow.pids[i]);
	lockdep_assert_held(&f->lock);
	/* Users choose paths, command names and descriptions: escape them. */
	pr_info_ratelimited("slow wait: pid %d (%*pE) waited %llu ms for %s on \"%*pE\" (queued at level %u); held by pids %s when the wait began; why \"%*pE\"\n",
			    hl_stats_pid(f), (int)strnlen(f->comm, sizeof(f->comm)),
			    f->comm, div_u64(f->slow.waited, NSEC_PER_MSEC),
			    hl_mode_name(f->lk.op.mode),
			    (int)strlen(f->pathbuf), f->pathbuf, f->slow.level,
			    n ? pids : "(none)",
			    (int)strnlen(f->why, sizeof(f->why)), f->why);
}

/**
 * hl_stats_sum() - The statistics of a lock space: its per-CPU counters
 *	summed.
 * @ns: The space, kept alive by the caller.
 * @st: Filled in.
 */
void hl_stats_sum(struct hl_ns *ns, struct hlock_stats *st)
{
	u64 *sum = (u64 *)st;
	unsigned int cpu, i;

	BUILD_BUG_ON(sizeof(*st) % sizeof(u64));
	memset(st, 0, sizeof(*st));
	for_each_possible_cpu(cpu) {
		const u64 *c = (const u64 *)per_cpu_ptr(ns->stats, cpu);

		for (i = 0; i < sizeof(*st) / sizeof(u64); i++)
			sum[i] += READ_ONCE(c[i]);
	}
}

/* The host's statistics hooks: counts, the slow-wait log, tracepoints. */
const struct hl_hooks hl_stats_hooks = {
	.note_acquired = hl_stats_acquired,
	.note_wait = hl_stats_wait,
	.note_granted = hl_stats_waited,
	.note_withdrawn = hl_stats_withdrawn,
	.note_convert = hl_stats_convert,
	.note_deadlock = hl_stats_deadlock,
	.note_release = hl_stats_release,
	.slow_log = hl_slow_log,
};
