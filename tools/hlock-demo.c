// SPDX-License-Identifier: GPL-2.0
/*
 * hlock-demo: several processes share hierarchical locks on a small
 * "shop" database and print, on one timeline, when each asks, waits, is
 * granted and lets go.  `make demo` runs it in a VM.
 *
 * Each actor is a process with its own locker (its own open /dev/hlock).
 * Actors start in a fixed order a little apart, so that the queueing is
 * the same on every run; what they then wait for is up to hlock.  Once
 * all have asked, lshlock shows the lock table, and at the end the
 * module's statistics.
 *
 * A second scene shows a lease taken over: a holder with a lease is
 * stopped (SIGSTOP), a waiter queues, the lease expires and the waiter
 * gets the lock; continued, the holder finds its unlock stale.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "hlock.h"

#define MS	1000000LL
/* The lease of the second scene's holder. */
#define LEASE_MS	200

struct actor {
	const char *name;
	int start_ms;		/* when it asks, after the start */
	const char *path;	/* NULL: show the lock table instead */
	int mode;
	int hold_ms;		/* how long it keeps the lock */
	const char *why;
};

/*
 * A writer holds one collection; a reader of the same collection waits,
 * a reader of another does not; a database-wide X waits for the intents
 * below it and then holds new collection work off; a global S (backup)
 * jumps the queue at the root and lets readers through.
 */
static const struct actor actors[] = {
	{ "writer",  0,   "shop/orders", HLOCK_X, 900,
	  "updates orders" },
	{ "reader",  50,  "shop/orders", HLOCK_S, 100,
	  "reads orders: waits for the writer" },
	{ "browser", 100, "shop/users",  HLOCK_S, 600,
	  "reads users: another collection, no wait" },
	{ "admin",   150, "shop",        HLOCK_X, 200,
	  "rebuilds the shop database: waits for every intent below it" },
	{ "clerk",   200, "shop/users",  HLOCK_IX, 100,
	  "writes users: queues behind the admin's X" },
	{ "backup",  250, "",            HLOCK_S, 150,
	  "global S: waits for writers' IX at the root" },
	{ "lshlock", 320, NULL, 0, 0, "who holds and who waits, right now" },
};

/* Run a command of the VM (lshlock is next to this program there). */
static void show(const char *cmd)
{
	fflush(stdout);
	if (system(cmd))
		printf("(%s failed: is lshlock on PATH?)\n", cmd);
	fflush(stdout);
}

static int64_t t0;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void say(const struct actor *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const struct actor *a, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("%6.0f ms  %-8s %s\n", (now_ns() - t0) / 1e6, a->name, line);
	fflush(stdout);
}

static int run(const struct actor *a)
{
	const char *path;
	int64_t asked;
	int fd, ret;

	/* The lock table names processes by their command. */
	prctl(PR_SET_NAME, a->name);
	if (!a->path) {
		usleep(a->start_ms * 1000);
		say(a, "%s:", a->why);
		show("lshlock -o COMMAND,PID,RESOURCE,MODE,STATE,BLOCKER | sed 's/^/            /'");
		return 0;
	}
	path = *a->path ? a->path : "(global)";
	fd = hlock_open();
	if (fd < 0) {
		fprintf(stderr, "hlock-demo: %s: %s\n", HLOCK_DEVICE,
			strerror(-fd));
		return 1;
	}
	usleep(a->start_ms * 1000);
	say(a, "asks %-3s on %-12s (%s)", hlock_mode_name(a->mode), path,
	    a->why);
	asked = now_ns();
	/* Queue without blocking, to say so, then wait in place. */
	ret = hlock_lock(fd, a->path, a->mode, HLOCK_F_ASYNC, 0);
	if (ret == -EINPROGRESS) {
		say(a, "waits");
		ret = hlock_wait(fd, 10000 * MS);
	}
	if (ret) {
		say(a, "failed: %s", strerror(-ret));
		return 1;
	}
	say(a, "granted %s on %s after %.0f ms", hlock_mode_name(a->mode),
	    path, (now_ns() - asked) / 1e6);
	usleep(a->hold_ms * 1000);
	say(a, "releases %s", path);
	hlock_unlock(fd, a->path);
	close(fd);
	return 0;
}

/* The second scene's actors. */
static const struct actor holder = {
	"holder", 0, "shop/stock", HLOCK_X, 0,
	"counts stock under a lease, then is stopped"
};
static const struct actor restock = {
	"restock", 0, "shop/stock", HLOCK_X, 0,
	"waits for the stopped holder"
};
static const struct actor director = { "demo", 0, NULL, 0, 0, NULL };

/* The stopped holder: lock with a lease, then see what is left. */
static int run_holder(int up, int down)
{
	struct pollfd p = { .events = POLLPRI };
	char c = 'L';
	int ret;

	prctl(PR_SET_NAME, holder.name);
	p.fd = hlock_open();
	if (p.fd < 0)
		return 1;
	say(&holder, "asks X   on %-12s (%s)", holder.path, holder.why);
	ret = hlock_lock_lease(p.fd, holder.path, holder.mode, 0, -1,
			       LEASE_MS * MS);
	if (ret)
		return 1;
	say(&holder, "granted X on %s with a lease of %d ms", holder.path,
	    LEASE_MS);
	if (write(up, &c, 1) != 1 || read(down, &c, 1) != 1)
		return 1;
	poll(&p, 1, 0);
	say(&holder, "continued: poll says %s", p.revents & POLLPRI ?
	    "POLLPRI (a lease was taken over)" : "nothing");
	ret = hlock_unlock(p.fd, holder.path);
	say(&holder, "unlock %s: %s", holder.path,
	    ret == -ESTALE ? "-ESTALE, its lock is gone" : strerror(-ret));
	return ret != -ESTALE;
}

/* The waiter: blocks until the lease expired and was taken over. */
static int run_restock(void)
{
	int64_t asked = now_ns();
	int fd, ret;

	prctl(PR_SET_NAME, restock.name);
	fd = hlock_open();
	if (fd < 0)
		return 1;
	say(&restock, "asks X   on %-12s (%s)", restock.path, restock.why);
	ret = hlock_lock(fd, restock.path, restock.mode, 0, 10000 * MS);
	if (ret) {
		say(&restock, "failed: %s", strerror(-ret));
		return 1;
	}
	say(&restock, "granted X on %s after %.0f ms: the lease was taken over",
	    restock.path, (now_ns() - asked) / 1e6);
	hlock_unlock(fd, restock.path);
	return 0;
}

/* The second scene; 0 when it went as told. */
static int lease_scene(void)
{
	int up[2], down[2], status, rc = 0;
	pid_t h, w;
	char c;

	printf("\nA lease taken over from a stopped holder:\n\n");
	fflush(stdout);
	if (pipe(up) || pipe(down))
		return 1;
	h = fork();
	if (!h)
		_exit(run_holder(up[1], down[0]));
	if (h < 0 || read(up[0], &c, 1) != 1)
		return 1;
	kill(h, SIGSTOP);
	waitpid(h, &status, WUNTRACED);
	say(&director, "stops the holder (SIGSTOP): nobody renews its lease");
	w = fork();
	if (!w)
		_exit(run_restock());
	if (w < 0 || waitpid(w, &status, 0) != w || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		rc = 1;
	say(&director, "continues the holder (SIGCONT)");
	kill(h, SIGCONT);
	c = 'C';
	if (write(down[1], &c, 1) != 1 || waitpid(h, &status, 0) != h ||
	    !WIFEXITED(status) || WEXITSTATUS(status))
		rc = 1;
	return rc;
}

int main(void)
{
	size_t i, n = sizeof(actors) / sizeof(actors[0]);
	int status, rc = 0;

	printf("hlock demo: %zu processes, one locker each, on shop/...\n\n",
	       n);
	fflush(stdout);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (!pid)
			_exit(run(&actors[i]));
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			rc = 1;
	if (lease_scene())
		rc = 1;
	printf("\nThe module's lock statistics (lshlock --stats):\n");
	show("lshlock --stats");
	printf("\nhlock demo: %s\n", rc ? "FAILED" : "done");
	return rc;
}
