// SPDX-License-Identifier: GPL-2.0
/*
 * hlock selftests: a kernel locker and a process locker on the same paths.
 *
 * The kernel locker is hlock_torture.ko's: its kthread "hlock_klocker"
 * calls hlock_kernel_lock() for each "lock MODE PATH [TIMEOUT_MS] [SLEEP]"
 * written to KLOCKER, and the writer itself calls hlock_kernel_unlock()
 * for "unlock PATH" and tries hlock_kernel_lock() for "try MODE PATH" (a
 * second thread on the same locker); "signal" sends the kthread SIGUSR1.
 * Reading the file shows what it holds, what it waits for and its last
 * result.  The test
 * loads nothing itself: hlock_torture.ko (duration=0) must be loaded, and
 * a missing KLOCKER fails every test.
 *
 * The kernel locker outlives each test's process, so every test uses paths
 * of its own below "hkt<N>", and the fixture releases whatever the kernel
 * locker holds before and after each test.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hlock.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

#define KLOCKER		"/sys/kernel/debug/hlock_torture/klocker"
#define KNAME		"hlock_klocker"
/* The test build's stall points (kmod/hlock_test.h). */
#define STALL		"/sys/kernel/debug/hlock/test_stall"
/* How often a poll for the kernel locker's state looks. */
#define POLL_US		5000
/* A kernel lock call given this long stays waiting if nothing changes. */
#define STILL_MS	100
/* The kernel locker's timed wait, and the process's. */
#define KTIMEOUT_MS	100
#define PTIMEOUT_NS	(50 * MS)

/* Write one command to the kernel locker: 0 or the write's -errno. */
static int kl(const char *cmd)
{
	return write_file_str(KLOCKER, cmd, 0);
}

/* Whether the kernel locker's state has the line @line. */
static bool kl_shows(const char *line)
{
	char buf[4096], *p;
	size_t len = strlen(line);

	if (read_file_str(KLOCKER, buf, sizeof(buf)))
		return false;
	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, line, len) && (p[len] == '\n' || !p[len]))
			return true;
	return false;
}

/* Wait until the kernel locker's state shows @line: 0 or -ETIMEDOUT. */
static int kl_await(const char *line)
{
	int64_t end = now_ns() + SETTLE_NS;

	while (!kl_shows(line)) {
		if (now_ns() > end)
			return -ETIMEDOUT;
		usleep(POLL_US);
	}
	return 0;
}

/*
 * Release everything the kernel locker holds, once its lock call in
 * flight (one waiting for a process that ended) is over: 0 or -errno.
 */
static int kl_reset(void)
{
	char buf[4096], cmd[300], path[256];
	int64_t end = now_ns() + SETTLE_NS;

	for (;;) {
		if (read_file_str(KLOCKER, buf, sizeof(buf)))
			return -ENOENT;
		if (!strncmp(buf, "idle", 4))
			return 0;
		if (now_ns() > end)
			return -ETIMEDOUT;
		if (sscanf(buf, "held %*s %255s", path) == 1) {
			snprintf(cmd, sizeof(cmd), "unlock %s", path);
			kl(cmd);
		} else {
			usleep(POLL_US);
		}
	}
}

/* A request of the kernel locker in the lock table. */
struct krec {
	const char *path;
	unsigned int mode;
	unsigned int state;
};

static bool is_krec(const struct hlock_lock_record *rec, const void *arg)
{
	const struct krec *k = arg;

	return !strcmp(rec->comm, KNAME) && rec->pid &&
	       !strcmp(hlock_record_path(rec), k->path) &&
	       rec->mode == k->mode && rec->state == k->state;
}

/*
 * Wait until the lock table of @fd's space shows the kernel locker's
 * request on @path, in @mode and @state: 0, -ETIMEDOUT or -errno.
 */
static int await_krec(int fd, const char *path, unsigned int mode,
		      unsigned int state)
{
	struct krec k = { .path = path, .mode = mode, .state = state };
	int64_t end = now_ns() + SETTLE_NS;
	int n, found;

	for (;;) {
		n = table_count_if(fd, is_krec, &k, &found);
		if (n < 0)
			return n;
		if (found == 1)
			return 0;
		if (now_ns() > end)
			return -ETIMEDOUT;
		usleep(POLL_US);
	}
}

/* The kernel locker's kthread, or -1. */
static pid_t klocker_pid(void)
{
	char path[300], comm[32];
	struct dirent *d;
	pid_t pid = -1;
	DIR *dir;

	dir = opendir("/proc");
	if (!dir)
		return -1;
	while (pid < 0 && (d = readdir(dir))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		if (!read_file_str(path, comm, sizeof(comm)) &&
		    !strcmp(comm, KNAME))
			pid = atoi(d->d_name);
	}
	closedir(dir);
	return pid;
}

/* The state letter of task @pid (R, S, D...), or 0. */
static char task_state(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file_str(path, buf, sizeof(buf)))
		return 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Wait until the stall point reports @state: 0 or -ETIMEDOUT. */
static int stall_await(const char *state)
{
	int64_t end = now_ns() + SETTLE_NS;
	char buf[32];

	while (read_file_str(STALL, buf, sizeof(buf)) || strcmp(buf, state)) {
		if (now_ns() > end)
			return -ETIMEDOUT;
		usleep(POLL_US);
	}
	return 0;
}

FIXTURE(kl) {
	int fd;
};

FIXTURE_SETUP(kl)
{
	self->fd = -1;
	if (!have_device())
		SKIP(return, "no " HLOCK_DEVICE);
	/* A missing module fails: the suite is run to test it. */
	ASSERT_EQ(0, access(KLOCKER, W_OK))
		TH_LOG("no %s: load hlock_torture.ko duration=0 first", KLOCKER);
	ASSERT_EQ(0, kl_reset());
	self->fd = hlock_open();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(kl)
{
	/* A stall point a failed test left armed or stalled. */
	write_file_str(STALL, "go", 0);
	if (self->fd >= 0)
		close(self->fd);
	kl_reset();
}

/* A process's X holds the kernel's S back until the process unlocks. */
TEST_F_TIMEOUT(kl, process_x_blocks_kernel_s, TEST_TMO)
{
	ASSERT_EQ(0, hlock_lock(self->fd, "hkt1/a", X, 0, -1));
	ASSERT_EQ(0, kl("lock S hkt1/a"));
	ASSERT_EQ(0, kl_await("waiting S hkt1/a"));
	ASSERT_EQ(0, await_krec(self->fd, "hkt1/a", S, HLOCK_STATE_WAITING));
	usleep(STILL_MS * 1000);
	ASSERT_TRUE(kl_shows("waiting S hkt1/a"));
	ASSERT_EQ(0, hlock_unlock(self->fd, "hkt1/a"));
	ASSERT_EQ(0, kl_await("held S hkt1/a"));
	ASSERT_TRUE(kl_shows("last: lock S hkt1/a = 0"));
	ASSERT_EQ(0, await_krec(self->fd, "hkt1/a", S, HLOCK_STATE_GRANTED));
	/* Shared: the process gets S beside it, not X. */
	ASSERT_EQ(0, hlock_lock(self->fd, "hkt1/a", S, 0, 0));
	ASSERT_EQ(0, hlock_unlock(self->fd, "hkt1/a"));
	ASSERT_EQ(-EAGAIN, hlock_lock(self->fd, "hkt1/a", X, 0, 0));
	ASSERT_EQ(0, kl("unlock hkt1/a"));
	ASSERT_TRUE(kl_shows("idle"));
	ASSERT_TRUE(kl_shows("last: unlock hkt1/a = 0"));
}

/*
 * The kernel's X: the process's try fails, its timed lock times out, and
 * its queued lock is granted once the kernel unlocks.
 */
TEST_F_TIMEOUT(kl, kernel_x_blocks_process, TEST_TMO)
{
	ASSERT_EQ(0, kl("lock X hkt2/a"));
	ASSERT_EQ(0, kl_await("held X hkt2/a"));
	ASSERT_EQ(-EAGAIN, hlock_lock(self->fd, "hkt2/a", S, 0, 0));
	ASSERT_EQ(-ETIMEDOUT, hlock_lock(self->fd, "hkt2/a", S, 0,
					 PTIMEOUT_NS));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->fd, "hkt2/a", S, ASYNC, 0));
	ASSERT_EQ(-EAGAIN, hlock_wait(self->fd, 0));
	ASSERT_EQ(0, kl("unlock hkt2/a"));
	ASSERT_EQ(0, hlock_wait(self->fd, SETTLE_NS));
	ASSERT_EQ(S, hlock_held(self->fd, "hkt2/a"));
	ASSERT_TRUE(kl_shows("idle"));
}

/* The kernel's X on a database holds back a process's collection lock. */
TEST_F_TIMEOUT(kl, kernel_x_blocks_intents, TEST_TMO)
{
	ASSERT_EQ(0, kl("lock X hkt3"));
	ASSERT_EQ(0, kl_await("held X hkt3"));
	ASSERT_EQ(-EAGAIN, hlock_lock(self->fd, "hkt3/c", IS, 0, 0));
	ASSERT_EQ(0, hlock_lock(self->fd, "hkt3x/c", X, 0, 0));
	ASSERT_EQ(0, kl("unlock hkt3"));
	ASSERT_EQ(0, hlock_lock(self->fd, "hkt3/c", S, 0, 0));
}

/* The kernel's timed wait and try end as a process's would. */
TEST_F_TIMEOUT(kl, kernel_timeout_and_try, TEST_TMO)
{
	char cmd[64];

	ASSERT_EQ(0, hlock_lock(self->fd, "hkt4/a", X, 0, -1));
	snprintf(cmd, sizeof(cmd), "lock S hkt4/a %d", KTIMEOUT_MS);
	ASSERT_EQ(0, kl(cmd));
	snprintf(cmd, sizeof(cmd), "last: lock S hkt4/a = %d", -ETIMEDOUT);
	ASSERT_EQ(0, kl_await(cmd));
	ASSERT_TRUE(kl_shows("idle"));
	ASSERT_EQ(0, kl("lock S hkt4/a 0"));
	snprintf(cmd, sizeof(cmd), "last: lock S hkt4/a = %d", -EAGAIN);
	ASSERT_EQ(0, kl_await(cmd));
	ASSERT_TRUE(kl_shows("idle"));
	/* The process got nothing back from either, and keeps its X. */
	ASSERT_EQ(X, hlock_held(self->fd, "hkt4/a"));
}

/* The table names the kernel locker by its kthread, intents and all. */
TEST_F_TIMEOUT(kl, table_shows_klocker, TEST_TMO)
{
	char out[8192];
	FILE *p;
	size_t n;

	ASSERT_EQ(0, kl("lock SIX hkt5/a/b"));
	ASSERT_EQ(0, kl_await("held SIX hkt5/a/b"));
	ASSERT_EQ(0, await_krec(self->fd, "", IX, HLOCK_STATE_GRANTED));
	ASSERT_EQ(0, await_krec(self->fd, "hkt5", IX, HLOCK_STATE_GRANTED));
	ASSERT_EQ(0, await_krec(self->fd, "hkt5/a", IX, HLOCK_STATE_GRANTED));
	ASSERT_EQ(0, await_krec(self->fd, "hkt5/a/b", SIX,
				HLOCK_STATE_GRANTED));
	if (access("./lshlock", X_OK))
		return;
	/* lshlock too, where it is beside this program. */
	p = popen("./lshlock -o command,resource,mode,state", "r");
	ASSERT_NE(NULL, p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	ASSERT_EQ(0, pclose(p));
	EXPECT_NE(NULL, strstr(out, KNAME)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "hkt5/a/b")) TH_LOG("%s", out);
}

/*
 * Issue 30, item 5: one kernel locker, two threads.  The kthread's lock
 * call sleeps uninterruptibly; the writer's try on the same locker, made
 * while that call has dropped the locker's lock and not yet gone to sleep
 * (the test build's "wait" stall point), gets -EBUSY and must leave the
 * kthread's sleep as its own call asked: a signal then does not end the
 * wait (it used to, with -EINTR), and the call is granted once the
 * process lets go.
 */
TEST_F_TIMEOUT(kl, shared_locker_keeps_sleep_mode, TEST_TMO)
{
	int64_t end = now_ns() + SETTLE_NS;
	char cmd[64];
	pid_t pid = klocker_pid();

	ASSERT_LT(0, pid);
	ASSERT_EQ(0, access(STALL, W_OK))
		TH_LOG("no %s: the test build of hlock.ko (make ko) is needed",
		       STALL);
	ASSERT_EQ(0, hlock_lock(self->fd, "hkt7/sleep", X, 0, -1));
	ASSERT_EQ(0, write_file_str(STALL, "wait sleep", 0));
	ASSERT_EQ(0, kl("lock S hkt7/sleep uninterruptible"));
	ASSERT_EQ(0, stall_await("stalled"));
	ASSERT_EQ(-EBUSY, kl("try S hkt7/other"));
	ASSERT_EQ(0, write_file_str(STALL, "go", 0));
	ASSERT_EQ(0, kl("signal"));
	/* Asleep uninterruptibly, or done: then with -EINTR, the defect. */
	snprintf(cmd, sizeof(cmd), "last: lock S hkt7/sleep = %d", -EINTR);
	while (!kl_shows(cmd) && task_state(pid) != 'D') {
		ASSERT_LT(now_ns(), end);
		usleep(POLL_US);
	}
	ASSERT_FALSE(kl_shows(cmd))
		TH_LOG("the other thread's try made the wait interruptible");
	ASSERT_TRUE(kl_shows("waiting S hkt7/sleep"));
	ASSERT_EQ(0, hlock_unlock(self->fd, "hkt7/sleep"));
	ASSERT_EQ(0, kl_await("last: lock S hkt7/sleep = 0"));
	ASSERT_EQ(0, kl_await("held S hkt7/sleep"));
	ASSERT_EQ(0, kl("unlock hkt7/sleep"));
}

/* Malformed commands are -EINVAL, and the kernel locker carries on. */
TEST_F_TIMEOUT(kl, bad_commands, TEST_TMO)
{
	static const char *const bad[] = {
		"", "\n", "bogus", "lock", "lock Q hkt6/a", "lock X",
		"lock X hkt6/a soon", "lock X hkt6/a -1", "lock X hkt6/a 10 x",
		"unlock", "unlock hkt6/a hkt6/b", "LOCK X hkt6/a",
		"lock X hkt6/a killable killable", "lock X hkt6/a 10 10",
		"try X", "try X hkt6/a 10", "signal now",
	};
	char *longpath;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *cmd = bad[i];

		EXPECT_EQ(-EINVAL, kl(cmd)) TH_LOG("\"%s\"", cmd ? cmd : "");
	}
	longpath = malloc(HLOCK_PATH_MAX + 16);
	ASSERT_NE(NULL, longpath);
	strcpy(longpath, "lock X ");
	memset(longpath + 7, 'a', HLOCK_PATH_MAX + 1);
	longpath[7 + HLOCK_PATH_MAX + 1] = '\0';
	EXPECT_EQ(-EINVAL, kl(longpath));
	free(longpath);
	EXPECT_EQ(-ENOENT, kl("unlock hkt6/a"));
	/* One lock call at a time. */
	ASSERT_EQ(0, hlock_lock(self->fd, "hkt6/a", X, 0, -1));
	ASSERT_EQ(0, kl("lock S hkt6/a"));
	ASSERT_EQ(0, kl_await("waiting S hkt6/a"));
	EXPECT_EQ(-EBUSY, kl("lock S hkt6/b"));
	ASSERT_EQ(0, hlock_unlock(self->fd, "hkt6/a"));
	ASSERT_EQ(0, kl_await("held S hkt6/a"));
	/* The root is written as two quotes. */
	ASSERT_EQ(0, kl("lock IS \"\""));
	ASSERT_EQ(0, kl_await("held IS \"\""));
	ASSERT_EQ(0, kl("unlock \"\""));
	ASSERT_EQ(0, kl("unlock hkt6/a"));
	ASSERT_TRUE(kl_shows("idle"));
}

/*
 * 200 kernel lockers queue X on one path, each completion unlocking it
 * and so granting the next: the completions come one after the other, in
 * the order queued, and none runs inside another (inside the unlock that
 * granted it), so the chain's length costs no stack.
 */
TEST_F_TIMEOUT(kl, completions_nest_in_nothing, TEST_TMO)
{
	ASSERT_EQ(0, kl("chain 200 hkt7/a"));
	EXPECT_EQ(-EINVAL, kl("chain 1 hkt7/a"));
	EXPECT_EQ(-EINVAL, kl("chain 257 hkt7/a"));
	EXPECT_EQ(-EINVAL, kl("chain 2"));
	ASSERT_EQ(0, hlock_lock(self->fd, "hkt7/a", X, 0, 0));
}

TEST_HARNESS_MAIN
