// SPDX-License-Identifier: GPL-2.0
/*
 * hlock lock value blocks (HLOCK_IOC_LVB) and blocking notifications
 * (HLOCK_IOC_EVENTS, HLOCK_IOC_BLOCKING, HLOCK_REC_BLOCKING), with DLM's
 * rules: S, SIX and X read a resource's block; SIX and X set a value that
 * is published when their grant goes down; a holder that asked to be told
 * sees POLLPRI once a conflicting request waits on one of its grants.
 *
 * Conventions:
 *  - Lockers A, B and C are three lockers of one process.
 *  - Each test uses paths of its own, under a name made of its pid (P()):
 *    a resource left for the reclaimer never carries a value into another
 *    test, nor into the next run (hlock_lvb_test32 after hlock_lvb_test).
 *  - No test asserts how long anything takes: a poll that must see
 *    POLLPRI waits up to SETTLE_NS, one that must not looks once (the
 *    notification is made by the queueing call itself, before it returns).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "hlock.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

/* A lease meant to expire while the test looks away, and that pause. */
#define SHORT_LEASE	(50 * MS)
#define PAST_SHORT	(4 * SHORT_LEASE)

/* Paths P() keeps at once, and the room of each. */
#define NR_PATHS	4
#define PATH_ROOM	64

/* @name under this process's own first component ("" stays the root). */
static const char *P(const char *name)
{
	static char bufs[NR_PATHS][PATH_ROOM];
	static unsigned int next;
	char *b = bufs[next++ % NR_PATHS];

	if (!*name)
		return name;
	snprintf(b, PATH_ROOM, "lvb%d-%s", (int)getpid(), name);
	return b;
}

static void fill(unsigned char *buf, unsigned char seed)
{
	int i;

	for (i = 0; i < HLOCK_LVB_LEN; i++)
		buf[i] = (unsigned char)(seed + i);
}

static bool is_zero(const unsigned char *buf)
{
	int i;

	for (i = 0; i < HLOCK_LVB_LEN; i++)
		if (buf[i])
			return false;
	return true;
}

/* An LVB ioctl with every field given, for the rejection cases. */
static void lvb_args(struct hlock_lvb_args *a, const char *path,
		     unsigned int op, void *buf)
{
	memset(a, 0, sizeof(*a));
	a->path = (uintptr_t)path;
	a->path_len = strlen(path);
	a->op = op;
	a->buf = (uintptr_t)buf;
}

/* The record of a granted request whose locker describes itself so. */
struct rec_match {
	const char *why;
	const char *path;
	unsigned int flag;
};

static bool record_flagged(const struct hlock_lock_record *rec,
			   const void *arg)
{
	const struct rec_match *m = arg;
	const struct hlock_record_ext *ext = hlock_record_ext(rec);

	return ext && !strcmp(ext->why, m->why) &&
	       !strcmp(hlock_record_path(rec), m->path) &&
	       rec->state == HLOCK_STATE_GRANTED && (ext->flags & m->flag);
}

/* Whether @fd's lock table shows @why's grant on @path as blocking. */
static int table_blocking(int fd, const char *why, const char *path)
{
	struct rec_match m = { why, path, HLOCK_REC_BLOCKING };
	int n, matched;

	n = table_count_if(fd, record_flagged, &m, &matched);
	return n < 0 ? n : matched;
}

FIXTURE(lvb) {
	int fd[3];
};

FIXTURE_SETUP(lvb)
{
	struct hlock_info info;
	int ret = lockers_open(self->fd, 3);

	if (ret == -ENODEV)
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, hlock_info(self->fd[0], &info));
	if (!(info.features & HLOCK_FEAT_LVB) ||
	    !(info.features & HLOCK_FEAT_BLOCKING))
		SKIP(return, "the module has no HLOCK_FEAT_LVB or _BLOCKING");
	ASSERT_EQ(0, hlock_describe(self->fd[0], "lvb-a"));
	ASSERT_EQ(0, hlock_describe(self->fd[1], "lvb-b"));
	ASSERT_EQ(0, hlock_describe(self->fd[2], "lvb-c"));
}

FIXTURE_TEARDOWN(lvb)
{
	int i;

	for (i = 0; i < 3; i++)
		if (self->fd[i] >= 0)
			close(self->fd[i]);
}

#define A	(self->fd[0])
#define B	(self->fd[1])
#define C	(self->fd[2])

/* ------------------------------------------------------------------ */
/* Lock value blocks */

/*
 * X sets, unlocks; the S that waited for it reads the value.  Before the
 * unlock the value is pending: the writer still reads the old one.
 */
TEST_F_TIMEOUT(lvb, round_trip, TEST_TMO)
{
	unsigned char v[HLOCK_LVB_LEN], got[HLOCK_LVB_LEN];
	const char *p = P("lvrt/res");

	ASSERT_EQ(0, hlock_lock(A, p, X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(B, p, S, ASYNC, -1));
	memset(got, 0xaa, sizeof(got));
	ASSERT_EQ(0, hlock_lvb_get(A, p, got));
	ASSERT_TRUE(is_zero(got)) TH_LOG("a new resource's block is zeros");
	fill(v, 1);
	ASSERT_EQ(0, hlock_lvb_set(A, p, v));
	ASSERT_EQ(0, hlock_lvb_get(A, p, got));
	ASSERT_TRUE(is_zero(got)) TH_LOG("set, not yet published");
	ASSERT_EQ(0, hlock_unlock(A, p));
	ASSERT_EQ(0, hlock_wait(B, SETTLE_NS));
	memset(got, 0, sizeof(got));
	ASSERT_EQ(0, hlock_lvb_get(B, p, got));
	ASSERT_EQ(0, memcmp(v, got, sizeof(v)));
	/* A second reader, and the value stays while B holds the resource. */
	ASSERT_EQ(0, hlock_lock(C, p, S, 0, -1));
	memset(got, 0, sizeof(got));
	ASSERT_EQ(0, hlock_lvb_get(C, p, got));
	ASSERT_EQ(0, memcmp(v, got, sizeof(v)));
	/* A reader's unlock publishes nothing. */
	ASSERT_EQ(0, hlock_unlock(C, p));
	ASSERT_EQ(0, hlock_lvb_get(B, p, got));
	ASSERT_EQ(0, memcmp(v, got, sizeof(v)));
	ASSERT_EQ(0, hlock_unlock(B, p));
}

/* SIX publishes on its downgrade; X publishes going down to SIX (DLM). */
TEST_F_TIMEOUT(lvb, downgrade_publishes, TEST_TMO)
{
	unsigned char v[HLOCK_LVB_LEN], w[HLOCK_LVB_LEN], got[HLOCK_LVB_LEN];
	const char *p = P("lvdg");

	ASSERT_EQ(0, hlock_lock(A, p, SIX, 0, -1));
	fill(v, 7);
	ASSERT_EQ(0, hlock_lvb_set(A, p, v));
	ASSERT_EQ(0, hlock_lvb_get(A, p, got));
	ASSERT_TRUE(is_zero(got));
	ASSERT_EQ(0, hlock_downgrade(A, p, S));
	ASSERT_EQ(0, hlock_lvb_get(A, p, got));
	ASSERT_EQ(0, memcmp(v, got, sizeof(v)));
	ASSERT_EQ(0, hlock_lock(B, p, S, 0, 0));
	memset(got, 0, sizeof(got));
	ASSERT_EQ(0, hlock_lvb_get(B, p, got));
	ASSERT_EQ(0, memcmp(v, got, sizeof(v)));
	ASSERT_EQ(0, hlock_unlock(B, p));
	ASSERT_EQ(0, hlock_unlock(A, p));

	/* A set value replaces the last one set; X to SIX publishes it. */
	ASSERT_EQ(0, hlock_lock(A, p, X, 0, -1));
	fill(w, 50);
	ASSERT_EQ(0, hlock_lvb_set(A, p, v));
	ASSERT_EQ(0, hlock_lvb_set(A, p, w));
	ASSERT_EQ(0, hlock_downgrade(A, p, SIX));
	ASSERT_EQ(0, hlock_lvb_get(A, p, got));
	ASSERT_EQ(0, memcmp(w, got, sizeof(w)));
	/* Published once: a further downgrade changes nothing. */
	ASSERT_EQ(0, hlock_downgrade(A, p, IS));
	ASSERT_EQ(-EACCES, hlock_lvb_get(A, p, got));
	/* IS to S: the request stays, and so does the resource. */
	ASSERT_EQ(0, hlock_lock(A, p, S, 0, -1));
	memset(got, 0, sizeof(got));
	ASSERT_EQ(0, hlock_lvb_get(A, p, got));
	ASSERT_EQ(0, memcmp(w, got, sizeof(w)));
	ASSERT_EQ(1, hlock_unlock(A, p));
	ASSERT_EQ(0, hlock_unlock(A, p));
}

/* An X with an acquisition left is still X: nothing is published yet. */
TEST_F_TIMEOUT(lvb, recursion_publishes_on_release, TEST_TMO)
{
	unsigned char v[HLOCK_LVB_LEN], got[HLOCK_LVB_LEN];
	const char *p = P("lvrec");

	ASSERT_EQ(0, hlock_lock(A, p, X, 0, -1));
	ASSERT_EQ(0, hlock_lock(A, p, X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(B, p, S, ASYNC, -1));
	fill(v, 3);
	ASSERT_EQ(0, hlock_lvb_set(A, p, v));
	ASSERT_EQ(1, hlock_unlock(A, p));
	ASSERT_EQ(0, hlock_lvb_get(A, p, got));
	ASSERT_TRUE(is_zero(got));
	ASSERT_EQ(0, hlock_unlock(A, p));
	ASSERT_EQ(0, hlock_wait(B, SETTLE_NS));
	ASSERT_EQ(0, hlock_lvb_get(B, p, got));
	ASSERT_EQ(0, memcmp(v, got, sizeof(v)));
	ASSERT_EQ(0, hlock_unlock(B, p));
}

/*
 * A writer alone on the resource publishes too: its X was granted on the
 * resource's fast path, which setting the block takes it off.
 */
TEST_F_TIMEOUT(lvb, alone_publishes, TEST_TMO)
{
	unsigned char v[HLOCK_LVB_LEN], got[HLOCK_LVB_LEN];
	const char *p = P("lvalone");
	unsigned char round;

	/* Twice: the resource is idle, its fast path open, in between. */
	for (round = 4; round < 6; round++) {
		ASSERT_EQ(0, hlock_lock(A, p, X, 0, -1));
		fill(v, round);
		ASSERT_EQ(0, hlock_lvb_set(A, p, v));
		ASSERT_EQ(0, hlock_unlock(A, p));
		ASSERT_EQ(0, hlock_lock(B, p, S, 0, 0));
		ASSERT_EQ(0, hlock_lvb_get(B, p, got));
		ASSERT_EQ(0, memcmp(v, got, sizeof(v)));
		ASSERT_EQ(0, hlock_unlock(B, p));
	}
}

/* Who may read and who may set. */
TEST_F_TIMEOUT(lvb, rights, TEST_TMO)
{
	unsigned char v[HLOCK_LVB_LEN], got[HLOCK_LVB_LEN];
	const char *p = P("lvr/c");

	fill(v, 9);
	ASSERT_EQ(-ENOENT, hlock_lvb_get(A, p, got));
	ASSERT_EQ(-ENOENT, hlock_lvb_set(A, p, v));
	ASSERT_EQ(0, hlock_lock(A, p, IS, 0, -1));
	ASSERT_EQ(-EACCES, hlock_lvb_get(A, p, got));
	ASSERT_EQ(-EACCES, hlock_lvb_set(A, p, v));
	ASSERT_EQ(0, hlock_lock(A, p, IX, 0, -1));
	ASSERT_EQ(IX, hlock_held(A, p));
	ASSERT_EQ(-EACCES, hlock_lvb_get(A, p, got));
	ASSERT_EQ(-EACCES, hlock_lvb_set(A, p, v));
	/* The intent above: IX on the parent reads nothing either. */
	ASSERT_EQ(-EACCES, hlock_lvb_get(A, P("lvr"), got));
	ASSERT_EQ(1, hlock_unlock(A, p));
	ASSERT_EQ(0, hlock_unlock(A, p));
	ASSERT_EQ(0, hlock_lock(B, p, S, 0, -1));
	ASSERT_EQ(0, hlock_lvb_get(B, p, got));
	ASSERT_EQ(-EACCES, hlock_lvb_set(B, p, v));
	ASSERT_EQ(0, hlock_unlock(B, p));
	ASSERT_EQ(-ENOENT, hlock_lvb_get(B, p, got));
}

/* Every rejection, one at a time, with all else valid. */
TEST_F_TIMEOUT(lvb, bad_args, TEST_TMO)
{
	unsigned char v[HLOCK_LVB_LEN], got[HLOCK_LVB_LEN];
	struct hlock_lvb_args a;
	struct {
		struct hlock_lvb_args a;
		uint64_t more;
	} big;
	const char *p = P("lvbad");
	char nul[] = "lv\0bad";

	fill(v, 4);
	ASSERT_EQ(0, hlock_lock(A, p, X, 0, -1));
	lvb_args(&a, p, HLOCK_LVB_SET, v);
	ASSERT_EQ(0, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	a.reserved[0] = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, HLOCK_LVB_SET, v);
	a.reserved[1] = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, HLOCK_LVB_SET, v);
	a.flags = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, HLOCK_LVB_SET, v);
	a.__pad = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, 2, v);
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, HLOCK_LVB_SET, unmapped_page());
	ASSERT_EQ(-EFAULT, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, HLOCK_LVB_GET, unmapped_page());
	ASSERT_EQ(-EFAULT, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, HLOCK_LVB_GET, NULL);
	ASSERT_EQ(-EFAULT, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, HLOCK_LVB_GET, v);
	a.path = (uintptr_t)unmapped_page();
	ASSERT_EQ(-EFAULT, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, HLOCK_LVB_GET, v);
	a.path_len = HLOCK_PATH_MAX + 1;
	ASSERT_EQ(-ENAMETOOLONG, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	lvb_args(&a, p, HLOCK_LVB_GET, v);
	a.path = (uintptr_t)nul;
	a.path_len = sizeof(nul) - 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_LVB, &a));
	/* A larger structure: its tail must be zero. */
	memset(&big, 0, sizeof(big));
	lvb_args(&big.a, p, HLOCK_LVB_GET, got);
	ASSERT_EQ(0, raw_ioctl(A, _IOW(HLOCK_IOC_MAGIC, 13, big), &big));
	big.more = 1;
	ASSERT_EQ(-E2BIG, raw_ioctl(A, _IOW(HLOCK_IOC_MAGIC, 13, big), &big));
	/* The library's own check. */
	ASSERT_EQ(-EFAULT, hlock_lvb_get(A, p, NULL));
	/* Nothing of the above was set: the first value is still pending. */
	ASSERT_EQ(0, hlock_downgrade(A, p, S));
	memset(&a, 0, sizeof(a));
	ASSERT_EQ(0, hlock_lvb_get(A, p, (unsigned char *)&a));
	ASSERT_EQ(0, memcmp(v, &a, sizeof(v)));
	ASSERT_EQ(0, hlock_unlock(A, p));
}

/* Closing publishes, as any release of the grant does. */
TEST_F_TIMEOUT(lvb, close_publishes, TEST_TMO)
{
	unsigned char v[HLOCK_LVB_LEN], got[HLOCK_LVB_LEN];
	const char *p = P("lvclose");

	ASSERT_EQ(0, hlock_lock(A, p, X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(B, p, S, ASYNC, -1));
	fill(v, 11);
	ASSERT_EQ(0, hlock_lvb_set(A, p, v));
	close(A);
	A = -1;
	ASSERT_EQ(0, hlock_wait(B, SETTLE_NS));
	ASSERT_EQ(0, hlock_lvb_get(B, p, got));
	ASSERT_EQ(0, memcmp(v, got, sizeof(v)));
	ASSERT_EQ(0, hlock_unlock(B, p));
}

/* ------------------------------------------------------------------ */
/* Blocking notifications */

/*
 * A holder that asked is told when a conflicting request starts to wait,
 * not when a compatible one does; the table and HLOCK_IOC_BLOCKING show
 * the state as it stands.
 */
TEST_F_TIMEOUT(lvb, blocking_notified, TEST_TMO)
{
	const char *p = P("lvbl/r");
	unsigned int ev;

	ASSERT_EQ(0, hlock_events_want(A, HLOCK_EVENT_BLOCKING));
	ASSERT_EQ(0, hlock_lock(A, p, S, 0, -1));
	ASSERT_EQ(0, hlock_blocking(A, p));
	ASSERT_EQ(0, hlock_blocking(A, P("lvbl")));
	ASSERT_EQ(-ENOENT, hlock_blocking(B, p));
	/* Granted beside it, and a compatible waiter: nobody is blocked. */
	ASSERT_EQ(0, hlock_lock(B, p, S, 0, 0));
	ASSERT_EQ(0, poll_events(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(0U, ev);
	/* X waits: both S holders block it; only A asked to be told. */
	ASSERT_EQ(-EINPROGRESS, hlock_lock(C, p, X, ASYNC, -1));
	ASSERT_EQ(POLLPRI, poll_pri(A) & POLLPRI);
	ASSERT_EQ(0, poll_events(B) & POLLPRI);
	ASSERT_EQ(1, hlock_blocking(A, p));
	ASSERT_EQ(1, hlock_blocking(B, p));
	ASSERT_EQ(1, table_blocking(A, "lvb-a", p));
	ASSERT_EQ(1, table_blocking(A, "lvb-b", p));
	/* The root's intents block nobody. */
	ASSERT_EQ(0, table_blocking(A, "lvb-a", ""));
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(HLOCK_EVENT_BLOCKING, ev);
	ASSERT_EQ(0, poll_events(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(0U, ev);
	/* The waiter goes: nothing blocks any more. */
	ASSERT_EQ(0, hlock_unlock(C, p));
	ASSERT_EQ(0, hlock_blocking(A, p));
	ASSERT_EQ(0, table_blocking(A, "lvb-a", p));
	ASSERT_EQ(0, hlock_unlock(B, p));
	ASSERT_EQ(0, hlock_unlock(A, p));
}

/* A request that waits on others' waiters, not on A's mode, tells A nothing. */
TEST_F_TIMEOUT(lvb, compatible_waiter_silent, TEST_TMO)
{
	const char *p = P("lvcw");
	unsigned int ev;

	ASSERT_EQ(0, hlock_events_want(A, HLOCK_EVENT_BLOCKING));
	ASSERT_EQ(0, hlock_lock(A, p, S, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(C, p, X, ASYNC, -1));
	ASSERT_EQ(POLLPRI, poll_pri(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(HLOCK_EVENT_BLOCKING, ev);
	/* IS queues behind the X, yet is compatible with A's S. */
	ASSERT_EQ(-EINPROGRESS, hlock_lock(B, p, IS, ASYNC, -1));
	ASSERT_EQ(0, poll_events(A) & POLLPRI);
	ASSERT_EQ(0, hlock_unlock(B, p));
	ASSERT_EQ(0, hlock_unlock(C, p));
	ASSERT_EQ(0, hlock_unlock(A, p));
}

/*
 * Told once per grant; a downgrade re-arms it.  An intent blocks too: A's
 * IX under its X on a child blocks an S on the parent.
 */
TEST_F_TIMEOUT(lvb, once_per_grant, TEST_TMO)
{
	const char *op = P("op"), *in = P("in"), *inc = P("in/c");
	unsigned int ev;

	ASSERT_EQ(0, hlock_events_want(A, HLOCK_EVENT_BLOCKING));
	ASSERT_EQ(0, hlock_lock(A, op, SIX, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(B, op, X, ASYNC, -1));
	ASSERT_EQ(POLLPRI, poll_pri(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(C, op, S, ASYNC, -1));
	ASSERT_EQ(0, poll_events(A) & POLLPRI);
	ASSERT_EQ(0, hlock_downgrade(A, op, S));
	ASSERT_EQ(0, hlock_unlock(C, op));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(C, op, IX, ASYNC, -1));
	ASSERT_EQ(POLLPRI, poll_pri(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(HLOCK_EVENT_BLOCKING, ev);
	ASSERT_EQ(0, hlock_unlock(C, op));
	ASSERT_EQ(0, hlock_unlock(B, op));
	ASSERT_EQ(0, hlock_unlock(A, op));

	ASSERT_EQ(0, hlock_lock(A, inc, X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(B, in, S, ASYNC, -1));
	ASSERT_EQ(POLLPRI, poll_pri(A) & POLLPRI);
	ASSERT_EQ(1, hlock_blocking(A, in));
	ASSERT_EQ(0, hlock_blocking(A, inc));
	ASSERT_EQ(0, hlock_unlock(A, inc));
	ASSERT_EQ(0, hlock_wait(B, SETTLE_NS));
	ASSERT_EQ(0, hlock_unlock(B, in));
}

/*
 * A try-lock does not wait, so it tells nobody: neither a new request nor
 * a conversion that gives up uses the grant's one notification, which the
 * next real waiter still gets.
 */
TEST_F_TIMEOUT(lvb, try_tells_nothing, TEST_TMO)
{
	const char *p = P("lvtry");
	unsigned int ev;

	ASSERT_EQ(0, hlock_events_want(A, HLOCK_EVENT_BLOCKING));
	ASSERT_EQ(0, hlock_lock(A, p, S, 0, -1));
	ASSERT_EQ(-EAGAIN, hlock_lock(B, p, X, 0, 0));
	ASSERT_EQ(0, hlock_lock(B, p, S, 0, 0));
	ASSERT_EQ(-EAGAIN, hlock_lock(B, p, X, 0, 0));
	ASSERT_EQ(S, hlock_held(B, p));
	ASSERT_EQ(0, hlock_unlock(B, p));
	ASSERT_EQ(0, poll_events(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(0U, ev);
	ASSERT_EQ(0, hlock_blocking(A, p));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(C, p, X, ASYNC, -1));
	ASSERT_EQ(POLLPRI, poll_pri(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(HLOCK_EVENT_BLOCKING, ev);
	ASSERT_EQ(0, hlock_unlock(C, p));
	ASSERT_EQ(0, hlock_unlock(A, p));
}

/* A locker that asks no more is told nothing, and its pending event goes. */
TEST_F_TIMEOUT(lvb, want_off, TEST_TMO)
{
	const char *p = P("lvoff");
	unsigned int ev;

	ASSERT_EQ(0, hlock_events_want(A, HLOCK_EVENT_BLOCKING));
	ASSERT_EQ(0, hlock_lock(A, p, S, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(B, p, X, ASYNC, -1));
	ASSERT_EQ(POLLPRI, poll_pri(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events_want(A, 0));
	ASSERT_EQ(0, poll_events(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(0U, ev);
	ASSERT_EQ(0, hlock_unlock(B, p));
	ASSERT_EQ(0, hlock_unlock(A, p));
}

/*
 * A lease taken over still makes POLLPRI (and ESTALE once); with blocking
 * notifications asked for, HLOCK_IOC_EVENTS tells the two apart.
 */
TEST_F_TIMEOUT(lvb, lease_takeover_coexists, TEST_TMO)
{
	const char *p = P("lvlease");
	unsigned int ev;
	struct timespec ts = { 0, PAST_SHORT };

	ASSERT_EQ(0, hlock_events_want(A, HLOCK_EVENT_BLOCKING));
	ASSERT_EQ(0, hlock_lock_lease(A, p, S, 0, -1, SHORT_LEASE));
	nanosleep(&ts, NULL);
	ASSERT_EQ(0, hlock_lock(B, p, X, 0, SETTLE_NS));
	ASSERT_EQ(POLLPRI, poll_pri(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(HLOCK_EVENT_STALE | HLOCK_EVENT_BLOCKING, ev);
	/* Still POLLPRI: the stale path is not unlocked yet. */
	ASSERT_EQ(POLLPRI, poll_events(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(HLOCK_EVENT_STALE, ev);
	ASSERT_EQ(-ESTALE, hlock_unlock(A, p));
	ASSERT_EQ(0, poll_events(A) & POLLPRI);
	ASSERT_EQ(0, hlock_events(A, &ev));
	ASSERT_EQ(0U, ev);
	ASSERT_EQ(0, hlock_unlock(B, p));
}

/* HLOCK_IOC_EVENTS and HLOCK_IOC_BLOCKING reject what they do not know. */
TEST_F_TIMEOUT(lvb, events_bad_args, TEST_TMO)
{
	struct hlock_events_args e;
	struct hlock_lock_args a;
	const char *p = P("lvebad");

	memset(&e, 0, sizeof(e));
	ASSERT_EQ(0, raw_ioctl(A, HLOCK_IOC_EVENTS, &e));
	e.flags = 2;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_EVENTS, &e));
	memset(&e, 0, sizeof(e));
	e.want = HLOCK_EVENT_BLOCKING;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_EVENTS, &e));
	e.flags = HLOCK_EVENTS_F_WANT;
	e.want = HLOCK_EVENT_STALE;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_EVENTS, &e));
	memset(&e, 0, sizeof(e));
	e.__pad = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_EVENTS, &e));
	memset(&e, 0, sizeof(e));
	e.reserved[1] = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_EVENTS, &e));
	ASSERT_EQ(-EFAULT, raw_ioctl(A, HLOCK_IOC_EVENTS, unmapped_page()));
	ASSERT_EQ(-EFAULT, hlock_events(A, NULL));

	ASSERT_EQ(0, hlock_lock(A, p, S, 0, -1));
	memset(&a, 0, sizeof(a));
	a.path = (uintptr_t)p;
	a.path_len = strlen(p);
	ASSERT_EQ(0, raw_ioctl(A, HLOCK_IOC_BLOCKING, &a));
	a.mode = S;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_BLOCKING, &a));
	a.mode = 0;
	a.flags = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_BLOCKING, &a));
	a.flags = 0;
	a.timeout_ns = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_BLOCKING, &a));
	a.timeout_ns = 0;
	a.reserved = 1;
	ASSERT_EQ(-EINVAL, raw_ioctl(A, HLOCK_IOC_BLOCKING, &a));
	ASSERT_EQ(0, hlock_unlock(A, p));
}

TEST_HARNESS_MAIN
