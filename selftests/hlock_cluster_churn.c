// SPDX-License-Identifier: GPL-2.0
/*
 * A helper of hlock_cluster_churn.sh: lock churn across the nodes of a
 * cluster, and what must hold once it stops.
 *
 *   hlock_cluster_churn run [-r] THREADS SECONDS SEED
 *   hlock_cluster_churn touch
 *   hlock_cluster_churn probe SECONDS
 *   hlock_cluster_churn add N
 *   hlock_cluster_churn check
 *
 * The paths are a small tree, so that they overlap: cn, cn/a, cn/b and
 * 16 leaves below each of the two.  Every path's lock value block holds
 * a counter and the fencing token of the last grant that set it.
 *
 * run: THREADS threads, each with a locker of its own, lock a random path
 * in a random mode (IS, IX, S, SIX or X) with a short random timeout, for
 * SECONDS.  Under X, a thread reads the path's value, draws its grant's
 * fencing token, checks that it is greater than the one the value holds
 * (the last X holder's, on whatever node), and sets the counter one
 * higher with the new token; under S or SIX it reads the value, which
 * must never go back on this node.  Then it may downgrade to a random
 * lower mode (publishing what it set), holds a moment, and unlocks.
 * Timeouts are counted; any other error fails.  With -r, another thread
 * asks for a reclaim pass (debugfs' hlock/reclaim) every 2 ms, which
 * unlocks this node's cached DLM locks of idle resources.  Prints
 * "increments N" on its last line: the increments this node made.
 *
 * touch: takes X on every path once, setting nothing, so that this node
 * holds a DLM lock on each (its cache keeps it: this node reclaims
 * nothing), which keeps the values in the DLM while the other node
 * unlocks its own.
 *
 * probe: takes X on every path in turn, up to SECONDS each, while no
 * other node locks anything: nothing conflicts anywhere, so every lock is
 * granted; a timeout is a resource that waits for nobody (a remote waiter
 * this node still records, say).
 *
 * add: adds N to the counter of cn-sum, under X.  check: reads every
 * path's counter under S, and cn-sum's: their sum must be cn-sum's, the
 * increments every node made.
 *
 * Exits 0, 1 when a check failed, 64 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hlock.h"

#define NPATHS		35
#define RECLAIM		"/sys/kernel/debug/hlock/reclaim"
#define SUM_PATH	"cn-sum"
#define MS		1000000LL
/* How long a patient request waits. */
#define PATIENT_MS	60000

/* A path's lock value block. */
struct value {
	uint64_t count;		/* increments, one per X grant that set it */
	uint64_t token;		/* the fencing token of that grant */
	uint64_t pad[2];
};

_Static_assert(sizeof(struct value) == HLOCK_LVB_LEN, "value size");

static const char *const paths[NPATHS] = {
	"cn", "cn/a", "cn/b",
	"cn/a/0", "cn/a/1", "cn/a/2", "cn/a/3", "cn/a/4", "cn/a/5",
	"cn/a/6", "cn/a/7", "cn/a/8", "cn/a/9", "cn/a/10", "cn/a/11",
	"cn/a/12", "cn/a/13", "cn/a/14", "cn/a/15",
	"cn/b/0", "cn/b/1", "cn/b/2", "cn/b/3", "cn/b/4", "cn/b/5",
	"cn/b/6", "cn/b/7", "cn/b/8", "cn/b/9", "cn/b/10", "cn/b/11",
	"cn/b/12", "cn/b/13", "cn/b/14", "cn/b/15",
};

/* The greatest count this node read on each path, under its mutex. */
static struct {
	pthread_mutex_t lock;
	uint64_t seen;
} path_seen[NPATHS];

static volatile int stop;
static int failed;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

struct worker {
	pthread_t tid;
	unsigned int seed;
	int fd;
	uint64_t last_token;
	long grants, timeouts, increments, downgrades, tokens, patient;
};

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	printf("# FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failed = 1;
	stop = 1;
	pthread_mutex_unlock(&out_lock);
}

/* A random mode that @mode covers, below it; @mode is above IS. */
static int lower_mode(int mode, unsigned int *seed)
{
	static const int below_x[] = { HLOCK_SIX, HLOCK_S, HLOCK_IX, HLOCK_IS };
	static const int below_six[] = { HLOCK_S, HLOCK_IX, HLOCK_IS };

	switch (mode) {
	case HLOCK_X:
		return below_x[rand_r(seed) % 4];
	case HLOCK_SIX:
		return below_six[rand_r(seed) % 3];
	default:
		return HLOCK_IS;
	}
}

/* Under S, SIX or X on paths[i]: read its value, which never goes back. */
static int read_value(struct worker *w, int i, struct value *v)
{
	int ret = hlock_lvb_get(w->fd, paths[i], v);

	if (ret) {
		fail("value of %s: %s", paths[i], strerror(-ret));
		return ret;
	}
	pthread_mutex_lock(&path_seen[i].lock);
	if (v->count < path_seen[i].seen)
		fail("%s: count %" PRIu64 " read after %" PRIu64,
		     paths[i], v->count, path_seen[i].seen);
	else
		path_seen[i].seen = v->count;
	pthread_mutex_unlock(&path_seen[i].lock);
	return 0;
}

/* Under X on paths[i]: check the token chain and count one more. */
static void increment(struct worker *w, int i)
{
	struct value v;
	uint64_t t;
	int ret;

	if (read_value(w, i, &v))
		return;
	ret = hlock_token(w->fd, paths[i], &t);
	if (ret) {
		fail("token of %s: %s", paths[i], strerror(-ret));
		return;
	}
	w->tokens++;
	if (t <= v.token)
		fail("%s: token %" PRIu64 " after the last X holder's %" PRIu64,
		     paths[i], t, v.token);
	if (t <= w->last_token)
		fail("%s: token %" PRIu64 " after this thread's %" PRIu64,
		     paths[i], t, w->last_token);
	w->last_token = t;
	v.count++;
	v.token = t;
	ret = hlock_lvb_set(w->fd, paths[i], &v);
	if (ret) {
		fail("set %s: %s", paths[i], strerror(-ret));
		return;
	}
	/* The release or the downgrade publishes it: it counts. */
	w->increments++;
}

static void *worker_run(void *arg)
{
	static const int modes[] = { HLOCK_IS, HLOCK_IX, HLOCK_S, HLOCK_SIX,
				     HLOCK_X };
	struct worker *w = arg;
	int i, mode, ret, patient;
	uint64_t t;

	while (!stop) {
		i = rand_r(&w->seed) % NPATHS;
		mode = modes[rand_r(&w->seed) % 5];
		/*
		 * One request in 16 is patient: it waits up to PATIENT_MS.
		 * Every holder lets go within milliseconds and every queue
		 * is fair (across nodes too), so it is granted; one that
		 * times out waited for nobody.
		 */
		patient = rand_r(&w->seed) % 16 == 0;
		ret = hlock_lock(w->fd, paths[i], mode, 0,
				 patient ? PATIENT_MS * MS :
				 (10 + rand_r(&w->seed) % 190) * MS);
		if (ret == -ETIMEDOUT && patient) {
			fail("%s %s waited %d s, holders let go in ms",
			     hlock_mode_name(mode), paths[i],
			     PATIENT_MS / 1000);
			break;
		}
		if (ret == -ETIMEDOUT) {
			w->timeouts++;
			continue;
		}
		w->patient += patient;
		if (ret) {
			fail("%s %s: %s", hlock_mode_name(mode), paths[i],
			     strerror(-ret));
			break;
		}
		w->grants++;
		if (mode == HLOCK_X) {
			increment(w, i);
		} else if (mode >= HLOCK_S) {
			struct value v;

			read_value(w, i, &v);
		}
		/* Any grant's token is above this thread's last one. */
		if (mode != HLOCK_X && rand_r(&w->seed) % 4 == 0) {
			ret = hlock_token(w->fd, paths[i], &t);
			if (ret)
				fail("token of %s: %s", paths[i],
				     strerror(-ret));
			else if (t <= w->last_token)
				fail("%s: token %" PRIu64 " after this thread's %" PRIu64,
				     paths[i], t, w->last_token);
			w->last_token = t;
			w->tokens++;
		}
		if (mode > HLOCK_IS && rand_r(&w->seed) % 2) {
			mode = lower_mode(mode, &w->seed);
			ret = hlock_downgrade(w->fd, paths[i], mode);
			if (ret)
				fail("downgrade %s to %s: %s", paths[i],
				     hlock_mode_name(mode), strerror(-ret));
			w->downgrades++;
		}
		if (rand_r(&w->seed) % 2)
			usleep(rand_r(&w->seed) % 2000);
		ret = hlock_unlock(w->fd, paths[i]);
		if (ret)
			fail("unlock %s: %s", paths[i], strerror(-ret));
	}
	return NULL;
}

static void *reclaim_run(void *arg)
{
	long *passes = arg;
	int fd;

	while (!stop) {
		fd = open(RECLAIM, O_WRONLY);
		if (fd < 0 || write(fd, "1", 1) != 1) {
			fail("%s: %s", RECLAIM, strerror(errno));
			if (fd >= 0)
				close(fd);
			break;
		}
		close(fd);
		(*passes)++;
		usleep(2000);
	}
	return NULL;
}

static int run(int argc, char **argv)
{
	long grants = 0, timeouts = 0, increments = 0, downgrades = 0;
	long tokens = 0, passes = 0, patient = 0;
	int reclaim = 0, nthreads, seconds, i;
	struct worker *w;
	pthread_t rt;
	unsigned int seed;

	if (argc > 0 && !strcmp(argv[0], "-r")) {
		reclaim = 1;
		argc--;
		argv++;
	}
	if (argc != 3)
		return 64;
	nthreads = atoi(argv[0]);
	seconds = atoi(argv[1]);
	seed = strtoul(argv[2], NULL, 0);
	if (nthreads < 1 || nthreads > 64 || seconds < 1)
		return 64;
	printf("# %d threads, %d s, seed %u%s\n", nthreads, seconds, seed,
	       reclaim ? ", reclaim every 2 ms" : "");
	w = calloc(nthreads, sizeof(*w));
	if (!w)
		return 1;
	for (i = 0; i < NPATHS; i++)
		pthread_mutex_init(&path_seen[i].lock, NULL);
	for (i = 0; i < nthreads; i++) {
		w[i].seed = seed + i;
		w[i].fd = hlock_open();
		if (w[i].fd < 0) {
			printf("# FAIL: /dev/hlock: %s\n", strerror(-w[i].fd));
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&w[i].tid, NULL, worker_run, &w[i])) {
			printf("# FAIL: pthread_create\n");
			return 1;
		}
	if (reclaim && pthread_create(&rt, NULL, reclaim_run, &passes)) {
		printf("# FAIL: pthread_create\n");
		return 1;
	}
	for (i = 0; i < seconds * 10 && !stop; i++)
		usleep(100000);
	stop = 1;
	for (i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		close(w[i].fd);
		grants += w[i].grants;
		timeouts += w[i].timeouts;
		increments += w[i].increments;
		downgrades += w[i].downgrades;
		tokens += w[i].tokens;
		patient += w[i].patient;
	}
	if (reclaim)
		pthread_join(rt, NULL);
	printf("# grants %ld (patient %ld) timeouts %ld downgrades %ld tokens %ld reclaims %ld\n",
	       grants, patient, timeouts, downgrades, tokens, passes);
	if (!grants) {
		printf("# FAIL: nothing was granted\n");
		failed = 1;
	}
	printf("increments %ld\n", increments);
	return failed;
}

/* Take @mode on @path, up to @wait_ns; run @fn under it. */
static int with_lock(const char *path, int64_t wait_ns, int mode,
		  int (*fn)(int fd, const char *path, void *arg), void *arg)
{
	int fd = hlock_open(), ret;

	if (fd < 0) {
		printf("# FAIL: /dev/hlock: %s\n", strerror(-fd));
		return 1;
	}
	ret = hlock_lock(fd, path, mode, 0, wait_ns);
	if (ret) {
		printf("# FAIL: %s %s: %s\n", hlock_mode_name(mode), path,
		       strerror(-ret));
		close(fd);
		return 1;
	}
	ret = fn ? fn(fd, path, arg) : 0;
	close(fd);
	return ret;
}

static int add_fn(int fd, const char *path, void *arg)
{
	struct value v;
	int ret = hlock_lvb_get(fd, path, &v);

	if (!ret) {
		v.count += *(uint64_t *)arg;
		ret = hlock_lvb_set(fd, path, &v);
	}
	if (ret)
		printf("# FAIL: value of %s: %s\n", path, strerror(-ret));
	return !!ret;
}

static int read_fn(int fd, const char *path, void *arg)
{
	struct value v;
	int ret = hlock_lvb_get(fd, path, &v);

	if (ret) {
		printf("# FAIL: value of %s: %s\n", path, strerror(-ret));
		return 1;
	}
	*(uint64_t *)arg = v.count;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n, sum = 0, total;
	int64_t wait_ns;
	int i, ret = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "run")) {
		ret = run(argc - 2, argv + 2);
	} else if (argc == 2 && !strcmp(argv[1], "touch")) {
		for (i = 0; i < NPATHS && !ret; i++)
			ret = with_lock(paths[i], 60000 * MS, HLOCK_X, NULL, NULL);
	} else if (argc == 3 && !strcmp(argv[1], "probe")) {
		wait_ns = atoll(argv[2]) * 1000 * MS;
		for (i = 0; i < NPATHS && !ret; i++)
			ret = with_lock(paths[i], wait_ns, HLOCK_X, NULL, NULL);
	} else if (argc == 3 && !strcmp(argv[1], "add")) {
		n = strtoull(argv[2], NULL, 0);
		ret = with_lock(SUM_PATH, 60000 * MS, HLOCK_X, add_fn, &n);
	} else if (argc == 2 && !strcmp(argv[1], "check")) {
		for (i = 0; i < NPATHS && !ret; i++) {
			ret = with_lock(paths[i], 60000 * MS, HLOCK_S, read_fn,
				     &n);
			printf("# %s: %" PRIu64 "\n", paths[i], n);
			sum += n;
		}
		if (!ret)
			ret = with_lock(SUM_PATH, 60000 * MS, HLOCK_S, read_fn,
				     &total);
		if (!ret && sum != total) {
			printf("# FAIL: the counters add up to %" PRIu64 ", the nodes made %" PRIu64 " increments\n",
			       sum, total);
			ret = 1;
		} else if (!ret) {
			printf("# the counters add up to the %" PRIu64 " increments the nodes made\n",
			       total);
		}
	} else {
		fprintf(stderr, "usage: hlock_cluster_churn run [-r] THREADS SECONDS SEED\n"
				"       hlock_cluster_churn touch | check\n"
				"       hlock_cluster_churn probe SECONDS\n"
				"       hlock_cluster_churn add N\n");
		return 64;
	}
	return ret;
}
