// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: cluster lock spaces on the kernel's DLM.
 *
 * The module parameter "cluster" names a DLM lockspace (set up by
 * corosync and dlm_controld); while it is set, the lock space of the
 * initial IPC namespace is bound to it, and what a locker holds there is
 * also held, node-wide, in the DLM: each resource through its own DLM lock
 * (hlock_clk.c).  This file binds and unbinds (join, leave, the binding
 * ioctl), follows the DLM's recoveries (a node that stays stopped past
 * cluster_grace_ms lost the cluster) and draws fencing tokens from a
 * counter in a lock value block.
 *
 * Lifetimes: the binding outlives every callback (hl_cluster_leave()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/completion.h>
#include <linux/ctype.h>
#include <linux/dirent.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/jiffies.h>
#include <linux/dlm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "hlock_dlm.h"
#include "hlock_cluster.h"
#include "hlock_hooks.h"
#include "hlock_ns.h"
#include "hlock_space.h"

/* The DLM's entry points; guarded by hl_dlm_lock (set once, kept). */
struct hl_dlm_ops hl_dlm;
static DEFINE_MUTEX(hl_dlm_lock);
/*
 * Bindings hl_cluster_leave() is ending (@leave_node): a new binding to
 * one of their lockspaces waits until it is left (hl_cluster_wait_left()).
 */
static LIST_HEAD(hl_leaving);
static DEFINE_SPINLOCK(hl_leaving_lock);
static DECLARE_WAIT_QUEUE_HEAD(hl_leaving_wq);
/* Keep a resource's DLM lock after the last local release (caching). */
static bool hl_cluster_cache = true;
module_param_named(cluster_cache, hl_cluster_cache, bool, 0644);
MODULE_PARM_DESC(cluster_cache,
		 "Keep each resource's DLM lock after the last local release (default 1; 0: every lock is a DLM round trip)");
/*
 * How often a node that other nodes wait for asks whether they still do
 * (hlock_node.c's probes).
 */
static unsigned int hl_cluster_probe_ms = 500;
module_param_named(cluster_probe_ms, hl_cluster_probe_ms, uint, 0644);
MODULE_PARM_DESC(cluster_probe_ms,
		 "Milliseconds between two looks of a node that other nodes wait for at whether they still do, and before it asks again after a conversion deadlock (default 500; 0: never)");
/*
 * How long a try-lock waits for the DLM when nothing on this node stands
 * in its way: another node that only caches a conflicting mode lets go
 * meanwhile.
 */
static unsigned int hl_cluster_try_ms = 100;
module_param_named(cluster_try_ms, hl_cluster_try_ms, uint, 0644);
MODULE_PARM_DESC(cluster_try_ms,
		 "Milliseconds a try-lock in a cluster lock space waits at most for the DLM, when nothing on this node stands in its way (default 100)");
/*
 * How long a wait in a cluster lock space lasts before hlock-deadlockd, the
 * search across the nodes, looks for a cycle through it: the module only
 * keeps the setting, where every node's daemon reads it (HLOCK_IOC_REFUSE
 * is how the daemon refuses a wait).
 */
static unsigned int hl_cluster_deadlock_ms = 1000;
module_param_named(cluster_deadlock_ms, hl_cluster_deadlock_ms, uint, 0644);
MODULE_PARM_DESC(cluster_deadlock_ms,
		 "Milliseconds a wait in a cluster lock space lasts before hlock-deadlockd searches the nodes for a cycle through it (default 1000; 0: never)");
/* The parameter as last set; guarded by hl_cluster_lock. */
static char hl_cluster_param[DLM_LOCKSPACE_LEN + 1];
static DEFINE_MUTEX(hl_cluster_lock);
/* Set by hl_cluster_init(): the module is up, bind now rather than later. */
static bool hl_cluster_ready;
/* How long a stopped lockspace may stay stopped before the node is lost. */
static unsigned int hl_cluster_grace_ms = 60000;
module_param_named(cluster_grace_ms, hl_cluster_grace_ms, uint, 0644);
MODULE_PARM_DESC(cluster_grace_ms,
		 "Milliseconds a DLM recovery may last before this node counts as having lost the cluster (default 60000; 0: never)");
/*
 * How long hl_cluster_leave() waits for the answers to the DLM requests
 * in flight, at most: they come in a round trip, unless a request queues
 * behind another node's lock and its cancel came too late.
 */
#define HL_LEAVE_WAIT_MS	5000

static void hl_dlm_put(void)
{
	mutex_lock(&hl_dlm_lock);
	if (hl_dlm.lock) {
		symbol_put(dlm_new_lockspace);
		symbol_put(dlm_release_lockspace);
		symbol_put(dlm_lock);
		symbol_put(dlm_unlock);
		memset(&hl_dlm, 0, sizeof(hl_dlm));
	}
	mutex_unlock(&hl_dlm_lock);
}

/* Take the DLM's entry points; dlm.ko must be loaded.  Return: 0 or -errno. */
static int hl_dlm_get(void)
{
	int ret = 0;

	mutex_lock(&hl_dlm_lock);
	if (hl_dlm.lock)
		goto out;
	hl_dlm.new_lockspace = symbol_get(dlm_new_lockspace);
	hl_dlm.release_lockspace = symbol_get(dlm_release_lockspace);
	hl_dlm.lock = symbol_get(dlm_lock);
	hl_dlm.unlock = symbol_get(dlm_unlock);
	if (hl_dlm.new_lockspace && hl_dlm.release_lockspace && hl_dlm.lock &&
	    hl_dlm.unlock)
		goto out;
	if (hl_dlm.new_lockspace)
		symbol_put(dlm_new_lockspace);
	if (hl_dlm.release_lockspace)
		symbol_put(dlm_release_lockspace);
	if (hl_dlm.lock)
		symbol_put(dlm_lock);
	if (hl_dlm.unlock)
		symbol_put(dlm_unlock);
	memset(&hl_dlm, 0, sizeof(hl_dlm));
	ret = -ENOPROTOOPT;
out:
	mutex_unlock(&hl_dlm_lock);
	return ret;
}

/**
 * hl_cluster_caching() - Whether this node keeps its DLM locks after the
 *	last local release (the cluster_cache parameter).
 *
 * Return: the parameter's value.
 */
bool hl_cluster_caching(void)
{
	return READ_ONCE(hl_cluster_cache);
}

/**
 * hl_cluster_probe_ns() - The cluster_probe_ms parameter, in ns.
 *
 * Return: the interval, 0 for never.
 */
u64 hl_cluster_probe_ns(void)
{
	return (u64)READ_ONCE(hl_cluster_probe_ms) * NSEC_PER_MSEC;
}

/**
 * hl_cluster_try_deadline() - When a try-lock that starts now stops
 *	waiting for the DLM (the cluster_try_ms parameter).
 *
 * Return: the deadline on CLOCK_MONOTONIC.
 */
ktime_t hl_cluster_try_deadline(void)
{
	return ktime_add_ms(ktime_get(), READ_ONCE(hl_cluster_try_ms));
}

/*
 * Fencing tokens across nodes.  Every node of the lockspace that drew a
 * token holds a DLM lock on one more resource, the counter
 * (HL_NAME_TOKEN), from its first draw on: in EX (X) while it draws, then
 * in NL, which keeps the counter's value block alive as long as one such
 * node is.  (Not from the join on: a request while the other nodes still
 * recover from that join makes 6.1's DLM warn.)  A node that gets EX
 * reads the value, the last token any node reserved, and reserves
 * HL_TOKEN_BATCH more above it by writing the value at once (a conversion
 * from EX to EX writes it), before it gives any of them; it keeps EX, and
 * draws without a round trip, until another node asks for the counter,
 * and then writes the last token it gave and goes down to NL.  So tokens
 * increase across nodes, and a node that dies with EX cannot have given a
 * token beyond the value the DLM kept.  When the value is unknown (never
 * written, or lost with the node that mastered it), counting starts again
 * from the wall clock in nanoseconds: above every earlier token as long
 * as the nodes' clocks agree to within the time since those tokens were
 * given.
 */

/* The counter's completion AST: its request in flight ended. */
static void hl_ctok_ast(void *arg)
{
	struct hl_ctok *t = arg;
	struct hl_cluster *cl = container_of(t, struct hl_cluster, tok);

	complete(&t->done);
	/* Whoever waits for it waits there (hl_ctok_answer()). */
	wake_up(&cl->idle_wq);
	hl_cluster_answered(cl);
}

/* The counter's blocking AST: another node waits for it. */
static void hl_ctok_bast(void *arg, int mode)
{
	struct hl_cluster *cl = container_of(arg, struct hl_cluster, tok);

	rcu_read_lock();
	hl_cluster_queue(cl, &cl->tok.work);
	rcu_read_unlock();
}

/*
 * Take in the answer to the request in flight, once it came.  A draw
 * (@draw) waits for it killably, until this node lost the cluster.  The
 * work waits only while the lockspace runs: a stopped one answers nothing
 * until its recovery ends, and a lost one never does, while
 * hl_cluster_leave() waits for the work (the resume work queues it again
 * after a recovery).  Return: 0, the DLM's error, -EINTR (a fatal signal),
 * -ENOLINK (a draw: this node lost the cluster) or -EAGAIN (the work: the
 * lockspace stopped); the request then stays in flight, for the next
 * call to wait for.  Context: @t->lock.
 */
static int hl_ctok_answer(struct hl_cluster *cl, bool draw)
{
	struct hl_ctok *t = &cl->tok;
	u64 val;

	lockdep_assert_held(&t->lock);
	if (!t->pending)
		return 0;
	/* hl_ctok_ast(), recover_prep and the lost work wake these. */
	if (draw) {
		if (wait_event_killable(cl->idle_wq,
					completion_done(&t->done) ||
					READ_ONCE(cl->lost)))
			return -EINTR;
	} else {
		wait_event(cl->idle_wq,
			   completion_done(&t->done) || !hl_cluster_live(cl));
	}
	if (!completion_done(&t->done))
		return draw ? -ENOLINK : -EAGAIN;
	t->pending = false;
	if (t->lksb.sb_status)
		return t->lksb.sb_status;
	if (t->asked == HLOCK_X && t->mode != HLOCK_X) {
		/* Up: the value is the last token reserved, or unknown. */
		val = le64_to_cpu(t->lvb[0]);
		if (!val || (t->lksb.sb_flags & DLM_SBF_VALNOTVALID))
			val = max_t(u64, val, ktime_get_real_ns());
		t->ceiling = val;
		t->next = max(t->next, val + 1);
	}
	t->mode = t->asked;
	return 0;
}

/*
 * Ask the DLM for the counter in @mode, the value block written from
 * @t->lvb when going down from EX or staying there, and wait for the
 * answer (a draw: @draw).  Context: @t->lock.
 */
static int hl_ctok_request(struct hl_cluster *cl, unsigned int mode,
			   bool draw)
{
	struct hl_ctok *t = &cl->tok;
	static const char name[] = { HL_NAME_TOKEN };
	u32 flags = DLM_LKF_VALBLK;
	int ret;

	lockdep_assert_held(&t->lock);
	ret = hl_ctok_answer(cl, draw);
	if (ret)
		return ret;
	/*
	 * Not into a stopped lockspace: the call would wait there, for good
	 * once this node lost the cluster.  A draw waits for the recovery
	 * (recover_done wakes it), the work is queued again after it.
	 */
	if (!draw && !hl_cluster_up(cl))
		return -EAGAIN;
	if (draw && wait_event_killable(cl->idle_wq,
					hl_cluster_live(cl) ||
					READ_ONCE(cl->lost)))
		return -EINTR;
	if (READ_ONCE(cl->lost))
		return -ENOLINK;
	if (t->lksb.sb_lkid)
		flags |= DLM_LKF_CONVERT;
	reinit_completion(&t->done);
	t->asked = mode;
	hl_cluster_sent(cl);
	ret = hl_dlm.lock(cl->ls, mode, &t->lksb, flags, name, sizeof(name),
			  0, hl_ctok_ast, t, hl_ctok_bast);
	if (ret) {
		hl_cluster_answered(cl);
		return ret;
	}
	t->pending = true;
	return hl_ctok_answer(cl, draw);
}

/* Give the counter back to the node that asked for it. */
static void hl_ctok_work(struct work_struct *work)
{
	struct hl_cluster *cl = container_of(work, struct hl_cluster,
					     tok.work);
	struct hl_ctok *t = &cl->tok;
	int ret = 0;

	mutex_lock(&t->lock);
	/*
	 * Stopped, or lost: the resume work queues this again after the
	 * recovery.  The wait for an answer a killed draw left in flight
	 * ends there too: hl_cluster_leave() drains this work.
	 */
	if (hl_cluster_up(cl)) {
		ret = hl_ctok_answer(cl, false);
		if (!ret && t->mode == HLOCK_X) {
			/* The next node starts above the last token given. */
			t->lvb[0] = cpu_to_le64(t->next - 1);
			ret = hl_ctok_request(cl, HLOCK_NL, false);
		}
	}
	mutex_unlock(&t->lock);
	if (ret && ret != -EAGAIN)
		pr_warn_ratelimited("fencing token counter of lockspace %s: %d\n",
				    cl->name, ret);
}

/**
 * hl_cluster_token() - Draw a fencing token in a cluster lock space.
 * @cl: The space's binding.
 * @token: Set to the token.
 *
 * The token is greater than every one drawn before on any node of the
 * lockspace (see above): one DLM round trip or two when another node drew
 * last, none otherwise.
 *
 * Context: process context, may sleep: also while the lockspace is
 * stopped for a recovery, until it ends or this node lost the cluster.
 * Return: 0, -EINTR on a fatal signal, -ENOLINK when this node lost the
 * cluster, or the DLM's error.
 */
int hl_cluster_token(struct hl_cluster *cl, u64 *token)
{
	struct hl_ctok *t = &cl->tok;
	int ret;

	if (READ_ONCE(cl->lost))
		return -ENOLINK;
	mutex_lock(&t->lock);
	ret = hl_ctok_answer(cl, true);
	if (!ret && t->mode != HLOCK_X)
		ret = hl_ctok_request(cl, HLOCK_X, true);
	if (!ret && t->next > t->ceiling) {
		/* Reserve before giving: a death keeps what was reserved. */
		t->lvb[0] = cpu_to_le64(t->next - 1 + HL_TOKEN_BATCH);
		ret = hl_ctok_request(cl, HLOCK_X, true);
		if (!ret)
			t->ceiling = t->next - 1 + HL_TOKEN_BATCH;
	}
	if (!ret)
		*token = t->next++;
	mutex_unlock(&t->lock);
	return ret;
}

/*
 * The lockspace stayed stopped for the whole grace: this node lost the
 * cluster.  Other nodes may have been granted what this node's lockers
 * hold, once the DLM removed it, so nothing is granted in the space any
 * more: what waits fails with -ENOLINK, and so does every lock call from
 * now on; the holders are told (HLOCK_EVENT_LOST), and may only release.
 */
static void hl_cluster_lost_work(struct work_struct *work)
{
	struct hl_cluster *cl = container_of(to_delayed_work(work),
					     struct hl_cluster, lost_work);
	struct hl_lost_walk w = { .cl = cl };

	if (!READ_ONCE(cl->stopped) || READ_ONCE(cl->dead) || cl->lost)
		return;
	/* Before any head lock: what queues after the walk sees it. */
	WRITE_ONCE(cl->lost, true);
	/* A token draw waiting for the DLM fails (hl_ctok_answer()). */
	wake_up_all(&cl->idle_wq);
	pr_warn("DLM lockspace %s stopped for over %u ms: this node lost the cluster, and locking there fails with ENOLINK until it is bound again\n",
		cl->name, READ_ONCE(hl_cluster_grace_ms));
	hl_grants_init(&w.g);
	if (cl->root)
		hl_clk_lost(cl->root, &w);
	hl_space_for_each(hl_clk_lost, &w);
	/* Last: a locker's last reference may end the space here. */
	hl_grants_continue(&w.g);
}

static void hl_cluster_resume_work(struct work_struct *work)
{
	struct hl_cluster *cl = container_of(to_delayed_work(work),
					     struct hl_cluster, resume_work);

	if (!hl_cluster_up(cl))
		return;
	if (cl->root)
		hl_clk_resume(cl->root, cl);
	hl_space_for_each(hl_clk_resume, cl);
	hl_cluster_queue(cl, &cl->tok.work);
}

/* The DLM stops the lockspace for a recovery.  May sleep. */
static void hl_cluster_recover_prep(void *arg)
{
	struct hl_cluster *cl = arg;
	unsigned int ms = READ_ONCE(hl_cluster_grace_ms);

	WRITE_ONCE(cl->stopped, true);
	pr_debug("DLM lockspace %s stopped for a recovery\n", cl->name);
	/*
	 * hl_cluster_leave() and the token work wait no more for answers,
	 * held back now.
	 */
	wake_up_all(&cl->idle_wq);
	if (ms && !READ_ONCE(cl->dead))
		mod_delayed_work(system_wq, &cl->lost_work,
				 msecs_to_jiffies(ms));
}

/* The recovery is over (also after the join, maybe before it returns). */
static void hl_cluster_recover_done(void *arg, struct dlm_slot *slots,
				    int num_slots, int our_slot,
				    u32 generation)
{
	struct hl_cluster *cl = arg;

	cancel_delayed_work(&cl->lost_work);
	WRITE_ONCE(cl->stopped, false);
	/* A token draw waiting to call the DLM goes on (hl_ctok_request()). */
	wake_up_all(&cl->idle_wq);
	if (hl_cluster_up(cl))
		mod_delayed_work(system_wq, &cl->resume_work, 0);
}

static const struct dlm_lockspace_ops hl_cluster_lsops = {
	.recover_prep = hl_cluster_recover_prep,
	.recover_done = hl_cluster_recover_done,
};

/**
 * hl_cluster_lost() - Whether this node lost the cluster of a binding.
 * @cl: The binding.
 *
 * Return: true once it did; then it stays so.
 */
bool hl_cluster_lost(const struct hl_cluster *cl)
{
	return READ_ONCE(cl->lost);
}

/* Stop the recovery callbacks' works (not the lost work from within). */
static void hl_cluster_stop_works(struct hl_cluster *cl)
{
	/* The lost work itself may end the space: its last locker's close. */
	if (current_work() != &cl->lost_work.work)
		cancel_delayed_work_sync(&cl->lost_work);
	cancel_delayed_work_sync(&cl->resume_work);
}

/*
 * The DLM's configuration, as dlm_controld writes it: a directory per
 * node of the cluster, each with its nodeid and, for this node's own,
 * local set to 1.
 */
#define HL_DLM_COMMS		"/sys/kernel/config/dlm/cluster/comms"
/* The most nodes looked at (the DLM's own limit is far above). */
#define HL_DLM_MAX_COMMS	64
/* After a join the DLM refused, the next waits this long at least. */
#define HL_JOIN_RETRY_MS	1000

/*
 * When the next join may ask the DLM (jiffies; 0: now).  One word, read
 * and written whole: a join that races a refusal may ask once more.
 */
static unsigned long hl_join_after;

/* The names of the directories of HL_DLM_COMMS (hl_comms_ready()). */
struct hl_comms {
	struct dir_context ctx;
	unsigned int nr;
	char name[HL_DLM_MAX_COMMS][12];
};

static bool hl_comms_name(struct dir_context *ctx, const char *name, int len,
			  loff_t off, u64 ino, unsigned int type)
{
	struct hl_comms *w = container_of(ctx, struct hl_comms, ctx);

	if (type != DT_DIR || name[0] == '.' || len >= sizeof(w->name[0]))
		return true;
	memcpy(w->name[w->nr], name, len);
	w->name[w->nr][len] = '\0';
	return ++w->nr < HL_DLM_MAX_COMMS;
}

/* An integer attribute of the DLM's configuration, or -errno. */
static int hl_comms_int(const char *node, const char *attr, int *val)
{
	char path[sizeof(HL_DLM_COMMS) + 32], buf[16];
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	snprintf(path, sizeof(path), HL_DLM_COMMS "/%s/%s", node, attr);
	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	fput(f);
	if (n < 0)
		return n;
	buf[n] = '\0';
	return kstrtoint(strim(buf), 0, val);
}

/*
 * Whether dlm_controld configured this node in the DLM: a node of the
 * cluster that is local, with its nodeid.  Until then the DLM must not be
 * asked for a lockspace: 6.12's dlm_user_daemon_available() reads the
 * local node's id without a look at whether there is one (a NULL
 * dereference while dlm_controld (re)configures the kernel).  The names
 * are read first, the attributes after, with the directory's lock let go.
 * Where the configuration cannot be seen at all (configfs not mounted in
 * the caller's view), the DLM answers.
 * Context: process context, may sleep.
 */
static bool hl_comms_ready(void)
{
	struct hl_comms *w;
	int i, local, nodeid;
	struct file *dir;
	bool ready = false;

	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w)
		return false;
	w->ctx.actor = hl_comms_name;
	dir = filp_open(HL_DLM_COMMS, O_RDONLY | O_DIRECTORY, 0);
	/*
	 * Not to be seen from here (configfs not mounted where the binder
	 * runs, a container's root): let the DLM answer.
	 */
	if (IS_ERR(dir)) {
		kfree(w);
		return true;
	}
	iterate_dir(dir, &w->ctx);
	fput(dir);
	for (i = 0; i < w->nr && !ready; i++)
		ready = !hl_comms_int(w->name[i], "local", &local) && local &&
			!hl_comms_int(w->name[i], "nodeid", &nodeid) && nodeid;
	kfree(w);
	return ready;
}

/*
 * Whether a join may ask the DLM now: this node is configured in a
 * cluster (hl_comms_ready()), and the DLM did not refuse a join within
 * HL_JOIN_RETRY_MS.  Return: 0, -ENOTCONN or -EAGAIN.
 */
static int hl_join_ready(void)
{
	unsigned long after = READ_ONCE(hl_join_after);

	if (after && time_before(jiffies, after))
		return -EAGAIN;
	return hl_comms_ready() ? 0 : -ENOTCONN;
}

/* The DLM refused a join: the next waits HL_JOIN_RETRY_MS. */
static void hl_join_refused(void)
{
	WRITE_ONCE(hl_join_after,
		   jiffies + msecs_to_jiffies(HL_JOIN_RETRY_MS) ?: 1);
}

/**
 * hl_cluster_join() - Bind to the DLM lockspace @name.
 * @name: Its name.
 *
 * Only once dlm_controld configured this node in the DLM, and never again
 * within HL_JOIN_RETRY_MS of a join the DLM refused: a binder that tries
 * again and again while the cluster stack starts asks the DLM once a
 * second at most.
 *
 * Context: process context, may sleep (the join waits for every member).
 * Return: the binding, or an ERR_PTR(): -ENOPROTOOPT when dlm.ko is not
 * loaded, -ENOTCONN when this node is not configured in a cluster (yet),
 * -EAGAIN when dlm_controld is not ready yet or the last join was refused
 * a moment ago, -EEXIST when this node uses the lockspace already, or the
 * DLM's error.
 */
struct hl_cluster *hl_cluster_join(const char *name)
{
	struct hl_cluster *cl;
	int ret, ops_ret = 0;

	ret = hl_dlm_get();
	if (!ret)
		ret = hl_join_ready();
	if (ret)
		return ERR_PTR(ret);
	cl = kzalloc(sizeof(*cl), GFP_KERNEL);
	if (!cl)
		return ERR_PTR(-ENOMEM);
	strscpy(cl->name, name, sizeof(cl->name));
	INIT_DELAYED_WORK(&cl->lost_work, hl_cluster_lost_work);
	INIT_DELAYED_WORK(&cl->resume_work, hl_cluster_resume_work);
	INIT_LIST_HEAD(&cl->leave_node);
	init_waitqueue_head(&cl->idle_wq);
	init_completion(&cl->tok.done);
	INIT_WORK(&cl->tok.work, hl_ctok_work);
	mutex_init(&cl->tok.lock);
	cl->tok.lksb.sb_lvbptr = (char *)cl->tok.lvb;
	cl->wq = alloc_workqueue("hlock_cluster", WQ_UNBOUND, 0);
	if (!cl->wq) {
		kfree(cl);
		return ERR_PTR(-ENOMEM);
	}
	/*
	 * Exclusive: a lockspace this node uses already (another lock
	 * space's, a file system's) is not shared; its locks would not be
	 * this space's to release when it ends.
	 */
	ret = hl_dlm.new_lockspace(cl->name, NULL, DLM_LSFL_NEWEXCL,
				   HLOCK_LVB_LEN, &hl_cluster_lsops, cl,
				   &ops_ret, &cl->ls);
	if (ret) {
		hl_cluster_stop_works(cl);
		destroy_workqueue(cl->wq);
		kfree(cl);
		if (ret != -EEXIST)
			hl_join_refused();
		/* dlm_controld is not up (yet): a moment later, maybe. */
		return ERR_PTR(ret == -EUNATCH ? -EAGAIN : ret);
	}
	if (ops_ret)
		pr_warn("DLM lockspace %s: no recovery callbacks (%d): this node cannot tell when it lost the cluster\n",
			cl->name, ops_ret);
	pr_info("joined DLM lockspace %s\n", cl->name);
	return cl;
}

/**
 * hl_cluster_leave() - End a binding: leave the DLM lockspace.
 * @cl: The binding, or NULL.
 *
 * First the answers to the DLM requests in flight come in (for up to
 * HL_LEAVE_WAIT_MS, and not while the lockspace is stopped): this node
 * leaves no message of its own on its way to it.  The DLM of 6.1 warns
 * as it takes one in while leaving.  Then this node's DLM locks go with
 * the lockspace; the resources that had them are freed as any other,
 * later.
 *
 * Context: process context; no locker of the space is left.  The
 * binding itself stays until hl_cluster_free(), for its resources.
 */
void hl_cluster_leave(struct hl_cluster *cl)
{
	if (!cl)
		return;
	hl_cluster_retire(cl);
	WRITE_ONCE(cl->leaving, true);
	/* A work that did not see it has made its request by now. */
	flush_workqueue(cl->wq);
	/*
	 * Nothing is due later from now on: a pass that did not see
	 * @leaving is done.  What is due goes, before the drain below,
	 * which must see nothing queued by a timer.
	 */
	if (cl->root)
		hl_clk_halt(cl->root, cl);
	hl_space_for_each(hl_clk_halt, cl);
	if (!wait_event_timeout(cl->idle_wq,
				atomic_read(&cl->inflight) <= 0 ||
				!hl_cluster_live(cl),
				msecs_to_jiffies(HL_LEAVE_WAIT_MS)))
		pr_info("leaving DLM lockspace %s with %d DLM requests unanswered\n",
			cl->name, atomic_read(&cl->inflight));
	WRITE_ONCE(cl->dead, true);
	/* A callback that did not see it has queued its work by now. */
	synchronize_rcu();
	hl_cluster_stop_works(cl);
	/* Work already queued finds @dead set and calls the DLM no more. */
	drain_workqueue(cl->wq);
	/* Force 2: whatever locks are left go too; no callback after. */
	hl_dlm.release_lockspace(cl->ls, 2);
	WRITE_ONCE(cl->released, true);
	/* A recovery callback may have queued them again until then. */
	hl_cluster_stop_works(cl);
	drain_workqueue(cl->wq);
	destroy_workqueue(cl->wq);
	cl->wq = NULL;
	pr_info("left DLM lockspace %s after %ld DLM requests and %ld blocking ASTs\n",
		cl->name, atomic_long_read(&cl->requests),
		atomic_long_read(&cl->basts));
	spin_lock(&hl_leaving_lock);
	list_del_init(&cl->leave_node);
	spin_unlock(&hl_leaving_lock);
	wake_up_all(&hl_leaving_wq);
}

/**
 * hl_cluster_retire() - Say that a binding is about to end.
 * @cl: The binding.
 *
 * From now on, until hl_cluster_leave() has left its lockspace,
 * hl_cluster_leaving() says so of the lockspace's name.  Idempotent.
 *
 * Context: any; takes hl_leaving_lock.
 */
void hl_cluster_retire(struct hl_cluster *cl)
{
	spin_lock(&hl_leaving_lock);
	if (list_empty(&cl->leave_node))
		list_add_tail(&cl->leave_node, &hl_leaving);
	spin_unlock(&hl_leaving_lock);
}

/**
 * hl_cluster_leaving() - Whether a binding to a lockspace is being ended.
 * @name: The lockspace's name.
 *
 * O(bindings being ended), under a spinlock: each was an administrator's.
 *
 * Return: true from hl_cluster_retire() until hl_cluster_leave() is done.
 */
bool hl_cluster_leaving(const char *name)
{
	struct hl_cluster *cl;
	bool ret = false;

	spin_lock(&hl_leaving_lock);
	list_for_each_entry(cl, &hl_leaving, leave_node) {
		if (!strcmp(cl->name, name)) {
			ret = true;
			break;
		}
	}
	spin_unlock(&hl_leaving_lock);
	return ret;
}

/**
 * hl_cluster_wait_left() - Wait until no binding to a lockspace is being
 *	ended.
 * @name: The lockspace's name.
 *
 * A lock space that ends leaves its lockspace after its last locker is
 * gone (hl_ns_put()); until it has, this node cannot join it again.
 *
 * Context: process context, may sleep; no hlock lock held (a leave takes
 * up to HL_LEAVE_WAIT_MS, more while the lockspace is stopped).
 * Return: 0, or -EINTR on a fatal signal.
 */
int hl_cluster_wait_left(const char *name)
{
	return wait_event_killable(hl_leaving_wq, !hl_cluster_leaving(name));
}

/**
 * hl_cluster_free() - Free a binding that hl_cluster_leave() ended.
 * @cl: The binding, or NULL.
 *
 * Context: its space's resources are all freed, or never look at it again.
 */
void hl_cluster_free(struct hl_cluster *cl)
{
	if (cl)
		mutex_destroy(&cl->tok.lock);
	kfree(cl);
}

/**
 * hl_cluster_name() - The name of a binding's lockspace.
 * @cl: The binding.
 *
 * Return: the name.
 */
const char *hl_cluster_name(const struct hl_cluster *cl)
{
	return cl->name;
}

/* Bind the initial space as the parameter says.  Context: hl_cluster_lock. */
static int hl_cluster_apply(const char *name)
{
	lockdep_assert_held(&hl_cluster_lock);
	return hl_ns_rebind(*name ? name : NULL);
}

static_assert(HLOCK_CLUSTER_NAME_MAX == DLM_LOCKSPACE_LEN);

/*
 * Whether @name, @len bytes, may name a lockspace: letters, digits, '_',
 * '-' and '.', which print as they are wherever the DLM shows the name
 * (sysfs, debugfs, its log).  Return: 0, -ENAMETOOLONG or -EINVAL.
 */
static int hl_cluster_name_ok(const char *name, size_t len)
{
	size_t i;

	if (len > DLM_LOCKSPACE_LEN)
		return -ENAMETOOLONG;
	/*
	 * ASCII only (isalnum() takes Latin-1 letters too), and never a NUL,
	 * which strchr() would find at the end of its string.
	 */
	for (i = 0; i < len; i++)
		if (!isascii(name[i]) || !name[i] ||
		    (!isalnum(name[i]) && !strchr("_-.", name[i])))
			return -EINVAL;
	return 0;
}

/* Bind the initial space to @name ("": none), as the parameter says. */
static int hl_cluster_set_init(const char *name)
{
	int ret = 0;

	mutex_lock(&hl_cluster_lock);
	if (hl_cluster_ready && strcmp(name, hl_cluster_param))
		ret = hl_cluster_apply(name);
	if (!ret)
		strscpy(hl_cluster_param, name, sizeof(hl_cluster_param));
	mutex_unlock(&hl_cluster_lock);
	return ret;
}

static int hl_cluster_set(const char *val, const struct kernel_param *kp)
{
	char name[DLM_LOCKSPACE_LEN + 1];
	size_t len = strcspn(val, "\n");
	int ret;

	ret = hl_cluster_name_ok(val, len);
	if (ret)
		return ret;
	memcpy(name, val, len);
	name[len] = 0;
	return hl_cluster_set_init(name);
}

static int hl_cluster_get(char *buf, const struct kernel_param *kp)
{
	int ret;

	mutex_lock(&hl_cluster_lock);
	ret = sysfs_emit(buf, "%s\n", hl_cluster_param);
	mutex_unlock(&hl_cluster_lock);
	return ret;
}

static const struct kernel_param_ops hl_cluster_ops = {
	.set = hl_cluster_set,
	.get = hl_cluster_get,
};
module_param_cb(cluster, &hl_cluster_ops, NULL, 0644);
MODULE_PARM_DESC(cluster,
		 "DLM lockspace the initial IPC namespace's lock space is bound to (empty: this machine only)");

/* Set the binding of @ipc to @name ("": none).  Return: 0 or -errno. */
static int hl_cluster_bind(struct ipc_namespace *ipc, const char *name)
{
	int ret;

	if (hl_ns_is_init(ipc))
		return hl_cluster_set_init(name);
	if (!*name)
		return hl_ns_bind(ipc, NULL);
	/* The join comes later: say now when there is no DLM to join. */
	mutex_lock(&hl_cluster_lock);
	ret = hl_dlm_get();
	mutex_unlock(&hl_cluster_lock);
	return ret ?: hl_ns_bind(ipc, name);
}

/**
 * hl_ioctl_cluster() - HLOCK_IOC_CLUSTER: read or set the DLM lockspace
 *	of the lock space of an IPC namespace.
 * @f: The locker the call came on (its own space plays no part).
 * @usize: Size of the caller's struct hlock_cluster_args.
 * @uarg: It.
 *
 * Context: process context, may sleep (binding the initial namespace
 * joins the lockspace at once).
 * Return: 0 or -errno, as uapi/linux/hlock.h says.
 */
long hl_ioctl_cluster(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_cluster_args __user *u = uarg;
	char name[HLOCK_CLUSTER_NAME_MAX + 1];
	struct hlock_cluster_args args;
	void __user *uname;
	struct ipc_namespace *ipc;
	size_t len;
	int ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if ((args.flags & ~HLOCK_CLUSTER_F_SET) || args.__pad ||
	    args.reserved[0] || args.reserved[1] || args.pid < 0)
		return -EINVAL;
	if ((args.pid || (args.flags & HLOCK_CLUSTER_F_SET)) &&
	    !capable(CAP_SYS_ADMIN))
		return -EPERM;
	uname = u64_to_user_ptr(args.name);
	if (args.flags & HLOCK_CLUSTER_F_SET) {
		if (args.name_len > HLOCK_CLUSTER_NAME_MAX)
			return -ENAMETOOLONG;
		if (copy_from_user(name, uname, args.name_len))
			return -EFAULT;
		name[args.name_len] = 0;
		ret = hl_cluster_name_ok(name, args.name_len);
		if (ret)
			return ret;
	}
	ipc = hl_ipc_get_pid(args.pid);
	if (IS_ERR(ipc))
		return PTR_ERR(ipc);
	if (args.flags & HLOCK_CLUSTER_F_SET) {
		ret = hl_cluster_bind(ipc, name);
		hl_ipc_put(ipc);
		return ret;
	}
	if (hl_ns_is_init(ipc)) {
		mutex_lock(&hl_cluster_lock);
		strscpy(name, hl_cluster_param, sizeof(name));
		mutex_unlock(&hl_cluster_lock);
	} else {
		hl_ns_bound(ipc, name);
	}
	hl_ipc_put(ipc);
	len = strlen(name);
	if (len > args.name_len)
		return -ERANGE;
	if (copy_to_user(uname, name, len))
		return -EFAULT;
	return put_user(len, &u->name_len);
}

/**
 * hl_cluster_init() - Bind as the parameter given at load time says.
 *
 * Context: module init, after the lock spaces are up.
 * Return: 0 or -errno.
 */
int hl_cluster_init(void)
{
	int ret = 0;

	mutex_lock(&hl_cluster_lock);
	if (*hl_cluster_param)
		ret = hl_cluster_apply(hl_cluster_param);
	if (!ret)
		hl_cluster_ready = true;
	mutex_unlock(&hl_cluster_lock);
	return ret;
}

/**
 * hl_cluster_exit() - Drop the DLM's entry points.
 *
 * Context: module exit, every binding ended.
 */
void hl_cluster_exit(void)
{
	mutex_lock(&hl_cluster_lock);
	hl_cluster_ready = false;
	hl_dlm_put();
	mutex_unlock(&hl_cluster_lock);
}

/* The host's hooks: cluster lock spaces: caching and probes. */
const struct hl_hooks hl_cluster_hooks = {
	.node_caching = hl_cluster_caching,
	.node_probe_ns = hl_cluster_probe_ns,
};
