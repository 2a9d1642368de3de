// SPDX-License-Identifier: GPL-2.0
/*
 * core_bench: the grant logic's own cost on the uncontended path, as a
 * figure that does not depend on the machine: `make -C kmod/test bench`
 * runs it under callgrind, which counts instructions, once with no pair
 * and once with many, and prints the instructions per lock+unlock pair.
 *
 * The hooks do as little as they can (no locks, a lookup that indexes an
 * array), so the count is hlock_core.c's: a regression figure for the
 * core, not a prediction of the kernel's time.
 *
 *   core_bench PAIRS DEPTH   lock+unlock X PAIRS times on a path of DEPTH
 *                            levels below the root (0 to HLOCK_MAX_DEPTH)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlock_core.h"

struct bhead {
	struct hl_head h;
	struct hl_part part;
};

/* heads[l]: level l of the path. */
static struct bhead heads[HL_MAX_LEVELS];
static u64 clock_ns;

/* The hooks: no locks, no statistics; -Wno-unused-parameter. */
unsigned int hl_grant_policy(void)
{
	return HLOCK_POLICY_BATCH;
}

u64 hl_clock(void)
{
	return ++clock_ns;
}

u64 hl_clock_coarse(void)
{
	return hl_clock();
}

void hl_req_free(struct hl_req *req)
{
	free(req);
}

int hl_waitq_refill(struct hl_locker *lk)
{
	if (!lk->spare_wq)
		hl_locker_add_waitq(lk, malloc(sizeof(struct hl_waitq)));
	return 0;
}

void hl_waitq_free(struct hl_waitq *wq)
{
	free(wq);
}

u64 hl_token_next(struct hl_locker *lk)
{
	static u64 last;

	return ++last;
}

void hl_head_lock(struct hl_head *h)
{
}

void hl_head_unlock(struct hl_head *h)
{
}

bool hl_head_has_children(const struct hl_head *h)
{
	return false;
}

void hl_part_lock(struct hl_head *h, struct hl_part *p)
{
}

void hl_part_unlock(struct hl_head *h, struct hl_part *p)
{
}

void hl_rcu_lock(void)
{
}

void hl_rcu_unlock(void)
{
}

void hl_grant_notify(struct hl_locker *lk, struct hl_grants *g)
{
}

void hl_op_done(struct hl_locker *lk)
{
}

void hl_note_acquired(struct hl_locker *lk, unsigned int from,
		      unsigned int to, bool waits)
{
}

void hl_note_wait(struct hl_locker *lk, unsigned int level, unsigned int mode,
		  const struct hl_req *req)
{
}

void hl_wait_claim(struct hl_locker *lk, struct hl_head *h, unsigned int mode)
{
}

void hl_note_granted(struct hl_locker *lk, unsigned int level,
		     unsigned int mode)
{
}

void hl_note_withdrawn(struct hl_locker *lk, unsigned int level,
		       unsigned int mode)
{
}

void hl_note_convert(struct hl_req *req, unsigned int target)
{
}

void hl_note_release(struct hl_req *req)
{
}

/* Nothing waits, nothing sets a value block: neither hook does work. */
void hl_note_blocking(struct hl_req *holder)
{
}

void hl_lvb_publish(struct hl_req *req)
{
}

void hl_note_fast_shut(const struct hl_head *h)
{
}

void hl_node_update(struct hl_head *h)
{
}

bool hl_node_caching(void)
{
	return true;
}

u64 hl_node_probe_ns(void)
{
	return 0;
}

bool hl_node_lost(const struct hl_head *h)
{
	return false;
}

void hl_note_lost(struct hl_req *holder)
{
}

/* Nothing waits in this benchmark: the deadlock search never runs. */
void hl_note_deadlock(struct hl_locker *lk, unsigned int level,
		      unsigned int mode)
{
}

bool hl_deadlock_detect(void)
{
	return false;
}

void hl_graph_lock(struct hl_graph *gr)
{
}

void hl_graph_unlock(struct hl_graph *gr)
{
}

void hl_locker_get(struct hl_locker *lk)
{
}

void hl_locker_put(struct hl_locker *lk)
{
}

void *hl_dl_alloc(size_t n, size_t size)
{
	return NULL;
}

void hl_dl_free(void *p)
{
}

void hl_resched(void)
{
}

struct hl_part *hl_part_lock_local(struct hl_head *h)
{
	return &container_of(h, struct bhead, h)->part;
}

struct hl_part *hl_part_next(struct hl_head *h, struct hl_part *p)
{
	return p ? NULL : &container_of(h, struct bhead, h)->part;
}

/* Levels of op.heads[] left by the last pair: the kernel's steady state. */
static unsigned int known;

unsigned int hl_heads_known(struct hl_locker *lk)
{
	return known;
}

struct hl_head *hl_head_lookup(struct hl_locker *lk, unsigned int level)
{
	return &heads[level].h;
}

int hl_head_create(struct hl_locker *lk, unsigned int level)
{
	return -ENOMEM;
}

int main(int argc, char **argv)
{
	long pairs = argc > 2 ? atol(argv[1]) : -1, i;
	unsigned int depth = argc > 2 ? atoi(argv[2]) : 0, l;
	struct hl_locker lk;
	struct hl_grants g;

	if (pairs < 0 || depth > HLOCK_MAX_DEPTH) {
		fprintf(stderr, "usage: core_bench PAIRS DEPTH\n");
		return 2;
	}
	hl_locker_init(&lk, NULL);
	hl_grants_init(&g);
	for (l = 0; l <= depth; l++) {
		hl_head_init(&heads[l].h, l ? &heads[l - 1].h : NULL);
		hl_part_init(&heads[l].part);
		/* Ancestors have partitions, as in the kernel. */
		if (l < depth)
			hl_head_set_parts(&heads[l].h);
	}
	for (i = 0; i < HL_MAX_LEVELS; i++)
		hl_locker_add_spare(&lk, calloc(1, sizeof(struct hl_req)));
	for (i = 0; i < pairs; i++) {
		if (hl_op_claim(&lk, depth + 1, HLOCK_X, 0) ||
		    hl_op_start(&lk, &g))
			return 1;
		hl_op_finish(&lk, &g);
		if (hl_unlock(&lk, &heads[depth].h, &g))
			return 1;
		known = depth + 1;
	}
	hl_locker_drop_spares(&lk);
	return 0;
}
