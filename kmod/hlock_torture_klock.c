// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_torture: a kernel locker that userspace drives, for the selftest
 * of kernel and process lockers meeting on one path.
 *
 * /sys/kernel/debug/hlock_torture/klocker takes one command per write:
 *
 *	lock MODE PATH [TIMEOUT_MS] [SLEEP]
 *					the kthread "hlock_klocker" calls
 *					hlock_kernel_lock(); the write
 *					returns at once (-EBUSY while a lock
 *					call is still going on)
 *	try MODE PATH			hlock_kernel_lock() without waiting,
 *					in the writer: a second thread of the
 *					same locker; its error is the write's
 *	unlock PATH			hlock_kernel_unlock(), in the writer;
 *					its error is the write's
 *	signal				SIGUSR1 to the kthread, which a lock
 *					call that sleeps interruptibly ends
 *					with -EINTR, and others ignore
 *	chain N PATH			in the writer: N kernel lockers of
 *					their own (2 to 256) take X on PATH,
 *					the first at once, the others queued
 *					with hlock_kernel_lock_async(), whose
 *					completions each unlock PATH, and so
 *					grant the next; the first unlocks.
 *					0 when every completion came, granted,
 *					in the order queued, and none ran
 *					inside another (-EIO otherwise, said
 *					in the log; -ETIMEDOUT after 30 s)
 *
 * MODE is IS, IX, S, SIX or X; PATH "" is the root; no TIMEOUT_MS waits as
 * long as it takes, 0 only tries; SLEEP is "killable" or "uninterruptible"
 * (HLOCK_KF_*), by default the call sleeps interruptibly.  Anything else
 * is -EINVAL.  A read shows
 * one line per path held ("held X a/b"), "waiting X a/b" while a lock call
 * waits, "idle" when there is neither, and the last command with its
 * result ("last: lock X a/b = 0").
 *
 * The locker is made by the kthread, so the lock table shows it under that
 * name.  Unloading interrupts a lock call that waits with a signal.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "hlock_torture.h"

/* Paths held at once. */
#define HLT_KL_HELD_MAX		16
/* The longest command: "unlock", a path, a mode and a timeout. */
#define HLT_KL_CMD_MAX		(HLOCK_PATH_MAX + 64)
/* How a path is written for the root. */
#define HLT_KL_ROOT		"\"\""

/* A path the kernel locker holds. */
struct hlt_kl_held {
	char *path;
	unsigned int mode;
};

/*
 * The kernel locker.  @lock protects everything but @task, @lk and
 * @ready_err, which are set before the debugfs file exists.
 */
static struct {
	struct mutex lock;	/* serialises commands and the state */
	struct task_struct *task;
	struct hlock_locker *lk;
	wait_queue_head_t wq;
	struct completion ready;
	int ready_err;
	bool stopping;
	/* The lock command written (@pending) or being called (@busy). */
	bool pending;
	bool busy;
	unsigned int mode;
	unsigned int flags;
	char *path;
	s64 timeout_ns;
	struct hlt_kl_held held[HLT_KL_HELD_MAX];
	unsigned int nheld;
	/* The last command that ended: "lock X a/b", and what it returned. */
	char *last;
	int last_res;
} hlt_kl;

static struct dentry *hlt_kl_file;

/* The held entry of @path, or NULL. */
static struct hlt_kl_held *hlt_kl_find(const char *path)
{
	unsigned int i;

	lockdep_assert_held(&hlt_kl.lock);
	for (i = 0; i < hlt_kl.nheld; i++)
		if (!strcmp(hlt_kl.held[i].path, path))
			return &hlt_kl.held[i];
	return NULL;
}

/* Remember the last command and its result; takes @cmd. */
static void hlt_kl_last(char *cmd, int res)
{
	lockdep_assert_held(&hlt_kl.lock);
	kfree(hlt_kl.last);
	hlt_kl.last = cmd;
	hlt_kl.last_res = res;
}

/*
 * Note what a command left on @path, which it takes: @acq, whether an
 * acquisition made there remains; the mode held there, @mode, includes the
 * intents of paths below.
 */
static void hlt_kl_note(char *path, bool acq, int mode)
{
	struct hlt_kl_held *h = hlt_kl_find(path);

	lockdep_assert_held(&hlt_kl.lock);
	if (h && acq) {
		h->mode = mode;
	} else if (h) {
		kfree(h->path);
		*h = hlt_kl.held[--hlt_kl.nheld];
	} else if (acq && !WARN_ON_ONCE(hlt_kl.nheld == HLT_KL_HELD_MAX)) {
		hlt_kl.held[hlt_kl.nheld].path = path;
		hlt_kl.held[hlt_kl.nheld++].mode = mode;
		return;
	}
	kfree(path);
}

/* The kthread: one lock command at a time. */
static void hlt_kl_run_lock(void)
{
	unsigned int mode, flags;
	s64 timeout;
	char *path, *cmd;
	int ret;

	mutex_lock(&hlt_kl.lock);
	hlt_kl.pending = false;
	hlt_kl.busy = true;
	path = hlt_kl.path;
	mode = hlt_kl.mode;
	flags = hlt_kl.flags;
	timeout = hlt_kl.timeout_ns;
	mutex_unlock(&hlt_kl.lock);

	ret = hlock_kernel_lock(hlt_kl.lk, path, mode, flags, timeout);
	cmd = kasprintf(GFP_KERNEL, "lock %s %s", hlt_mode_names[mode],
			*path ? path : HLT_KL_ROOT);

	mutex_lock(&hlt_kl.lock);
	hlt_kl.path = NULL;
	hlt_kl.busy = false;
	hlt_kl_last(cmd, ret);
	/* A failed call leaves what was held before. */
	hlt_kl_note(path, !ret || hlt_kl_find(path),
		    hlock_kernel_held(hlt_kl.lk, path));
	mutex_unlock(&hlt_kl.lock);
}

/* A command to run, or the end; once stopping, only the end. */
static bool hlt_kl_wake(void)
{
	return (READ_ONCE(hlt_kl.pending) && !READ_ONCE(hlt_kl.stopping)) ||
	       kthread_should_stop();
}

static int hlt_kl_fn(void *unused)
{
	/* Unloading interrupts a lock call with it; "signal" sends SIGUSR1. */
	allow_signal(SIGKILL);
	allow_signal(SIGUSR1);
	hlt_kl.lk = hlock_locker_create(NULL);
	hlt_kl.ready_err = PTR_ERR_OR_ZERO(hlt_kl.lk);
	complete(&hlt_kl.ready);
	while (!kthread_should_stop()) {
		if (wait_event_interruptible(hlt_kl.wq, hlt_kl_wake()))
			flush_signals(current);
		else if (!kthread_should_stop() && !hlt_kl.ready_err)
			hlt_kl_run_lock();
	}
	if (!hlt_kl.ready_err)
		hlock_locker_destroy(hlt_kl.lk);
	return 0;
}

/* Split off the next word of @s; NULL when there is none. */
static char *hlt_kl_word(char **s)
{
	char *w;

	do {
		w = strsep(s, " \t\n");
	} while (w && !*w);
	return w;
}

/* A copy of the path in word @w ("" written as two quotes), or an error. */
static char *hlt_kl_path(const char *w)
{
	if (!w || strlen(w) > HLOCK_PATH_MAX)
		return ERR_PTR(-EINVAL);
	if (!strcmp(w, HLT_KL_ROOT))
		w = "";
	return kstrdup(w, GFP_KERNEL) ?: ERR_PTR(-ENOMEM);
}

/*
 * The MODE and PATH words every lock command starts with.  Return: the
 * path (the caller frees it), its mode in *@mode, or ERR_PTR(-EINVAL).
 */
static char *hlt_kl_mode_path(char **s, int *mode)
{
	char *w = hlt_kl_word(s);

	*mode = w ? hlt_mode_parse(w) : -EINVAL;
	if (*mode < 0)
		return ERR_PTR(-EINVAL);
	return hlt_kl_path(hlt_kl_word(s));
}

/*
 * The optional words of a lock command after its path: a timeout in ms
 * (set in @ms, @timed) and a sleep mode (HLOCK_KF_* in @flags), each at
 * most once.  Return: 0 or -EINVAL.
 */
static int hlt_kl_lock_opts(char **s, unsigned int *ms, bool *timed,
			    unsigned int *flags)
{
	char *w;

	*timed = false;
	*flags = 0;
	while ((w = hlt_kl_word(s))) {
		if (!*timed && !kstrtouint(w, 10, ms))
			*timed = true;
		else if (!*flags && !strcmp(w, "killable"))
			*flags = HLOCK_KF_KILLABLE;
		else if (!*flags && !strcmp(w, "uninterruptible"))
			*flags = HLOCK_KF_UNINTERRUPTIBLE;
		else
			return -EINVAL;
	}
	return 0;
}

static int hlt_kl_lock_cmd(char **s)
{
	unsigned int ms = 0, flags;
	int mode, ret = 0;
	char *path;
	bool timed;

	path = hlt_kl_mode_path(s, &mode);
	if (IS_ERR(path))
		return PTR_ERR(path);
	if (hlt_kl_lock_opts(s, &ms, &timed, &flags)) {
		kfree(path);
		return -EINVAL;
	}
	mutex_lock(&hlt_kl.lock);
	if (hlt_kl.stopping)
		ret = -ENODEV;
	else if (hlt_kl.pending || hlt_kl.busy)
		ret = -EBUSY;
	else if (!hlt_kl_find(path) && hlt_kl.nheld == HLT_KL_HELD_MAX)
		ret = -ENOSPC;
	if (!ret) {
		hlt_kl.path = path;
		hlt_kl.mode = mode;
		hlt_kl.flags = flags;
		hlt_kl.timeout_ns = timed ? (s64)ms * NSEC_PER_MSEC : -1;
		WRITE_ONCE(hlt_kl.pending, true);
		wake_up(&hlt_kl.wq);
	}
	mutex_unlock(&hlt_kl.lock);
	if (ret)
		kfree(path);
	return ret;
}

/*
 * A try in the writer: a thread of its own on the kthread's locker, whose
 * lock call may be in flight (then -EBUSY).
 */
static int hlt_kl_try_cmd(char **s)
{
	char *path, *cmd;
	int mode, ret;

	path = hlt_kl_mode_path(s, &mode);
	if (IS_ERR(path))
		return PTR_ERR(path);
	if (hlt_kl_word(s)) {
		kfree(path);
		return -EINVAL;
	}
	cmd = kasprintf(GFP_KERNEL, "try %s %s", hlt_mode_names[mode],
			*path ? path : HLT_KL_ROOT);
	mutex_lock(&hlt_kl.lock);
	/* A try never sleeps: the state may stay locked meanwhile. */
	ret = hlock_kernel_lock(hlt_kl.lk, path, mode, 0, 0);
	hlt_kl_last(cmd, ret);
	if (!ret)
		hlt_kl_note(path, true, hlock_kernel_held(hlt_kl.lk, path));
	else
		kfree(path);
	mutex_unlock(&hlt_kl.lock);
	return ret;
}

static int hlt_kl_unlock_cmd(char **s)
{
	char *path = hlt_kl_path(hlt_kl_word(s)), *cmd;
	int ret;

	if (IS_ERR(path))
		return PTR_ERR(path);
	if (hlt_kl_word(s)) {
		kfree(path);
		return -EINVAL;
	}
	cmd = kasprintf(GFP_KERNEL, "unlock %s", *path ? path : HLT_KL_ROOT);
	mutex_lock(&hlt_kl.lock);
	/* The locker serialises this with a lock call of the kthread. */
	ret = hlock_kernel_unlock(hlt_kl.lk, path);
	hlt_kl_last(cmd, ret);
	/* What remains: the number of acquisitions made on the path. */
	if (ret >= 0)
		hlt_kl_note(path, ret > 0, hlock_kernel_held(hlt_kl.lk, path));
	else
		kfree(path);
	mutex_unlock(&hlt_kl.lock);
	return ret < 0 ? ret : 0;
}

/* The chain command: its lockers, and what their completions saw. */
#define HLT_KL_CHAIN_MAX	256
#define HLT_KL_CHAIN_TASKS	16

struct hlt_kl_chain {
	const char *path;
	struct hlock_locker *lk[HLT_KL_CHAIN_MAX];
	unsigned int n;
	/* Completions running, by task: one inside another is "nested". */
	spinlock_t lock;
	struct task_struct *running[HLT_KL_CHAIN_TASKS];
	unsigned int next;	/* the locker whose completion is due next */
	unsigned int nested, unordered, failed;
	bool stop;		/* the command gave up: completions unlock nothing */
	atomic_t left;
	struct completion all;
};

/*
 * Whether @c has a completion (or, @i 0, the writer's unlock that starts
 * the chain) running in the current task: take a slot.
 */
static bool hlt_kl_chain_enter(struct hlt_kl_chain *c, unsigned int i)
{
	bool nested = false;
	int free = -1, j;

	spin_lock(&c->lock);
	for (j = 0; j < HLT_KL_CHAIN_TASKS; j++) {
		if (c->running[j] == current)
			nested = true;
		else if (!c->running[j] && free < 0)
			free = j;
	}
	if (free >= 0 && !nested)
		c->running[free] = current;
	c->nested += nested;
	if (i) {
		c->unordered += i != c->next;
		c->next = i + 1;
	}
	spin_unlock(&c->lock);
	return nested;
}

static void hlt_kl_chain_leave(struct hlt_kl_chain *c)
{
	int j;

	spin_lock(&c->lock);
	for (j = 0; j < HLT_KL_CHAIN_TASKS; j++)
		if (c->running[j] == current)
			c->running[j] = NULL;
	spin_unlock(&c->lock);
}

/* A completion of the chain: granted, it lets the next locker in. */
static void hlt_kl_chain_done(struct hlock_locker *lk, int res, void *data)
{
	struct hlt_kl_chain *c = data;
	unsigned int i;
	bool nested, stop;

	/* c->n and c->lk[] are set before the first call is queued. */
	for (i = 1; i < c->n && c->lk[i] != lk; i++)
		;
	nested = hlt_kl_chain_enter(c, i);
	spin_lock(&c->lock);
	stop = c->stop;
	spin_unlock(&c->lock);
	if (res || stop || hlock_kernel_unlock(lk, c->path)) {
		spin_lock(&c->lock);
		c->failed++;
		spin_unlock(&c->lock);
	}
	if (!nested)
		hlt_kl_chain_leave(c);
	if (atomic_dec_and_test(&c->left))
		complete(&c->all);
}

static int hlt_kl_chain_cmd(char **s)
{
	char *w = hlt_kl_word(s), *path;
	struct hlt_kl_chain *c;
	unsigned int n, i, made;
	bool nested;
	int ret = 0;

	if (!w || kstrtouint(w, 10, &n) || n < 2 || n > HLT_KL_CHAIN_MAX)
		return -EINVAL;
	path = hlt_kl_path(hlt_kl_word(s));
	if (IS_ERR(path))
		return PTR_ERR(path);
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c || hlt_kl_word(s)) {
		kfree(c);
		kfree(path);
		return c ? -EINVAL : -ENOMEM;
	}
	c->path = path;
	spin_lock_init(&c->lock);
	init_completion(&c->all);
	c->next = 1;
	for (made = 0; made < n; made++) {
		c->lk[made] = hlock_locker_create(NULL);
		if (IS_ERR(c->lk[made])) {
			ret = PTR_ERR(c->lk[made]);
			goto out;
		}
	}
	c->n = n;
	ret = hlock_kernel_lock(c->lk[0], path, HLOCK_X, 0, 0);
	if (ret)
		goto out;
	atomic_set(&c->left, n - 1);
	for (i = 1; i < n; i++) {
		ret = hlock_kernel_lock_async(c->lk[i], path, HLOCK_X, 0,
					      hlt_kl_chain_done, c);
		if (ret != -EINPROGRESS) {
			pr_err("chain: locker %u's X on %s: %d\n", i, path, ret);
			ret = ret ?: -EIO;
			goto out;
		}
	}
	/* Nothing may run inside the unlock that starts the chain either. */
	nested = hlt_kl_chain_enter(c, 0);
	ret = hlock_kernel_unlock(c->lk[0], path);
	if (!nested)
		hlt_kl_chain_leave(c);
	if (ret)
		goto out;
	if (!wait_for_completion_timeout(&c->all, 30 * HZ)) {
		ret = -ETIMEDOUT;
		goto out;
	}
	if (c->nested || c->unordered || c->failed) {
		pr_err("chain of %u on %s: %u completions nested, %u out of order, %u not granted\n",
		       n, path, c->nested, c->unordered, c->failed);
		ret = -EIO;
	}
out:
	/* Completions still to come (a failure) unlock nothing. */
	spin_lock(&c->lock);
	c->stop = true;
	spin_unlock(&c->lock);
	/* Each waits for its completions, which use @c. */
	while (made--)
		hlock_locker_destroy(c->lk[made]);
	kfree(c);
	kfree(path);
	return ret;
}

static ssize_t hlt_kl_write(struct file *file, const char __user *ubuf,
			    size_t len, loff_t *ppos)
{
	char *buf, *s, *w;
	int ret;

	if (!len || len > HLT_KL_CMD_MAX)
		return -EINVAL;
	buf = memdup_user_nul(ubuf, len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	s = buf;
	w = hlt_kl_word(&s);
	if (w && !strcmp(w, "lock"))
		ret = hlt_kl_lock_cmd(&s);
	else if (w && !strcmp(w, "unlock"))
		ret = hlt_kl_unlock_cmd(&s);
	else if (w && !strcmp(w, "try"))
		ret = hlt_kl_try_cmd(&s);
	else if (w && !strcmp(w, "signal") && !hlt_kl_word(&s))
		ret = send_sig(SIGUSR1, hlt_kl.task, 1);
	else if (w && !strcmp(w, "chain"))
		ret = hlt_kl_chain_cmd(&s);
	else
		ret = -EINVAL;
	kfree(buf);
	return ret ? ret : len;
}

static void hlt_kl_show_path(struct seq_file *m, const char *what,
			     unsigned int mode, const char *path)
{
	seq_printf(m, "%s %s %s\n", what, hlt_mode_names[mode],
		   *path ? path : HLT_KL_ROOT);
}

static int hlt_kl_show(struct seq_file *m, void *unused)
{
	unsigned int i;

	mutex_lock(&hlt_kl.lock);
	for (i = 0; i < hlt_kl.nheld; i++)
		hlt_kl_show_path(m, "held", hlt_kl.held[i].mode,
				 hlt_kl.held[i].path);
	if (hlt_kl.pending || hlt_kl.busy)
		hlt_kl_show_path(m, "waiting", hlt_kl.mode, hlt_kl.path);
	else if (!hlt_kl.nheld)
		seq_puts(m, "idle\n");
	if (hlt_kl.last)
		seq_printf(m, "last: %s = %d\n", hlt_kl.last, hlt_kl.last_res);
	mutex_unlock(&hlt_kl.lock);
	return 0;
}

static int hlt_kl_open(struct inode *inode, struct file *file)
{
	return single_open(file, hlt_kl_show, NULL);
}

static const struct file_operations hlt_kl_fops = {
	.owner = THIS_MODULE,
	.open = hlt_kl_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.write = hlt_kl_write,
	.release = single_release,
};

/**
 * hlt_klock_init() - Start the kernel locker and create its debugfs file.
 * @dir: hlock_torture's debugfs directory.
 *
 * Context: module init.
 * Return: 0, or -errno when the kthread or its locker could not be made.
 */
int hlt_klock_init(struct dentry *dir)
{
	int ret;

	mutex_init(&hlt_kl.lock);
	init_waitqueue_head(&hlt_kl.wq);
	init_completion(&hlt_kl.ready);
	hlt_kl.task = kthread_run(hlt_kl_fn, NULL, "hlock_klocker");
	if (IS_ERR(hlt_kl.task))
		return PTR_ERR(hlt_kl.task);
	wait_for_completion(&hlt_kl.ready);
	if (hlt_kl.ready_err) {
		ret = hlt_kl.ready_err;
		kthread_stop(hlt_kl.task);
		return ret;
	}
	hlt_kl_file = debugfs_create_file("klocker", 0600, dir, NULL,
					  &hlt_kl_fops);
	return 0;
}

/**
 * hlt_klock_exit() - Remove the file and end the kernel locker, which
 *	releases what it holds.
 *
 * Context: module exit.
 */
void hlt_klock_exit(void)
{
	unsigned int i;

	/* No writer is left once the file is gone. */
	debugfs_remove(hlt_kl_file);
	mutex_lock(&hlt_kl.lock);
	WRITE_ONCE(hlt_kl.stopping, true);
	mutex_unlock(&hlt_kl.lock);
	/* A lock call that waits ends with -EINTR. */
	send_sig(SIGKILL, hlt_kl.task, 1);
	kthread_stop(hlt_kl.task);
	for (i = 0; i < hlt_kl.nheld; i++)
		kfree(hlt_kl.held[i].path);
	kfree(hlt_kl.path);
	kfree(hlt_kl.last);
}
