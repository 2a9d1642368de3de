/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_stats.c: statistics, the slow-wait log and the tracepoints.
 */
#ifndef _HLOCK_STATS_H
#define _HLOCK_STATS_H

#include <linux/compiler.h>
#include <linux/minmax.h>
#include <linux/percpu.h>
#include <linux/types.h>

struct hl_file;
struct hl_hooks;
struct hl_locker;
struct hl_ns;
struct hl_req;
struct hlock_stats;

/* Blockers the slow-wait log names. */
#define HL_SLOW_PIDS	4
/* hl_slow.level before the operation waited. */
#define HL_NO_WAIT	UINT_MAX

/**
 * struct hl_slow - The waits of a locker's operation in flight, for the
 *	statistics, the lock table and the slow-wait log.
 * @waited: Time it has waited so far; reset by every lock call.
 * @level: Level of its first wait, HL_NO_WAIT before one; reset by every
 *	lock call.
 * @wait_start: hl_clock() when the waiting level began to wait.
 * @nr: Entries in @pids.
 * @pids: Holders that blocked its first wait.
 *
 * Under the locker lock.
 */
struct hl_slow {
	u64 waited;
	unsigned int level;
	unsigned int nr;
	u64 wait_start;
	pid_t pids[HL_SLOW_PIDS];
};

extern bool hl_stats_on;
extern const struct hl_hooks hl_stats_hooks;
void hl_stats_sum(struct hl_ns *ns, struct hlock_stats *st);
void hl_slow_log(struct hl_file *f);
void hl_gave_up(struct hl_file *f, unsigned int mode, int ret);
void hl_note_cancel(struct hl_file *f, unsigned int why);
void hl_trace_request(struct hl_file *f, unsigned int mode,
		      unsigned int flags, s64 timeout_ns);
void hl_stats_wait(struct hl_locker *lk, unsigned int level, unsigned int mode,
		   const struct hl_req *req);
void hl_stats_waited(struct hl_locker *lk, unsigned int level,
		     unsigned int mode);
int hl_stats_pid(struct hl_file *f);
void hl_stats_withdrawn(struct hl_locker *lk, unsigned int level,
			unsigned int mode);
void hl_stats_convert(struct hl_req *req, unsigned int target);
void hl_stats_deadlock(struct hl_locker *lk, unsigned int level,
		       unsigned int mode);

/* The row of the per-level statistics a level counts in. */
static inline unsigned int hl_stat_level(unsigned int level)
{
	return min_t(unsigned int, level, HLOCK_LEVEL_OBJECT);
}

/*
 * Add @n to one statistic of @f (its lock held) and of its lock space;
 * __hl_stat_add() when the caller read hl_stats_on already.
 */
#define __hl_stat_add(f, field, n)					\
	do {								\
		(f)->stats.field += (n);				\
		this_cpu_add((f)->ns->stats->field, (n));		\
	} while (0)

#define hl_stat_add(f, field, n)					\
	do {								\
		if (READ_ONCE(hl_stats_on))				\
			__hl_stat_add(f, field, n);			\
	} while (0)

#endif /* _HLOCK_STATS_H */
