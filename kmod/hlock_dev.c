// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: hierarchical (multi-granularity) locks for userspace.
 *
 * This is the kernel side of the lock manager: /dev/hlock, its ioctls,
 * the table of resources, memory, and waiting.  The grant policy itself
 * is in hlock_core.c.
 *
 * Locking: one spinlock, hl_space.lock, protects the resource table and
 * everything in hlock_core (heads, requests, lockers' request lists and
 * operation slots).  It is taken only in process context and never held
 * while sleeping, allocating or touching user memory: a lock call looks
 * its path up under the lock, drops it to allocate what is missing, and
 * looks again.  Waiters sleep on their own locker's wait queue, so a
 * release wakes exactly the lockers it granted.
 *
 * Observability: statistics per locker (under the lock) and module-wide
 * (per-CPU counters summed on read, so the uncontended path writes no
 * shared cache line for them), a lock table copied out of a snapshot, a
 * rate-limited log line for slow waits, and tracepoints.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/ratelimit.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "hlock_core.h"

#define CREATE_TRACE_POINTS
#include "hlock_trace.h"

/* Buckets of the resource table, as a power of two. */
#define HL_HASH_BITS	12
/* Blockers the slow-wait log names. */
#define HL_SLOW_PIDS	4
/* Paths up to this long are copied on the stack. */
#define HL_SHORT_PATH	127
/* hl_file.wait_level before the operation waited. */
#define HL_NO_WAIT	UINT_MAX

/**
 * struct hl_res - A resource: its lock head and its name.
 * @head: The lock head (hlock_core).
 * @node: Entry in the resource table.
 * @hash: Keyed hash of the whole path.
 * @len: Length of @name.
 * @name: The last component of the path, not NUL-terminated.
 *
 * A resource lives while requests, child resources or operations in
 * flight hold references on @head.  Protected by hl_space.lock.
 */
struct hl_res {
	struct hl_head head;
	struct hlist_node node;
	u64 hash;
	unsigned int len;
	char name[];
};

/**
 * struct hl_file - A locker: one open file description of /dev/hlock.
 * @lk: The locker (hlock_core), protected by hl_space.lock.
 * @wq: Where the locker's waiters and pollers sleep.
 * @granted: Set when the operation in flight was granted while waiting;
 *	read without the lock by poll, cleared when it is collected.
 * @gen: Generation of the operation slot: bumped, with a wake-up of @wq,
 *	on every transition a sleeper may wait for (granted, collected or
 *	withdrawn).  Sleepers wait for it to move, then look again under
 *	the lock: a flag could be set and cleared again while they sleep.
 * @async: The operation in flight was queued with HLOCK_F_ASYNC; only
 *	such an operation can be collected by HLOCK_IOC_WAIT or cancelled by
 *	HLOCK_IOC_UNLOCK.  Protected by hl_space.lock.
 * @owner: The process of the last lock call (thread group leader's pid).
 * @comm: Its command name then.
 * @stats: The locker's statistics.
 * @wait_start: hl_clock() when the waiting level began to wait.
 * @waited: Time the operation in flight has waited so far.
 * @wait_level: Level of its first wait, HL_NO_WAIT before one.
 * @nr_slow: Entries in @slow_pids.
 * @slow_pids: Holders that blocked its first wait, for the slow-wait log.
 *
 * The fields from @owner on are protected by hl_space.lock.
 */
struct hl_file {
	struct hl_locker lk;
	wait_queue_head_t wq;
	bool granted;
	unsigned int gen;
	bool async;
	struct pid *owner;
	char comm[HLOCK_COMM_LEN];
	struct hlock_stats stats;
	u64 wait_start;
	u64 waited;
	unsigned int wait_level;
	unsigned int nr_slow;
	pid_t slow_pids[HL_SLOW_PIDS];
};

/* A parsed path: levels root first, with the hash of each prefix. */
struct hl_path {
	unsigned int nr;
	const char *name[HL_MAX_LEVELS];
	unsigned int len[HL_MAX_LEVELS];
	u64 hash[HL_MAX_LEVELS];
};

/*
 * The one lock space.  @pathbuf holds paths built for log lines and trace
 * events; @pcpu the module-wide statistics.
 */
static struct {
	spinlock_t lock;		/* protects the table and hlock_core */
	struct hl_res *root;
	struct hlist_head table[1 << HL_HASH_BITS];
	siphash_key_t key;
	struct kmem_cache *req_cache;
	struct hlock_stats __percpu *pcpu;
	struct dentry *debugfs;
	char pathbuf[HLOCK_PATH_MAX + 1];	/* under lock */
} hl_space;

static bool hl_stats_on = true;
module_param_named(stats, hl_stats_on, bool, 0644);
MODULE_PARM_DESC(stats, "Keep lock statistics (module-wide and per locker)");

static unsigned int hl_slow_ms = 100;
module_param_named(slow_ms, hl_slow_ms, uint, 0644);
MODULE_PARM_DESC(slow_ms,
		 "Log acquisitions that waited at least this long, in ms (0: off)");

/* Add @n to one statistic of @f and of the module. */
#define hl_stat_add(f, field, n)					\
	do {								\
		if (READ_ONCE(hl_stats_on)) {				\
			(f)->stats.field += (n);			\
			this_cpu_add(hl_space.pcpu->field, (n));	\
		}							\
	} while (0)

static unsigned int hl_stat_level(unsigned int level)
{
	return min_t(unsigned int, level, HLOCK_LEVEL_OBJECT);
}

static struct hl_file *hl_file_of(struct hl_locker *lk)
{
	return container_of(lk, struct hl_file, lk);
}

static int hl_file_pid(const struct hl_file *f)
{
	return pid_nr(f->owner);
}

/* Bytes of the path of @h. */
static unsigned int hl_path_len(const struct hl_head *h)
{
	unsigned int len = 0;

	for (; h->parent; h = h->parent)
		len += container_of(h, struct hl_res, head)->len +
		       (len ? 1 : 0);
	return len;
}

/* Write the path of @h, @len bytes (hl_path_len()) and a NUL, to @dst. */
static void hl_path_fill(const struct hl_head *h, char *dst, unsigned int len)
{
	char *p = dst + len;

	*p = '\0';
	for (; h->parent; h = h->parent) {
		const struct hl_res *r = container_of(h, struct hl_res, head);

		if (p != dst + len)
			*--p = '/';
		p -= r->len;
		memcpy(p, r->name, r->len);
	}
}

/* The path of @h in hl_space.pathbuf.  Context: hl_space.lock held. */
static const char *hl_head_path(const struct hl_head *h)
{
	hl_path_fill(h, hl_space.pathbuf, hl_path_len(h));
	return hl_space.pathbuf;
}

static const char *const hl_mode_names[HLOCK_NR_MODES] = {
	"NL", "IS", "IX", "S", "SIX", "X",
};

static const char *hl_mode_name(unsigned int mode)
{
	return mode < HLOCK_NR_MODES ? hl_mode_names[mode] : "?";
}

static unsigned int hl_policy = HLOCK_POLICY_BATCH;
static const char *const hl_policy_names[] = {
	[HLOCK_POLICY_BATCH] = "batch",
	[HLOCK_POLICY_FIFO] = "fifo",
};

static int hl_policy_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(hl_policy_names, val);

	if (i < 0)
		return -EINVAL;
	WRITE_ONCE(hl_policy, i);
	return 0;
}

static int hl_policy_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", hl_policy_names[READ_ONCE(hl_policy)]);
}

static const struct kernel_param_ops hl_policy_ops = {
	.set = hl_policy_set,
	.get = hl_policy_get,
};
module_param_cb(grant_policy, &hl_policy_ops, NULL, 0644);
MODULE_PARM_DESC(grant_policy,
		 "What a release grants behind the queue head: batch (every compatible waiter) or fifo (up to the first conflict)");

/**
 * hl_grant_policy() - The grant policy in force.
 *
 * Context: any.
 * Return: HLOCK_POLICY_BATCH or HLOCK_POLICY_FIFO.
 */
unsigned int hl_grant_policy(void)
{
	return READ_ONCE(hl_policy);
}

static void hl_slow_log(struct hl_file *f);

/* The slot of @f moved on: tell its sleepers.  Context: lock held. */
static void hl_slot_changed(struct hl_file *f)
{
	lockdep_assert_held(&hl_space.lock);
	WRITE_ONCE(f->gen, f->gen + 1);
	wake_up_interruptible_poll(&f->wq, EPOLLIN | EPOLLRDNORM);
}

/**
 * hl_op_granted() - Wake a locker whose waiting operation was granted.
 * @lk: The locker.
 *
 * Context: hl_space.lock held.
 */
void hl_op_granted(struct hl_locker *lk)
{
	struct hl_file *f = hl_file_of(lk);

	hl_slow_log(f);
	WRITE_ONCE(f->granted, true);
	hl_slot_changed(f);
}

/**
 * hl_head_unused() - Unlink and free a resource nobody references.
 * @h: Its lock head.
 *
 * Context: hl_space.lock held.
 */
void hl_head_unused(struct hl_head *h)
{
	struct hl_res *r = container_of(h, struct hl_res, head);

	if (WARN_ON_ONCE(!h->parent))
		return;
	hlist_del(&r->node);
	hl_head_put(h->parent);
	kfree(r);
}

/**
 * hl_req_free() - Free a request.
 * @req: The request.
 *
 * Context: any; hl_space.lock may be held.
 */
void hl_req_free(struct hl_req *req)
{
	kmem_cache_free(hl_space.req_cache, req);
}

/**
 * hl_clock() - The clock of grant and wait times.
 *
 * Context: any.
 * Return: CLOCK_MONOTONIC in ns.
 */
u64 hl_clock(void)
{
	return ktime_get_ns();
}

/**
 * hl_note_acquire() - Count a level asked for.
 * @lk: The locker.
 * @level: The level of its operation.
 * @mode: The mode asked for there.
 *
 * Context: hl_space.lock held.
 */
void hl_note_acquire(struct hl_locker *lk, unsigned int level,
		     unsigned int mode)
{
	hl_stat_add(hl_file_of(lk),
		    level[hl_stat_level(level)].acquire_count[mode], 1);
}

/* Remember who holds what @lk waits for at @level, for the slow log. */
static void hl_note_blockers(struct hl_file *f, unsigned int level,
			     unsigned int mode)
{
	struct hl_head *h = f->lk.op.heads[level];
	struct hl_req *req;
	unsigned int i;

	f->wait_level = level;
	f->nr_slow = 0;
	list_for_each_entry(req, &h->granted, node) {
		pid_t pid = hl_file_pid(hl_file_of(req->locker));

		if (req->locker == &f->lk ||
		    !hl_conflicts(mode, hl_mode_bit(req->mode)))
			continue;
		for (i = 0; i < f->nr_slow && f->slow_pids[i] != pid; i++)
			;
		if (i == f->nr_slow && f->nr_slow < HL_SLOW_PIDS)
			f->slow_pids[f->nr_slow++] = pid;
	}
}

/**
 * hl_note_wait() - A level of an operation starts to wait.
 * @lk: The locker.
 * @level: The level.
 * @mode: The mode asked for there.
 *
 * Context: hl_space.lock held.
 */
void hl_note_wait(struct hl_locker *lk, unsigned int level, unsigned int mode)
{
	struct hl_file *f = hl_file_of(lk);

	f->wait_start = lk->op.now;
	hl_stat_add(f, level[hl_stat_level(level)].wait_count[mode], 1);
	if (f->wait_level == HL_NO_WAIT)
		hl_note_blockers(f, level, mode);
	if (trace_hlock_wait_enabled())
		trace_hlock_wait(hl_file_pid(f),
				 hl_head_path(lk->op.heads[level]), mode);
}

/* Account the wait of @level that ends at @now. */
static void hl_note_waited(struct hl_file *f, unsigned int level,
			   unsigned int mode, u64 now)
{
	u64 ns = now - f->wait_start;

	f->waited += ns;
	hl_stat_add(f, level[hl_stat_level(level)].wait_time_ns[mode], ns);
}

/**
 * hl_note_granted() - A level of an operation was granted.
 * @lk: The locker.
 * @level: The level.
 * @mode: The mode asked for there.
 * @waited: Whether it waited first.
 *
 * Context: hl_space.lock held.
 */
void hl_note_granted(struct hl_locker *lk, unsigned int level,
		     unsigned int mode, bool waited)
{
	struct hl_file *f = hl_file_of(lk);

	if (waited)
		hl_note_waited(f, level, mode, lk->op.now);
	if (trace_hlock_grant_enabled())
		trace_hlock_grant(hl_file_pid(f),
				  hl_head_path(lk->op.heads[level]), mode);
}

/**
 * hl_note_withdrawn() - A waiting level of an operation was withdrawn.
 * @lk: The locker.
 * @level: The level.
 * @mode: The mode asked for there.
 *
 * Context: hl_space.lock held.
 */
void hl_note_withdrawn(struct hl_locker *lk, unsigned int level,
		       unsigned int mode)
{
	hl_note_waited(hl_file_of(lk), level, mode, hl_clock());
}

/**
 * hl_note_convert() - A request starts converting.
 * @req: The request.
 * @target: The mode it converts to.
 *
 * Context: hl_space.lock held.
 */
void hl_note_convert(struct hl_req *req, unsigned int target)
{
	if (trace_hlock_convert_enabled())
		trace_hlock_convert(hl_file_pid(hl_file_of(req->locker)),
				    hl_head_path(req->head), target);
}

/**
 * hl_note_release() - A request is released.
 * @req: The request.
 *
 * Context: hl_space.lock held.
 */
void hl_note_release(struct hl_req *req)
{
	if (trace_hlock_release_enabled())
		trace_hlock_release(hl_file_pid(hl_file_of(req->locker)),
				    hl_head_path(req->head), req->mode);
}

/* Log an operation that waited at least slow_ms.  Context: lock held. */
static void hl_slow_log(struct hl_file *f)
{
	struct hl_op *op = &f->lk.op;
	u64 ms = READ_ONCE(hl_slow_ms);
	char pids[HL_SLOW_PIDS * 12] = "";
	unsigned int i, n = 0, len;
	const char *path;

	if (!ms || f->waited < ms * NSEC_PER_MSEC)
		return;
	len = hl_path_len(op->heads[op->nr - 1]);
	path = hl_head_path(op->heads[op->nr - 1]);
	for (i = 0; i < f->nr_slow; i++)
		n += scnprintf(pids + n, sizeof(pids) - n, "%s%d",
			       i ? ", " : "", f->slow_pids[i]);
	/* Users choose paths and command names: escape them. */
	pr_info_ratelimited("slow wait: pid %d (%*pE) waited %llu ms for %s on \"%*pE\" (queued at level %u); held by pids %s when the wait began\n",
			    hl_file_pid(f), (int)strnlen(f->comm, sizeof(f->comm)),
			    f->comm, div_u64(f->waited, NSEC_PER_MSEC),
			    hl_mode_name(op->mode), (int)len, path,
			    f->wait_level, n ? pids : "(none)");
}

/*
 * Split @buf (@len bytes) into components and hash every prefix with the
 * secret key, so that nobody can aim names at one bucket.
 */
static int hl_path_parse(struct hl_path *p, const char *buf, unsigned int len)
{
	unsigned int i = 0;

	p->nr = 1;
	p->name[0] = NULL;
	p->len[0] = 0;
	p->hash[0] = 0;
	if (!len)
		return 0;
	while (i <= len) {
		const char *s = buf + i, *e = memchr(s, '/', len - i);
		unsigned int n = e ? e - s : len - i;

		if (!n)
			return -EINVAL;
		if (n > HLOCK_NAME_MAX || p->nr > HLOCK_MAX_DEPTH)
			return -ENAMETOOLONG;
		if (memchr(s, '\0', n))
			return -EINVAL;
		p->name[p->nr] = s;
		p->len[p->nr] = n;
		p->hash[p->nr] = siphash_2u64(p->hash[p->nr - 1],
					      siphash(s, n, &hl_space.key),
					      &hl_space.key);
		p->nr++;
		i += n + 1;
	}
	return 0;
}

/* The child of @parent named by level @l of @p, or NULL. */
static struct hl_res *hl_res_find(struct hl_res *parent,
				  const struct hl_path *p, unsigned int l)
{
	struct hlist_head *b = &hl_space.table[hash_64(p->hash[l],
						       HL_HASH_BITS)];
	struct hl_res *r;

	hlist_for_each_entry(r, b, node)
		if (r->hash == p->hash[l] && r->head.parent == &parent->head &&
		    r->len == p->len[l] && !memcmp(r->name, p->name[l], r->len))
			return r;
	return NULL;
}

/*
 * Look the resources of @p up without creating any.  Return: the number
 * of levels found, root included; @res holds them.
 */
static unsigned int hl_path_lookup(const struct hl_path *p,
				   struct hl_res **res)
{
	unsigned int l;

	res[0] = hl_space.root;
	for (l = 1; l < p->nr; l++) {
		res[l] = hl_res_find(res[l - 1], p, l);
		if (!res[l])
			break;
	}
	return l;
}

/*
 * Put the resources of @p into the locker's operation, each with a
 * reference, creating the missing ones from @pre.  Return: true, or
 * false with nothing taken when @pre lacks a level that is missing.
 */
static bool hl_path_get(struct hl_op *op, const struct hl_path *p,
			struct hl_res **pre)
{
	struct hl_res *res[HL_MAX_LEVELS];
	unsigned int l, found = hl_path_lookup(p, res);

	for (l = found; l < p->nr; l++)
		if (!pre[l])
			return false;
	for (l = 0; l < p->nr; l++) {
		if (l < found) {
			hl_head_get(&res[l]->head);
		} else {
			res[l] = pre[l];
			pre[l] = NULL;
			res[l]->hash = p->hash[l];
			res[l]->len = p->len[l];
			memcpy(res[l]->name, p->name[l], p->len[l]);
			/* The new resource holds a reference on its parent. */
			hl_head_get(&res[l - 1]->head);
			hl_head_init(&res[l]->head, &res[l - 1]->head);
			hlist_add_head(&res[l]->node,
				       &hl_space.table[hash_64(p->hash[l],
							       HL_HASH_BITS)]);
		}
		op->heads[l] = &res[l]->head;
	}
	op->nr = p->nr;
	return true;
}

/* Allocate what the missing levels from @from on need. */
static int hl_res_alloc(const struct hl_path *p, unsigned int from,
			struct hl_res **pre)
{
	unsigned int l;

	for (l = from; l < p->nr; l++) {
		if (pre[l])
			continue;
		pre[l] = kmalloc(struct_size(pre[l], name, p->len[l]),
				 GFP_KERNEL_ACCOUNT);
		if (!pre[l])
			return -ENOMEM;
	}
	return 0;
}

/*
 * Sleep until the slot of @f leaves generation @seen, a signal comes, or
 * @deadline passes (KTIME_MAX: never).  Return: 0, -EINTR or -ETIMEDOUT;
 * the caller looks at the slot again under the lock in every case.
 */
static int hl_wait_slot(struct hl_file *f, unsigned int seen, ktime_t deadline)
{
	ktime_t left;
	long ret;

	if (deadline == KTIME_MAX) {
		ret = wait_event_interruptible(f->wq, READ_ONCE(f->gen) != seen);
	} else {
		left = ktime_sub(deadline, ktime_get());
		if (left <= 0)
			return -ETIMEDOUT;
		ret = wait_event_interruptible_hrtimeout(f->wq,
							 READ_ONCE(f->gen) != seen,
							 left);
	}
	if (ret == -ERESTARTSYS)
		return -EINTR;
	if (ret == -ETIME)
		return -ETIMEDOUT;
	return ret;
}

/* When a wait of @timeout_ns (negative: forever) that starts now ends. */
static ktime_t hl_deadline(s64 timeout_ns)
{
	return timeout_ns < 0 ? KTIME_MAX : ktime_add_ns(ktime_get(), timeout_ns);
}

/* Empty the slot after its operation was collected or undone. */
static void hl_op_clear(struct hl_file *f)
{
	hl_op_finish(&f->lk);
	WRITE_ONCE(f->granted, false);
	f->async = false;
	hl_slot_changed(f);
}

/* The caller makes the lock calls of @f from now on.  Context: lock held. */
static void hl_file_owner(struct hl_file *f)
{
	struct pid *pid = task_tgid(current);

	if (f->owner != pid) {
		put_pid(f->owner);
		f->owner = get_pid(pid);
	}
	strscpy_pad(f->comm, current->comm, sizeof(f->comm));
}

/* A lock call gave up with @ret; count and trace it. */
static void hl_gave_up(struct hl_file *f, const char *path, unsigned int mode,
		       int ret)
{
	if (ret == -EINTR) {
		hl_stat_add(f, interrupts, 1);
		trace_hlock_cancel(hl_file_pid(f), path, mode,
				   HLOCK_CANCEL_SIGNAL);
	} else {
		hl_stat_add(f, timeouts, 1);
		trace_hlock_timeout(hl_file_pid(f), path, mode);
	}
}

static int hl_do_lock(struct hl_file *f, const struct hl_path *p,
		      const char *path, unsigned int mode, unsigned int flags,
		      s64 timeout_ns)
{
	struct hl_res *pre[HL_MAX_LEVELS] = { NULL };
	struct hlist_head *unused = NULL;
	struct hl_op *op = &f->lk.op;
	unsigned int l, need, bits;
	bool grow_tried = false;
	ktime_t deadline;
	int ret = 0;

	spin_lock(&hl_space.lock);
	if (op->state != HL_OP_IDLE) {
		spin_unlock(&hl_space.lock);
		return -EBUSY;
	}
	/* Claim the slot; other calls on this locker now get -EBUSY. */
	op->state = HL_OP_SETUP;
	hl_file_owner(f);
	trace_hlock_request(hl_file_pid(f), path, mode, flags, timeout_ns);
	for (;;) {
		/*
		 * A bigger index for the locker's requests, tried once per
		 * call; without it lookups only get slower.
		 */
		bits = grow_tried ? 0 : hl_locker_index_wanted(&f->lk);
		if (bits) {
			grow_tried = true;
			spin_unlock(&hl_space.lock);
			unused = kvmalloc_array(1U << bits, sizeof(*unused),
						GFP_KERNEL_ACCOUNT);
			spin_lock(&hl_space.lock);
			/* Unless another thread grew it meanwhile. */
			if (unused && bits > f->lk.index_bits)
				unused = hl_locker_index_swap(&f->lk, unused,
							      bits);
			continue;
		}
		if (!op->nr && !hl_path_get(op, p, pre)) {
			struct hl_res *res[HL_MAX_LEVELS];

			l = hl_path_lookup(p, res);
			spin_unlock(&hl_space.lock);
			ret = hl_res_alloc(p, l, pre);
		} else {
			need = hl_op_reqs_needed(&f->lk);
			if (!need)
				break;
			spin_unlock(&hl_space.lock);
			while (need--) {
				struct hl_req *req;

				req = kmem_cache_alloc(hl_space.req_cache,
						       GFP_KERNEL_ACCOUNT);
				if (!req) {
					ret = -ENOMEM;
					break;
				}
				op->spare[op->nr_spare++] = req;
			}
		}
		spin_lock(&hl_space.lock);
		if (ret)
			goto out_clear;
	}

	f->waited = 0;
	f->wait_level = HL_NO_WAIT;
	ret = hl_op_start(&f->lk, mode, flags);
	if (ret != -EINPROGRESS)
		goto out_clear;
	if (flags & HLOCK_F_ASYNC) {
		f->async = true;
		goto out_unlock;
	}
	if (!timeout_ns) {
		ret = -EAGAIN;
		hl_gave_up(f, path, mode, ret);
		goto out_cancel;
	}
	deadline = hl_deadline(timeout_ns);
	/*
	 * The slot is this call's own (not async): nobody else can collect
	 * or withdraw it, so only a grant moves it on.
	 */
	do {
		unsigned int seen = f->gen;

		spin_unlock(&hl_space.lock);
		ret = hl_wait_slot(f, seen, deadline);
		spin_lock(&hl_space.lock);
		/* A grant that raced with the timeout or the signal wins. */
		if (op->state == HL_OP_GRANTED) {
			ret = 0;
			goto out_clear;
		}
	} while (!ret);
	hl_gave_up(f, path, mode, ret);
out_cancel:
	hl_op_cancel(&f->lk);
out_clear:
	hl_op_clear(f);
out_unlock:
	spin_unlock(&hl_space.lock);
	for (l = 0; l < HL_MAX_LEVELS; l++)
		kfree(pre[l]);
	/* The index replaced, or one nobody needed after all. */
	kvfree(unused);
	return ret;
}

/*
 * HLOCK_IOC_WAIT: wait for the locker's async request and collect it.
 * Returns 0 only when this call collected a grant; if another thread
 * collects the request first and queues a new one, this call waits for
 * the new one.
 */
static int hl_do_wait(struct hl_file *f, s64 timeout_ns)
{
	ktime_t deadline = hl_deadline(timeout_ns);
	struct hl_op *op = &f->lk.op;
	int ret = 0;

	spin_lock(&hl_space.lock);
	for (;;) {
		unsigned int seen;

		if (op->state == HL_OP_IDLE) {
			/* Nothing queued, or withdrawn while we slept. */
			ret = -ENOENT;
			break;
		}
		if (!f->async) {
			/* Another thread's blocking call owns the slot. */
			ret = -EBUSY;
			break;
		}
		if (op->state == HL_OP_GRANTED) {
			/* Also when it raced with a timeout or a signal. */
			ret = 0;
			hl_op_clear(f);
			break;
		}
		if (!timeout_ns)
			ret = -EAGAIN;
		if (ret)
			break;
		seen = f->gen;
		spin_unlock(&hl_space.lock);
		ret = hl_wait_slot(f, seen, deadline);
		spin_lock(&hl_space.lock);
	}
	if (ret == -EINTR)
		hl_stat_add(f, interrupts, 1);
	spin_unlock(&hl_space.lock);
	return ret;
}

/* Withdraw a queued operation on request of its locker, and count it. */
static void hl_op_cancel_counted(struct hl_file *f, unsigned int why)
{
	struct hl_op *op = &f->lk.op;

	hl_stat_add(f, cancels, 1);
	if (trace_hlock_cancel_enabled())
		trace_hlock_cancel(hl_file_pid(f),
				   hl_head_path(op->heads[op->nr - 1]),
				   op->mode, why);
	hl_op_cancel(&f->lk);
}

/* HLOCK_IOC_UNLOCK, HLOCK_IOC_DOWNGRADE and HLOCK_IOC_HELD. */
static int hl_do_path(struct hl_file *f, unsigned int cmd,
		      const struct hl_path *p, unsigned int mode)
{
	struct hl_res *res[HL_MAX_LEVELS];
	struct hl_op *op = &f->lk.op;
	struct hl_head *h;
	struct hl_req *req;
	int ret;

	spin_lock(&hl_space.lock);
	if (hl_path_lookup(p, res) < p->nr) {
		ret = cmd == HLOCK_IOC_HELD ? HLOCK_NL : -ENOENT;
		goto out_unlock;
	}
	h = &res[p->nr - 1]->head;
	if (cmd == HLOCK_IOC_HELD) {
		ret = hl_held(&f->lk, h);
		goto out_unlock;
	}
	if (hl_op_busy(&f->lk, h)) {
		/* Unlocking the target cancels the queued request. */
		if (cmd != HLOCK_IOC_UNLOCK || !f->async ||
		    h != op->heads[op->nr - 1]) {
			ret = -EBUSY;
			goto out_unlock;
		}
		hl_op_cancel_counted(f, HLOCK_CANCEL_UNLOCK);
		hl_op_clear(f);
		req = hl_locker_find(&f->lk, h);
		ret = req ? req->own : 0;
		goto out_unlock;
	}
	if (cmd == HLOCK_IOC_UNLOCK)
		ret = hl_unlock(&f->lk, h);
	else
		ret = hl_downgrade(&f->lk, h, mode);
out_unlock:
	spin_unlock(&hl_space.lock);
	return ret;
}

static bool hl_mode_valid(unsigned int mode)
{
	return mode >= HLOCK_IS && mode <= HLOCK_X;
}

/*
 * Copy and check the arguments of a path ioctl; then do it.  @cmd is the
 * command as this module defines it, @usize the size the caller's command
 * encodes.
 */
static long hl_ioctl_path(struct hl_file *f, unsigned int cmd, size_t usize,
			  void __user *uarg)
{
	char short_buf[HL_SHORT_PATH + 1];
	struct hlock_lock_args args;
	struct hl_path p;
	char *buf;
	long ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.__pad || args.reserved[0] || args.reserved[1])
		return -EINVAL;
	switch (cmd) {
	case HLOCK_IOC_LOCK:
		if (!hl_mode_valid(args.mode) || args.flags & ~HLOCK_F_ALL)
			return -EINVAL;
		break;
	case HLOCK_IOC_DOWNGRADE:
		if (!hl_mode_valid(args.mode) || args.flags || args.timeout_ns)
			return -EINVAL;
		break;
	default:
		if (args.mode || args.flags || args.timeout_ns)
			return -EINVAL;
		break;
	}
	if (args.path_len > HLOCK_PATH_MAX)
		return -ENAMETOOLONG;
	/*
	 * NUL-terminated for the trace events (a NUL inside is -EINVAL);
	 * on the stack when short, so most calls allocate nothing.
	 */
	if (args.path_len <= HL_SHORT_PATH) {
		buf = short_buf;
		if (copy_from_user(buf, u64_to_user_ptr(args.path),
				   args.path_len))
			return -EFAULT;
		buf[args.path_len] = '\0';
	} else {
		buf = memdup_user_nul(u64_to_user_ptr(args.path),
				      args.path_len);
		if (IS_ERR(buf))
			return PTR_ERR(buf);
	}
	ret = hl_path_parse(&p, buf, args.path_len);
	if (!ret) {
		if (cmd == HLOCK_IOC_LOCK)
			ret = hl_do_lock(f, &p, buf, args.mode, args.flags,
					 args.timeout_ns);
		else
			ret = hl_do_path(f, cmd, &p, args.mode);
	}
	if (buf != short_buf)
		kfree(buf);
	return ret;
}

static long hl_ioctl_wait(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_wait_args args;
	long ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.__pad || args.reserved[0] || args.reserved[1])
		return -EINVAL;
	return hl_do_wait(f, args.timeout_ns);
}

/* The module-wide statistics: the per-CPU counters summed. */
static void hl_stats_sum(struct hlock_stats *st)
{
	u64 *sum = (u64 *)st;
	unsigned int cpu, i;

	BUILD_BUG_ON(sizeof(*st) % sizeof(u64));
	memset(st, 0, sizeof(*st));
	for_each_possible_cpu(cpu) {
		const u64 *c = (const u64 *)per_cpu_ptr(hl_space.pcpu, cpu);

		for (i = 0; i < sizeof(*st) / sizeof(u64); i++)
			sum[i] += READ_ONCE(c[i]);
	}
}

static long hl_ioctl_stats(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_stats_args args;
	struct hlock_stats st;
	void __user *dst;
	size_t n;
	long ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.__pad || args.reserved[0] || args.reserved[1])
		return -EINVAL;
	/* Room to grow, but never a length nobody could mean. */
	if (!args.size || args.size > PAGE_SIZE)
		return -EINVAL;
	if (args.scope == HLOCK_STATS_LOCKER) {
		spin_lock(&hl_space.lock);
		st = f->stats;
		spin_unlock(&hl_space.lock);
	} else if (args.scope == HLOCK_STATS_GLOBAL) {
		hl_stats_sum(&st);
	} else {
		return -EINVAL;
	}
	dst = u64_to_user_ptr(args.stats);
	n = min_t(size_t, args.size, sizeof(st));
	if (copy_to_user(dst, &st, n))
		return -EFAULT;
	if (args.size > n && clear_user(dst + n, args.size - n))
		return -EFAULT;
	return 0;
}

/* Add the pid of @req's owner to a record's blockers, once. */
static void hl_blocker_add(struct hlock_lock_record *rec,
			   const struct hl_req *req, struct pid_namespace *ns)
{
	u32 pid = pid_nr_ns(hl_file_of(req->locker)->owner, ns);
	unsigned int i, n = min_t(unsigned int, rec->nr_blockers,
				  HLOCK_MAX_BLOCKERS);

	for (i = 0; i < n; i++)
		if (rec->blockers[i] == pid)
			return;
	if (n < HLOCK_MAX_BLOCKERS)
		rec->blockers[n] = pid;
	rec->nr_blockers++;
}

/*
 * Who blocks @req on @h: holders of modes that conflict with what it
 * asks for, pending conversions whose target conflicts, and conflicting
 * waiters ahead of it in the queue.
 */
static void hl_blockers(struct hlock_lock_record *rec, const struct hl_head *h,
			const struct hl_req *req, struct pid_namespace *ns)
{
	unsigned int m = req->state == HL_CONVERTING ? req->convert : req->mode;
	const struct hl_req *o;

	list_for_each_entry(o, &h->granted, node) {
		if (o == req)
			continue;
		if (hl_conflicts(m, hl_mode_bit(o->mode)) ||
		    (o->state == HL_CONVERTING &&
		     hl_conflicts(m, hl_mode_bit(o->convert))))
			hl_blocker_add(rec, o, ns);
	}
	if (req->state != HL_WAITING)
		return;
	list_for_each_entry(o, &h->queue, node) {
		if (o == req)
			break;
		if (hl_conflicts(m, hl_mode_bit(o->mode)))
			hl_blocker_add(rec, o, ns);
	}
}

/* Bytes of a lock record for a path of @len bytes. */
static size_t hl_rec_size(unsigned int len)
{
	return ALIGN(sizeof(struct hlock_lock_record) + len + 1, 8);
}

static void hl_rec_fill(struct hlock_lock_record *rec, const struct hl_head *h,
			unsigned int len, const struct hl_req *req,
			struct pid_namespace *ns, u64 now)
{
	const struct hl_file *f = hl_file_of(req->locker);

	/* The whole record, padding after the path too: it goes to users. */
	memset(rec, 0, hl_rec_size(len));
	rec->rec_len = hl_rec_size(len);
	rec->path_len = len;
	rec->pid = pid_nr_ns(f->owner, ns);
	if (rec->pid)
		memcpy(rec->comm, f->comm, sizeof(rec->comm));
	rec->mode = req->mode;
	switch (req->state) {
	case HL_GRANTED:
		rec->state = HLOCK_STATE_GRANTED;
		break;
	case HL_CONVERTING:
		rec->state = HLOCK_STATE_CONVERTING;
		rec->convert_mode = req->convert;
		break;
	default:
		rec->state = HLOCK_STATE_WAITING;
		break;
	}
	if (req->state != HL_GRANTED) {
		rec->wait_ns = now - f->wait_start;
		hl_blockers(rec, h, req, ns);
	}
	if (req->state != HL_WAITING)
		rec->held_ns = now - req->since;
	hl_path_fill(h, (char *)(rec + 1), len);
}

/* Records of every request on @h, into @buf while they fit @cap. */
static size_t hl_table_head(const struct hl_head *h, char *buf, size_t cap,
			    size_t off, unsigned int *count,
			    struct pid_namespace *ns, u64 now)
{
	const struct list_head *lists[] = { &h->granted, &h->queue };
	unsigned int i, len = hl_path_len(h);
	size_t size = hl_rec_size(len);
	const struct hl_req *req;

	for (i = 0; i < ARRAY_SIZE(lists); i++) {
		list_for_each_entry(req, lists[i], node) {
			if (buf && off + size <= cap) {
				hl_rec_fill((void *)(buf + off), h, len, req,
					    ns, now);
				(*count)++;
			}
			off += size;
		}
	}
	return off;
}

/*
 * Fill @buf (@cap bytes, may be NULL) with the lock table, pids as seen
 * in @ns.  Return: the bytes the whole table needs; it is all in @buf
 * when that is at most @cap.  Context: hl_space.lock held.
 */
static size_t hl_table_fill(char *buf, size_t cap, unsigned int *count,
			    struct pid_namespace *ns)
{
	u64 now = hl_clock();
	struct hl_res *r;
	size_t off;
	unsigned int b;

	*count = 0;
	off = hl_table_head(&hl_space.root->head, buf, cap, 0, count, ns, now);
	for (b = 0; b < ARRAY_SIZE(hl_space.table); b++)
		hlist_for_each_entry(r, &hl_space.table[b], node)
			off = hl_table_head(&r->head, buf, cap, off, count, ns,
					    now);
	return off;
}

/*
 * A snapshot of the lock table in memory of its own, so that nothing is
 * copied to user memory under the lock.  If @limit is below what the table
 * needs, only *@needed is set.  Return: 0 or -errno.
 */
static int hl_table_snapshot(char **bufp, size_t *needed, unsigned int *count,
			     size_t limit)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	size_t cap = 0, need;
	char *buf = NULL;

	for (;;) {
		spin_lock(&hl_space.lock);
		need = hl_table_fill(buf, cap, count, ns);
		spin_unlock(&hl_space.lock);
		if (need <= cap || need > limit)
			break;
		kvfree(buf);
		/* Room for what appears before the next look. */
		cap = need + need / 4;
		buf = kvmalloc(cap, GFP_KERNEL_ACCOUNT);
		if (!buf)
			return -ENOMEM;
	}
	*needed = need;
	*bufp = buf;
	return 0;
}

static long hl_ioctl_table(size_t usize, void __user *uarg)
{
	struct hlock_table_args args;
	unsigned int count = 0;
	char *buf = NULL;
	size_t needed;
	long ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.reserved[0] || args.reserved[1])
		return -EINVAL;
	ret = hl_table_snapshot(&buf, &needed, &count, args.size);
	if (ret)
		return ret;
	args.needed = needed;
	args.count = 0;
	if (needed > args.size) {
		ret = -ENOSPC;
	} else if (needed) {
		if (copy_to_user(u64_to_user_ptr(args.buf), buf, needed))
			ret = -EFAULT;
		else
			args.count = count;
	}
	kvfree(buf);
	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return ret;
}

static long hl_ioctl_info(void __user *uarg)
{
	struct hlock_info info = {
		.abi_version = HLOCK_ABI_VERSION,
		.max_depth = HLOCK_MAX_DEPTH,
		.name_max = HLOCK_NAME_MAX,
		.path_max = HLOCK_PATH_MAX,
		.flags = HLOCK_F_ALL,
		.grant_policy = hl_grant_policy(),
	};

	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

/*
 * Commands are matched by number and direction; the size comes from the
 * command, so a later, larger structure is accepted as long as the bytes
 * this module does not know are zero (copy_struct_from_user()).
 */
static bool hl_cmd_is(unsigned int cmd, unsigned int want, size_t min)
{
	return _IOC_NR(cmd) == _IOC_NR(want) &&
	       _IOC_DIR(cmd) == _IOC_DIR(want) && _IOC_SIZE(cmd) >= min;
}

static long hl_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	static const unsigned int path_cmds[] = {
		HLOCK_IOC_LOCK, HLOCK_IOC_UNLOCK, HLOCK_IOC_DOWNGRADE,
		HLOCK_IOC_HELD,
	};
	struct hl_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);
	unsigned int i;

	if (_IOC_TYPE(cmd) != HLOCK_IOC_MAGIC)
		return -ENOTTY;
	for (i = 0; i < ARRAY_SIZE(path_cmds); i++)
		if (hl_cmd_is(cmd, path_cmds[i], sizeof(struct hlock_lock_args)))
			return hl_ioctl_path(f, path_cmds[i], usize, uarg);
	if (hl_cmd_is(cmd, HLOCK_IOC_WAIT, sizeof(struct hlock_wait_args)))
		return hl_ioctl_wait(f, usize, uarg);
	if (hl_cmd_is(cmd, HLOCK_IOC_STATS, sizeof(struct hlock_stats_args)))
		return hl_ioctl_stats(f, usize, uarg);
	if (hl_cmd_is(cmd, HLOCK_IOC_TABLE, sizeof(struct hlock_table_args)))
		return hl_ioctl_table(usize, uarg);
	if (cmd == HLOCK_IOC_GET_INFO)
		return hl_ioctl_info(uarg);
	return -ENOTTY;
}

static __poll_t hl_poll(struct file *file, struct poll_table_struct *wait)
{
	struct hl_file *f = file->private_data;

	poll_wait(file, &f->wq, wait);
	return READ_ONCE(f->granted) ? EPOLLIN | EPOLLRDNORM : 0;
}

static int hl_open(struct inode *inode, struct file *file)
{
	struct hl_file *f = kzalloc(sizeof(*f), GFP_KERNEL_ACCOUNT);

	if (!f)
		return -ENOMEM;
	hl_locker_init(&f->lk);
	init_waitqueue_head(&f->wq);
	f->owner = get_pid(task_tgid(current));
	get_task_comm(f->comm, current);
	f->wait_level = HL_NO_WAIT;
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int hl_release(struct inode *inode, struct file *file)
{
	struct hl_file *f = file->private_data;

	spin_lock(&hl_space.lock);
	if (f->lk.op.state == HL_OP_WAITING ||
	    (f->lk.op.state == HL_OP_GRANTED && f->async))
		hl_op_cancel_counted(f, HLOCK_CANCEL_CLOSE);
	hl_locker_release_all(&f->lk);
	spin_unlock(&hl_space.lock);
	if (f->lk.index != f->lk.index_inline)
		kvfree(f->lk.index);
	put_pid(f->owner);
	kfree(f);
	return 0;
}

static const struct file_operations hl_fops = {
	.owner = THIS_MODULE,
	.open = hl_open,
	.release = hl_release,
	.unlocked_ioctl = hl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.poll = hl_poll,
};

static struct miscdevice hl_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "hlock",
	.fops = &hl_fops,
	.mode = 0660,
};

/*
 * Print @s as printable ASCII: users choose paths and command names, and
 * must not be able to forge lines of this file.
 */
static void hl_seq_escaped(struct seq_file *m, const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c < ' ' || c > '~' || c == '"' || c == '\\')
			seq_printf(m, "\\x%02x", c);
		else
			seq_putc(m, c);
	}
}

/* /sys/kernel/debug/hlock/locks: the lock table for administrators. */
static int hl_locks_show(struct seq_file *m, void *v)
{
	const struct hlock_lock_record *rec;
	unsigned int count, i, b;
	char *buf;
	size_t needed, off = 0;
	int ret;

	ret = hl_table_snapshot(&buf, &needed, &count, SIZE_MAX);
	if (ret)
		return ret;
	seq_printf(m, "%-16s %7s %-4s %-10s %14s %14s %-24s %s\n", "COMMAND",
		   "PID", "MODE", "STATE", "WAIT_NS", "HELD_NS", "BLOCKERS",
		   "RESOURCE");
	for (i = 0; i < count; i++, off += rec->rec_len) {
		char mode[8];

		rec = (const void *)(buf + off);
		if (rec->state == HLOCK_STATE_CONVERTING)
			scnprintf(mode, sizeof(mode), "%s>%s",
				  hl_mode_name(rec->mode),
				  hl_mode_name(rec->convert_mode));
		else
			strscpy(mode, hl_mode_name(rec->mode), sizeof(mode));
		hl_seq_escaped(m, rec->comm);
		seq_printf(m, "%*s %7u %-4s %-10s %14llu %14llu ",
			   (int)(16 - min_t(size_t, strlen(rec->comm), 16)), "",
			   rec->pid, mode,
			   rec->state == HLOCK_STATE_GRANTED ? "granted" :
			   rec->state == HLOCK_STATE_WAITING ? "waiting" :
			   "converting", rec->wait_ns, rec->held_ns);
		for (b = 0; b < min_t(u32, rec->nr_blockers,
				      HLOCK_MAX_BLOCKERS); b++)
			seq_printf(m, "%s%u", b ? "," : "", rec->blockers[b]);
		seq_printf(m, "%*s\"", b ? 1 : 2, "");
		hl_seq_escaped(m, (const char *)(rec + 1));
		seq_puts(m, "\"\n");
	}
	kvfree(buf);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(hl_locks);

static int __init hl_init(void)
{
	unsigned int i;
	int ret;

	BUILD_BUG_ON(sizeof(struct hlock_lock_args) != 48);
	BUILD_BUG_ON(sizeof(struct hlock_wait_args) != 32);
	BUILD_BUG_ON(sizeof(struct hlock_info) != 56);
	BUILD_BUG_ON(HLOCK_PATH_MAX != 2047);

	spin_lock_init(&hl_space.lock);
	for (i = 0; i < ARRAY_SIZE(hl_space.table); i++)
		INIT_HLIST_HEAD(&hl_space.table[i]);
	get_random_bytes(&hl_space.key, sizeof(hl_space.key));
	BUILD_BUG_ON(sizeof(struct hlock_stats_args) != 40);
	BUILD_BUG_ON(sizeof(struct hlock_table_args) != 48);
	BUILD_BUG_ON(sizeof(struct hlock_lock_record) != 96);
	BUILD_BUG_ON(HLOCK_COMM_LEN != TASK_COMM_LEN);

	hl_space.pcpu = alloc_percpu(struct hlock_stats);
	if (!hl_space.pcpu)
		return -ENOMEM;
	hl_space.req_cache = KMEM_CACHE(hl_req, SLAB_ACCOUNT);
	if (!hl_space.req_cache) {
		ret = -ENOMEM;
		goto err_pcpu;
	}
	hl_space.root = kzalloc(sizeof(*hl_space.root), GFP_KERNEL);
	if (!hl_space.root) {
		ret = -ENOMEM;
		goto err_cache;
	}
	/* The root is never hashed and keeps its first reference. */
	hl_head_init(&hl_space.root->head, NULL);
	ret = misc_register(&hl_misc);
	if (ret)
		goto err_root;
	/* Optional: the module works without its debugfs file. */
	hl_space.debugfs = debugfs_create_dir("hlock", NULL);
	debugfs_create_file("locks", 0400, hl_space.debugfs, NULL,
			    &hl_locks_fops);
	return 0;

err_root:
	kfree(hl_space.root);
err_cache:
	kmem_cache_destroy(hl_space.req_cache);
err_pcpu:
	free_percpu(hl_space.pcpu);
	return ret;
}

static void __exit hl_exit(void)
{
	debugfs_remove(hl_space.debugfs);
	misc_deregister(&hl_misc);
	/* Every file is closed: only the root's own reference is left. */
	WARN_ON_ONCE(hl_space.root->head.refs != 1);
	kfree(hl_space.root);
	kmem_cache_destroy(hl_space.req_cache);
	free_percpu(hl_space.pcpu);
}

module_init(hl_init);
module_exit(hl_exit);

MODULE_DESCRIPTION("Hierarchical multi-granularity locks for userspace");
MODULE_AUTHOR("The hlock authors");
MODULE_LICENSE("GPL");
