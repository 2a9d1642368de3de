// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: fencing tokens (HLOCK_IOC_TOKEN) and lockers' descriptions
 * (HLOCK_IOC_DESCRIBE).
 *
 * A lock space draws its tokens from one counter (hl_ns.token), once per
 * lock call that grants a new request or a conversion (hlock_core.c's
 * op_stamp()), so a grant always has a greater token than every grant of
 * the space before it, in particular than the holder it waited for.  A
 * cluster space draws from a counter of its DLM lockspace instead
 * (hl_cluster_token()), which takes a round trip when another node drew
 * last: only when the holder asks for the token, still while it holds the
 * grant, so that the token is greater than that of every grant before on
 * any node.  A locker's description is a short string of its own choosing
 * that the lock table, debugfs and the slow-wait log show beside its
 * requests.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "hlock_internal.h"
#include "hlock_cluster.h"
#include "hlock_space.h"
#include "hlock_why.h"

/*
 * Copy the argument of an ioctl of this file into @args, a structure with
 * @flags and @reserved[2], which must be zero.  Return: 0, -EINVAL or what
 * copy_struct_from_user() returns.
 */
#define hl_get_args(args, uarg, usize)					\
	(copy_struct_from_user(&(args), sizeof(args), (uarg), (usize)) ?: \
	 ((args).flags || (args).reserved[0] || (args).reserved[1] ?	\
	  -EINVAL : 0))

/*
 * The token of @f's grant on the path @buf, @len bytes: 0 when it holds
 * nothing there (or only what its lock call in flight took so far).
 * Return: 0 or the path's parse error.  Context: takes f->lock.
 */
static int hl_file_token(struct hl_file *f, const char *buf, unsigned int len,
			 u64 *token)
{
	struct hl_path p;
	struct hl_head *h;
	struct hl_req *req;
	int ret;

	ret = hl_path_parse(&p, buf, len);
	if (ret)
		return ret;
	mutex_lock(&f->lock);
	/* Under RCU, @h cannot be freed and its address reused meanwhile. */
	rcu_read_lock();
	h = hl_path_find(f->root, &p, buf);
	req = h ? hl_locker_find(&f->lk, h) : NULL;
	*token = req ? req->token : 0;
	rcu_read_unlock();
	/* The locker's own request: only its calls, under f->lock, free it. */
	if (*token == HL_TOKEN_UNDRAWN) {
		ret = hl_cluster_token(f->ns->cl, token);
		if (!ret)
			hl_req_token_set(&f->lk, req, *token);
	}
	mutex_unlock(&f->lock);
	return ret;
}

/**
 * hl_ioctl_token() - HLOCK_IOC_TOKEN: the fencing token of the caller's
 *	grant on a path.
 * @f: The caller's locker.
 * @usize: Size of the caller's struct hlock_token_args.
 * @uarg: It; its @token is set.
 *
 * Context: process context, may sleep; takes f->lock.
 * Return: 0 or -errno, as HLOCK_IOC_TOKEN.
 */
long hl_ioctl_token(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_token_args __user *u = uarg;
	struct hlock_token_args args;
	u64 token;
	char *buf;
	long ret;

	/* @token is only written: what the caller left there is ignored. */
	ret = hl_get_args(args, uarg, usize);
	if (ret)
		return ret;
	if (args.path_len > HLOCK_PATH_MAX)
		return -ENAMETOOLONG;
	buf = memdup_user_nul(u64_to_user_ptr(args.path), args.path_len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = hl_file_token(f, buf, args.path_len, &token);
	kfree(buf);
	if (ret)
		return ret;
	if (!token)
		return -ENOENT;
	return put_user(token, &u->token) ? -EFAULT : 0;
}

/**
 * hl_ioctl_describe() - HLOCK_IOC_DESCRIBE: set the caller's description.
 * @f: The caller's locker.
 * @usize: Size of the caller's struct hlock_describe_args.
 * @uarg: It.
 *
 * Context: process context, may sleep; takes f->lock.
 * Return: 0 or -errno, as HLOCK_IOC_DESCRIBE.
 */
long hl_ioctl_describe(struct hl_file *f, size_t usize, void __user *uarg)
{
	struct hlock_describe_args args;
	char why[HLOCK_WHY_LEN] = "";
	long ret;

	ret = hl_get_args(args, uarg, usize);
	if (ret)
		return ret;
	/* Room for the NUL that ends it in the lock table. */
	if (args.why_len >= HLOCK_WHY_LEN)
		return -ENAMETOOLONG;
	if (copy_from_user(why, u64_to_user_ptr(args.why), args.why_len))
		return -EFAULT;
	if (memchr(why, '\0', args.why_len))
		return -EINVAL;
	/* Zero-padded: the table copies it whole to users. */
	mutex_lock(&f->lock);
	memcpy(f->why, why, sizeof(f->why));
	mutex_unlock(&f->lock);
	return 0;
}
