// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: ticket pools, MongoDB's read and write TicketHolders.
 *
 * A locker that holds nothing takes a ticket as part of its first lock
 * call, from the read pool when it asks for IS or S on the root, else
 * from the write pool, and returns it once it holds nothing and has
 * nothing in flight.  The pools are module-wide (every lock space shares
 * them) and sized by the module parameters read_tickets and write_tickets;
 * 0, the default, is unlimited, and a pool that is unlimited is never
 * touched: its lockers take no ticket at all, and are not counted.
 *
 * Waiting for a ticket is FIFO per pool and is part of the lock call: the
 * call's operation stays claimed in the locker's slot, not yet started,
 * while the locker is on its pool's list.  Whoever returns a ticket (or
 * grows the pool) hands it to the first waiter under the pool lock and
 * queues the waiter's continuation (hl_grant_notify()), which starts the
 * operation once the giver dropped its locks, as a grant's continuation
 * moves an operation on.  Lowering a pool below what is out revokes
 * nothing: tickets are not handed again until out is below the new size.
 *
 * Locking: a pool's lock (a spinlock) protects its counts and its list,
 * and every locker's hl_ticket.state and .node; it nests inside the locker
 * lock, or is taken alone by whoever hands tickets and the statistics.  Work under
 * it is constant: one ticket handed per return, and a pool that grows
 * hands its tickets one at a time with the lock dropped in between.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/moduleparam.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/string.h>

#include "hlock_internal.h"
#include "hlock_ticket.h"

/* Largest pool a parameter may set (MongoDB's default is 128). */
#define HL_TICKETS_MAX		INT_MAX
/* Waiters of each pool that debugfs names. */
#define HL_TICKET_SHOW		16

/**
 * struct hl_pool - One ticket pool.
 * @lock: Protects the fields below and the hl_ticket.state and .node of
 *	every locker that holds or waits for one of its tickets.
 * @out: Tickets held (handed ones included).
 * @waiting: Lockers on @waiters.
 * @waiters: Lockers waiting for a ticket, first come first.
 */
struct hl_pool {
	spinlock_t lock;	/* see above */
	unsigned int out;
	unsigned int waiting;
	struct list_head waiters;
} ____cacheline_aligned_in_smp;

/*
 * The pools' sizes, the module parameters; 0 is unlimited.  Written under
 * their pool's lock, read without it by every lock call (READ_ONCE()).
 */
unsigned int hl_tickets[HLOCK_NR_TICKET_POOLS] __read_mostly;

static struct hl_pool hl_pools[HLOCK_NR_TICKET_POOLS] = {
	[HLOCK_TICKET_READ] = {
		.lock = __SPIN_LOCK_UNLOCKED(hl_pools[HLOCK_TICKET_READ].lock),
		.waiters = LIST_HEAD_INIT(hl_pools[HLOCK_TICKET_READ].waiters),
	},
	[HLOCK_TICKET_WRITE] = {
		.lock = __SPIN_LOCK_UNLOCKED(hl_pools[HLOCK_TICKET_WRITE].lock),
		.waiters = LIST_HEAD_INIT(hl_pools[HLOCK_TICKET_WRITE].waiters),
	},
};

static const char *const hl_pool_names[HLOCK_NR_TICKET_POOLS] = {
	[HLOCK_TICKET_READ] = "read",
	[HLOCK_TICKET_WRITE] = "write",
};

/* Whether @pool, @total tickets big, has one for a newcomer. */
static bool hl_pool_room(const struct hl_pool *pool, unsigned int total)
{
	return !total || pool->out < total;
}

/*
 * Hand a ticket to the first waiter of @pool, if there is one and room;
 * its continuation goes to @g.  Context: the pool lock held.  Return:
 * whether one was handed.
 */
static bool hl_pool_hand(struct hl_pool *pool, unsigned int id,
			 struct hl_grants *g)
{
	struct hl_file *w;

	lockdep_assert_held(&pool->lock);
	if (list_empty(&pool->waiters) ||
	    !hl_pool_room(pool, hl_tickets[id]))
		return false;
	w = list_first_entry(&pool->waiters, struct hl_file, tk.node);
	list_del_init(&w->tk.node);
	pool->waiting--;
	pool->out++;
	w->tk.state = HL_TICKET_HELD;
	hl_grant_notify(&w->lk, g);
	return true;
}

/*
 * Hand tickets to @pool's waiters while it has room, one at a time: the
 * lock is dropped, and the continuations run, after each.  Context:
 * process context, no hlock lock held; may sleep.
 */
static void hl_pool_fill(struct hl_pool *pool, unsigned int id)
{
	struct hl_grants g;
	bool more;

	do {
		hl_grants_init(&g);
		spin_lock(&pool->lock);
		more = hl_pool_hand(pool, id, &g);
		spin_unlock(&pool->lock);
		hl_grants_continue(&g);
		cond_resched();
	} while (more);
}

static int hl_tickets_set(const char *val, const struct kernel_param *kp)
{
	unsigned int *total = kp->arg;
	unsigned int id = total - hl_tickets;
	struct hl_pool *pool = &hl_pools[id];
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (n > HL_TICKETS_MAX)
		return -EINVAL;
	spin_lock(&pool->lock);
	WRITE_ONCE(*total, n);
	spin_unlock(&pool->lock);
	/* A pool that grew (or became unlimited) lets its waiters in. */
	hl_pool_fill(pool, id);
	return 0;
}

static const struct kernel_param_ops hl_tickets_ops = {
	.set = hl_tickets_set,
	.get = param_get_uint,
};
module_param_cb(read_tickets, &hl_tickets_ops,
		&hl_tickets[HLOCK_TICKET_READ], 0644);
MODULE_PARM_DESC(read_tickets,
		 "Read tickets: lockers holding IS or S on the root at once (0: unlimited)");
module_param_cb(write_tickets, &hl_tickets_ops,
		&hl_tickets[HLOCK_TICKET_WRITE], 0644);
MODULE_PARM_DESC(write_tickets,
		 "Write tickets: lockers holding IX, SIX or X on the root at once (0: unlimited)");

/**
 * hl_ticket_take() - Take a ticket for a locker's first lock call, or
 *	queue for one.
 * @f: The locker, which holds nothing and no ticket; its operation is
 *	claimed, not started.
 * @mode: The mode its call asks for on its path.
 * @try: The call only tries (timeout 0, not async).
 *
 * The pool is the read pool when the call asks for IS or S on the root,
 * which is when @mode is IS or S (on any path), else the write pool.  An
 * unlimited pool is not touched.  Nobody is let past a waiter.
 *
 * Context: f->lock held; takes the pool lock.
 * Return: 0 when the locker may go on (with a ticket, or the pool is
 * unlimited); -EINPROGRESS when it was queued (hl_ticket.state is
 * HL_TICKET_WAITING until a ticket is handed to it); -EAGAIN when it would
 * have to wait and @try.
 */
int hl_ticket_take(struct hl_file *f, unsigned int mode, bool try)
{
	unsigned int id = hl_intent(mode) == HLOCK_IS ? HLOCK_TICKET_READ :
			  HLOCK_TICKET_WRITE;
	struct hl_pool *pool = &hl_pools[id];
	int ret = 0;

	lockdep_assert_held(&f->lock);
	/* Unlimited: nothing shared is written. */
	if (!READ_ONCE(hl_tickets[id]))
		return 0;
	spin_lock(&pool->lock);
	f->tk.pool = id;
	if (hl_pool_room(pool, hl_tickets[id]) &&
	    list_empty(&pool->waiters)) {
		pool->out++;
		f->tk.state = HL_TICKET_HELD;
	} else if (try) {
		ret = -EAGAIN;
	} else {
		list_add_tail(&f->tk.node, &pool->waiters);
		pool->waiting++;
		f->tk.since = hl_clock();
		f->tk.state = HL_TICKET_WAITING;
		ret = -EINPROGRESS;
	}
	spin_unlock(&pool->lock);
	return ret;
}

/**
 * hl_ticket_ready() - Whether the ticket a locker waits for was handed to
 *	it.
 * @f: The locker, waiting or done waiting.
 *
 * Context: f->lock held; takes the pool lock.
 * Return: true once the locker holds its ticket.
 */
bool hl_ticket_ready(struct hl_file *f)
{
	struct hl_pool *pool = &hl_pools[f->tk.pool];
	bool held;

	lockdep_assert_held(&f->lock);
	spin_lock(&pool->lock);
	held = f->tk.state == HL_TICKET_HELD;
	spin_unlock(&pool->lock);
	return held;
}

/**
 * hl_ticket_withdraw() - Leave the queue of a pool.
 * @f: The locker, which waited for a ticket.
 *
 * A ticket handed to it meanwhile stays its own: the caller returns it
 * with hl_ticket_put() once the locker holds nothing.
 *
 * Context: f->lock held; takes the pool lock.
 */
void hl_ticket_withdraw(struct hl_file *f)
{
	struct hl_pool *pool = &hl_pools[f->tk.pool];

	lockdep_assert_held(&f->lock);
	spin_lock(&pool->lock);
	if (f->tk.state == HL_TICKET_WAITING) {
		list_del_init(&f->tk.node);
		pool->waiting--;
		f->tk.state = HL_TICKET_NONE;
	}
	spin_unlock(&pool->lock);
}

/**
 * hl_ticket_contended() - Whether a locker holds a ticket that others
 *	wait for: its pool has waiters.
 * @f: The locker, with no operation in flight (so it is not on a list).
 *
 * Context: f->lock held.
 * Return: true when a yield of @f would let a ticket waiter in.
 */
bool hl_ticket_contended(struct hl_file *f)
{
	lockdep_assert_held(&f->lock);
	return READ_ONCE(f->tk.state) == HL_TICKET_HELD &&
	       READ_ONCE(hl_pools[f->tk.pool].waiting);
}

/**
 * hl_ticket_put() - Return a locker's ticket, and hand it to the first
 *	waiter of its pool if the pool has room for one.
 * @f: The locker, which holds a ticket.
 * @g: Where the waiter's continuation goes.
 *
 * Context: f->lock held; takes the pool lock.
 */
void hl_ticket_put(struct hl_file *f, struct hl_grants *g)
{
	struct hl_pool *pool = &hl_pools[f->tk.pool];

	lockdep_assert_held(&f->lock);
	spin_lock(&pool->lock);
	pool->out--;
	f->tk.state = HL_TICKET_NONE;
	hl_pool_hand(pool, f->tk.pool, g);
	spin_unlock(&pool->lock);
}

/**
 * hl_ticket_put_idle() - The one place a ticket goes back.
 * @f: The locker.
 * @g: Where the continuation of a waiter handed the ticket goes.
 *
 * Once the locker holds nothing and has nothing in flight (after its last
 * unlock, a failed or cancelled lock call that left it holding nothing, a
 * takeover of its leases, or close), it returns its ticket, if it has one.
 *
 * Context: f->lock held.
 */
void hl_ticket_put_idle(struct hl_file *f, struct hl_grants *g)
{
	lockdep_assert_held(&f->lock);
	if (f->lk.op.state == HL_OP_IDLE && !f->lk.nr_reqs &&
	    f->tk.state == HL_TICKET_HELD)
		hl_ticket_put(f, g);
}

/**
 * hl_ticket_stats() - The figures of the ticket pools.
 * @f: The locker whose own figures are wanted (HLOCK_STATS_LOCKER), its
 *	lock held; NULL for the pools' (HLOCK_STATS_GLOBAL).
 * @ts: Filled in, HLOCK_NR_TICKET_POOLS of them.
 *
 * Context: process context; takes each pool lock.
 */
void hl_ticket_stats(struct hl_file *f, struct hlock_ticket_stats *ts)
{
	unsigned int id, total, out, waiting;

	for (id = 0; id < HLOCK_NR_TICKET_POOLS; id++) {
		struct hl_pool *pool = &hl_pools[id];

		spin_lock(&pool->lock);
		total = hl_tickets[id];
		out = pool->out;
		waiting = pool->waiting;
		if (f) {
			lockdep_assert_held(&f->lock);
			out = f->tk.pool == id &&
			      f->tk.state == HL_TICKET_HELD;
			waiting = f->tk.pool == id &&
				  f->tk.state == HL_TICKET_WAITING;
		}
		ts[id].available = total > pool->out ? total - pool->out : 0;
		spin_unlock(&pool->lock);
		ts[id].out = out;
		ts[id].total = total;
		ts[id].waiting = waiting;
	}
}

/* A waiter, as debugfs shows it. */
struct hl_ticket_waiter {
	unsigned int inum;
	pid_t pid;
	u64 wait_ns;
	char comm[HLOCK_COMM_LEN];
};

/*
 * /sys/kernel/debug/hlock/tickets: each pool's figures, and the first
 * waiters of each, copied under its lock (a bounded number) and printed
 * once it is dropped.
 */
static int hl_tickets_show(struct seq_file *m, void *v)
{
	struct hl_ticket_waiter w[HL_TICKET_SHOW];
	unsigned int id, n, i, waiting;
	struct hl_file *f;
	u64 now;

	seq_printf(m, "%-6s %10s %10s %10s\n", "POOL", "TOTAL", "OUT",
		   "WAITING");
	for (id = 0; id < HLOCK_NR_TICKET_POOLS; id++) {
		struct hl_pool *pool = &hl_pools[id];

		spin_lock(&pool->lock);
		seq_printf(m, "%-6s %10u %10u %10u\n", hl_pool_names[id],
			   hl_tickets[id], pool->out, pool->waiting);
		spin_unlock(&pool->lock);
	}
	seq_printf(m, "%-6s %-10s %7s %14s %s\n", "POOL", "IPC_NS", "PID",
		   "WAIT_NS", "COMMAND");
	for (id = 0; id < HLOCK_NR_TICKET_POOLS; id++) {
		struct hl_pool *pool = &hl_pools[id];

		n = 0;
		now = hl_clock();
		spin_lock(&pool->lock);
		waiting = pool->waiting;
		list_for_each_entry(f, &pool->waiters, tk.node) {
			if (n == HL_TICKET_SHOW)
				break;
			w[n].inum = f->ns->inum;
			w[n].pid = hl_file_pid_ns(f,
						  task_active_pid_ns(current));
			w[n].wait_ns = now - f->tk.since;
			/* Only the locker's own lock calls change it. */
			memcpy(w[n].comm, f->comm, sizeof(w[n].comm));
			w[n].comm[sizeof(w[n].comm) - 1] = '\0';
			n++;
		}
		spin_unlock(&pool->lock);
		/* Users choose command names: escape them. */
		for (i = 0; i < n; i++)
			seq_printf(m, "%-6s %-10u %7d %14llu %*pE\n",
				   hl_pool_names[id], w[i].inum, w[i].pid,
				   w[i].wait_ns, (int)strlen(w[i].comm),
				   w[i].comm);
		if (waiting > n)
			seq_printf(m, "%-6s (%u more)\n", hl_pool_names[id],
				   waiting - n);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(hl_tickets);

/**
 * hl_ticket_debugfs() - Create /sys/kernel/debug/hlock/tickets.
 * @dir: The module's debugfs directory.
 */
void hl_ticket_debugfs(struct dentry *dir)
{
	debugfs_create_file("tickets", 0400, dir, NULL, &hl_tickets_fops);
}
