// SPDX-License-Identifier: GPL-2.0
/*
 * hlock races, held open: the test build of the module (make ko, what
 * make check's VMs load) has stall points (kmod/hlock_test.h) where a race
 * window opens.  A test arms one through debugfs' hlock/test_stall, waits
 * until the kernel stalls there, does what the window allows, and lets it
 * go.  A module without the points (the one users load) skips these tests.
 *
 * What a test here proves is that a look made without a lock is made again
 * under it: on the debug kernel (KASAN) the use-after-free the window led
 * to is a splat, which fails the VM; everywhere, the table must come out
 * whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "hlock.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

#define STALL	"/sys/kernel/debug/hlock/test_stall"
#define RECLAIM	"/sys/kernel/debug/hlock/reclaim"

/*
 * Wait until the stall point reports @state; false after @ns.  A point
 * gives up by itself only once reached (kmod/hlock_test.c), so waiting
 * long for it to be reached costs nothing but that wait.
 */
static bool stall_within(const char *state, int64_t ns)
{
	int64_t t0 = now_ns();
	char buf[32];

	while (now_ns() - t0 < ns) {
		if (!read_file_str(STALL, buf, sizeof(buf)) &&
		    !strcmp(buf, state))
			return true;
		usleep(1000);
	}
	return false;
}

static bool stall_is(const char *state)
{
	return stall_within(state, SETTLE_NS);
}

static void *reclaim_run(void *arg)
{
	*(int *)arg = write_file_str(RECLAIM, "1", 0);
	return NULL;
}

FIXTURE(race) {
	int fd;
};

FIXTURE_SETUP(race)
{
	self->fd = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	if (access(STALL, W_OK))
		SKIP(return, "not the test build of the module (no %s)", STALL);
	ASSERT_EQ(0, write_file_str(STALL, "go", 0));
	self->fd = hlock_open();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(race)
{
	write_file_str(STALL, "go", 0);
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * The reclaim worker read a resource's child count (0) without its lock;
 * before it takes the lock, a locker makes a child there, locks and
 * unlocks it, and leaves.  The parent, idle again, must not be freed under
 * its child (issue 26, defect 1: the child's own reclaim then wrote to the
 * freed parent).
 */
TEST_F_TIMEOUT(race, reclaim_meets_new_child, TEST_TMO)
{
	long before, after;
	pthread_t thread;
	int ret = 1;

	/*
	 * What earlier programs left idle goes first, so that the pass
	 * below reaches "rrace" soon: on the debug kernel, after
	 * hlock_interact, it once took more than SETTLE_NS to get there.
	 */
	ASSERT_EQ(0, write_file_str(RECLAIM, "1", 0));
	/* An idle resource with no children, "rrace". */
	ASSERT_EQ(0, hlock_lock(self->fd, "rrace", X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->fd, "rrace"));
	ASSERT_EQ(0, write_file_str(STALL, "reclaim rrace", 0));
	ASSERT_EQ(0, pthread_create(&thread, NULL, reclaim_run, &ret));
	ASSERT_TRUE(stall_within("stalled", (int64_t)TEST_TMO / 2 * SEC));
	/* The window: a child made, locked, unlocked. */
	ASSERT_EQ(0, hlock_lock(self->fd, "rrace/child", X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->fd, "rrace/child"));
	before = debugfs_figure("reclaimed");
	ASSERT_EQ(0, write_file_str(STALL, "go", 0));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ(0, ret);
	/* A second pass frees what the first left: child first, then it. */
	ASSERT_EQ(0, write_file_str(RECLAIM, "1", 0));
	after = debugfs_figure("reclaimed");
	ASSERT_LE(2, after - before);
	/* Both are made anew and work. */
	ASSERT_EQ(0, hlock_lock(self->fd, "rrace/child", X, 0, 0));
	ASSERT_EQ(IX, hlock_held(self->fd, "rrace"));
	ASSERT_EQ(0, hlock_unlock(self->fd, "rrace/child"));
	ASSERT_EQ(0, write_file_str(RECLAIM, "1", 0));
}

/* The point stalls once and only for the name it was armed for. */
TEST_F_TIMEOUT(race, stall_point_contract, TEST_TMO)
{
	char buf[32];

	ASSERT_EQ(-EINVAL, write_file_str(STALL, "nowhere rrace", 0));
	ASSERT_EQ(-EINVAL, write_file_str(STALL, "reclaim", 0));
	ASSERT_EQ(0, write_file_str(STALL, "reclaim rnone", 0));
	ASSERT_EQ(-EBUSY, write_file_str(STALL, "reclaim rnone", 0));
	ASSERT_EQ(0, read_file_str(STALL, buf, sizeof(buf)));
	ASSERT_STREQ("armed", buf);
	ASSERT_EQ(0, hlock_lock(self->fd, "rother", X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->fd, "rother"));
	ASSERT_EQ(0, write_file_str(RECLAIM, "1", 0));
	ASSERT_EQ(0, read_file_str(STALL, buf, sizeof(buf)));
	ASSERT_STREQ("armed", buf);
	ASSERT_EQ(0, write_file_str(STALL, "go", 0));
	ASSERT_EQ(0, read_file_str(STALL, buf, sizeof(buf)));
	ASSERT_STREQ("idle", buf);
}

/* Command name of the lease tests' lockers: the lease_work point's key. */
#define LEASER	"hlrace-lease"
#define SHORT_LEASE	(50 * MS)
#define RENEWED_LEASE	(3 * SEC)

static uint64_t takeovers(int fd)
{
	struct hlock_stats st;

	memset(&st, 0, sizeof(st));
	if (hlock_stats(fd, HLOCK_STATS_LOCKER, &st))
		return UINT64_MAX;
	return st.takeovers;
}

/*
 * The lease work is queued by an expiry and stalls before it takes the
 * locker lock; meanwhile a waiter comes and the holder renews.  The renewal
 * wins: the work finds nothing expired and takes nothing over.
 */
TEST_F_TIMEOUT(race, lease_renewed_before_the_work, TEST_TMO)
{
	int w = hlock_open();
	char old[16] = "";

	ASSERT_LE(0, w);
	ASSERT_EQ(0, prctl(PR_GET_NAME, old));
	ASSERT_EQ(0, prctl(PR_SET_NAME, LEASER));
	ASSERT_EQ(0, write_file_str(STALL, "lease_work " LEASER, 0));
	/* Long enough that the renewed lease outlasts the checks below. */
	ASSERT_EQ(0, hlock_lock_lease(self->fd, "rlr", X, 0, -1, RENEWED_LEASE));
	ASSERT_TRUE(stall_is("stalled"));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(w, "rlr", X, ASYNC, -1));
	ASSERT_EQ(1, hlock_renew(self->fd));
	ASSERT_EQ(0, write_file_str(STALL, "go", 0));
	/* Time for the work to run and to do what it must not. */
	usleep(4 * SHORT_LEASE / 1000);
	ASSERT_EQ(X, hlock_held(self->fd, "rlr"));
	ASSERT_EQ(-EAGAIN, hlock_wait(w, 0));
	ASSERT_EQ(0ULL, takeovers(self->fd));
	ASSERT_EQ(0, hlock_unlock(self->fd, "rlr"));
	ASSERT_EQ(0, hlock_wait(w, SETTLE_NS));
	ASSERT_EQ(0, prctl(PR_SET_NAME, old));
	close(w);
}

/*
 * The same window, the holder unlocks and locks another path under a new
 * lease instead: the work finds that lease unexpired and the old one gone.
 * Nothing is taken over, and the unlock of the old path says ENOENT, not
 * ESTALE.
 */
TEST_F_TIMEOUT(race, lease_released_before_the_work, TEST_TMO)
{
	int w = hlock_open();
	char old[16] = "";
	struct pollfd pfd;

	ASSERT_LE(0, w);
	ASSERT_EQ(0, prctl(PR_GET_NAME, old));
	ASSERT_EQ(0, prctl(PR_SET_NAME, LEASER));
	ASSERT_EQ(0, write_file_str(STALL, "lease_work " LEASER, 0));
	ASSERT_EQ(0, hlock_lock_lease(self->fd, "rlu", X, 0, -1, SHORT_LEASE));
	ASSERT_TRUE(stall_is("stalled"));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(w, "rlu", X, ASYNC, -1));
	ASSERT_EQ(0, hlock_unlock(self->fd, "rlu"));
	ASSERT_EQ(0, hlock_wait(w, SETTLE_NS));
	ASSERT_EQ(0, hlock_lock_lease(self->fd, "rlu2", X, 0, -1, 600 * SEC));
	ASSERT_EQ(0, write_file_str(STALL, "go", 0));
	usleep(4 * SHORT_LEASE / 1000);
	ASSERT_EQ(X, hlock_held(self->fd, "rlu2"));
	ASSERT_EQ(1, hlock_renew(self->fd));
	ASSERT_EQ(0ULL, takeovers(self->fd));
	pfd.fd = self->fd;
	pfd.events = POLLPRI;
	ASSERT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(-ENOENT, hlock_unlock(self->fd, "rlu"));
	ASSERT_EQ(0, hlock_unlock(self->fd, "rlu2"));
	ASSERT_EQ(0, hlock_unlock(w, "rlu"));
	ASSERT_EQ(0, prctl(PR_SET_NAME, old));
	close(w);
}

/* A lock table read by a thread of its own. */
struct table_read {
	int fd;
	int n;
	void *buf;
};

static void *table_run(void *arg)
{
	struct table_read *t = arg;

	t->n = hlock_table_alloc(t->fd, &t->buf);
	return NULL;
}

/* The record of @path in @mode and @state in @t, or NULL. */
static const struct hlock_lock_record *
table_find(const struct table_read *t, const char *path, unsigned int mode,
	   unsigned int state)
{
	const struct hlock_lock_record *rec = t->buf;
	int i;

	for (i = 0; i < t->n; i++, rec = hlock_record_next(rec))
		if (!strcmp(hlock_record_path(rec), path) &&
		    rec->mode == mode && rec->state == state)
			return rec;
	return NULL;
}

/*
 * Issue 30, item 6: the lock table is built locker by locker.  One request
 * starts to wait, and another is granted, after the walk began and before
 * it gets to their lockers (held at the test build's "table" stall point,
 * at the record of another locker's request).  Their wait and hold times
 * must be times the test lived through: they were ~18446744073 s, a clock
 * read when the walk began minus one read later.  The test starts on the
 * coarse clock, as hold times do (they count from a tick).
 */
TEST_F_TIMEOUT(race, table_times_after_walk_began, TEST_TMO)
{
	struct table_read t = { .n = -1 };
	const struct hlock_lock_record *rec;
	int64_t start, elapsed;
	struct timespec ts;
	pthread_t thread;
	int fd[4], i;

	ASSERT_EQ(0, clock_gettime(CLOCK_MONOTONIC_COARSE, &ts));
	start = (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
	/* Opened after self->fd, walked after it (the walk goes by id). */
	for (i = 0; i < 4; i++) {
		fd[i] = hlock_open();
		ASSERT_LE(0, fd[i]);
	}
	t.fd = fd[3];
	ASSERT_EQ(0, hlock_lock(self->fd, "rtab/stall", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[2], "rtab/w", X, 0, 0));
	ASSERT_EQ(0, hlock_lock(fd[2], "rtab/g", X, 0, 0));
	ASSERT_EQ(0, write_file_str(STALL, "table stall", 0));
	ASSERT_EQ(0, pthread_create(&thread, NULL, table_run, &t));
	ASSERT_TRUE(stall_is("stalled"));
	/* The window: a wait begins, and a wait ends in a grant. */
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[0], "rtab/w", X, ASYNC, -1));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd[1], "rtab/g", X, ASYNC, -1));
	ASSERT_EQ(0, hlock_unlock(fd[2], "rtab/g"));
	ASSERT_EQ(0, hlock_wait(fd[1], 0));
	ASSERT_EQ(0, write_file_str(STALL, "go", 0));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	elapsed = now_ns() - start;
	ASSERT_LT(0, t.n);
	rec = table_find(&t, "rtab/w", X, HLOCK_STATE_WAITING);
	ASSERT_NE(NULL, rec) TH_LOG("the wait is in the table");
	EXPECT_GE((uint64_t)elapsed, rec->wait_ns);
	rec = table_find(&t, "rtab/g", X, HLOCK_STATE_GRANTED);
	ASSERT_NE(NULL, rec) TH_LOG("the grant is in the table");
	EXPECT_GE((uint64_t)elapsed, rec->held_ns);
	/* No record's times are longer than the test. */
	for (rec = t.buf, i = 0; i < t.n; i++, rec = hlock_record_next(rec)) {
		if (strncmp(hlock_record_path(rec), "rtab", 4))
			continue;
		EXPECT_GE((uint64_t)elapsed, rec->wait_ns)
			TH_LOG("%s: wait %llu ns", hlock_record_path(rec),
			       (unsigned long long)rec->wait_ns);
		EXPECT_GE((uint64_t)elapsed, rec->held_ns)
			TH_LOG("%s: held %llu ns", hlock_record_path(rec),
			       (unsigned long long)rec->held_ns);
	}
	free(t.buf);
	for (i = 0; i < 4; i++)
		close(fd[i]);
}

/* Write one byte to @fd; read one from @fd.  Return: 0 or -1. */
static int put_byte(int fd, char c)
{
	return write(fd, &c, 1) == 1 ? 0 : -1;
}

static int get_byte(int fd, char *c)
{
	return read(fd, c, 1) == 1 ? 0 : -1;
}

/*
 * The owner of a process-owned locker exits; its release of what the
 * locker holds, in batches with the locker's lock dropped between them
 * (hl_file_release_all()), is held after its first batch, named by the
 * command name of the locker's last lock call.  A forked process sharing
 * the locker makes a lock call in that window: it must wait until the
 * release is done (it used to claim the slot there, and the next batch
 * released the root intent its call had pinned, so that X on a child and
 * X on the root were granted at once, and the freed request was used).
 * Then its X is held with IX on the root, which another locker's X waits
 * for, and the owner's 130 paths are free.
 */
TEST_F_TIMEOUT(race, owner_exit_meets_sharer, TEST_TMO)
{
	int go_owner[2], go_sharer[2], said[2], status, i, other;
	pid_t owner, sharer;
	char path[32], c;

	ASSERT_EQ(0, pipe(go_owner));
	ASSERT_EQ(0, pipe(go_sharer));
	ASSERT_EQ(0, pipe2(said, O_NONBLOCK));
	owner = fork();
	ASSERT_LE(0, owner);
	if (!owner) {
		int fd = hlock_open();

		prctl(PR_SET_NAME, "ownrace");
		if (fd < 0 || hlock_owner(fd, HLOCK_OWNER_PROCESS))
			_exit(2);
		/* Over two batches of 64 releases. */
		for (i = 0; i < 130; i++) {
			snprintf(path, sizeof(path), "orace/%d", i);
			if (hlock_lock(fd, path, S, 0, 0))
				_exit(3);
		}
		sharer = fork();
		if (sharer < 0)
			_exit(4);
		if (!sharer) {
			/* Shares the locker; its lock call comes when told. */
			if (get_byte(go_sharer[0], &c))
				_exit(5);
			c = hlock_lock(fd, "orace-w", X, 0, -1) ? 'f' : 'g';
			put_byte(said[1], c);
			c = '0' + hlock_held(fd, "");
			put_byte(said[1], c);
			/* Holds X until told to go. */
			get_byte(go_sharer[0], &c);
			_exit(0);
		}
		put_byte(said[1], 'r');
		/* Told: exit, which releases (held at the stall point). */
		get_byte(go_owner[0], &c);
		_exit(0);
	}
	/* The owner's locks are taken and its sharer is there. */
	for (i = 0; i < 5000 && read(said[0], &c, 1) != 1; i++)
		usleep(1000);
	ASSERT_EQ('r', c);
	ASSERT_EQ(0, write_file_str(STALL, "release ownrace", 0));
	ASSERT_EQ(0, put_byte(go_owner[1], 'x'));
	ASSERT_TRUE(stall_is("stalled"));
	/* The window: the sharer's lock call, which must wait. */
	ASSERT_EQ(0, put_byte(go_sharer[1], 'l'));
	usleep(300000);
	EXPECT_EQ(-1, read(said[0], &c, 1)) {
		TH_LOG("the sharer's lock call returned during the release");
	}
	ASSERT_EQ(0, write_file_str(STALL, "go", 0));
	ASSERT_EQ(owner, waitpid(owner, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	/* Now it is granted, its intent on the root with it. */
	for (i = 0; i < 5000 && read(said[0], &c, 1) != 1; i++)
		usleep(1000);
	EXPECT_EQ('g', c);
	for (i = 0; i < 5000 && read(said[0], &c, 1) != 1; i++)
		usleep(1000);
	EXPECT_EQ('0' + IX, c) {
		TH_LOG("the sharer holds X on a child with %c on the root", c);
	}
	other = hlock_open();
	ASSERT_LE(0, other);
	EXPECT_EQ(-EAGAIN, hlock_lock(other, "", X, 0, 0)) {
		TH_LOG("X on the root granted while the sharer holds X below");
	}
	EXPECT_EQ(0, hlock_lock(other, "orace", X, 0, 0)) {
		TH_LOG("the owner's exit left its locks behind");
	}
	close(other);
	/* The sharer (the owner's child, reaped by init) lets go. */
	put_byte(go_sharer[1], 'q');
	close(go_owner[0]);
	close(go_owner[1]);
	close(go_sharer[0]);
	close(go_sharer[1]);
	close(said[0]);
	close(said[1]);
}

/* The records of @t whose path starts with @prefix. */
static int table_count_prefix(const struct table_read *t, const char *prefix)
{
	const struct hlock_lock_record *rec = t->buf;
	int i, n = 0;

	for (i = 0; i < t->n; i++, rec = hlock_record_next(rec))
		if (!strncmp(hlock_record_path(rec), prefix, strlen(prefix)))
			n++;
	return n;
}

/*
 * A locker ("closerace") that holds 130 paths "crace/N" in S and waits for
 * X on "crace-w", which self->fd holds in S, is closed, held at stall
 * point @point ("close" or "release"), while the table is read into @t.
 * The closer is reaped afterwards, and the table must then list nothing
 * of it.
 */
static void close_held(struct __test_metadata *_metadata, int fd,
		       const char *point, struct table_read *t)
{
	int go[2], said[2], status, i;
	char path[32], arm[32], c = 0;
	struct table_read after = { .fd = fd, .n = -1 };
	pid_t closer;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe2(said, O_NONBLOCK));
	ASSERT_EQ(0, hlock_lock(fd, "crace-w", S, 0, 0));
	closer = fork();
	ASSERT_LE(0, closer);
	if (!closer) {
		int cfd = hlock_open();

		prctl(PR_SET_NAME, "closerace");
		if (cfd < 0)
			_exit(2);
		for (i = 0; i < 130; i++) {
			snprintf(path, sizeof(path), "crace/%d", i);
			if (hlock_lock(cfd, path, S, 0, 0))
				_exit(3);
		}
		if (hlock_lock(cfd, "crace-w", X, ASYNC, -1) != -EINPROGRESS)
			_exit(4);
		put_byte(said[1], 'r');
		/* Told: close, held at the stall point. */
		get_byte(go[0], &c);
		close(cfd);
		_exit(0);
	}
	for (i = 0; i < 5000 && read(said[0], &c, 1) != 1; i++)
		usleep(1000);
	EXPECT_EQ('r', c);
	snprintf(arm, sizeof(arm), "%s closerace", point);
	EXPECT_EQ(0, write_file_str(STALL, arm, 0));
	EXPECT_EQ(0, put_byte(go[1], 'x'));
	EXPECT_TRUE(stall_is("stalled"));
	/* The window. */
	table_run(t);
	EXPECT_EQ(0, write_file_str(STALL, "go", 0));
	EXPECT_EQ(closer, waitpid(closer, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	/* Then all of it is gone, and the paths are free. */
	table_run(&after);
	EXPECT_LE(0, after.n);
	EXPECT_EQ(0, table_count_prefix(&after, "crace/"));
	EXPECT_EQ(NULL, table_find(&after, "crace-w", X, HLOCK_STATE_WAITING));
	free(after.buf);
	EXPECT_EQ(0, hlock_lock(fd, "crace/65", X, 0, 0));
	EXPECT_EQ(0, hlock_unlock(fd, "crace/65"));
	EXPECT_EQ(0, hlock_unlock(fd, "crace-w"));
	close(go[0]);
	close(go[1]);
	close(said[0]);
	close(said[1]);
}

/* Whether the grant of @path in @mode is shown blocking a waiter in @t. */
static int shown_blocking(const struct table_read *t, const char *path,
			  unsigned int mode)
{
	const struct hlock_lock_record *rec;
	const struct hlock_record_ext *ext;

	rec = table_find(t, path, mode, HLOCK_STATE_GRANTED);
	ext = rec ? hlock_record_ext(rec) : NULL;
	if (!ext)
		return -1;
	return !!(ext->flags & HLOCK_REC_BLOCKING);
}

/*
 * A locker closes while it waits, held where its close begins: the lock
 * table lists its wait and all it holds, and self->fd's S, which the wait
 * is for, as blocking it.  What the next test's window is measured
 * against.
 */
TEST_F_TIMEOUT(race, close_meets_the_table, TEST_TMO)
{
	struct table_read t = { .fd = self->fd, .n = -1 };

	close_held(_metadata, self->fd, "close", &t);
	ASSERT_LT(0, t.n);
	EXPECT_EQ(130, table_count_prefix(&t, "crace/"));
	EXPECT_NE(NULL, table_find(&t, "crace-w", X, HLOCK_STATE_WAITING)) {
		TH_LOG("the closing locker's wait is not in the table");
	}
	EXPECT_EQ(1, shown_blocking(&t, "crace-w", S));
	free(t.buf);
}

/*
 * The same close, held after the first batch of its release (64 of its
 * requests, deepest first): the rest is still held and listed; the wait,
 * withdrawn first, is neither listed nor blocked by S.  The locker used to
 * leave the table as its close began, before its wait was withdrawn: a
 * read then showed S blocking a waiter no record listed (hlock_interact,
 * once in a CI run: seed 12, 6.12).  With that order this test finds none
 * of the 130 listed.
 */
TEST_F_TIMEOUT(race, close_leaves_the_table_last, TEST_TMO)
{
	struct table_read t = { .fd = self->fd, .n = -1 };
	int held;

	close_held(_metadata, self->fd, "release", &t);
	ASSERT_LT(0, t.n);
	held = table_count_prefix(&t, "crace/");
	EXPECT_TRUE(held > 0 && held < 130) {
		TH_LOG("the closing locker's grants in the table: %d", held);
	}
	EXPECT_EQ(NULL, table_find(&t, "crace-w", X, HLOCK_STATE_WAITING));
	EXPECT_EQ(0, shown_blocking(&t, "crace-w", S));
	free(t.buf);
}

TEST_HARNESS_MAIN
