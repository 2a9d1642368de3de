// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: run a command while holding a hierarchical lock from /dev/hlock,
 * the way flock(1) runs one while holding a file lock, with its option
 * letters:
 *
 *	hlock [options] RESOURCE COMMAND [ARG...]
 *	hlock [options] RESOURCE -c 'SHELL COMMAND'
 *
 * hlock itself holds the lock (its locker is O_CLOEXEC, the command does
 * not inherit it), forks and executes the command, waits for it and exits
 * with its status; the kernel releases the lock when hlock exits.
 *
 * Signals: while hlock waits for the lock, it keeps the dispositions it
 * was started with, so SIGINT or SIGTERM kill it and nothing stays held
 * (the shell sees 128 + the signal).  While the command runs, SIGTERM,
 * SIGHUP, SIGINT and SIGQUIT sent to hlock by a process (kill(1)) are
 * passed on to the command, and the lock is kept until the command ends;
 * those the terminal sends reach the command's process group directly,
 * and hlock ignores its own copy.  A signal hlock was started ignoring
 * stays ignored, by hlock and by the command.
 *
 * --lease holds the lock under a lease that hlock renews, from its own
 * process, every RENEW_PARTS-th of the lease while the command runs: a
 * stopped hlock (SIGSTOP) stops renewing, and once its lease expired a
 * conflicting waiter takes the lock over.  hlock then says so on stderr
 * and lets the command run on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "hlock.h"
/* Before cli_common.h, whose usage_error() prints it. */
#define PROG		"hlock"
#include "cli_common.h"

#define NS_PER_SEC	1000000000LL
#define NS_PER_MS	1000000LL
/* --lease: renew this many times per lease length. */
#define RENEW_PARTS	4

/* Exit codes of the command's execution, as shells use them. */
#define EXIT_NOEXEC	126
#define EXIT_NOTFOUND	127

/* The signals passed on to the command while it runs. */
static const int fwd_signals[] = { SIGTERM, SIGHUP, SIGINT, SIGQUIT };
#define NR_FWD_SIGNALS	ARRAY_SIZE(fwd_signals)

static volatile pid_t child_pid;

static void usage_lines(FILE *f)
{
	fputs("Usage:\n"
	      " " PROG " [options] <resource> <command> [<argument>...]\n"
	      " " PROG " [options] <resource> -c <command>\n", f);
}

static void __attribute__((noreturn)) help(void)
{
	usage_lines(stdout);
	fputs("\n"
"Run a command while holding a hierarchical lock on <resource> from\n"
HLOCK_DEVICE ".  <resource> is a path such as db/coll; \"\" is the global\n"
"root.  Its ancestors get the matching intent lock (IS or IX) first.\n"
"hlock holds the lock itself and releases it when the command has ended.\n"
"\n"
"Options:\n"
" -s, --shared             get a shared lock (S)\n"
" -x, -e, --exclusive      get an exclusive lock (X, the default)\n"
" -m, --mode <mode>        get <mode>: IS, IX, S, SIX or X\n"
" -n, --nonblock           fail rather than wait\n"
" -w, --timeout <secs>     wait at most <secs> seconds (fractions allowed;\n"
"                            0 is like -n)\n"
" -E, --conflict-exit-code <number>\n"
"                          exit code after a conflict or timeout (default 1)\n"
" -c, --command <command>  after <resource>: run <command> with /bin/sh -c\n"
"     --why <text>         describe what the lock is for (at most 63 bytes),\n"
"                            as lshlock's WHY column shows it\n"
"     --lease <secs>       hold the lock under a lease of <secs> seconds,\n"
"                            renewed every quarter of it while the command\n"
"                            runs; an expired lease (hlock stopped) is\n"
"                            taken over by a conflicting waiter\n"
" -v, --verbose            tell on stderr how long the lock took and its\n"
"                            fencing token, and the lock statistics once\n"
"                            the command has ended\n"
" -h, --help               display this help\n"
" -V, --version            display version\n"
"\n"
"Exit status:\n"
" the command's, or 128+N if signal N killed it; 1 (or -E's number) on a\n"
" conflict (-n) or a timeout (-w); 64 usage error; 65 invalid resource\n"
" path; 69 " HLOCK_DEVICE " unavailable; 71 system error; 126 the command\n"
" cannot be executed; 127 the command was not found.\n"
"\n"
"Signals: waiting for the lock, SIGINT and SIGTERM kill hlock and nothing\n"
"stays held.  While the command runs, SIGTERM, SIGHUP, SIGINT and SIGQUIT\n"
"sent to hlock with kill(1) are passed on to the command, and the lock is\n"
"kept until the command ends.\n", stdout);
	exit(0);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* Seconds, fractions allowed, to nanoseconds (saturating); -1 if bad. */
static int64_t parse_seconds(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || isnan(v) || v < 0 ||
	    (errno && errno != ERANGE))
		return -1;
	v *= NS_PER_SEC;
	if (v >= (double)INT64_MAX)
		return INT64_MAX;
	return (int64_t)v;
}

static int parse_exit_code(const char *s)
{
	long v;

	return cli_long(s, 0, 255, &v) ? (int)v : -1;
}

/*
 * Lock @path, retrying after an interruption that did not kill us (a stop
 * and continue) with what is left of the timeout.
 */
static int lock_path(int fd, const char *path, int mode, int64_t timeout,
		     int64_t lease)
{
	int64_t start = now_ns(), left = timeout;
	int ret;

	for (;;) {
		ret = hlock_lock_lease(fd, path, mode, 0, left, lease);
		if (ret != -EINTR)
			return ret;
		if (timeout > 0) {
			left = timeout - (now_ns() - start);
			if (left <= 0)
				return -ETIMEDOUT;
		}
	}
}

static void print_stats(int fd)
{
	struct hlock_stats st;
	bool first = true;
	unsigned int l;
	int ret;

	ret = hlock_stats(fd, HLOCK_STATS_LOCKER, &st);
	if (ret < 0) {
		fprintf(stderr, PROG ": no lock statistics: %s\n",
			strerror(-ret));
		return;
	}
	fputs(PROG ": locks: {", stderr);
	for (l = 0; l < HLOCK_NR_LEVELS; l++) {
		if (cli_level_empty(&st.level[l]))
			continue;
		fprintf(stderr, "%s %s: ", first ? "" : ",",
			hlock_level_name(l));
		cli_print_level(stderr, &st.level[l], false);
		first = false;
	}
	fputs(first ? "}\n" : " }\n", stderr);
}

/*
 * Pass a signal a process sent us on to the command.  One the kernel
 * generated (SI_KERNEL: the terminal's ^C, ^\ or hangup) went to the whole
 * foreground process group, the command included, already.
 */
static void forward_signal(int sig, siginfo_t *si, void *uctx)
{
	int saved = errno;

	(void)uctx;
	if (si->si_code <= 0 && child_pid > 0)
		kill(child_pid, sig);
	errno = saved;
}

/* Execute the command in the child; never returns. */
static void __attribute__((noreturn)) exec_command(char **cmd)
{
	int err;

	execvp(cmd[0], cmd);
	err = errno;
	if (err == ENOENT && !strchr(cmd[0], '/'))
		fprintf(stderr, PROG ": %s: command not found\n", cmd[0]);
	else
		fprintf(stderr, PROG ": cannot execute %s: %s\n", cmd[0],
			strerror(err));
	_exit(err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/*
 * Wait for the command, renewing the lease of @fd every @every ns (0: no
 * lease).  A pidfd tells when the command ends; without one (old
 * kernels), hlock looks between renewals.  Return: 0 or -errno.
 */
static int wait_command(pid_t pid, int *status, int fd, int64_t every)
{
	struct pollfd p[2] = { { .fd = -1, .events = POLLIN },
			       { .fd = fd, .events = POLLPRI } };
	int ms = every / NS_PER_MS > INT_MAX ? INT_MAX :
		 (int)(every / NS_PER_MS);
	bool told = false;
	pid_t got;

	if (every)
		p[0].fd = (int)syscall(SYS_pidfd_open, pid, 0);
	for (;;) {
		got = waitpid(pid, status, every ? WNOHANG : 0);
		if (got == pid)
			break;
		if (got < 0 && errno != EINTR)
			return -errno;
		if (!every)
			continue;
		if (poll(p, 2, ms ? ms : 1) == 0)
			hlock_renew(fd);
		if ((p[1].revents & POLLPRI) && !told) {
			fprintf(stderr, PROG ": the lease expired and was taken over; the lock is lost\n");
			told = true;
			p[1].fd = -1;
		}
	}
	if (p[0].fd >= 0)
		close(p[0].fd);
	return 0;
}

/* Run the command and return hlock's exit status for it. */
static int run_command(char **cmd, int fd, int64_t lease)
{
	struct sigaction sa, old;
	sigset_t fwd, oldmask;
	int status;
	size_t i;
	pid_t pid;

	/* No forwarding before child_pid is set; the child restores it. */
	sigemptyset(&fwd);
	for (i = 0; i < NR_FWD_SIGNALS; i++)
		sigaddset(&fwd, fwd_signals[i]);
	sigprocmask(SIG_BLOCK, &fwd, &oldmask);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		return EX_OSERR;
	}
	if (!pid) {
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		exec_command(cmd);
	}
	child_pid = pid;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NR_FWD_SIGNALS; i++) {
		if (sigaction(fwd_signals[i], NULL, &old) ||
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(fwd_signals[i], &sa, NULL);
	}
	sigprocmask(SIG_SETMASK, &oldmask, NULL);

	if (wait_command(pid, &status, fd, lease / RENEW_PARTS)) {
		fprintf(stderr, PROG ": waitpid: %s\n", strerror(errno));
		return EX_OSERR;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EX_OSERR;
}

/* getopt_long()'s values of the long options without a short one. */
enum { OPT_WHY = 256, OPT_LEASE };

static const struct option long_opts[] = {
	{ "shared",		no_argument,		NULL, 's' },
	{ "exclusive",		no_argument,		NULL, 'x' },
	{ "mode",		required_argument,	NULL, 'm' },
	{ "nonblock",		no_argument,		NULL, 'n' },
	{ "nb",			no_argument,		NULL, 'n' },
	{ "timeout",		required_argument,	NULL, 'w' },
	{ "wait",		required_argument,	NULL, 'w' },
	{ "conflict-exit-code",	required_argument,	NULL, 'E' },
	{ "command",		required_argument,	NULL, 'c' },
	{ "why",		required_argument,	NULL, OPT_WHY },
	{ "lease",		required_argument,	NULL, OPT_LEASE },
	{ "verbose",		no_argument,		NULL, 'v' },
	{ "help",		no_argument,		NULL, 'h' },
	{ "version",		no_argument,		NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

int main(int argc, char **argv)
{
	int mode = HLOCK_X, conflict_code = 1, fd, opt, ret, status;
	bool nonblock = false, verbose = false;
	int64_t timeout = -1, lease = 0, start;
	const char *path, *why = NULL;
	char *sh_argv[4];
	uint64_t token;
	char **cmd;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+sxem:nw:E:c:vhV", long_opts,
				  NULL)) != -1) {
		switch (opt) {
		case 's':
			mode = HLOCK_S;
			break;
		case 'x':
		case 'e':
			mode = HLOCK_X;
			break;
		case 'm':
			mode = hlock_mode_parse(optarg);
			if (mode < 0)
				usage_error("invalid mode '%s' (expected IS, IX, S, SIX or X)",
					    optarg);
			break;
		case 'n':
			nonblock = true;
			break;
		case 'w':
			timeout = parse_seconds(optarg);
			if (timeout < 0)
				usage_error("invalid timeout '%s' (expected seconds, e.g. 0.5)",
					    optarg);
			break;
		case 'E':
			conflict_code = parse_exit_code(optarg);
			if (conflict_code < 0)
				usage_error("invalid exit code '%s' (expected 0 to 255)",
					    optarg);
			break;
		case OPT_LEASE:
			lease = parse_seconds(optarg);
			if (lease <= 0)
				usage_error("invalid lease '%s' (expected seconds above 0, e.g. 0.5)",
					    optarg);
			break;
		case 'c':
			usage_error("-c goes after the resource");
		case OPT_WHY:
			if (strlen(optarg) >= HLOCK_WHY_LEN)
				usage_error("--why: at most %d bytes",
					    HLOCK_WHY_LEN - 1);
			why = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			help();
		case 'V':
			printf(PROG " for hlock ABI %d\n", HLOCK_ABI_VERSION);
			return 0;
		default:
			/* A long option only: bad_option() knows short ones. */
			if (optopt == OPT_WHY)
				usage_error("option '--why' requires an argument");
			if (optopt == OPT_LEASE)
				usage_error("option '--lease' requires an argument");
			bad_option("mwEc", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		usage_error("no resource given");
	if (optind + 1 >= argc)
		usage_error("no command given");
	path = argv[optind];
	cmd = argv + optind + 1;
	if (!strcmp(cmd[0], "-c") || !strcmp(cmd[0], "--command")) {
		if (argc != optind + 3)
			usage_error("%s requires exactly one command argument",
				    cmd[0]);
		sh_argv[0] = "/bin/sh";
		sh_argv[1] = "-c";
		sh_argv[2] = cmd[1];
		sh_argv[3] = NULL;
		cmd = sh_argv;
	}
	if (nonblock)
		timeout = 0;

	ret = cli_open(PROG, &fd);
	if (ret)
		return ret;
	if (why) {
		ret = hlock_describe(fd, why);
		if (ret < 0) {
			fprintf(stderr, PROG ": cannot describe the locker: %s\n",
				strerror(-ret));
			return EX_OSERR;
		}
	}

	start = now_ns();
	ret = lock_path(fd, path, mode, timeout, lease);
	switch (-ret) {
	case 0:
		break;
	case EAGAIN:
		fprintf(stderr, PROG ": cannot lock %s: a conflicting lock is held\n",
			cli_path_name(path));
		return conflict_code;
	case ETIMEDOUT:
		fprintf(stderr, PROG ": cannot lock %s: timed out after %.3f s\n",
			cli_path_name(path), (now_ns() - start) / 1e9);
		return conflict_code;
	case EINVAL:
		fprintf(stderr, PROG ": %s: invalid resource path\n", path);
		return EX_DATAERR;
	case ENAMETOOLONG:
		fprintf(stderr, PROG ": %s: resource path too long (at most %d levels of %d bytes)\n",
			path, HLOCK_MAX_DEPTH, HLOCK_NAME_MAX);
		return EX_DATAERR;
	default:
		fprintf(stderr, PROG ": cannot lock %s: %s\n",
			cli_path_name(path), strerror(-ret));
		return EX_OSERR;
	}
	if (verbose) {
		fprintf(stderr, PROG ": got %s on %s after %.3f s",
			hlock_mode_name(mode), cli_path_name(path),
			(now_ns() - start) / 1e9);
		/* A module without fencing tokens: no token to tell. */
		if (!hlock_token(fd, path, &token))
			fprintf(stderr, ", token %" PRIu64, token);
		fputc('\n', stderr);
	}

	status = run_command(cmd, fd, lease);

	if (verbose)
		print_stats(fd);
	return status;
}
