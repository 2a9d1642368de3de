/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What hlock's kselftests share: timing constants, mode shorthands, and
 * helpers for raw ioctls, child processes and signals.  Include it after
 * kselftest_harness.h; everything is static inline, so a test that does
 * not use a helper does not warn about it.
 */
#ifndef HLOCK_HELPERS_H
#define HLOCK_HELPERS_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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
#include <sys/wait.h>

#include "hlock.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(arr) (sizeof(arr) / sizeof((arr)[0]))
#endif

#define MS		1000000LL
#define SEC		(1000 * MS)
/* The longest a grant we expect to have happened may take to show. */
#define SETTLE_NS	(5 * SEC)
/* Per test; the VM is slow TCG emulation. */
#define TEST_TMO	60

#define IS	HLOCK_IS
#define IX	HLOCK_IX
#define S	HLOCK_S
#define SIX	HLOCK_SIX
#define X	HLOCK_X
#define NL	HLOCK_NL
#define ASYNC	HLOCK_F_ASYNC

/*
 * The size a bulk test runs at: @full scaled by HLOCK_TEST_SCALE, a
 * percentage from 1 to 100 (100 when unset or invalid), but never less
 * than @least, the size below which the test would prove nothing.
 * scripts/vm-tests lowers it on the debug kernel, where KASAN, kmemleak
 * and lockdep make every open, lock and close of a locker 10 to 100 times
 * dearer under TCG (a cost per locker that does not grow with their
 * number): the bulk tests' thousands of lockers there check memory and
 * locking, the stock kernels run them at full size.
 */
static inline int test_scaled(int full, int least)
{
	const char *env = getenv("HLOCK_TEST_SCALE");
	long pct = 100;
	char *end;
	int n;

	if (env && *env) {
		pct = strtol(env, &end, 10);
		if (*end || pct < 1 || pct > 100)
			pct = 100;
	}
	n = (int)((long long)full * pct / 100);
	return n < least ? least : n;
}

static inline bool have_device(void)
{
	return access(HLOCK_DEVICE, F_OK) == 0;
}

/*
 * Open @n lockers into @fd; each is -1 first, so that a teardown may close
 * what is not -1 whatever happened.  Return: 0, -ENODEV without the
 * device, or hlock_open()'s error.
 */
static inline int lockers_open(int *fd, int n)
{
	int i;

	for (i = 0; i < n; i++)
		fd[i] = -1;
	if (!have_device())
		return -ENODEV;
	for (i = 0; i < n; i++) {
		fd[i] = hlock_open();
		if (fd[i] < 0)
			return fd[i];
	}
	return 0;
}

static inline int raw_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

/* The events poll() reports on @fd now, POLLIN and POLLPRI asked for. */
static inline short poll_events(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI };

	if (poll(&p, 1, 0) < 0)
		return -1;
	return p.revents;
}

/* Wait up to SETTLE_NS for POLLPRI on @fd; return the events seen. */
static inline short poll_pri(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLPRI };

	if (poll(&p, 1, SETTLE_NS / MS) < 0)
		return -1;
	return p.revents;
}

/* A page that is surely not mapped. */
static inline void *unmapped_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		return (void *)1;
	munmap(p, 4096);
	return p;
}

/* Close every inherited descriptor but @keep1 and @keep2 in a child. */
static inline void close_inherited(int keep1, int keep2)
{
	int fd;

	for (fd = 3; fd < 1024; fd++)
		if (fd != keep1 && fd != keep2)
			close(fd);
}

static inline void report(int wfd, char c)
{
	if (write(wfd, &c, 1) != 1)
		_exit(1);
}

/* Read one report byte; 0 on EOF or error. */
static inline char read_report(int rfd)
{
	char c = 0;

	while (read(rfd, &c, 1) < 0 && errno == EINTR)
		;
	return c;
}

static inline int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return status;
}

/*
 * Print where each thread of @pid sleeps, as "# FAIL" lines, which the
 * summary of make check shows: its name, wait channel and kernel stack
 * (root only; a file that cannot be read is left out).
 */
static inline void show_stuck(pid_t pid)
{
	char path[96], line[160];
	struct dirent *d;
	FILE *in;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		static const char *const what[] = { "comm", "wchan", "stack" };
		unsigned int i;

		if (d->d_name[0] == '.')
			continue;
		for (i = 0; i < ARRAY_SIZE(what); i++) {
			snprintf(path, sizeof(path), "/proc/%d/task/%.16s/%s",
				 (int)pid, d->d_name, what[i]);
			in = fopen(path, "r");
			if (!in)
				continue;
			while (fgets(line, sizeof(line), in))
				printf("# FAIL stuck %d/%s %s: %s%s", (int)pid,
				       d->d_name, what[i], line,
				       strchr(line, '\n') ? "" : "\n");
			fclose(in);
		}
	}
	closedir(dir);
	fflush(stdout);
}

/*
 * Wait for child @pid at most @secs seconds; past that, show where it is
 * stuck (show_stuck()) and kill it, and wait 10 s more at most.  A hang
 * then fails its test with a cause, and in bounded time.
 * Return: its status, or -ETIMEDOUT.
 */
static inline int wait_child_within(pid_t pid, int secs)
{
	int status, tenths;
	pid_t ret;

	for (tenths = 0; ; tenths++) {
		ret = waitpid(pid, &status, WNOHANG);
		if (ret == pid)
			return tenths > secs * 10 ? -ETIMEDOUT : status;
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (tenths == secs * 10) {
			printf("# FAIL process %d did not end within %d s\n",
			       (int)pid, secs);
			show_stuck(pid);
			kill(pid, SIGKILL);
		}
		if (tenths >= secs * 10 + 100)
			return -ETIMEDOUT;
		usleep(100000);
	}
}

static inline void stop_child(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	wait_child(pid);
}

/*
 * fork(): in the child, which dies with its parent, only the descriptors
 * @keep1 and @keep2 stay open.  Return: as fork().
 */
static inline pid_t fork_child(int keep1, int keep2)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close_inherited(keep1, keep2);
	return 0;
}

static volatile sig_atomic_t usr1_count;

static inline void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
}

/* SIGUSR1 interrupts blocking calls: no SA_RESTART. */
static inline int install_usr1(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGUSR1, &sa, NULL);
}

/*
 * Fork a child that sends SIGUSR1 to us every @every_ms, the first time
 * after @every_ms, until stop_child(): immune to a signal landing before
 * the blocking call started.
 */
static inline pid_t start_nagger(int every_ms)
{
	pid_t target = getpid();
	pid_t pid = fork_child(-1, -1);

	if (pid)
		return pid;
	for (;;) {
		usleep(every_ms * 1000);
		if (getppid() != target || kill(target, SIGUSR1))
			_exit(0);
	}
}

static inline const char *mname(int mode)
{
	return mode < 0 ? "error" : hlock_mode_name(mode);
}

static inline int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

/* Read a small file (sysfs, procfs), without the trailing newline. */
static inline int read_file_str(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len;

	if (fd < 0)
		return -errno;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len < 0)
		return -errno;
	buf[len] = '\0';
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	return 0;
}

/* Write @val to @path, opened with @flags too.  Return: 0 or -errno. */
static inline int write_file_str(const char *path, const char *val, int flags)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	ssize_t len = (ssize_t)strlen(val);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, len) != len)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}

/* A figure "NAME N" of debugfs' hlock/resources, or -1 without it. */
static inline long debugfs_figure(const char *name)
{
	char buf[512], *p;
	size_t len = strlen(name);

	if (read_file_str("/sys/kernel/debug/hlock/resources", buf,
			  sizeof(buf)))
		return -1;
	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, len) && p[len] == ' ')
			return strtol(p + len + 1, NULL, 10);
	return -1;
}

/*
 * The lock table of @fd's lock space: its number of records, or -errno;
 * and in *@matched how many of them @match (called with @arg) accepts.
 */
static inline int table_count_if(int fd,
				 bool (*match)(const struct hlock_lock_record *,
					       const void *),
				 const void *arg, int *matched)
{
	const struct hlock_lock_record *rec;
	void *buf = NULL;
	int i, n;

	*matched = 0;
	n = hlock_table_alloc(fd, &buf);
	if (n < 0)
		return n;
	rec = buf;
	for (i = 0; i < n; i++, rec = hlock_record_next(rec))
		*matched += match(rec, arg);
	free(buf);
	return n;
}

/* A record that waits or converts (for table_count_if()). */
static inline bool record_waits(const struct hlock_lock_record *rec,
				const void *arg)
{
	(void)arg;
	return rec->state != HLOCK_STATE_GRANTED;
}

/* A yield without a timeout, made by a thread of its own. */
struct yielder {
	pthread_t thread;
	int fd;
	int ret;
};

static inline void *yielder_run(void *arg)
{
	struct yielder *y = arg;

	y->ret = hlock_yield(y->fd, -1);
	return NULL;
}

#endif /* HLOCK_HELPERS_H */
