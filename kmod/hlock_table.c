// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: the lock table, for HLOCK_IOC_TABLE and debugfs.
 *
 * The table is built locker by locker into memory of its own, then copied
 * out, so nothing touches user memory under a lock.  It walks the lockers
 * of one lock space (hl_ns.lockers), never another's.  Each locker is
 * walked under its own mutex (it may sleep there), each waiting request's
 * blockers are found under its head lock in bounded time
 * (hl_head_blockers()), and no lock is held from one locker to the next:
 * the table of a thousand waiters costs others nothing but CPU time.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "hlock_internal.h"
#include "hlock_clk.h"
#include "hlock_lease.h"
#include "hlock_ns.h"
#include "hlock_space.h"
#include "hlock_table.h"
#include "hlock_test.h"
#include "hlock_ticket.h"

/* Records between two looks at the scheduler. */
#define HL_TABLE_BATCH	64
/* The first buffer of a table. */
#define HL_TABLE_MIN	4096
/* Bytes a table copy moves between two looks at the scheduler. */
#define HL_TABLE_CHUNK	SZ_64K

/*
 * A table being built.  @now is the clock read for the locker being
 * walked, under its lock (hl_snap_file()).
 */
struct hl_snap {
	char *buf;
	size_t cap;
	size_t off;
	size_t limit;
	unsigned int count;
	struct pid_namespace *ns;
	u64 now;
	u64 boot;
	bool ids;
	struct hlock_record_ids locker;
};

/*
 * Bytes of a lock record for a path of @len bytes: the header, the path,
 * its NUL and padding to 8, the extension, and the locker's names when
 * asked for (@ids: HLOCK_TABLE_F_IDS).
 */
static size_t hl_rec_size(unsigned int len, bool ids)
{
	return HLOCK_RECORD_IDS_OFFSET(len) +
	       (ids ? sizeof(struct hlock_record_ids) : 0);
}

/* The extension of a record with a path of @len bytes. */
static struct hlock_record_ext *hl_rec_ext(struct hlock_lock_record *rec,
					   unsigned int len)
{
	return (void *)rec + HLOCK_RECORD_EXT_OFFSET(len);
}

/*
 * memcpy() of a table, which can be megabytes: in chunks, with a look at
 * the scheduler after each.  Context: may sleep.
 */
static void hl_copy_chunked(char *to, const char *from, size_t n)
{
	size_t c;

	for (; n; n -= c, to += c, from += c) {
		c = min_t(size_t, n, HL_TABLE_CHUNK);
		memcpy(to, from, c);
		cond_resched();
	}
}

/* The same to user memory.  Return: 0 or -EFAULT. */
static int hl_copy_to_user_chunked(void __user *to, const char *from,
				   size_t n)
{
	size_t c;

	for (; n; n -= c, to += c, from += c) {
		c = min_t(size_t, n, HL_TABLE_CHUNK);
		if (copy_to_user(to, from, c))
			return -EFAULT;
		cond_resched();
	}
	return 0;
}

/*
 * Room for @size more bytes, if the table may hold them.  Return: where
 * they go, or NULL (only counted).  Context: may sleep.
 */
static void *hl_snap_room(struct hl_snap *s, size_t size, int *err)
{
	size_t cap;
	char *buf;

	if (s->off + size > s->limit)
		return NULL;
	if (s->off + size > s->cap) {
		cap = max3(2 * s->cap, s->off + size, (size_t)HL_TABLE_MIN);
		cap = min(cap, s->limit);
		buf = kvmalloc(cap, GFP_KERNEL_ACCOUNT);
		if (!buf) {
			*err = -ENOMEM;
			return NULL;
		}
		hl_copy_chunked(buf, s->buf, s->off);
		kvfree(s->buf);
		s->buf = buf;
		s->cap = cap;
	}
	return s->buf + s->off;
}

/* The pids of @b's blockers into @rec, each once.  Context: head lock. */
static void hl_rec_blockers(struct hlock_lock_record *rec,
			    const struct hl_blockers *b,
			    struct pid_namespace *ns)
{
	unsigned int i, j, n = 0;

	rec->nr_blockers = b->nr;
	for (i = 0; i < b->named; i++) {
		u32 pid = hl_file_pid_ns(hl_file_of(b->reqs[i]->locker), ns);

		for (j = 0; j < n && rec->blockers[j] != pid; j++)
			;
		if (j == n)
			rec->blockers[n++] = pid;
	}
}

/*
 * The record of @req of @f.  @pending: the request of the operation's
 * waiting level, whose state only its head lock tells.  Context: f->lock.
 */
static int hl_snap_req(struct hl_snap *s, struct hl_file *f,
		       struct hl_req *req, bool pending)
{
	unsigned int len = hl_path_len(req->head);
	size_t size = hl_rec_size(len, s->ids);
	struct hlock_lock_record *rec;
	struct hl_blockers b = { .max = HLOCK_MAX_BLOCKERS };
	struct hlock_record_ext *ext;
	bool accounted = !pending || f->lk.op.step[f->lk.op.level] != HL_STEP_NEW;
	unsigned int ext_flags = 0;
	u32 node_mode = 0;
	int err = 0;

	lockdep_assert_held(&f->lock);
	rec = hl_snap_room(s, size, &err);
	s->off += size;
	if (!rec)
		return err;
	/* The whole record, padding after the path too: it goes to users. */
	memset(rec, 0, size);
	rec->rec_len = size;
	rec->path_len = len;
	rec->pid = hl_file_pid_ns(f, s->ns);
	if (rec->pid)
		memcpy(rec->comm, f->comm, sizeof(rec->comm));
	if (pending) {
		hl_head_lock(req->head);
		rec->mode = req->mode;
		rec->state = req->state == HL_CONVERTING ?
			     HLOCK_STATE_CONVERTING :
			     req->state == HL_WAITING ? HLOCK_STATE_WAITING :
			     HLOCK_STATE_GRANTED;
		if (hl_req_blocking(req->head, req))
			ext_flags |= HLOCK_REC_BLOCKING;
		ext_flags |= hl_cluster_rec(req->head, &node_mode);
		if (req->state != HL_GRANTED) {
			rec->convert_mode = req->convert;
			hl_head_blockers(req->head, req, &b);
			hl_rec_blockers(rec, &b, s->ns);
			rec->wait_ns = s->now - f->slow.wait_start;
		}
		hl_head_unlock(req->head);
	} else {
		rec->mode = req->mode;
		rec->state = HLOCK_STATE_GRANTED;
		hl_head_lock(req->head);
		if (hl_req_blocking(req->head, req))
			ext_flags |= HLOCK_REC_BLOCKING;
		ext_flags |= hl_cluster_rec(req->head, &node_mode);
		hl_head_unlock(req->head);
	}
	if (rec->state != HLOCK_STATE_WAITING && accounted)
		rec->held_ns = s->boot - req->since;
	hl_path_fill(req->head, (char *)(rec + 1), len);
	ext = hl_rec_ext(rec, len);
	/*
	 * 0 for a new request until its lock call is granted, and in a
	 * cluster space until its holder asks for it.
	 */
	ext->token = req->token == HL_TOKEN_UNDRAWN ? 0 : req->token;
	ext->flags = ext_flags;
	ext->node_mode = node_mode;
	hl_lease_fill(req, ext);
	memcpy(ext->why, f->why, sizeof(ext->why));
	if (s->ids)
		memcpy((void *)rec + HLOCK_RECORD_IDS_OFFSET(len), &s->locker,
		       sizeof(s->locker));
	s->count++;
	/* Where a test may hold the walk (hlock_test.h). */
	hl_test_stall_path(HL_TP_TABLE, (char *)(rec + 1), len);
	return 0;
}

/* Every record of @f.  Context: may sleep; takes f->lock. */
static int hl_snap_file(struct hl_snap *s, struct hl_file *f)
{
	struct hl_locker *lk = &f->lk;
	struct hl_op *op = &lk->op;
	struct hl_req *req, *pending = NULL;
	unsigned int n = 0;
	int err = 0;

	mutex_lock(&f->lock);
	/*
	 * Read under the lock its wait and grant times are set under
	 * (f->slow.wait_start, hl_req.since), so never before them: a clock read
	 * once for the whole walk came before the times of a wait or grant
	 * made while the walk got to the locker, and wait_ns and held_ns
	 * wrapped to about 2^64 ns.
	 */
	s->now = hl_clock();
	/* Precise, against grant times of the coarse clock (hl_clock_coarse()). */
	s->boot = ktime_get_boottime_ns();
	/*
	 * Read once for all of the locker's records.  A wait that ends
	 * meanwhile (a grant needs no locker lock) leaves a seq that
	 * HLOCK_IOC_REFUSE finds stale.
	 */
	s->locker.serial = f->serial;
	s->locker.locker = f->id;
	s->locker.wait_seq = READ_ONCE(lk->wait_seq);
	s->locker.hold_seq = READ_ONCE(lk->hold_seq);
	if (op->state == HL_OP_WAITING && op->queued)
		pending = op->reqs[op->level];
	hlist_for_each_entry(req, &lk->reqs, locker_node) {
		err = hl_snap_req(s, f, req, req == pending);
		if (err)
			break;
		if (++n % HL_TABLE_BATCH == 0)
			cond_resched();
	}
	/* A new request that waits is on no list of the locker yet. */
	if (!err && pending && op->step[op->level] == HL_STEP_NEW)
		err = hl_snap_req(s, f, pending, true);
	mutex_unlock(&f->lock);
	return err;
}

/*
 * Build the lock table of lock space @space, pids as seen in @ns, keeping
 * at most @limit bytes (the rest is only counted).  Return: 0 or -ENOMEM;
 * @s->off is the size the whole table needs.
 */
static int hl_snap_build(struct hl_snap *s, size_t limit,
			 struct pid_namespace *ns, struct hl_ns *space,
			 bool ids)
{
	unsigned long id = 0;
	struct hl_file *f;
	int err = 0;

	memset(s, 0, sizeof(*s));
	s->limit = limit;
	s->ns = ns;
	s->ids = ids;
	for (;;) {
		xa_lock(&space->lockers);
		f = xa_find(&space->lockers, &id, ULONG_MAX, XA_PRESENT);
		/* Erased before its file's reference goes: only a guard. */
		while (f && !refcount_inc_not_zero(&f->ref)) {
			id++;
			f = xa_find(&space->lockers, &id, ULONG_MAX,
				    XA_PRESENT);
		}
		xa_unlock(&space->lockers);
		if (!f)
			break;
		err = hl_snap_file(s, f);
		hl_file_put(f);
		if (err)
			break;
		cond_resched();
		id++;
	}
	return err;
}

/**
 * hl_ioctl_table() - HLOCK_IOC_TABLE: the table of the caller's lock
 *	space.
 * @f: The caller's locker.
 * @usize: Size of the caller's struct hlock_table_args.
 * @uarg: It.
 *
 * Return: 0 or -errno, as HLOCK_IOC_TABLE.
 */
long hl_ioctl_table(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_table_args args;
	struct hl_snap s;
	long ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags & ~HLOCK_TABLE_F_IDS || args.reserved[0] ||
	    args.reserved[1])
		return -EINVAL;
	ret = hl_snap_build(&s, args.size, task_active_pid_ns(current), f->ns,
			    args.flags & HLOCK_TABLE_F_IDS);
	if (!ret) {
		args.needed = s.off;
		args.count = 0;
		if (s.off > args.size) {
			ret = -ENOSPC;
		} else if (s.off) {
			ret = hl_copy_to_user_chunked(u64_to_user_ptr(args.buf),
						      s.buf, s.off);
			if (!ret)
				args.count = s.count;
		}
	}
	kvfree(s.buf);
	if (ret && ret != -ENOSPC)
		return ret;
	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return ret;
}

/**
 * hl_ioctl_refuse() - HLOCK_IOC_REFUSE: fail a locker's waiting lock call
 *	with -EDEADLK, for a deadlock search made outside the module.
 * @f: The caller's locker; the victim is in its lock space.
 * @usize: Size of the caller's struct hlock_refuse_args.
 * @uarg: It.
 *
 * The victim is named as its lock records named it (HLOCK_TABLE_F_IDS).
 * hl_op_refuse() withdraws its wait and undoes its call under its locker
 * lock; its continuation then ends the call with -EDEADLK.
 *
 * Context: process context, may sleep; takes the victim's locker lock.
 * Return: 0 or -errno, as HLOCK_IOC_REFUSE.
 */
long hl_ioctl_refuse(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_refuse_args args;
	struct hl_ns *space = f->ns;
	struct hl_grants g;
	struct hl_file *v;
	long ret;

	ret = copy_struct_from_user(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.reserved[0] || args.reserved[1])
		return -EINVAL;
	if (!ns_capable(space->user_ns, CAP_SYS_ADMIN))
		return -EPERM;
	xa_lock(&space->lockers);
	v = xa_load(&space->lockers, args.locker);
	/* Erased before its file's reference goes: only a guard. */
	if (v && (v->serial != args.serial || !refcount_inc_not_zero(&v->ref)))
		v = NULL;
	xa_unlock(&space->lockers);
	if (!v)
		return -ESRCH;
	hl_grants_init(&g);
	mutex_lock(&v->lock);
	ret = hl_op_refuse(&v->lk, args.wait_seq, args.hold_seq, &g);
	hl_file_unlock(v);
	/* Its continuation ends the failed call (hl_op_continue()). */
	hl_grants_continue(&g);
	hl_file_put(v);
	return ret;
}

/*
 * Print @s as printable ASCII: users choose paths, command names and
 * descriptions, and must not be able to forge lines of this file.
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

/* The records of @s, each line starting with lock space @inum. */
static void hl_locks_show_snap(struct seq_file *m, const struct hl_snap *s,
			       unsigned int inum)
{
	const struct hlock_lock_record *rec;
	unsigned int i, b;
	size_t off = 0;

	for (i = 0; i < s->count; i++, off += rec->rec_len) {
		const struct hlock_record_ext *ext;
		char mode[8];

		rec = (const void *)(s->buf + off);
		ext = (const void *)rec + HLOCK_RECORD_EXT_OFFSET(rec->path_len);
		if (rec->state == HLOCK_STATE_CONVERTING)
			scnprintf(mode, sizeof(mode), "%s>%s",
				  hl_mode_name(rec->mode),
				  hl_mode_name(rec->convert_mode));
		else
			strscpy(mode, hl_mode_name(rec->mode), sizeof(mode));
		seq_printf(m, "%-10u ", inum);
		hl_seq_escaped(m, rec->comm);
		seq_printf(m, "%*s %7u %-4s %-10s %14llu %14llu %10llu ",
			   (int)(16 - min_t(size_t, strlen(rec->comm), 16)), "",
			   rec->pid, mode,
			   rec->state == HLOCK_STATE_GRANTED ? "granted" :
			   rec->state == HLOCK_STATE_WAITING ? "waiting" :
			   "converting", rec->wait_ns, rec->held_ns,
			   ext->token);
		for (b = 0; b < min_t(u32, rec->nr_blockers,
				      HLOCK_MAX_BLOCKERS) && rec->blockers[b];
		     b++)
			seq_printf(m, "%s%u", b ? "," : "", rec->blockers[b]);
		seq_printf(m, "%*s\"", b ? 1 : 2, "");
		hl_seq_escaped(m, (const char *)(rec + 1));
		seq_puts(m, "\" \"");
		hl_seq_escaped(m, ext->why);
		seq_puts(m, "\"\n");
		if (i % HL_TABLE_BATCH == 0)
			cond_resched();
	}
}

/*
 * /sys/kernel/debug/hlock/locks: the lock table for administrators, of
 * every lock space, each record with its IPC namespace's inode number.
 */
static int hl_locks_show(struct seq_file *m, void *v)
{
	unsigned long index = 0;
	struct hl_snap s;
	struct hl_ns *ns;
	int ret = 0;

	seq_printf(m, "%-10s %-16s %7s %-4s %-10s %14s %14s %10s %-24s %s %s\n",
		   "IPC_NS", "COMMAND", "PID", "MODE", "STATE", "WAIT_NS",
		   "HELD_NS", "TOKEN", "BLOCKERS", "RESOURCE", "WHY");
	while (!ret && (ns = hl_ns_next(&index))) {
		ret = hl_snap_build(&s, SIZE_MAX, task_active_pid_ns(current),
				    ns, false);
		if (!ret)
			hl_locks_show_snap(m, &s, ns->inum);
		kvfree(s.buf);
		hl_ns_put(ns);
	}
	return ret;
}
DEFINE_SHOW_ATTRIBUTE(hl_locks);

/* /sys/kernel/debug/hlock/resources: the resource table's figures. */
static int hl_resources_show(struct seq_file *m, void *v)
{
	hl_space_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(hl_resources);

/*
 * /sys/kernel/debug/hlock/reclaim: any write frees the unused resources
 * and the ended lock spaces at once, as the worker would later.
 */
static ssize_t hl_reclaim_write(struct file *file, const char __user *buf,
				size_t count, loff_t *ppos)
{
	hl_space_reclaim();
	return count;
}

static const struct file_operations hl_reclaim_fops = {
	.owner = THIS_MODULE,
	.write = hl_reclaim_write,
	.llseek = noop_llseek,
};

static struct dentry *hl_debugfs;

/**
 * hl_debugfs_init() - Create /sys/kernel/debug/hlock/{locks,resources,
 *	reclaim,tickets}.
 *
 * Optional: the module works without it.
 */
void hl_debugfs_init(void)
{
	hl_debugfs = debugfs_create_dir("hlock", NULL);
	debugfs_create_file("locks", 0400, hl_debugfs, NULL, &hl_locks_fops);
	debugfs_create_file("resources", 0400, hl_debugfs, NULL,
			    &hl_resources_fops);
	debugfs_create_file("reclaim", 0200, hl_debugfs, NULL,
			    &hl_reclaim_fops);
	hl_ticket_debugfs(hl_debugfs);
	hl_test_debugfs(hl_debugfs);
}

/**
 * hl_debugfs_exit() - Remove what hl_debugfs_init() created.
 */
void hl_debugfs_exit(void)
{
	debugfs_remove(hl_debugfs);
}
