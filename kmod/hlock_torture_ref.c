// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_torture: the reference lock types, one lock per leaf.
 *
 * The same threads run the same operations on them as on hlock, with the
 * intents left out: IS and S take the read side of an rwsem or a
 * percpu-rwsem, IX, SIX and X its write side, and a mutex serves every
 * mode.  A try is a trylock where the lock has one; a timed wait, a
 * queued request and a conversion have no counterpart, so the first two
 * block and conversions are not made.  Only an rwsem downgrades (from its
 * write side to its read side).  The shadow counts check them too: a read
 * side counts as S, a write side as X.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/percpu-rwsem.h>
#include <linux/rwsem.h>
#include <linux/slab.h>

#include "hlock_torture.h"

/* The side of a reference lock a mode takes, as a mode. */
static unsigned int hlt_rw_held_as(unsigned int mode)
{
	return mode == HLOCK_IS || mode == HLOCK_S ? HLOCK_S : HLOCK_X;
}

static unsigned int hlt_mutex_held_as(unsigned int mode)
{
	return HLOCK_X;
}

/* Whether the first acquisition of @op only tries. */
static bool hlt_try(const struct hlt_op *op)
{
	return op->kind == HLT_TIMED && !op->timeout_ns;
}

/* rwsem */

static int hlt_rwsem_setup(struct hlt_run *run)
{
	struct rw_semaphore *sems;
	unsigned int i;

	sems = kvcalloc(run->nres, sizeof(*sems), GFP_KERNEL);
	if (!sems)
		return -ENOMEM;
	for (i = 0; i < run->nres; i++)
		init_rwsem(&sems[i]);
	run->locks = sems;
	return 0;
}

static void hlt_locks_free(struct hlt_run *run)
{
	kvfree(run->locks);
	run->locks = NULL;
}

static struct rw_semaphore *hlt_rwsem(struct hlt_thread *t,
				      const struct hlt_op *op)
{
	struct rw_semaphore *sems = t->run->locks;

	return &sems[op->leaf->idx];
}

static int hlt_rwsem_lock(struct hlt_thread *t, struct hlt_op *op)
{
	struct rw_semaphore *sem = hlt_rwsem(t, op);
	bool read = hlt_rw_held_as(op->mode) == HLOCK_S;

	if (hlt_try(op)) {
		if (read ? down_read_trylock(sem) : down_write_trylock(sem))
			return 0;
		return -EAGAIN;
	}
	if (read)
		down_read(sem);
	else
		down_write(sem);
	return 0;
}

static int hlt_rwsem_downgrade(struct hlt_thread *t, struct hlt_op *op,
			       unsigned int mode)
{
	if (op->held != HLOCK_X || mode != HLOCK_S)
		return -EOPNOTSUPP;
	downgrade_write(hlt_rwsem(t, op));
	return 0;
}

static void hlt_rwsem_unlock(struct hlt_thread *t, struct hlt_op *op,
			     bool last)
{
	if (op->held == HLOCK_S)
		up_read(hlt_rwsem(t, op));
	else
		up_write(hlt_rwsem(t, op));
}

const struct hlt_type hlt_rwsem_type = {
	.name = "rwsem",
	.held_as = hlt_rw_held_as,
	.setup = hlt_rwsem_setup,
	.teardown = hlt_locks_free,
	.lock = hlt_rwsem_lock,
	.downgrade = hlt_rwsem_downgrade,
	.unlock = hlt_rwsem_unlock,
};

/* percpu-rwsem */

static void hlt_percpu_free(struct hlt_run *run, unsigned int n)
{
	struct percpu_rw_semaphore *sems = run->locks;

	while (n--)
		percpu_free_rwsem(&sems[n]);
	hlt_locks_free(run);
}

static int hlt_percpu_setup(struct hlt_run *run)
{
	struct percpu_rw_semaphore *sems;
	unsigned int i;
	int ret;

	sems = kvcalloc(run->nres, sizeof(*sems), GFP_KERNEL);
	if (!sems)
		return -ENOMEM;
	run->locks = sems;
	for (i = 0; i < run->nres; i++) {
		ret = percpu_init_rwsem(&sems[i]);
		if (ret) {
			hlt_percpu_free(run, i);
			return ret;
		}
	}
	return 0;
}

static void hlt_percpu_teardown(struct hlt_run *run)
{
	hlt_percpu_free(run, run->nres);
}

static struct percpu_rw_semaphore *hlt_percpu(struct hlt_thread *t,
					      const struct hlt_op *op)
{
	struct percpu_rw_semaphore *sems = t->run->locks;

	return &sems[op->leaf->idx];
}

static int hlt_percpu_lock(struct hlt_thread *t, struct hlt_op *op)
{
	struct percpu_rw_semaphore *sem = hlt_percpu(t, op);

	/* Only the read side can be tried. */
	if (hlt_rw_held_as(op->mode) == HLOCK_S) {
		if (!hlt_try(op))
			percpu_down_read(sem);
		else if (!percpu_down_read_trylock(sem))
			return -EAGAIN;
	} else {
		percpu_down_write(sem);
	}
	return 0;
}

static void hlt_percpu_unlock(struct hlt_thread *t, struct hlt_op *op,
			      bool last)
{
	if (op->held == HLOCK_S)
		percpu_up_read(hlt_percpu(t, op));
	else
		percpu_up_write(hlt_percpu(t, op));
}

const struct hlt_type hlt_percpu_rwsem_type = {
	.name = "percpu_rwsem",
	.held_as = hlt_rw_held_as,
	.setup = hlt_percpu_setup,
	.teardown = hlt_percpu_teardown,
	.lock = hlt_percpu_lock,
	.unlock = hlt_percpu_unlock,
};

/* mutex */

static int hlt_mutex_setup(struct hlt_run *run)
{
	struct mutex *locks = kvcalloc(run->nres, sizeof(*locks), GFP_KERNEL);
	unsigned int i;

	if (!locks)
		return -ENOMEM;
	for (i = 0; i < run->nres; i++)
		mutex_init(&locks[i]);
	run->locks = locks;
	return 0;
}

static void hlt_mutex_teardown(struct hlt_run *run)
{
	struct mutex *locks = run->locks;
	unsigned int i;

	for (i = 0; i < run->nres; i++)
		mutex_destroy(&locks[i]);
	hlt_locks_free(run);
}

static struct mutex *hlt_mutex(struct hlt_thread *t, const struct hlt_op *op)
{
	struct mutex *locks = t->run->locks;

	return &locks[op->leaf->idx];
}

static int hlt_mutex_lock(struct hlt_thread *t, struct hlt_op *op)
{
	struct mutex *lock = hlt_mutex(t, op);

	if (!hlt_try(op))
		mutex_lock(lock);
	else if (!mutex_trylock(lock))
		return -EAGAIN;
	return 0;
}

static void hlt_mutex_unlock(struct hlt_thread *t, struct hlt_op *op,
			     bool last)
{
	mutex_unlock(hlt_mutex(t, op));
}

const struct hlt_type hlt_mutex_type = {
	.name = "mutex",
	.held_as = hlt_mutex_held_as,
	.setup = hlt_mutex_setup,
	.teardown = hlt_mutex_teardown,
	.lock = hlt_mutex_lock,
	.unlock = hlt_mutex_unlock,
};
