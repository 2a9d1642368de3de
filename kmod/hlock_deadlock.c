// SPDX-License-Identifier: GPL-2.0
/*
 * hlock core: deadlock detection.
 *
 * A request that must wait is refused with -EDEADLK when its wait would
 * close a cycle in the wait-for graph: lockers are its nodes, and a waiting
 * request of locker A has an edge to locker B when
 * - B holds a mode on the resource that conflicts with what A asks for
 *   (for a conversion, with its target);
 * - B converts there to a mode that conflicts with A's new request
 *   (pending conversions are granted before any queued request);
 * - B waits in the queue ahead of A's new request with a conflicting mode,
 *   when everything behind a waiter waits for it (hl_waits_all_ahead());
 * - B's request is the first of the queue: no grant pass grants anything
 *   queued before it.
 *
 * The search runs when a request starts to wait, from its locker: a
 * breadth-first walk from its blockers over the blockers of each waiting
 * locker it meets, looking for the locker itself.  Lockers that do not
 * wait end no path, as they can still let go.  It runs again, from the
 * locker's continuation, for a request that waited already when other
 * waiters gain edges to it: when it becomes the first of its queue, and
 * for each waiter of a queue whose waiters come to wait for all those
 * ahead (hlock_core.c's queue_changed()).  Any other new edge points at a
 * request that starts to wait then, or at a holder, which closes a cycle
 * only once it waits itself: every cycle is searched for from one of its
 * lockers once its last edge is there.  The searches of a lock space are
 * serialized (hl_graph_lock()), so of two requests that close a cycle
 * together, the later search sees both, and a search that refuses its
 * request withdraws it before the next one starts: only one request of a
 * cycle is refused.
 *
 * The walk takes no two locks at once: it looks at one resource at a time
 * under its head lock, at most HL_DL_BATCH requests per hold, then drops
 * the lock and lets others run.  What it found may move meanwhile, so a
 * cycle found is checked once more before anyone is refused: every locker
 * on it must still be in the wait it was found in (wait_seq), and must not
 * have lowered or released anything (hold_seq), each looked at under the
 * lock of the resource where the change would be made.  All of the walk's
 * looks come before all of the check's: at the moment between the two,
 * every edge of the cycle existed.  A cycle that fails the check is looked
 * for again, HL_DL_TRIES times at most.
 *
 * Context: the caller's locker lock, no other hlock lock; may sleep.
 */
#include "hlock_core.h"

/*
 * Sparse follows locks within one function; the walk keeps some across
 * calls: the head lock and RCU from dl_lock_wait() until dl_unlock() (or
 * dl_confirm()'s own unlock), and a partition's lock while s->part is
 * set.  These mark where such a lock is handed to the walk's state and
 * taken back from it.
 */
#define dl_keep(x)	__release(x)
#define dl_took(x)	__acquire(x)

/* dl_resume(): the lists moved too much under the walk. */
#define ERR_PTR_DL		((struct hl_req *)-1L)

/* Requests looked at under one hold of a head lock. */
#define HL_DL_BATCH		128
/* Searches for one wait when what a search found kept moving. */
#define HL_DL_TRIES		4
/* Lists of a resource a walk looks at, in this order. */
enum hl_dl_list {
	HL_DL_GRANTED,		/* granted[sub]: holders on the head */
	HL_DL_PARTS,		/* granted[sub] of each partition: IS, IX */
	HL_DL_CONV,		/* convq[sub]: pending conversions */
	HL_DL_QUEUE,		/* queue[sub]: waiters */
	HL_DL_FIRST,		/* the first waiter of the queue */
	HL_DL_DONE,
};

/**
 * struct hl_dl - One search.
 * @me: The searcher, whose request just started to wait.
 * @epoch: The search's number, as lockers met are marked with it.
 * @nodes: Lockers met, @me first, in the order the walk visits them.
 * @nr: Entries in @nodes.
 * @room: Room in @nodes.
 * @closer: Index of the node whose wait @me blocks (a cycle), or 0.
 * @my_hold: @me's hold_seq then.
 * @list: Where the walk of the current node is: enum hl_dl_list.
 * @sub: Which list of that kind: the mode, or the conversion queue.
 * @part: The partition being looked at (HL_DL_PARTS), locked.
 * @anchor: The last request looked at, from whose successor a walk
 *	interrupted goes on, or NULL.
 * @anchor_lk: Its locker, kept while @anchor is set.
 * @anchor_seq: @anchor_lk's hold_seq (a holder) or wait_seq (a waiter)
 *	then: unchanged, the request is where it was.
 * @restarts: Lists the current visit had to look at again from the start.
 */
struct hl_dl {
	struct hl_locker *me;
	unsigned long epoch;
	struct hl_dl_node *nodes;
	unsigned int nr;
	unsigned int room;
	unsigned int closer;
	unsigned int my_hold;
	unsigned int list;
	unsigned int sub;
	struct hl_part *part;
	struct hl_req *anchor;
	struct hl_locker *anchor_lk;
	unsigned int anchor_seq;
	unsigned int restarts;
};

/**
 * hl_graph_init() - Initialise the wait-for graph state of a lock space.
 * @gr: The graph.
 */
void hl_graph_init(struct hl_graph *gr)
{
	gr->epoch = 0;
	atomic_set(&gr->waiting, 0);
}

/* The mode @req waits for. */
static unsigned int dl_wanted(const struct hl_req *req)
{
	return req->state == HL_CONVERTING ? req->convert : req->mode;
}

/*
 * The request after @o on the current list of @h (the first one when @o is
 * NULL), or NULL at its end.  Context: head lock, and s->part's lock for a
 * partition.
 */
static struct hl_req *dl_step(struct hl_dl *s, struct hl_head *h,
			      struct hl_req *o)
{
	struct hlist_node *hn;
	struct list_head *l, *n;

	hl_assert_head_locked(h);
	switch (s->list) {
	case HL_DL_GRANTED:
	case HL_DL_PARTS:
		if (o)
			hn = o->gnode.next;
		else if (s->list == HL_DL_GRANTED)
			hn = h->granted[s->sub].first;
		else
			hn = s->part->granted[s->sub - HLOCK_IS].first;
		return hn ? hlist_entry(hn, struct hl_req, gnode) : NULL;
	case HL_DL_CONV:
		l = &h->wq->convq[s->sub];
		n = o ? o->conv_node.next : l->next;
		return n == l ? NULL : list_entry(n, struct hl_req, conv_node);
	case HL_DL_QUEUE:
		l = &h->wq->queue[s->sub];
		n = o ? o->node.next : l->next;
		return n == l ? NULL : list_entry(n, struct hl_req, node);
	default:
		return o ? NULL : hl_queue_first(h, 0);
	}
}

/* The next list, in the order of enum hl_dl_list. */
static void dl_advance(struct hl_dl *s)
{
	switch (s->list) {
	case HL_DL_GRANTED:
		if (++s->sub > HLOCK_X) {
			s->list = HL_DL_PARTS;
			s->sub = HLOCK_IS;
		}
		break;
	case HL_DL_PARTS:
		if (++s->sub > HLOCK_IX) {
			s->list = HL_DL_CONV;
			s->sub = 0;
		}
		break;
	case HL_DL_CONV:
		if (++s->sub >= HL_NR_CONV) {
			s->list = HL_DL_QUEUE;
			s->sub = HLOCK_IS;
		}
		break;
	case HL_DL_QUEUE:
		if (++s->sub > HLOCK_X)
			s->list = HL_DL_FIRST;
		break;
	default:
		s->list = HL_DL_DONE;
		break;
	}
}

/*
 * Move the walk to the next list of @h worth a look for @req, which waits
 * for mode @m: holders of conflicting modes; for a new request also the
 * pending conversions, the waiters ahead (hl_waits_all_ahead()) and the
 * first waiter (@h has queues: @req waits in them).  Return: false when
 * there is none left.  Context: head lock; takes and drops partition locks
 * (s->part is locked while set).
 */
static bool dl_next_list(struct hl_dl *s, struct hl_head *h,
			 const struct hl_req *req, unsigned int m)
{
	bool is_new = req->state == HL_WAITING;

	hl_assert_head_locked(h);
	if (s->part) {
		dl_took(s->part);
		hl_part_unlock(h, s->part);
		s->part = hl_part_next(h, s->part);
		if (s->part) {
			hl_part_lock(h, s->part);
			dl_keep(s->part);
			return true;
		}
	}
	for (;;) {
		dl_advance(s);
		switch (s->list) {
		case HL_DL_GRANTED:
			if (hl_conflicts(m, hl_mode_bit(s->sub)))
				return true;
			break;
		case HL_DL_PARTS:
			if (h->has_parts &&
			    hl_conflicts(m, hl_mode_bit(s->sub))) {
				s->part = hl_part_next(h, NULL);
				hl_part_lock(h, s->part);
				dl_keep(s->part);
				return true;
			}
			break;
		case HL_DL_CONV:
			if (is_new && !list_empty(&h->wq->convq[s->sub]))
				return true;
			break;
		case HL_DL_QUEUE:
			if (is_new && hl_waits_all_ahead(h) &&
			    hl_conflicts(m, hl_mode_bit(s->sub)))
				return true;
			break;
		case HL_DL_FIRST:
			if (is_new)
				return true;
			break;
		default:
			return false;
		}
	}
}

/*
 * Whether @o, met on the current list, blocks @req, which waits for mode
 * @m.  The lists of holders and waiters were chosen by mode already.
 */
static bool dl_blocks(const struct hl_dl *s, const struct hl_req *req,
		      unsigned int m, const struct hl_req *o)
{
	if (o == req)
		return false;
	if (s->list == HL_DL_CONV)
		return hl_conflicts(m, hl_mode_bit(o->convert));
	return true;
}

/* Whether requests on the current list are waiting ones. */
static bool dl_list_waits(const struct hl_dl *s)
{
	return s->list >= HL_DL_CONV;
}

/*
 * Keep @o as the place to go on from.  Context: head lock; @o is on the
 * current list, so its locker is alive.
 */
static void dl_anchor(struct hl_dl *s, struct hl_req *o)
{
	s->anchor = o;
	s->anchor_lk = o->locker;
	hl_locker_get(s->anchor_lk);
	s->anchor_seq = dl_list_waits(s) ? READ_ONCE(o->locker->wait_seq) :
			READ_ONCE(o->locker->hold_seq);
}

/*
 * Whether the anchor is still where it was on the current list (then its
 * successor is where to go on).  Its locker, kept alive, must be in the
 * same wait (a waiter) or have lowered or released nothing (a holder):
 * only then is the request known not to be freed, and may be looked at.
 * Its mode and partition then tell a conversion granted meanwhile.
 * Context: head lock, and the partition's lock for a partition.
 */
static bool dl_anchor_holds(const struct hl_dl *s, struct hl_head *h)
{
	const struct hl_req *o = s->anchor;

	hl_assert_head_locked(h);
	if (dl_list_waits(s))
		return READ_ONCE(s->anchor_lk->wait_seq) == s->anchor_seq;
	return READ_ONCE(s->anchor_lk->hold_seq) == s->anchor_seq &&
	       o->head == h && o->mode == s->sub &&
	       o->part == (s->list == HL_DL_PARTS ? s->part : NULL);
}

/* Free the nodes of a search that outgrew its graph's.  Context: any. */
static void dl_nodes_free(struct hl_dl *s)
{
	if (s->nodes != s->me->graph->nodes)
		hl_dl_free(s->nodes);
}

/* Make room for one more node.  Return: false when out of memory. */
static bool dl_room(struct hl_dl *s)
{
	struct hl_dl_node *n;
	unsigned int i;

	if (s->nr < s->room)
		return true;
	n = hl_dl_alloc(s->room * 2, sizeof(*n));
	if (!n)
		return false;
	for (i = 0; i < s->nr; i++)
		n[i] = s->nodes[i];
	dl_nodes_free(s);
	s->nodes = n;
	s->room *= 2;
	return true;
}

/*
 * Look at @o, a request that blocks the wait of node @from: a cycle when
 * it is the searcher's, one more node when its locker waits and was not
 * met yet.  Return: true when a cycle was found.  Context: head lock (and
 * partition lock); room for a node.
 */
static bool dl_meet(struct hl_dl *s, unsigned int from, struct hl_req *o)
{
	struct hl_locker *lk = o->locker;
	unsigned int ws = READ_ONCE(lk->wait_seq);
	struct hl_dl_node *n;

	if (lk == s->me) {
		s->closer = from;
		s->my_hold = READ_ONCE(lk->hold_seq);
		return true;
	}
	/* A locker that does not wait can let go: no cycle through it. */
	if (!(ws & 1) || lk->dl_mark == s->epoch)
		return false;
	lk->dl_mark = s->epoch;
	hl_locker_get(lk);
	n = &s->nodes[s->nr++];
	n->lk = lk;
	n->head = NULL;
	n->from = from;
	n->wait_seq = ws;
	n->hold_seq = READ_ONCE(lk->hold_seq);
	n->ahead = dl_list_waits(s);
	return false;
}

/* Drop the locks a walk holds: the partition's, the head's, RCU. */
static void dl_unlock(struct hl_dl *s, struct hl_head *h)
{
	if (s->part) {
		dl_took(s->part);
		hl_part_unlock(h, s->part);
	}
	dl_took(h);
	hl_head_unlock(h);
	dl_took(RCU);
	hl_rcu_unlock();
}

/*
 * Lock the resource where node @i's locker waits, if it is still in the
 * wait it was met in.  Return: the resource, head lock and RCU held, or
 * NULL (nothing held).
 */
static struct hl_head *dl_lock_wait(struct hl_dl *s, unsigned int i)
{
	struct hl_dl_node *n = &s->nodes[i];
	struct hl_head *h;

	hl_rcu_lock();
	h = READ_ONCE(n->lk->wait_head);
	if (h && (!n->head || h == n->head)) {
		hl_head_lock(h);
		/* Under the lock its wait begins and ends under. */
		if (READ_ONCE(n->lk->wait_head) == h &&
		    READ_ONCE(n->lk->wait_seq) == n->wait_seq) {
			n->head = h;
			dl_keep(h);
			dl_keep(RCU);
			return h;
		}
		hl_head_unlock(h);
	}
	hl_rcu_unlock();
	return NULL;
}

/*
 * Where the walk of @h goes on: after the anchor if it is still there,
 * else the current list again from its start.  Context: head lock.
 */
static struct hl_req *dl_resume(struct hl_dl *s, struct hl_head *h)
{
	struct hl_req *o = NULL;

	hl_assert_head_locked(h);
	if (s->part) {
		hl_part_lock(h, s->part);
		dl_keep(s->part);
	}
	if (dl_anchor_holds(s, h))
		o = dl_step(s, h, s->anchor);
	else if (++s->restarts > HL_DL_TRIES)
		o = ERR_PTR_DL;
	else
		o = dl_step(s, h, NULL);
	s->anchor = NULL;
	return o;
}

/*
 * Visit node @i: meet every request that blocks its wait, HL_DL_BATCH at
 * a time.  Return: 1 when a cycle was found, 0 when done, -ENOMEM, or
 * -EAGAIN when the lists moved too much under the walk.
 */
static int dl_visit(struct hl_dl *s, unsigned int i)
{
	struct hl_locker *put;
	struct hl_req *req, *o;
	struct hl_head *h;
	unsigned int m, n;
	int ret = -EINPROGRESS;

	s->list = HL_DL_GRANTED;
	s->sub = HLOCK_NL;
	s->part = NULL;
	s->anchor = NULL;
	s->restarts = 0;
	while (ret == -EINPROGRESS) {
		/* Out of memory, the anchor is let go below like any. */
		if (!dl_room(s)) {
			ret = -ENOMEM;
			break;
		}
		h = dl_lock_wait(s, i);
		/* Its wait ended: it can go on, no cycle through it. */
		if (!h)
			break;
		req = READ_ONCE(s->nodes[i].lk->wait_req);
		m = dl_wanted(req);
		put = s->anchor ? s->anchor_lk : NULL;
		if (put)
			o = dl_resume(s, h);
		else
			o = dl_next_list(s, h, req, m) ? dl_step(s, h, NULL) :
			    NULL;
		for (n = 0; ret == -EINPROGRESS; n++) {
			if (o == ERR_PTR_DL) {
				ret = -EAGAIN;
			} else if (!o) {
				if (dl_next_list(s, h, req, m))
					o = dl_step(s, h, NULL);
				else
					ret = 0;
			} else if (s->list == HL_DL_QUEUE &&
				   o->seq >= req->seq) {
				/* The rest of this queue is behind @req. */
				o = NULL;
			} else if (dl_blocks(s, req, m, o) &&
				   dl_meet(s, i, o)) {
				ret = 1;
			} else if (n < HL_DL_BATCH && s->nr < s->room) {
				o = dl_step(s, h, o);
			} else {
				/* Out of time or of room: go on later. */
				dl_anchor(s, o);
				break;
			}
		}
		dl_unlock(s, h);
		if (put)
			hl_locker_put(put);
		hl_resched();
	}
	if (s->anchor)
		hl_locker_put(s->anchor_lk);
	return ret == -EINPROGRESS ? 0 : ret;
}

/*
 * Check the cycle found, from the searcher through node s->closer: every
 * locker on it still in the wait it was met in, and every edge still
 * there, each looked at under the head lock of the wait it blocks.
 */
static bool dl_confirm(struct hl_dl *s)
{
	unsigned int i = s->closer, to_hold = s->my_hold;
	const struct hl_dl_node *to = NULL;
	struct hl_head *h;
	bool ok;

	for (;;) {
		h = dl_lock_wait(s, i);
		if (!h)
			return false;
		/* The edge from node i's wait to the next node on the cycle. */
		if (to) {
			ok = READ_ONCE(to->lk->hold_seq) == to->hold_seq &&
			     (!to->ahead ||
			      READ_ONCE(to->lk->wait_seq) == to->wait_seq);
		} else {
			ok = READ_ONCE(s->me->hold_seq) == to_hold;
		}
		dl_took(h);
		hl_head_unlock(h);
		dl_took(RCU);
		hl_rcu_unlock();
		if (!ok)
			return false;
		if (!i)
			return true;
		to = &s->nodes[i];
		i = to->from;
	}
}

/* One search.  Return: 1 for a cycle confirmed, 0 for none, -errno. */
static int dl_search(struct hl_dl *s)
{
	unsigned int i;
	int ret = 0;

	s->epoch = ++s->me->graph->epoch;
	s->me->dl_mark = s->epoch;
	s->nodes[0].lk = s->me;
	s->nodes[0].head = NULL;
	s->nodes[0].from = 0;
	s->nodes[0].wait_seq = READ_ONCE(s->me->wait_seq);
	s->nodes[0].hold_seq = s->me->hold_seq;
	s->nodes[0].ahead = false;
	s->nr = 1;
	s->closer = 0;
	for (i = 0; i < s->nr && !ret; i++)
		ret = dl_visit(s, i);
	if (ret > 0 && !dl_confirm(s))
		ret = -EAGAIN;
	for (i = 1; i < s->nr; i++)
		hl_locker_put(s->nodes[i].lk);
	return ret;
}

/**
 * hl_deadlock_check() - Refuse the waiting level if its wait closes a
 *	cycle of waits.
 * @lk: The locker, whose operation's level op.level waits: it was just
 *	queued, or another waiter gained an edge to it (hlock_core.c's
 *	dl_recheck()).
 * @g: Lockers that withdrawing it granted.
 *
 * Context: @lk's locker lock, no other hlock lock held; may sleep.
 * Return: -EDEADLK when the level was withdrawn because of a deadlock,
 * else 0: the level waits, or was granted meanwhile.  A cycle found is
 * noted (hl_note_deadlock()) before the withdrawal, which a grant that
 * came at that very moment wins.  Out of memory, the level waits
 * unchecked.
 */
int hl_deadlock_check(struct hl_locker *lk, struct hl_grants *g)
{
	struct hl_dl s = { .me = lk, .room = HL_DL_ROOM };
	unsigned int tries = HL_DL_TRIES;
	struct hl_op *op = &lk->op;
	int ret;

	hl_assert_locker_locked(lk);
	if (!lk->graph || !hl_deadlock_detect())
		return 0;
	/*
	 * Every locker on a cycle waits, and a locker has one request at a
	 * time: a cycle needs two lockers that wait.  If this one is alone,
	 * the locker whose wait closes a cycle later finds it.  (The search
	 * follows the lockers of this node only: a cluster head's remote
	 * waiters are no nodes of it, and so not counted.)  The barrier
	 * orders this look after this locker's wait_begin(): of two that
	 * begin to wait at once, at least one sees the other, and searches.
	 */
	smp_mb();
	if (atomic_read(&lk->graph->waiting) < 2)
		return 0;
	hl_graph_lock(lk->graph);
	/* The graph's own nodes, while one search runs: the lock's. */
	s.nodes = lk->graph->nodes;
	do {
		ret = dl_search(&s);
	} while (ret == -EAGAIN && --tries);
	/*
	 * Withdrawn before the next search of the space starts, which then
	 * sees the cycle broken.  A grant that came first wins.
	 */
	if (ret > 0) {
		hl_note_deadlock(lk, op->level, op->level + 1 == op->nr ?
				 op->mode : op->intent);
		ret = hl_op_withdraw(lk, g) ? -EDEADLK : 0;
	} else {
		ret = 0;
	}
	hl_graph_unlock(lk->graph);
	dl_nodes_free(&s);
	return ret;
}
