// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: the resources.  A resizable hash table of lock heads keyed by
 * (parent, name), looked up under RCU without writing anything; the head
 * and partition lock hooks of hlock_core; and the reclaim of resources
 * nobody uses.
 *
 * Unused resources stay in the table: locking the same paths again then
 * allocates nothing and, above all, writes nothing to the parents (no
 * reference counts), so two lockers below one database share no cache
 * line.  A worker frees them once the table has grown to twice what it
 * held after the last reclaim.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/hash.h>
#include <linux/jhash.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "hlock_internal.h"
#include "hlock_hooks.h"
#include "hlock_clk.h"
#include "hlock_cluster.h"
#include "hlock_lvb.h"
#include "hlock_ns.h"
#include "hlock_space.h"
#include "hlock_test.h"

/* Resources the table may hold before the first reclaim. */
#define HL_RECLAIM_MIN		1024
/* Walks of the table at exit before giving up on a resource. */
#define HL_EXIT_TRIES		16
/* Waits for the table's resize worker before an insert gives up. */
#define HL_INSERT_RETRIES	10
#define HL_INSERT_WAIT_MS	1

/* The key a resource is looked up by. */
struct hl_key {
	const struct hl_head *parent;
	const char *name;
	unsigned int len;
};

/*
 * Resources come from a cache of their own, with room for a name of up to
 * HL_RES_NAME_INLINE bytes (the whole object a multiple of a cache line);
 * one with a longer name from kmalloc().
 */
#define HL_RES_SIZE		ALIGN(sizeof(struct hl_res) + 16, SMP_CACHE_BYTES)
#define HL_RES_NAME_INLINE	(HL_RES_SIZE - sizeof(struct hl_res))

static struct {
	struct rhashtable table;
	struct kmem_cache *req_cache;
	struct kmem_cache *res_cache;
	struct kmem_cache *waitq_cache;
	atomic_long_t nr_res;
	atomic_long_t nr_req;		/* requests allocated */
	atomic_long_t reclaimed;	/* resources freed so far */
	atomic_long_t revisited;	/* met again once unlinked */
	long reclaim_at;		/* reclaim past this many */
	struct work_struct reclaim;
	struct mutex dead_lock;		/* protects dead, nr_dead */
	struct list_head dead;		/* ended lock spaces */
	unsigned long nr_dead;		/* on it */
} hl_space;

/*
 * The hash of (parent, name), with the table's random seed: the table
 * changes the seed and rehashes when someone aims names at one bucket.
 */
static u32 hl_hash(const struct hl_head *parent, const char *name,
		   unsigned int len, u32 seed)
{
	return jhash(name, len, seed ^ hash_ptr(parent, 32));
}

static u32 hl_key_hashfn(const void *data, u32 len, u32 seed)
{
	const struct hl_key *k = data;

	return hl_hash(k->parent, k->name, k->len, seed);
}

static u32 hl_obj_hashfn(const void *data, u32 len, u32 seed)
{
	const struct hl_res *r = data;

	return hl_hash(r->head.parent, r->name, r->len, seed);
}

static int hl_obj_cmpfn(struct rhashtable_compare_arg *arg, const void *obj)
{
	const struct hl_key *k = arg->key;
	const struct hl_res *r = obj;

	return !(r->head.parent == k->parent && r->len == k->len &&
		 !memcmp(r->name, k->name, k->len));
}

static const struct rhashtable_params hl_res_params = {
	.head_offset = offsetof(struct hl_res, node),
	.hashfn = hl_key_hashfn,
	.obj_hashfn = hl_obj_hashfn,
	.obj_cmpfn = hl_obj_cmpfn,
	.automatic_shrinking = true,
};

static struct hl_part __percpu *hl_parts_alloc(void)
{
	struct hl_part __percpu *parts;
	int cpu;

	parts = alloc_percpu_gfp(struct hl_part, GFP_KERNEL_ACCOUNT);
	if (!parts)
		return NULL;
	for_each_possible_cpu(cpu) {
		struct hl_part *p = per_cpu_ptr(parts, cpu);

		spin_lock_init(&p->lock);
		p->cpu = cpu;
		hl_part_init(p);
	}
	return parts;
}

/*
 * Give @r partitions, as it is about to have a child: intents on it can
 * then be granted per CPU.  Failing is harmless (they take the head lock).
 */
static void hl_res_give_parts(struct hl_res *r)
{
	struct hl_part __percpu *parts = hl_parts_alloc();

	if (!parts)
		return;
	hl_head_lock(&r->head);
	if (!r->head.parts) {
		r->head.parts = parts;
		parts = NULL;
		hl_head_set_parts(&r->head);
	}
	hl_head_unlock(&r->head);
	free_percpu(parts);
}

static void hl_res_free(struct hl_res *r)
{
	free_percpu(r->head.parts);
	hl_space_waitq_free(r->head.wq);
	kfree(r->leases);
	hl_lvb_free(r);
	hl_cluster_res_free(r);
	if (r->len <= HL_RES_NAME_INLINE)
		kmem_cache_free(hl_space.res_cache, r);
	else
		kfree(r);
}

static void hl_res_free_rcu(struct rcu_head *rcu)
{
	hl_res_free(container_of(rcu, struct hl_res, rcu));
}

static struct hl_res *hl_res_alloc(struct hl_head *parent,
				   const struct hl_key *k)
{
	struct hl_res *r;

	if (k->len <= HL_RES_NAME_INLINE)
		r = kmem_cache_alloc(hl_space.res_cache, GFP_KERNEL_ACCOUNT);
	else
		r = kmalloc(struct_size(r, name, k->len), GFP_KERNEL_ACCOUNT);
	if (!r)
		return NULL;
	hl_head_init(&r->head, parent);
	spin_lock_init(&r->head.lock);
	r->head.parts = NULL;
	atomic_set(&r->children, 0);
	r->leases = NULL;
	r->lvb = NULL;
	r->clk = NULL;
	r->len = k->len;
	memcpy(r->name, k->name, k->len);
	return r;
}

/* Look the child @k up.  Context: RCU read lock held. */
static struct hl_res *hl_res_lookup(const struct hl_key *k)
{
	return rhashtable_lookup(&hl_space.table, k, hl_res_params);
}

/* The key of level @level of @lk's operation. */
static void hl_op_key(struct hl_locker *lk, unsigned int level,
		      struct hl_key *k)
{
	struct hl_file *f = hl_file_of(lk);

	k->parent = lk->op.heads[level - 1];
	k->name = f->pathbuf + f->path.off[level];
	k->len = f->path.nlen[level];
}

/**
 * hl_space_lookup() - A level of the operation's path, if it exists, in
 *	the table: the level below the root that hl_head_lookup() did not
 *	find among those the locker's last lock call found.
 * @lk: The locker.
 * @level: The level; op.heads[@level - 1] is held by the operation.
 *
 * Context: RCU read lock and the locker lock held.
 * Return: the head, or NULL.
 */
struct hl_head *hl_space_lookup(struct hl_locker *lk, unsigned int level)
{
	struct hl_file *f = hl_file_of(lk);
	struct hl_key k;
	struct hl_res *r;

	f->heads_nr = level;
	hl_op_key(lk, level, &k);
	r = hl_res_lookup(&k);
	return r ? &r->head : NULL;
}

/*
 * Insert @r under @k, or find the resource already there.  The table may
 * refuse for a moment: -EBUSY while a resize it needs is pending, -ENOMEM
 * when the bucket table it tried to allocate atomically was not there.  Its
 * worker finishes either in process context, so wait for it a few times
 * before calling the lock out of memory: whatever signal the task has, as
 * the level may be another locker's, whose grant the task's call
 * continues.
 */
static struct hl_res *hl_head_insert(struct hl_key *k, struct hl_res *r)
{
	struct hl_res *old;
	unsigned int tries = 0;

	for (;;) {
		rcu_read_lock();
		old = rhashtable_lookup_get_insert_key(&hl_space.table, k,
						       &r->node, hl_res_params);
		rcu_read_unlock();
		if (!IS_ERR(old) || ++tries > HL_INSERT_RETRIES ||
		    (PTR_ERR(old) != -EBUSY && PTR_ERR(old) != -ENOMEM))
			return old;
		msleep(HL_INSERT_WAIT_MS);
	}
}

/**
 * hl_space_create() - Create a level of the operation's path.
 * @lk: The locker.
 * @level: The level, not the root; op.heads[@level - 1] is held by the
 *	operation, which keeps it from being reclaimed.
 *
 * Gives the parent partitions first, if it has none yet: it is about to
 * have a child, so intents will be taken on it.
 *
 * Context: the locker lock held; may sleep.
 * Return: 0 when the level exists now (or a dead resource of its name is
 * on its way out: look again), or -ENOMEM.
 */
int hl_space_create(struct hl_locker *lk, unsigned int level)
{
	struct hl_res *parent, *r, *old;
	struct hl_key k;

	hl_op_key(lk, level, &k);
	parent = hl_res_of(k.parent);
	/* A cluster head's grants are decided on it, with the node's mode. */
	if (!READ_ONCE(parent->head.has_parts) && !parent->clk)
		hl_res_give_parts(parent);
	r = hl_res_alloc(&parent->head, &k);
	if (!r)
		return -ENOMEM;
	if (parent->clk) {
		struct hl_file *f = hl_file_of(lk);

		if (hl_cluster_res_init(r, hl_cluster_of(parent), f->pathbuf,
					f->path.off[level] +
					f->path.nlen[level])) {
			hl_res_free(r);
			return -ENOMEM;
		}
	}
	/*
	 * Counted before it is visible: the reclaim worker may find it, and
	 * free it, before this returns, and a parent's count must never be
	 * below its children in the table.
	 */
	atomic_inc(&parent->children);
	old = hl_head_insert(&k, r);
	/* Not inserted: an error, or a resource of the name is there. */
	if (old)
		atomic_dec(&parent->children);
	if (IS_ERR(old)) {
		hl_res_free(r);
		return -ENOMEM;
	}
	if (old) {
		/* Another locker's, or a dead one going: look again. */
		hl_res_free(r);
		cond_resched();
		return 0;
	}
	if (atomic_long_inc_return(&hl_space.nr_res) >
	    READ_ONCE(hl_space.reclaim_at))
		schedule_work(&hl_space.reclaim);
	return 0;
}

/**
 * hl_path_find() - Look a path up without creating anything.
 * @root: The root of the lock space.
 * @p: The parsed path.
 * @buf: The path.
 *
 * Context: RCU read lock held; the head stays valid until it is dropped.
 * Return: the head, or NULL when some level does not exist.
 */
struct hl_head *hl_path_find(struct hl_head *root, const struct hl_path *p,
			     const char *buf)
{
	struct hl_head *h = root;
	unsigned int l;

	for (l = 1; l < p->nr; l++) {
		struct hl_key k = {
			.parent = h,
			.name = buf + p->off[l],
			.len = p->nlen[l],
		};
		struct hl_res *r = hl_res_lookup(&k);

		if (!r)
			return NULL;
		h = &r->head;
	}
	return h;
}

/**
 * hl_path_parse() - Split a path into components.
 * @p: Filled in.
 * @buf: The path, @len bytes.
 * @len: Its length; 0 is the root.
 *
 * Return: 0, -EINVAL (an empty component or a NUL byte) or -ENAMETOOLONG.
 */
int hl_path_parse(struct hl_path *p, const char *buf, unsigned int len)
{
	unsigned int i = 0;

	p->nr = 1;
	p->len = len;
	p->off[0] = 0;
	p->nlen[0] = 0;
	if (!len)
		return 0;
	/* One pass: names are short, and each byte is looked at once. */
	for (;;) {
		unsigned int start = i;

		while (i < len && buf[i] != '/' && buf[i])
			i++;
		if (i < len && !buf[i])
			return -EINVAL;
		if (i == start)
			return -EINVAL;
		if (i - start > HLOCK_NAME_MAX || p->nr > HLOCK_MAX_DEPTH)
			return -ENAMETOOLONG;
		p->off[p->nr] = start;
		p->nlen[p->nr] = i - start;
		p->nr++;
		if (i++ == len)
			return 0;
	}
}

/**
 * hl_path_len() - Bytes of the path of a resource.
 * @h: The resource, kept alive by the caller.
 *
 * Return: the length, without a NUL.
 */
unsigned int hl_path_len(const struct hl_head *h)
{
	unsigned int len = 0;

	for (; h->parent; h = h->parent)
		len += hl_res_of(h)->len + (len ? 1 : 0);
	return len;
}

/**
 * hl_path_fill() - Write the path of a resource.
 * @h: The resource, kept alive by the caller.
 * @dst: Room for @len bytes and a NUL.
 * @len: hl_path_len() of @h.
 */
void hl_path_fill(const struct hl_head *h, char *dst, unsigned int len)
{
	char *p = dst + len;

	*p = '\0';
	for (; h->parent; h = h->parent) {
		const struct hl_res *r = hl_res_of(h);

		if (p != dst + len)
			*--p = '/';
		p -= r->len;
		memcpy(p, r->name, r->len);
	}
}

/**
 * hl_req_alloc() - A new request, for a locker's spares.
 *
 * Context: may sleep.
 * Return: the request, or NULL.
 */
struct hl_req *hl_req_alloc(void)
{
	struct hl_req *req = kmem_cache_alloc(hl_space.req_cache,
					      GFP_KERNEL_ACCOUNT);

	/* Not on the common path: a locker keeps its spares. */
	if (req) {
		atomic_long_inc(&hl_space.nr_req);
		req->lease = NULL;
	}
	return req;
}

/**
 * hl_waitq_alloc() - New queues, for a locker's spare (struct hl_waitq).
 *
 * Context: may sleep.
 * Return: the queues, or NULL.
 */
struct hl_waitq *hl_waitq_alloc(void)
{
	return kmem_cache_alloc(hl_space.waitq_cache, GFP_KERNEL_ACCOUNT);
}

/**
 * hl_space_waitq_free() - Free queues.
 * @wq: The queues, or NULL.
 *
 * Context: any.
 */
void hl_space_waitq_free(struct hl_waitq *wq)
{
	if (wq)
		kmem_cache_free(hl_space.waitq_cache, wq);
}

/**
 * hl_space_req_free() - Free a request.
 * @req: The request.
 *
 * Context: any.
 */
void hl_space_req_free(struct hl_req *req)
{
	atomic_long_dec(&hl_space.nr_req);
	kmem_cache_free(hl_space.req_cache, req);
}

/*
 * Free @r if nothing is on it and it has no children.  Return: true when
 * it was unlinked.  Context: process context, no hlock lock held.
 */
static bool hl_res_reclaim(struct hl_res *r)
{
	struct hl_res *parent = hl_res_of(r->head.parent);
	bool dead;

	/*
	 * A quick look, without the lock, at a count that may be stale:
	 * hl_head_retire() asks again (hl_head_has_children()) under it.
	 */
	if (atomic_read(&r->children))
		return false;
	hl_test_stall(HL_TP_RECLAIM, r->name, r->len);
	hl_head_lock(&r->head);
	/*
	 * The walk may meet a resource again after this pass unlinked it:
	 * a resize of the table that moves entries under the walk can lead
	 * it along the stale link of one unlinked a moment ago, while the
	 * walk's RCU section still keeps it.  Only the first meeting may
	 * unlink it: a second one would take another child off its parent,
	 * which could then be freed under a child of its own.
	 */
	if (r->head.dead) {
		hl_head_unlock(&r->head);
		atomic_long_inc(&hl_space.revisited);
		return false;
	}
	dead = hl_cluster_may_free(r) && hl_head_retire(&r->head);
	hl_head_unlock(&r->head);
	if (!dead)
		return false;
	/* Dead, nobody makes a child here any more: the count is final. */
	WARN_ON_ONCE(atomic_read(&r->children));
	/* Before it can be freed: see hl_space_gen().  One writer: us. */
	WRITE_ONCE(hl_space_generation, hl_space_generation + 1);
	/* Only this pass unlinks; a resource that was not linked stays. */
	if (WARN_ON_ONCE(rhashtable_remove_fast(&hl_space.table, &r->node,
						hl_res_params)))
		return false;
	atomic_dec(&parent->children);
	atomic_long_dec(&hl_space.nr_res);
	atomic_long_inc(&hl_space.reclaimed);
	/* Lookups and fast paths may still be looking at it. */
	call_rcu(&r->rcu, hl_res_free_rcu);
	return true;
}

/*
 * Free the ended lock spaces whose resources are all gone, and their
 * roots.  Context: process context, no hlock lock held.
 */
static void hl_reclaim_roots(void)
{
	struct hl_ns *ns, *tmp;

	mutex_lock(&hl_space.dead_lock);
	list_for_each_entry_safe(ns, tmp, &hl_space.dead, dead_node) {
		if (atomic_read(&ns->root->children))
			continue;
		list_del(&ns->dead_node);
		WRITE_ONCE(hl_space.nr_dead, hl_space.nr_dead - 1);
		/* No locker can reach it; RCU for the hooks' sake. */
		call_rcu(&ns->root->rcu, hl_res_free_rcu);
		hl_cluster_free(ns->cl);
		kfree(ns);
		cond_resched();
	}
	mutex_unlock(&hl_space.dead_lock);
}

/**
 * hl_space_for_each() - Call a function on every resource in the table.
 * @fn: The function; called under RCU, it must not sleep.  The root of
 *	each lock space is not in the table.
 * @arg: Its argument.
 *
 * A resource added meanwhile may be missed, one may be seen twice.
 *
 * Context: process context; sleeps between resources when asked to.
 */
void hl_space_for_each(void (*fn)(struct hl_res *r, void *arg), void *arg)
{
	struct rhashtable_iter iter;
	struct hl_res *r;

	rhashtable_walk_enter(&hl_space.table, &iter);
	rhashtable_walk_start(&iter);
	while ((r = rhashtable_walk_next(&iter))) {
		if (IS_ERR(r)) {
			if (PTR_ERR(r) == -EAGAIN)
				continue;
			break;
		}
		fn(r, arg);
		if (need_resched()) {
			rhashtable_walk_stop(&iter);
			cond_resched();
			rhashtable_walk_start(&iter);
		}
	}
	rhashtable_walk_stop(&iter);
	rhashtable_walk_exit(&iter);
}

/* One resource of a reclaim pass; @arg counts those freed. */
static void hl_reclaim_one(struct hl_res *r, void *arg)
{
	*(long *)arg += hl_res_reclaim(r);
}

/*
 * Free every unused resource: leaves first, then, on the next pass, the
 * parents they left without children.  Each step holds one head lock for
 * O(CPUs); the walk sleeps between steps when asked to.
 */
static void hl_reclaim(void)
{
	unsigned int pass;
	long freed = 1;

	for (pass = 0; freed && pass <= HL_MAX_LEVELS; pass++) {
		freed = 0;
		hl_space_for_each(hl_reclaim_one, &freed);
	}
	hl_reclaim_roots();
	WRITE_ONCE(hl_space.reclaim_at,
		   max(2 * atomic_long_read(&hl_space.nr_res),
		       (long)HL_RECLAIM_MIN));
}

static void hl_reclaim_work(struct work_struct *work)
{
	hl_reclaim();
}

/**
 * hl_root_alloc() - The root of a new lock space.
 *
 * A resource like any other but never hashed, with no parent and no name;
 * it gets its partitions with its first child, as any other does.
 *
 * Context: may sleep.
 * Return: the root, or NULL.
 */
struct hl_res *hl_root_alloc(void)
{
	static const struct hl_key root_key = { .name = "" };

	return hl_res_alloc(NULL, &root_key);
}

/**
 * hl_root_free() - Free the root of a lock space nobody used.
 * @root: The root.
 */
void hl_root_free(struct hl_res *root)
{
	hl_res_free(root);
}

/**
 * hl_ns_retire() - Hand an ended lock space to the reclaim worker.
 * @ns: The space, with no locker and nothing on its resources.
 *
 * The worker frees its unused resources, as it frees any, and then the
 * space and its root.
 *
 * Context: process context.
 */
void hl_ns_retire(struct hl_ns *ns)
{
	mutex_lock(&hl_space.dead_lock);
	list_add_tail(&ns->dead_node, &hl_space.dead);
	WRITE_ONCE(hl_space.nr_dead, hl_space.nr_dead + 1);
	mutex_unlock(&hl_space.dead_lock);
	schedule_work(&hl_space.reclaim);
}

/**
 * hl_space_reclaim() - Free every unused resource and ended lock space
 *	now, for debugfs.
 *
 * Context: process context, no hlock lock held; waits for the worker.
 */
void hl_space_reclaim(void)
{
	/* A run already under way may have passed some: ask for another. */
	schedule_work(&hl_space.reclaim);
	flush_work(&hl_space.reclaim);
}

/**
 * hl_space_show() - The resource table's figures, for debugfs.
 * @m: Where to print them.
 */
void hl_space_show(struct seq_file *m)
{
	seq_printf(m, "resources %ld\nrequests %ld\nreclaim_at %ld\n"
		   "reclaimed %ld\nrevisited %ld\nspaces %lu\nspaces_ended %lu\n"
		   "fast_shuts %ld\n",
		   atomic_long_read(&hl_space.nr_res),
		   atomic_long_read(&hl_space.nr_req),
		   READ_ONCE(hl_space.reclaim_at),
		   atomic_long_read(&hl_space.reclaimed),
		   atomic_long_read(&hl_space.revisited), hl_ns_count(),
		   READ_ONCE(hl_space.nr_dead),
		   atomic_long_read(&hl_fast_shuts));
}

/**
 * hl_space_init() - Set up the resource table.
 *
 * Return: 0 or -ENOMEM.
 */
int hl_space_init(void)
{
	int ret;

	atomic_long_set(&hl_space.nr_res, 0);
	atomic_long_set(&hl_space.nr_req, 0);
	hl_space.reclaim_at = HL_RECLAIM_MIN;
	INIT_WORK(&hl_space.reclaim, hl_reclaim_work);
	mutex_init(&hl_space.dead_lock);
	INIT_LIST_HEAD(&hl_space.dead);
	hl_space.req_cache = KMEM_CACHE(hl_req, SLAB_ACCOUNT);
	if (!hl_space.req_cache)
		return -ENOMEM;
	/* Aligned: heads of unrelated resources never share a line. */
	hl_space.res_cache = kmem_cache_create("hl_res", HL_RES_SIZE, 0,
					       SLAB_HWCACHE_ALIGN | SLAB_ACCOUNT,
					       NULL);
	if (!hl_space.res_cache) {
		ret = -ENOMEM;
		goto out_req;
	}
	/* Only resources where something waited have queues. */
	hl_space.waitq_cache = KMEM_CACHE(hl_waitq, SLAB_ACCOUNT);
	if (!hl_space.waitq_cache) {
		ret = -ENOMEM;
		goto out_res;
	}
	ret = rhashtable_init(&hl_space.table, &hl_res_params);
	if (!ret)
		return 0;
	kmem_cache_destroy(hl_space.waitq_cache);
out_res:
	kmem_cache_destroy(hl_space.res_cache);
out_req:
	kmem_cache_destroy(hl_space.req_cache);
	return ret;
}

/**
 * hl_space_exit() - Free every resource, every ended lock space, and the
 *	table.
 *
 * Context: every locker is gone.
 */
void hl_space_exit(void)
{
	unsigned int tries;

	cancel_work_sync(&hl_space.reclaim);
	/* A walk may miss entries while the table shrinks: walk again. */
	for (tries = 0; (atomic_long_read(&hl_space.nr_res) ||
			 !list_empty(&hl_space.dead)) &&
	     tries < HL_EXIT_TRIES; tries++)
		hl_reclaim();
	WARN_ON_ONCE(atomic_long_read(&hl_space.nr_res));
	WARN_ON_ONCE(!list_empty(&hl_space.dead));
	rhashtable_destroy(&hl_space.table);
	/* The resources freed after a grace period. */
	rcu_barrier();
	kmem_cache_destroy(hl_space.waitq_cache);
	kmem_cache_destroy(hl_space.res_cache);
	kmem_cache_destroy(hl_space.req_cache);
}

/* The host's hooks: resources and their queues. */
const struct hl_hooks hl_space_hooks = {
	.head_lookup = hl_space_lookup,
	.head_create = hl_space_create,
	.req_free = hl_space_req_free,
	.waitq_alloc = hl_waitq_alloc,
	.waitq_free = hl_space_waitq_free,
};
