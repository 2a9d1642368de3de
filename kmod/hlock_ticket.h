/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_ticket.c: read and write ticket pools, and a locker's ticket.
 */
#ifndef _HLOCK_TICKET_H
#define _HLOCK_TICKET_H

#include <linux/list.h>
#include <linux/types.h>

struct dentry;
struct hl_file;
struct hl_grants;
struct hlock_ticket_stats;

/* States of hl_ticket.state. */
enum hl_ticket_state {
	HL_TICKET_NONE,		/* no ticket, none waited for */
	HL_TICKET_WAITING,	/* on its pool's list */
	HL_TICKET_HELD,		/* holds one (handed or taken) */
};

/**
 * struct hl_ticket - A locker's ticket.
 * @node: Entry in its pool's list of waiters while it waits.
 * @since: hl_clock() when it began to wait.
 * @pool: HLOCK_TICKET_* of the ticket it holds or waits for.
 * @state: enum hl_ticket_state.
 * @pending: The operation in the slot is pending its ticket: claimed, not
 *	started; it starts once the ticket is handed over (or failed to,
 *	see @error).
 * @error: Why the operation failed to start once its ticket came; the
 *	slot keeps it, not started, until it is collected.
 *
 * @node and @state are protected by the pool's lock; the locker reads
 * @state under its own lock alone when it is not HL_TICKET_WAITING (only
 * the locker moves it then).  @since and @pool are written under both
 * locks while @state is HL_TICKET_NONE.  @pending and @error are protected
 * by the locker lock.
 */
struct hl_ticket {
	struct list_head node;
	u64 since;
	unsigned int pool;
	unsigned int state;
	bool pending;
	int error;
};

/* Size of each pool (module parameters); 0 is unlimited. */
extern unsigned int hl_tickets[HLOCK_NR_TICKET_POOLS];

/* Whether either pool is limited: when not, a lock call takes no ticket. */
static inline bool hl_tickets_limited(void)
{
	return READ_ONCE(hl_tickets[HLOCK_TICKET_READ]) |
	       READ_ONCE(hl_tickets[HLOCK_TICKET_WRITE]);
}

int hl_ticket_take(struct hl_file *f, unsigned int mode, bool try);
bool hl_ticket_ready(struct hl_file *f);
void hl_ticket_withdraw(struct hl_file *f);
bool hl_ticket_contended(struct hl_file *f);
void hl_ticket_put(struct hl_file *f, struct hl_grants *g);
void hl_ticket_put_idle(struct hl_file *f, struct hl_grants *g);
void hl_ticket_stats(struct hl_file *f, struct hlock_ticket_stats *ts);
void hl_ticket_debugfs(struct dentry *dir);

#endif /* _HLOCK_TICKET_H */
