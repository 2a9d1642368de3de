/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Exclusion and intents, checked from a node's lock table: what
 * hlock_interact and hlock_cluster_interact both assert after their
 * steps.  Only the records a purpose ("why") names count, which are the
 * tests' own lockers; a waiting record holds nothing.
 *
 * A violation is two of those records on one path in modes Gray's
 * matrix forbids together, or a granted lock whose parent its locker
 * does not hold in a mode that covers the intent.  The table is built
 * locker by locker, so one look can see a release on one side and a
 * grant on the other; table_violation() reports a violation only when
 * two more looks show the same grants again (by their tokens).
 *
 * A grant's HLOCK_REC_BLOCKING is checked against the table's own
 * waiters too (table_blocking_violation()): it is set when a request of
 * another locker waits on the resource, or converts there, for a mode
 * that conflicts with the mode held.  In a local lock space it is set
 * then only.  In a cluster space other nodes' waits count as well, which
 * no table lists: there it may be set without such a waiter only when the
 * same record says HLOCK_REC_REMOTE_WAIT (the flags of one record are
 * read at one moment, under the resource's lock).
 *
 * Include it after hlock_helpers.h.
 */
#ifndef HLOCK_TABLE_CHECK_H
#define HLOCK_TABLE_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlock.h"

/* Room for table_violation()'s message, whatever the paths. */
#define TABLE_MSG_LEN	(2 * (HLOCK_WHY_LEN + HLOCK_PATH_MAX) + 160)

/* Gray's matrix: whether modes @a and @b held together conflict. */
static inline bool conflict(unsigned int a, unsigned int b)
{
	static const unsigned char bits[HLOCK_NR_MODES] = {
		[HLOCK_IS] = 1 << HLOCK_X,
		[HLOCK_IX] = 1 << HLOCK_S | 1 << HLOCK_SIX | 1 << HLOCK_X,
		[HLOCK_S] = 1 << HLOCK_IX | 1 << HLOCK_SIX | 1 << HLOCK_X,
		[HLOCK_SIX] = 1 << HLOCK_IX | 1 << HLOCK_S | 1 << HLOCK_SIX |
			      1 << HLOCK_X,
		[HLOCK_X] = 1 << HLOCK_IS | 1 << HLOCK_IX | 1 << HLOCK_S |
			    1 << HLOCK_SIX | 1 << HLOCK_X,
	};

	return a < HLOCK_NR_MODES && b < HLOCK_NR_MODES && bits[a] >> b & 1;
}

/* Whether @held on a parent covers the intent that @mode below needs. */
static inline bool covers_intent(unsigned int held, unsigned int mode)
{
	if (mode == HLOCK_IS || mode == HLOCK_S)
		return held != HLOCK_NL;
	return held == HLOCK_IX || held == HLOCK_SIX || held == HLOCK_X;
}

/* A grant as the table shows it: whose, where, what, which. */
struct grant {
	char why[HLOCK_WHY_LEN];
	char path[HLOCK_PATH_MAX + 1];
	unsigned int mode;
	uint64_t token;
};

/* The same, pointing into a table buffer. */
struct trec {
	const char *why;
	const char *path;
	unsigned int mode;
	uint64_t token;
};

/*
 * The granted (or converting) records that name a purpose, into @out,
 * pointing into *@buf: the caller frees both.  Return how many, or
 * -errno (then there is nothing to free).
 */
static inline int table_grants(int fd, void **buf, struct trec **out)
{
	const struct hlock_lock_record *rec;
	struct trec *t;
	int i, n, k = 0;

	*out = NULL;
	n = hlock_table_alloc(fd, buf);
	if (n < 0)
		return n;
	t = calloc(n + 1, sizeof(*t));
	if (!t) {
		free(*buf);
		return -ENOMEM;
	}
	for (i = 0, rec = *buf; i < n; i++, rec = hlock_record_next(rec)) {
		const struct hlock_record_ext *ext = hlock_record_ext(rec);

		if (rec->state == HLOCK_STATE_WAITING || !ext ||
		    !ext->why[0])
			continue;
		t[k].why = ext->why;
		t[k].path = hlock_record_path(rec);
		t[k].mode = rec->mode;
		t[k].token = ext->token;
		k++;
	}
	*out = t;
	return k;
}

static inline void grant_of(struct grant *g, const struct trec *t)
{
	snprintf(g->why, sizeof(g->why), "%s", t->why);
	snprintf(g->path, sizeof(g->path), "%s", t->path);
	g->mode = t->mode;
	g->token = t->token;
}

static inline bool same_grant(const struct grant *g, const struct trec *t)
{
	return g->mode == t->mode && g->token == t->token &&
	       !strcmp(g->why, t->why) && !strcmp(g->path, t->path);
}

/* The parent path of @path ("" for a top level one). */
static inline void parent_of(const char *path, char *out, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (n >= size)
		n = size - 1;
	memcpy(out, path, n);
	out[n] = 0;
}

/*
 * One look: the first violation, in @a and @b (exclusion: @a read first;
 * intent: @a the grant, @b the parent it lacks, mode NL).  Return: 0 none,
 * 1 exclusion, 2 intent, or -errno.
 */
static inline int table_look(int fd, struct grant *a, struct grant *b)
{
	char parent[HLOCK_PATH_MAX + 1];
	struct trec *t;
	int i, j, n, ret = 0;
	bool found;
	void *buf;

	n = table_grants(fd, &buf, &t);
	if (n < 0)
		return n;
	for (i = 0; i < n && !ret; i++) {
		for (j = i + 1; j < n; j++) {
			if (strcmp(t[i].path, t[j].path) ||
			    !strcmp(t[i].why, t[j].why) ||
			    !conflict(t[i].mode, t[j].mode))
				continue;
			grant_of(a, &t[i]);
			grant_of(b, &t[j]);
			ret = 1;
			break;
		}
		if (ret || !t[i].path[0])
			continue;
		parent_of(t[i].path, parent, sizeof(parent));
		found = false;
		for (j = 0; j < n && !found; j++)
			found = !strcmp(t[j].why, t[i].why) &&
				!strcmp(t[j].path, parent) &&
				covers_intent(t[j].mode, t[i].mode);
		if (found)
			continue;
		grant_of(a, &t[i]);
		snprintf(b->why, sizeof(b->why), "%s", t[i].why);
		snprintf(b->path, sizeof(b->path), "%s", parent);
		b->mode = HLOCK_NL;
		ret = 2;
	}
	free(t);
	free(buf);
	return ret;
}

/* Whether a look still shows what table_look() found. */
static inline bool table_still(int fd, int kind, const struct grant *a,
			       const struct grant *b)
{
	char parent[HLOCK_PATH_MAX + 1];
	bool has_a = false, has_b = false, covered = false;
	struct trec *t;
	int i, n;
	void *buf;

	n = table_grants(fd, &buf, &t);
	if (n < 0)
		return false;
	parent_of(a->path, parent, sizeof(parent));
	for (i = 0; i < n; i++) {
		has_a |= same_grant(a, &t[i]);
		has_b |= kind == 1 && same_grant(b, &t[i]);
		covered |= kind == 2 && !strcmp(t[i].why, a->why) &&
			   !strcmp(t[i].path, parent) &&
			   covers_intent(t[i].mode, a->mode);
	}
	free(t);
	free(buf);
	return has_a && (kind == 1 ? has_b : !covered);
}

/*
 * The table of @fd's lock space: true, with the violation described in
 * @msg, when three looks show the same one.
 */
static inline bool table_violation(int fd, char *msg, size_t size)
{
	struct grant a, b;
	int kind = table_look(fd, &a, &b);

	if (kind <= 0 || !table_still(fd, kind, &a, &b) ||
	    !table_still(fd, kind, &a, &b))
		return false;
	if (kind == 1)
		snprintf(msg, size,
			 "%s holds %s on \"%s\" (token %llu), %s holds %s (token %llu)",
			 a.why, hlock_mode_name(a.mode), a.path,
			 (unsigned long long)a.token, b.why,
			 hlock_mode_name(b.mode), (unsigned long long)b.token);
	else
		snprintf(msg, size,
			 "%s holds %s on \"%s\" (token %llu), not the intent on \"%s\"",
			 a.why, hlock_mode_name(a.mode), a.path,
			 (unsigned long long)a.token, b.path);
	return true;
}

/*
 * One look at HLOCK_REC_BLOCKING: the first grant (of a locker that names
 * a purpose) whose flag disagrees with the waiters the same table shows,
 * or, with @only, that grant alone.  Waiters of any locker count, named
 * or not; a locker's own conversion does not (a locker has one record a
 * resource, so another record on the path is another locker's, unless
 * both name the same purpose).  A flag set with no such waiter agrees
 * when the record says another node waits there (HLOCK_REC_REMOTE_WAIT,
 * only ever set in a cluster space).  Return: 1 with the grant in @a and
 * its flag in @flagged, 0 none, or -errno.
 */
static inline int table_blocking_look(int fd, const struct grant *only,
				      struct grant *a, bool *flagged)
{
	const struct hlock_lock_record *r, *w;
	const struct hlock_record_ext *re, *we;
	int i, j, n, ret = 0;
	bool want;
	void *buf;

	n = hlock_table_alloc(fd, &buf);
	if (n < 0)
		return n;
	for (i = 0, r = buf; i < n && !ret; i++, r = hlock_record_next(r)) {
		struct trec t;

		re = hlock_record_ext(r);
		if (r->state == HLOCK_STATE_WAITING || !re || !re->why[0])
			continue;
		t.why = re->why;
		t.path = hlock_record_path(r);
		t.mode = r->mode;
		t.token = re->token;
		if (only && !same_grant(only, &t))
			continue;
		want = false;
		for (j = 0, w = buf; j < n && !want;
		     j++, w = hlock_record_next(w)) {
			unsigned int m = w->state == HLOCK_STATE_WAITING ?
					 w->mode : w->convert_mode;

			we = hlock_record_ext(w);
			if (w->state == HLOCK_STATE_GRANTED ||
			    strcmp(hlock_record_path(w), t.path) ||
			    (we && !strcmp(we->why, t.why)))
				continue;
			want = conflict(m, t.mode);
		}
		if (want == !!(re->flags & HLOCK_REC_BLOCKING))
			continue;
		/* Another node's wait, which no table lists, may set it. */
		if (!want && (re->flags & HLOCK_REC_REMOTE_WAIT))
			continue;
		grant_of(a, &t);
		*flagged = !want;
		ret = 1;
	}
	free(buf);
	return ret;
}

/*
 * The table of the lock space of @fd: true, with the grant
 * described in @msg, when three looks show its HLOCK_REC_BLOCKING wrong
 * the same way (the table is built locker by locker: one look may see a
 * waiter come or go on one side only).
 */
static inline bool table_blocking_violation(int fd, char *msg, size_t size)
{
	bool flagged, again;
	struct grant a, b;
	int k;

	if (table_blocking_look(fd, NULL, &a, &flagged) <= 0)
		return false;
	for (k = 0; k < 2; k++)
		if (table_blocking_look(fd, &a, &b, &again) <= 0 ||
		    again != flagged)
			return false;
	snprintf(msg, size,
		 "%s holds %s on \"%s\" (token %llu), %s as blocking a waiter while %s waits for a conflicting mode there",
		 a.why, hlock_mode_name(a.mode), a.path,
		 (unsigned long long)a.token, flagged ? "shown" : "not shown",
		 flagged ? "nobody" : "another locker");
	return true;
}

#endif /* HLOCK_TABLE_CHECK_H */
