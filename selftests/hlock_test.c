// SPDX-License-Identifier: GPL-2.0
/*
 * hlock selftests: the semantics of /dev/hlock, one rule at a time.
 *
 * Each open file description of /dev/hlock is one locker, so a single
 * process opens several lockers and uses HLOCK_F_ASYNC to queue requests
 * in a known order; hlock_wait(fd, 0) then tells who was granted.
 *
 * Conventions:
 *  - ASSERT_GRANTED(fd) collects a grant with hlock_wait(fd, SETTLE_NS):
 *    it returns at once when the grant already happened, and does not
 *    fail spuriously if the module finishes a grant down a path a little
 *    after the releasing call returned.  ASSERT_WAITING(fd) checks
 *    hlock_wait(fd, 0) == -EAGAIN.  Positive checks come before negative
 *    ones.
 *  - Every test uses resource names of its own below the root, except
 *    the tests about the root "" itself; tests run one after the other,
 *    each in its own process, so whatever one test leaves is released
 *    when its process exits.
 *  - "rule:" comments quote the rule of the specification a check relies
 *    on, where the expectation is not obvious.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "hlock.h"

/*
 * The harness's own macros trip -Wextra: TEST() wrappers ignore their
 * variant argument, its SIGALRM handler its ucontext, and the TEST_F()
 * wrapper keeps a local across setjmp().  Silence just those two.
 */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

#define NLOCKERS	10

#define SYSFS_POLICY	"/sys/module/hlock/parameters/grant_policy"

#define FRONT	HLOCK_F_FRONT
#define CF	HLOCK_F_COMPAT_FIRST

/* ------------------------------------------------------------------ */
/* Helpers */

/* 1 if POLLIN shows within @ms, 0 if not, -errno on error. */
static int pollin(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int ret = poll(&p, 1, ms);

	if (ret < 0)
		return -errno;
	return ret > 0 && (p.revents & POLLIN);
}

static void args_init(struct hlock_lock_args *a, const char *path,
		      unsigned int mode, unsigned int flags, int64_t timeout)
{
	memset(a, 0, sizeof(*a));
	a->path = (uint64_t)(uintptr_t)path;
	a->path_len = (uint32_t)strlen(path);
	a->mode = mode;
	a->flags = flags;
	a->timeout_ns = timeout;
}

static int write_policy(const char *name)
{
	return write_file_str(SYSFS_POLICY, name, 0);
}

/* Read the policy name, without the trailing newline. */
static int read_policy(char *buf, size_t size)
{
	return read_file_str(SYSFS_POLICY, buf, size);
}

/* The request of locker @fd has been granted: collect it. */
#define ASSERT_GRANTED(fd) \
	ASSERT_EQ(0, hlock_wait(fd, SETTLE_NS)) \
		TH_LOG("locker %s should have been granted", #fd)

/* The request of locker @fd is still waiting. */
#define ASSERT_WAITING(fd) \
	ASSERT_EQ(-EAGAIN, hlock_wait(fd, 0)) \
		TH_LOG("locker %s should still be waiting", #fd)

/* An async request that must queue. */
#define ASSERT_QUEUED(fd, path, mode, flags) \
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd, path, mode, (flags) | ASYNC, 0)) \
		TH_LOG("%s: %s on \"%s\" should queue", #fd, mname(mode), path)

#define ASSERT_HELD(fd, path, mode) \
	ASSERT_EQ(mode, hlock_held(fd, path)) \
		TH_LOG("%s holds %s on \"%s\", expected %s", #fd, \
		       mname(hlock_held(fd, path)), path, mname(mode))

#define ASSERT_TRY(fd, path, mode, expect) \
	ASSERT_EQ(expect, hlock_lock(fd, path, mode, 0, 0)) \
		TH_LOG("%s: try %s on \"%s\"", #fd, mname(mode), path)

#define ASSERT_UNLOCK(fd, path, remain) \
	ASSERT_EQ(remain, hlock_unlock(fd, path)) \
		TH_LOG("%s: unlock \"%s\"", #fd, path)

/* The generic fixture: NLOCKERS lockers. */
FIXTURE(hl) {
	int fd[NLOCKERS];
};

FIXTURE_SETUP(hl)
{
	int i;

	for (i = 0; i < NLOCKERS; i++)
		self->fd[i] = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	for (i = 0; i < NLOCKERS; i++) {
		self->fd[i] = hlock_open();
		ASSERT_LE(0, self->fd[i]) TH_LOG("hlock_open: %s",
						 strerror(-self->fd[i]));
	}
}

FIXTURE_TEARDOWN(hl)
{
	int i;

	for (i = 0; i < NLOCKERS; i++)
		if (self->fd[i] >= 0)
			close(self->fd[i]);
}

/* ------------------------------------------------------------------ */
/* Things that need no device */

TEST(mode_names)
{
	EXPECT_EQ(0, HLOCK_NL);
	EXPECT_EQ(1, HLOCK_IS);
	EXPECT_EQ(2, HLOCK_IX);
	EXPECT_EQ(3, HLOCK_S);
	EXPECT_EQ(4, HLOCK_SIX);
	EXPECT_EQ(5, HLOCK_X);
	EXPECT_EQ(6, HLOCK_NR_MODES);
	EXPECT_STREQ("NL", hlock_mode_name(HLOCK_NL));
	EXPECT_STREQ("IS", hlock_mode_name(HLOCK_IS));
	EXPECT_STREQ("IX", hlock_mode_name(HLOCK_IX));
	EXPECT_STREQ("S", hlock_mode_name(HLOCK_S));
	EXPECT_STREQ("SIX", hlock_mode_name(HLOCK_SIX));
	EXPECT_STREQ("X", hlock_mode_name(HLOCK_X));
	EXPECT_STREQ("?", hlock_mode_name(-1));
	EXPECT_STREQ("?", hlock_mode_name(6));
	EXPECT_STREQ("?", hlock_mode_name(INT_MAX));

	/* lib/hlock.c: parsing is case-insensitive and knows IS..X. */
	EXPECT_EQ(HLOCK_IS, hlock_mode_parse("IS"));
	EXPECT_EQ(HLOCK_IX, hlock_mode_parse("ix"));
	EXPECT_EQ(HLOCK_S, hlock_mode_parse("S"));
	EXPECT_EQ(HLOCK_SIX, hlock_mode_parse("six"));
	EXPECT_EQ(HLOCK_X, hlock_mode_parse("X"));
	EXPECT_EQ(-EINVAL, hlock_mode_parse("NL"));
	EXPECT_EQ(-EINVAL, hlock_mode_parse(""));
	EXPECT_EQ(-EINVAL, hlock_mode_parse("SIXX"));
	EXPECT_EQ(-EINVAL, hlock_mode_parse(NULL));

	/* HLOCK_PATH_MAX: 8 names of 255 bytes and 7 slashes. */
	EXPECT_EQ(2047, HLOCK_PATH_MAX);
}

TEST(device_node)
{
	struct stat st;

	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	ASSERT_EQ(0, stat(HLOCK_DEVICE, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0660, (int)(st.st_mode & 0777))
		TH_LOG("mode is %04o", (unsigned int)(st.st_mode & 07777));
}

/* ------------------------------------------------------------------ */
/* GET_INFO */

TEST_F_TIMEOUT(hl, info, TEST_TMO)
{
	struct hlock_info info;
	char policy[64];
	int i;

	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(0, hlock_info(self->fd[0], &info));
	EXPECT_EQ(HLOCK_ABI_VERSION, (int)info.abi_version);
	EXPECT_EQ(8, (int)info.max_depth);
	EXPECT_EQ(HLOCK_MAX_DEPTH, (int)info.max_depth);
	EXPECT_EQ(255, (int)info.name_max);
	EXPECT_EQ(HLOCK_PATH_MAX, (int)info.path_max);
	EXPECT_EQ(HLOCK_F_ALL, info.flags);
	/* rule: the default policy is batch; the fifo tests restore it. */
	EXPECT_EQ(HLOCK_POLICY_BATCH, (int)info.grant_policy);
	EXPECT_EQ(HLOCK_FEAT_URING | HLOCK_FEAT_TICKETS | HLOCK_FEAT_YIELD |
		  HLOCK_FEAT_LEASE | HLOCK_FEAT_TOKEN | HLOCK_FEAT_DESCRIBE |
		  HLOCK_FEAT_LVB | HLOCK_FEAT_BLOCKING | HLOCK_FEAT_CLUSTER |
		  HLOCK_FEAT_CLUSTER_BIND | HLOCK_FEAT_OWNER |
		  HLOCK_FEAT_REFUSE,
		  info.features);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0ULL, (unsigned long long)info.reserved[i]);

	EXPECT_EQ(-EFAULT, raw_ioctl(self->fd[0], HLOCK_IOC_GET_INFO, NULL));
	EXPECT_EQ(-EFAULT, raw_ioctl(self->fd[0], HLOCK_IOC_GET_INFO,
				     (void *)1));

	if (access(SYSFS_POLICY, R_OK) == 0) {
		ASSERT_EQ(0, read_policy(policy, sizeof(policy)));
		EXPECT_STREQ("batch", policy);
	}
}

/* ------------------------------------------------------------------ */
/* 1. The compatibility matrix: every ordered pair of lockable modes */

FIXTURE(compat) {
	int a, b;
	char path[64];
};

FIXTURE_VARIANT(compat) {
	int held;
	int req;
	bool compatible;
};

/*
 * rule: IS with IS, IX, S, SIX; IX with IS, IX; S with IS, S; SIX with
 * IS; X with nothing.
 */
#define COMPAT(h, r, c) \
	FIXTURE_VARIANT_ADD(compat, h##_##r) { \
		.held = HLOCK_##h, .req = HLOCK_##r, .compatible = c, \
	}

COMPAT(IS, IS, true);
COMPAT(IS, IX, true);
COMPAT(IS, S, true);
COMPAT(IS, SIX, true);
COMPAT(IS, X, false);
COMPAT(IX, IS, true);
COMPAT(IX, IX, true);
COMPAT(IX, S, false);
COMPAT(IX, SIX, false);
COMPAT(IX, X, false);
COMPAT(S, IS, true);
COMPAT(S, IX, false);
COMPAT(S, S, true);
COMPAT(S, SIX, false);
COMPAT(S, X, false);
COMPAT(SIX, IS, true);
COMPAT(SIX, IX, false);
COMPAT(SIX, S, false);
COMPAT(SIX, SIX, false);
COMPAT(SIX, X, false);
COMPAT(X, IS, false);
COMPAT(X, IX, false);
COMPAT(X, S, false);
COMPAT(X, SIX, false);
COMPAT(X, X, false);

FIXTURE_SETUP(compat)
{
	self->a = self->b = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	snprintf(self->path, sizeof(self->path), "compat/%s_%s",
		 hlock_mode_name(variant->held), hlock_mode_name(variant->req));
	self->a = hlock_open();
	ASSERT_LE(0, self->a);
	self->b = hlock_open();
	ASSERT_LE(0, self->b);
}

FIXTURE_TEARDOWN(compat)
{
	if (self->a >= 0)
		close(self->a);
	if (self->b >= 0)
		close(self->b);
}

TEST_F_TIMEOUT(compat, try, TEST_TMO)
{
	const char *p = self->path;
	int ret;

	ASSERT_EQ(0, hlock_lock(self->a, p, variant->held, 0, 0));
	ASSERT_EQ(variant->held, hlock_held(self->a, p));

	ret = hlock_lock(self->b, p, variant->req, 0, 0);
	if (variant->compatible) {
		ASSERT_EQ(0, ret) TH_LOG("%s held, try %s", mname(variant->held),
					 mname(variant->req));
		ASSERT_EQ(variant->req, hlock_held(self->b, p));
		ASSERT_EQ(0, hlock_unlock(self->b, p));
	} else {
		ASSERT_EQ(-EAGAIN, ret) TH_LOG("%s held, try %s",
					       mname(variant->held),
					       mname(variant->req));
		/* rule: a failed lock leaves the locker as it was. */
		ASSERT_EQ(NL, hlock_held(self->b, p));
		ASSERT_EQ(NL, hlock_held(self->b, "compat"));
		ASSERT_EQ(NL, hlock_held(self->b, ""));
		ASSERT_EQ(-ENOENT, hlock_wait(self->b, 0));
	}
	ASSERT_EQ(0, hlock_unlock(self->a, p));
	ASSERT_EQ(NL, hlock_held(self->a, p));
	/* Now free: B's request is granted whatever it is. */
	ASSERT_EQ(0, hlock_lock(self->b, p, variant->req, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->b, p));
}

/* ------------------------------------------------------------------ */
/* 2. FIFO order of X waiters */

TEST_F_TIMEOUT(hl, fifo_six_x_waiters, TEST_TMO)
{
	const char *p = "fifo6/r";
	int h = self->fd[0];
	int *w = &self->fd[1];
	int i, j;

	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(-EINPROGRESS, hlock_lock(w[i], p, X, ASYNC, 0))
			TH_LOG("waiter %d", i + 1);
	}
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(-EAGAIN, hlock_wait(w[i], 0)) TH_LOG("waiter %d", i + 1);
	}
	ASSERT_UNLOCK(h, p, 0);
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(0, hlock_wait(w[i], SETTLE_NS))
			TH_LOG("waiter %d should be granted now", i + 1);
		for (j = i + 1; j < 6; j++) {
			ASSERT_EQ(-EAGAIN, hlock_wait(w[j], 0))
				TH_LOG("waiter %d granted along with waiter %d",
				       j + 1, i + 1);
		}
		ASSERT_EQ(X, hlock_held(w[i], p));
		ASSERT_EQ(0, hlock_unlock(w[i], p));
	}
}

/* ------------------------------------------------------------------ */
/* 3. The batch policy */

static const int queue_modes[6] = { IS, IS, X, X, S, IS };

TEST_F_TIMEOUT(hl, batch_grant, TEST_TMO)
{
	const char *p = "batch/r";
	struct hlock_info info;
	int h = self->fd[0];
	int *q = &self->fd[1];	/* q[0..5]: IS IS X X S IS */
	int late = self->fd[7], probe = self->fd[8];
	int i;

	ASSERT_EQ(0, hlock_info(h, &info));
	ASSERT_EQ(HLOCK_POLICY_BATCH, (int)info.grant_policy)
		TH_LOG("grant_policy is not batch (did a fifo test not restore it?)");

	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(-EINPROGRESS, hlock_lock(q[i], p, queue_modes[i],
						   ASYNC, 0))
			TH_LOG("queue entry %d", i + 1);
	}
	ASSERT_UNLOCK(h, p, 0);

	/* rule: batch grants the head and every later compatible one. */
	ASSERT_GRANTED(q[0]);
	ASSERT_GRANTED(q[1]);
	ASSERT_GRANTED(q[4]);
	ASSERT_GRANTED(q[5]);
	ASSERT_WAITING(q[2]);
	ASSERT_WAITING(q[3]);
	ASSERT_HELD(q[0], p, IS);
	ASSERT_HELD(q[4], p, S);

	/*
	 * rule: a new request waits if it conflicts with a waiting mode
	 * (the X's) while no granted request carries compatible-first.
	 */
	ASSERT_QUEUED(late, p, S, 0);
	ASSERT_TRY(probe, p, IS, -EAGAIN);

	ASSERT_UNLOCK(q[0], p, 0);
	ASSERT_WAITING(q[2]);
	ASSERT_UNLOCK(q[1], p, 0);
	ASSERT_WAITING(q[2]);
	ASSERT_UNLOCK(q[4], p, 0);
	ASSERT_WAITING(q[2]);
	ASSERT_UNLOCK(q[5], p, 0);

	/* The first X only; the late S queued behind both X's. */
	ASSERT_GRANTED(q[2]);
	ASSERT_WAITING(q[3]);
	ASSERT_WAITING(late);

	ASSERT_UNLOCK(q[2], p, 0);
	ASSERT_GRANTED(q[3]);
	ASSERT_WAITING(late);

	ASSERT_UNLOCK(q[3], p, 0);
	ASSERT_GRANTED(late);
	ASSERT_HELD(late, p, S);
}

/* ------------------------------------------------------------------ */
/* 5. Enqueue at front */

TEST_F_TIMEOUT(hl, front, TEST_TMO)
{
	const char *p = "front/r";
	int h = self->fd[0], a = self->fd[1], b = self->fd[2];
	int c = self->fd[3];

	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_QUEUED(a, p, S, 0);
	ASSERT_QUEUED(b, p, S, 0);
	ASSERT_QUEUED(c, p, X, FRONT);
	ASSERT_UNLOCK(h, p, 0);

	ASSERT_GRANTED(c);
	ASSERT_WAITING(a);
	ASSERT_WAITING(b);
	ASSERT_HELD(c, p, X);

	ASSERT_UNLOCK(c, p, 0);
	ASSERT_GRANTED(a);
	ASSERT_GRANTED(b);
}

/*
 * rule: flags apply to the requested resource, not to the intents on
 * ancestors.  A's IX intent on "fi" queues at the back of "fi"'s queue.
 */
TEST_F_TIMEOUT(hl, front_not_on_intents, TEST_TMO)
{
	int h = self->fd[0], a = self->fd[1], b = self->fd[2];
	int c = self->fd[3];

	ASSERT_EQ(0, hlock_lock(h, "fi", X, 0, 0));
	ASSERT_QUEUED(b, "fi", S, 0);
	ASSERT_QUEUED(c, "fi", X, 0);
	ASSERT_QUEUED(a, "fi/r", X, FRONT);
	/* queue of "fi": S(b) X(c) IX(a) */
	ASSERT_UNLOCK(h, "fi", 0);

	ASSERT_GRANTED(b);
	ASSERT_WAITING(c);
	ASSERT_WAITING(a);

	ASSERT_UNLOCK(b, "fi", 0);
	ASSERT_GRANTED(c);
	ASSERT_WAITING(a);

	ASSERT_UNLOCK(c, "fi", 0);
	ASSERT_GRANTED(a);
	ASSERT_HELD(a, "fi/r", X);
	ASSERT_HELD(a, "fi", IX);
}

/* rule: S, SIX and X on the root "" get FRONT automatically. */
TEST_F_TIMEOUT(hl, root_s_front, TEST_TMO)
{
	int h = self->fd[0], b = self->fd[1], c = self->fd[2];

	ASSERT_EQ(0, hlock_lock(h, "", X, 0, 0));
	ASSERT_QUEUED(b, "rf/r", X, 0);		/* IX at the root */
	ASSERT_QUEUED(c, "", S, 0);		/* front: S(c) IX(b) */
	ASSERT_UNLOCK(h, "", 0);

	ASSERT_GRANTED(c);
	ASSERT_WAITING(b);

	ASSERT_UNLOCK(c, "", 0);
	ASSERT_GRANTED(b);
	ASSERT_HELD(b, "rf/r", X);
	ASSERT_HELD(b, "rf", IX);
	ASSERT_HELD(b, "", IX);
}

/* ------------------------------------------------------------------ */
/* 6. Compatible-first */

TEST_F_TIMEOUT(hl, compat_first_bypass, TEST_TMO)
{
	const char *p = "cf/r";
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];
	int d = self->fd[3], e = self->fd[4];

	ASSERT_EQ(0, hlock_lock(a, p, S, CF, 0));
	ASSERT_QUEUED(b, p, X, 0);
	/* rule: while a CF request is granted, compatible ones get in. */
	ASSERT_TRY(c, p, S, 0);
	ASSERT_TRY(e, p, IS, 0);
	ASSERT_WAITING(b);

	/* rule: after the CF request is released, back to FIFO. */
	ASSERT_UNLOCK(a, p, 0);
	ASSERT_WAITING(b);
	ASSERT_TRY(d, p, S, -EAGAIN);
	ASSERT_TRY(d, p, IS, -EAGAIN);

	ASSERT_UNLOCK(c, p, 0);
	ASSERT_WAITING(b);
	ASSERT_UNLOCK(e, p, 0);
	ASSERT_GRANTED(b);
}

/* rule: COMPAT_FIRST has no effect while the request is only waiting. */
TEST_F_TIMEOUT(hl, compat_first_waiting, TEST_TMO)
{
	const char *p = "cfw/r";
	int h = self->fd[0], a = self->fd[1], b = self->fd[2];
	int c = self->fd[3];

	ASSERT_EQ(0, hlock_lock(h, p, IX, 0, 0));
	ASSERT_QUEUED(a, p, S, CF);
	ASSERT_QUEUED(b, p, X, 0);
	/* IS is compatible with granted IX and waiting S, not waiting X. */
	ASSERT_TRY(c, p, IS, -EAGAIN);

	ASSERT_UNLOCK(h, p, 0);
	ASSERT_GRANTED(a);
	ASSERT_WAITING(b);
	/* Now A's CF request is granted: compatible requests get in. */
	ASSERT_TRY(c, p, IS, 0);
	ASSERT_WAITING(b);
}

/* rule: flags apply to the requested resource, not to the intents. */
TEST_F_TIMEOUT(hl, compat_first_not_on_intents, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];

	ASSERT_EQ(0, hlock_lock(a, "cfi/r", S, CF, 0));
	ASSERT_QUEUED(b, "cfi", X, 0);
	/* C's IS on "cfi" conflicts with the waiting X; A's IS there is no CF */
	ASSERT_TRY(c, "cfi/q", IS, -EAGAIN);
	ASSERT_HELD(c, "cfi", NL);
	ASSERT_HELD(c, "", NL);

	ASSERT_UNLOCK(a, "cfi/r", 0);
	ASSERT_GRANTED(b);
}

/* rule: S, SIX and X on the root "" get COMPAT_FIRST automatically. */
TEST_F_TIMEOUT(hl, root_s_compat_first, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];
	int d = self->fd[3];

	ASSERT_EQ(0, hlock_lock(a, "", S, 0, 0));
	ASSERT_QUEUED(b, "", X, 0);
	ASSERT_TRY(c, "", S, 0);
	ASSERT_TRY(d, "rcf/x", IS, 0);
	ASSERT_WAITING(b);

	ASSERT_UNLOCK(a, "", 0);
	ASSERT_UNLOCK(c, "", 0);
	ASSERT_WAITING(b);
	ASSERT_UNLOCK(d, "rcf/x", 0);
	ASSERT_GRANTED(b);
	ASSERT_HELD(b, "", X);
}

TEST_F_TIMEOUT(hl, root_six_compat_first, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];
	int d = self->fd[3];

	ASSERT_EQ(0, hlock_lock(a, "", SIX, 0, 0));
	ASSERT_QUEUED(b, "", X, 0);
	ASSERT_TRY(c, "rcf/y", IS, 0);		/* IS at the root */
	ASSERT_TRY(d, "", S, -EAGAIN);		/* S conflicts with SIX */
	ASSERT_WAITING(b);

	ASSERT_UNLOCK(a, "", 0);
	ASSERT_WAITING(b);
	ASSERT_UNLOCK(c, "rcf/y", 0);
	ASSERT_GRANTED(b);
}

/*
 * rule: the root's automatic COMPAT_FIRST also comes with an S reached by
 * converting the IS a collection lock took there.
 */
TEST_F_TIMEOUT(hl, root_s_by_conversion_compat_first, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];

	ASSERT_EQ(0, hlock_lock(a, "rcv/x", IS, 0, 0));
	ASSERT_HELD(a, "", IS);
	ASSERT_EQ(0, hlock_lock(a, "", S, 0, 0));	/* IS -> S */
	ASSERT_HELD(a, "", S);
	ASSERT_QUEUED(b, "", X, 0);
	ASSERT_TRY(c, "", S, 0);			/* passes the X */
	ASSERT_UNLOCK(c, "", 0);

	/* Its own S released, a keeps S for its collection's intent. */
	ASSERT_UNLOCK(a, "", 0);
	ASSERT_HELD(a, "", S);
	ASSERT_UNLOCK(a, "rcv/x", 0);
	ASSERT_GRANTED(b);
}

/* ------------------------------------------------------------------ */
/* 7. Conversions */

/* rule: a conversion compatible with the other holders wins over the queue. */
TEST_F_TIMEOUT(hl, conversion_wins_over_queue, TEST_TMO)
{
	const char *p = "cv1/r";
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];

	ASSERT_EQ(0, hlock_lock(a, p, IS, 0, 0));
	ASSERT_EQ(0, hlock_lock(b, p, IS, 0, 0));
	ASSERT_QUEUED(c, p, X, 0);
	ASSERT_TRY(a, p, IX, 0);
	ASSERT_HELD(a, p, IX);
	ASSERT_HELD(a, "cv1", IX);
	ASSERT_HELD(a, "", IX);
	ASSERT_WAITING(c);

	/* rule: a partial unlock never weakens the mode. */
	ASSERT_UNLOCK(a, p, 1);
	ASSERT_HELD(a, p, IX);
	ASSERT_UNLOCK(a, p, 0);
	ASSERT_HELD(a, p, NL);
	ASSERT_WAITING(c);
	ASSERT_UNLOCK(b, p, 0);
	ASSERT_GRANTED(c);
}

/* rule: on cancel or timeout a conversion falls back to H, still held. */
TEST_F_TIMEOUT(hl, conversion_cancel_and_timeout, TEST_TMO)
{
	const char *p = "cv2/r";
	int a = self->fd[0], b = self->fd[1], d = self->fd[2];
	int64_t t0, dt;

	ASSERT_EQ(0, hlock_lock(a, p, S, 0, 0));
	ASSERT_EQ(0, hlock_lock(b, p, S, 0, 0));

	ASSERT_QUEUED(a, p, X, 0);
	/* rule: a pending conversion reports the old mode. */
	ASSERT_HELD(a, p, S);
	/*
	 * rule: unlock cancels it and returns the acquisitions left; the
	 * intent it converted on the ancestors (IS -> IX) is undone too, as
	 * for any withdrawn request ("intents it took or converted on
	 * ancestors are undone").
	 */
	ASSERT_UNLOCK(a, p, 1);
	ASSERT_HELD(a, p, S);
	ASSERT_HELD(a, "cv2", IS);
	ASSERT_HELD(a, "", IS);
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	/* The root intent went back to IS: a root S gets in. */
	ASSERT_TRY(d, "", S, 0);
	ASSERT_UNLOCK(d, "", 0);

	t0 = now_ns();
	ASSERT_EQ(-ETIMEDOUT, hlock_lock(a, p, X, 0, 50 * MS));
	dt = now_ns() - t0;
	EXPECT_LE(45 * MS, dt) TH_LOG("timed out after %lld ns", (long long)dt);
	ASSERT_HELD(a, p, S);
	ASSERT_HELD(a, "cv2", IS);
	ASSERT_HELD(a, "", IS);
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_TRY(d, "", S, 0);
	ASSERT_UNLOCK(d, "", 0);

	ASSERT_UNLOCK(a, p, 0);
	ASSERT_HELD(a, p, NL);
	ASSERT_UNLOCK(b, p, 0);
}

/* rule: sup(S, IX) = SIX. */
TEST_F_TIMEOUT(hl, conversion_s_ix_six, TEST_TMO)
{
	const char *p = "cv3/r";
	int a = self->fd[0], b = self->fd[1];

	ASSERT_EQ(0, hlock_lock(a, p, S, 0, 0));
	ASSERT_TRY(a, p, IX, 0);
	ASSERT_HELD(a, p, SIX);
	ASSERT_HELD(a, "cv3", IX);
	ASSERT_HELD(a, "", IX);

	ASSERT_TRY(b, p, IX, -EAGAIN);
	ASSERT_TRY(b, p, S, -EAGAIN);
	ASSERT_TRY(b, p, IS, 0);
	/* B's conversion IS -> S conflicts with SIX; B keeps IS. */
	ASSERT_TRY(b, p, S, -EAGAIN);
	ASSERT_HELD(b, p, IS);

	ASSERT_UNLOCK(a, p, 1);
	ASSERT_HELD(a, p, SIX);
	ASSERT_UNLOCK(a, p, 0);
	ASSERT_UNLOCK(b, p, 0);
}

/*
 * Two S holders both converting to X: the second is refused with EDEADLK
 * at once (hlock_deadlock_test has the rest) and keeps its S; the first
 * waits on, and its timeouts behave as any.
 */
TEST_F_TIMEOUT(hl, conversion_deadlock_refused, TEST_TMO)
{
	const char *p = "cv4/r";
	int a = self->fd[0], b = self->fd[1];

	ASSERT_EQ(0, hlock_lock(a, p, S, 0, 0));
	ASSERT_EQ(0, hlock_lock(b, p, S, 0, 0));
	ASSERT_QUEUED(a, p, X, 0);
	ASSERT_EQ(-EDEADLK, hlock_lock(b, p, X, 0, -1));
	ASSERT_HELD(b, p, S);
	/* rule: hlock_wait -ETIMEDOUT leaves the request queued. */
	ASSERT_EQ(-ETIMEDOUT, hlock_wait(a, 100 * MS));
	ASSERT_WAITING(a);
	ASSERT_UNLOCK(a, p, 1);
	ASSERT_HELD(a, p, S);
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));

	ASSERT_UNLOCK(b, p, 0);
	ASSERT_TRY(a, p, X, 0);
	ASSERT_HELD(a, p, X);
}

/*
 * rule: while a conversion waits, new requests that conflict with its
 * target mode queue; pending conversions are granted before the queue.
 */
TEST_F_TIMEOUT(hl, conversion_blocks_new_and_goes_first, TEST_TMO)
{
	const char *p = "cv5/r";
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];
	int d = self->fd[3];

	ASSERT_EQ(0, hlock_lock(a, p, S, 0, 0));
	ASSERT_EQ(0, hlock_lock(b, p, S, 0, 0));
	ASSERT_QUEUED(a, p, X, 0);

	ASSERT_TRY(d, p, S, -EAGAIN);
	ASSERT_TRY(d, p, IS, -EAGAIN);	/* IS conflicts with X too */
	ASSERT_HELD(d, "cv5", NL);

	/* Even a FRONT request queues behind the pending conversion. */
	ASSERT_QUEUED(c, p, X, FRONT);

	ASSERT_UNLOCK(b, p, 0);
	ASSERT_GRANTED(a);
	ASSERT_HELD(a, p, X);
	ASSERT_WAITING(c);

	ASSERT_UNLOCK(a, p, 1);
	ASSERT_HELD(a, p, X);
	ASSERT_WAITING(c);
	ASSERT_UNLOCK(a, p, 0);
	ASSERT_GRANTED(c);
}

/*
 * Defect: a conversion granted at once that adds COMPAT_FIRST ran no
 * grant pass, so a later arrival overtook an earlier compatible waiter.
 *
 * A holds IS on the root (for "cvg/x"); B's root X waits behind it; C's
 * root S (FRONT by itself) queues ahead of B's X but waits, as it
 * conflicts with that waiting X and nothing granted is COMPAT_FIRST.  A
 * then converts its IS to S: granted at once, with the root S's automatic
 * COMPAT_FIRST.  From now on a new root S (D's) gets in at once, so C's,
 * compatible with every holder and queued earlier, must have got in too.
 */
TEST_F_TIMEOUT(hl, conversion_compat_first_grants_waiters, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];
	int d = self->fd[3];
	int ret_c, ret_d;

	ASSERT_EQ(0, hlock_lock(a, "cvg/x", IS, 0, 0));
	ASSERT_HELD(a, "", IS);
	ASSERT_QUEUED(b, "", X, 0);
	ASSERT_QUEUED(c, "", S, 0);		/* queue: S(c) X(b) */

	ASSERT_EQ(0, hlock_lock(a, "", S, 0, 0));	/* IS -> S at once */
	ASSERT_HELD(a, "", S);

	/* A new arrival, and only then a look at C: did D overtake C? */
	ret_d = hlock_lock(d, "", S, 0, 0);
	ret_c = hlock_wait(c, 0);
	EXPECT_FALSE(ret_d == 0 && ret_c == -EAGAIN)
		TH_LOG("D's new root S was granted at once while C's, queued earlier, still waits");
	ASSERT_EQ(0, ret_c)
		TH_LOG("C's root S should have been granted by A's conversion to a COMPAT_FIRST S: %s",
		       strerror(-ret_c));
	ASSERT_EQ(0, ret_d);
	ASSERT_HELD(c, "", S);
	ASSERT_WAITING(b);

	ASSERT_UNLOCK(c, "", 0);
	ASSERT_UNLOCK(d, "", 0);
	ASSERT_UNLOCK(a, "", 0);
	ASSERT_UNLOCK(a, "cvg/x", 0);
	ASSERT_GRANTED(b);
	ASSERT_HELD(b, "", X);
}

/* ------------------------------------------------------------------ */
/* 8. Recursion keeps the strongest mode */

TEST_F_TIMEOUT(hl, recursion, TEST_TMO)
{
	const char *p = "rc/r";
	int a = self->fd[0], b = self->fd[1];

	ASSERT_EQ(0, hlock_lock(a, p, X, 0, 0));
	ASSERT_TRY(a, p, S, 0);
	ASSERT_HELD(a, p, X);
	ASSERT_UNLOCK(a, p, 1);
	ASSERT_HELD(a, p, X);
	ASSERT_UNLOCK(a, p, 0);
	ASSERT_HELD(a, p, NL);
	ASSERT_HELD(a, "rc", NL);
	ASSERT_HELD(a, "", NL);
	ASSERT_EQ(-ENOENT, hlock_unlock(a, p));

	/* rule: a recursive request is always granted at once. */
	ASSERT_EQ(0, hlock_lock(a, p, S, 0, 0));
	ASSERT_QUEUED(b, p, X, 0);
	ASSERT_TRY(a, p, S, 0);
	ASSERT_TRY(a, p, IS, 0);	/* sup(S, IS) = S */
	ASSERT_HELD(a, p, S);
	ASSERT_UNLOCK(a, p, 2);
	ASSERT_UNLOCK(a, p, 1);
	ASSERT_WAITING(b);
	ASSERT_UNLOCK(a, p, 0);
	ASSERT_GRANTED(b);
}

/* ------------------------------------------------------------------ */
/* 9. Downgrade */

TEST_F_TIMEOUT(hl, downgrade_grants_waiters, TEST_TMO)
{
	const char *p = "dg/r";
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];

	ASSERT_EQ(0, hlock_lock(a, p, X, 0, 0));
	ASSERT_QUEUED(b, p, S, 0);
	ASSERT_QUEUED(c, p, X, 0);
	ASSERT_EQ(0, hlock_downgrade(a, p, S));
	ASSERT_GRANTED(b);
	ASSERT_WAITING(c);
	ASSERT_HELD(a, p, S);

	ASSERT_EQ(0, hlock_downgrade(a, p, IS));
	ASSERT_HELD(a, p, IS);
	ASSERT_WAITING(c);
	ASSERT_UNLOCK(a, p, 0);
	ASSERT_WAITING(c);
	ASSERT_UNLOCK(b, p, 0);
	ASSERT_GRANTED(c);
}

TEST_F_TIMEOUT(hl, downgrade_rules, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1];

	/* rule: a mode not covered (sup(H, mode) != H) is -EINVAL. */
	ASSERT_EQ(0, hlock_lock(a, "dr/i", IX, 0, 0));
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/i", S));
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/i", SIX));
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/i", X));
	/* rule: bad modes (NL, > X) are -EINVAL for downgrade too. */
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/i", NL));
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/i", 6));
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/i", -1));
	ASSERT_HELD(a, "dr/i", IX);
	ASSERT_EQ(0, hlock_downgrade(a, "dr/i", IS));
	ASSERT_HELD(a, "dr/i", IS);

	/*
	 * rule: below what held descendants need is -EINVAL: holding
	 * "dr/p/c" X, "dr/p" needs IX.  S covers no IX (sup(S, IX) = SIX).
	 */
	ASSERT_EQ(0, hlock_lock(a, "dr/p", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(a, "dr/p/c", X, 0, 0));
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/p", IS));
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/p", S));
	ASSERT_HELD(a, "dr/p", X);
	ASSERT_EQ(0, hlock_downgrade(a, "dr/p", SIX));
	ASSERT_HELD(a, "dr/p", SIX);
	ASSERT_TRY(b, "dr/p", IS, 0);
	ASSERT_UNLOCK(b, "dr/p", 0);
	ASSERT_EQ(0, hlock_downgrade(a, "dr/p", IX));
	ASSERT_HELD(a, "dr/p", IX);
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/p", IS));
	EXPECT_EQ(-EINVAL, hlock_downgrade(a, "dr/p", X));
	/* rule: "to a covered mode (sup(H, mode) == H)": H itself is covered. */
	EXPECT_EQ(0, hlock_downgrade(a, "dr/p", IX));
	ASSERT_HELD(a, "dr/p", IX);
	ASSERT_HELD(a, "dr/p/c", X);

	/* Without the descendant, IS is fine. */
	ASSERT_UNLOCK(a, "dr/p/c", 0);
	ASSERT_EQ(0, hlock_downgrade(a, "dr/p", IS));
	ASSERT_HELD(a, "dr/p", IS);

	/* rule: not held is -ENOENT. */
	EXPECT_EQ(-ENOENT, hlock_downgrade(a, "dr/q", S));
	EXPECT_EQ(-ENOENT, hlock_downgrade(b, "dr/p", IS));
}

/* ------------------------------------------------------------------ */
/* 10. The hierarchy */

TEST_F_TIMEOUT(hl, hier_coll_x_blocks_db_s, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];

	ASSERT_EQ(0, hlock_lock(a, "hc/c", X, 0, 0));
	ASSERT_HELD(a, "hc/c", X);
	ASSERT_HELD(a, "hc", IX);
	ASSERT_HELD(a, "", IX);
	/* rule: an intent held only because of a descendant is not locked there. */
	ASSERT_EQ(-ENOENT, hlock_unlock(a, "hc"));
	ASSERT_EQ(-ENOENT, hlock_unlock(a, ""));
	ASSERT_HELD(a, "hc", IX);

	ASSERT_TRY(b, "hc", S, -EAGAIN);
	ASSERT_HELD(b, "hc", NL);
	ASSERT_HELD(b, "", NL);
	ASSERT_TRY(b, "hc", IS, 0);
	ASSERT_HELD(b, "hc", IS);

	ASSERT_TRY(c, "hc/c", IS, -EAGAIN);
	ASSERT_TRY(c, "hc/d", X, 0);		/* a sibling is independent */
}

TEST_F_TIMEOUT(hl, hier_db_x_waits_for_coll, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];

	ASSERT_EQ(0, hlock_lock(a, "hd/c", IS, 0, 0));
	ASSERT_QUEUED(b, "hd", X, 0);
	ASSERT_UNLOCK(a, "hd/c", 0);
	ASSERT_GRANTED(b);
	ASSERT_HELD(b, "hd", X);
	ASSERT_HELD(b, "", IX);
	ASSERT_TRY(c, "hd/c", IS, -EAGAIN);
	ASSERT_HELD(c, "hd", NL);
	ASSERT_HELD(c, "", NL);
}

TEST_F_TIMEOUT(hl, hier_root_x, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1], c = self->fd[2];

	ASSERT_EQ(0, hlock_lock(a, "hr/b", S, 0, 0));
	ASSERT_QUEUED(b, "", X, 0);
	/*
	 * rule: C's IS on the root conflicts with the waiting X, and the
	 * root X's automatic COMPAT_FIRST has no effect while it waits.
	 */
	ASSERT_TRY(c, "hz", IS, -EAGAIN);
	ASSERT_HELD(c, "", NL);

	ASSERT_UNLOCK(a, "hr/b", 0);
	ASSERT_GRANTED(b);
	ASSERT_TRY(c, "hz", IS, -EAGAIN);
	ASSERT_UNLOCK(b, "", 0);
	ASSERT_TRY(c, "hz", IS, 0);
}

/* ------------------------------------------------------------------ */
/* 11. Async, poll and hlock_wait */

TEST_F_TIMEOUT(hl, async_poll_wait, TEST_TMO)
{
	int a = self->fd[0], h = self->fd[1];
	int64_t t0, dt;

	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_EQ(-ENOENT, hlock_wait(a, 10 * MS));
	ASSERT_EQ(0, pollin(a, 0));

	/* rule: hlock_lock returns 0 when granted at once, even async. */
	ASSERT_EQ(0, hlock_lock(a, "asy/free", S, ASYNC, 0));
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_EQ(0, pollin(a, 0));
	ASSERT_HELD(a, "asy/free", S);
	ASSERT_UNLOCK(a, "asy/free", 0);

	ASSERT_EQ(0, hlock_lock(h, "", X, 0, 0));
	ASSERT_QUEUED(a, "asy/c", S, 0);	/* queues at the root */
	ASSERT_EQ(0, pollin(a, 0));
	ASSERT_WAITING(a);
	t0 = now_ns();
	ASSERT_EQ(-ETIMEDOUT, hlock_wait(a, 50 * MS));
	dt = now_ns() - t0;
	EXPECT_LE(45 * MS, dt) TH_LOG("timed out after %lld ns", (long long)dt);
	/* rule: hlock_wait never withdraws the request. */
	ASSERT_WAITING(a);
	/* rule: a pending new request is not held. */
	ASSERT_HELD(a, "asy/c", NL);

	/* rule: a second lock while one is pending is -EBUSY. */
	ASSERT_EQ(-EBUSY, hlock_lock(a, "asy/other", IS, 0, 0));
	ASSERT_EQ(-EBUSY, hlock_lock(a, "asy/other", IS, ASYNC, 0));
	ASSERT_EQ(-EBUSY, hlock_lock(a, "asy/c", S, 0, 0));
	ASSERT_HELD(a, "asy/other", NL);
	ASSERT_WAITING(a);

	/* rule: the request continues down the path by itself. */
	ASSERT_UNLOCK(h, "", 0);
	ASSERT_EQ(1, pollin(a, 5000));
	/* rule: ... or granted-but-uncollected is -EBUSY too. */
	ASSERT_EQ(-EBUSY, hlock_lock(a, "asy/other", IS, 0, 0));
	/* rule: 0 also when it was granted before the call. */
	ASSERT_EQ(0, hlock_wait(a, 0));
	ASSERT_EQ(0, pollin(a, 0));
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_HELD(a, "asy/c", S);
	ASSERT_HELD(a, "asy", IS);
	ASSERT_HELD(a, "", IS);

	ASSERT_TRY(a, "asy/other", IS, 0);
	ASSERT_UNLOCK(a, "asy/c", 0);
	ASSERT_UNLOCK(a, "asy/other", 0);
	ASSERT_HELD(a, "", NL);
}

/* rule: hlock_wait returns -EINTR on a signal; it never withdraws. */
TEST_F_TIMEOUT(hl, wait_interrupted, TEST_TMO)
{
	const char *p = "wi/r";
	int a = self->fd[0], h = self->fd[1];
	pid_t nagger;
	int ret;

	ASSERT_EQ(0, install_usr1());
	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_QUEUED(a, p, S, 0);
	nagger = start_nagger(200);
	ASSERT_LT(0, nagger);
	ret = hlock_wait(a, -1);
	stop_child(nagger);
	ASSERT_EQ(-EINTR, ret);
	ASSERT_LT(0, usr1_count);
	ASSERT_WAITING(a);

	ASSERT_UNLOCK(h, p, 0);
	ASSERT_GRANTED(a);
	ASSERT_HELD(a, p, S);
}

/* ------------------------------------------------------------------ */
/* 11b. Threads sharing one locker */

/*
 * Whether thread @tid of this process sleeps (state S) inside an ioctl,
 * the one it was started into.  Without /proc/.../syscall the state
 * alone must do.
 */
static bool sleeps_in_ioctl(pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] != 'S')
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	return strtol(buf, NULL, 10) == SYS_ioctl;
}

/* Wait up to @ns until the thread whose id *@tid publishes sleeps. */
static bool wait_sleeping(const pid_t *tid, int64_t ns)
{
	int64_t end = now_ns() + ns;
	pid_t t;

	do {
		t = __atomic_load_n(tid, __ATOMIC_ACQUIRE);
		if (t > 0 && sleeps_in_ioctl(t))
			return true;
		usleep(1000);
	} while (now_ns() < end);
	return false;
}

/*
 * Join @th, which writes a byte to the pipe @donefd reads once it ends;
 * while it has not, interrupt its blocking call with SIGUSR1 (the test
 * installed install_usr1()), for up to 10 s.
 */
static int join_kicking(pthread_t th, int donefd)
{
	int i;

	for (i = 0; i < 100 && pollin(donefd, 0) != 1; i++) {
		pthread_kill(th, SIGUSR1);
		pollin(donefd, 100);
	}
	return pthread_join(th, NULL);
}

/* A thread in hlock_wait(fd, timeout). */
struct waiter {
	int fd;
	int64_t timeout;
	pid_t tid;		/* set before it calls hlock_wait() */
	int ret;		/* what hlock_wait() returned */
	int done[2];		/* a pipe: one byte once it returned */
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	__atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);
	w->ret = hlock_wait(w->fd, w->timeout);
	report(w->done[1], 'w');
	return NULL;
}

/*
 * Defect: HLOCK_IOC_WAIT slept forever when another thread of the same
 * locker withdrew the async request by unlocking its path: the cancel
 * path never woke the waiter.
 *
 * rule: unlocking the target of the request queued with HLOCK_F_ASYNC
 * withdraws it; hlock_wait() then has nothing to wait for: ENOENT ("no
 * request is pending").  A thread already sleeping in it must get that
 * too, at once (10 s allowed here, then it is interrupted by a signal).
 */
TEST_F_TIMEOUT(hl, wait_woken_by_cancel, TEST_TMO)
{
	const char *p = "wcan/r";
	int a = self->fd[0], h = self->fd[1];
	struct waiter w = { .fd = a, .timeout = -1, .done = { -1, -1 } };
	bool asleep, returned;
	int64_t t0, dt = 0;
	pthread_t th;
	int ret;

	ASSERT_EQ(0, install_usr1());
	ASSERT_EQ(0, pipe(w.done));
	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_QUEUED(a, p, X, 0);
	ASSERT_EQ(0, pthread_create(&th, NULL, waiter_main, &w));
	asleep = wait_sleeping(&w.tid, 10 * SEC);

	/* Withdraw the request from this thread. */
	ret = hlock_unlock(a, p);
	t0 = now_ns();
	returned = pollin(w.done[0], 10000) == 1;
	if (returned)
		dt = now_ns() - t0;
	ASSERT_EQ(0, join_kicking(th, w.done[0]));
	close(w.done[0]);
	close(w.done[1]);

	ASSERT_TRUE(asleep) TH_LOG("the waiter thread never slept in hlock_wait");
	ASSERT_EQ(0, ret) TH_LOG("unlock (cancel): %s", strerror(-ret));
	ASSERT_TRUE(returned)
		TH_LOG("hlock_wait still slept 10 s after another thread withdrew its request (returned %d after a signal)",
		       w.ret);
	TH_LOG("hlock_wait returned %d ms after the cancel",
	       (int)(dt / MS));
	ASSERT_EQ(-ENOENT, w.ret) TH_LOG("hlock_wait: %s", strerror(-w.ret));
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_HELD(a, p, NL);
	ASSERT_HELD(a, "", NL);

	/* The withdrawn request is gone: releasing H grants nothing to A. */
	ASSERT_UNLOCK(h, p, 0);
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_TRY(a, p, X, 0);
	ASSERT_UNLOCK(a, p, 0);
}

/*
 * Defect: HLOCK_IOC_WAIT could return 0 having collected nothing: between
 * its wake-up and taking the lock again, another thread of the locker
 * collected the grant (hlock_wait(fd, 0)) and queued a new async request,
 * which the woken thread then took for its own grant.
 *
 * Two threads share locker L: "sleeper" blocks in hlock_wait(L, -1),
 * "spinner" polls hlock_wait(L, 0).  Locker H holds X on RACE_PATHS
 * paths; L queues S on the first.  In round c this thread releases H's X
 * on path c (mod RACE_PATHS); whichever thread collects the grant
 * (hlock_wait() returned 0) checks that it is the first to collect round
 * c and that L now holds S there, and queues S on path c + 1.  Then this
 * thread unlocks L's S on path c and gives H its X back.  (While a lock
 * call queues, the other thread may see EBUSY: the slot is claimed.)
 * rule: hlock_wait returns 0 only when it collected a grant: so each 0
 * comes with the S held, and there are as many 0s as grants.
 *
 * A race: the spinner must collect and queue again while the sleeper is
 * between its wake-up and the lock, a few instructions.  The sleeper and
 * this thread (whose unlock wakes it without an IPI) share one CPU, the
 * spinner the other, with a thread taking a timer every RACE_KICK_US:
 * under TCG each interrupt hands the emulation over to the other CPU, so
 * now and then the sleeper is stopped in that window for long enough.
 * Rounds go on for RACE_SECS.  Before the fix it showed in each of 8
 * runs, after 1.3 to 7.5 s; a race, so no guarantee.
 */
#define RACE_PATHS	64
#define RACE_SECS	15
#define RACE_KICK_US	2000

struct race {
	int l, h;
	int cur;		/* the round of the request queued last */
	int last;		/* the rounds collected */
	int stop;
	int failed;
	int zeros[2];		/* hlock_wait() == 0, per thread */
	int collected[2];	/* pipe: a byte per round collected */
	int done[3][2];		/* pipes: a byte once each thread ends */
	char why[256];
};

static const char *const race_who[2] = { "sleeper", "spinner" };

static void race_path(char *buf, size_t size, int round)
{
	snprintf(buf, size, "wrace/%d", round % RACE_PATHS);
}

#define race_fail(r, ...) do { \
	if (!__atomic_exchange_n(&(r)->failed, 1, __ATOMIC_ACQ_REL)) \
		snprintf((r)->why, sizeof((r)->why), __VA_ARGS__); \
	__atomic_store_n(&(r)->stop, 1, __ATOMIC_RELEASE); \
} while (0)

/* Pin the calling thread to @cpu if there is such a CPU. */
static void race_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Thread @t got 0 from hlock_wait(): round cur's grant is its. */
static void race_collected(struct race *r, int t)
{
	int c = __atomic_load_n(&r->cur, __ATOMIC_ACQUIRE);
	int expect = c;
	char p[32];
	int held, ret;

	r->zeros[t]++;
	race_path(p, sizeof(p), c);
	if (!__atomic_compare_exchange_n(&r->last, &expect, c + 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		race_fail(r, "round %d: %s's hlock_wait returned 0, yet the other thread had collected that grant: it collected nothing",
			  c, race_who[t]);
		return;
	}
	held = hlock_held(r->l, p);
	if (held != S) {
		race_fail(r, "round %d: %s's hlock_wait returned 0, yet L holds %s on \"%s\": it collected nothing",
			  c, race_who[t], mname(held), p);
		return;
	}
	__atomic_store_n(&r->cur, c + 1, __ATOMIC_RELEASE);
	race_path(p, sizeof(p), c + 1);
	ret = hlock_lock(r->l, p, S, ASYNC, 0);
	if (ret == -EBUSY) {
		race_fail(r, "round %d: %s's hlock_wait returned 0, yet the slot is still busy (EBUSY on the next lock): it collected nothing",
			  c, race_who[t]);
		return;
	}
	if (ret != -EINPROGRESS) {
		race_fail(r, "round %d: %s: queue S on \"%s\": %d", c + 1,
			  race_who[t], p, ret);
		return;
	}
	report(r->collected[1], 'c');
}

static void *race_sleeper(void *arg)
{
	struct race *r = arg;
	int ret;

	race_pin(1);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		ret = hlock_wait(r->l, -1);
		if (ret == 0)
			race_collected(r, 0);
		else if (ret != -ENOENT && ret != -EINTR && ret != -EBUSY)
			race_fail(r, "sleeper: hlock_wait: %d", ret);
	}
	report(r->done[0][1], 'e');
	return NULL;
}

static void *race_spinner(void *arg)
{
	struct race *r = arg;
	int ret;

	race_pin(0);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		ret = hlock_wait(r->l, 0);
		if (ret == 0)
			race_collected(r, 1);
		else if (ret != -EAGAIN && ret != -ENOENT && ret != -EBUSY)
			race_fail(r, "spinner: hlock_wait: %d", ret);
	}
	report(r->done[1][1], 'e');
	return NULL;
}

/* Timer interrupts on the spinner's CPU. */
static void *race_kicker(void *arg)
{
	struct timespec ts = { 0, RACE_KICK_US * 1000 };
	struct race *r = arg;

	race_pin(0);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	report(r->done[2][1], 'e');
	return NULL;
}

/* Wait up to 10 s for a byte on the pipe @fd, unless the race stops. */
static bool race_wait_collected(struct race *r)
{
	int64_t end = now_ns() + 10 * SEC;

	while (pollin(r->collected[0], 20) != 1)
		if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE) ||
		    now_ns() >= end)
			return false;
	return read_report(r->collected[0]) == 'c';
}

TEST_F_TIMEOUT(hl, wait_zero_means_collected, RACE_SECS + 40)
{
	void *(*const fn[3])(void *) = {
		race_sleeper, race_spinner, race_kicker,
	};
	struct race *r;
	pthread_t th[3];
	char p[32];
	int64_t t0, end;
	int i, t, ret, rounds = 0;
	bool stuck = false;

	ASSERT_EQ(0, install_usr1());
	r = calloc(1, sizeof(*r));
	ASSERT_TRUE(r != NULL);
	r->l = self->fd[0];
	r->h = self->fd[1];
	ASSERT_EQ(0, pipe(r->collected));
	for (t = 0; t < 3; t++)
		ASSERT_EQ(0, pipe(r->done[t]));
	for (i = 0; i < RACE_PATHS; i++) {
		race_path(p, sizeof(p), i);
		ASSERT_EQ(0, hlock_lock(r->h, p, X, 0, 0));
	}
	race_path(p, sizeof(p), 0);
	ASSERT_QUEUED(r->l, p, S, 0);
	race_pin(1);
	for (t = 0; t < 3; t++)
		ASSERT_EQ(0, pthread_create(&th[t], NULL, fn[t], r));

	t0 = now_ns();
	end = t0 + RACE_SECS * SEC;
	for (i = 0; now_ns() < end &&
	     !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE); i++) {
		race_path(p, sizeof(p), i);
		ret = hlock_unlock(r->h, p);
		if (ret != 0) {
			race_fail(r, "round %d: H: unlock \"%s\": %d", i, p,
				  ret);
			break;
		}
		if (!race_wait_collected(r)) {
			stuck = !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
			break;
		}
		rounds++;
		/* Round i + 1 is queued on another path: recycle this one. */
		ret = hlock_unlock(r->l, p);
		if (ret == 0)
			ret = hlock_lock(r->h, p, X, 0, 0);
		if (ret != 0) {
			race_fail(r, "round %d: recycling \"%s\": %d", i, p,
				  ret);
			break;
		}
	}
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	for (t = 0; t < 3; t++) {
		ASSERT_EQ(0, join_kicking(th[t], r->done[t][0]));
		close(r->done[t][0]);
		close(r->done[t][1]);
	}
	close(r->collected[0]);
	close(r->collected[1]);

	TH_LOG("%d rounds in %d ms; hlock_wait returned 0 %d times in the sleeper, %d in the spinner",
	       rounds, (int)((now_ns() - t0) / MS), r->zeros[0],
	       r->zeros[1]);
	ASSERT_FALSE(r->failed) TH_LOG("%s", r->why);
	ASSERT_FALSE(stuck) TH_LOG("round %d: nobody collected the grant", i);
	ASSERT_LT(0, rounds) TH_LOG("no round completed");
	/* Every collection counted, also one after the last round. */
	ASSERT_EQ(r->last, r->zeros[0] + r->zeros[1])
		TH_LOG("%d grants collected: as many returns of 0 expected",
		       r->last);
	free(r);
}

/* ------------------------------------------------------------------ */
/* 12, 13. A failed lock leaves the locker exactly as it was */

enum { RB_TRY, RB_TIMEOUT, RB_SIGNAL };

FIXTURE(rollback) {
	int a, h, d;
	char top[40], keep[64], par[64], tgt[64];
};

FIXTURE_VARIANT(rollback) {
	const char *name;
	int kind;
	bool at_parent;		/* the blocker holds the parent, not the target */
	bool keep;		/* the locker holds another path beforehand */
};

#define ROLLBACK(vname, k, parent, kp) \
	FIXTURE_VARIANT_ADD(rollback, vname) { \
		.name = #vname, .kind = k, .at_parent = parent, .keep = kp, \
	}

ROLLBACK(try_fresh, RB_TRY, false, false);
ROLLBACK(try_at_target, RB_TRY, false, true);
ROLLBACK(try_at_parent, RB_TRY, true, true);
ROLLBACK(timeout_fresh, RB_TIMEOUT, false, false);
ROLLBACK(timeout_at_target, RB_TIMEOUT, false, true);
ROLLBACK(timeout_at_parent, RB_TIMEOUT, true, true);
ROLLBACK(signal_fresh, RB_SIGNAL, false, false);
ROLLBACK(signal_at_target, RB_SIGNAL, false, true);
ROLLBACK(signal_at_parent, RB_SIGNAL, true, true);

FIXTURE_SETUP(rollback)
{
	self->a = self->h = self->d = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	snprintf(self->top, sizeof(self->top), "rb_%s", variant->name);
	snprintf(self->keep, sizeof(self->keep), "%s/keep/d", self->top);
	snprintf(self->par, sizeof(self->par), "%s/t", self->top);
	snprintf(self->tgt, sizeof(self->tgt), "%s/t/c", self->top);
	self->a = hlock_open();
	ASSERT_LE(0, self->a);
	self->h = hlock_open();
	ASSERT_LE(0, self->h);
	self->d = hlock_open();
	ASSERT_LE(0, self->d);
}

FIXTURE_TEARDOWN(rollback)
{
	if (self->a >= 0)
		close(self->a);
	if (self->h >= 0)
		close(self->h);
	if (self->d >= 0)
		close(self->d);
}

/*
 * rule: every call is all-or-nothing: intents a failed lock took or
 * converted on ancestors are undone.  With .keep, A holds "keep/d" S, so
 * IS on the root and on top; its X request on "t/c" converts those to IX
 * (granted, compatible with H's IX) and must put them back to IS.
 * Without it, A must end up holding nothing at all.
 */
TEST_F_TIMEOUT(rollback, lock_fails_cleanly, TEST_TMO)
{
	const char *blocker = variant->at_parent ? self->par : self->tgt;
	int anc = variant->keep ? IS : NL;
	int a = self->a, h = self->h, d = self->d;
	pid_t nagger = -1;
	int64_t t0, dt;
	int ret;

	if (variant->keep) {
		ASSERT_EQ(0, hlock_lock(a, self->keep, S, 0, 0));
	}
	ASSERT_EQ(0, hlock_lock(h, blocker, X, 0, 0));

	t0 = now_ns();
	switch (variant->kind) {
	case RB_TRY:
		ret = hlock_lock(a, self->tgt, X, 0, 0);
		ASSERT_EQ(-EAGAIN, ret);
		break;
	case RB_TIMEOUT:
		ret = hlock_lock(a, self->tgt, X, 0, 100 * MS);
		dt = now_ns() - t0;
		ASSERT_EQ(-ETIMEDOUT, ret);
		EXPECT_LE(90 * MS, dt) TH_LOG("timed out after %lld ns",
					     (long long)dt);
		break;
	case RB_SIGNAL:
		ASSERT_EQ(0, install_usr1());
		nagger = start_nagger(200);
		ASSERT_LT(0, nagger);
		ret = hlock_lock(a, self->tgt, X, 0, -1);
		stop_child(nagger);
		ASSERT_EQ(-EINTR, ret);
		ASSERT_LT(0, usr1_count);
		break;
	}

	ASSERT_HELD(a, self->tgt, NL);
	ASSERT_HELD(a, self->par, NL);
	ASSERT_HELD(a, self->top, anc);
	ASSERT_HELD(a, "", anc);
	ASSERT_HELD(a, self->keep, variant->keep ? S : NL);
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_EQ(0, pollin(a, 0));

	/* The request was withdrawn: releasing the blocker grants nothing. */
	ASSERT_UNLOCK(h, blocker, 0);
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_HELD(a, self->tgt, NL);

	/* Another locker sees A's intents as IS (S fits), nothing below. */
	ASSERT_TRY(d, self->top, S, 0);
	ASSERT_UNLOCK(d, self->top, 0);
	ASSERT_TRY(d, self->par, X, 0);
	ASSERT_UNLOCK(d, self->par, 0);
	ASSERT_TRY(d, "", S, 0);
	ASSERT_UNLOCK(d, "", 0);

	if (variant->keep) {
		ASSERT_UNLOCK(a, self->keep, 0);
	}
	ASSERT_EQ(-ENOENT, hlock_unlock(a, self->tgt));
	ASSERT_HELD(a, "", NL);
	ASSERT_TRY(d, "", X, 0);
	ASSERT_UNLOCK(d, "", 0);
}

/* rule: an interrupted conversion falls back to H, still held. */
TEST_F_TIMEOUT(hl, signal_conversion, TEST_TMO)
{
	const char *p = "sc/r";
	int a = self->fd[0], b = self->fd[1], d = self->fd[2];
	pid_t nagger;
	int ret;

	ASSERT_EQ(0, install_usr1());
	ASSERT_EQ(0, hlock_lock(a, p, S, 0, 0));
	ASSERT_EQ(0, hlock_lock(b, p, S, 0, 0));
	nagger = start_nagger(200);
	ASSERT_LT(0, nagger);
	ret = hlock_lock(a, p, X, 0, -1);
	stop_child(nagger);
	ASSERT_EQ(-EINTR, ret);

	ASSERT_HELD(a, p, S);
	ASSERT_HELD(a, "sc", IS);
	ASSERT_HELD(a, "", IS);
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_TRY(d, "", S, 0);		/* A's root intent is IS again */
	ASSERT_UNLOCK(d, "", 0);

	ASSERT_UNLOCK(b, p, 0);
	ASSERT_TRY(a, p, X, 0);
	ASSERT_UNLOCK(a, p, 1);
	ASSERT_UNLOCK(a, p, 0);
}

/* ------------------------------------------------------------------ */
/* 14. Process death releases and cancels */

/*
 * Fork a helper that opens its own locker and runs @fn with it; the
 * helper reports one byte through the pipe.  It dies with us.
 */
static pid_t fork_helper(int *rfd, void (*fn)(int wfd))
{
	int pfd[2];
	pid_t pid;

	if (pipe(pfd))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close_inherited(pfd[1], -1);
		fn(pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	*rfd = pfd[0];
	return pid;
}

static void helper_hold_x(int wfd)
{
	int l = hlock_open();

	report(wfd, l >= 0 && hlock_lock(l, "kill/h", X, 0, 0) == 0 ? 'k' : 'e');
	for (;;)
		pause();
}

static void helper_wait_x(int wfd)
{
	int l = hlock_open();

	report(wfd, l >= 0 ? 'r' : 'e');
	/* Blocks behind the parent's S until it is killed. */
	report(wfd, hlock_lock(l, "kill/w", X, 0, -1) == 0 ? 'g' : 'e');
	for (;;)
		pause();
}

static void helper_exit_holding(int wfd)
{
	int l = hlock_open();
	bool ok = l >= 0 && hlock_lock(l, "exit/r", X, 0, 0) == 0 &&
		  hlock_lock(l, "exit/s/t", S, 0, 0) == 0;

	report(wfd, ok ? 'k' : 'e');
	_exit(0);	/* without unlocking */
}

TEST_F_TIMEOUT(hl, kill_holder, TEST_TMO)
{
	int b = self->fd[0];
	int rfd = -1;
	pid_t pid;
	char c = 0;

	pid = fork_helper(&rfd, helper_hold_x);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(rfd, &c, 1));
	close(rfd);
	if (c != 'k')
		stop_child(pid);
	ASSERT_EQ('k', c);

	ASSERT_QUEUED(b, "kill/h", X, 0);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_LE(0, wait_child(pid));
	ASSERT_EQ(0, hlock_wait(b, 5 * SEC));
	ASSERT_HELD(b, "kill/h", X);
}

TEST_F_TIMEOUT(hl, kill_waiter, TEST_TMO)
{
	int a = self->fd[0], d = self->fd[1], e = self->fd[2];
	int rfd = -1, ret = 0;
	int64_t end;
	pid_t pid;
	char c = 0;

	ASSERT_EQ(0, hlock_lock(a, "kill/w", S, 0, 0));
	pid = fork_helper(&rfd, helper_wait_x);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(rfd, &c, 1));
	if (c != 'r')
		stop_child(pid);
	ASSERT_EQ('r', c);

	/* The helper's X has queued once a new S no longer gets in. */
	end = now_ns() + 10 * SEC;
	while (now_ns() < end) {
		ret = hlock_lock(d, "kill/w", S, 0, 0);
		if (ret != 0)
			break;
		hlock_unlock(d, "kill/w");
		usleep(10000);
	}
	if (ret != -EAGAIN)
		stop_child(pid);
	ASSERT_EQ(-EAGAIN, ret) TH_LOG("the helper's X never queued");

	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_LE(0, wait_child(pid));
	close(rfd);

	/* Its X request is gone: S gets in again. */
	ASSERT_TRY(d, "kill/w", S, 0);
	ASSERT_UNLOCK(d, "kill/w", 0);
	ASSERT_UNLOCK(a, "kill/w", 0);
	ASSERT_TRY(e, "", X, 0);
}

TEST_F_TIMEOUT(hl, exit_releases, TEST_TMO)
{
	int b = self->fd[0];
	int rfd = -1;
	pid_t pid;
	char c = 0;

	pid = fork_helper(&rfd, helper_exit_holding);
	ASSERT_LT(0, pid);
	ASSERT_EQ(1, read(rfd, &c, 1));
	close(rfd);
	ASSERT_LE(0, wait_child(pid));
	ASSERT_EQ('k', c);
	ASSERT_TRY(b, "", X, 0);
}

/* ------------------------------------------------------------------ */
/* Process-owned lockers (HLOCK_IOC_OWNER) and the tasks that share them */

struct unshared {
	int wfd;	/* the thread's own copy of it outlives the parent's */
	int ret;
};

/* A thread that takes a file table of its own, says so, and exits. */
static void *unshared_run(void *arg)
{
	struct unshared *u = arg;

	u->ret = unshare(CLONE_FILES) ? -errno : 0;
	report(u->wfd, 'u');
	return NULL;
}

/*
 * A thread of the owner with a file table of its own exits, closing its
 * copies of the descriptors: the process lives on, so do its locks (rule:
 * "Its exit then releases the locker's locks", the exit of the process).
 */
TEST_F_TIMEOUT(hl, owned_thread_exit_keeps_locks, TEST_TMO)
{
	int l = self->fd[0], o = self->fd[1], pfd[2];
	struct unshared u = { .ret = 1 };
	pthread_t thread;
	char c = 0;

	ASSERT_EQ(0, hlock_owner(l, HLOCK_OWNER_PROCESS));
	ASSERT_EQ(0, hlock_lock(l, "othr/x", X, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(o, "othr/x", S, ASYNC, 0));
	ASSERT_EQ(0, pipe(pfd));
	/*
	 * The write end above every other descriptor: the thread's table
	 * closes in order, so its EOF comes after the locker's flush.
	 */
	u.wfd = fcntl(pfd[1], F_DUPFD_CLOEXEC, 500);
	ASSERT_LE(500, u.wfd);
	close(pfd[1]);
	ASSERT_EQ(0, pthread_create(&thread, NULL, unshared_run, &u));
	ASSERT_EQ('u', read_report(pfd[0]));
	close(u.wfd);
	/* EOF: the thread's table, its copy of the write end, closed. */
	ASSERT_EQ(0, read(pfd[0], &c, 1));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	close(pfd[0]);
	ASSERT_EQ(0, u.ret);
	ASSERT_HELD(l, "othr/x", X);
	ASSERT_TRY(self->fd[2], "othr/x", X, -EAGAIN);
	ASSERT_WAITING(o);
	/* The process still owns the locker: its exit will release. */
	ASSERT_UNLOCK(l, "othr/x", 0);
	ASSERT_GRANTED(o);
}

/* The owner's locks and the rounds of the race below. */
#define OWNED_PATHS	600
/* About 1 round in 25 hit the race on 6.12 under TCG before the fix. */
#define OWNED_ROUNDS	test_scaled(100, 30)

struct owned_race {
	int stop;	/* the parent tells the sharer to stop */
	int iters;	/* lock calls the sharer made */
	int grants;	/* of which granted */
	char why[2][120];	/* the first of each kind */
};

/*
 * The sharer of a process-owned locker @l: locks "ow" in X and unlocks it
 * in a loop.  While @l holds it, it holds the intent on the root that X
 * on "ow" needs, and @n (another locker) cannot get X on the root.  The
 * owner's exit may release "ow" at any moment, so a failure counts only
 * if "ow" is still held after what contradicts it was seen: nobody but
 * the sharer locks it, so it was held all the while.
 */
static void __attribute__((noreturn))
owned_sharer(struct owned_race *r, int l, int n)
{
	int i, ret, root;

	for (i = 0; i < 100000 && !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
	     i++) {
		ret = hlock_lock(l, "ow", X, 0, SETTLE_NS);
		__atomic_add_fetch(&r->iters, 1, __ATOMIC_RELEASE);
		if (ret)
			continue;
		r->grants++;
		root = hlock_held(l, "");
		if (root != IX && root != SIX && root != X &&
		    hlock_held(l, "ow") == X && !r->why[0][0]++)
			snprintf(r->why[0], sizeof(r->why[0]),
				 "X on \"ow\" held, the root held in %s",
				 mname(root));
		ret = hlock_lock(n, "", X, 0, 0);
		if (ret != -EAGAIN && hlock_held(l, "ow") == X &&
		    !r->why[1][0]++)
			snprintf(r->why[1], sizeof(r->why[1]),
				 "X on \"ow\" held, another locker's try X on the root says %d",
				 ret);
		if (!ret)
			hlock_unlock(n, "");
		hlock_unlock(l, "ow");
	}
	_exit(0);
}

/*
 * Another locker @m takes X on "ow" now and then, so that a lock call of
 * the sharer sometimes waits, the locker's mutex dropped, while the
 * owner's exit releases.
 */
static void __attribute__((noreturn))
owned_contender(struct owned_race *r, int m)
{
	int i;

	for (i = 0; i < 100000 && !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
	     i++) {
		if (!hlock_lock(m, "ow", X, 0, 0)) {
			usleep(50);
			hlock_unlock(m, "ow");
		}
		usleep(200);
	}
	_exit(0);
}

/* Wait, boundedly, until the sharer made @more lock calls from now. */
static void sharer_advance(struct owned_race *r, int more)
{
	int64_t end = now_ns() + SETTLE_NS;
	int from = __atomic_load_n(&r->iters, __ATOMIC_ACQUIRE);

	while (__atomic_load_n(&r->iters, __ATOMIC_ACQUIRE) < from + more &&
	       now_ns() < end)
		usleep(200);
}

/*
 * The owner of a locker exits, killed or not, while a child it forked,
 * sharing the locker, locks and unlocks: the exit releases the owner's
 * OWNED_PATHS paths in batches, and the sharer's lock calls between two
 * batches must not leave it holding X without the intent above, nor
 * another locker X on the root while the sharer holds X below.  A race:
 * OWNED_ROUNDS rounds.
 */
TEST_F_TIMEOUT(hl, owner_exit_vs_sharer, 4 * TEST_TMO)
{
	int n = self->fd[0], rdy[2], go[2], round, i, l, root;
	struct owned_race *r;
	pid_t owner, sharer, contender;
	char path[32];
	bool kept;

	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(r != MAP_FAILED);
	for (round = 0; round < OWNED_ROUNDS; round++) {
		memset(r, 0, sizeof(*r));
		l = hlock_open();
		ASSERT_LE(0, l);
		ASSERT_EQ(0, pipe(rdy));
		ASSERT_EQ(0, pipe(go));
		fflush(stdout);
		owner = fork();
		ASSERT_LE(0, owner);
		if (!owner) {
			bool ok = !hlock_owner(l, HLOCK_OWNER_PROCESS);

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (i = 0; ok && i < OWNED_PATHS; i++) {
				snprintf(path, sizeof(path), "own/%d", i);
				ok = !hlock_lock(l, path, S, 0, 0);
			}
			report(rdy[1], ok ? 'r' : 'e');
			read_report(go[0]);
			_exit(0);
		}
		ASSERT_EQ('r', read_report(rdy[0]));
		sharer = fork();
		ASSERT_LE(0, sharer);
		if (!sharer) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			owned_sharer(r, l, n);
		}
		contender = fork();
		ASSERT_LE(0, contender);
		if (!contender) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			owned_contender(r, self->fd[1]);
		}
		sharer_advance(r, 3);
		/* Odd rounds kill the owner, even ones let it exit. */
		if (round & 1) {
			ASSERT_EQ(0, kill(owner, SIGKILL));
		} else {
			report(go[1], 'g');
		}
		ASSERT_LE(0, wait_child(owner));
		sharer_advance(r, 20);
		__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
		ASSERT_LE(0, wait_child(sharer));
		ASSERT_LE(0, wait_child(contender));
		close(rdy[0]);
		close(rdy[1]);
		close(go[0]);
		close(go[1]);
		ASSERT_FALSE(r->why[0][0] || r->why[1][0])
			TH_LOG("round %d: %s; %s", round, r->why[0], r->why[1]);
		ASSERT_LT(0, r->grants);
		/* The sharer unlocked all it took. */
		ASSERT_HELD(l, "ow", NL);
		/*
		 * The owner's locks went with it, all of them, unless a call
		 * of the sharer owned the slot as it exited: then all stay
		 * until the last close.
		 */
		kept = hlock_held(l, "own/0") == S;
		snprintf(path, sizeof(path), "own/%d", OWNED_PATHS - 1);
		ASSERT_HELD(l, path, kept ? S : NL);
		/* The root keeps the IX "ow" took while own/ is held. */
		root = hlock_held(l, "");
		ASSERT_TRUE(kept ? root == IS || root == IX : root == NL)
			TH_LOG("round %d: the root held in %s, own/0 %s",
			       round, mname(root), kept ? "held" : "not");
		ASSERT_TRY(n, "", X, kept ? -EAGAIN : 0);
		if (!kept) {
			ASSERT_UNLOCK(n, "", 0);
		}
		close(l);
		ASSERT_TRY(n, "", X, 0);
		ASSERT_UNLOCK(n, "", 0);
	}
	munmap(r, sizeof(*r));
}

/* ------------------------------------------------------------------ */
/* 16. Closing the locker releases and cancels everything */

TEST_F_TIMEOUT(hl, close_releases, TEST_TMO)
{
	int h = self->fd[0], b = self->fd[2];

	ASSERT_EQ(0, hlock_lock(h, "cl/p", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(self->fd[1], "cl/a", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(self->fd[1], "cl/b/c", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(self->fd[1], "cl/b/c", S, 0, 0));
	ASSERT_EQ(0, hlock_lock(self->fd[1], "cl/b", IS, 0, 0));
	ASSERT_QUEUED(self->fd[1], "cl/p", S, 0);
	ASSERT_EQ(0, close(self->fd[1]));
	self->fd[1] = -1;

	ASSERT_TRY(b, "cl/a", X, 0);
	ASSERT_TRY(b, "cl/b", X, 0);
	ASSERT_UNLOCK(b, "cl/a", 0);
	ASSERT_UNLOCK(b, "cl/b", 0);
	ASSERT_UNLOCK(h, "cl/p", 0);
	ASSERT_TRY(b, "", X, 0);
}

/* debugfs' count of requests allocated, once two looks agree; or -1. */
static long requests_settled(void)
{
	long n = debugfs_figure("requests"), again;
	int i;

	for (i = 0; i < 100 && n >= 0; i++, n = again) {
		usleep(10000);
		again = debugfs_figure("requests");
		if (again == n)
			break;
	}
	return n;
}

/*
 * A locker's lock takes at most one new request per level of its path,
 * and the locker allocates no more spares than that: a short path does
 * not pay for the deepest one.  Closing the locker frees them all.
 */
TEST(spares_fit_the_path)
{
	long base = requests_settled();
	int fd;

	if (base < 0)
		SKIP(return, "no debugfs figures");
	fd = hlock_open();
	ASSERT_LE(0, fd);
	/* The root, "sp" and "sp/a": three new requests, no spare. */
	ASSERT_EQ(0, hlock_lock(fd, "sp/a", S, 0, 0));
	ASSERT_EQ(base + 3, debugfs_figure("requests"));
	/* Two levels more: at most one spare per level of the path. */
	ASSERT_EQ(0, hlock_lock(fd, "sp/a/b/c", S, 0, 0));
	ASSERT_LE(base + 5, debugfs_figure("requests"));
	ASSERT_GE(base + 3 + 5, debugfs_figure("requests"));
	ASSERT_EQ(0, close(fd));
	ASSERT_EQ(base, requests_settled());
}

TEST_F_TIMEOUT(hl, close_uncollected, TEST_TMO)
{
	int h = self->fd[0], b = self->fd[2];

	ASSERT_EQ(0, hlock_lock(h, "clu/r", X, 0, 0));
	ASSERT_QUEUED(self->fd[1], "clu/r", S, 0);
	ASSERT_UNLOCK(h, "clu/r", 0);
	ASSERT_EQ(1, pollin(self->fd[1], 5000));
	ASSERT_EQ(0, close(self->fd[1]));
	self->fd[1] = -1;
	ASSERT_TRY(b, "", X, 0);
}

/* ------------------------------------------------------------------ */
/* 15. Bad input, one rejection at a time, through raw ioctls */

/* One mutation of an otherwise valid struct hlock_lock_args. */
enum mut {
	M_FLAGS_BIT3, M_FLAGS_HIGH, M_FLAGS_ALL_PLUS, M_FLAGS_ASYNC, M_PAD,
	M_RES0, M_RES1, M_MODE_NL, M_MODE_1, M_MODE_6, M_MODE_MAX,
	M_TIMEOUT_POS, M_TIMEOUT_NEG, M_PATH_1, M_PATH_UNMAPPED,
	M_LEN_MAX1, M_LEN_HUGE, M_NUL, M_ARG_NULL, M_ARG_1,
	M_NR
};

static const char *const mut_name[M_NR] = {
	"flags 1<<3", "flags 1<<31", "flags ALL|1<<3", "flags ASYNC",
	"__pad 1", "lease_ns -1", "reserved 1", "mode NL", "mode IS",
	"mode 6", "mode ~0", "timeout 1", "timeout -1", "path (void *)1",
	"path unmapped", "path_len PATH_MAX+1", "path_len ~0", "NUL in path",
	"arg NULL", "arg (void *)1",
};

/* A buffer of HLOCK_PATH_MAX + 1 'a's: too long however it is parsed. */
static char long_path[HLOCK_PATH_MAX + 2];

static const char *nul_path = "bad\0x/r";
#define NUL_PATH_LEN 7

/* Run @cmd with @a mutated by @m; return the -errno or result. */
static int run_mut(int fd, unsigned long cmd, struct hlock_lock_args *a,
		   enum mut m)
{
	switch (m) {
	case M_FLAGS_BIT3: a->flags = 1U << 3; break;
	case M_FLAGS_HIGH: a->flags = 1U << 31; break;
	case M_FLAGS_ALL_PLUS: a->flags = HLOCK_F_ALL | (1U << 3); break;
	case M_FLAGS_ASYNC: a->flags = HLOCK_F_ASYNC; break;
	case M_PAD: a->__pad = 1; break;
	case M_RES0: a->lease_ns = -1; break;
	case M_RES1: a->reserved = 1; break;
	case M_MODE_NL: a->mode = HLOCK_NL; break;
	case M_MODE_1: a->mode = HLOCK_IS; break;
	case M_MODE_6: a->mode = 6; break;
	case M_MODE_MAX: a->mode = ~0U; break;
	case M_TIMEOUT_POS: a->timeout_ns = 1; break;
	case M_TIMEOUT_NEG: a->timeout_ns = -1; break;
	case M_PATH_1: a->path = 1; a->path_len = 3; break;
	case M_PATH_UNMAPPED:
		a->path = (uint64_t)(uintptr_t)unmapped_page();
		a->path_len = 3;
		break;
	case M_LEN_MAX1:
		memset(long_path, 'a', HLOCK_PATH_MAX + 1);
		a->path = (uint64_t)(uintptr_t)long_path;
		a->path_len = HLOCK_PATH_MAX + 1;
		break;
	case M_LEN_HUGE: a->path_len = ~0U; break;
	case M_NUL:
		a->path = (uint64_t)(uintptr_t)nul_path;
		a->path_len = NUL_PATH_LEN;
		break;
	case M_ARG_NULL: return raw_ioctl(fd, cmd, NULL);
	case M_ARG_1: return raw_ioctl(fd, cmd, (void *)1);
	case M_NR: break;
	}
	return raw_ioctl(fd, cmd, a);
}

/* Errors common to every path ioctl. */
static int path_error(enum mut m)
{
	switch (m) {
	case M_PATH_1: case M_PATH_UNMAPPED: case M_ARG_NULL: case M_ARG_1:
		return -EFAULT;
	case M_LEN_MAX1: case M_LEN_HUGE:
		return -ENAMETOOLONG;
	case M_NUL: case M_PAD: case M_RES0: case M_RES1:
	case M_FLAGS_BIT3: case M_FLAGS_HIGH: case M_FLAGS_ALL_PLUS:
		return -EINVAL;
	default:
		return 0;
	}
}

TEST_F_TIMEOUT(hl, bad_lock_args, TEST_TMO)
{
	const char *p = "bad/l";
	struct hlock_lock_args a;
	int fd = self->fd[0];
	enum mut m;
	int expect, ret;

	/* The base request (S, try, on a free path) is valid. */
	args_init(&a, p, S, 0, 0);
	ASSERT_EQ(0, raw_ioctl(fd, HLOCK_IOC_LOCK, &a));
	ASSERT_EQ(0, hlock_unlock(fd, p));

	for (m = 0; m < M_NR; m++) {
		expect = path_error(m);
		switch (m) {
		case M_MODE_NL: case M_MODE_6: case M_MODE_MAX:
			expect = -EINVAL;
			break;
		case M_FLAGS_ASYNC: case M_MODE_1: case M_TIMEOUT_POS:
		case M_TIMEOUT_NEG:
			continue;	/* valid for LOCK */
		default:
			break;
		}
		args_init(&a, p, S, 0, 0);
		ret = run_mut(fd, HLOCK_IOC_LOCK, &a, m);
		EXPECT_EQ(expect, ret) TH_LOG("LOCK with %s", mut_name[m]);
		if (ret == 0)
			hlock_unlock(fd, p);
		EXPECT_EQ(NL, hlock_held(fd, p)) TH_LOG("after %s", mut_name[m]);
		EXPECT_EQ(NL, hlock_held(fd, "bad")) TH_LOG("after %s", mut_name[m]);
		EXPECT_EQ(NL, hlock_held(fd, "")) TH_LOG("after %s", mut_name[m]);
		EXPECT_EQ(-ENOENT, hlock_wait(fd, 0)) TH_LOG("after %s",
							  mut_name[m]);
	}
}

TEST_F_TIMEOUT(hl, bad_unlock_held_args, TEST_TMO)
{
	const char *p = "bad/u";
	struct hlock_lock_args a;
	int fd = self->fd[0];
	enum mut m;
	int expect, ret;

	ASSERT_EQ(0, hlock_lock(fd, p, S, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd, p, S, 0, 0));

	args_init(&a, p, 0, 0, 0);
	ASSERT_EQ(S, raw_ioctl(fd, HLOCK_IOC_HELD, &a));

	for (m = 0; m < M_NR; m++) {
		expect = path_error(m);
		switch (m) {
		/* rule: nonzero mode/flags/timeout for UNLOCK/HELD: -EINVAL */
		case M_FLAGS_ASYNC: case M_MODE_1: case M_MODE_6:
		case M_MODE_MAX: case M_TIMEOUT_POS: case M_TIMEOUT_NEG:
			expect = -EINVAL;
			break;
		case M_MODE_NL:
			continue;	/* mode 0 is the valid value here */
		default:
			break;
		}
		args_init(&a, p, 0, 0, 0);
		ret = run_mut(fd, HLOCK_IOC_HELD, &a, m);
		EXPECT_EQ(expect, ret) TH_LOG("HELD with %s", mut_name[m]);

		args_init(&a, p, 0, 0, 0);
		ret = run_mut(fd, HLOCK_IOC_UNLOCK, &a, m);
		EXPECT_EQ(expect, ret) TH_LOG("UNLOCK with %s", mut_name[m]);
		if (ret >= 0)
			hlock_lock(fd, p, S, 0, 0);	/* put it back */
		ASSERT_EQ(S, hlock_held(fd, p)) TH_LOG("after %s", mut_name[m]);
	}
	args_init(&a, p, 0, 0, 0);
	ASSERT_EQ(1, raw_ioctl(fd, HLOCK_IOC_UNLOCK, &a));
	ASSERT_EQ(0, raw_ioctl(fd, HLOCK_IOC_UNLOCK, &a));
	ASSERT_EQ(-ENOENT, raw_ioctl(fd, HLOCK_IOC_UNLOCK, &a));
	ASSERT_EQ(NL, raw_ioctl(fd, HLOCK_IOC_HELD, &a));
}

TEST_F_TIMEOUT(hl, bad_downgrade_args, TEST_TMO)
{
	const char *p = "bad/d";
	struct hlock_lock_args a;
	int fd = self->fd[0];
	enum mut m;
	int expect, ret;

	ASSERT_EQ(0, hlock_lock(fd, p, X, 0, 0));
	for (m = 0; m < M_NR; m++) {
		expect = path_error(m);
		switch (m) {
		/* uapi: flags and timeout_ns must be 0 but for LOCK. */
		case M_FLAGS_ASYNC: case M_TIMEOUT_POS: case M_TIMEOUT_NEG:
		case M_MODE_NL: case M_MODE_6: case M_MODE_MAX:
			expect = -EINVAL;
			break;
		case M_MODE_1:
			continue;	/* a valid downgrade */
		default:
			break;
		}
		args_init(&a, p, S, 0, 0);
		ret = run_mut(fd, HLOCK_IOC_DOWNGRADE, &a, m);
		EXPECT_EQ(expect, ret) TH_LOG("DOWNGRADE with %s", mut_name[m]);
		ASSERT_EQ(X, hlock_held(fd, p)) TH_LOG("after %s", mut_name[m]);
	}
	args_init(&a, p, S, 0, 0);
	ASSERT_EQ(0, raw_ioctl(fd, HLOCK_IOC_DOWNGRADE, &a));
	ASSERT_EQ(S, hlock_held(fd, p));
}

TEST_F_TIMEOUT(hl, bad_wait_args, TEST_TMO)
{
	struct hlock_wait_args w;
	int a = self->fd[0], h = self->fd[1];

	/* A request is pending, so a valid WAIT with timeout 0 is -EAGAIN. */
	ASSERT_EQ(0, hlock_lock(h, "bad/w", X, 0, 0));
	ASSERT_QUEUED(a, "bad/w", S, 0);

	memset(&w, 0, sizeof(w));
	ASSERT_EQ(-EAGAIN, raw_ioctl(a, HLOCK_IOC_WAIT, &w));
	w.flags = 1;
	EXPECT_EQ(-EINVAL, raw_ioctl(a, HLOCK_IOC_WAIT, &w));
	memset(&w, 0, sizeof(w));
	w.flags = 1U << 31;
	EXPECT_EQ(-EINVAL, raw_ioctl(a, HLOCK_IOC_WAIT, &w));
	memset(&w, 0, sizeof(w));
	w.__pad = 1;
	EXPECT_EQ(-EINVAL, raw_ioctl(a, HLOCK_IOC_WAIT, &w));
	memset(&w, 0, sizeof(w));
	w.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, raw_ioctl(a, HLOCK_IOC_WAIT, &w));
	memset(&w, 0, sizeof(w));
	w.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, raw_ioctl(a, HLOCK_IOC_WAIT, &w));
	EXPECT_EQ(-EFAULT, raw_ioctl(a, HLOCK_IOC_WAIT, NULL));
	EXPECT_EQ(-EFAULT, raw_ioctl(a, HLOCK_IOC_WAIT, (void *)1));

	ASSERT_WAITING(a);
	ASSERT_UNLOCK(h, "bad/w", 0);
	ASSERT_GRANTED(a);
}

TEST_F_TIMEOUT(hl, bad_cmd, TEST_TMO)
{
	struct hlock_lock_args a;
	int fd = self->fd[0];

	args_init(&a, "bad/c", S, 0, 0);
	EXPECT_EQ(-ENOTTY, raw_ioctl(fd, _IO(HLOCK_IOC_MAGIC, 0), NULL));
	/* A number no command uses (the ABI grows from 1 upwards). */
	EXPECT_EQ(-ENOTTY, raw_ioctl(fd, _IOW(HLOCK_IOC_MAGIC, 0x7f,
					      struct hlock_lock_args), &a));
	/* A known number with the wrong direction. */
	EXPECT_EQ(-ENOTTY, raw_ioctl(fd, _IOR(HLOCK_IOC_MAGIC, 1,
					      struct hlock_lock_args), &a));
	EXPECT_EQ(-ENOTTY, raw_ioctl(fd, _IOWR(HLOCK_IOC_MAGIC, 99,
					       struct hlock_lock_args), &a));
	EXPECT_EQ(-ENOTTY, raw_ioctl(fd, _IOW(HLOCK_IOC_MAGIC + 1, 1,
					      struct hlock_lock_args), &a));
	EXPECT_EQ(NL, hlock_held(fd, "bad/c"));
}

/*
 * uapi: "Larger versions of this structure may be passed; the bytes the
 * kernel does not know must be zero (-E2BIG otherwise)."
 */
TEST_F_TIMEOUT(hl, larger_args_struct, TEST_TMO)
{
	struct {
		struct hlock_lock_args a;
		uint64_t tail[2];
	} big;
	unsigned long lock = _IOC(_IOC_WRITE, HLOCK_IOC_MAGIC, 1, sizeof(big));
	unsigned long unlock = _IOC(_IOC_WRITE, HLOCK_IOC_MAGIC, 2, sizeof(big));
	unsigned long held = _IOC(_IOC_WRITE, HLOCK_IOC_MAGIC, 4, sizeof(big));
	int fd = self->fd[0];

	memset(&big, 0, sizeof(big));
	args_init(&big.a, "big/r", S, 0, 0);
	ASSERT_EQ(0, raw_ioctl(fd, lock, &big));
	args_init(&big.a, "big/r", 0, 0, 0);
	ASSERT_EQ(S, raw_ioctl(fd, held, &big));

	args_init(&big.a, "big/s", S, 0, 0);
	big.tail[1] = 1;
	ASSERT_EQ(-E2BIG, raw_ioctl(fd, lock, &big));
	ASSERT_HELD(fd, "big/s", NL);
	ASSERT_HELD(fd, "big/r", S);

	/* An unlock of that size goes by the same copy as a lock's. */
	memset(&big, 0, sizeof(big));
	args_init(&big.a, "big/r", 0, 0, 0);
	big.tail[0] = 1;
	ASSERT_EQ(-E2BIG, raw_ioctl(fd, unlock, &big));
	ASSERT_HELD(fd, "big/r", S);
	big.tail[0] = 0;
	ASSERT_EQ(0, raw_ioctl(fd, unlock, &big));
	ASSERT_HELD(fd, "big/r", NL);
}

/*
 * The arguments and the path are read to their last byte and no further:
 * at the very end of a page before an inaccessible one they work, one byte
 * across is -EFAULT with nothing locked.  Lengths around the word size.
 */
TEST_F_TIMEOUT(hl, args_and_path_at_page_end, TEST_TMO)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct hlock_lock_args *a;
	int fd = self->fd[0];
	char *map, *end, *path;
	unsigned int len;

	map = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(map != MAP_FAILED);
	ASSERT_EQ(0, mprotect(map + pg, pg, PROT_NONE));
	end = map + pg;

	for (len = 1; len <= 3 * sizeof(uint64_t) + 1; len++) {
		path = end - len;
		memset(path, 'a' + len % 26, len);
		a = (struct hlock_lock_args *)(map + len * sizeof(*a));
		memset(a, 0, sizeof(*a));
		a->path = (uint64_t)(uintptr_t)path;
		a->path_len = len;
		a->mode = X;
		ASSERT_EQ(0, raw_ioctl(fd, HLOCK_IOC_LOCK, a)) {
			TH_LOG("path of %u bytes at the page end", len);
		}
		a->mode = 0;
		EXPECT_EQ(X, raw_ioctl(fd, HLOCK_IOC_HELD, a));
		EXPECT_EQ(0, raw_ioctl(fd, HLOCK_IOC_UNLOCK, a));
		/* One byte longer, still ending at the page end... */
		a->path = (uint64_t)(uintptr_t)(path - 1);
		a->path_len = len + 1;
		a->mode = X;
		path[-1] = 'a';
		EXPECT_EQ(0, raw_ioctl(fd, HLOCK_IOC_LOCK, a));
		a->mode = 0;
		EXPECT_EQ(0, raw_ioctl(fd, HLOCK_IOC_UNLOCK, a));
		a->mode = X;
		/* ...and running one byte into the next page. */
		a->path = (uint64_t)(uintptr_t)path;
		EXPECT_EQ(-EFAULT, raw_ioctl(fd, HLOCK_IOC_LOCK, a));
	}

	/* The argument structure itself, ending at the page end and across. */
	path = map;
	memcpy(path, "pe/x", 4);
	a = (struct hlock_lock_args *)(end - sizeof(*a));
	memset(a, 0, sizeof(*a));
	a->path = (uint64_t)(uintptr_t)path;
	a->path_len = 4;
	a->mode = S;
	ASSERT_EQ(0, raw_ioctl(fd, HLOCK_IOC_LOCK, a));
	ASSERT_HELD(fd, "pe/x", S);
	ASSERT_EQ(0, hlock_unlock(fd, "pe/x"));
	for (len = 1; len < sizeof(*a); len += 7) {
		a = (struct hlock_lock_args *)(end - sizeof(*a) + len);
		EXPECT_EQ(-EFAULT, raw_ioctl(fd, HLOCK_IOC_LOCK, a));
	}
	ASSERT_HELD(fd, "pe/x", NL);
	ASSERT_HELD(fd, "pe", NL);
	ASSERT_HELD(fd, "", NL);
	munmap(map, 2 * pg);
}

/* Paths and limits, through the library. */
TEST_F_TIMEOUT(hl, paths_and_limits, TEST_TMO)
{
	static const char *const bad[] = { "/a", "a/", "a//b", "/", "//",
					   "x/y/", "/x/y" };
	char name[HLOCK_NAME_MAX + 2], path[HLOCK_PATH_MAX + 64];
	int fd = self->fd[0], other = self->fd[1];
	unsigned int i;
	size_t len;

	/* rule: "" is the root, a valid path. */
	ASSERT_EQ(0, hlock_lock(fd, "", IS, 0, 0));
	ASSERT_HELD(fd, "", IS);
	ASSERT_UNLOCK(fd, "", 0);

	/*
	 * rule: "/a", "a/", "a//b" (empty components) are -EINVAL, for
	 * every path ioctl: a malformed path is bad input before it is an
	 * unknown resource (-ENOENT).
	 */
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, hlock_lock(fd, bad[i], S, 0, 0))
			TH_LOG("lock \"%s\"", bad[i]);
		EXPECT_EQ(-EINVAL, hlock_held(fd, bad[i]))
			TH_LOG("held \"%s\"", bad[i]);
		EXPECT_EQ(-EINVAL, hlock_unlock(fd, bad[i]))
			TH_LOG("unlock \"%s\"", bad[i]);
	}
	EXPECT_EQ(NL, hlock_held(fd, ""));

	/* rule: bad modes are -EINVAL. */
	EXPECT_EQ(-EINVAL, hlock_lock(fd, "lim/m", 7, 0, 0));
	EXPECT_EQ(-EINVAL, hlock_lock(fd, "lim/m", 6, 0, 0));
	EXPECT_EQ(-EINVAL, hlock_lock(fd, "lim/m", NL, 0, 0));
	EXPECT_EQ(-EINVAL, hlock_lock(fd, "lim/m", -1, 0, 0));
	/* rule: unknown flags are -EINVAL. */
	EXPECT_EQ(-EINVAL, hlock_lock(fd, "lim/m", S, 1U << 3, 0));
	EXPECT_EQ(NL, hlock_held(fd, "lim/m"));

	/* rule: components are 1..255 bytes. */
	memset(name, 'n', HLOCK_NAME_MAX + 1);
	name[HLOCK_NAME_MAX + 1] = '\0';
	snprintf(path, sizeof(path), "lim/%s", name);
	EXPECT_EQ(-ENAMETOOLONG, hlock_lock(fd, path, S, 0, 0));
	EXPECT_EQ(-ENAMETOOLONG, hlock_held(fd, path));
	name[HLOCK_NAME_MAX] = '\0';
	snprintf(path, sizeof(path), "lim/%s", name);
	ASSERT_EQ(0, hlock_lock(fd, path, S, 0, 0));
	ASSERT_HELD(fd, path, S);
	ASSERT_UNLOCK(fd, path, 0);

	/* rule: up to 8 levels below the root. */
	strcpy(path, "l1/l2/l3/l4/l5/l6/l7/l8");
	ASSERT_EQ(0, hlock_lock(fd, path, X, 0, 0));
	ASSERT_HELD(fd, path, X);
	ASSERT_HELD(fd, "l1/l2/l3/l4/l5/l6/l7", IX);
	ASSERT_UNLOCK(fd, path, 0);
	strcat(path, "/l9");
	EXPECT_EQ(-ENAMETOOLONG, hlock_lock(fd, path, X, 0, 0));
	EXPECT_EQ(-ENAMETOOLONG, hlock_held(fd, path));
	EXPECT_EQ(NL, hlock_held(fd, "l1"));

	/* The longest valid path: 8 names of 255 bytes, HLOCK_PATH_MAX. */
	path[0] = '\0';
	for (i = 0; i < HLOCK_MAX_DEPTH; i++) {
		if (i)
			strcat(path, "/");
		memset(name, 'a' + i, HLOCK_NAME_MAX);
		name[HLOCK_NAME_MAX] = '\0';
		strcat(path, name);
	}
	len = strlen(path);
	ASSERT_EQ(HLOCK_PATH_MAX, (int)len);
	ASSERT_EQ(0, hlock_lock(fd, path, S, 0, 0));
	ASSERT_HELD(fd, path, S);
	ASSERT_TRY(other, path, X, -EAGAIN);
	ASSERT_UNLOCK(fd, path, 0);
	/* One byte more is too long, whatever else is wrong with it. */
	strcat(path, "z");
	EXPECT_EQ(-ENAMETOOLONG, hlock_lock(fd, path, S, 0, 0));

	/* rule: neither held nor pending is -ENOENT. */
	EXPECT_EQ(-ENOENT, hlock_unlock(fd, "lim/none"));
	EXPECT_EQ(-ENOENT, hlock_unlock(fd, ""));
	EXPECT_EQ(-ENOENT, hlock_downgrade(fd, "lim/none", IS));
	EXPECT_EQ(-ENOENT, hlock_wait(fd, 0));
	EXPECT_EQ(NL, hlock_held(fd, "lim/none"));
	EXPECT_EQ(NL, hlock_held(fd, ""));
}

/* ------------------------------------------------------------------ */
/* 4. The fifo policy (sets grant_policy=fifo, restores batch) */

FIXTURE(fifo) {
	int fd[NLOCKERS];
	bool set;
};

FIXTURE_SETUP(fifo)
{
	int i;

	self->set = false;
	for (i = 0; i < NLOCKERS; i++)
		self->fd[i] = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	if (access(SYSFS_POLICY, W_OK))
		SKIP(return, SYSFS_POLICY " is not writable");
	for (i = 0; i < NLOCKERS; i++) {
		self->fd[i] = hlock_open();
		ASSERT_LE(0, self->fd[i]);
	}
	/* Last, so that the teardown runs whenever the policy was set. */
	ASSERT_EQ(0, write_policy("fifo"));
	self->set = true;
}

FIXTURE_TEARDOWN(fifo)
{
	int i;

	for (i = 0; i < NLOCKERS; i++)
		if (self->fd[i] >= 0)
			close(self->fd[i]);
	if (self->set) {
		EXPECT_EQ(0, write_policy("batch"));
	}
}

static void check_fifo_set(struct __test_metadata *_metadata, int fd)
{
	struct hlock_info info;
	char policy[64];

	ASSERT_EQ(0, read_policy(policy, sizeof(policy)));
	ASSERT_STREQ("fifo", policy);
	ASSERT_EQ(0, hlock_info(fd, &info));
	ASSERT_EQ(HLOCK_POLICY_FIFO, (int)info.grant_policy);
}

TEST_F_TIMEOUT(fifo, fifo_grant, TEST_TMO)
{
	const char *p = "fifo/r";
	int h = self->fd[0];
	int *q = &self->fd[1];	/* IS IS X X S IS */
	int i;

	check_fifo_set(_metadata, h);
	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(-EINPROGRESS, hlock_lock(q[i], p, queue_modes[i],
						   ASYNC, 0))
			TH_LOG("queue entry %d", i + 1);
	}
	ASSERT_UNLOCK(h, p, 0);

	/* rule: fifo stops at the first conflicting request. */
	ASSERT_GRANTED(q[0]);
	ASSERT_GRANTED(q[1]);
	for (i = 2; i < 6; i++) {
		ASSERT_EQ(-EAGAIN, hlock_wait(q[i], 0))
			TH_LOG("queue entry %d granted", i + 1);
	}

	ASSERT_UNLOCK(q[0], p, 0);
	ASSERT_WAITING(q[2]);
	ASSERT_UNLOCK(q[1], p, 0);
	ASSERT_GRANTED(q[2]);
	ASSERT_WAITING(q[3]);
	ASSERT_WAITING(q[4]);
	ASSERT_WAITING(q[5]);

	ASSERT_UNLOCK(q[2], p, 0);
	ASSERT_GRANTED(q[3]);
	ASSERT_WAITING(q[4]);
	ASSERT_WAITING(q[5]);

	ASSERT_UNLOCK(q[3], p, 0);
	ASSERT_GRANTED(q[4]);
	ASSERT_GRANTED(q[5]);
}

/*
 * rule: fifo "except right after a compatible-first request is granted,
 * when it skips like batch".  Queue: S|CF, X, S.
 */
TEST_F_TIMEOUT(fifo, fifo_compat_first_skips, TEST_TMO)
{
	const char *p = "fifocf/r";
	int h = self->fd[0], a = self->fd[1], b = self->fd[2];
	int c = self->fd[3];

	check_fifo_set(_metadata, h);
	ASSERT_EQ(0, hlock_lock(h, p, X, 0, 0));
	ASSERT_QUEUED(a, p, S, CF);
	ASSERT_QUEUED(b, p, X, 0);
	ASSERT_QUEUED(c, p, S, 0);
	ASSERT_UNLOCK(h, p, 0);

	ASSERT_GRANTED(a);
	ASSERT_GRANTED(c);
	ASSERT_WAITING(b);

	ASSERT_UNLOCK(a, p, 0);
	ASSERT_WAITING(b);
	ASSERT_UNLOCK(c, p, 0);
	ASSERT_GRANTED(b);
}

/*
 * Defect: when a request was withdrawn, a conversion it had made was
 * turned back (head_downgrade(), which runs a grant pass) before the
 * request got its old flags back, so that pass still saw the
 * conversion's COMPAT_FIRST and, under fifo, granted waiters out of order.
 *
 * E holds IX on p and A holds IS; A's async S|COMPAT_FIRST converts IS ->
 * S and waits for E; behind it queue IX(h1) (conflicts with the pending
 * S), S(w2), IX(w3).  E's unlock grants A's conversion (now S with
 * COMPAT_FIRST), not yet collected; nothing of the queue fits with S.  A
 * then withdraws it by unlocking p: back to IS without COMPAT_FIRST, which
 * grants h1; w2's S conflicts with h1's IX, so fifo stops there and w3
 * must keep waiting behind w2.
 */
TEST_F_TIMEOUT(fifo, fifo_cancelled_conversion_drops_compat_first, TEST_TMO)
{
	const char *p = "fifocc/r";
	int e = self->fd[0], a = self->fd[1], h1 = self->fd[2];
	int w2 = self->fd[3], w3 = self->fd[4];

	check_fifo_set(_metadata, e);
	ASSERT_EQ(0, hlock_lock(e, p, IX, 0, 0));
	ASSERT_EQ(0, hlock_lock(a, p, IS, 0, 0));
	ASSERT_QUEUED(a, p, S, CF);		/* IS -> S waits for E's IX */
	ASSERT_QUEUED(h1, p, IX, 0);		/* conflicts with the S pending */
	ASSERT_QUEUED(w2, p, S, 0);
	ASSERT_QUEUED(w3, p, IX, 0);

	ASSERT_UNLOCK(e, p, 0);
	/* A's conversion is granted, not collected: it holds S. */
	ASSERT_EQ(1, pollin(a, 5000));
	ASSERT_HELD(a, p, S);
	ASSERT_WAITING(h1);
	ASSERT_WAITING(w2);
	ASSERT_WAITING(w3);

	/* rule: unlock withdraws it, also granted: A is back to IS. */
	ASSERT_UNLOCK(a, p, 1);
	ASSERT_HELD(a, p, IS);
	ASSERT_EQ(-ENOENT, hlock_wait(a, 0));
	ASSERT_GRANTED(h1);
	ASSERT_WAITING(w2);
	ASSERT_EQ(-EAGAIN, hlock_wait(w3, 0))
		TH_LOG("w3's IX was granted past w2's S under fifo, by a grant pass that still saw the withdrawn conversion's COMPAT_FIRST");

	ASSERT_UNLOCK(h1, p, 0);
	ASSERT_UNLOCK(a, p, 0);
	ASSERT_GRANTED(w2);
	ASSERT_WAITING(w3);
	ASSERT_UNLOCK(w2, p, 0);
	ASSERT_GRANTED(w3);
}

#define SYSFS_CLUSTER	"/sys/module/hlock/parameters/cluster"

/*
 * The module parameter "cluster" on a machine without the DLM: every bad
 * binding gets a clear error and leaves the lock space as it was.
 */
TEST(cluster_param_errors)
{
	struct hlock_cluster_args args;
	char name[80], buf[80];
	int fd, ret;

	/* Loaded, or built in (the debug kernel): /sys/kernel/dlm. */
	if (access("/sys/module/dlm", F_OK) == 0 ||
	    access("/sys/kernel/dlm", F_OK) == 0)
		SKIP(return, "the DLM is here: the errors differ");
	fd = hlock_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, hlock_lock(fd, "held", HLOCK_X, 0, 0));
	ASSERT_EQ(-EBUSY, write_file_str(SYSFS_CLUSTER, "hlock", 0))
		TH_LOG("a locker is open: the space cannot be replaced");
	ASSERT_EQ(HLOCK_X, hlock_held(fd, "held"));
	close(fd);
	ret = write_file_str(SYSFS_CLUSTER, "hlock", 0);
	ASSERT_EQ(-ENOPROTOOPT, ret)
		TH_LOG("without dlm.ko: %s", strerror(-ret));
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	ASSERT_EQ(-ENAMETOOLONG, write_file_str(SYSFS_CLUSTER, name, 0));
	/* ASCII letters only: not a Latin-1 one, which isalnum() takes. */
	ASSERT_EQ(-EINVAL, write_file_str(SYSFS_CLUSTER, "caf\xe9", 0));
	/* Nor a NUL in the ioctl's counted name. */
	fd = hlock_open();
	ASSERT_GE(fd, 0);
	memset(&args, 0, sizeof(args));
	args.name = (uintptr_t)"ab\0c";
	args.name_len = 4;
	args.flags = HLOCK_CLUSTER_F_SET;
	ASSERT_EQ(-EINVAL, raw_ioctl(fd, HLOCK_IOC_CLUSTER, &args));
	close(fd);
	ASSERT_EQ(0, read_file_str(SYSFS_CLUSTER, buf, sizeof(buf)));
	ASSERT_STREQ("", buf);
	/* Clearing it when clear is no change, and nothing fails. */
	ASSERT_EQ(0, write_file_str(SYSFS_CLUSTER, "\n", 0));
	fd = hlock_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, hlock_lock(fd, "held", HLOCK_X, 0, 0));
	close(fd);
}

TEST_HARNESS_MAIN
