// SPDX-License-Identifier: GPL-2.0
/*
 * hlock leases: a lock call with lease_ns holds its acquisition under a
 * lease; HLOCK_IOC_RENEW starts the locker's leases again; a lease that
 * expired is taken over only when a request waits on a conflict with it.
 * The takeover releases the acquisition as an unlock would (its intents
 * too, what the locker held below it too, waiters granted in order); the
 * old locker's next unlock of the path says ESTALE, once, and poll()
 * reports POLLPRI until then.
 *
 * Conventions:
 *  - Most tests use two lockers of one process: V, whose lease expires,
 *    and W, which waits.  A locker that does not renew is a stopped
 *    holder as far as the module can tell; one test stops a real process
 *    with SIGSTOP all the same.
 *  - No test asserts how long anything takes.  A lease "has expired"
 *    once the monotonic clock passed it (sleep_past()); waits that must
 *    end are bounded by SETTLE_NS, a hang guard.  The renewal test uses a
 *    lease many times longer than the pause between renewals.
 *  - The lock space is shared with nothing else while a test runs, so
 *    its takeover count is compared before and after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "hlock.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

/* A lease meant to expire while the test looks away. */
#define SHORT_LEASE	(50 * MS)
/* How long a test sleeps to be sure SHORT_LEASE has expired. */
#define PAST_SHORT	(4 * SHORT_LEASE)
/*
 * The renewal test: a lease, the pause between renewals, the run.  The
 * lease must outlast the longest pause a busy host gives a TCG guest
 * between two renewals (a 1 s lease was once taken over on a loaded
 * machine); the run must outlast the lease, so that only the renewals
 * can have kept it.
 */
#define RENEW_LEASE	(3 * SEC)
#define RENEW_EVERY	(20 * MS)
#define RENEW_RUN	(2 * RENEW_LEASE)

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / SEC, ns % SEC };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Sleep until the monotonic clock is @ns past @since. */
static void sleep_past(int64_t since, int64_t ns)
{
	int64_t left;

	while ((left = since + ns - now_ns()) > 0)
		sleep_ns(left);
}

static uint64_t takeovers(int fd, unsigned int scope)
{
	struct hlock_stats st;

	memset(&st, 0, sizeof(st));
	if (hlock_stats(fd, scope, &st))
		return UINT64_MAX;
	return st.takeovers;
}

#define CGROUP_ROOT	"/sys/fs/cgroup"

/* Write @val to the file @dir/@name.  Return: 0 or -errno. */
static int cg_write(const char *dir, const char *name, const char *val)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* The value of @key in @dir/memory.stat, or -1. */
static long long cg_stat(const char *dir, const char *key)
{
	char path[128], k[64];
	long long v, found = -1;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fscanf(fp, "%63s %lld", k, &v) == 2)
		if (!strcmp(k, key)) {
			found = v;
			break;
		}
	fclose(fp);
	return found;
}

/*
 * Whether the cgroup v2 hierarchy, mounted at CGROUP_ROOT if it was not,
 * has the memory controller.
 */
static bool have_memcg(void)
{
	char buf[256] = "";
	ssize_t n;
	int fd;

	if (access(CGROUP_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CGROUP_ROOT, "cgroup2", 0, NULL))
		return false;
	fd = open(CGROUP_ROOT "/cgroup.controllers", O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 && strstr(buf, "memory");
}

FIXTURE(lease) {
	int v;		/* the holder whose lease expires */
	int w;		/* the waiter */
	int t;		/* a third locker */
	uint64_t space;	/* the space's takeovers when the test began */
};

FIXTURE_SETUP(lease)
{
	struct hlock_info info;

	self->v = self->w = self->t = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	self->v = hlock_open();
	ASSERT_LE(0, self->v);
	ASSERT_EQ(0, hlock_info(self->v, &info));
	if (!(info.features & HLOCK_FEAT_LEASE))
		SKIP(return, "the module has no leases (HLOCK_FEAT_LEASE)");
	self->w = hlock_open();
	ASSERT_LE(0, self->w);
	self->t = hlock_open();
	ASSERT_LE(0, self->t);
	self->space = takeovers(self->v, HLOCK_STATS_GLOBAL);
	ASSERT_NE(UINT64_MAX, self->space);
}

FIXTURE_TEARDOWN(lease)
{
	if (self->v >= 0)
		close(self->v);
	if (self->w >= 0)
		close(self->w);
	if (self->t >= 0)
		close(self->t);
}

#define ASSERT_GRANTED(fd) \
	ASSERT_EQ(0, hlock_wait(fd, SETTLE_NS)) TH_LOG("%s: not granted", #fd)
#define ASSERT_WAITING(fd) \
	ASSERT_EQ(-EAGAIN, hlock_wait(fd, 0)) TH_LOG("%s: not waiting", #fd)

/* @fd's acquisition on @path was taken over: ESTALE once, POLLPRI till then. */
#define ASSERT_STALE(fd, path) do {					\
	ASSERT_EQ(POLLPRI, poll_pri(fd) & POLLPRI);			\
	ASSERT_EQ(NL, hlock_held(fd, path));				\
	ASSERT_EQ(-ESTALE, hlock_unlock(fd, path));			\
	ASSERT_EQ(0, poll_events(fd) & POLLPRI);			\
	ASSERT_EQ(-ENOENT, hlock_unlock(fd, path));			\
} while (0)

/* ------------------------------------------------------------------ */
/* Arguments */

TEST_F_TIMEOUT(lease, bad_args, TEST_TMO)
{
	struct hlock_lock_args a;
	const char *p = "lbad";

	ASSERT_EQ(-EINVAL, hlock_lock_lease(self->v, p, X, 0, -1, -1));
	ASSERT_EQ(-EINVAL, hlock_lock_lease(self->v, p, X, 0, -1, INT64_MIN));
	ASSERT_EQ(NL, hlock_held(self->v, p));
	ASSERT_EQ(0, hlock_lock(self->v, p, X, 0, -1));
	/* A lease on any other path ioctl, all else valid. */
	memset(&a, 0, sizeof(a));
	a.path = (uintptr_t)p;
	a.path_len = strlen(p);
	a.lease_ns = SEC;
	ASSERT_EQ(-EINVAL, raw_ioctl(self->v, HLOCK_IOC_UNLOCK, &a));
	ASSERT_EQ(-EINVAL, raw_ioctl(self->v, HLOCK_IOC_HELD, &a));
	a.mode = S;
	ASSERT_EQ(-EINVAL, raw_ioctl(self->v, HLOCK_IOC_DOWNGRADE, &a));
	ASSERT_EQ(X, hlock_held(self->v, p));
	/* RENEW takes no argument. */
	ASSERT_EQ(-EINVAL, raw_ioctl(self->v, HLOCK_IOC_RENEW, (void *)1));
	ASSERT_EQ(0, hlock_renew(self->v));
	ASSERT_EQ(0, hlock_unlock(self->v, p));
	/* Nothing taken over: an unlock of a free path is ENOENT. */
	ASSERT_EQ(-ENOENT, hlock_unlock(self->v, p));
}

/* ------------------------------------------------------------------ */
/* Takeover */

/*
 * An expired lease nobody waits for stays held; a compatible request is
 * granted beside it; a conflicting one takes it over.
 */
TEST_F_TIMEOUT(lease, taken_only_when_wanted, TEST_TMO)
{
	const char *p = "lonly/c";
	uint64_t lost, won;
	int64_t t0 = now_ns();

	ASSERT_EQ(0, hlock_lock_lease(self->v, p, S, 0, -1, SHORT_LEASE));
	ASSERT_EQ(0, hlock_token(self->v, p, &lost));
	sleep_past(t0, PAST_SHORT);
	ASSERT_EQ(S, hlock_held(self->v, p));
	ASSERT_EQ(IS, hlock_held(self->v, "lonly"));
	/* Compatible: no takeover. */
	ASSERT_EQ(0, hlock_lock(self->t, p, S, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->t, p));
	ASSERT_EQ(S, hlock_held(self->v, p));
	ASSERT_EQ(0, poll_events(self->v) & POLLPRI);
	ASSERT_EQ(self->space, takeovers(self->v, HLOCK_STATS_GLOBAL));
	/* A conflicting waiter, blocking: granted once it is taken over. */
	ASSERT_EQ(0, hlock_lock(self->w, p, X, 0, SETTLE_NS));
	ASSERT_EQ(X, hlock_held(self->w, p));
	/* The successor's fencing token is above the one taken over. */
	ASSERT_EQ(0, hlock_token(self->w, p, &won));
	ASSERT_LT(lost, won);
	ASSERT_EQ(-ENOENT, hlock_token(self->v, p, &lost));
	ASSERT_EQ(NL, hlock_held(self->v, "lonly"));
	ASSERT_EQ(NL, hlock_held(self->v, ""));
	ASSERT_EQ(1ULL, takeovers(self->v, HLOCK_STATS_LOCKER));
	ASSERT_EQ(0ULL, takeovers(self->w, HLOCK_STATS_LOCKER));
	ASSERT_EQ(self->space + 1, takeovers(self->v, HLOCK_STATS_GLOBAL));
	ASSERT_STALE(self->v, p);
	/* The locker works on: the path can be locked again. */
	ASSERT_EQ(0, hlock_unlock(self->w, p));
	ASSERT_EQ(0, hlock_lock(self->v, p, X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->v, p));
}

/*
 * Wait until @fd's record of @path shows its lease expired (no time
 * left): 0, or -ETIMEDOUT.
 */
static int await_expired(int fd, const char *path)
{
	int64_t end = now_ns() + SETTLE_NS;
	const struct hlock_lock_record *rec;
	bool expired = false;
	void *buf;
	int i, n;

	while (!expired && now_ns() < end) {
		n = hlock_table_alloc(fd, &buf);
		for (i = 0, rec = buf; i < n; i++,
		     rec = hlock_record_next(rec)) {
			const struct hlock_record_ext *ext =
				hlock_record_ext(rec);

			if (!strcmp(hlock_record_path(rec), path) && ext &&
			    ext->flags & HLOCK_REC_LEASE && ext->lease_ns <= 0)
				expired = true;
		}
		if (n >= 0)
			free(buf);
		if (!expired)
			usleep(10000);
	}
	return expired ? 0 : -ETIMEDOUT;
}

/*
 * A locker's own conversion claims nothing of its own lease: S held under
 * a short lease, a conversion to X waits for another S holder and the
 * lease expires meanwhile; once granted, nobody else waiting, the X stays
 * (the expired lease was filed as claimed by the conversion, and taken
 * over as soon as it was granted).
 */
TEST_F_TIMEOUT(lease, own_conversion_claims_nothing, TEST_TMO)
{
	const char *p = "lconv";
	int64_t t0 = now_ns();

	ASSERT_EQ(0, hlock_lock_lease(self->v, p, S, 0, -1, SHORT_LEASE));
	ASSERT_EQ(0, hlock_lock(self->w, p, S, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->v, p, X, ASYNC, -1));
	sleep_past(t0, PAST_SHORT);
	/*
	 * Expired while the conversion waits (what the table shows), and
	 * filed since: the lease work runs as soon as its timer fires.
	 */
	ASSERT_EQ(0, await_expired(self->v, p));
	sleep_past(now_ns(), PAST_SHORT);
	ASSERT_WAITING(self->v);
	ASSERT_EQ(0, hlock_unlock(self->w, p));
	ASSERT_GRANTED(self->v);
	/* The lease work had its chance. */
	sleep_past(now_ns(), PAST_SHORT);
	ASSERT_EQ(X, hlock_held(self->v, p));
	ASSERT_EQ(0, poll_events(self->v) & POLLPRI);
	ASSERT_EQ(self->space, takeovers(self->v, HLOCK_STATS_GLOBAL));
	ASSERT_EQ(1, hlock_unlock(self->v, p));
	ASSERT_EQ(0, hlock_unlock(self->v, p));
}

/*
 * A process-owned locker's owner exits after a lease of it was taken over:
 * the exit leaves the locker as a close would, owing no ESTALE to the
 * process that shares it, which locks and unlocks the path as any other.
 */
TEST_F_TIMEOUT(lease, owner_exit_forgets_takeovers, TEST_TMO)
{
	const char *p = "lowner";
	int go[2], ready[2];
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* The owner: a leased X, then an exit when told. */
		if (hlock_owner(self->v, HLOCK_OWNER_PROCESS) ||
		    hlock_lock_lease(self->v, p, X, 0, -1, SHORT_LEASE) ||
		    write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	usleep(PAST_SHORT / 1000);
	/* Taken over by a waiter. */
	ASSERT_EQ(0, hlock_lock(self->w, p, X, 0, SETTLE_NS));
	ASSERT_EQ(0, hlock_unlock(self->w, p));
	ASSERT_EQ(POLLPRI, poll_pri(self->v) & POLLPRI);
	ASSERT_EQ(1, write(go[1], &c, 1));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	ASSERT_EQ(0, poll_events(self->v) & POLLPRI);
	ASSERT_EQ(0, hlock_lock(self->v, p, X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->v, p));
	ASSERT_EQ(-ENOENT, hlock_unlock(self->v, p));
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
}

/* The waiter queued first, the lease expires while it waits. */
TEST_F_TIMEOUT(lease, expires_while_waited, TEST_TMO)
{
	const char *p = "lexp";

	ASSERT_EQ(0, hlock_lock_lease(self->v, p, X, 0, -1, SHORT_LEASE));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->w, p, S, ASYNC, -1));
	ASSERT_GRANTED(self->w);
	ASSERT_EQ(S, hlock_held(self->w, p));
	ASSERT_EQ(self->space + 1, takeovers(self->v, HLOCK_STATS_GLOBAL));
	ASSERT_STALE(self->v, p);
}

/* A holder stopped with SIGSTOP loses its lease to a waiter. */
TEST_F_TIMEOUT(lease, stopped_holder, TEST_TMO)
{
	const char *p = "lstop";
	int up[2], down[2], status;
	pid_t pid;

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = hlock_open();
		char r = 'E';

		close(up[0]);
		close(down[1]);
		if (fd < 0 || hlock_lock_lease(fd, p, X, 0, -1, SHORT_LEASE))
			_exit(1);
		report(up[1], 'L');
		/* Stopped here; continued, it looks at what is left. */
		if (read_report(down[0]) != 'C')
			_exit(2);
		if ((poll_events(fd) & POLLPRI) &&
		    hlock_held(fd, p) == NL &&
		    hlock_unlock(fd, p) == -ESTALE &&
		    !(poll_events(fd) & POLLPRI) &&
		    hlock_unlock(fd, p) == -ENOENT)
			r = 'S';
		report(up[1], r);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	ASSERT_EQ('L', read_report(up[0]));
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(pid, waitpid(pid, &status, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(status));
	ASSERT_EQ(0, hlock_lock(self->w, p, X, 0, SETTLE_NS));
	ASSERT_EQ(0, kill(pid, SIGCONT));
	report(down[1], 'C');
	ASSERT_EQ('S', read_report(up[0]));
	ASSERT_EQ(0, wait_child(pid));
	ASSERT_EQ(self->space + 1, takeovers(self->w, HLOCK_STATS_GLOBAL));
}

/* Renewals keep a lease past its first expiry, a waiter waiting. */
TEST_F_TIMEOUT(lease, renew_keeps_it, TEST_TMO)
{
	const char *p = "lrenew";
	int64_t t0 = now_ns();
	int n = 0;

	ASSERT_EQ(0, hlock_lock_lease(self->v, p, X, 0, -1, RENEW_LEASE));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->w, p, X, ASYNC, -1));
	while (now_ns() - t0 < RENEW_RUN) {
		sleep_ns(RENEW_EVERY);
		ASSERT_EQ(1, hlock_renew(self->v));
		n++;
	}
	ASSERT_WAITING(self->w);
	ASSERT_EQ(X, hlock_held(self->v, p));
	ASSERT_EQ(0ULL, takeovers(self->v, HLOCK_STATS_LOCKER));
	/* Once the holder stops renewing, the waiter gets it. */
	ASSERT_EQ(0, hlock_wait(self->w, RENEW_LEASE + SETTLE_NS));
	ASSERT_STALE(self->v, p);
	ASSERT_EQ(0, hlock_renew(self->v));
	TH_LOG("%d renewals", n);
}

/* A waiter on the parent takes over the intent the lease holds there. */
TEST_F_TIMEOUT(lease, intents_released, TEST_TMO)
{
	ASSERT_EQ(0, hlock_lock_lease(self->v, "lint/c", S, 0, -1,
				      SHORT_LEASE));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->w, "lint", X, ASYNC, -1));
	ASSERT_GRANTED(self->w);
	ASSERT_EQ(NL, hlock_held(self->v, "lint"));
	ASSERT_STALE(self->v, "lint/c");
	/* Through the child: its intents go too. */
	ASSERT_EQ(0, hlock_unlock(self->w, "lint"));
	ASSERT_EQ(0, hlock_lock_lease(self->v, "lint/d", X, 0, -1,
				      SHORT_LEASE));
	ASSERT_EQ(0, hlock_lock(self->w, "lint/d", X, 0, SETTLE_NS));
	ASSERT_EQ(NL, hlock_held(self->v, "lint"));
	ASSERT_EQ(0, hlock_unlock(self->w, "lint/d"));
	ASSERT_EQ(0, hlock_lock(self->t, "lint", X, 0, 0));
	ASSERT_STALE(self->v, "lint/d");
	ASSERT_EQ(self->space + 2, takeovers(self->t, HLOCK_STATS_GLOBAL));
}

/* The waiters behind the taken lease are granted in their order. */
TEST_F_TIMEOUT(lease, waiters_in_order, TEST_TMO)
{
	const char *p = "lorder";
	int w2 = hlock_open();

	ASSERT_LE(0, w2);
	ASSERT_EQ(0, hlock_lock_lease(self->v, p, S, 0, -1, SHORT_LEASE));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->w, p, X, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->t, p, S, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(w2, p, S, ASYNC, -1));
	ASSERT_GRANTED(self->w);
	ASSERT_WAITING(self->t);
	ASSERT_WAITING(w2);
	ASSERT_EQ(0, hlock_unlock(self->w, p));
	ASSERT_GRANTED(self->t);
	ASSERT_GRANTED(w2);
	ASSERT_STALE(self->v, p);
	ASSERT_EQ(self->space + 1, takeovers(w2, HLOCK_STATS_GLOBAL));
	close(w2);
}

/* Recursive acquisitions: one lease, all of them taken over. */
TEST_F_TIMEOUT(lease, recursive, TEST_TMO)
{
	const char *p = "lrec";

	ASSERT_EQ(0, hlock_lock_lease(self->v, p, X, 0, -1, 100 * SEC));
	ASSERT_EQ(0, hlock_lock(self->v, p, X, 0, -1));
	/* The latest lease call sets its length. */
	ASSERT_EQ(0, hlock_lock_lease(self->v, p, S, 0, -1, SHORT_LEASE));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->w, p, X, ASYNC, -1));
	ASSERT_GRANTED(self->w);
	ASSERT_STALE(self->v, p);
	ASSERT_EQ(1ULL, takeovers(self->v, HLOCK_STATS_LOCKER));
}

/* What the locker held below the leased path goes with it. */
TEST_F_TIMEOUT(lease, descendants_released, TEST_TMO)
{
	ASSERT_EQ(0, hlock_lock(self->v, "ldesc/a/b", S, 0, -1));
	ASSERT_EQ(0, hlock_lock_lease(self->v, "ldesc", X, 0, -1,
				      SHORT_LEASE));
	ASSERT_EQ(0, hlock_lock(self->v, "ldesc/c", X, 0, -1));
	ASSERT_EQ(0, hlock_lock(self->v, "other", X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->w, "ldesc", IS, ASYNC, -1));
	ASSERT_GRANTED(self->w);
	ASSERT_EQ(NL, hlock_held(self->v, "ldesc/a/b"));
	ASSERT_EQ(NL, hlock_held(self->v, "ldesc/a"));
	ASSERT_EQ(NL, hlock_held(self->v, "ldesc/c"));
	ASSERT_EQ(-ENOENT, hlock_unlock(self->v, "ldesc/c"));
	/* Off the path, nothing changes. */
	ASSERT_EQ(X, hlock_held(self->v, "other"));
	ASSERT_EQ(IX, hlock_held(self->v, ""));
	ASSERT_STALE(self->v, "ldesc");
	ASSERT_EQ(0, hlock_unlock(self->v, "other"));
	ASSERT_EQ(NL, hlock_held(self->v, ""));
}

/* A downgrade keeps the lease; an unlock of the last acquisition ends it. */
TEST_F_TIMEOUT(lease, downgrade_and_unlock, TEST_TMO)
{
	const char *p = "ldown";
	int64_t t0 = now_ns();

	ASSERT_EQ(0, hlock_lock_lease(self->v, p, X, 0, -1, SHORT_LEASE));
	ASSERT_EQ(0, hlock_downgrade(self->v, p, S));
	sleep_past(t0, PAST_SHORT);
	/* S now: an S waiter is granted beside it, an X one takes it. */
	ASSERT_EQ(0, hlock_lock(self->t, p, S, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->t, p));
	ASSERT_EQ(0, hlock_lock(self->w, p, X, 0, SETTLE_NS));
	ASSERT_STALE(self->v, p);
	ASSERT_EQ(0, hlock_unlock(self->w, p));
	/* Unlocked before any waiter: nothing to take, nothing stale. */
	ASSERT_EQ(0, hlock_lock_lease(self->v, p, X, 0, -1, SHORT_LEASE));
	ASSERT_EQ(1, hlock_renew(self->v));
	ASSERT_EQ(0, hlock_unlock(self->v, p));
	ASSERT_EQ(0, hlock_renew(self->v));
	ASSERT_EQ(0, hlock_lock(self->w, p, X, 0, SETTLE_NS));
	ASSERT_EQ(-ENOENT, hlock_unlock(self->v, p));
	ASSERT_EQ(0, poll_events(self->v) & POLLPRI);
	ASSERT_EQ(self->space + 1, takeovers(self->v, HLOCK_STATS_GLOBAL));
}

/* HLOCK_F_ASYNC: the lease starts at the grant. */
TEST_F_TIMEOUT(lease, async_starts_at_grant, TEST_TMO)
{
	const char *p = "lasync";

	ASSERT_EQ(0, hlock_lock(self->t, p, X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock_lease(self->v, p, X, ASYNC, -1,
						 SHORT_LEASE));
	ASSERT_EQ(0, hlock_unlock(self->t, p));
	ASSERT_GRANTED(self->v);
	ASSERT_EQ(0, hlock_lock(self->w, p, X, 0, SETTLE_NS));
	ASSERT_STALE(self->v, p);
}

/*
 * An asynchronous grant its caller has not collected is a lock call in
 * flight: its lease is not taken over until it is collected (found by
 * hlock_interact: the caller collected a grant already taken over).
 */
TEST_F_TIMEOUT(lease, uncollected_grant_kept, TEST_TMO)
{
	const char *p = "luncol";

	ASSERT_EQ(0, hlock_lock(self->t, p, X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock_lease(self->v, p, X, ASYNC, -1,
						 SHORT_LEASE));
	ASSERT_EQ(0, hlock_unlock(self->t, p));
	/* Granted, not collected; its lease runs out; a waiter comes. */
	sleep_ns(PAST_SHORT);
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->w, p, X, ASYNC, -1));
	sleep_ns(PAST_SHORT);
	ASSERT_WAITING(self->w);
	ASSERT_EQ(self->space, takeovers(self->v, HLOCK_STATS_GLOBAL));
	ASSERT_EQ(0, hlock_wait(self->v, 0));
	/* Collected: now (at once) the waiter's claim takes it over. */
	ASSERT_GRANTED(self->w);
	ASSERT_STALE(self->v, p);
}

/*
 * The unlock of the path of a queued asynchronous request withdraws it,
 * also when the path's lease was taken over before and the unlock owes
 * its ESTALE: V queues X behind W, which took V's lease over, and unlocks.
 */
TEST_F_TIMEOUT(lease, unlock_cancels_after_takeover, TEST_TMO)
{
	const char *p = "lcancel";
	int64_t t0 = now_ns();
	int ret;

	ASSERT_EQ(0, hlock_lock_lease(self->v, p, X, 0, -1, SHORT_LEASE));
	sleep_past(t0, PAST_SHORT);
	ASSERT_EQ(0, hlock_lock(self->w, p, X, 0, SETTLE_NS));
	ASSERT_EQ(POLLPRI, poll_pri(self->v) & POLLPRI);
	ASSERT_EQ(self->space + 1, takeovers(self->v, HLOCK_STATS_GLOBAL));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->v, p, X, ASYNC, -1));
	ASSERT_WAITING(self->v);
	/* The unlock may say ESTALE or what is left, but withdraws. */
	ret = hlock_unlock(self->v, p);
	ASSERT_TRUE(ret == -ESTALE || ret == 0) TH_LOG("unlock says %d", ret);
	ASSERT_EQ(-ENOENT, hlock_wait(self->v, 0))
		TH_LOG("the request is still there after its unlock");
	ASSERT_EQ(0, hlock_unlock(self->w, p));
	ASSERT_EQ(-ENOENT, hlock_wait(self->v, 0));
	ASSERT_EQ(NL, hlock_held(self->v, p));
	ASSERT_EQ(NL, hlock_held(self->v, ""));
	ASSERT_EQ(0, hlock_lock(self->t, p, X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->t, p));
}

/* Closing a locker with leases, held or taken over, leaves nothing. */
TEST_F_TIMEOUT(lease, close_with_leases, TEST_TMO)
{
	ASSERT_EQ(0, hlock_lock_lease(self->v, "lclose/a", X, 0, -1,
				      100 * SEC));
	ASSERT_EQ(0, hlock_lock_lease(self->v, "lclose/b", X, 0, -1,
				      SHORT_LEASE));
	ASSERT_EQ(0, hlock_lock(self->w, "lclose/b", X, 0, SETTLE_NS));
	ASSERT_EQ(POLLPRI, poll_pri(self->v) & POLLPRI);
	close(self->v);
	self->v = -1;
	ASSERT_EQ(0, hlock_lock(self->t, "lclose", IX, 0, 0));
	ASSERT_EQ(0, hlock_lock(self->t, "lclose/a", X, 0, 0));
}

/* A lease no test outlives. */
#define LONG_LEASE	(600 * SEC)

/*
 * The leases of @fd's records under "@prefix": how many of its records
 * there are, and in *@leased those that show a lease, each with time left
 * no longer than LONG_LEASE.
 */
static int table_leases(int fd, const char *prefix, int *leased)
{
	const struct hlock_lock_record *rec;
	size_t plen = strlen(prefix);
	int i, n, seen = 0;
	void *buf;

	*leased = 0;
	n = hlock_table_alloc(fd, &buf);
	if (n < 0)
		return n;
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		const struct hlock_record_ext *ext = hlock_record_ext(rec);

		if (strncmp(hlock_record_path(rec), prefix, plen))
			continue;
		seen++;
		if (!ext) {
			seen = -EPROTO;
			break;
		}
		if (ext->flags & ~HLOCK_REC_LEASE ||
		    (!(ext->flags & HLOCK_REC_LEASE) && ext->lease_ns)) {
			seen = -EINVAL;
			break;
		}
		if (ext->flags & HLOCK_REC_LEASE) {
			if (ext->lease_ns <= 0 || ext->lease_ns > LONG_LEASE) {
				seen = -ERANGE;
				break;
			}
			(*leased)++;
		}
	}
	free(buf);
	return seen;
}

/* Whether @fd's record of @path shows a lease of more than @min_ns left. */
static bool long_lease_shown(int fd, const char *path, int64_t min_ns)
{
	const struct hlock_lock_record *rec;
	bool shown = false;
	void *buf;
	int i, n;

	n = hlock_table_alloc(fd, &buf);
	for (i = 0, rec = buf; i < n; i++, rec = hlock_record_next(rec)) {
		const struct hlock_record_ext *ext = hlock_record_ext(rec);

		if (!strcmp(hlock_record_path(rec), path) && ext &&
		    ext->flags & HLOCK_REC_LEASE && ext->lease_ns > min_ns)
			shown = true;
	}
	if (n >= 0)
		free(buf);
	return shown;
}

/*
 * The longest lease (INT64_MAX ns: its end, from now, is beyond what a
 * ktime_t counts) never expires, renewed or not: a conflicting waiter
 * times out, and the table shows more than a century left.
 */
TEST_F_TIMEOUT(lease, longest_lease_never_expires, TEST_TMO)
{
	const char *p = "llong";

	ASSERT_EQ(0, hlock_lock_lease(self->v, p, X, 0, -1, INT64_MAX));
	ASSERT_EQ(1, hlock_renew(self->v));
	/* More than a century left. */
	ASSERT_TRUE(long_lease_shown(self->v, p, 100LL * 365 * 86400 * SEC));
	/* A conflicting waiter finds it unexpired. */
	ASSERT_EQ(-ETIMEDOUT, hlock_lock(self->w, p, S, 0, 50 * MS));
	ASSERT_EQ(0, hlock_unlock(self->v, p));
}

/* The lock table shows a lease on its path only, with the time left. */
TEST_F_TIMEOUT(lease, in_the_table, TEST_TMO)
{
	int leased;

	ASSERT_EQ(0, hlock_lock_lease(self->v, "ltab/l", X, 0, -1,
				      LONG_LEASE));
	ASSERT_EQ(0, hlock_lock(self->v, "ltab/p", X, 0, -1));
	/* ltab (IX), ltab/l, ltab/p: one lease among them. */
	ASSERT_EQ(3, table_leases(self->v, "ltab", &leased));
	ASSERT_EQ(1, leased);
	ASSERT_EQ(0, hlock_unlock(self->v, "ltab/l"));
	ASSERT_EQ(2, table_leases(self->v, "ltab", &leased));
	ASSERT_EQ(0, leased);
}

/*
 * An unlock that withdraws an asynchronous call granted but not collected
 * leaves the locker as before the call: no lease from the withdrawn call
 * on what stays held (found by hlock_cluster_interact: the lease of the
 * withdrawn conversion stayed on the kept intent, expired, and another
 * locker's lock took over the locker's acquisitions below it).
 */
TEST_F_TIMEOUT(lease, withdrawn_grant_leaves_no_lease, TEST_TMO)
{
	int64_t t0;
	int ret;

	/* V holds S below "lw": an IS intent there. */
	ASSERT_EQ(0, hlock_lock(self->v, "lw/e", S, 0, -1));
	ASSERT_EQ(0, hlock_lock(self->t, "lw", S, 0, -1));
	t0 = now_ns();
	ASSERT_EQ(-EINPROGRESS, hlock_lock_lease(self->v, "lw", X, ASYNC, -1,
						 SHORT_LEASE));
	ASSERT_WAITING(self->v);
	/* Granted, not collected: withdrawn by its path's unlock. */
	ASSERT_EQ(0, hlock_unlock(self->t, "lw"));
	ret = hlock_unlock(self->v, "lw");
	ASSERT_TRUE(ret == 0) TH_LOG("the withdrawing unlock says %d", ret);
	ASSERT_EQ(-ENOENT, hlock_wait(self->v, 0));
	ASSERT_EQ(IS, hlock_held(self->v, "lw"));
	sleep_past(t0, PAST_SHORT);
	/* No lease of V's to take over: W's X on "lw" waits for V's IS. */
	ASSERT_EQ(-ETIMEDOUT, hlock_lock(self->w, "lw", X, 0, PAST_SHORT));
	ASSERT_EQ(S, hlock_held(self->v, "lw/e"));
	ASSERT_EQ(0, poll_pri(self->v) & POLLPRI);
	ASSERT_EQ(self->space, takeovers(self->v, HLOCK_STATS_GLOBAL));
	ASSERT_EQ(0, hlock_unlock(self->v, "lw/e"));
}

/*
 * The same for a lease the withdrawn call restarted: a recursive leased
 * lock that is withdrawn leaves the lease held before with its expiry.
 */
TEST_F_TIMEOUT(lease, withdrawn_grant_keeps_the_old_lease, TEST_TMO)
{
	int ret;

	/* V holds S on "lr" for a long lease; T holds an IS intent there. */
	ASSERT_EQ(0, hlock_lock_lease(self->v, "lr", S, 0, -1, LONG_LEASE));
	ASSERT_EQ(0, hlock_lock(self->t, "lr/q", S, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock_lease(self->v, "lr", X, ASYNC, -1,
						 SHORT_LEASE));
	ASSERT_WAITING(self->v);
	/* The conversion is granted, not collected: withdrawn. */
	ASSERT_EQ(0, hlock_unlock(self->t, "lr/q"));
	ret = hlock_unlock(self->v, "lr");
	ASSERT_EQ(1, ret) TH_LOG("the withdrawing unlock says %d", ret);
	ASSERT_EQ(-ENOENT, hlock_wait(self->v, 0));
	ASSERT_EQ(S, hlock_held(self->v, "lr"));
	sleep_ns(PAST_SHORT);
	/* The long lease runs on: T's X waits for V's S, takes nothing. */
	ASSERT_EQ(-ETIMEDOUT, hlock_lock(self->t, "lr", X, 0, PAST_SHORT));
	ASSERT_EQ(S, hlock_held(self->v, "lr"));
	ASSERT_EQ(0, poll_pri(self->v) & POLLPRI);
	ASSERT_EQ(self->space, takeovers(self->v, HLOCK_STATS_GLOBAL));
	ASSERT_EQ(0, hlock_unlock(self->v, "lr"));
}

/*
 * A yield gives a leased acquisition back with its lease, from the new
 * grant, and with a new fencing token, greater than the one let in.
 */
TEST_F_TIMEOUT(lease, yield_keeps_it, TEST_TMO)
{
	struct yielder y = { .ret = 1 };
	uint64_t before, in, after;
	int leased;

	ASSERT_EQ(0, hlock_lock_lease(self->v, "lyl", X, 0, -1, LONG_LEASE));
	ASSERT_EQ(0, hlock_token(self->v, "lyl", &before));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->w, "lyl", S, ASYNC, -1));
	y.fd = self->v;
	ASSERT_EQ(0, pthread_create(&y.thread, NULL, yielder_run, &y));
	ASSERT_GRANTED(self->w);
	ASSERT_EQ(0, hlock_token(self->w, "lyl", &in));
	ASSERT_LT(before, in);
	ASSERT_EQ(0, hlock_unlock(self->w, "lyl"));
	ASSERT_EQ(0, pthread_join(y.thread, NULL));
	ASSERT_EQ(0, y.ret);
	ASSERT_EQ(X, hlock_held(self->v, "lyl"));
	ASSERT_EQ(0, hlock_token(self->v, "lyl", &after));
	ASSERT_LT(in, after);
	ASSERT_EQ(1, table_leases(self->v, "lyl", &leased));
	ASSERT_EQ(1, leased);
	/* Nobody was taken over. */
	ASSERT_EQ(self->space, takeovers(self->v, HLOCK_STATS_GLOBAL));
	ASSERT_EQ(0, hlock_unlock(self->v, "lyl"));
}

/* ------------------------------------------------------------------ */
/* Where leases meet tries, tickets and yields (issue 26) */

#define WRITE_TICKETS	"/sys/module/hlock/parameters/write_tickets"

/* The write pool's tickets out, as @fd sees them, or -1. */
static long write_out(int fd)
{
	struct hlock_stats st;

	memset(&st, 0, sizeof(st));
	if (hlock_stats(fd, HLOCK_STATS_GLOBAL, &st))
		return -1;
	return (long)st.tickets[HLOCK_TICKET_WRITE].out;
}

/*
 * A try does not wait: it takes no expired lease over, and the holder
 * keeps what it holds (defect 7: the try failed and the holder lost its
 * lock all the same).  A real wait then does take it over.
 */
TEST_F_TIMEOUT(lease, try_takes_nothing_over, TEST_TMO)
{
	const char *p = "ltry";
	int64_t t0 = now_ns();

	ASSERT_EQ(0, hlock_lock_lease(self->v, p, X, 0, -1, SHORT_LEASE));
	sleep_past(t0, PAST_SHORT);
	ASSERT_EQ(-EAGAIN, hlock_lock(self->w, p, X, 0, 0));
	ASSERT_EQ(-EAGAIN, hlock_lock(self->w, p, S, 0, 0));
	ASSERT_EQ(-EAGAIN, hlock_lock(self->w, "", X, 0, 0));
	/* Time for a takeover that must not come. */
	sleep_ns(PAST_SHORT);
	ASSERT_EQ(X, hlock_held(self->v, p));
	ASSERT_EQ(0, poll_events(self->v) & POLLPRI);
	ASSERT_EQ(self->space, takeovers(self->v, HLOCK_STATS_GLOBAL));
	ASSERT_EQ(0, hlock_lock(self->w, p, X, 0, SETTLE_NS));
	ASSERT_STALE(self->v, p);
}

/* The write pool's waiters, as @fd sees them, or -1. */
static long write_waiting(int fd)
{
	struct hlock_stats st;

	memset(&st, 0, sizeof(st));
	if (hlock_stats(fd, HLOCK_STATS_GLOBAL, &st))
		return -1;
	return (long)st.tickets[HLOCK_TICKET_WRITE].waiting;
}

struct leaser {
	int fd;
	int ret;
};

static void *leaser_run(void *arg)
{
	struct leaser *a = arg;

	a->ret = hlock_lock_lease(a->fd, "ltk/mine", X, 0, SETTLE_NS,
				  LONG_LEASE);
	return NULL;
}

/*
 * A lock call that waited for its ticket and was then granted at once
 * holds its lease like any other grant (defect 6: renew found none),
 * asynchronous or blocking.
 */
TEST_F_TIMEOUT(lease, after_a_ticket_wait, TEST_TMO)
{
	struct leaser a = { .fd = self->v, .ret = 1 };
	pthread_t thread;
	int64_t t0;

	ASSERT_EQ(0, write_file_str(WRITE_TICKETS, "1", 0));
	ASSERT_EQ(0, hlock_lock(self->t, "ltk/other", X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock_lease(self->v, "ltk/mine", X, ASYNC,
						 -1, LONG_LEASE));
	ASSERT_WAITING(self->v);
	ASSERT_EQ(0, hlock_unlock(self->t, "ltk/other"));
	ASSERT_GRANTED(self->v);
	ASSERT_EQ(1, hlock_renew(self->v));
	ASSERT_EQ(0, hlock_unlock(self->v, "ltk/mine"));
	/* Blocking. */
	ASSERT_EQ(0, hlock_lock(self->t, "ltk/other", X, 0, -1));
	ASSERT_EQ(0, pthread_create(&thread, NULL, leaser_run, &a));
	for (t0 = now_ns(); write_waiting(self->t) != 1; sleep_ns(MS))
		ASSERT_GT(SETTLE_NS, now_ns() - t0);
	ASSERT_EQ(0, hlock_unlock(self->t, "ltk/other"));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ(0, a.ret);
	ASSERT_EQ(1, hlock_renew(self->v));
	ASSERT_EQ(0, hlock_unlock(self->v, "ltk/mine"));
	ASSERT_EQ(0, write_file_str(WRITE_TICKETS, "0", 0));
}

/*
 * A takeover that leaves its victim holding nothing returns the victim's
 * ticket (defect 5: a writer then waited for a ticket nobody used).
 */
TEST_F_TIMEOUT(lease, takeover_returns_the_ticket, TEST_TMO)
{
	int64_t t0 = now_ns();

	ASSERT_EQ(0, write_file_str(WRITE_TICKETS, "1", 0));
	ASSERT_EQ(0, hlock_lock_lease(self->v, "lt5", X, 0, -1, SHORT_LEASE));
	ASSERT_EQ(1, write_out(self->v));
	sleep_past(t0, PAST_SHORT);
	/* A reader (the read pool is unlimited) takes the lease over. */
	ASSERT_EQ(0, hlock_lock(self->w, "lt5", S, 0, SETTLE_NS));
	ASSERT_EQ(0, write_out(self->v));
	ASSERT_EQ(0, hlock_unlock(self->w, "lt5"));
	/* A writer gets the ticket at once. */
	ASSERT_EQ(0, hlock_lock(self->t, "lt5", X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->t, "lt5"));
	ASSERT_STALE(self->v, "lt5");
	ASSERT_EQ(0, write_file_str(WRITE_TICKETS, "0", 0));
}

/*
 * A yield gives a lease back; while a later level of the yield waits,
 * that lease expires and is taken over.  The yield fails with ESTALE and
 * the locker holds nothing, as after any failed yield (defect 3: a WARN,
 * and a yield that said 0 with locks lost).
 */
TEST_F_TIMEOUT(lease, taken_over_during_yield, TEST_TMO)
{
	struct yielder y = { .ret = 1 };

	/* "", ly (SIX: S leased, IX below), ly/a (IX), ly/a/b, then lz. */
	ASSERT_EQ(0, hlock_lock(self->v, "ly/a/b", X, 0, -1));
	ASSERT_EQ(0, hlock_lock_lease(self->v, "ly", S, 0, -1, SHORT_LEASE));
	ASSERT_EQ(0, hlock_lock(self->v, "lz", X, 0, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->w, "lz", S, ASYNC, -1));
	y.fd = self->v;
	ASSERT_EQ(0, pthread_create(&y.thread, NULL, yielder_run, &y));
	ASSERT_GRANTED(self->w);
	/* The yield now waits for lz; the lease on ly restarted. */
	sleep_ns(PAST_SHORT);
	ASSERT_EQ(0, hlock_lock(self->t, "ly", X, 0, SETTLE_NS));
	ASSERT_EQ(0, hlock_unlock(self->w, "lz"));
	ASSERT_EQ(0, pthread_join(y.thread, NULL));
	ASSERT_EQ(-ESTALE, y.ret);
	ASSERT_EQ(NL, hlock_held(self->v, "lz"));
	ASSERT_EQ(NL, hlock_held(self->v, ""));
	ASSERT_STALE(self->v, "ly");
	ASSERT_EQ(0, hlock_unlock(self->t, "ly"));
}

/*
 * One waiter claims many leases of one locker: the takeovers cost one
 * step each, not one walk of the locker's requests each (defect 2: an
 * O(n^2) kworker, a soft lockup at 65,000 leases).  Timed at n and 4n:
 * linear work takes about 4 times as long, quadratic about 16 times.
 */
static int64_t time_takeovers(struct __test_metadata *_metadata, int n)
{
	int v = hlock_open(), w = hlock_open();
	char path[32];
	int64_t t0;
	int i;

	ASSERT_LE(0, v);
	ASSERT_LE(0, w);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "lmany/%d", i);
		ASSERT_EQ(0, hlock_lock_lease(v, path, X, 0, -1, SHORT_LEASE));
	}
	sleep_ns(PAST_SHORT);
	t0 = now_ns();
	ASSERT_EQ(0, hlock_lock(w, "lmany", S, 0, 60 * SEC));
	t0 = now_ns() - t0;
	ASSERT_EQ(n, (int)takeovers(v, HLOCK_STATS_LOCKER));
	close(v);
	close(w);
	return t0;
}

TEST_F_TIMEOUT(lease, many_taken_over_linearly, 4 * TEST_TMO)
{
	int n = test_scaled(4000, 1000);
	int64_t small, big, again;

	/* Warm the caches and the table once. */
	time_takeovers(_metadata, n);
	small = time_takeovers(_metadata, n);
	/*
	 * The better of two: a moment the host did not run the VM makes
	 * one run longer, never shorter (a check's run on rt took 13.2x
	 * once, beside a cluster's VMs; other runs logged 1.5 to 6.9x).
	 */
	big = time_takeovers(_metadata, 4 * n);
	again = time_takeovers(_metadata, 4 * n);
	if (again < big)
		big = again;
	TH_LOG("%d takeovers: %lld us; %d: %lld us (%.1fx)", n,
	       (long long)small / 1000, 4 * n, (long long)big / 1000,
	       (double)big / (double)small);
	ASSERT_LT(big, 10 * small);
}

/*
 * A locker's own expired leases cost its waits nothing (defect 4: each
 * wait walked them all under the root's lock, 7 us with none, 6,887 us
 * with 60,000).  The same waits, timed out at once, with 1 and with n
 * own expired leases filed where they wait: about as dear.
 */
static int64_t time_own_waits(struct __test_metadata *_metadata, int v,
			      int rounds)
{
	int64_t t0 = now_ns();
	int i;

	for (i = 0; i < rounds; i++)
		ASSERT_EQ(-ETIMEDOUT, hlock_lock(v, "", S, 0, 1));
	return now_ns() - t0;
}

TEST_F_TIMEOUT(lease, own_expired_leases_cost_nothing, 4 * TEST_TMO)
{
	int n = test_scaled(20000, 2000), rounds = 200, i;
	int64_t few, many, again;
	char path[32];

	/* Another locker's intent on the root makes a root S wait. */
	ASSERT_EQ(0, hlock_lock(self->t, "l4other", X, 0, -1));
	ASSERT_EQ(0, hlock_lock_lease(self->v, "l4/0", X, 0, -1, SHORT_LEASE));
	sleep_ns(PAST_SHORT);
	time_own_waits(_metadata, self->v, rounds);
	few = time_own_waits(_metadata, self->v, rounds);
	for (i = 1; i < n; i++) {
		snprintf(path, sizeof(path), "l4/%d", i);
		ASSERT_EQ(0, hlock_lock_lease(self->v, path, X, 0, -1,
					      SHORT_LEASE));
	}
	sleep_ns(PAST_SHORT);
	time_own_waits(_metadata, self->v, rounds);
	/*
	 * The shorter of two runs: a moment the host does not run the VM
	 * can only make a run longer (rt measured 5.1x once, beside other
	 * VMs and 2 busy loops).
	 */
	many = time_own_waits(_metadata, self->v, rounds);
	again = time_own_waits(_metadata, self->v, rounds);
	if (again < many)
		many = again;
	TH_LOG("%d root waits: %lld us with 1 own expired lease, %lld us with %d",
	       rounds, (long long)few / 1000, (long long)many / 1000, n);
	ASSERT_LT(many, 5 * few);
	/* Nothing of its own was taken over, and another's wait still does. */
	ASSERT_EQ(0ULL, takeovers(self->v, HLOCK_STATS_LOCKER));
	ASSERT_EQ(0, hlock_unlock(self->t, "l4other"));
	ASSERT_EQ(0, hlock_lock(self->w, "l4", X, 0, 60 * SEC));
	ASSERT_EQ((uint64_t)n, takeovers(self->v, HLOCK_STATS_LOCKER));
}

/*
 * An expired lease is filed on the resources of its path by the locker's
 * kernel worker, which allocates their lists: charged to the cgroup of
 * whoever asked for the lease, not to nobody.
 */
TEST_F_TIMEOUT(lease, lists_charged_to_the_leaser, 4 * TEST_TMO)
{
	int n = test_scaled(20000, 4000), fd, i;
	long long before, after = -1, want;
	char dir[64], path[32], pid[16];
	int64_t deadline;

	if (!have_memcg())
		SKIP(return, "no memory cgroup (cgroup2 with CONFIG_MEMCG)");
	snprintf(dir, sizeof(dir), CGROUP_ROOT "/hlock-lease-%d", getpid());
	ASSERT_EQ(0, cg_write(CGROUP_ROOT, "cgroup.subtree_control", "+memory"));
	ASSERT_EQ(0, mkdir(dir, 0755));
	ASSERT_EQ(0, cg_write(dir, "cgroup.procs", "0"));
	fd = hlock_open();
	ASSERT_LE(0, fd);
	/* Leases none of which expires while the others are taken... */
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "lc/%d", i);
		ASSERT_EQ(0, hlock_lock_lease(fd, path, X, 0, -1, 3600 * SEC));
	}
	before = cg_stat(dir, "slab");
	ASSERT_LE(0, before);
	/* ...then shortened: locked again, each starts anew (no memory). */
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "lc/%d", i);
		ASSERT_EQ(0, hlock_lock_lease(fd, path, X, 0, -1, SHORT_LEASE));
	}
	/* Lists of at least 80 bytes each on n resources; half will do. */
	want = before + 40LL * n;
	deadline = now_ns() + 30 * SEC;
	sleep_ns(PAST_SHORT);
	do {
		after = cg_stat(dir, "slab");
		if (after >= want)
			break;
		sleep_ns(100 * MS);
	} while (now_ns() < deadline);
	TH_LOG("%d expired leases: the cgroup's slab went from %lld to %lld bytes",
	       n, before, after);
	EXPECT_LE(want, after);
	close(fd);
	snprintf(pid, sizeof(pid), "%d", getpid());
	EXPECT_EQ(0, cg_write(CGROUP_ROOT, "cgroup.procs", pid));
	EXPECT_EQ(0, rmdir(dir));
}

TEST_HARNESS_MAIN
