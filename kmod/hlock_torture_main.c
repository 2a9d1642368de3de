// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_torture: the parameters and the runs.
 *
 * A controller kthread ("hlock_torture") runs each lock type of the types
 * parameter in turn for duration seconds: it starts nthreads kthreads
 * ("hltorture/N", hlock_torture_thread.c), every stutter seconds parks
 * them all (each ends its operation first) to check that nothing is left
 * held, prints the figures every stat_interval seconds, and at the end
 * stops them, checks once more and reports.  After the last type it prints
 * the ratios and the verdict, and waits for rmmod.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "hlock_torture.h"

/* Threads at the most. */
#define HLT_MAX_THREADS		256
/* Children of each resource above the leaves. */
#define HLT_FANOUT		4
/* How often the controller looks at the clock. */
#define HLT_CTL_TICK		(HZ / 10)
/* Threads that do not park or end within this long are stuck. */
#define HLT_STUCK_SECS		60

static int nthreads = -1;
module_param(nthreads, int, 0444);
MODULE_PARM_DESC(nthreads, "Torture threads (default: 2 per online CPU)");

static unsigned int duration = 10;
module_param(duration, uint, 0444);
MODULE_PARM_DESC(duration,
		 "Seconds per lock type (0: no torture, only the kernel locker)");

static char *modes = "is=40,ix=30,s=15,six=5,x=10";
module_param(modes, charp, 0444);
MODULE_PARM_DESC(modes, "Weights of the modes asked for, e.g. is=40,x=10");

static unsigned int depth = 3;
module_param(depth, uint, 0444);
MODULE_PARM_DESC(depth, "Level of the locked leaves below the root (1-8)");

static unsigned int nres = 16;
module_param(nres, uint, 0444);
MODULE_PARM_DESC(nres, "Leaves, picked hot to cold (1-4096)");

static char *policy = "";
module_param(policy, charp, 0444);
MODULE_PARM_DESC(policy,
		 "hlock's grant policy this load expects (batch, fifo; empty: the one in force)");

static unsigned int use_timeouts = 10;
module_param(use_timeouts, uint, 0444);
MODULE_PARM_DESC(use_timeouts, "Percent of first acquisitions that try or time out");

static unsigned int use_converts = 10;
module_param(use_converts, uint, 0444);
MODULE_PARM_DESC(use_converts, "Percent of operations that lock again (convert or recurse)");

static unsigned int use_downgrades = 10;
module_param(use_downgrades, uint, 0444);
MODULE_PARM_DESC(use_downgrades, "Percent of operations that downgrade");

static unsigned int use_async = 20;
module_param(use_async, uint, 0444);
MODULE_PARM_DESC(use_async, "Percent of first acquisitions queued asynchronously (hlock)");

static unsigned int stat_interval;
module_param(stat_interval, uint, 0444);
MODULE_PARM_DESC(stat_interval, "Seconds between figures in the log (0: at the end only)");

static unsigned int stutter = 3;
module_param(stutter, uint, 0444);
MODULE_PARM_DESC(stutter,
		 "Seconds between quiet points, where every thread parks and nothing may be held (0: at the end only)");

static char *types = "hlock,rwsem,percpu_rwsem,mutex";
module_param(types, charp, 0444);
MODULE_PARM_DESC(types, "Lock types to run in turn: hlock, rwsem, percpu_rwsem, mutex");

/* Every type this module knows, by name. */
static const struct hlt_type *const hlt_all_types[] = {
	&hlt_hlock_type,
	&hlt_rwsem_type,
	&hlt_percpu_rwsem_type,
	&hlt_mutex_type,
};

/* What the parameters say, checked; written by the init only. */
static struct {
	unsigned int nthreads;
	const struct hlt_type *types[ARRAY_SIZE(hlt_all_types)];
	unsigned int ntypes;
} hlt_cfg;

struct hlt_mix hlt_mix;

static struct hlt_leaf *hlt_leaves;
static struct task_struct *hlt_ctl;
static struct dentry *hlt_dir;

/* ------------------------------------------------------------------ */
/* Parameters */

/* Parse the modes mix, "name=weight,...", into hlt_cfg. */
static int hlt_parse_modes(void)
{
	char *buf, *s, *tok, *val;
	unsigned int w;
	int m, ret = 0;

	buf = kstrdup(modes, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	s = buf;
	while ((tok = strsep(&s, ",")) && !ret) {
		val = strchr(tok, '=');
		if (!val) {
			ret = -EINVAL;
			break;
		}
		*val++ = '\0';
		m = hlt_mode_parse(strim(tok));
		if (m < 0 || kstrtouint(strim(val), 0, &w) ||
		    w > U16_MAX) {
			ret = -EINVAL;
			break;
		}
		hlt_mix.weights[m] = w;
	}
	kfree(buf);
	for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++)
		hlt_mix.weight_sum += hlt_mix.weights[m];
	if (!ret && !hlt_mix.weight_sum)
		ret = -EINVAL;
	if (ret)
		pr_err("modes=%s: want NAME=WEIGHT,... (is, ix, s, six, x), not all 0\n",
		       modes);
	return ret;
}

static const struct hlt_type *hlt_type_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(hlt_all_types); i++)
		if (!strcmp(name, hlt_all_types[i]->name))
			return hlt_all_types[i];
	return NULL;
}

/* Parse the types to run, each once, in their order. */
static int hlt_parse_types(void)
{
	const struct hlt_type *type;
	char *buf, *s, *tok;
	unsigned int i;
	int ret = 0;

	buf = kstrdup(types, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	s = buf;
	while ((tok = strsep(&s, ",")) && !ret) {
		type = hlt_type_find(strim(tok));
		for (i = 0; type && i < hlt_cfg.ntypes; i++)
			if (hlt_cfg.types[i] == type)
				type = NULL;
		if (!type)
			ret = -EINVAL;
		else
			hlt_cfg.types[hlt_cfg.ntypes++] = type;
	}
	kfree(buf);
	if (ret)
		pr_err("types=%s: want some of hlock,rwsem,percpu_rwsem,mutex, each once\n",
		       types);
	return ret;
}

/* The grant policy in force must be the one the load asks for, if any. */
static int hlt_check_policy(void)
{
	static const char *const names[] = {
		[HLOCK_POLICY_BATCH] = "batch",
		[HLOCK_POLICY_FIFO] = "fifo",
	};
	unsigned int now = hlock_kernel_grant_policy();

	if (!*policy || (now < ARRAY_SIZE(names) && !strcmp(policy, names[now])))
		return 0;
	pr_err("policy=%s, but hlock's grant_policy is %s: set /sys/module/hlock/parameters/grant_policy first\n",
	       policy, now < ARRAY_SIZE(names) ? names[now] : "?");
	return -EINVAL;
}

static int hlt_check_params(void)
{
	int ret;

	if (nthreads < 0)
		hlt_cfg.nthreads = 2 * num_online_cpus();
	else
		hlt_cfg.nthreads = nthreads;
	if (!hlt_cfg.nthreads || hlt_cfg.nthreads > HLT_MAX_THREADS ||
	    !depth || depth > HLOCK_MAX_DEPTH || !nres ||
	    nres > HLT_MAX_NRES || use_timeouts + use_async > HLT_PERCENT ||
	    use_converts > HLT_PERCENT || use_downgrades > HLT_PERCENT) {
		pr_err("want 1 <= nthreads <= %d, 1 <= depth <= %d, 1 <= nres <= %d, use_timeouts + use_async <= 100, use_converts and use_downgrades <= 100\n",
		       HLT_MAX_THREADS, HLOCK_MAX_DEPTH, HLT_MAX_NRES);
		return -EINVAL;
	}
	hlt_mix.timeouts = use_timeouts;
	hlt_mix.async = use_async;
	hlt_mix.converts = use_converts;
	hlt_mix.downgrades = use_downgrades;
	ret = hlt_parse_modes();
	if (!ret)
		ret = hlt_parse_types();
	if (!ret)
		ret = hlt_check_policy();
	return ret;
}

/* ------------------------------------------------------------------ */
/* Leaves */

/*
 * Name leaf @i: on level k its ancestor is the (i / HLT_FANOUT^(depth - k))th
 * of that level, so hot leaves share ancestors; the first level's names
 * start with "hlt", so that the torture's resources are its own.
 */
static void hlt_leaf_name(struct hlt_leaf *leaf, unsigned int i)
{
	unsigned int k, len = 0, div = 1;

	for (k = 1; k < depth; k++)
		div *= HLT_FANOUT;
	for (k = 0; k < depth; k++, div /= HLT_FANOUT) {
		len += scnprintf(leaf->path + len, sizeof(leaf->path) - len,
				 "%s%s%u", k ? "/" : "", k ? "n" : "hlt",
				 i / div);
		leaf->ends[k] = len;
	}
	leaf->idx = i;
}

static int hlt_leaves_init(void)
{
	unsigned int i;

	hlt_leaves = kvcalloc(nres, sizeof(*hlt_leaves), GFP_KERNEL);
	if (!hlt_leaves)
		return -ENOMEM;
	for (i = 0; i < nres; i++)
		hlt_leaf_name(&hlt_leaves[i], i);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The controller */

/* Wait until every thread parked or ended; a breach if they do not. */
static bool hlt_wait_parked(struct hlt_run *run)
{
	if (wait_event_timeout(run->ctl_wq,
			       atomic_read(&run->parked) == run->nthreads,
			       HLT_STUCK_SECS * HZ)) {
		/* What they released is seen from here on. */
		smp_mb();
		return true;
	}
	HLT_BREACH(run, "%s: %d of %u threads did not park or end within %d s",
		   run->type->name,
		   run->nthreads - atomic_read(&run->parked), run->nthreads,
		   HLT_STUCK_SECS);
	return false;
}

/* Nothing is held: the shadow counts, and the lock manager's, say so. */
static void hlt_quiet_check(struct hlt_run *run)
{
	unsigned int i, m;
	int n;

	for (i = 0; i < run->nres; i++) {
		for (m = HLOCK_IS; m < HLOCK_NR_MODES; m++) {
			n = atomic_read(&run->leaves[i].shadow[m]);
			if (n)
				HLT_BREACH(run, "%s: %d thread(s) count %s on %s at a quiet point",
					   run->type->name, n,
					   hlt_mode_names[m],
					   run->leaves[i].path);
		}
	}
	if (run->type->quiet_check)
		run->type->quiet_check(run);
}

/* Park every thread, check that nothing is held, and let them go on. */
static void hlt_stutter(struct hlt_run *run)
{
	u64 t0 = ktime_get_ns();

	WRITE_ONCE(run->pause, true);
	if (hlt_wait_parked(run))
		hlt_quiet_check(run);
	WRITE_ONCE(run->pause, false);
	wake_up_all(&run->park_wq);
	WRITE_ONCE(run->paused_ns, run->paused_ns + ktime_get_ns() - t0);
}

static void hlt_stop_threads(struct hlt_run *run, unsigned int n)
{
	unsigned int i;

	WRITE_ONCE(run->stop, true);
	wake_up_all(&run->park_wq);
	if (n == run->nthreads)
		hlt_wait_parked(run);
	for (i = 0; i < n; i++) {
		kthread_stop(run->threads[i].task);
		put_task_struct(run->threads[i].task);
	}
}

static int hlt_start_threads(struct hlt_run *run)
{
	struct hlt_thread *t;
	unsigned int i;

	for (i = 0; i < run->nthreads; i++) {
		t = &run->threads[i];
		t->run = run;
		t->id = i;
		prandom_seed_state(&t->rnd, get_random_u64());
		t->task = kthread_create(hlt_thread_fn, t, "hltorture/%u", i);
		if (IS_ERR(t->task)) {
			int ret = PTR_ERR(t->task);

			/* The others end at once; count this one as ended. */
			run->nthreads = i;
			hlt_stop_threads(run, i);
			return ret;
		}
		get_task_struct(t->task);
		wake_up_process(t->task);
	}
	return 0;
}

/* Let the threads work for the duration, with quiet points and figures. */
static void hlt_run_for(struct hlt_run *run)
{
	u64 now, end, next_stutter, next_stat;

	end = run->start_ns + (u64)duration * NSEC_PER_SEC;
	next_stutter = run->start_ns + (u64)stutter * NSEC_PER_SEC;
	next_stat = run->start_ns + (u64)stat_interval * NSEC_PER_SEC;
	while (!kthread_should_stop()) {
		now = ktime_get_ns();
		if (now >= end)
			break;
		if (stutter && now >= next_stutter) {
			hlt_stutter(run);
			next_stutter = ktime_get_ns() +
				       (u64)stutter * NSEC_PER_SEC;
		}
		if (stat_interval && now >= next_stat) {
			hlt_report_interval(run);
			next_stat += (u64)stat_interval * NSEC_PER_SEC;
		}
		schedule_timeout_interruptible(HLT_CTL_TICK);
	}
}

/* Run one lock type: set up, start, run, stop, check, report. */
static void hlt_run_type(const struct hlt_type *type)
{
	struct hlt_run *run;
	int ret;

	ret = -ENOMEM;
	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		goto err;
	run->type = type;
	run->nthreads = hlt_cfg.nthreads;
	run->leaves = hlt_leaves;
	run->nres = nres;
	run->depth = depth;
	atomic_set(&run->parked, 0);
	init_waitqueue_head(&run->park_wq);
	init_waitqueue_head(&run->ctl_wq);
	run->threads = kcalloc(run->nthreads, sizeof(*run->threads),
			       GFP_KERNEL);
	if (!run->threads)
		goto err_run;
	ret = type->setup ? type->setup(run) : 0;
	if (ret)
		goto err_threads;
	run->start_ns = ktime_get_ns();
	ret = hlt_start_threads(run);
	if (ret)
		goto err_teardown;
	hlt_live(run);
	hlt_run_for(run);
	hlt_stop_threads(run, run->nthreads);
	WRITE_ONCE(run->end_ns, ktime_get_ns());
	hlt_quiet_check(run);
	hlt_report_run(run);
	if (type->teardown)
		type->teardown(run);
	kfree(run->threads);
	kfree(run);
	return;

err_teardown:
	if (type->teardown)
		type->teardown(run);
err_threads:
	kfree(run->threads);
err_run:
	kfree(run);
err:
	hlt_report_failed(type, ret);
}

static int hlt_ctl_fn(void *unused)
{
	unsigned int i;

	for (i = 0; i < hlt_cfg.ntypes && !kthread_should_stop(); i++)
		hlt_run_type(hlt_cfg.types[i]);
	if (!kthread_should_stop())
		hlt_report_end();
	while (!kthread_should_stop())
		schedule_timeout_interruptible(MAX_SCHEDULE_TIMEOUT);
	return 0;
}

static int __init hlt_init(void)
{
	int ret;

	ret = hlt_check_params();
	if (ret)
		return ret;
	hlt_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	ret = hlt_klock_init(hlt_dir);
	if (ret)
		goto err_debugfs;
	if (!duration) {
		pr_info("duration=0: no torture run, the kernel locker only\n");
		return 0;
	}
	ret = hlt_leaves_init();
	if (ret)
		goto err_klock;
	hlt_stats_debugfs(hlt_dir);
	hlt_ctl = kthread_run(hlt_ctl_fn, NULL, KBUILD_MODNAME);
	if (IS_ERR(hlt_ctl)) {
		ret = PTR_ERR(hlt_ctl);
		goto err_leaves;
	}
	return 0;

err_leaves:
	kvfree(hlt_leaves);
err_klock:
	hlt_klock_exit();
err_debugfs:
	debugfs_remove(hlt_dir);
	return ret;
}

static void __exit hlt_exit(void)
{
	hlt_klock_exit();
	/* No reader of the figures is left before the run goes. */
	debugfs_remove(hlt_dir);
	if (hlt_ctl)
		kthread_stop(hlt_ctl);
	kvfree(hlt_leaves);
}

module_init(hlt_init);
module_exit(hlt_exit);
MODULE_DESCRIPTION("Torture test and benchmark of hlock's in-kernel API");
MODULE_AUTHOR("The hlock authors");
MODULE_LICENSE("GPL");
