/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What hlock(1) and lshlock(8) share: exit codes, opening /dev/hlock, and
 * the lock statistics printed the way MongoDB prints its "locks" section.
 *
 * Header-only: each tool is a single .c file compiled with lib/hlock.c.
 */
#ifndef HLOCK_CLI_COMMON_H
#define HLOCK_CLI_COMMON_H

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "hlock.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/* hlock's version (lib/VERSION), which the Makefile passes. */
#ifndef HLOCK_VERSION
#error "HLOCK_VERSION is lib/VERSION: build the tools with the Makefile"
#endif

/* What --version prints, as util-linux's "flock from util-linux 2.38.1". */
#define CLI_VERSION_LINE(prog) \
	prog " from hlock " HLOCK_VERSION " (ABI %d)\n", HLOCK_ABI_VERSION

/*
 * Where hlock-deadlockd tells lshlock who on other nodes blocks this
 * node's waits, after each round: one line per blocker,
 * "SERIAL WAIT_SEQ NODE PID COMM WHY" (the waiter's locker serial and
 * wait_seq; COMM and WHY in hex, "-" when empty).  Private to the two.
 */
#ifndef CLI_REMOTE_DIR
#define CLI_REMOTE_DIR		"/run/hlock-deadlockd"
#endif
#define CLI_REMOTE_BLOCKERS	CLI_REMOTE_DIR "/blockers"

/* How the root resource "" is shown to humans. */
#define CLI_ROOT_NAME	"(global)"

static inline const char *cli_path_name(const char *path)
{
	return *path ? path : CLI_ROOT_NAME;
}

/*
 * Open a new locker, or explain on stderr why not and return the exit
 * code: EX_UNAVAILABLE when there is no usable /dev/hlock (module not
 * loaded, no permission), EX_OSERR for the rest (out of descriptors, ...).
 * On success *fdp is the locker and 0 is returned.
 */
static inline int cli_open(const char *prog, int *fdp)
{
	int fd = hlock_open();

	if (fd >= 0) {
		*fdp = fd;
		return 0;
	}
	switch (-fd) {
	case ENOENT:
	case ENODEV:
	case ENXIO:
		fprintf(stderr,
			"%s: cannot open %s: %s (is the hlock module loaded?)\n",
			prog, HLOCK_DEVICE, strerror(-fd));
		return EX_UNAVAILABLE;
	case EEXIST:
		/* A new lock space joins its DLM lockspace: taken already. */
		fprintf(stderr,
			"%s: cannot open %s: the DLM lockspace this lock space is bound to is in use on this node\n",
			prog, HLOCK_DEVICE);
		return EX_UNAVAILABLE;
	case EACCES:
	case EPERM:
	case EROFS:
		fprintf(stderr, "%s: cannot open %s: %s\n", prog,
			HLOCK_DEVICE, strerror(-fd));
		return EX_UNAVAILABLE;
	default:
		fprintf(stderr, "%s: cannot open %s: %s\n", prog,
			HLOCK_DEVICE, strerror(-fd));
		return EX_OSERR;
	}
}

/*
 * MongoDB's names of the modes in its lock statistics (r = IS, w = IX,
 * R = S, W = X; MongoDB has no SIX, so it keeps its own name), in the
 * order printed.
 */
static const struct {
	int mode;
	const char *key;
} cli_mongo_modes[] = {
	{ HLOCK_IS, "r" }, { HLOCK_IX, "w" }, { HLOCK_S, "R" },
	{ HLOCK_X, "W" }, { HLOCK_SIX, "SIX" },
};

#define CLI_NR_MONGO_MODES	ARRAY_SIZE(cli_mongo_modes)

/* The counter arrays of a level, and their MongoDB names. */
enum { CLI_ACQUIRE, CLI_WAIT, CLI_TIME, CLI_NR_COUNTERS };

static const char *const cli_counter_names[CLI_NR_COUNTERS] = {
	"acquireCount", "acquireWaitCount", "timeAcquiringMicros",
};

static inline uint64_t cli_counter(const struct hlock_level_stats *ls,
				   int counter, int mode)
{
	switch (counter) {
	case CLI_ACQUIRE:
		return ls->acquire_count[mode];
	case CLI_WAIT:
		return ls->wait_count[mode];
	default:
		return ls->wait_time_ns[mode] / 1000;
	}
}

static inline bool cli_level_empty(const struct hlock_level_stats *ls)
{
	int c;
	size_t m;

	for (c = 0; c < CLI_NR_COUNTERS; c++)
		for (m = 0; m < CLI_NR_MONGO_MODES; m++)
			if (cli_counter(ls, c, cli_mongo_modes[m].mode))
				return false;
	return true;
}

/*
 * One level's document without its name, zero entries and empty
 * sub-documents left out as MongoDB does:
 *   json:  {"acquireCount": {"w": 1}, "acquireWaitCount": {"w": 1}}
 *   else:  { acquireCount: { w: 1 }, acquireWaitCount: { w: 1 } }
 * (the second is MongoDB's slow-query log style).
 */
static inline void cli_print_level(FILE *f,
				   const struct hlock_level_stats *ls,
				   bool json)
{
	const char *q = json ? "\"" : "";
	const char *open = json ? "{" : "{ ", *close = json ? "}" : " }";
	bool first_c = true;
	int c;
	size_t m;

	fputs(open, f);
	for (c = 0; c < CLI_NR_COUNTERS; c++) {
		bool first_m = true;

		for (m = 0; m < CLI_NR_MONGO_MODES; m++) {
			uint64_t v = cli_counter(ls, c,
						 cli_mongo_modes[m].mode);

			if (!v)
				continue;
			if (first_m)
				fprintf(f, "%s%s%s%s: %s", first_c ? "" : ", ",
					q, cli_counter_names[c], q, open);
			fprintf(f, "%s%s%s%s: %llu", first_m ? "" : ", ", q,
				cli_mongo_modes[m].key, q,
				(unsigned long long)v);
			first_m = false;
			first_c = false;
		}
		if (!first_m)
			fputs(close, f);
	}
	fputs(close, f);
}

/* "PROG: " and the message, a line on stderr.  The tool defines PROG. */
static inline void cli_vwarn(const char *fmt, va_list ap)
{
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* The message, as cli_vwarn() says it, then exit with @code. */
static inline void __attribute__((noreturn, format(printf, 2, 3)))
cli_die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vwarn(fmt, ap);
	va_end(ap);
	exit(code);
}

/*
 * A whole decimal number from @min to @max in @s: false for anything
 * else (empty, trailing characters, out of range).
 */
static inline bool cli_long(const char *s, long min, long max, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	return !errno && end != s && !*end && *v >= min && *v <= max;
}

/*
 * A usage error: the message and a pointer to --help, the two lines
 * util-linux's tools print, then exit EX_USAGE.  Unused by lshlock,
 * whose usage errors exit 1 as lslocks's do.
 */
static void __attribute__((noreturn, unused, format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vwarn(fmt, ap);
	va_end(ap);
	fputs("Try '" PROG " --help' for more information.\n", stderr);
	exit(EX_USAGE);
}

/*
 * getopt_long() returned '?' or ':': say why, as getopt would have.
 * @with_arg lists the short options that take an argument; @word is the
 * argument getopt stopped at.
 */
static void __attribute__((noreturn, unused))
bad_option(const char *with_arg, const char *word)
{
	if (optopt && strchr(with_arg, optopt))
		usage_error("option requires an argument -- '%c'", optopt);
	if (optopt)
		usage_error("invalid option -- '%c'", optopt);
	usage_error("unrecognized option '%s'", word);
}

/*
 * What is wrong with the resource path @path that the module refused
 * (-EINVAL or -ENAMETOOLONG), said on stderr with a fix to try: a
 * leading or trailing '/', an empty component, a component longer than
 * HLOCK_NAME_MAX bytes, more than HLOCK_MAX_DEPTH levels.  The module's
 * rules (hl_path_parse()) decide; this only explains them.
 */
static void __attribute__((unused)) cli_path_error(const char *path)
{
	size_t len = strlen(path), i, clean = 0, comp = 0, start;
	unsigned int depth = 0;
	char *fix = malloc(len + 1);
	const char *what = NULL;

	/* The path without the extra '/': the fix for the first three. */
	for (i = 0; fix && i < len; i++)
		if (path[i] != '/' || (clean && fix[clean - 1] != '/'))
			fix[clean++] = path[i];
	if (fix) {
		if (clean && fix[clean - 1] == '/')
			clean--;
		fix[clean] = '\0';
	}
	for (i = 0; i <= len; i = start + comp + 1) {
		start = i;
		comp = strcspn(path + start, "/");
		depth++;
		if (comp > HLOCK_NAME_MAX) {
			fprintf(stderr, PROG ": '%s': component %u is %zu bytes, at most %d are allowed (shorten it, or use a hash of it)\n",
				path, depth, comp, HLOCK_NAME_MAX);
			goto out;
		}
	}
	if (path[0] == '/')
		what = "starts with '/' (paths are relative to the global root)";
	else if (len && path[len - 1] == '/')
		what = "ends with '/'";
	else if (strstr(path, "//"))
		what = "has an empty component ('//')";
	if (what && fix) {
		fprintf(stderr, PROG ": '%s': a resource path %s; try '%s'%s\n",
			path, what, fix, *fix ? "" : " (the global root)");
	} else if (depth > HLOCK_MAX_DEPTH) {
		fprintf(stderr, PROG ": '%s': %u levels, at most %d are allowed (join some components, e.g. 'a/b' as 'a.b')\n",
			path, depth, HLOCK_MAX_DEPTH);
	} else {
		fprintf(stderr, PROG ": '%s': invalid resource path (components of 1 to %d bytes between single '/', at most %d levels)\n",
			path, HLOCK_NAME_MAX, HLOCK_MAX_DEPTH);
	}
out:
	free(fix);
}

#endif /* HLOCK_CLI_COMMON_H */
