// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_fuzz: random and malformed ioctls from many threads of several
 * processes at once, then a look at what the module still holds.
 *
 * Each of FUZZ_PROCS processes runs FUZZ_THREADS threads over a table of
 * FUZZ_FDS lockers they share.  A call is mostly well-formed with one
 * thing wrong now and then: bad sizes and command numbers, NULL, unmapped
 * and page-end pointers, bad paths and modes, reserved bits, timeouts from
 * 0 to forever.  Meanwhile lockers are closed and opened again under the
 * other threads, children are forked to call on inherited lockers, and a
 * thread of each process sends SIGUSR1 to the others (no SA_RESTART), so
 * that waits forever end too.  Once every process is gone, the module must
 * hold no request, and, after debugfs' reclaim, no resource and no ended
 * lock space.  The kernel log is checked by the VM harness.
 *
 * HLOCK_FUZZ_CALLS sets the number of calls (default FUZZ_CALLS);
 * HLOCK_FUZZ_SECONDS a time budget: once it is spent, the run ends with
 * the calls made so far, if that is at least a tenth of them (a busy host
 * or a slow kernel makes fewer calls, never none);
 * HLOCK_FUZZ_SEED the seed (default: the time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

/* The harness's macros trip -Wextra, as hlock_test.c explains. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

#define FUZZ_CALLS	1000000
#define FUZZ_PROCS	4
#define FUZZ_THREADS	4
#define FUZZ_FDS	8
/* How often the signal thread of a process strikes. */
#define FUZZ_SIGNAL_US	2000
#define PAGE		4096
#define DEBUGFS_RECLAIM	"/sys/kernel/debug/hlock/reclaim"

/* Shared by every process. */
struct fuzz_shared {
	atomic_long calls;
	atomic_long errors[256];	/* by errno, for the log */
	atomic_long target;
};

static struct fuzz_shared *sh;
static atomic_int fds[FUZZ_FDS];
static pthread_t threads[FUZZ_THREADS];
/*
 * A page at whose end arguments are put, before a PROT_NONE page: one per
 * thread, so that no thread's arguments are rewritten under its call.
 */
static __thread char *edge;
static __thread void *hole;

static const char *const paths[] = {
	"", "a", "a/b", "a/b/c", "b", "b/a", "a/c", "c/d/e/f/g/h/i/j",
	"a/b/c/d/e/f/g/h/i", "a//b", "/a", "a/", "x\ny", "\x01\xff",
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A pointer for an argument of @size bytes: mostly good. */
static void *arg_ptr(uint64_t *s, void *good, size_t size)
{
	switch (rnd(s) % 32) {
	case 0:
		return NULL;
	case 1:
		return hole;
	case 2:
		/* One byte over the edge. */
		return edge + PAGE - size + 1;
	case 3:
		/* Anywhere in the kernel's half: never ours to scribble on. */
		return (void *)(uintptr_t)(rnd(s) | 1ULL << 63);
	case 4:
		/* Exactly at the edge: good. */
		memcpy(edge + PAGE - size, good, size);
		return edge + PAGE - size;
	default:
		return good;
	}
}

static int64_t timeout(uint64_t *s)
{
	switch (rnd(s) % 8) {
	case 0:
		return -1;
	case 1:
	case 2:
		return 0;
	case 3:
		return INT64_MAX;
	default:
		return rnd(s) % (2 * MS);
	}
}

static void path_args(uint64_t *s, struct hlock_lock_args *a, char *buf)
{
	const char *p = paths[rnd(s) % ARRAY_SIZE(paths)];

	memset(a, 0, sizeof(*a));
	strcpy(buf, p);
	a->path = (uintptr_t)buf;
	a->path_len = strlen(p);
	a->mode = rnd(s) % 8 == 0 ? rnd(s) % 16 : 1 + rnd(s) % 5;
	a->timeout_ns = timeout(s);
	switch (rnd(s) % 16) {
	case 0:
		a->path_len = rnd(s) % 4096;
		break;
	case 1:
		a->__pad = 1;
		break;
	case 2:
		if (rnd(s) % 2)
			a->reserved = rnd(s);
		else
			a->lease_ns = (int64_t)rnd(s);
		break;
	case 3:
		a->path = rnd(s) % 2 ? 0 : (uintptr_t)hole;
		break;
	case 4:
		/* The path at the edge, or one byte over it. */
		a->path = (uintptr_t)(edge + PAGE - a->path_len -
				      rnd(s) % 2);
		memcpy((char *)(uintptr_t)a->path, p, a->path_len);
		break;
	case 5:
		a->flags = rnd(s);
		break;
	default:
		a->flags = rnd(s) % 4 ? 0 : rnd(s) % 8;
		break;
	}
}

/* One random call on locker @fd. */
static int fuzz_call(uint64_t *s, int fd)
{
	union {
		struct hlock_lock_args lock;
		struct hlock_wait_args wait;
		struct hlock_stats_args stats;
		struct hlock_table_args table;
		char raw[256];
	} a;
	static __thread char buf[8192], out[8192];
	unsigned long cmd;
	int ret;

	switch (rnd(s) % 20) {
	case 0 ... 7:
		path_args(s, &a.lock, buf);
		cmd = HLOCK_IOC_LOCK;
		break;
	case 8 ... 12:
		/* Unlock, or (one in five) downgrade: no flags, no timeout. */
		path_args(s, &a.lock, buf);
		a.lock.flags = 0;
		a.lock.timeout_ns = 0;
		cmd = HLOCK_IOC_DOWNGRADE;
		if (rnd(s) % 5) {
			a.lock.mode = 0;
			cmd = HLOCK_IOC_UNLOCK;
		}
		break;
	case 13:
		path_args(s, &a.lock, buf);
		cmd = HLOCK_IOC_HELD;
		break;
	case 14 ... 15:
		memset(&a.wait, 0, sizeof(a.wait));
		a.wait.timeout_ns = timeout(s);
		if (rnd(s) % 16 == 0)
			a.wait.flags = rnd(s);
		cmd = HLOCK_IOC_WAIT;
		break;
	case 16:
		memset(&a.stats, 0, sizeof(a.stats));
		a.stats.stats = (uintptr_t)arg_ptr(s, out, 64);
		a.stats.size = rnd(s) % 4 ? sizeof(struct hlock_stats) :
			       rnd(s) % (2 * PAGE);
		a.stats.scope = rnd(s) % 3;
		cmd = HLOCK_IOC_STATS;
		break;
	case 17:
		memset(&a.table, 0, sizeof(a.table));
		a.table.buf = (uintptr_t)arg_ptr(s, out, 64);
		a.table.size = rnd(s) % 2 ? sizeof(out) : rnd(s) % 512;
		if (rnd(s) % 16 == 0)
			a.table.flags = rnd(s);
		cmd = HLOCK_IOC_TABLE;
		break;
	case 18:
		cmd = HLOCK_IOC_GET_INFO;
		break;
	default:
		/* Anything with hlock's type: any number, direction, size. */
		memset(&a, 0, sizeof(a));
		if (rnd(s) % 2)
			for (ret = 0; ret < (int)sizeof(a.raw); ret++)
				a.raw[ret] = rnd(s);
		cmd = _IOC(rnd(s) % 4, HLOCK_IOC_MAGIC, rnd(s) % 16,
			   rnd(s) % sizeof(a.raw));
		break;
	}
	/* Now and then the size the command encodes is another one. */
	if (rnd(s) % 32 == 0)
		cmd = _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd),
			   rnd(s) % sizeof(a.raw));
	ret = ioctl(fd, cmd, arg_ptr(s, &a, _IOC_SIZE(cmd) ?
				     _IOC_SIZE(cmd) : 1));
	return ret < 0 ? errno : 0;
}

static void note(int err)
{
	atomic_fetch_add(&sh->errors[err & 255], 1);
}

/* A child forked mid-run: a few calls on the inherited lockers. */
static void __attribute__((noreturn)) fuzz_child(uint64_t seed)
{
	int i;

	/* Nobody signals it: a wait forever ends with its death. */
	alarm(1);
	for (i = 0; i < 64; i++)
		fuzz_call(&seed, atomic_load(&fds[rnd(&seed) % FUZZ_FDS]));
	_exit(0);
}

/* This thread's edge page and the hole after it.  Return: 0 or -errno. */
static int edge_map(void)
{
	edge = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (edge == MAP_FAILED || mprotect(edge + PAGE, PAGE, PROT_NONE))
		return -errno;
	hole = edge + PAGE;
	return 0;
}

static void *fuzz_thread(void *arg)
{
	uint64_t s = (uintptr_t)arg | 1;

	if (edge_map())
		_exit(2);

	while (atomic_fetch_add(&sh->calls, 1) < atomic_load(&sh->target)) {
		unsigned int i = rnd(&s) % FUZZ_FDS;
		uint64_t r = rnd(&s) % 1024;

		if (r < 8) {
			/* Close a locker under the other threads' feet. */
			int old = atomic_exchange(&fds[i], -1);

			if (old >= 0)
				close(old);
			atomic_store(&fds[i], open(HLOCK_DEVICE, O_RDWR));
			continue;
		}
		if (r == 8) {
			pid_t pid = fork();

			if (!pid)
				fuzz_child(rnd(&s));
			if (pid > 0)
				waitpid(pid, NULL, 0);
			continue;
		}
		note(fuzz_call(&s, atomic_load(&fds[i])));
	}
	return NULL;
}

static void __attribute__((noreturn)) fuzz_process(uint64_t seed)
{
	uint64_t s = seed | 1;
	int i;

	/* SIGUSR1 interrupts the waits (no SA_RESTART). */
	if (install_usr1())
		_exit(2);
	for (i = 0; i < FUZZ_FDS; i++)
		atomic_store(&fds[i], open(HLOCK_DEVICE, O_RDWR));
	for (i = 0; i < FUZZ_THREADS; i++)
		if (pthread_create(&threads[i], NULL, fuzz_thread,
				   (void *)(uintptr_t)rnd(&s)))
			_exit(2);
	/* This thread sends the signals until the calls are all made. */
	while (atomic_load(&sh->calls) < atomic_load(&sh->target)) {
		usleep(FUZZ_SIGNAL_US);
		pthread_kill(threads[rnd(&s) % FUZZ_THREADS], SIGUSR1);
	}
	for (i = 0; i < FUZZ_THREADS; i++) {
		/* A thread may sleep in a wait forever: end it. */
		while (pthread_tryjoin_np(threads[i], NULL)) {
			pthread_kill(threads[i], SIGUSR1);
			usleep(FUZZ_SIGNAL_US);
		}
	}
	for (i = 0; i < FUZZ_FDS; i++)
		close(atomic_load(&fds[i]));
	_exit(0);
}

/* Whether one of the processes has exited (not reaped: still waitable). */
static bool any_exited(const pid_t *pids, int n)
{
	siginfo_t si;
	int i;

	for (i = 0; i < n; i++) {
		si.si_pid = 0;
		if (!waitid(P_PID, pids[i], &si, WEXITED | WNOHANG | WNOWAIT) &&
		    si.si_pid)
			return true;
	}
	return false;
}

FIXTURE(fuzz) {
	int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, random_calls_leave_nothing, 1200)
{
	const char *calls = getenv("HLOCK_FUZZ_CALLS");
	const char *secs = getenv("HLOCK_FUZZ_SECONDS");
	const char *seed = getenv("HLOCK_FUZZ_SEED");
	uint64_t s = seed ? strtoull(seed, NULL, 0) : (uint64_t)now_ns();
	int64_t start = now_ns(), budget = secs ? atol(secs) * 1000000000LL : 0;
	long target, made, last_made = -1;
	int64_t last_change = start;
	pid_t pids[FUZZ_PROCS];
	int i, status, end;

	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	if (debugfs_figure("requests") < 0)
		SKIP(return, "debugfs' hlock/resources is not readable");
	TH_LOG("seed %#llx", (unsigned long long)s);
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	target = calls ? atol(calls) : FUZZ_CALLS;
	ASSERT_LT(0, target);
	atomic_store(&sh->target, target);
	for (i = 0; i < FUZZ_PROCS; i++) {
		fflush(stdout);
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			fuzz_process(rnd(&s));
	}
	/*
	 * The time budget: once it is spent, end the run where it is, but
	 * not before a tenth of the calls are made.  A process that is gone
	 * before the end failed: its status tells below.
	 */
	while (budget > 0) {
		made = atomic_load(&sh->calls);
		if (made >= target || any_exited(pids, FUZZ_PROCS))
			break;
		if (now_ns() - start >= budget && made >= target / 10) {
			atomic_store(&sh->target, made);
			TH_LOG("time budget of %s s spent: %ld calls of %ld",
			       secs, made, target);
			break;
		}
		/* Calls that stopped coming: stuck, shown below. */
		if (made != last_made) {
			last_made = made;
			last_change = now_ns();
		} else if (now_ns() - last_change >= 60 * SEC) {
			atomic_store(&sh->target, made);
			printf("# FAIL no call in 60 s, %ld in all\n", made);
			break;
		}
		usleep(100000);
	}
	/*
	 * The processes end soon after the last call (their waits are
	 * short, or interrupted every FUZZ_SIGNAL_US): one that does not
	 * within 120 s (without a budget, before the harness's timeout)
	 * hangs, and says where (wait_child_within()).
	 */
	end = budget ? 120 : 1140 - (int)((now_ns() - start) / SEC);
	for (i = 0; i < FUZZ_PROCS; i++) {
		status = wait_child_within(pids[i], end > 30 ? end : 30);
		EXPECT_TRUE(status >= 0 && WIFEXITED(status) &&
			    !WEXITSTATUS(status)) {
			TH_LOG("process %d: status %#x", i, status);
		}
	}
	/*
	 * A child forked mid-run may outlive its parent, with lockers it
	 * inherited: it comes to us (subreaper), and dies of its alarm.
	 */
	while (wait(NULL) > 0 || errno == EINTR)
		;
	TH_LOG("%ld calls (closes and forks included) in %.0f s; results: 0 %ld, EINVAL %ld, EFAULT %ld, ENOTTY %ld, EAGAIN %ld, ETIMEDOUT %ld, EINTR %ld, EBUSY %ld, ENOENT %ld, EBADF %ld",
	       atomic_load(&sh->target), (now_ns() - start) / 1e9,
	       atomic_load(&sh->errors[0]), atomic_load(&sh->errors[EINVAL]),
	       atomic_load(&sh->errors[EFAULT]),
	       atomic_load(&sh->errors[ENOTTY]),
	       atomic_load(&sh->errors[EAGAIN]),
	       atomic_load(&sh->errors[ETIMEDOUT]),
	       atomic_load(&sh->errors[EINTR]),
	       atomic_load(&sh->errors[EBUSY]),
	       atomic_load(&sh->errors[ENOENT]),
	       atomic_load(&sh->errors[EBADF]));
	EXPECT_LE(atomic_load(&sh->target), atomic_load(&sh->calls));
	EXPECT_LE(target / 10, atomic_load(&sh->target));
	/* Every locker is closed: nothing may be left. */
	EXPECT_EQ(0, debugfs_figure("requests"));
	ASSERT_EQ(0, write_file_str(DEBUGFS_RECLAIM, "1", 0));
	EXPECT_EQ(0, debugfs_figure("resources"));
	EXPECT_EQ(0, debugfs_figure("spaces_ended"));
	EXPECT_EQ(1, debugfs_figure("spaces"));
}

TEST_HARNESS_MAIN
