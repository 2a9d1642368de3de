// SPDX-License-Identifier: GPL-2.0
/*
 * hlock-bench: what hlock costs next to the kernel's other locks.
 *
 *   hlock-bench [OPTIONS]      sections 1 to 3 and the statistics' cost
 *   hlock-bench -S [OPTIONS]   section 4, scaling on two CPUs
 *
 * 1. Single operations, uncontended: ns per call or lock+unlock pair,
 *    also through io_uring, B lockers' locks in one submit and their
 *    unlocks in the next (B = 1, 8, 32), against the ioctls.
 * 2. Handoff: two processes alternately taking X on the same object;
 *    with -I, the same on one CPU, each yielding it while it holds the
 *    lock, so that every lock call waits and is handed the lock.
 * 3. A writer's wait behind readers whose shared holds overlap.
 * 4. Two processes on two CPUs, each locking its own object, against
 *    one process alone (run it on a VM with real parallelism, --mttcg).
 * Plus the two figures the earlier tool gave: the statistics' cost (the
 * module parameter "stats" on over off) and a lock+unlock by a locker
 * holding many other resources over one holding none.
 *
 * The rounds are interleaved: each round runs every candidate once, from
 * a different first candidate each round, and the tables give medians
 * over the rounds.  Ratios are taken within a round and their median is
 * reported, so that the slow phases of an emulated machine hit both
 * sides of a ratio alike.  Under qemu's TCG absolute times mean little;
 * the ratios are the result.  The two references are a pair of ioctls
 * that hlock does not know (the whole VFS ioctl path and hlock's
 * dispatch, nothing else) and a flock(2) LOCK_EX + LOCK_UN pair on a
 * tmpfs file.
 *
 * Nothing here asserts a threshold: it reports.  Any operation that fails
 * ends the run with status 1.  After the tables come one line per figure,
 * "bench: KEY VALUE", for scripts.  `make bench` runs it in VMs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "hlock.h"
#include "hlock_uring.h"

#define STATS_PARAM	"/sys/module/hlock/parameters/stats"
#define DETECT_PARAM	"/sys/module/hlock/parameters/deadlock_detect"
/* A command hlock does not know: -ENOTTY after its whole dispatch. */
#define NULL_IOCTL	_IO(HLOCK_IOC_MAGIC, 0xff)
/* The files flock, OFD and POSIX locks lock; on tmpfs in the VM. */
#define LOCK_DIR	"/tmp"
#define TMPFS_MAGIC	0x01021994
#define MAX_ROUNDS	101
#define MAX_READERS	8
#define MAX_BATCH	32	/* io_uring SQEs per submit, at most */
#define NSEC		1000000000LL
#define MSEC		1000000LL

/* Set while this process has turned the module's statistics off. */
static int stats_off, detect_off;

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	static const struct {
		const char *path;
		int *off;
	} params[] = {
		{ STATS_PARAM, &stats_off }, { DETECT_PARAM, &detect_off },
	};
	va_list ap;
	int fd, i;

	va_start(ap, fmt);
	fputs("hlock-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	/* Do not leave a real machine without statistics or detection. */
	for (i = 0; i < (int)(sizeof(params) / sizeof(params[0])); i++) {
		if (!*params[i].off)
			continue;
		fd = open(params[i].path, O_WRONLY);
		if (fd >= 0 && write(fd, "Y", 1) == 1)
			*params[i].off = 0;
		if (fd >= 0)
			close(fd);
	}
	exit(1);
}

/*
 * The figures for scripts, "bench: KEY VALUE" a line, kept until the end
 * so that they follow all the tables.
 */
static char figures[16384];
static size_t figures_len;

static void __attribute__((format(printf, 1, 2))) figure(const char *fmt, ...)
{
	size_t room = sizeof(figures) - figures_len;
	va_list ap;
	int n;

	if (room < 8)
		die("too many figures");
	memcpy(figures + figures_len, "bench: ", 7);
	figures_len += 7;
	room -= 7;
	va_start(ap, fmt);
	n = vsnprintf(figures + figures_len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		die("too many figures");
	figures_len += n;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / NSEC, .tv_nsec = ns % NSEC };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of @n values (not reordering @v); +inf sorts last. */
static double median(const double *v, int n)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n & 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/*
 * How much the rounds disagree: the interquartile range over the median,
 * in percent.  Large values say that the host (other VMs, builds) was
 * busy while this ran.
 */
static double spread(const double *v, int n)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return 100 * (s[3 * n / 4] - s[n / 4]) / median(v, n);
}

/*
 * Memory shared with the child processes: the process-shared rwlock, the
 * start and stop signals, and what the children counted.
 */
static struct shared {
	pthread_rwlock_t rw;
	int64_t deadline;	/* workers stop at this CLOCK_MONOTONIC time */
	int stop;		/* readers stop when set */
	long count[2];		/* lock+unlock pairs, per worker */
	double result;		/* a single-operation child's ns per op */
} *sh;

/*
 * The lock file and the semaphore set of the current round.  Each round
 * gets new ones, as each measurement gets a new process and locker: under
 * TCG where a kernel object happens to lie can slow one candidate down
 * for as long as it lives (seen as one candidate 4-10 times slower
 * through a whole boot), and the median then discards such a round.
 */
static char lock_file[64];
static int semid = -1;
static int generation;

static void new_objects(void)
{
	if (semid >= 0)
		semctl(semid, 0, IPC_RMID);
	semid = semget(IPC_PRIVATE, 1, 0600);
	if (semid < 0 || semctl(semid, 0, SETVAL, 1))
		die("semget: %s", strerror(errno));
	snprintf(lock_file, sizeof(lock_file), LOCK_DIR "/hlock-bench.%d",
		 generation++);
}

static void remove_objects(void)
{
	char name[64];
	int g;

	for (g = 0; g < generation; g++) {
		snprintf(name, sizeof(name), LOCK_DIR "/hlock-bench.%d", g);
		unlink(name);
	}
	if (semid >= 0)
		semctl(semid, 0, IPC_RMID);
	semid = -1;
}

/* What a locker locks with; one per candidate and per child. */
enum kind { K_GETPPID, K_NULL, K_HLOCK, K_FLOCK, K_OFD, K_POSIX, K_SEM,
	    K_RWLOCK, K_URING };

struct locker {
	enum kind kind;
	const char *obj;	/* the hlock path, or the locked file */
	int fd;
	/*
	 * K_URING: a ring and @batch lockers, the i-th on obj followed by i
	 * (uring_open()); @nop: IORING_OP_NOPs instead of their locks.
	 */
	int batch, nop;
	int shared;		/* K_HLOCK: S instead of X (time_pairs()) */
	struct io_uring ring;
	int fds[MAX_BATCH];
	char paths[MAX_BATCH][16];
};

static const char *kind_name(enum kind k)
{
	static const char *const names[] = {
		[K_GETPPID] = "getppid", [K_NULL] = "null ioctl",
		[K_HLOCK] = "hlock", [K_FLOCK] = "flock", [K_OFD] = "OFD lock",
		[K_POSIX] = "POSIX lock", [K_SEM] = "semop",
		[K_RWLOCK] = "pthread_rwlock", [K_URING] = "hlock io_uring",
	};

	return names[k];
}

/*
 * Open a locker of its own (a new open file description where it has
 * one).  @obj is the hlock path, or the file for flock, OFD and POSIX
 * locks: NULL for the round's lock file.
 */
static void lk_open(struct locker *l, enum kind kind, const char *obj)
{
	if (!obj && (kind == K_FLOCK || kind == K_OFD || kind == K_POSIX))
		obj = lock_file;
	l->kind = kind;
	l->obj = obj;
	l->fd = -1;
	l->batch = 0;
	switch (kind) {
	case K_NULL:
	case K_HLOCK:
		l->fd = hlock_open();
		if (l->fd < 0)
			die("%s: %s", HLOCK_DEVICE, strerror(-l->fd));
		break;
	case K_FLOCK:
	case K_OFD:
	case K_POSIX:
		l->fd = open(obj, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (l->fd < 0)
			die("%s: %s", obj, strerror(errno));
		break;
	default:
		break;
	}
}

static void lk_close(struct locker *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

static void null_ioctl(int fd)
{
	if (ioctl(fd, NULL_IOCTL) != -1 || errno != ENOTTY)
		die("the null ioctl did not fail with ENOTTY (%s)",
		    strerror(errno));
}

/* A whole-file fcntl lock or unlock of @type (F_RDLCK, F_WRLCK, F_UNLCK). */
static int fcntl_lock(int fd, int cmd, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET };

	return fcntl(fd, cmd, &fl);
}

static int sem_change(short by, int64_t timeout_ns)
{
	struct sembuf op = { .sem_num = 0, .sem_op = by, .sem_flg = SEM_UNDO };
	struct timespec ts = { .tv_sec = timeout_ns / NSEC,
			       .tv_nsec = timeout_ns % NSEC };

	return semtimedop(semid, &op, 1, timeout_ns < 0 ? NULL : &ts);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* Interrupt a blocking flock or fcntl after @ns, with EINTR. */
static void arm_alarm(int64_t ns)
{
	struct itimerval it = {
		.it_value = { .tv_sec = ns / NSEC, .tv_usec = ns % NSEC / 1000 },
	};

	if (setitimer(ITIMER_REAL, &it, NULL))
		die("setitimer: %s", strerror(errno));
}

/*
 * Lock @l, shared if @shared (for the kinds that have a shared mode),
 * else exclusive.  Waits at most @timeout_ns (negative: forever) and
 * returns -ETIMEDOUT when it gave up; dies on any other failure.
 */
static int lk_lock(struct locker *l, int shared, int64_t timeout_ns)
{
	short type = shared ? F_RDLCK : F_WRLCK;
	struct timespec abs;
	int ret = 0, timed = timeout_ns >= 0;

	switch (l->kind) {
	case K_GETPPID:
		getppid();
		break;
	case K_NULL:
		null_ioctl(l->fd);
		break;
	case K_HLOCK:
		ret = hlock_lock(l->fd, l->obj, shared ? HLOCK_S : HLOCK_X, 0,
				 timeout_ns);
		if (ret == -ETIMEDOUT && timed)
			return ret;
		if (ret)
			die("hlock_lock %s \"%s\": %s", shared ? "S" : "X",
			    l->obj, strerror(-ret));
		break;
	case K_FLOCK:
	case K_OFD:
	case K_POSIX:
		if (timed)
			arm_alarm(timeout_ns);
		if (l->kind == K_FLOCK)
			ret = flock(l->fd, shared ? LOCK_SH : LOCK_EX);
		else
			ret = fcntl_lock(l->fd, l->kind == K_OFD ?
					 F_OFD_SETLKW : F_SETLKW, type);
		if (timed)
			arm_alarm(0);
		if (ret && errno == EINTR && timed)
			return -ETIMEDOUT;
		if (ret)
			die("%s on %s: %s", kind_name(l->kind), l->obj,
			    strerror(errno));
		break;
	case K_SEM:
		if (sem_change(-1, timeout_ns)) {
			if (errno == EAGAIN && timed)
				return -ETIMEDOUT;
			die("semop P: %s", strerror(errno));
		}
		break;
	case K_RWLOCK:
		clock_gettime(CLOCK_MONOTONIC, &abs);
		abs.tv_sec += timeout_ns / NSEC;
		abs.tv_nsec += timeout_ns % NSEC;
		if (abs.tv_nsec >= NSEC) {
			abs.tv_sec++;
			abs.tv_nsec -= NSEC;
		}
		if (!timed)
			ret = shared ? pthread_rwlock_rdlock(&sh->rw) :
				       pthread_rwlock_wrlock(&sh->rw);
		else
			ret = shared ?
				pthread_rwlock_clockrdlock(&sh->rw, CLOCK_MONOTONIC, &abs) :
				pthread_rwlock_clockwrlock(&sh->rw, CLOCK_MONOTONIC, &abs);
		if (ret == ETIMEDOUT && timed)
			return -ETIMEDOUT;
		if (ret)
			die("pthread_rwlock: %s", strerror(ret));
		break;
	case K_URING:
		die("io_uring is measured in batches only (time_pairs())");
	}
	return 0;
}

static void lk_unlock(struct locker *l)
{
	int ret = 0;

	switch (l->kind) {
	case K_GETPPID:
		break;
	case K_NULL:
		null_ioctl(l->fd);
		break;
	case K_HLOCK:
		ret = hlock_unlock(l->fd, l->obj);
		if (ret)
			die("hlock_unlock \"%s\": %s", l->obj,
			    ret < 0 ? strerror(-ret) : "still held");
		break;
	case K_FLOCK:
		if (flock(l->fd, LOCK_UN))
			die("flock LOCK_UN: %s", strerror(errno));
		break;
	case K_OFD:
	case K_POSIX:
		if (fcntl_lock(l->fd, l->kind == K_OFD ? F_OFD_SETLK : F_SETLK,
			       F_UNLCK))
			die("%s unlock: %s", kind_name(l->kind),
			    strerror(errno));
		break;
	case K_SEM:
		if (sem_change(1, -1))
			die("semop V: %s", strerror(errno));
		break;
	case K_RWLOCK:
		ret = pthread_rwlock_unlock(&sh->rw);
		if (ret)
			die("pthread_rwlock_unlock: %s", strerror(ret));
		break;
	case K_URING:
		die("io_uring is measured in batches only (time_pairs())");
	}
}

/*
 * K_URING: open a ring and @batch lockers, the i-th to lock the path
 * l->obj followed by i ("db/c" gives "db/c0", "db/c1", ...); or, if
 * @nop, to submit NOPs instead.
 */
static void uring_open(struct locker *l, int batch, int nop)
{
	int i, ret;

	if (batch < 1 || batch > MAX_BATCH)
		die("io_uring batch %d: 1 to %d", batch, MAX_BATCH);
	ret = io_uring_queue_init(batch, &l->ring, 0);
	if (ret)
		die("io_uring_queue_init: %s", strerror(-ret));
	l->batch = batch;
	l->nop = nop;
	for (i = 0; i < batch; i++) {
		snprintf(l->paths[i], sizeof(l->paths[i]), "%s%d", l->obj, i);
		l->fds[i] = hlock_open();
		if (l->fds[i] < 0)
			die("%s: %s", HLOCK_DEVICE, strerror(-l->fds[i]));
	}
}

static void uring_close(struct locker *l)
{
	int i;

	for (i = 0; i < l->batch; i++)
		close(l->fds[i]);
	io_uring_queue_exit(&l->ring);
	l->batch = 0;
}

/*
 * K_URING: each locker's lock (X, a try) or unlock as one SQE, or as
 * many NOPs, all of them in one submit that waits for their CQEs; dies
 * unless every CQE says 0 (granted; no acquisition left).
 */
static void uring_batch(struct locker *l, int lock)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;
	int i, ret;

	for (i = 0; i < l->batch; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);

		if (l->nop)
			io_uring_prep_nop(sqe);
		else if (lock)
			hlock_prep_lock(sqe, l->fds[i], l->paths[i], HLOCK_X,
					0, 0);
		else
			hlock_prep_unlock(sqe, l->fds[i], l->paths[i]);
		io_uring_sqe_set_data64(sqe, i);
	}
	ret = io_uring_submit_and_wait(&l->ring, l->batch);
	if (ret != l->batch)
		die("io_uring_submit_and_wait: %s", ret < 0 ? strerror(-ret) :
		    "not every SQE was submitted");
	io_uring_for_each_cqe(&l->ring, head, cqe) {
		if (cqe->res)
			die("io_uring %s \"%s\": %s", lock ? "lock X" : "unlock",
			    l->paths[io_uring_cqe_get_data64(cqe) % MAX_BATCH],
			    cqe->res < 0 ? strerror(-cqe->res) : "still held");
		seen++;
	}
	io_uring_cq_advance(&l->ring, seen);
	if (seen != (unsigned int)l->batch)
		die("io_uring: %u CQEs for %d SQEs", seen, l->batch);
}

/*
 * @n uncontended exclusive lock+unlock pairs (for getppid: calls; for
 * io_uring: batches of l->batch pairs), in ns.  Each kind has its own
 * loop so that the dispatch above is not timed; flock's and fcntl's
 * try-lock forms are used since nothing contends.
 */
static int64_t time_pairs(struct locker *l, long n)
{
	int64_t t0 = now_ns();
	long i;

	switch (l->kind) {
	case K_GETPPID:
		for (i = 0; i < n; i++)
			getppid();
		break;
	case K_NULL:
		for (i = 0; i < n; i++) {
			null_ioctl(l->fd);
			null_ioctl(l->fd);
		}
		break;
	case K_HLOCK:
		for (i = 0; i < n; i++) {
			int ret = hlock_lock(l->fd, l->obj,
					     l->shared ? HLOCK_S : HLOCK_X, 0, 0);

			if (ret || hlock_unlock(l->fd, l->obj))
				die("hlock lock+unlock %s \"%s\" failed: %s",
				    l->shared ? "S" : "X", l->obj,
				    ret ? strerror(-ret) : "unlock");
		}
		break;
	case K_FLOCK:
		for (i = 0; i < n; i++)
			if (flock(l->fd, LOCK_EX | LOCK_NB) ||
			    flock(l->fd, LOCK_UN))
				die("flock: %s", strerror(errno));
		break;
	case K_OFD:
	case K_POSIX: {
		int cmd = l->kind == K_OFD ? F_OFD_SETLK : F_SETLK;

		for (i = 0; i < n; i++)
			if (fcntl_lock(l->fd, cmd, F_WRLCK) ||
			    fcntl_lock(l->fd, cmd, F_UNLCK))
				die("%s: %s", kind_name(l->kind),
				    strerror(errno));
		break;
	}
	case K_SEM:
		for (i = 0; i < n; i++)
			if (sem_change(-1, -1) || sem_change(1, -1))
				die("semop: %s", strerror(errno));
		break;
	case K_RWLOCK:
		for (i = 0; i < n; i++) {
			int ret = pthread_rwlock_wrlock(&sh->rw);

			if (!ret)
				ret = pthread_rwlock_unlock(&sh->rw);
			if (ret)
				die("pthread_rwlock: %s", strerror(ret));
		}
		break;
	case K_URING:
		for (i = 0; i < n; i++) {
			uring_batch(l, 1);
			uring_batch(l, 0);
		}
		break;
	}
	return now_ns() - t0;
}

/* How many pairs take about @target_ns. */
static long calibrate(struct locker *l, int64_t target_ns)
{
	long n = 16;
	int64_t t;

	/*
	 * Warm up first: the first calls of a boot run cold code (under TCG,
	 * code not translated yet), which once took a whole calibration
	 * step and left a candidate 1 or 2 pairs a round, whose times were
	 * then a process's first calls (5 to 13 times the pair's).
	 */
	time_pairs(l, 64);
	for (;;) {
		t = time_pairs(l, n);
		if (t >= target_ns / 8 || n > (1L << 40))
			break;
		n *= 2;
	}
	n = (long)((double)n * target_ns / (t > 0 ? t : 1));
	return n > 0 ? n : 1;
}

/* --- Child processes ---------------------------------------------------- */

static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity to CPU %d: %s", cpu, strerror(errno));
}

static pid_t spawn(void)
{
	pid_t pid;

	fflush(NULL);	/* or the child would print our buffer again */
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	return pid;
}

/* Wait for @n children; die if any of them failed. */
static void reap(const pid_t *pids, int n)
{
	int i, status;

	for (i = 0; i < n; i++) {
		while (waitpid(pids[i], &status, 0) < 0)
			if (errno != EINTR)
				die("waitpid: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			die("a child process failed (status %#x)", status);
	}
}

static void xpipe(int p[2])
{
	if (pipe(p))
		die("pipe: %s", strerror(errno));
}

static void xwrite(int fd, int n)
{
	char buf[MAX_READERS] = { 0 };

	if (write(fd, buf, n) != n)
		die("write to a pipe: %s", strerror(errno));
}

static void xread(int fd, int n)
{
	char buf[MAX_READERS];
	ssize_t got;

	while (n > 0) {
		got = read(fd, buf, n);
		if (got <= 0) {
			if (got < 0 && errno == EINTR)
				continue;
			die("read from a pipe: %s",
			    got ? strerror(errno) : "end of file");
		}
		n -= got;
	}
}

/*
 * A child of run_workers(): its own locker on @obj, on CPU @cpu if that is
 * not negative; once started, lock+unlock pairs until sh->deadline.
 */
static void __attribute__((noreturn))
worker(enum kind kind, const char *obj, int cpu, int ready, int go,
       long *count)
{
	struct locker l;
	long n = 0;

	if (cpu >= 0)
		pin_to(cpu);
	lk_open(&l, kind, obj);
	xwrite(ready, 1);
	xread(go, 1);
	while (now_ns() < sh->deadline) {
		lk_lock(&l, 0, -1);
		lk_unlock(&l);
		n++;
	}
	*count = n;
	exit(0);
}

/*
 * Run @n workers (1 or 2), worker i locking X on objs[i] with a locker of
 * its own, pinned to CPU i if @pin, in a loop of lock+unlock pairs for
 * @window_ns from the moment all of them are ready.  Fills sh->count[]
 * and returns the window.
 */
static int64_t run_workers(enum kind kind, const char *const *objs, int n,
			   int pin, int64_t window_ns)
{
	int ready[2], go[2], i;
	pid_t pids[2];

	xpipe(ready);
	xpipe(go);
	for (i = 0; i < n; i++) {
		pids[i] = spawn();
		if (!pids[i])
			worker(kind, objs[i], pin ? i : -1, ready[1], go[0],
			       &sh->count[i]);
	}
	xread(ready[0], n);
	sh->deadline = now_ns() + window_ns;
	xwrite(go[1], n);
	reap(pids, n);
	for (i = 0; i < 2; i++) {
		close(ready[i]);
		close(go[i]);
	}
	return window_ns;
}

/*
 * A reader of writer_wait(): once started and @delay_ns later, take @obj
 * shared, hold it @hold_ns, release it, and again, until sh->stop.
 */
static void __attribute__((noreturn))
reader(enum kind kind, const char *obj, int64_t delay_ns, int64_t hold,
       int ready, int go)
{
	struct locker l;

	lk_open(&l, kind, obj);
	xwrite(ready, 1);
	xread(go, 1);
	sleep_ns(delay_ns);
	while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST)) {
		lk_lock(&l, 1, -1);
		sleep_ns(hold);
		lk_unlock(&l);
	}
	exit(0);
}

/*
 * Section 3: @readers processes take @l's object shared, hold it @hold_ns,
 * release and take it again at once, starting @hold_ns / @readers apart
 * so that their holds overlap.  Once they run, this process asks for it
 * exclusively and gives up after @giveup_ns.  Returns the wait in ns, or
 * -1 if it gave up.
 */
static int64_t writer_wait(enum kind kind, const char *obj, int readers,
			   int64_t hold_ns, int64_t giveup_ns)
{
	int ready[2], go[2], i, ret;
	pid_t pids[MAX_READERS];
	struct locker l;
	int64_t t0, t1;

	xpipe(ready);
	xpipe(go);
	__atomic_store_n(&sh->stop, 0, __ATOMIC_SEQ_CST);
	for (i = 0; i < readers; i++) {
		pids[i] = spawn();
		if (!pids[i])
			reader(kind, obj, hold_ns * i / readers, hold_ns,
			       ready[1], go[0]);
	}
	lk_open(&l, kind, obj);
	xread(ready[0], readers);
	xwrite(go[1], readers);
	/* Let every reader start and their holds overlap. */
	sleep_ns(4 * hold_ns + 10 * MSEC);
	t0 = now_ns();
	ret = lk_lock(&l, 0, giveup_ns);
	t1 = now_ns();
	__atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
	if (!ret)
		lk_unlock(&l);
	reap(pids, readers);
	lk_close(&l);
	for (i = 0; i < 2; i++) {
		close(ready[i]);
		close(go[i]);
	}
	return ret ? -1 : t1 - t0;
}

/* --- Sections 1 and 2: interleaved rounds --------------------------------- */

enum { SINGLE, HANDOFF };
/* Flags of a candidate. */
#define C_STATS_OFF	(1 << 0)	/* run with the module's stats off */
#define C_HELD		(1 << 1)	/* its locker holds many resources */
#define C_DETECT_OFF	(1 << 2)	/* run with deadlock detection off */
#define C_NOP		(1 << 3)	/* io_uring: NOPs, the ring's own cost */
#define C_SHARED	(1 << 4)	/* hlock: S instead of X */
#define C_ICOUNT	(1 << 5)	/* only in the instruction count run (-I) */
#define C_UNDER_DB	(1 << 6)	/* its locker holds IX on "db" */

struct cand {
	const char *what;	/* the row */
	const char *key;	/* the "bench:" key */
	int section;
	enum kind kind;
	const char *obj;
	int flags;
	int batch;		/* K_URING: SQEs per submit */
	long iters;		/* SINGLE: pairs (K_URING: batches) per round */
	double ns[MAX_ROUNDS];	/* per op: call, pair, or handed-off pair */
	double ops[MAX_ROUNDS];	/* HANDOFF: pairs per second, both together */
	double split[MAX_ROUNDS];
	double xnull[MAX_ROUNDS], xflock[MAX_ROUNDS];
	double xioctl[MAX_ROUNDS];	/* K_URING: over hlock_db_coll's pair */
};

#define CAND(_sec, _what, _key, _kind, _obj, _flags) \
	{ .section = _sec, .what = _what, .key = _key, .kind = _kind, \
	  .obj = _obj, .flags = _flags }
/* Lock+unlock X on "db/c<i>" by _b lockers, _b SQEs per submit. */
#define URING_CAND(_b) \
	{ .section = SINGLE, .what = "io_uring X \"db/cN\", batch of " #_b, \
	  .key = "uring_b" #_b, .kind = K_URING, .obj = "db/c", .batch = _b }

static struct cand cands[] = {
	CAND(SINGLE, "getppid (one syscall)", "getppid", K_GETPPID, NULL, 0),
	CAND(SINGLE, "null ioctl pair (2 x unknown cmd)", "null_ioctl_pair",
	     K_NULL, NULL, 0),
	CAND(SINGLE, "hlock X \"\" (root)", "hlock_root", K_HLOCK, "", 0),
	CAND(SINGLE, "hlock X \"db\"", "hlock_db", K_HLOCK, "db", 0),
	CAND(SINGLE, "hlock X \"db/coll\"", "hlock_db_coll", K_HLOCK,
	     "db/coll", 0),
	CAND(SINGLE, "hlock X \"a/b/c/d/e/f/g/h\"", "hlock_depth8", K_HLOCK,
	     "a/b/c/d/e/f/g/h", 0),
	CAND(SINGLE, "hlock S \"\" (root)", "hlock_root_s", K_HLOCK, "",
	     C_SHARED | C_ICOUNT),
	CAND(SINGLE, "hlock S \"db\"", "hlock_db_s", K_HLOCK, "db",
	     C_SHARED | C_ICOUNT),
	CAND(SINGLE, "hlock S \"db/coll\"", "hlock_db_coll_s", K_HLOCK,
	     "db/coll", C_SHARED | C_ICOUNT),
	CAND(SINGLE, "hlock S \"a/b/c/d/e/f/g/h\"", "hlock_depth8_s",
	     K_HLOCK, "a/b/c/d/e/f/g/h", C_SHARED | C_ICOUNT),
	CAND(SINGLE, "hlock X \"db/coll\", stats off",
	     "hlock_db_coll_nostats", K_HLOCK, "db/coll", C_STATS_OFF),
	CAND(SINGLE, "hlock X \"db/coll\", holding IX on \"db\"",
	     "hlock_db_coll_under", K_HLOCK, "db/coll", C_UNDER_DB | C_ICOUNT),
	CAND(SINGLE, "hlock X \"db/coll\", holding many",
	     "hlock_db_coll_held", K_HLOCK, "db/coll", C_HELD),
	URING_CAND(1),
	URING_CAND(8),
	URING_CAND(32),
	{ .section = SINGLE, .what = "io_uring 2 NOPs, batch of 32",
	  .key = "uring_nop_b32", .kind = K_URING, .obj = "db/c", .batch = 32,
	  .flags = C_NOP },
	CAND(SINGLE, "flock LOCK_EX + LOCK_UN", "flock_pair", K_FLOCK, NULL,
	     0),
	CAND(SINGLE, "OFD lock (F_OFD_SETLK) pair", "ofd_pair", K_OFD,
	     NULL, 0),
	CAND(SINGLE, "POSIX lock (F_SETLK) pair", "posix_pair", K_POSIX,
	     NULL, 0),
	CAND(SINGLE, "SysV semop P + V (SEM_UNDO)", "semop_pair", K_SEM, NULL,
	     0),
	CAND(SINGLE, "pthread_rwlock wrlock+unlock", "rwlock_pair", K_RWLOCK,
	     NULL, 0),
	CAND(HANDOFF, "hlock X \"db/coll\"", "hlock", K_HLOCK, "db/coll", 0),
	CAND(HANDOFF, "hlock X \"db/coll\", no deadlock search",
	     "hlock_nodetect", K_HLOCK, "db/coll", C_DETECT_OFF),
	CAND(HANDOFF, "flock LOCK_EX", "flock", K_FLOCK, NULL, 0),
	CAND(HANDOFF, "OFD write lock (F_OFD_SETLKW)", "ofd", K_OFD, NULL, 0),
	CAND(HANDOFF, "SysV semop (SEM_UNDO)", "semop", K_SEM, NULL, 0),
};
/* Fewer when the module takes no io_uring commands: drop_uring_cands(). */
static int nr_cands = sizeof(cands) / sizeof(cands[0]);

/*
 * Why the io_uring candidates cannot run here (the module takes no ring
 * commands, or the kernel no rings), or NULL when they can.
 */
static const char *uring_unusable(int fd)
{
	static char why[96];
	struct hlock_info info;
	struct io_uring ring;
	int ret;

	ret = hlock_info(fd, &info);
	if (ret)
		die("hlock_info: %s", strerror(-ret));
	if (!(info.features & HLOCK_FEAT_URING))
		return "the module has no HLOCK_FEAT_URING";
	ret = io_uring_queue_init(1, &ring, 0);
	if (ret) {
		snprintf(why, sizeof(why), "io_uring_queue_init: %s",
			 strerror(-ret));
		return why;
	}
	io_uring_queue_exit(&ring);
	return NULL;
}

static void drop_uring_cands(void)
{
	int i, n = 0;

	for (i = 0; i < nr_cands; i++)
		if (cands[i].kind != K_URING)
			cands[n++] = cands[i];
	nr_cands = n;
}

/*
 * The candidates of this run: -I's are section 1's, the S pairs among
 * them; the others' are all but those.
 */
static void pick_cands(int icount)
{
	int i, n = 0;

	for (i = 0; i < nr_cands; i++)
		if (icount ? cands[i].section == SINGLE :
		    !(cands[i].flags & C_ICOUNT))
			cands[n++] = cands[i];
	nr_cands = n;
}

static struct cand *cand_by_key(int section, const char *key)
{
	int i;

	for (i = 0; i < nr_cands; i++)
		if (cands[i].section == section && !strcmp(cands[i].key, key))
			return &cands[i];
	die("no candidate %s", key);
}

/* Turn a bool module parameter on or off; *@off says which, for die(). */
static void set_param(const char *path, int *off, int on)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, on ? "Y" : "N", 1) != 1)
		die("%s: %s", path, strerror(errno));
	close(fd);
	*off = !on;
}

/* Deadlock detection on or off (module parameter deadlock_detect). */
static void set_detect(int on)
{
	set_param(DETECT_PARAM, &detect_off, on);
}

static void set_stats(int on)
{
	set_param(STATS_PARAM, &stats_off, on);
}

/* Options. */
static int opt_rounds = 21;
static int64_t opt_single_ns = 40 * MSEC;	/* per candidate and round */
static int64_t opt_handoff_ns = 250 * MSEC;
static long opt_held = 1000;
/* -M: held S locks the memory figure is taken over (0: none). */
static unsigned int opt_mem_locks;
static int opt_trials = 5;
static int opt_readers = 3;
static int64_t opt_hold_ns = 1 * MSEC;
static int64_t opt_giveup_ns = 3 * NSEC;
static int64_t opt_scale_ns = 400 * MSEC;
static int opt_scale_rounds = 11;
static int opt_verbose;

/* The name of the @k-th resource the "holding many" locker holds. */
static void held_name(char *buf, size_t size, long k)
{
	snprintf(buf, size, "held/%ld", k);
}

/*
 * Before a single-operation candidate's timed loop: turn the statistics
 * off, open the ring and the lockers of an io_uring candidate, or take
 * the resources its locker holds.  They are held in S, as
 * the earlier tool did, and only while it runs: the IS they put on the
 * root would make X on the root fail for the others.
 */
static void cand_setup(struct cand *c, struct locker *l)
{
	char name[32];
	long k;
	int ret;

	if (c->flags & C_STATS_OFF)
		set_stats(0);
	if (c->kind == K_URING)
		uring_open(l, c->batch, c->flags & C_NOP);
	l->shared = !!(c->flags & C_SHARED);
	if (c->flags & C_UNDER_DB) {
		ret = hlock_lock(l->fd, "db", HLOCK_IX, 0, 0);
		if (ret)
			die("hlock_lock IX \"db\": %s", strerror(-ret));
	}
	if (!(c->flags & C_HELD))
		return;
	for (k = 0; k < opt_held; k++) {
		held_name(name, sizeof(name), k);
		ret = hlock_lock(l->fd, name, HLOCK_S, 0, 0);
		if (ret)
			die("hlock_lock S \"%s\": %s", name, strerror(-ret));
	}
}

static void cand_teardown(struct cand *c, struct locker *l)
{
	char name[32];
	long k;
	int ret;

	if (c->flags & C_STATS_OFF)
		set_stats(1);
	if (c->kind == K_URING)
		uring_close(l);
	if (c->flags & C_UNDER_DB) {
		ret = hlock_unlock(l->fd, "db");
		if (ret)
			die("hlock_unlock \"db\": %s",
			    ret < 0 ? strerror(-ret) : "still held");
	}
	if (!(c->flags & C_HELD))
		return;
	for (k = 0; k < opt_held; k++) {
		held_name(name, sizeof(name), k);
		ret = hlock_unlock(l->fd, name);
		if (ret)
			die("hlock_unlock \"%s\": %s", name,
			    ret < 0 ? strerror(-ret) : "still held");
	}
}

static void run_cand(struct cand *c, int r)
{
	const char *objs[2] = { c->obj, c->obj };
	struct locker l;
	double lo, hi;
	int64_t w;
	pid_t pid;

	if (c->section == HANDOFF) {
		if (c->flags & C_DETECT_OFF)
			set_detect(0);
		w = run_workers(c->kind, objs, 2, 0, opt_handoff_ns);
		if (c->flags & C_DETECT_OFF)
			set_detect(1);
		lo = sh->count[0] < sh->count[1] ? sh->count[0] : sh->count[1];
		hi = sh->count[0] + sh->count[1] - lo;
		c->ops[r] = (lo + hi) * NSEC / w;
		c->ns[r] = hi > 0 ? (double)w / (lo + hi) : INFINITY;
		c->split[r] = hi > 0 ? lo / hi : 0;
		return;
	}
	/* A new process with a new locker, for the reason new_objects() gives. */
	pid = spawn();
	if (!pid) {
		lk_open(&l, c->kind, c->obj);
		cand_setup(c, &l);
		sh->result = (double)time_pairs(&l, c->iters) / c->iters /
			     (c->kind == K_URING ? c->batch : 1);
		cand_teardown(c, &l);
		exit(0);
	}
	reap(&pid, 1);
	c->ns[r] = sh->result;
}

static void print_ratio(double x)
{
	if (isfinite(x))
		printf(" %12.2f", x);
	else
		printf(" %12s", "-");
}

/*
 * Calibrate each single-operation candidate, then run every candidate
 * once a round, from a different first one each round.
 */
static void run_rounds(void)
{
	int i, r;

	for (i = 0; i < nr_cands; i++) {
		struct cand *c = &cands[i];
		struct locker l;

		if (c->section != SINGLE)
			continue;
		lk_open(&l, c->kind, c->obj);
		cand_setup(c, &l);
		c->iters = calibrate(&l, opt_single_ns);
		cand_teardown(c, &l);
		lk_close(&l);
	}
	for (r = 0; r < opt_rounds; r++) {
		new_objects();
		for (i = 0; i < nr_cands; i++)
			run_cand(&cands[(i + r) % nr_cands], r);
	}
}

/* The "bench:" lines of single-operation candidate @c: PREFIX.KEY.UNIT... */
static void single_figures(const struct cand *c, const char *prefix,
			   const char *unit)
{
	figure("%s.%s.%s %.0f\n", prefix, c->key, unit,
	       median(c->ns, opt_rounds));
	figure("%s.%s.x_null %.3f\n", prefix, c->key,
	       median(c->xnull, opt_rounds));
	figure("%s.%s.x_flock %.3f\n", prefix, c->key,
	       median(c->xflock, opt_rounds));
	if (c->kind == K_URING)
		figure("%s.%s.x_ioctl %.3f\n", prefix, c->key,
		       median(c->xioctl, opt_rounds));
}

static void sections_1_2(void)
{
	struct cand *null = cand_by_key(SINGLE, "null_ioctl_pair");
	struct cand *fl = cand_by_key(SINGLE, "flock_pair");
	struct cand *hfl = cand_by_key(HANDOFF, "flock");
	struct cand *plain = cand_by_key(SINGLE, "hlock_db_coll");
	struct cand *nostats = cand_by_key(SINGLE, "hlock_db_coll_nostats");
	struct cand *many = cand_by_key(SINGLE, "hlock_db_coll_held");
	struct cand *hon = cand_by_key(HANDOFF, "hlock");
	struct cand *hoff = cand_by_key(HANDOFF, "hlock_nodetect");
	double r_stats[MAX_ROUNDS], r_held[MAX_ROUNDS], r_detect[MAX_ROUNDS];
	int i, r;

	run_rounds();
	for (i = 0; opt_verbose && i < nr_cands; i++) {
		fprintf(stderr, "%-24s", cands[i].key);
		for (r = 0; r < opt_rounds; r++)
			fprintf(stderr, " %.0f", cands[i].ns[r]);
		fprintf(stderr, "\n");
	}
	for (i = 0; i < nr_cands; i++) {
		struct cand *c = &cands[i];
		struct cand *f = c->section == HANDOFF ? hfl : fl;

		for (r = 0; r < opt_rounds; r++) {
			c->xnull[r] = c->ns[r] / null->ns[r];
			c->xflock[r] = c->ns[r] / f->ns[r];
		}
	}
	for (i = 0; i < nr_cands; i++)
		for (r = 0; r < opt_rounds; r++)
			cands[i].xioctl[r] = cands[i].ns[r] / plain->ns[r];
	for (r = 0; r < opt_rounds; r++) {
		r_stats[r] = plain->ns[r] / nostats->ns[r];
		r_held[r] = many->ns[r] / plain->ns[r];
		r_detect[r] = hon->ops[r] / hoff->ops[r];
	}

	printf("\n1. Single operations, uncontended: median of %d interleaved rounds of ~%lld ms each\n",
	       opt_rounds, (long long)(opt_single_ns / MSEC));
	printf("   (x null-ioctl, x flock: the median of the ratios within a round; spread: the\n"
	       "   interquartile range of the rounds over their median; 'holding many': its\n"
	       "   locker also holds %ld resources held/N in S; each measurement is a new process;\n"
	       "   io_uring, batch of B: B lockers lock X on db/c0..db/c<B-1>, B SQEs in one submit\n"
	       "   that waits for their CQEs, then unlock them likewise; ns per lock+unlock pair;\n"
	       "   2 NOPs: the same with IORING_OP_NOP, ns per 2 NOPs, what the ring itself costs)\n",
	       opt_held);
	printf("%-40s %10s %12s %12s %7s\n", "what", "ns/op", "x null-ioctl",
	       "x flock", "spread");
	for (i = 0; i < nr_cands; i++) {
		struct cand *c = &cands[i];

		if (c->section != SINGLE)
			continue;
		printf("%-40s %10.0f", c->what, median(c->ns, opt_rounds));
		print_ratio(median(c->xnull, opt_rounds));
		print_ratio(median(c->xflock, opt_rounds));
		printf(" %6.0f%%\n", spread(c->ns, opt_rounds));
	}
	printf("\n2. Handoff: 2 processes, each with its own locker, lock+unlock X on the same\n"
	       "   object in a loop for %lld ms; pairs/s of both together, median of %d rounds\n"
	       "   (interleaved with section 1); split = min/max of their pairs\n",
	       (long long)(opt_handoff_ns / MSEC), opt_rounds);
	printf("%-40s %10s %12s %12s %7s %6s\n", "what", "pairs/s",
	       "x null-ioctl", "x flock", "spread", "split");
	for (i = 0; i < nr_cands; i++) {
		struct cand *c = &cands[i];

		if (c->section != HANDOFF)
			continue;
		printf("%-40s %10.0f", c->what, median(c->ops, opt_rounds));
		print_ratio(median(c->xnull, opt_rounds));
		print_ratio(median(c->xflock, opt_rounds));
		printf(" %6.0f%% %6.2f\n", spread(c->ops, opt_rounds),
		       median(c->split, opt_rounds));
	}
	printf("   (x null-ioctl: ns per handed-off pair over a null ioctl pair's; x flock: over flock's)\n");
	printf("\nThe statistics' cost and a locker holding many resources (rounds of section 1):\n");
	printf("  hlock X \"db/coll\" lock+unlock, stats on / off:             %.3f\n",
	       median(r_stats, opt_rounds));
	printf("  the same by a locker holding %ld resources / holding none: %.3f\n",
	       opt_held, median(r_held, opt_rounds));
	printf("  handoff pairs/s with the deadlock search / without:       %.3f\n",
	       median(r_detect, opt_rounds));
	for (i = 0; i < nr_cands; i++) {
		struct cand *c = &cands[i];

		if (c->kind != K_URING)
			continue;
		printf("  %s through io_uring, %2d per submit / a pair by ioctl: %.3f\n",
		       c->flags & C_NOP ? "2 NOPs" : "a pair", c->batch,
		       median(c->xioctl, opt_rounds));
	}

	/* The figures for scripts, after the tables. */
	for (i = 0; i < nr_cands; i++) {
		struct cand *c = &cands[i];

		if (c->section == SINGLE) {
			single_figures(c, "op", "ns");
		} else {
			figure("handoff.%s.pairs_per_s %.0f\n", c->key,
			       median(c->ops, opt_rounds));
			figure("handoff.%s.split %.3f\n", c->key,
			       median(c->split, opt_rounds));
			figure("handoff.%s.x_null %.2f\n", c->key,
			       median(c->xnull, opt_rounds));
			figure("handoff.%s.x_flock %.2f\n", c->key,
			       median(c->xflock, opt_rounds));
		}
	}
	figure("stats.on_over_off %.3f\n", median(r_stats, opt_rounds));
	figure("held_%ld.over_none %.3f\n", opt_held, median(r_held, opt_rounds));
	figure("handoff.detect_over_nodetect %.3f\n",
	       median(r_detect, opt_rounds));
}

/*
 * -I: section 1 in a VM whose clock counts guest instructions (vm-run
 * --icount: 1 ns per instruction), so that "ns" are instructions: figures
 * the host's load does not move.
 */
/* --- Memory: slab per held lock -------------------------------------------- */

/*
 * The kernel's slab and vmalloc'ed memory, in bytes (/proc/meminfo's Slab
 * and VmallocUsed lines): a big hash table (a locker's index) is
 * vmalloc'ed.
 */
static long slab_bytes(void)
{
	long kb, slab = -1, vmalloc = -1;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		die("/proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Slab: %ld kB", &kb) == 1)
			slab = kb;
		else if (sscanf(line, "VmallocUsed: %ld kB", &kb) == 1)
			vmalloc = kb;
	}
	fclose(f);
	if (slab < 0 || vmalloc < 0)
		die("/proc/meminfo: no Slab or VmallocUsed line");
	return (slab + vmalloc) * 1024;
}

/*
 * What one held S lock on a resource of its own costs in slab (and
 * vmalloc): one locker takes S on db/c0 to db/cN-1, each new (the
 * resource, its request, the table's and the locker's share of their
 * hashes; db and the root are held once for all).  Beside it, N flock'ed tmpfs files, each open file,
 * inode, dentry and lock counted.  The slab is read once the VM is quiet
 * otherwise; what moves meanwhile is a few kB in all.
 */
static void section_memory(unsigned int n)
{
	long before, after, flk;
	struct rlimit lim;
	char path[64];
	unsigned int i;
	int fd, *fds;

	fd = hlock_open();
	if (fd < 0)
		die("%s: %s", HLOCK_DEVICE, strerror(-fd));
	/* db and the root exist and are held, once for all. */
	if (hlock_lock(fd, "db", HLOCK_IS, 0, 0))
		die("IS on db");
	before = slab_bytes();
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "db/c%u", i);
		if (hlock_lock(fd, path, HLOCK_S, 0, 0))
			die("S on %s", path);
	}
	after = slab_bytes();
	close(fd);
	fds = calloc(n, sizeof(*fds));
	if (!fds)
		die("out of memory");
	/* A descriptor per file (root in the VM may raise the limit). */
	lim.rlim_cur = lim.rlim_max = n + 64;
	if (setrlimit(RLIMIT_NOFILE, &lim))
		die("RLIMIT_NOFILE %u: %s", n + 64, strerror(errno));
	flk = slab_bytes();
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), LOCK_DIR "/hlock-bench-m%u", i);
		fds[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fds[i] < 0 || flock(fds[i], LOCK_SH))
			die("%s: %s", path, strerror(errno));
	}
	flk = slab_bytes() - flk;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), LOCK_DIR "/hlock-bench-m%u", i);
		close(fds[i]);
		unlink(path);
	}
	free(fds);
	printf("\nMemory: slab and vmalloc per held lock, %u of them in one process (/proc/meminfo)\n",
	       n);
	printf("  hlock S on db/cN, each new:            %6ld bytes\n",
	       (after - before) / n);
	printf("  flock LOCK_SH on a tmpfs file of its own: %3ld bytes (file, inode, dentry, lock)\n",
	       flk / n);
	figure("memory.slab_per_s_lock %ld\n", (after - before) / n);
	figure("memory.slab_per_flock_file %ld\n", flk / n);
}

/*
 * A handoff on one CPU: two processes pinned to CPU 0, each with its own
 * locker, take X on @obj, yield the CPU while they hold it, and let go,
 * @pairs times each.  The yield lets the other one ask and wait, so with
 * a fair lock every lock call after the first waits and is handed the lock
 * by the other's release: each pair is one handoff, with its wake-up and
 * two context switches.  Under --icount, with the other CPU idle, the
 * time is CPU 0's instructions.  Returns ns per pair, both together;
 * *@split gets the fewer pairs done by the time the first process
 * finished over the more (1.0: the two alternated throughout).
 */
static double handoff_one_cpu(enum kind kind, const char *obj, long pairs,
			      double *split)
{
	int ready[2], go[2], i;
	int64_t t0, t1;
	pid_t pids[2];

	xpipe(ready);
	xpipe(go);
	sh->count[0] = 0;
	sh->count[1] = 0;
	sh->stop = 0;
	for (i = 0; i < 2; i++) {
		pids[i] = spawn();
		if (!pids[i]) {
			struct locker l;
			long n;

			pin_to(0);
			lk_open(&l, kind, obj);
			xwrite(ready[1], 1);
			xread(go[0], 1);
			for (n = 0; n < pairs; n++) {
				lk_lock(&l, 0, -1);
				sched_yield();
				lk_unlock(&l);
				__atomic_store_n(&sh->count[i], n + 1,
						 __ATOMIC_RELAXED);
			}
			/* The other's count when this one was done. */
			n = __atomic_load_n(&sh->count[!i], __ATOMIC_RELAXED);
			if (!__atomic_exchange_n(&sh->stop, 1, __ATOMIC_SEQ_CST))
				sh->result = (double)n / pairs;
			exit(0);
		}
	}
	xread(ready[0], 2);
	t0 = now_ns();
	xwrite(go[1], 2);
	reap(pids, 2);
	t1 = now_ns();
	for (i = 0; i < 2; i++) {
		close(ready[i]);
		close(go[i]);
	}
	*split = sh->result;
	return (double)(t1 - t0) / (2 * pairs);
}

/*
 * Section 1's handoff row: hlock against SysV semop, which hands a V to
 * the sleeping P as hlock hands a release to the head of its queue, and
 * flock, which lets the releaser take the lock again (its split shows
 * it).  New objects each round, interleaved, median of @rounds.
 */
static void handoff_icount(int rounds, long pairs)
{
	static const struct {
		const char *what, *key;
		enum kind kind;
		const char *obj;
	} hs[] = {
		{ "hlock X \"db/coll\"", "hlock", K_HLOCK, "db/coll" },
		{ "SysV semop (SEM_UNDO)", "semop", K_SEM, NULL },
		{ "flock LOCK_EX", "flock", K_FLOCK, NULL },
	};
	enum { NH = sizeof(hs) / sizeof(hs[0]) };
	double ns[NH][MAX_ROUNDS], split[NH][MAX_ROUNDS], x[MAX_ROUNDS];
	int k, r;

	for (r = 0; r < rounds; r++) {
		new_objects();
		for (k = 0; k < NH; k++) {
			int j = (k + r) % NH;

			ns[j][r] = handoff_one_cpu(hs[j].kind, hs[j].obj, pairs,
						   &split[j][r]);
		}
	}
	printf("\nA handoff on one CPU, in guest instructions: 2 processes pinned to CPU 0,\n"
	       "   each with its own locker, lock X, sched_yield(), unlock, %ld times each;\n"
	       "   instructions per pair; split: the other's pairs when the first was done,\n"
	       "   over its own (1.00: every pair a handoff); median of %d rounds\n",
	       pairs, rounds);
	printf("%-40s %10s %12s %7s %6s\n", "what", "instr/pair", "x semop",
	       "spread", "split");
	for (k = 0; k < NH; k++) {
		for (r = 0; r < rounds; r++)
			x[r] = ns[k][r] / ns[1][r];
		printf("%-40s %10.0f %12.2f %6.1f%% %6.2f\n", hs[k].what,
		       median(ns[k], rounds), median(x, rounds),
		       spread(ns[k], rounds), median(split[k], rounds));
		figure("icount.handoff_%s.instructions %.0f\n", hs[k].key,
		       median(ns[k], rounds));
		figure("icount.handoff_%s.x_semop %.3f\n", hs[k].key,
		       median(x, rounds));
		figure("icount.handoff_%s.split %.2f\n", hs[k].key,
		       median(split[k], rounds));
	}
}

static void section_icount(void)
{
	struct cand *null = cand_by_key(SINGLE, "null_ioctl_pair");
	struct cand *fl = cand_by_key(SINGLE, "flock_pair");
	struct cand *plain = cand_by_key(SINGLE, "hlock_db_coll");
	int i, r;

	run_rounds();
	for (i = 0; i < nr_cands; i++) {
		struct cand *c = &cands[i];

		for (r = 0; r < opt_rounds; r++) {
			c->xnull[r] = c->ns[r] / null->ns[r];
			c->xflock[r] = c->ns[r] / fl->ns[r];
			c->xioctl[r] = c->ns[r] / plain->ns[r];
		}
	}
	printf("\n1. Single operations, uncontended, in guest instructions (the VM's clock\n"
	       "   counts them: vm-run --icount); median of %d interleaved rounds; the\n"
	       "   operations and ratios of section 1 of the timed run\n", opt_rounds);
	printf("%-40s %10s %12s %12s %7s\n", "what", "instr/op", "x null-ioctl",
	       "x flock", "spread");
	for (i = 0; i < nr_cands; i++) {
		struct cand *c = &cands[i];

		printf("%-40s %10.0f", c->what, median(c->ns, opt_rounds));
		print_ratio(median(c->xnull, opt_rounds));
		print_ratio(median(c->xflock, opt_rounds));
		printf(" %6.1f%%\n", spread(c->ns, opt_rounds));
	}
	for (i = 0; i < nr_cands; i++) {
		struct cand *c = &cands[i];

		if (c->kind == K_URING)
			printf("  %s through io_uring, %2d per submit / a pair by ioctl: %.3f\n",
			       c->flags & C_NOP ? "2 NOPs" : "a pair", c->batch,
			       median(c->xioctl, opt_rounds));
	}
	for (i = 0; i < nr_cands; i++)
		single_figures(&cands[i], "icount", "instructions");
	handoff_icount(opt_rounds < 7 ? opt_rounds : 7, 2000);
	if (opt_mem_locks)
		section_memory(opt_mem_locks);
}

/* --- Section 3: a writer behind overlapping readers ------------------------ */

static void section_3(void)
{
	static const struct {
		const char *what, *key;
		enum kind kind;
		const char *obj;
	} ws[] = {
		{ "hlock S / X \"db/coll\"", "hlock", K_HLOCK, "db/coll" },
		{ "flock LOCK_SH / LOCK_EX", "flock", K_FLOCK, NULL },
		{ "OFD F_RDLCK / F_WRLCK", "ofd", K_OFD, NULL },
		{ "pthread_rwlock (default attr, pshared)", "rwlock", K_RWLOCK,
		  NULL },
	};
	enum { NW = sizeof(ws) / sizeof(ws[0]) };
	double ms[NW][MAX_ROUNDS], med;
	int i, t, starved[NW] = { 0 };
	int64_t w;
	char val[32];

	for (t = 0; t < opt_trials; t++)
		for (i = 0; i < NW; i++) {
			new_objects();
			int k = (i + t) % NW;

			w = writer_wait(ws[k].kind, ws[k].obj, opt_readers,
					opt_hold_ns, opt_giveup_ns);
			ms[k][t] = w < 0 ? INFINITY : (double)w / MSEC;
			starved[k] += w < 0;
		}
	printf("\n3. A writer's wait behind %d readers that each take S, hold it %lld ms, release\n"
	       "   and retake it at once, started %lld/%d ms apart so that their holds overlap;\n"
	       "   the writer gives up after %lld ms.  Median of %d runs, interleaved.\n",
	       opt_readers, (long long)(opt_hold_ns / MSEC), (long long)(opt_hold_ns / MSEC),
	       opt_readers, (long long)(opt_giveup_ns / MSEC), opt_trials);
	printf("%-40s %20s %8s\n", "what", "writer's wait", "starved");
	for (i = 0; i < NW; i++) {
		med = median(ms[i], opt_trials);
		if (isfinite(med))
			snprintf(val, sizeof(val), "%.2f ms", med);
		else
			snprintf(val, sizeof(val), ">%lld ms (starved)",
				 (long long)(opt_giveup_ns / MSEC));
		printf("%-40s %20s %5d/%d\n", ws[i].what, val, starved[i],
		       opt_trials);
	}
	for (i = 0; i < NW; i++) {
		med = median(ms[i], opt_trials);
		if (isfinite(med))
			figure("writer_wait.%s.ms %.2f\n", ws[i].key,
			       med);
		else
			figure("writer_wait.%s.ms >%lld\n", ws[i].key,
			       (long long)(opt_giveup_ns / MSEC));
		figure("writer_wait.%s.starved %d/%d\n", ws[i].key,
		       starved[i], opt_trials);
	}
}

/* --- Section 4: two CPUs ---------------------------------------------------- */

static void section_4(void)
{
	static const struct {
		const char *what, *key;
		enum kind kind;
		const char *objs[2];
	} ss[] = {
		{ "null ioctl pair, own fds", "null_ioctl_pair", K_NULL,
		  { NULL, NULL } },
		{ "hlock X \"db/c1\" and \"db/c2\"", "hlock", K_HLOCK,
		  { "db/c1", "db/c2" } },
		{ "flock on two files", "flock", K_FLOCK,
		  { LOCK_DIR "/hlock-bench.c1", LOCK_DIR "/hlock-bench.c2" } },
	};
	enum { NS = sizeof(ss) / sizeof(ss[0]) };
	double one[NS][MAX_ROUNDS], two[NS][MAX_ROUNDS], sc[NS][MAX_ROUNDS];
	double xnull[NS][MAX_ROUNDS], xflock[NS][MAX_ROUNDS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int i, r;
	int64_t w;

	if (cpus < 2)
		die("section 4 needs 2 CPUs, this machine has %ld", cpus);
	for (r = 0; r < opt_scale_rounds; r++)
		for (i = 0; i < NS; i++) {
			int k = (i + r) % NS;

			w = run_workers(ss[k].kind, ss[k].objs, 1, 1, opt_scale_ns);
			one[k][r] = (double)sh->count[0] * NSEC / w;
			w = run_workers(ss[k].kind, ss[k].objs, 2, 1, opt_scale_ns);
			two[k][r] = (double)(sh->count[0] + sh->count[1]) *
				    NSEC / w;
			sc[k][r] = two[k][r] / one[k][r];
		}
	for (i = 0; i < NS; i++)
		for (r = 0; r < opt_scale_rounds; r++) {
			xnull[i][r] = sc[i][r] / sc[0][r];
			xflock[i][r] = sc[i][r] / sc[2][r];
		}
	printf("\n4. Scaling: 2 processes pinned to CPUs 0 and 1, each locking X on its own object\n"
	       "   with its own locker, over 1 process alone (pinned to CPU 0); %lld ms per run,\n"
	       "   median of %d interleaved rounds; 2.0 would be perfect scaling\n",
	       (long long)(opt_scale_ns / MSEC), opt_scale_rounds);
	printf("%-34s %11s %11s %8s %12s %8s\n", "what", "1 proc/s",
	       "2 procs/s", "2p/1p", "x null-ioctl", "x flock");
	for (i = 0; i < NS; i++) {
		printf("%-34s %11.0f %11.0f %8.2f", ss[i].what,
		       median(one[i], opt_scale_rounds), median(two[i], opt_scale_rounds),
		       median(sc[i], opt_scale_rounds));
		print_ratio(median(xnull[i], opt_scale_rounds));
		printf(" %8.2f\n", median(xflock[i], opt_scale_rounds));
	}
	printf("   (pairs per second; x null-ioctl, x flock: this 2p/1p over theirs)\n");
	unlink(ss[2].objs[0]);
	unlink(ss[2].objs[1]);
	for (i = 0; i < NS; i++) {
		figure("scaling.%s %.2f\n", ss[i].key,
		       median(sc[i], opt_scale_rounds));
		figure("scaling.%s.one_per_s %.0f\n", ss[i].key,
		       median(one[i], opt_scale_rounds));
		figure("scaling.%s.two_per_s %.0f\n", ss[i].key,
		       median(two[i], opt_scale_rounds));
	}
}

/* --- Main ------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: hlock-bench [-S | -I [-M locks]] [-r rounds] [-t ms] [-w ms] [-H held] [-T trials] [-v]\n"
		"  -S          section 4 (scaling on 2 CPUs) instead of sections 1-3\n"
		"  -I          section 1, with S pairs, and a handoff on one CPU, in instructions\n"
		"              (vm-run --icount)\n"
		"  -r rounds   interleaved rounds (sections 1, 2 and 4; default 21, -S 11)\n"
		"  -t ms       per single-operation candidate and round (default 40)\n"
		"  -w ms       per handoff or scaling run (default 250, -S 400)\n"
		"  -H held     resources the 'holding many' locker holds (default 1000)\n"
		"  -T trials   writer-wait runs per candidate (default 5)\n"
		"  -M locks    with -I, also the slab per held S lock, over this many (0: not)\n"
		"  -v          also every round's ns per operation, on stderr\n");
	exit(64);
}

static long num_arg(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max)
		usage();
	return v;
}

int main(int argc, char **argv)
{
	int scaling = 0, icount = 0, c, r_opt = 0, w_opt = 0;
	struct sigaction sa = { .sa_handler = on_alarm };
	pthread_rwlockattr_t attr;
	struct utsname u;
	struct statfs sfs;
	char date[32];
	time_t t = time(NULL);
	int64_t start = now_ns();
	const char *no_uring;
	int fd;

	while ((c = getopt(argc, argv, "ISr:t:w:H:T:M:v")) != -1) {
		switch (c) {
		case 'M':
			opt_mem_locks = num_arg(optarg, 0, 1000000);
			break;
		case 'I':
			icount = 1;
			break;
		case 'v':
			opt_verbose = 1;
			break;
		case 'S':
			scaling = 1;
			break;
		case 'r':
			r_opt = num_arg(optarg, 1, MAX_ROUNDS);
			break;
		case 't':
			opt_single_ns = num_arg(optarg, 1, 10000) * MSEC;
			break;
		case 'w':
			w_opt = num_arg(optarg, 1, 60000);
			break;
		case 'H':
			opt_held = num_arg(optarg, 0, 1000000);
			break;
		case 'T':
			opt_trials = num_arg(optarg, 1, MAX_ROUNDS);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (icount && scaling))
		usage();
	pick_cands(icount);
	if (r_opt)
		opt_rounds = opt_scale_rounds = r_opt;
	if (w_opt)
		opt_handoff_ns = opt_scale_ns = w_opt * MSEC;

	/* SIGALRM ends a blocking flock or fcntl (no SA_RESTART). */
	if (sigaction(SIGALRM, &sa, NULL))
		die("sigaction: %s", strerror(errno));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	if (pthread_rwlock_init(&sh->rw, &attr))
		die("pthread_rwlock_init failed");
	new_objects();
	fd = hlock_open();
	if (fd < 0)
		die("%s: %s", HLOCK_DEVICE, strerror(-fd));
	no_uring = uring_unusable(fd);
	if (no_uring)
		drop_uring_cands();
	close(fd);
	fd = open(lock_file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || fstatfs(fd, &sfs))
		die("%s: %s", lock_file, strerror(errno));
	close(fd);

	uname(&u);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&t));
	printf("hlock-bench%s on Linux %s, %ld CPUs, %s%s\n",
	       scaling ? " -S" : icount ? " -I" : "", u.release,
	       sysconf(_SC_NPROCESSORS_ONLN), date, sfs.f_type == TMPFS_MAGIC ? "" :
	       " (" LOCK_DIR " is not tmpfs)");
	if (no_uring && !scaling)
		printf("(no io_uring rows: %s)\n", no_uring);

	if (scaling) {
		section_4();
	} else if (icount) {
		section_icount();
	} else {
		sections_1_2();
		section_3();
	}
	remove_objects();
	figure("%s.kernel %s\n", scaling ? "scaling" : icount ? "icount" : "main",
	       u.release);
	figure("%s.seconds %.1f\n", scaling ? "scaling" : icount ? "icount" : "main",
	       (double)(now_ns() - start) / NSEC);
	printf("\n%s", figures);
	return 0;
}
