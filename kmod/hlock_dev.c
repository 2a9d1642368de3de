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
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/poll.h>
#include <linux/random.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "hlock_core.h"

/* Buckets of the resource table, as a power of two. */
#define HL_HASH_BITS	12

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
 *	read without the lock by waiters, cleared when it is collected.
 * @async: The operation in flight was queued with HLOCK_F_ASYNC; only
 *	such an operation can be collected by HLOCK_IOC_WAIT or cancelled by
 *	HLOCK_IOC_UNLOCK.  Protected by hl_space.lock.
 */
struct hl_file {
	struct hl_locker lk;
	wait_queue_head_t wq;
	bool granted;
	bool async;
};

/* A parsed path: levels root first, with the hash of each prefix. */
struct hl_path {
	unsigned int nr;
	const char *name[HL_MAX_LEVELS];
	unsigned int len[HL_MAX_LEVELS];
	u64 hash[HL_MAX_LEVELS];
};

static struct {
	spinlock_t lock;		/* protects the table and hlock_core */
	struct hl_res *root;
	struct hlist_head table[1 << HL_HASH_BITS];
	siphash_key_t key;
	struct kmem_cache *req_cache;
} hl_space;

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

/**
 * hl_op_granted() - Wake a locker whose waiting operation was granted.
 * @lk: The locker.
 *
 * Context: hl_space.lock held.
 */
void hl_op_granted(struct hl_locker *lk)
{
	struct hl_file *f = container_of(lk, struct hl_file, lk);

	WRITE_ONCE(f->granted, true);
	wake_up_interruptible_poll(&f->wq, EPOLLIN | EPOLLRDNORM);
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

/* Wait until the operation in flight is granted. */
static int hl_wait_granted(struct hl_file *f, s64 timeout_ns)
{
	long ret;

	if (timeout_ns < 0)
		ret = wait_event_interruptible(f->wq, READ_ONCE(f->granted));
	else
		ret = wait_event_interruptible_hrtimeout(f->wq,
							 READ_ONCE(f->granted),
							 ns_to_ktime(timeout_ns));
	if (ret == -ERESTARTSYS)
		return -EINTR;
	if (ret == -ETIME)
		return -ETIMEDOUT;
	return ret;
}

/* Empty the slot after its operation was collected or undone. */
static void hl_op_clear(struct hl_file *f)
{
	hl_op_finish(&f->lk);
	f->granted = false;
	f->async = false;
}

static int hl_do_lock(struct hl_file *f, const struct hl_path *p,
		      unsigned int mode, unsigned int flags, s64 timeout_ns)
{
	struct hl_res *pre[HL_MAX_LEVELS] = { NULL };
	struct hl_op *op = &f->lk.op;
	unsigned int l, need;
	int ret = 0;

	spin_lock(&hl_space.lock);
	if (op->state != HL_OP_IDLE) {
		spin_unlock(&hl_space.lock);
		return -EBUSY;
	}
	/* Claim the slot; other calls on this locker now get -EBUSY. */
	op->state = HL_OP_SETUP;
	for (;;) {
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

	ret = hl_op_start(&f->lk, mode, flags);
	if (ret != -EINPROGRESS)
		goto out_clear;
	if (flags & HLOCK_F_ASYNC) {
		f->async = true;
		goto out_unlock;
	}
	if (!timeout_ns) {
		ret = -EAGAIN;
		goto out_cancel;
	}
	spin_unlock(&hl_space.lock);

	ret = hl_wait_granted(f, timeout_ns);

	spin_lock(&hl_space.lock);
	/* A grant that raced with the timeout or the signal wins. */
	if (op->state == HL_OP_GRANTED) {
		ret = 0;
		goto out_clear;
	}
out_cancel:
	hl_op_cancel(&f->lk);
out_clear:
	hl_op_clear(f);
out_unlock:
	spin_unlock(&hl_space.lock);
	for (l = 0; l < HL_MAX_LEVELS; l++)
		kfree(pre[l]);
	return ret;
}

static int hl_do_wait(struct hl_file *f, s64 timeout_ns)
{
	struct hl_op *op = &f->lk.op;
	int ret;

	spin_lock(&hl_space.lock);
	if (op->state == HL_OP_IDLE) {
		ret = -ENOENT;
		goto out_unlock;
	}
	if (!f->async) {
		/* Another thread's blocking call owns the slot. */
		ret = -EBUSY;
		goto out_unlock;
	}
	if (op->state == HL_OP_GRANTED) {
		ret = 0;
		hl_op_clear(f);
		goto out_unlock;
	}
	spin_unlock(&hl_space.lock);

	ret = timeout_ns ? hl_wait_granted(f, timeout_ns) : -EAGAIN;

	spin_lock(&hl_space.lock);
	if (op->state == HL_OP_GRANTED && f->async) {
		ret = 0;
		hl_op_clear(f);
	} else if (op->state == HL_OP_IDLE || !f->async) {
		/* Cancelled by another thread while we slept. */
		ret = -ENOENT;
	}
out_unlock:
	spin_unlock(&hl_space.lock);
	return ret;
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
		hl_op_cancel(&f->lk);
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
	struct hlock_lock_args args;
	struct hl_path p;
	char *buf = NULL;
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
	if (args.path_len) {
		buf = memdup_user(u64_to_user_ptr(args.path), args.path_len);
		if (IS_ERR(buf))
			return PTR_ERR(buf);
	}
	ret = hl_path_parse(&p, buf, args.path_len);
	if (!ret) {
		if (cmd == HLOCK_IOC_LOCK)
			ret = hl_do_lock(f, &p, args.mode, args.flags,
					 args.timeout_ns);
		else
			ret = hl_do_path(f, cmd, &p, args.mode);
	}
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
	file->private_data = f;
	return nonseekable_open(inode, file);
}

static int hl_release(struct inode *inode, struct file *file)
{
	struct hl_file *f = file->private_data;

	spin_lock(&hl_space.lock);
	hl_locker_release_all(&f->lk);
	spin_unlock(&hl_space.lock);
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
	hl_space.req_cache = KMEM_CACHE(hl_req, SLAB_ACCOUNT);
	if (!hl_space.req_cache)
		return -ENOMEM;
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
	return 0;

err_root:
	kfree(hl_space.root);
err_cache:
	kmem_cache_destroy(hl_space.req_cache);
	return ret;
}

static void __exit hl_exit(void)
{
	misc_deregister(&hl_misc);
	/* Every file is closed: only the root's own reference is left. */
	WARN_ON_ONCE(hl_space.root->head.refs != 1);
	kfree(hl_space.root);
	kmem_cache_destroy(hl_space.req_cache);
}

module_init(hl_init);
module_exit(hl_exit);

MODULE_DESCRIPTION("Hierarchical multi-granularity locks for userspace");
MODULE_AUTHOR("The hlock authors");
MODULE_LICENSE("GPL");
