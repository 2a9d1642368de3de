/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel definitions hlock_core.c uses, for its userspace build.
 */
#ifndef _HLOCK_TEST_SHIM_H
#define _HLOCK_TEST_SHIM_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

typedef uint64_t u64;
typedef int64_t s64;

#define S64_MIN	INT64_MIN

/* sparse's lock annotations mean nothing to gcc. */
#define __acquires(...)
#define __releases(...)
#define __acquire(x)	((void)0)
#define __release(x)	((void)0)

/* One thread here: plain accesses. */
#define READ_ONCE(x)		(x)
#define WRITE_ONCE(x, v)	((x) = (v))
/* No other thread to order against: a plain store. */
#define smp_store_release(p, v)	(*(p) = (v))
/* Likewise a plain load. */
#define smp_load_acquire(p)	(*(p))

/*
 * Atomics: one thread, plain arithmetic.  atomic_t is the kernel's own
 * typedef (<linux/types.h>), which the core's structures name.
 */
typedef struct {
	int counter;
} atomic_t;

static inline void atomic_set(atomic_t *v, int i)
{
	v->counter = i;
}

static inline int atomic_read(const atomic_t *v)
{
	return v->counter;
}

static inline void atomic_inc(atomic_t *v)
{
	v->counter++;
}

static inline void atomic_dec(atomic_t *v)
{
	v->counter--;
}

/*
 * The exchanges of hl_head.fast (an unsigned long), one thread: plain
 * compare and store.
 */
static inline bool try_cmpxchg_ulong(unsigned long *p, unsigned long *old,
				     unsigned long new)
{
	if (*p != *old) {
		*old = *p;
		return false;
	}
	*p = new;
	return true;
}

static inline unsigned long xchg_ulong(unsigned long *p, unsigned long new)
{
	unsigned long old = *p;

	*p = new;
	return old;
}

#define try_cmpxchg(p, old, new)	try_cmpxchg_ulong(p, old, new)
#define xchg(p, new)			xchg_ulong(p, new)

/* No other thread to order against: the full barrier orders nothing. */
#define smp_mb()	((void)0)

#define noinline	__attribute__((__noinline__))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct list_head {
	struct list_head *next, *prev;
};

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#define list_entry(ptr, type, member)	container_of(ptr, type, member)
#define list_first_entry(ptr, type, member) \
	list_entry((ptr)->next, type, member)
#define list_last_entry(ptr, type, member) \
	list_entry((ptr)->prev, type, member)
#define list_next_entry(pos, member) \
	list_entry((pos)->member.next, __typeof__(*(pos)), member)
#define list_for_each_entry(pos, head, member)				\
	for (pos = list_first_entry(head, __typeof__(*pos), member);	\
	     &pos->member != (head);					\
	     pos = list_next_entry(pos, member))
#define list_for_each_entry_safe(pos, n, head, member)			\
	for (pos = list_first_entry(head, __typeof__(*pos), member),	\
	     n = list_next_entry(pos, member);				\
	     &pos->member != (head);					\
	     pos = n, n = list_next_entry(n, member))

static inline void INIT_LIST_HEAD(struct list_head *l)
{
	l->next = l;
	l->prev = l;
}

static inline void list_insert(struct list_head *n, struct list_head *prev,
			       struct list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void list_add(struct list_head *n, struct list_head *head)
{
	list_insert(n, head, head->next);
}

static inline void list_add_tail(struct list_head *n, struct list_head *head)
{
	list_insert(n, head->prev, head);
}

static inline void list_del(struct list_head *e)
{
	e->next->prev = e->prev;
	e->prev->next = e->next;
	/* Poison, as the kernel does, so a use after delete crashes. */
	e->next = NULL;
	e->prev = NULL;
}

static inline void list_move_tail(struct list_head *e, struct list_head *head)
{
	list_del(e);
	list_add_tail(e, head);
}

static inline bool list_empty(const struct list_head *l)
{
	return l->next == l;
}

struct hlist_node {
	struct hlist_node *next, **pprev;
};

struct hlist_head {
	struct hlist_node *first;
};

#define hlist_entry(ptr, type, member) container_of(ptr, type, member)
#define hlist_entry_safe(ptr, type, member) \
	((ptr) ? container_of(ptr, type, member) : NULL)
#define hlist_for_each_entry(pos, head, member)				\
	for (pos = hlist_entry_safe((head)->first, __typeof__(*(pos)), member);\
	     pos;							\
	     pos = hlist_entry_safe((pos)->member.next,			\
				    __typeof__(*(pos)), member))
#define hlist_for_each_entry_safe(pos, n, head, member)			\
	for (pos = hlist_entry_safe((head)->first, __typeof__(*(pos)), member);\
	     pos && ({ n = (pos)->member.next; 1; });			\
	     pos = hlist_entry_safe(n, __typeof__(*(pos)), member))

static inline void INIT_HLIST_HEAD(struct hlist_head *h)
{
	h->first = NULL;
}

static inline int hlist_empty(const struct hlist_head *h)
{
	return !h->first;
}

static inline void hlist_add_head(struct hlist_node *n, struct hlist_head *h)
{
	n->next = h->first;
	if (h->first)
		h->first->pprev = &n->next;
	h->first = n;
	n->pprev = &h->first;
}

static inline void hlist_del(struct hlist_node *n)
{
	*n->pprev = n->next;
	if (n->next)
		n->next->pprev = n->pprev;
	n->next = NULL;
	n->pprev = NULL;
}

#endif /* _HLOCK_TEST_SHIM_H */
