// SPDX-License-Identifier: GPL-2.0
/*
 * A helper of hlock_cluster_test.sh: a few lockers driven by a script of
 * steps given as arguments, with checks of each step's result, so that
 * one process keeps its lockers across the barriers of a test.
 *
 *   hlock_cluster_do STEP...
 *
 * Steps (L is a locker slot, 0 to 7; MS milliseconds, -1 forever):
 *
 *   open L                     a new locker in slot L
 *   close L                    close it (releases what it holds)
 *   lock L PATH MODE MS [OPT]  lock PATH in MODE (IS, IX, S, SIX or X),
 *                              waiting MS (0: a try); OPT: front, async,
 *                              lease=MS
 *   unlock L PATH              one unlock of PATH (or withdraw its request)
 *   wait L MS                  collect the async request (HLOCK_IOC_WAIT)
 *   yield L MS                 HLOCK_IOC_YIELD
 *   blocking L PATH            HLOCK_IOC_BLOCKING: 1 while PATH blocks a
 *                              waiter, here or on another node
 *   held L PATH                the mode held on PATH (a number)
 *   param NAME VALUE           write VALUE to hlock's module parameter NAME
 *   sleep MS
 *   bar NAME                   vm-cluster-barrier NAME
 *   expect R[,R...]            the last step's result is one of these: a
 *                              number, or an errno name (EAGAIN, EDEADLK,
 *                              ...) for its negative
 *   until R MS STEP...;        run the steps up to ";" again, every 50 ms,
 *                              until the last one's result is R, for MS
 *                              at most (then the result is the last one's)
 *   slower MS                  the last step took at least MS
 *   faster MS                  the last step took less than MS
 *
 * Every step prints "STEP ARGS: RESULT (N ms)".  Once an expectation
 * did not hold, the steps after it are skipped but for bar and close, so
 * that the nodes stay in step at their barriers.  Exits 0 when every
 * expectation held, 1 when one did not (or a barrier failed), 2 on a
 * usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hlock.h"

#define NSLOTS	8
#define MS	1000000LL

static int fds[NSLOTS] = { -1, -1, -1, -1, -1, -1, -1, -1 };
static long last;
static long long last_ms;
/* An expectation did not hold: only bar and close run from now on. */
static int failed;

static const struct {
	const char *name;
	int err;
} errs[] = {
	{ "EAGAIN", EAGAIN }, { "ETIMEDOUT", ETIMEDOUT },
	{ "EDEADLK", EDEADLK }, { "ESTALE", ESTALE }, { "ENOENT", ENOENT },
	{ "EINPROGRESS", EINPROGRESS }, { "EBUSY", EBUSY },
	{ "EINTR", EINTR }, { "ENOLINK", ENOLINK }, { "EPERM", EPERM },
	{ "EIO", EIO }, { "EBADF", EBADF },
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void usage(const char *why)
{
	fprintf(stderr, "hlock_cluster_do: %s\n", why);
	exit(2);
}

/* A result named as expect takes it: a number or an errno name. */
static long result_of(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (!strcmp(s, errs[i].name))
			return -errs[i].err;
	return strtol(s, NULL, 0);
}

static const char *name_of(long r, char *buf, size_t size)
{
	size_t i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (r == -errs[i].err)
			return errs[i].name;
	snprintf(buf, size, "%ld", r);
	return buf;
}

static int slot(const char *s)
{
	int l = atoi(s);

	if (l < 0 || l >= NSLOTS)
		usage("no such slot");
	return l;
}

static int fd_of(const char *s)
{
	int l = slot(s);

	if (fds[l] < 0)
		usage("slot not open");
	return fds[l];
}

static int mode_of(const char *s)
{
	int m = hlock_mode_parse(s);

	if (m < 0)
		usage("no such mode");
	return m;
}

static int64_t ns_of(const char *s)
{
	long long ms = atoll(s);

	return ms < 0 ? -1 : ms * MS;
}

/* Whether @r is one of the results in @list ("0,EDEADLK"). */
static int one_of(long r, const char *list)
{
	char buf[256], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (result_of(tok) == r)
			return 1;
	return 0;
}

static int param(const char *name, const char *value)
{
	char path[256];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/module/hlock/parameters/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ret = fprintf(f, "%s\n", value) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/*
 * Run the step at @argv (its arguments after it).  Return: how many
 * arguments it took, the step's own name included.
 */
static int step(int argc, char **argv)
{
	const char *s = argv[0];
	long long start = now_ms();
	char buf[32], cmd[300];
	int n = 1;

	if (failed && strcmp(s, "bar") && strcmp(s, "close")) {
		/* Its arguments are skipped with it. */
		if (!strcmp(s, "until")) {
			while (n < argc && strcmp(argv[n], ";"))
				n++;
			return n + (n < argc);
		}
		if (!strcmp(s, "lock")) {
			for (n = 5; n < argc; n++)
				if (strcmp(argv[n], "front") &&
				    strcmp(argv[n], "async") &&
				    strncmp(argv[n], "lease=", 6))
					break;
			return n < argc ? n : argc;
		}
		if (!strcmp(s, "open") || !strcmp(s, "sleep") ||
		    !strcmp(s, "expect") || !strcmp(s, "slower") ||
		    !strcmp(s, "faster"))
			return 2;
		return 3;
	}

#define NEED(k) do { if (argc < (k) + 1) usage("missing arguments"); } while (0)
	if (!strcmp(s, "open")) {
		NEED(1);
		fds[slot(argv[1])] = hlock_open();
		last = fds[slot(argv[1])] < 0 ? fds[slot(argv[1])] : 0;
		n = 2;
	} else if (!strcmp(s, "close")) {
		NEED(1);
		last = fds[slot(argv[1])] < 0 ? -EBADF :
		       close(fds[slot(argv[1])]) ? -errno : 0;
		fds[slot(argv[1])] = -1;
		if (failed)
			return 2;
		n = 2;
	} else if (!strcmp(s, "lock")) {
		unsigned int flags = 0;
		int64_t lease = 0;

		NEED(4);
		n = 5;
		for (; n < argc; n++) {
			if (!strcmp(argv[n], "front"))
				flags |= HLOCK_F_FRONT;
			else if (!strcmp(argv[n], "async"))
				flags |= HLOCK_F_ASYNC;
			else if (!strncmp(argv[n], "lease=", 6))
				lease = atoll(argv[n] + 6) * MS;
			else
				break;
		}
		last = hlock_lock_lease(fd_of(argv[1]), argv[2],
					mode_of(argv[3]), flags,
					ns_of(argv[4]), lease);
	} else if (!strcmp(s, "unlock")) {
		NEED(2);
		last = hlock_unlock(fd_of(argv[1]), argv[2]);
		n = 3;
	} else if (!strcmp(s, "wait")) {
		NEED(2);
		last = hlock_wait(fd_of(argv[1]), ns_of(argv[2]));
		n = 3;
	} else if (!strcmp(s, "yield")) {
		NEED(2);
		last = hlock_yield(fd_of(argv[1]), ns_of(argv[2]));
		n = 3;
	} else if (!strcmp(s, "blocking")) {
		NEED(2);
		last = hlock_blocking(fd_of(argv[1]), argv[2]);
		n = 3;
	} else if (!strcmp(s, "held")) {
		NEED(2);
		last = hlock_held(fd_of(argv[1]), argv[2]);
		n = 3;
	} else if (!strcmp(s, "param")) {
		NEED(2);
		last = param(argv[1], argv[2]);
		n = 3;
	} else if (!strcmp(s, "sleep")) {
		NEED(1);
		usleep(atoi(argv[1]) * 1000);
		last = 0;
		n = 2;
	} else if (!strcmp(s, "bar")) {
		NEED(1);
		snprintf(cmd, sizeof(cmd), "vm-cluster-barrier '%s'", argv[1]);
		last = system(cmd) ? -EIO : 0;
		if (last) {
			printf("bar %s: failed\n", argv[1]);
			exit(1);
		}
		if (failed)
			return 2;
		n = 2;
	} else if (!strcmp(s, "expect")) {
		NEED(1);
		if (!one_of(last, argv[1])) {
			printf("expect %s: got %s\n", argv[1],
			       name_of(last, buf, sizeof(buf)));
			failed = 1;
		}
		return 2;
	} else if (!strcmp(s, "slower") || !strcmp(s, "faster")) {
		NEED(1);
		if ((last_ms >= atoll(argv[1])) != !strcmp(s, "slower")) {
			printf("%s %s: took %lld ms\n", s, argv[1], last_ms);
			failed = 1;
		}
		return 2;
	} else if (!strcmp(s, "until")) {
		long long end;
		long want;
		int i, k;

		NEED(3);
		want = result_of(argv[1]);
		end = start + atoll(argv[2]);
		for (k = 3; k < argc && strcmp(argv[k], ";"); k++)
			;
		if (k == argc)
			usage("until without ;");
		do {
			for (i = 3; i < k; i += step(k - i, argv + i))
				;
			if (last == want)
				break;
			usleep(50000);
		} while (now_ms() < end);
		last_ms = now_ms() - start;
		printf("until %s: %s (%lld ms)\n", argv[1],
		       name_of(last, buf, sizeof(buf)), last_ms);
		return k + 1;
	} else {
		usage("no such step");
	}
#undef NEED
	last_ms = now_ms() - start;
	printf("%s%s%s%s%s: %s (%lld ms)\n", s, n > 1 ? " " : "",
	       n > 1 ? argv[1] : "", n > 2 ? " " : "", n > 2 ? argv[2] : "",
	       name_of(last, buf, sizeof(buf)), last_ms);
	fflush(stdout);
	return n;
}

int main(int argc, char **argv)
{
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i += step(argc - i, argv + i))
		;
	return failed;
}
