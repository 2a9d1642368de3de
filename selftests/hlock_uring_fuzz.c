// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_uring_fuzz: a stateful io_uring fuzzer, seeded and reproducible.
 *
 * Each round forks FZ_PROCS worker processes of FZ_THREADS threads.  A
 * worker opens FZ_LOCKERS lockers that all its threads use (shared
 * lockers); each thread has a ring of its own, of the variant's kind
 * (plain, SQPOLL, or SQPOLL with some threads attached to the first
 * thread's SQPOLL thread by IORING_SETUP_ATTACH_WQ).  A thread then takes
 * random steps on a few overlapping paths: ring locks (timeouts of zero, a
 * few milliseconds or forever; IOSQE_ASYNC; linked to a ring unlock, to
 * another lock or to a NOP, with IOSQE_ASYNC as hlock.rst asks of links),
 * ring unlocks and downgrades, ioctl locks, unlocks and
 * yields, leases and their renewal, closing a locker and opening it again
 * in the same descriptor, flipping the grant policy and the ticket pools,
 * and forking a child that locks through the inherited lockers on a ring
 * of its own and exits (or is killed) with its locks pending, while it
 * still holds the parent's rings.  The test kills some workers with
 * SIGKILL at random moments; the others return with their locks pending.
 *
 * It found that 6.1's io_uring dropped an unlock's positive count issued
 * by io-wq, leaving the request in flight for ever: an SQPOLL thread then
 * never finished exiting (issue 30).
 *
 * What must hold: every CQE and every call returns a result its operation
 * may return; every worker finishes exiting within EXIT_NS of its kill
 * (a pending command must never hold an exiting SQPOLL thread); and once
 * all are reaped, the lock table and debugfs' request count go back to
 * nothing within TEARDOWN_NS.  A failure prints the seed and the round:
 * HLOCK_URING_FUZZ_SEED=seed reproduces the same choices (thread
 * interleavings aside).
 *
 * HLOCK_URING_FUZZ_ROUNDS sets the rounds of each variant (default
 * FZ_ROUNDS, scaled by HLOCK_TEST_SCALE like the other bulk tests).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <liburing.h>

/* The harness's macros trip -Wextra, as hlock_test.c explains. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"
#include "hlock_uring.h"

#define FZ_ROUNDS	20
#define FZ_ROUNDS_LEAST	3
#define FZ_PROCS	3
#define FZ_THREADS	3
#define FZ_LOCKERS	4
#define FZ_STEPS	200
#define FZ_ENTRIES	32
/* A worker's life before the test kills it, at most. */
#define FZ_KILL_MAX_MS	150
/* Hang guards only: no timing is asserted. */
#define EXIT_NS		(60 * SEC)
#define TEARDOWN_NS	(30 * SEC)

#define POLICY_PARAM	"/sys/module/hlock/parameters/grant_policy"
#define RTICKETS_PARAM	"/sys/module/hlock/parameters/read_tickets"
#define WTICKETS_PARAM	"/sys/module/hlock/parameters/write_tickets"

static const char *const fz_paths[] = {
	"", "a", "a/b", "a/b/c", "a/d", "e", "e/f",
};
#define FZ_NPATHS	(sizeof(fz_paths) / sizeof(fz_paths[0]))

/* What a worker reports to the test, in shared memory. */
struct fz_shared {
	atomic_int bad;			/* an unexpected result seen */
	char what[160];			/* the first one */
};

static struct fz_shared *fz_sh;

/* xorshift64*: the same seed, the same choices. */
static uint64_t fz_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static unsigned int fz_rand(uint64_t *s, unsigned int n)
{
	return (unsigned int)(fz_next(s) >> 33) % n;
}

static uint64_t fz_seed_of(uint64_t seed, unsigned int a, unsigned int b,
			   unsigned int c)
{
	uint64_t s = seed ^ (0x9e3779b97f4a7c15ULL * (a + 1)) ^
		     ((uint64_t)b << 40) ^ ((uint64_t)c << 20);

	return s ? s : 1;
}

/* Note the first unexpected result; the test fails on it. */
static void fz_bad(const char *op, int res)
{
	if (atomic_fetch_add(&fz_sh->bad, 1) == 0)
		snprintf(fz_sh->what, sizeof(fz_sh->what),
			 "%s returned %d (%s)", op, res,
			 res < 0 ? strerror(-res) : "positive");
}

/* What a lock may answer here: granted, refused, withdrawn, or closed. */
static bool fz_lock_ok(int res)
{
	switch (res) {
	case 0: case -EAGAIN: case -ETIMEDOUT: case -ECANCELED:
	case -EDEADLK: case -EBUSY: case -EINTR: case -EBADF: case -ENOLCK:
		return true;
	}
	return false;
}

/* An unlock or downgrade: a count, or nothing held, busy or stale. */
static bool fz_path_ok(int res)
{
	return res >= 0 || res == -ENOENT || res == -EBUSY ||
	       res == -ESTALE || res == -ECANCELED || res == -EBADF ||
	       res == -EINVAL;
}

/* user_data: the kind of the SQE in the top byte. */
enum { FZ_UD_LOCK = 1, FZ_UD_UNLOCK, FZ_UD_DOWNGRADE };

struct fz_worker {
	uint64_t seed;
	unsigned int variant;
	int fd[FZ_LOCKERS];
	struct io_uring ring[FZ_THREADS];
	bool ring_ok[FZ_THREADS];
	pthread_mutex_t reopen;		/* one close-and-reopen at a time */
};

struct fz_thread {
	struct fz_worker *w;
	unsigned int idx;
	uint64_t rnd;
};

static void fz_check_cqe(const struct io_uring_cqe *cqe)
{
	int res = cqe->res;

	switch (cqe->user_data >> 56) {
	case FZ_UD_LOCK:
		if (!fz_lock_ok(res)) {
			char what[48];

			snprintf(what, sizeof(what), "ring lock (sqe flags 0x%x)",
				 (unsigned int)(cqe->user_data & 0xff));
			fz_bad(what, res);
		}
		break;
	case FZ_UD_UNLOCK:
	case FZ_UD_DOWNGRADE:
		if (!fz_path_ok(res))
			fz_bad("ring unlock/downgrade", res);
		break;
	}
}

/* Take whatever completed, without waiting. */
static void fz_reap(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;

	io_uring_get_events(ring);
	while (!io_uring_peek_cqe(ring, &cqe)) {
		fz_check_cqe(cqe);
		io_uring_cqe_seen(ring, cqe);
	}
}

static int fz_mode(uint64_t *r)
{
	return HLOCK_IS + (int)fz_rand(r, HLOCK_NR_MODES - 1);
}

static int64_t fz_timeout(uint64_t *r)
{
	switch (fz_rand(r, 4)) {
	case 0:
		return 0;
	case 1:
		return -1;
	default:
		return (int64_t)(1 + fz_rand(r, 20)) * MS;
	}
}

/* Queue one ring step: a lock, maybe linked, an unlock or a downgrade. */
static void fz_ring_step(struct fz_thread *t, struct io_uring *ring)
{
	struct io_uring_sqe *sqe, *next;
	uint64_t *r = &t->rnd;
	int fd = t->w->fd[fz_rand(r, FZ_LOCKERS)];
	const char *path = fz_paths[fz_rand(r, FZ_NPATHS)];
	unsigned int k = fz_rand(r, 8);

	if (io_uring_sq_space_left(ring) < 2)
		return;
	sqe = io_uring_get_sqe(ring);
	if (k < 5) {
		hlock_prep_lock(sqe, fd, path, fz_mode(r), 0, fz_timeout(r));
		io_uring_sqe_set_data64(sqe, (uint64_t)FZ_UD_LOCK << 56);
		if (fz_rand(r, 3) == 0)
			sqe->flags |= IOSQE_ASYNC;
		/* The SQE's flags in user_data: a failure names them. */
		if (k == 4)
			sqe->flags |= IOSQE_IO_LINK | IOSQE_ASYNC;
		sqe->user_data |= sqe->flags;
		if (k == 4) {
			/*
			 * Linked: its unlock, another lock, or a NOP.  A
			 * command of a link may be issued after its submission
			 * (the next once the one before ends; the first when
			 * the SQPOLL thread's batch splits the link), and some
			 * kernels (6.12.117) read its SQE only then, in the SQ
			 * ring since reused: with IOSQE_ASYNC they copy it at
			 * submission (hlock.rst, "io_uring").
			 */
			next = io_uring_get_sqe(ring);
			if (!fz_rand(r, 3)) {
				io_uring_prep_nop(next);
				io_uring_sqe_set_data64(next, 0);
			} else if (fz_rand(r, 2)) {
				hlock_prep_unlock(next, fd, path);
				io_uring_sqe_set_data64(next,
					(uint64_t)FZ_UD_UNLOCK << 56);
			} else {
				hlock_prep_lock(next, fd,
						fz_paths[fz_rand(r, FZ_NPATHS)],
						fz_mode(r), 0, fz_timeout(r));
				io_uring_sqe_set_data64(next,
					(uint64_t)FZ_UD_LOCK << 56);
			}
			if (next->opcode == IORING_OP_URING_CMD)
				next->flags |= IOSQE_ASYNC;
			next->user_data |= next->flags | 0x80;
		}
	} else if (k < 7) {
		hlock_prep_unlock(sqe, fd, path);
		io_uring_sqe_set_data64(sqe, (uint64_t)FZ_UD_UNLOCK << 56);
	} else {
		hlock_prep_downgrade(sqe, fd, path, fz_mode(r));
		io_uring_sqe_set_data64(sqe, (uint64_t)FZ_UD_DOWNGRADE << 56);
	}
	io_uring_submit(ring);
}

/* Write a module parameter; the test restores them at its end. */
static void fz_param(const char *path, const char *val)
{
	write_file_str(path, val, 0);
}

/*
 * A child of a worker: locks through the inherited lockers on a ring of
 * its own, then leaves with them pending, holding the parent's rings.
 */
static void __attribute__((noreturn)) fz_child(struct fz_thread *t)
{
	uint64_t r = fz_next(&t->rnd);
	struct io_uring ring;
	unsigned int i;

	if (io_uring_queue_init(FZ_ENTRIES, &ring,
				t->w->variant ? IORING_SETUP_SQPOLL : 0))
		_exit(0);
	for (i = 0; i < 4; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		hlock_prep_lock(sqe, t->w->fd[fz_rand(&r, FZ_LOCKERS)],
				fz_paths[fz_rand(&r, FZ_NPATHS)], fz_mode(&r),
				0, -1);
		io_uring_sqe_set_data64(sqe, (uint64_t)FZ_UD_LOCK << 56);
	}
	io_uring_submit(&ring);
	if (fz_rand(&r, 2))
		usleep(1000 * fz_rand(&r, 20));
	if (fz_rand(&r, 2))
		kill(getpid(), SIGKILL);
	_exit(0);
}

/* One step of a thread, outside its ring. */
static void fz_call_step(struct fz_thread *t)
{
	uint64_t *r = &t->rnd;
	unsigned int l = fz_rand(r, FZ_LOCKERS);
	int fd = t->w->fd[l];
	const char *path = fz_paths[fz_rand(r, FZ_NPATHS)];
	uint64_t token;
	pid_t pid;
	int ret;

	switch (fz_rand(r, 12)) {
	case 0: case 1: case 2:
		ret = hlock_lock(fd, path, fz_mode(r), 0,
				 fz_rand(r, 2) ? 0 : (int64_t)fz_rand(r, 5) * MS);
		if (!fz_lock_ok(ret))
			fz_bad("hlock_lock", ret);
		break;
	case 3: case 4:
		ret = hlock_unlock(fd, path);
		if (!fz_path_ok(ret))
			fz_bad("hlock_unlock", ret);
		break;
	case 5:
		ret = hlock_yield(fd, (int64_t)fz_rand(r, 5) * MS);
		if (ret && !fz_lock_ok(ret) && ret != -ESTALE)
			fz_bad("hlock_yield", ret);
		break;
	case 6:
		ret = hlock_lock_lease(fd, path, fz_mode(r), 0, 0,
				       (int64_t)(1 + fz_rand(r, 10)) * MS);
		if (!fz_lock_ok(ret))
			fz_bad("hlock_lock_lease", ret);
		break;
	case 7:
		ret = hlock_renew(fd);
		if (ret < 0 && ret != -EBADF && ret != -EBUSY)
			fz_bad("hlock_renew", ret);
		ret = hlock_token(fd, path, &token);
		(void)ret;
		break;
	case 8:
		/* Close a locker and open another in its descriptor. */
		pthread_mutex_lock(&t->w->reopen);
		ret = hlock_open();
		if (ret >= 0) {
			dup2(ret, fd);
			close(ret);
		}
		pthread_mutex_unlock(&t->w->reopen);
		break;
	case 9:
		fz_param(POLICY_PARAM, fz_rand(r, 2) ? "fifo" : "batch");
		break;
	case 10: {
		static const char *const n[] = { "0", "1", "2" };

		fz_param(fz_rand(r, 2) ? RTICKETS_PARAM : WTICKETS_PARAM,
			 n[fz_rand(r, 3)]);
		break;
	}
	case 11:
		if (fz_rand(r, 4))
			break;
		pid = fork();
		if (pid == 0)
			fz_child(t);
		/* Reaped by the worker's end, or left to init. */
		break;
	}
}

static void *fz_thread_run(void *arg)
{
	struct fz_thread *t = arg;
	struct io_uring *ring = &t->w->ring[t->idx];
	bool have_ring = t->w->ring_ok[t->idx];
	unsigned int i;

	for (i = 0; i < FZ_STEPS && !atomic_load(&fz_sh->bad); i++) {
		if (have_ring && fz_rand(&t->rnd, 2))
			fz_ring_step(t, ring);
		else
			fz_call_step(t);
		if (have_ring)
			fz_reap(ring);
		if (!fz_rand(&t->rnd, 16))
			usleep(fz_rand(&t->rnd, 2000));
	}
	return NULL;
}

/* Set up the rings of a worker's threads for @variant. */
static void fz_rings(struct fz_worker *w)
{
	struct io_uring_params p;
	unsigned int i;

	for (i = 0; i < FZ_THREADS; i++) {
		memset(&p, 0, sizeof(p));
		if (w->variant) {
			p.flags = IORING_SETUP_SQPOLL;
			/* Short idle: nine polling threads share two CPUs. */
			p.sq_thread_idle = 1;
		}
		/* Variant 2: the others share the first's SQPOLL thread. */
		if (w->variant == 2 && i && w->ring_ok[0]) {
			p.flags |= IORING_SETUP_ATTACH_WQ;
			p.wq_fd = (unsigned int)w->ring[0].ring_fd;
		}
		w->ring_ok[i] = !io_uring_queue_init_params(FZ_ENTRIES,
							    &w->ring[i], &p);
	}
}

static void __attribute__((noreturn)) fz_worker_run(uint64_t seed,
						     unsigned int variant)
{
	struct fz_thread th[FZ_THREADS];
	pthread_t tid[FZ_THREADS];
	struct fz_worker w;
	unsigned int i;

	memset(&w, 0, sizeof(w));
	w.seed = seed;
	w.variant = variant;
	pthread_mutex_init(&w.reopen, NULL);
	for (i = 0; i < FZ_LOCKERS; i++) {
		w.fd[i] = hlock_open();
		if (w.fd[i] < 0)
			_exit(2);
	}
	fz_rings(&w);
	for (i = 0; i < FZ_THREADS; i++) {
		th[i].w = &w;
		th[i].idx = i;
		th[i].rnd = fz_seed_of(seed, i, 0, 0);
		if (pthread_create(&tid[i], NULL, fz_thread_run, &th[i]))
			_exit(2);
	}
	for (i = 0; i < FZ_THREADS; i++)
		pthread_join(tid[i], NULL);
	/* Leave with whatever is pending: exit tears the rest down. */
	_exit(0);
}

/* Print the kernel stacks of @pid's threads: a worker that does not end. */
static void fz_dump_stacks(pid_t pid)
{
	char dir[64], path[384], buf[4096];
	struct dirent *de;
	DIR *d;
	int n;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/comm", dir, de->d_name);
		n = read_file_str(path, buf, sizeof(buf)) ? 0 : 1;
		fprintf(stderr, "# task %s %s\n", de->d_name, n ? buf : "?");
		snprintf(path, sizeof(path), "%s/%s/stack", dir, de->d_name);
		if (!read_file_str(path, buf, sizeof(buf)))
			fprintf(stderr, "%s\n", buf);
	}
	closedir(d);
}

/*
 * waitpid() for up to @guard ns: 0 once @pid is reaped (-1: once no child
 * is left), -ETIMEDOUT.
 */
static int fz_reap_child(pid_t pid, int64_t guard)
{
	int64_t end = now_ns() + guard;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if ((pid > 0 && r == pid) || (r < 0 && errno == ECHILD))
			return 0;
		if (r > 0)
			continue;
		if (now_ns() > end)
			return -ETIMEDOUT;
		usleep(2000);
	}
}

static uint64_t fz_seed(void)
{
	const char *env = getenv("HLOCK_URING_FUZZ_SEED");

	if (env && *env)
		return strtoull(env, NULL, 0);
	return (uint64_t)now_ns() ^ (uint64_t)getpid();
}

static int fz_rounds(void)
{
	const char *env = getenv("HLOCK_URING_FUZZ_ROUNDS");

	if (env && *env && atoi(env) > 0)
		return atoi(env);
	return test_scaled(FZ_ROUNDS, FZ_ROUNDS_LEAST);
}

FIXTURE(fz) {
	char policy[16], rtk[16], wtk[16];
};

FIXTURE_VARIANT(fz) {
	unsigned int kind;	/* 0 plain, 1 SQPOLL, 2 SQPOLL shared */
};

FIXTURE_VARIANT_ADD(fz, plain) { .kind = 0 };
FIXTURE_VARIANT_ADD(fz, sqpoll) { .kind = 1 };
FIXTURE_VARIANT_ADD(fz, sqpoll_attached) { .kind = 2 };

FIXTURE_SETUP(fz)
{
	struct io_uring ring;
	int ret;

	if (!have_device())
		SKIP(return, "/dev/hlock is absent");
	ret = io_uring_queue_init(4, &ring, variant->kind ?
				  IORING_SETUP_SQPOLL : 0);
	if (ret)
		SKIP(return, "no io_uring here (%d)", ret);
	io_uring_queue_exit(&ring);
	ASSERT_EQ(0, read_file_str(POLICY_PARAM, self->policy,
				   sizeof(self->policy)));
	ASSERT_EQ(0, read_file_str(RTICKETS_PARAM, self->rtk,
				   sizeof(self->rtk)));
	ASSERT_EQ(0, read_file_str(WTICKETS_PARAM, self->wtk,
				   sizeof(self->wtk)));
	fz_sh = mmap(NULL, sizeof(*fz_sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, fz_sh);
}

FIXTURE_TEARDOWN(fz)
{
	if (self->policy[0]) {
		write_file_str(POLICY_PARAM, self->policy, 0);
		write_file_str(RTICKETS_PARAM, self->rtk, 0);
		write_file_str(WTICKETS_PARAM, self->wtk, 0);
	}
}

/* Print the kernel stacks of every task in io_uring's or hlock's code. */
static void fz_dump_all_stacks(void)
{
	char path[600], buf[4096], comm[64];
	struct dirent *de, *te;
	DIR *d, *td;

	d = opendir("/proc");
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", de->d_name);
		td = opendir(path);
		if (!td)
			continue;
		while ((te = readdir(td))) {
			if (te->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/task/%s/stack",
				 de->d_name, te->d_name);
			if (read_file_str(path, buf, sizeof(buf)) ||
			    (!strstr(buf, "io_") && !strstr(buf, "hl_")))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/task/%s/comm",
				 de->d_name, te->d_name);
			if (read_file_str(path, comm, sizeof(comm)))
				strcpy(comm, "?");
			fprintf(stderr, "# task %s/%s %s\n%s\n", de->d_name,
				te->d_name, comm, buf);
		}
		closedir(td);
	}
	closedir(d);
}

/* Print a debugfs file of hlock's: what was left behind. */
static void fz_dump_debugfs(const char *name)
{
	char path[128], buf[8192];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/debug/hlock/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	fprintf(stderr, "# %s:\n", path);
	while ((n = read(fd, buf, sizeof(buf) - 1)) > 0) {
		buf[n] = '\0';
		fprintf(stderr, "%s", buf);
	}
	close(fd);
}

/* Poll until the lock table and debugfs' requests are empty. */
static int fz_settled(int *records, long *reqs)
{
	int64_t end = now_ns() + TEARDOWN_NS;
	int fd, waits;

	fd = hlock_open();
	if (fd < 0)
		return fd;
	for (;;) {
		*records = table_count_if(fd, record_waits, NULL, &waits);
		*reqs = debugfs_figure("requests");
		if (*records == 0 && *reqs <= 0)
			break;
		if (now_ns() > end) {
			fz_dump_debugfs("locks");
			fz_dump_debugfs("tickets");
			fz_dump_all_stacks();
			close(fd);
			return -ETIMEDOUT;
		}
		usleep(10000);
	}
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(fz, churn, 600)
{
	uint64_t seed = fz_seed(), r;
	int rounds = fz_rounds(), round, records;
	pid_t pid[FZ_PROCS];
	unsigned int i;
	long reqs;

	r = fz_seed_of(seed, 99, variant->kind, 0);
	/* The workers' children come back to the test when they end. */
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	TH_LOG("seed %llu, %d rounds (HLOCK_URING_FUZZ_SEED=%llu reproduces)",
	       (unsigned long long)seed, rounds, (unsigned long long)seed);
	for (round = 0; round < rounds; round++) {
		for (i = 0; i < FZ_PROCS; i++) {
			pid[i] = fork();
			ASSERT_LE(0, pid[i]);
			if (!pid[i])
				fz_worker_run(fz_seed_of(seed, i, round,
							 variant->kind + 1),
					      variant->kind);
		}
		/* Kill some workers at random moments, let the others end. */
		for (i = 0; i < FZ_PROCS; i++) {
			if (fz_rand(&r, 3) == 0)
				continue;
			usleep(1000 * fz_rand(&r, FZ_KILL_MAX_MS));
			kill(pid[i], fz_rand(&r, 4) ? SIGKILL : SIGTERM);
		}
		for (i = 0; i < FZ_PROCS; i++) {
			if (fz_reap_child(pid[i], EXIT_NS)) {
				fz_dump_stacks(pid[i]);
				ASSERT_TRUE(false) {
					TH_LOG("seed %llu round %d: worker %d did not finish exiting",
					       (unsigned long long)seed, round,
					       pid[i]);
				}
			}
		}
		/* The workers' children, reparented to us (a subreaper). */
		ASSERT_EQ(0, fz_reap_child(-1, EXIT_NS)) {
			TH_LOG("seed %llu round %d: a worker's child did not finish exiting",
			       (unsigned long long)seed, round);
		}
		ASSERT_EQ(0, atomic_load(&fz_sh->bad)) {
			TH_LOG("seed %llu round %d: %s",
			       (unsigned long long)seed, round, fz_sh->what);
		}
		ASSERT_EQ(0, fz_settled(&records, &reqs)) {
			TH_LOG("seed %llu round %d: %d records, %ld requests left",
			       (unsigned long long)seed, round, records, reqs);
		}
	}
}

TEST_HARNESS_MAIN
