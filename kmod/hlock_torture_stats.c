// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_torture: the figures, and the report in the log and in debugfs.
 *
 * At the end of each type's run, lines "hlock_torture: TYPE: ..." give the
 * rates per mode, the calls not granted, a log2 histogram of the waits, the
 * longest wait, the bypasses and the breaches; after the last type, one
 * line "hlock_torture: ratio ..." gives hlock's total rate over each
 * reference's, and the verdict, "hlock_torture: PASS" or
 * "hlock_torture: FAILED: ...".  /sys/kernel/debug/hlock_torture/stats
 * shows the same lines for the types done and the one running.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "hlock_torture.h"

/* The types one load can run. */
#define HLT_MAX_RESULTS		4
/* One line of the report. */
#define HLT_LINE_LEN		1024
/* Ratios are printed with two decimals. */
#define HLT_CENTS		100

/**
 * struct hlt_result - The figures of one type's run.
 * @type: The type.
 * @st: What its threads did.
 * @ns: How long they ran, pauses left out.
 * @nthreads: How many there were.
 * @nres: Leaves.
 * @depth: Their level.
 * @fifo: hlock's grant policy was fifo.
 * @breaches: Breaches seen.
 */
struct hlt_result {
	const struct hlt_type *type;
	struct hlt_stats st;
	u64 ns;
	unsigned int nthreads;
	unsigned int nres;
	unsigned int depth;
	bool fifo;
	unsigned int breaches;
};

/* Serialises the report; protects everything below. */
static DEFINE_MUTEX(hlt_report_lock);
/* The run going on, while its threads are there to be summed. */
static struct hlt_run *hlt_live_run;
static struct hlt_result hlt_results[HLT_MAX_RESULTS];
static unsigned int hlt_nresults;
/* Runs that could not start: the load fails. */
static unsigned int hlt_failed_runs;
static bool hlt_done;

/* Where report lines go: the log, or a seq_file. */
struct hlt_out {
	struct seq_file *m;
	size_t len;
	char line[HLT_LINE_LEN];
};

static __printf(2, 3) void hlt_out(struct hlt_out *o, const char *fmt, ...)
{
	va_list args;

	va_start(args, fmt);
	o->len += vscnprintf(o->line + o->len, sizeof(o->line) - o->len, fmt,
			     args);
	va_end(args);
}

/* End the line: print it. */
static void hlt_out_end(struct hlt_out *o)
{
	if (o->m)
		seq_printf(o->m, "%s\n", o->line);
	else
		pr_info("%s\n", o->line);
	o->len = 0;
	o->line[0] = '\0';
}

/**
 * hlt_stats_max() - Raise a maximum of a thread's own statistics.
 * @c: The maximum.
 * @v: A value.
 *
 * Context: the owning thread.
 */
void hlt_stats_max(u64 *c, u64 v)
{
	if (v > *c)
		WRITE_ONCE(*c, v);
}

/**
 * hlt_stats_wait() - Count a wait for a grant.
 * @st: A thread's statistics.
 * @ns: How long it waited.
 *
 * Context: the owning thread.
 */
void hlt_stats_wait(struct hlt_stats *st, u64 ns)
{
	unsigned int b = ns ? ilog2(ns) : 0;

	hlt_add(&st->hist[min(b, HLT_HIST_BUCKETS - 1)], 1);
	hlt_stats_max(&st->wait_max, ns);
}

static void hlt_sum_max(u64 *sum, const u64 *v)
{
	*sum = max(*sum, READ_ONCE(*v));
}

static void hlt_sum_add(u64 *sum, const u64 *v)
{
	*sum += READ_ONCE(*v);
}

/**
 * hlt_stats_sum() - Sum what a run's threads did.
 * @sum: Set to the sum.
 * @run: The run, whose threads may be running.
 *
 * Context: process context.
 */
void hlt_stats_sum(struct hlt_stats *sum, const struct hlt_run *run)
{
	const struct hlt_stats *st;
	unsigned int i, k;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < run->nthreads; i++) {
		st = &run->threads[i].st;
		for (k = 0; k < HLOCK_NR_MODES; k++)
			hlt_sum_add(&sum->ops[k], &st->ops[k]);
		for (k = 0; k < HLT_HIST_BUCKETS; k++)
			hlt_sum_add(&sum->hist[k], &st->hist[k]);
		hlt_sum_add(&sum->busy, &st->busy);
		hlt_sum_add(&sum->timeouts, &st->timeouts);
		hlt_sum_add(&sum->deadlocks, &st->deadlocks);
		hlt_sum_add(&sum->queued, &st->queued);
		hlt_sum_add(&sum->cancels, &st->cancels);
		hlt_sum_add(&sum->converts, &st->converts);
		hlt_sum_add(&sum->recursions, &st->recursions);
		hlt_sum_add(&sum->downgrades, &st->downgrades);
		hlt_sum_add(&sum->checks, &st->checks);
		hlt_sum_add(&sum->bypasses, &st->bypasses);
		hlt_sum_max(&sum->bypass_max, &st->bypass_max);
		hlt_sum_max(&sum->wait_max, &st->wait_max);
	}
}

/* The figures of @run so far (its end, once it ended). */
static void hlt_result_of(struct hlt_result *r, const struct hlt_run *run)
{
	u64 end = READ_ONCE(run->end_ns) ?: ktime_get_ns();
	u64 paused = READ_ONCE(run->paused_ns);

	r->type = run->type;
	hlt_stats_sum(&r->st, run);
	r->ns = end - run->start_ns - min(paused, end - run->start_ns);
	r->nthreads = run->nthreads;
	r->nres = run->nres;
	r->depth = run->depth;
	r->fifo = run->fifo;
	r->breaches = atomic_read(&run->breaches);
}

static u64 hlt_rate(u64 n, u64 ns)
{
	return ns ? mul_u64_u64_div_u64(n, NSEC_PER_SEC, ns) : 0;
}

static u64 hlt_total_rate(const struct hlt_result *r)
{
	u64 n = 0;
	unsigned int m;

	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++)
		n += r->st.ops[m];
	return hlt_rate(n, r->ns);
}

static bool hlt_is_hlock(const struct hlt_result *r)
{
	return r->type == &hlt_hlock_type;
}

/* The lines of one result. */
static void hlt_show(struct hlt_out *o, const struct hlt_result *r)
{
	const struct hlt_stats *st = &r->st;
	const char *name = r->type->name;
	unsigned int m, b;

	hlt_out(o, "%s: %u threads, %llu ms, %u leaves at depth %u", name,
		r->nthreads, div_u64(r->ns, NSEC_PER_MSEC), r->nres, r->depth);
	if (hlt_is_hlock(r))
		hlt_out(o, ", policy %s", r->fifo ? "fifo" : "batch");
	hlt_out_end(o);

	hlt_out(o, "%s: ops/s", name);
	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++)
		hlt_out(o, " %s %llu", hlt_mode_names[m],
			hlt_rate(st->ops[m], r->ns));
	hlt_out(o, " total %llu", hlt_total_rate(r));
	hlt_out_end(o);

	hlt_out(o, "%s: not granted: busy %llu timeouts %llu deadlocks %llu cancels %llu",
		name, st->busy, st->timeouts, st->deadlocks, st->cancels);
	hlt_out(o, "; queued %llu converts %llu recursions %llu downgrades %llu checks %llu",
		st->queued, st->converts, st->recursions, st->downgrades,
		st->checks);
	hlt_out_end(o);

	hlt_out(o, "%s: wait log2(ns):", name);
	for (b = 0; b < HLT_HIST_BUCKETS; b++)
		if (st->hist[b])
			hlt_out(o, " %u:%llu", b, st->hist[b]);
	hlt_out_end(o);

	hlt_out(o, "%s: max wait %llu ns", name, st->wait_max);
	if (hlt_is_hlock(r))
		hlt_out(o, ", max bypass %llu (%llu in all, %s)",
			st->bypass_max, st->bypasses,
			r->fifo ? "fifo: any is a breach" : "batch: allowed");
	hlt_out(o, ", breaches %u", r->breaches);
	hlt_out_end(o);
}

static struct hlt_out *hlt_out_new(struct seq_file *m)
{
	struct hlt_out *o = kzalloc(sizeof(*o), GFP_KERNEL);

	if (o)
		o->m = m;
	return o;
}

/**
 * hlt_live() - Say which run is going on, for the figures in debugfs.
 * @run: The run, whose threads run until it is replaced; NULL for none.
 *
 * Context: process context; takes hlt_report_lock.
 */
void hlt_live(struct hlt_run *run)
{
	mutex_lock(&hlt_report_lock);
	hlt_live_run = run;
	mutex_unlock(&hlt_report_lock);
}

/**
 * hlt_report_interval() - Print the figures of a run going on.
 * @run: The run.
 *
 * Context: the controller; takes hlt_report_lock.
 */
void hlt_report_interval(struct hlt_run *run)
{
	struct hlt_out *o = hlt_out_new(NULL);
	struct hlt_result r;

	if (!o)
		return;
	mutex_lock(&hlt_report_lock);
	hlt_result_of(&r, run);
	hlt_show(o, &r);
	mutex_unlock(&hlt_report_lock);
	kfree(o);
}

/**
 * hlt_report_run() - Keep and print the figures of a run that ended.
 * @run: The run; its threads have stopped.  No longer live after this.
 *
 * Context: the controller; takes hlt_report_lock.
 */
void hlt_report_run(struct hlt_run *run)
{
	struct hlt_out *o = hlt_out_new(NULL);
	struct hlt_result *r;

	mutex_lock(&hlt_report_lock);
	hlt_live_run = NULL;
	if (!WARN_ON_ONCE(hlt_nresults >= HLT_MAX_RESULTS)) {
		r = &hlt_results[hlt_nresults++];
		hlt_result_of(r, run);
		if (o)
			hlt_show(o, r);
	}
	mutex_unlock(&hlt_report_lock);
	kfree(o);
}

/**
 * hlt_report_failed() - Count a run that could not start.
 * @type: Its type.
 * @err: Why.
 *
 * Context: the controller; takes hlt_report_lock.
 */
void hlt_report_failed(const struct hlt_type *type, int err)
{
	pr_err("%s: the run could not start: %d\n", type->name, err);
	mutex_lock(&hlt_report_lock);
	hlt_failed_runs++;
	mutex_unlock(&hlt_report_lock);
}

/* hlock's rate over each reference's, when both ran. */
static void hlt_show_ratios(struct hlt_out *o)
{
	const struct hlt_result *h = NULL;
	unsigned int i;
	u64 a, b, c;

	for (i = 0; i < hlt_nresults; i++)
		if (hlt_is_hlock(&hlt_results[i]))
			h = &hlt_results[i];
	if (!h || hlt_nresults < 2)
		return;
	a = hlt_total_rate(h);
	hlt_out(o, "ratio");
	for (i = 0; i < hlt_nresults; i++) {
		if (&hlt_results[i] == h)
			continue;
		b = hlt_total_rate(&hlt_results[i]);
		c = b ? div64_u64(a * HLT_CENTS, b) : 0;
		hlt_out(o, " hlock/%s %llu.%02llu", hlt_results[i].type->name,
			div_u64(c, HLT_CENTS), c % HLT_CENTS);
	}
	hlt_out_end(o);
}

/* The verdict: PASS, or FAILED with what went wrong. */
static void hlt_show_verdict(struct hlt_out *o)
{
	unsigned int i, breaches = 0;

	for (i = 0; i < hlt_nresults; i++)
		breaches += hlt_results[i].breaches;
	if (!breaches && !hlt_failed_runs) {
		hlt_out(o, "PASS");
	} else {
		hlt_out(o, "FAILED: %u breaches", breaches);
		if (hlt_failed_runs)
			hlt_out(o, ", %u runs could not start",
				hlt_failed_runs);
	}
	hlt_out_end(o);
}

/**
 * hlt_report_end() - Print the ratios and the verdict, once every type ran.
 *
 * Context: the controller; takes hlt_report_lock.
 */
void hlt_report_end(void)
{
	struct hlt_out *o = hlt_out_new(NULL);

	mutex_lock(&hlt_report_lock);
	hlt_done = true;
	if (o) {
		hlt_show_ratios(o);
		hlt_show_verdict(o);
	} else {
		pr_err("FAILED: no memory for the verdict\n");
	}
	mutex_unlock(&hlt_report_lock);
	kfree(o);
}

static int hlt_stats_show(struct seq_file *m, void *unused)
{
	struct hlt_out *o = hlt_out_new(m);
	struct hlt_result r;
	unsigned int i;

	if (!o)
		return -ENOMEM;
	mutex_lock(&hlt_report_lock);
	for (i = 0; i < hlt_nresults; i++)
		hlt_show(o, &hlt_results[i]);
	if (hlt_live_run) {
		hlt_result_of(&r, hlt_live_run);
		seq_printf(m, "running %s:\n", r.type->name);
		hlt_show(o, &r);
	}
	if (hlt_done) {
		hlt_show_ratios(o);
		hlt_show_verdict(o);
	}
	mutex_unlock(&hlt_report_lock);
	kfree(o);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(hlt_stats);

/**
 * hlt_stats_debugfs() - Create the figures' file in debugfs.
 * @dir: hlock_torture's directory.
 *
 * Context: module init.
 */
void hlt_stats_debugfs(struct dentry *dir)
{
	debugfs_create_file("stats", 0400, dir, NULL, &hlt_stats_fops);
}
