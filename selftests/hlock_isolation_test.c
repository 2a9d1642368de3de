// SPDX-License-Identifier: GPL-2.0
/*
 * hlock isolation and limits: a lock space per IPC namespace, queue
 * jumping as a privilege (CAP_SYS_NICE in the user namespace owning the
 * lock space), and max_locks_per_locker.
 *
 * Each test runs in a process of its own (the harness forks), so a test
 * may drop capabilities or change namespaces without touching the others.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* The harness's macros trip -Wextra, as hlock_test.c explains. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

#define MAX_LOCKS_PARAM	"/sys/module/hlock/parameters/max_locks_per_locker"
#define DEBUGFS_LOCKS	"/sys/kernel/debug/hlock/locks"
#define MAX_IPC_NS	"/proc/sys/user/max_ipc_namespaces"
#define CLUSTER_PARAM	"/sys/module/hlock/parameters/cluster"
/* unshare(CLONE_NEWIPC) rounds of the leak test. */
#define NS_CYCLES	2000
/* The namespace limit during that test: a leak reaches it at once. */
#define NS_LIMIT	64
/* The least rounds test_scaled() makes: the limit, four times over. */
#define NS_CYCLES_LEAST	(4 * NS_LIMIT)
/*
 * Tries of one round refused while freed namespaces are still on their
 * way (10 ms apart): a leak never gets past them.
 */
#define NS_RETRIES	500

static unsigned long ipc_ns_inum(void)
{
	struct stat st;

	if (stat("/proc/self/ns/ipc", &st))
		return 0;
	return st.st_ino;
}

static bool record_names(const struct hlock_lock_record *rec, const void *path)
{
	return !strcmp(hlock_record_path(rec), path);
}

/* Records in @fd's lock table, and how many name @path. */
static int table_count(int fd, const char *path, int *named)
{
	return table_count_if(fd, record_names, path, named);
}

/* Drop capability @cap from every set of this process.  Return: 0 or -errno. */
static int drop_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
	data[CAP_TO_INDEX(cap)].permitted &= ~CAP_TO_MASK(cap);
	data[CAP_TO_INDEX(cap)].inheritable &= ~CAP_TO_MASK(cap);
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

/* hlock_lock(), shorter. */
static int lk(int fd, const char *path, int mode, unsigned int flags,
	      int64_t timeout_ns)
{
	return hlock_lock(fd, path, mode, flags, timeout_ns);
}

FIXTURE(ns) {
	int fd;
};

FIXTURE_SETUP(ns)
{
	self->fd = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	self->fd = hlock_open();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(ns)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * The same paths in two IPC namespaces never conflict; each lock table
 * and each space's statistics show that space only; a locker stays in the
 * space it was opened in; debugfs shows both, each with its namespace.
 */
TEST_F_TIMEOUT(ns, two_namespaces_same_path, TEST_TMO)
{
	struct hlock_stats st, st0;
	unsigned long outer = ipc_ns_inum(), inner;
	int old, fd, named, p[2];
	char buf[65536], line[64];
	pid_t pid;

	ASSERT_EQ(0, lk(self->fd, "db/coll", X, 0, 0));
	ASSERT_EQ(0, lk(self->fd, "", X, 0, 0));
	ASSERT_EQ(3, table_count(self->fd, "db/coll", &named));
	ASSERT_EQ(1, named);
	ASSERT_EQ(0, hlock_stats(self->fd, HLOCK_STATS_GLOBAL, &st0));
	ASSERT_EQ(0, pipe(p));
	old = hlock_open();
	ASSERT_LE(0, old);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (unshare(CLONE_NEWIPC))
			_exit(10);
		inner = ipc_ns_inum();
		if (!inner || inner == outer)
			_exit(11);
		fd = hlock_open();
		if (fd < 0)
			_exit(12);
		/* A fresh space: nothing counted yet. */
		if (hlock_stats(fd, HLOCK_STATS_GLOBAL, &st) ||
		    st.level[HLOCK_LEVEL_GLOBAL].acquire_count[IX] ||
		    st.level[HLOCK_LEVEL_GLOBAL].acquire_count[X])
			_exit(13);
		if (lk(fd, "db/coll", X, 0, 0) || lk(fd, "", X, 0, 0))
			_exit(14);
		if (hlock_stats(fd, HLOCK_STATS_GLOBAL, &st) ||
		    st.level[HLOCK_LEVEL_GLOBAL].acquire_count[IX] != 1 ||
		    st.level[HLOCK_LEVEL_GLOBAL].acquire_count[X] != 1 ||
		    st.level[HLOCK_LEVEL_DATABASE].acquire_count[IX] != 1 ||
		    st.level[HLOCK_LEVEL_COLLECTION].acquire_count[X] != 1)
			_exit(15);
		/* Its own table: its three records only. */
		if (table_count(fd, "db/coll", &named) != 3 || named != 1)
			_exit(16);
		/* The locker opened outside stays outside: it conflicts. */
		if (lk(old, "db/coll", S, 0, 0) != -EAGAIN)
			_exit(17);
		if (table_count(old, "db/coll", &named) != 3 || named != 1)
			_exit(18);
		snprintf(line, sizeof(line), "%lu\n", inner);
		if (write(p[1], line, strlen(line)) < 0)
			_exit(19);
		/* Hold until the parent has looked, and kills us. */
		pause();
		_exit(0);
	}
	close(p[1]);
	memset(line, 0, sizeof(line));
	ASSERT_LT(0, read(p[0], line, sizeof(line) - 1)) {
		stop_child(pid);
	}
	inner = strtoul(line, NULL, 10);
	/* Still our space's table only, and our own counts. */
	EXPECT_EQ(3, table_count(self->fd, "db/coll", &named));
	EXPECT_EQ(1, named);
	ASSERT_EQ(0, hlock_stats(self->fd, HLOCK_STATS_GLOBAL, &st));
	/*
	 * The child's X counted in its space; its try through the old
	 * locker here, in ours (it got as far as the root's IS).
	 */
	EXPECT_EQ(st0.level[HLOCK_LEVEL_COLLECTION].acquire_count[X],
		  st.level[HLOCK_LEVEL_COLLECTION].acquire_count[X]);
	EXPECT_EQ(st0.level[HLOCK_LEVEL_GLOBAL].acquire_count[IS] + 1,
		  st.level[HLOCK_LEVEL_GLOBAL].acquire_count[IS]);
	if (!read_file_str(DEBUGFS_LOCKS, buf, sizeof(buf))) {
		char want[64];

		snprintf(want, sizeof(want), "\n%-10lu ", outer);
		EXPECT_NE(NULL, strstr(buf, want));
		snprintf(want, sizeof(want), "\n%-10lu ", inner);
		EXPECT_NE(NULL, strstr(buf, want));
		EXPECT_NE(NULL, strstr(buf, "IPC_NS"));
	}
	stop_child(pid);
	close(p[0]);
	close(old);
}

/*
 * A space ends with its last locker, and its namespace is let go: with
 * the kernel's limit on IPC namespaces set low, thousands of rounds of a
 * new namespace, a locker and a lock would fail if either leaked.
 */
TEST_F_TIMEOUT(ns, unshare_cycles_leak_nothing, 300)
{
	char saved[32], limit[32];
	long spaces, retries = 0;
	int cycles = test_scaled(NS_CYCLES, NS_CYCLES_LEAST);
	int i, status, tries, again = 0;
	pid_t pid;

	if (debugfs_figure("spaces") < 0)
		SKIP(return, "debugfs' hlock/resources is not readable");
	spaces = debugfs_figure("spaces");
	ASSERT_LE(1, spaces);
	ASSERT_EQ(0, read_file_str(MAX_IPC_NS, saved, sizeof(saved)));
	snprintf(limit, sizeof(limit), "%d", NS_LIMIT);
	ASSERT_EQ(0, write_file_str(MAX_IPC_NS, limit, 0));
	for (i = 0; i < cycles; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			int fd;

			if (unshare(CLONE_NEWIPC))
				_exit(errno == ENOSPC ? 2 : 1);
			fd = hlock_open();
			if (fd < 0 || lk(fd, "a/b", X, 0, 0))
				_exit(1);
			_exit(0);
		}
		status = wait_child(pid);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 2 &&
		    again++ < NS_RETRIES) {
			/* Namespaces are freed by a worker: let it run. */
			retries++;
			usleep(10000);
			i--;
			continue;
		}
		again = 0;
		ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
			TH_LOG("round %d: status %#x after %d retries", i,
			       status, again);
			write_file_str(MAX_IPC_NS, saved, 0);
		}
	}
	write_file_str(MAX_IPC_NS, saved, 0);
	TH_LOG("%d rounds, %ld retried", cycles, retries);
	/* The ended spaces and their resources go with the reclaim worker. */
	for (tries = 0; tries < 100 && (debugfs_figure("spaces_ended") ||
					debugfs_figure("spaces") != spaces);
	     tries++)
		usleep(100000);
	EXPECT_EQ(0, debugfs_figure("spaces_ended"));
	EXPECT_EQ(spaces, debugfs_figure("spaces"));
}

FIXTURE(priv) {
	int fd[4];
};

FIXTURE_SETUP(priv)
{
	int i;

	for (i = 0; i < 4; i++)
		self->fd[i] = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
}

FIXTURE_TEARDOWN(priv)
{
	int i;

	for (i = 0; i < 4; i++)
		if (self->fd[i] >= 0)
			close(self->fd[i]);
}

/*
 * Without CAP_SYS_NICE, HLOCK_F_FRONT and HLOCK_F_COMPAT_FIRST are -EPERM
 * and take nothing; a locker opened with it keeps the right.
 */
TEST_F_TIMEOUT(priv, front_needs_cap_sys_nice, TEST_TMO)
{
	int before = hlock_open();

	ASSERT_LE(0, before);
	ASSERT_EQ(0, drop_cap(CAP_SYS_NICE));
	self->fd[0] = hlock_open();
	ASSERT_LE(0, self->fd[0]);
	EXPECT_EQ(-EPERM, lk(self->fd[0], "a/b", X, HLOCK_F_FRONT, 0));
	EXPECT_EQ(-EPERM, lk(self->fd[0], "a/b", S, HLOCK_F_COMPAT_FIRST, 0));
	EXPECT_EQ(-EPERM, lk(self->fd[0], "", X, HLOCK_F_FRONT | ASYNC, 0));
	EXPECT_EQ(NL, hlock_held(self->fd[0], ""));
	EXPECT_EQ(0, lk(self->fd[0], "a/b", X, 0, 0));
	/* A conversion asking to jump is refused as well. */
	EXPECT_EQ(-EPERM, lk(self->fd[0], "a", S, HLOCK_F_COMPAT_FIRST, 0));
	EXPECT_EQ(IX, hlock_held(self->fd[0], "a"));
	EXPECT_EQ(0, hlock_unlock(self->fd[0], "a/b"));
	EXPECT_EQ(0, lk(before, "a/b", X, HLOCK_F_FRONT, 0));
	close(before);
}

/*
 * Root S and X of lockers without the capability queue plainly FIFO: a
 * root S behind a waiting root X waits, where with the capability the X
 * would have let it pass (compatible-first).
 */
TEST_F_TIMEOUT(priv, root_x_is_fifo_without_cap, TEST_TMO)
{
	int i;

	for (i = 0; i < 2; i++) {
		/* Round 0 with the capability, round 1 without. */
		if (i == 1)
			ASSERT_EQ(0, drop_cap(CAP_SYS_NICE));
		self->fd[0] = hlock_open();
		self->fd[1] = hlock_open();
		self->fd[2] = hlock_open();
		ASSERT_LE(0, self->fd[2]);
		ASSERT_EQ(0, lk(self->fd[0], "", S, 0, 0));
		ASSERT_EQ(-EINPROGRESS, lk(self->fd[1], "", X, ASYNC, 0));
		if (i == 0) {
			EXPECT_EQ(0, lk(self->fd[2], "", S, 0, 0));
			EXPECT_EQ(0, hlock_unlock(self->fd[2], ""));
		} else {
			EXPECT_EQ(-EAGAIN, lk(self->fd[2], "", S, 0, 0));
			EXPECT_EQ(-EAGAIN, lk(self->fd[2], "db", IS, 0, 0));
		}
		/* The X is granted once the S goes, either way. */
		EXPECT_EQ(0, hlock_unlock(self->fd[0], ""));
		EXPECT_EQ(0, hlock_wait(self->fd[1], 5 * SEC));
		EXPECT_EQ(X, hlock_held(self->fd[1], ""));
		close(self->fd[0]);
		close(self->fd[1]);
		close(self->fd[2]);
		self->fd[0] = self->fd[1] = self->fd[2] = -1;
	}
}

/* Map uid and gid 0 of a new user namespace to ours (root's). */
static int map_root(void)
{
	if (write_file_str("/proc/self/uid_map", "0 0 1", 0))
		return -1;
	if (write_file_str("/proc/self/setgroups", "deny", 0))
		return -1;
	return write_file_str("/proc/self/gid_map", "0 0 1", 0);
}

/*
 * The capability counts in the user namespace that owns the lock space:
 * root of a new user namespace may not jump queues of the host's space,
 * but may in the space of an IPC namespace it made.
 */
TEST_F_TIMEOUT(priv, user_namespace_owns_the_right, TEST_TMO)
{
	int fd;

	if (unshare(CLONE_NEWUSER))
		SKIP(return, "no user namespaces: %s", strerror(errno));
	ASSERT_EQ(0, map_root());
	fd = hlock_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EPERM, lk(fd, "a", X, HLOCK_F_FRONT, 0));
	close(fd);
	ASSERT_EQ(0, unshare(CLONE_NEWIPC));
	fd = hlock_open();
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, lk(fd, "a", X, HLOCK_F_FRONT, 0));
	close(fd);
}

/* HLOCK_IOC_CLUSTER as it is.  Return: 0 or -errno. */
static int cluster_ioctl(int fd, struct hlock_cluster_args *args)
{
	return ioctl(fd, HLOCK_IOC_CLUSTER, args) ? -errno : 0;
}

/*
 * A child in an IPC namespace of its own: it unshares, says so on
 * @ready, opens a locker when told 'o' on @cmd, closes it on 'c' and
 * exits on end of file.
 */
static pid_t ns_child(int ready[2], int cmd[2])
{
	pid_t pid;
	int fd = -1;
	char c;

	if (pipe(ready) || pipe(cmd))
		return -1;
	pid = fork();
	if (pid)
		return pid;
	close(ready[0]);
	close(cmd[1]);
	if (unshare(CLONE_NEWIPC))
		_exit(1);
	c = 'u';
	if (write(ready[1], &c, 1) != 1)
		_exit(1);
	while (read(cmd[0], &c, 1) == 1) {
		if (c == 'o')
			fd = hlock_open();
		else if (c == 'c')
			close(fd);
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

/* Tell the child of ns_child() @c and wait until it did it. */
static int ns_child_do(int ready[2], int cmd[2], char c)
{
	char r;

	if (write(cmd[1], &c, 1) != 1 || read(ready[0], &r, 1) != 1)
		return -1;
	return r == c ? 0 : -1;
}

FIXTURE(bind) {
	int fd;
};

FIXTURE_SETUP(bind)
{
	self->fd = -1;
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	self->fd = hlock_open();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(bind)
{
	if (self->fd >= 0)
		close(self->fd);
}

/*
 * HLOCK_IOC_CLUSTER reads the initial namespace's binding from the module
 * parameter; it refuses bad arguments, each with its error, and binding a
 * lock space with lockers open (this test's own); it reads and sets
 * another namespace's, and no one but CAP_SYS_ADMIN does either.
 */
TEST_F_TIMEOUT(bind, errors_and_reads, TEST_TMO)
{
	char name[HLOCK_CLUSTER_NAME_MAX + 1], param[128] = "", big[80];
	struct hlock_cluster_args args;
	int ready[2], cmd[2], status;
	bool dlm = !access("/sys/kernel/dlm", F_OK);
	FILE *f;
	pid_t pid;

	f = fopen(CLUSTER_PARAM, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(param, sizeof(param), f));
	fclose(f);
	param[strcspn(param, "\n")] = 0;
	ASSERT_EQ(0, hlock_cluster_get(self->fd, 0, name, sizeof(name)));
	EXPECT_STREQ(param, name);

	/* Arguments. */
	memset(&args, 0, sizeof(args));
	args.name = (uintptr_t)name;
	args.name_len = sizeof(name);
	args.flags = 1U << 1;
	EXPECT_EQ(-EINVAL, cluster_ioctl(self->fd, &args));
	args.flags = 0;
	args.__pad = 1;
	EXPECT_EQ(-EINVAL, cluster_ioctl(self->fd, &args));
	args.__pad = 0;
	args.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, cluster_ioctl(self->fd, &args));
	args.reserved[1] = 0;
	args.pid = -1;
	EXPECT_EQ(-EINVAL, cluster_ioctl(self->fd, &args));
	args.pid = 0;
	EXPECT_EQ(0, cluster_ioctl(self->fd, &args));
	EXPECT_EQ(strlen(param), args.name_len);
	args.flags = HLOCK_CLUSTER_F_SET;
	args.name_len = HLOCK_CLUSTER_NAME_MAX + 1;
	memset(big, 'a', sizeof(big));
	args.name = (uintptr_t)big;
	EXPECT_EQ(-ENAMETOOLONG, cluster_ioctl(self->fd, &args));
	EXPECT_EQ(-ENAMETOOLONG, hlock_cluster_set(self->fd, 0,
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
	EXPECT_EQ(-EINVAL, hlock_cluster_set(self->fd, 0, "a/b"));
	EXPECT_EQ(-EINVAL, hlock_cluster_set(self->fd, 0, "a b"));
	EXPECT_EQ(-EINVAL, hlock_cluster_set(self->fd, 0, "a\n"));
	args.name = 8;
	args.name_len = 4;
	EXPECT_EQ(-EFAULT, cluster_ioctl(self->fd, &args));
	EXPECT_EQ(-ESRCH, hlock_cluster_set(self->fd, INT32_MAX, ""));
	EXPECT_EQ(-ESRCH, hlock_cluster_get(self->fd, INT32_MAX, name,
					    sizeof(name)));
	/* This test's locker is open in the initial space: bound for life. */
	EXPECT_EQ(-EBUSY, hlock_cluster_set(self->fd, 0, "other"));
	EXPECT_EQ(-EBUSY, hlock_cluster_set(self->fd, getpid(),
					    *param ? "" : "other"));

	/* Another namespace: none, busy while its locker is open. */
	pid = ns_child(ready, cmd);
	ASSERT_LE(0, pid);
	ASSERT_EQ(1, read(ready[0], name, 1));
	memset(name, 'x', sizeof(name));
	EXPECT_EQ(0, hlock_cluster_get(self->fd, pid, name, sizeof(name)));
	EXPECT_STREQ("", name);
	EXPECT_EQ(dlm ? 0 : -ENOPROTOOPT,
		  hlock_cluster_set(self->fd, pid, "hl-test.1"));
	EXPECT_EQ(0, hlock_cluster_get(self->fd, pid, name, sizeof(name)));
	EXPECT_STREQ(dlm ? "hl-test.1" : "", name);
	if (dlm)
		EXPECT_EQ(-ERANGE, hlock_cluster_get(self->fd, pid, name, 4));
	EXPECT_EQ(0, hlock_cluster_set(self->fd, pid, ""));
	ASSERT_EQ(0, ns_child_do(ready, cmd, 'o'));
	EXPECT_EQ(-EBUSY, hlock_cluster_set(self->fd, pid, ""));
	ASSERT_EQ(0, ns_child_do(ready, cmd, 'c'));
	/* Its space ends with its last locker. */
	EXPECT_EQ(0, hlock_cluster_set(self->fd, pid, NULL));

	/* Without CAP_SYS_ADMIN: its own binding only, read only. */
	status = fork();
	ASSERT_LE(0, status);
	if (!status) {
		int ret = drop_cap(CAP_SYS_ADMIN);

		if (!ret && hlock_cluster_set(self->fd, 0, "") != -EPERM)
			ret = 2;
		if (!ret && hlock_cluster_set(self->fd, pid, "") != -EPERM)
			ret = 3;
		if (!ret && hlock_cluster_get(self->fd, pid, name,
					      sizeof(name)) != -EPERM)
			ret = 4;
		if (!ret && hlock_cluster_get(self->fd, 0, name,
					      sizeof(name)))
			ret = 5;
		_exit(ret ? (ret < 0 ? 1 : ret) : 0);
	}
	EXPECT_EQ(0, WEXITSTATUS(wait_child(status)));
	close(cmd[1]);
	EXPECT_EQ(0, wait_child(pid));
	close(cmd[0]);
	close(ready[0]);
	close(ready[1]);
}

FIXTURE(limit) {
	int fd[2];
	char saved[32];
};

FIXTURE_SETUP(limit)
{
	self->fd[0] = self->fd[1] = -1;
	self->saved[0] = '\0';
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	if (read_file_str(MAX_LOCKS_PARAM, self->saved, sizeof(self->saved)))
		SKIP(return, MAX_LOCKS_PARAM " is not readable");
	self->fd[0] = hlock_open();
	self->fd[1] = hlock_open();
	ASSERT_LE(0, self->fd[1]);
}

FIXTURE_TEARDOWN(limit)
{
	if (self->fd[0] >= 0)
		close(self->fd[0]);
	if (self->fd[1] >= 0)
		close(self->fd[1]);
	if (self->saved[0])
		EXPECT_EQ(0, write_file_str(MAX_LOCKS_PARAM, self->saved, 0));
}

/*
 * A lock call past max_locks_per_locker resources fails with -ENOLCK and
 * leaves the locker as it was; recursion and conversion need none.
 */
TEST_F_TIMEOUT(limit, enolck_at_the_limit, TEST_TMO)
{
	int fd = self->fd[0];

	EXPECT_EQ(65536, atoi(self->saved));
	EXPECT_EQ(-EINVAL, write_file_str(MAX_LOCKS_PARAM, "0", 0));
	ASSERT_EQ(0, write_file_str(MAX_LOCKS_PARAM, "5", 0));
	/* Root, a, b, c, d: five. */
	ASSERT_EQ(0, lk(fd, "a/b/c/d", X, 0, 0));
	EXPECT_EQ(-ENOLCK, lk(fd, "a/b/c/e", X, 0, 0));
	EXPECT_EQ(-ENOLCK, lk(fd, "z", IS, ASYNC, 0));
	EXPECT_EQ(IX, hlock_held(fd, "a/b/c"));
	EXPECT_EQ(NL, hlock_held(fd, "a/b/c/e"));
	EXPECT_EQ(NL, hlock_held(fd, "z"));
	EXPECT_EQ(0, lk(fd, "a/b/c/d", X, 0, 0));
	EXPECT_EQ(0, lk(fd, "a/b", X, 0, 0));
	/* Another locker has a limit of its own. */
	EXPECT_EQ(0, lk(self->fd[1], "q/r/s/t", S, 0, 0));
	EXPECT_EQ(1, hlock_unlock(fd, "a/b/c/d"));
	EXPECT_EQ(0, hlock_unlock(fd, "a/b/c/d"));
	EXPECT_EQ(0, lk(fd, "a/b/c/e", X, 0, 0));
}

/*
 * A lowered limit holds from the next call, also on the path the locker
 * locked last (a call that passes straight to the core otherwise).
 */
TEST_F_TIMEOUT(limit, limit_on_the_last_path, TEST_TMO)
{
	int fd = self->fd[0];

	/* Root, a, b: three, taken and given back twice. */
	ASSERT_EQ(0, lk(fd, "a/b", X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(fd, "a/b"));
	ASSERT_EQ(0, lk(fd, "a/b", X, 0, 0));
	ASSERT_EQ(0, hlock_unlock(fd, "a/b"));
	ASSERT_EQ(0, write_file_str(MAX_LOCKS_PARAM, "2", 0));
	EXPECT_EQ(-ENOLCK, lk(fd, "a/b", X, 0, 0));
	EXPECT_EQ(NL, hlock_held(fd, ""));
	ASSERT_EQ(0, write_file_str(MAX_LOCKS_PARAM, "3", 0));
	EXPECT_EQ(0, lk(fd, "a/b", X, 0, 0));
	EXPECT_EQ(X, hlock_held(fd, "a/b"));
}

/*
 * A request that waited, then needs one level too many once granted,
 * fails with -ENOLCK and gives back what it took.
 */
TEST_F_TIMEOUT(limit, enolck_after_a_wait, TEST_TMO)
{
	int fd = self->fd[0];

	ASSERT_EQ(0, write_file_str(MAX_LOCKS_PARAM, "3", 0));
	ASSERT_EQ(0, lk(self->fd[1], "a", X, 0, 0));
	/* Root and a (after the wait), then b is the third, c a fourth. */
	ASSERT_EQ(-EINPROGRESS, lk(fd, "a/b/c", S, ASYNC, 0));
	EXPECT_EQ(0, hlock_unlock(self->fd[1], "a"));
	EXPECT_EQ(-ENOLCK, hlock_wait(fd, 5 * SEC));
	EXPECT_EQ(NL, hlock_held(fd, ""));
	EXPECT_EQ(NL, hlock_held(fd, "a"));
	EXPECT_EQ(0, lk(self->fd[1], "a", X, 0, 0));
}

TEST_HARNESS_MAIN
