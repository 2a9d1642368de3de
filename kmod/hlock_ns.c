// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: lock spaces.  Each IPC namespace has a lock space of its own, as
 * it has SysV IPC objects of its own: a root resource, so a tree of
 * resources no other namespace can name; its statistics; and the user
 * namespace in which CAP_SYS_NICE lets a locker jump queues.  A locker
 * belongs to the space of the namespace it was opened in, for life.
 *
 * The space of the initial IPC namespace lives as long as the module, so
 * its statistics count from the module's start.  Any other lives as long
 * as a locker of it does: the first open in its namespace makes it, the
 * last locker freed ends it (a module cannot learn when a namespace
 * ends, and a space that outlived its lockers would have to pin its
 * namespace).  Meanwhile it holds a reference to the namespace, so the
 * namespace's inode number, by which spaces are found, names no other
 * namespace.  Once it ends, its root and the resources below go to the
 * reclaim worker (hl_ns_retire()).
 *
 * Cluster bindings: the initial namespace's space is bound to the DLM
 * lockspace the module parameter cluster names (hl_ns_rebind()).  Any
 * other namespace's binding is kept here (hl_ns_bind()) while no space
 * of it lives, and its next space joins the lockspace when it is made.
 * A binding holds a reference to its namespace, for the same reason a
 * space does, until it is removed or the module goes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ipc_namespace.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/percpu.h>
#include <linux/proc_ns.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "hlock_internal.h"
#include "hlock_hooks.h"
#include "hlock_clk.h"
#include "hlock_cluster.h"
#include "hlock_ns.h"
#include "hlock_space.h"

/* Live spaces by the inode number of their IPC namespace. */
static DEFINE_XARRAY(hl_nss);
/* Serialises making and ending spaces; process context only. */
static DEFINE_MUTEX(hl_nss_lock);
/* Spaces in hl_nss; written under hl_nss_lock. */
static unsigned long hl_nss_nr;
/* The initial namespace's, with a reference of the module's own. */
static struct hl_ns *hl_init_ns;
/* Where spaces bound to a DLM lockspace end (hl_ns_put()). */
static struct workqueue_struct *hl_ns_wq;

/**
 * struct hl_bind - The DLM lockspace of the spaces of an IPC namespace.
 * @ipc: The namespace, with a reference.
 * @name: The lockspace's name.
 */
struct hl_bind {
	struct ipc_namespace *ipc;
	char name[HLOCK_CLUSTER_NAME_MAX + 1];
};

/* Bindings by the inode number of their namespace; under hl_nss_lock. */
static DEFINE_XARRAY(hl_binds);

/**
 * hl_ipc_put() - Drop a reference to an IPC namespace.
 * @ipc: The namespace.
 *
 * Through the namespace's own operations: put_ipc_ns() is not exported by
 * every kernel this module builds for.
 */
void hl_ipc_put(struct ipc_namespace *ipc)
{
	ipc->ns.ops->put(&ipc->ns);
}

/**
 * hl_ipc_get_pid() - The IPC namespace of a process, with a reference.
 * @nr: The process, as the caller's PID namespace numbers it; 0 for the
 *	caller.
 *
 * Context: process context.
 * Return: the namespace (hl_ipc_put() it), or ERR_PTR(-ESRCH).
 */
struct ipc_namespace *hl_ipc_get_pid(pid_t nr)
{
	struct ipc_namespace *ipc = NULL;
	struct task_struct *task;

	if (!nr)
		return get_ipc_ns(current->nsproxy->ipc_ns);
	rcu_read_lock();
	task = pid_task(find_vpid(nr), PIDTYPE_PID);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	if (!task)
		return ERR_PTR(-ESRCH);
	/* An exiting task drops its nsproxy under its task lock. */
	task_lock(task);
	if (task->nsproxy)
		ipc = get_ipc_ns(task->nsproxy->ipc_ns);
	task_unlock(task);
	put_task_struct(task);
	return ipc ?: ERR_PTR(-ESRCH);
}

static struct hl_ns *hl_ns_alloc(struct ipc_namespace *ipc)
{
	struct hl_ns *ns = kzalloc(sizeof(*ns), GFP_KERNEL_ACCOUNT);

	if (!ns)
		return NULL;
	ns->stats = alloc_percpu_gfp(struct hlock_stats, GFP_KERNEL_ACCOUNT);
	if (!ns->stats)
		goto err;
	ns->root = hl_root_alloc();
	if (!ns->root)
		goto err_stats;
	refcount_set(&ns->ref, 1);
	xa_init_flags(&ns->lockers, XA_FLAGS_ALLOC);
	hl_graph_init(&ns->graph);
	mutex_init(&ns->graph.lock);
	ns->ipc = get_ipc_ns(ipc);
	ns->user_ns = ipc->user_ns;
	ns->inum = ipc->ns.inum;
	atomic64_set(&ns->token, 0);
	return ns;

err_stats:
	free_percpu(ns->stats);
err:
	kfree(ns);
	return NULL;
}

/* Free a space that never was in hl_nss, leaving its lockspace if any. */
static void hl_ns_free(struct hl_ns *ns)
{
	hl_cluster_leave(ns->cl);
	hl_cluster_free(ns->cl);
	hl_root_free(ns->root);
	hl_ipc_put(ns->ipc);
	free_percpu(ns->stats);
	kfree(ns);
}

/*
 * Bind a new space, not yet in hl_nss, to the DLM lockspace @name; on
 * error, hl_ns_free() leaves what it joined.
 * Context: hl_nss_lock; may sleep (joining waits for the cluster).
 * Return: 0, or the error of the join (hl_cluster_join()), or -ENOMEM.
 */
static int hl_ns_join(struct hl_ns *ns, const char *name)
{
	struct hl_cluster *cl;

	lockdep_assert_held(&hl_nss_lock);
	cl = hl_cluster_join(name);
	if (IS_ERR(cl))
		return PTR_ERR(cl);
	ns->cl = cl;
	return hl_cluster_res_init(ns->root, cl, "", 0);
}

/**
 * hl_ns_get_ipc() - The lock space of an IPC namespace, made if need be,
 *	with a reference.
 * @ipc: The namespace.
 *
 * A new space of a namespace an administrator bound (hl_ns_bind()) joins
 * its DLM lockspace first, once the last one has left it.
 *
 * Context: process context, may sleep.
 * Return: the space, or an ERR_PTR(): -ENOMEM, -EINTR (a fatal signal
 * while the last space left the lockspace), or the error of the join
 * (hl_cluster_join()).
 */
struct hl_ns *hl_ns_get_ipc(struct ipc_namespace *ipc)
{
	char name[HLOCK_CLUSTER_NAME_MAX + 1];
	struct hl_bind *bind;
	struct hl_ns *ns;
	int ret;

again:
	mutex_lock(&hl_nss_lock);
	ns = xa_load(&hl_nss, ipc->ns.inum);
	if (ns) {
		/* Spaces in the array have lockers: ended under the mutex. */
		refcount_inc(&ns->ref);
		goto out;
	}
	bind = xa_load(&hl_binds, ipc->ns.inum);
	/*
	 * The namespace's last space may still be leaving the lockspace
	 * (hl_ns_put()), which this node cannot join again until then: wait
	 * for it, without the mutex.
	 */
	if (bind && hl_cluster_leaving(bind->name)) {
		strscpy(name, bind->name, sizeof(name));
		mutex_unlock(&hl_nss_lock);
		ret = hl_cluster_wait_left(name);
		if (ret)
			return ERR_PTR(ret);
		goto again;
	}
	ns = hl_ns_alloc(ipc);
	if (!ns) {
		ns = ERR_PTR(-ENOMEM);
		goto out;
	}
	if (bind) {
		ret = hl_ns_join(ns, bind->name);
		if (ret)
			goto err;
	}
	ret = xa_err(xa_store(&hl_nss, ns->inum, ns, GFP_KERNEL_ACCOUNT));
	if (ret)
		goto err;
	WRITE_ONCE(hl_nss_nr, hl_nss_nr + 1);
out:
	mutex_unlock(&hl_nss_lock);
	return ns;

err:
	hl_ns_free(ns);
	mutex_unlock(&hl_nss_lock);
	return ERR_PTR(ret);
}

/**
 * hl_ns_get() - The lock space of the caller's IPC namespace, made if need
 *	be, with a reference.
 *
 * Context: process context, may sleep.
 * Return: the space, or an ERR_PTR() (-ENOMEM).
 */
struct hl_ns *hl_ns_get(void)
{
	/* Only the task itself changes its nsproxy: no lock to read it. */
	return hl_ns_get_ipc(current->nsproxy->ipc_ns);
}

/**
 * hl_ns_init() - Make the lock space of the initial IPC namespace.
 *
 * Return: 0 or -ENOMEM.
 */
int hl_ns_init(void)
{
	struct hl_ns *ns;

	hl_ns_wq = alloc_workqueue("hlock_ns", WQ_UNBOUND, 0);
	if (!hl_ns_wq)
		return -ENOMEM;
	ns = hl_ns_get_ipc(init_task.nsproxy->ipc_ns);
	if (IS_ERR(ns)) {
		destroy_workqueue(hl_ns_wq);
		return PTR_ERR(ns);
	}
	hl_init_ns = ns;
	return 0;
}

/**
 * hl_ns_exit() - Let the initial IPC namespace's lock space end.
 *
 * Context: every locker is gone.
 */
void hl_ns_exit(void)
{
	struct hl_bind *bind;
	unsigned long inum;

	hl_ns_put(hl_init_ns);
	/* The spaces that are still leaving their lockspaces. */
	destroy_workqueue(hl_ns_wq);
	xa_for_each(&hl_binds, inum, bind) {
		hl_ipc_put(bind->ipc);
		kfree(bind);
	}
	xa_destroy(&hl_binds);
}

/* End a space out of hl_nss: its lockers are gone.  Process context. */
static void hl_ns_end(struct hl_ns *ns)
{
	/* This frees nothing but the array's own. */
	xa_destroy(&ns->lockers);
	hl_ipc_put(ns->ipc);
	ns->ipc = NULL;
	free_percpu(ns->stats);
	ns->stats = NULL;
	mutex_destroy(&ns->graph.lock);
	/* Its DLM locks go with the lockspace; the resources go later. */
	hl_cluster_leave(ns->cl);
	hl_ns_retire(ns);
}

static void hl_ns_end_work(struct work_struct *work)
{
	hl_ns_end(container_of(work, struct hl_ns, end_work));
}

/**
 * hl_ns_put() - Drop a reference to a lock space; the last one ends it.
 * @ns: The space.
 *
 * A space bound to a DLM lockspace ends in a worker of its own: leaving
 * waits for the binding's works, and the last put may come from one of
 * them (a grant's continuation puts its locker).  Until it has left, a new
 * space of the namespace waits to join (hl_ns_get_ipc()).
 *
 * Context: process context, may sleep.  The space's lockers are gone by
 * the last put: nothing is on its resources.
 */
void hl_ns_put(struct hl_ns *ns)
{
	if (!refcount_dec_and_mutex_lock(&ns->ref, &hl_nss_lock))
		return;
	xa_erase(&hl_nss, ns->inum);
	WRITE_ONCE(hl_nss_nr, hl_nss_nr - 1);
	/* Before the mutex goes: the next space of it must see the leave. */
	if (ns->cl)
		hl_cluster_retire(ns->cl);
	mutex_unlock(&hl_nss_lock);
	if (ns->cl) {
		INIT_WORK(&ns->end_work, hl_ns_end_work);
		queue_work(hl_ns_wq, &ns->end_work);
		return;
	}
	hl_ns_end(ns);
}

/**
 * hl_ns_rebind() - Give the initial IPC namespace a new lock space, bound
 *	to a DLM lockspace or to none.
 * @name: The DLM lockspace, or NULL for this machine only.
 *
 * Only while no locker is open there: a space is bound for life.  The old
 * space ends (its statistics with it) and the new one takes its place.
 *
 * Context: process context, may sleep (joining waits for the cluster).
 * Return: 0; -EBUSY while lockers are open; -ENOMEM; or the error of the
 * join (hl_cluster_join()).
 */
int hl_ns_rebind(const char *name)
{
	struct hl_ns *old, *ns;
	int ret;

	mutex_lock(&hl_nss_lock);
	old = hl_init_ns;
	/* The module's own reference is the only one when no locker is. */
	if (refcount_read(&old->ref) != 1) {
		ret = -EBUSY;
		goto out;
	}
	ns = hl_ns_alloc(old->ipc);
	if (!ns) {
		ret = -ENOMEM;
		goto out;
	}
	if (name) {
		ret = hl_ns_join(ns, name);
		if (ret)
			goto err;
	}
	ret = xa_err(xa_store(&hl_nss, ns->inum, ns, GFP_KERNEL));
	if (ret)
		goto err;
	hl_init_ns = ns;
	mutex_unlock(&hl_nss_lock);
	/* The array holds the new space already. */
	hl_ns_end(old);
	return 0;

err:
	hl_ns_free(ns);
out:
	mutex_unlock(&hl_nss_lock);
	return ret;
}

/**
 * hl_ns_is_init() - Whether an IPC namespace is the initial one.
 * @ipc: The namespace.
 *
 * Return: true when it is.
 */
bool hl_ns_is_init(const struct ipc_namespace *ipc)
{
	return ipc == init_task.nsproxy->ipc_ns;
}

/**
 * hl_ns_bind() - Bind the lock spaces of an IPC namespace other than the
 *	initial one to a DLM lockspace, or to none.
 * @ipc: The namespace; the binding takes a reference of its own.
 * @name: The lockspace's name, or NULL for none.
 *
 * Only while no space of it lives (a space is bound for life): its next
 * space joins the lockspace when it is made.  Returns once the last space
 * of the old binding, if it is still ending, has left its lockspace, so
 * that the cluster stack may then be stopped.
 *
 * Context: process context, may sleep.
 * Return: 0, -EBUSY while a locker is open in the namespace, or -ENOMEM.
 */
int hl_ns_bind(struct ipc_namespace *ipc, const char *name)
{
	struct hl_bind *bind = NULL, *old = NULL;
	int ret = 0;

	if (name) {
		bind = kzalloc(sizeof(*bind), GFP_KERNEL);
		if (!bind)
			return -ENOMEM;
		strscpy(bind->name, name, sizeof(bind->name));
	}
	mutex_lock(&hl_nss_lock);
	/* Spaces other than the initial one live while lockers do. */
	if (xa_load(&hl_nss, ipc->ns.inum)) {
		ret = -EBUSY;
		goto out;
	}
	if (bind) {
		bind->ipc = get_ipc_ns(ipc);
		old = xa_store(&hl_binds, ipc->ns.inum, bind, GFP_KERNEL);
		if (xa_is_err(old)) {
			hl_ipc_put(bind->ipc);
			ret = xa_err(old);
			old = NULL;
			goto out;
		}
		bind = NULL;
	} else {
		old = xa_erase(&hl_binds, ipc->ns.inum);
	}
out:
	mutex_unlock(&hl_nss_lock);
	kfree(bind);
	if (old) {
		/* Killed meanwhile: the binding changed all the same. */
		hl_cluster_wait_left(old->name);
		hl_ipc_put(old->ipc);
		kfree(old);
	}
	return ret;
}

/**
 * hl_ns_bound() - The DLM lockspace an IPC namespace other than the initial
 *	one is bound to.
 * @ipc: The namespace.
 * @name: Set to the lockspace's name, empty when none.
 */
void hl_ns_bound(struct ipc_namespace *ipc,
		 char name[HLOCK_CLUSTER_NAME_MAX + 1])
{
	struct hl_bind *bind;

	mutex_lock(&hl_nss_lock);
	bind = xa_load(&hl_binds, ipc->ns.inum);
	strscpy(name, bind ? bind->name : "", HLOCK_CLUSTER_NAME_MAX + 1);
	mutex_unlock(&hl_nss_lock);
}

/**
 * hl_ns_next() - Walk the live lock spaces, for debugfs.
 * @index: Where to look from; moved past the space returned.
 *
 * Context: process context, may sleep.
 * Return: the next space, with a reference (hl_ns_put() it), or NULL.
 */
struct hl_ns *hl_ns_next(unsigned long *index)
{
	struct hl_ns *ns;

	mutex_lock(&hl_nss_lock);
	ns = xa_find(&hl_nss, index, ULONG_MAX, XA_PRESENT);
	if (ns) {
		refcount_inc(&ns->ref);
		(*index)++;
	}
	mutex_unlock(&hl_nss_lock);
	return ns;
}

/**
 * hl_ns_count() - Live lock spaces, for debugfs.
 *
 * Return: how many.
 */
unsigned long hl_ns_count(void)
{
	return READ_ONCE(hl_nss_nr);
}

/* The host's hooks: a locker's last reference drops its lock space's. */
const struct hl_hooks hl_ns_hooks = {
	.ns_put = hl_ns_put,
};
