// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: run a command while holding a hierarchical lock from /dev/hlock,
 * the way flock(1) runs one while holding a file lock, with its options:
 *
 *	hlock [options] RESOURCE COMMAND [ARG...]
 *	hlock [options] RESOURCE -c 'SHELL COMMAND'
 *	hlock [-s|-x|-m MODE|-u] [options] FD RESOURCE
 *
 * In the first two forms hlock itself holds the lock (its locker is
 * O_CLOEXEC, the command does not inherit it), forks and executes the
 * command, waits for it and exits with its status; the kernel releases
 * the lock when hlock exits.  With -F hlock executes the command in its
 * own process instead, and the command inherits the locker.
 *
 * The third form is flock's file-descriptor form for shell scripts: FD
 * is a locker the shell opened (9<>/dev/hlock); hlock locks, or with -u
 * unlocks, RESOURCE on it and exits, and the lock stays for as long as
 * the shell keeps FD open.  Exactly two operands, the first of them all
 * decimal digits, make that form; a resource named by digits alone runs
 * a command given with -c or with arguments.
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
 *
 * Exit codes are flock's: sysexits.h codes for hlock's own failures, 1
 * (or -E's) for a conflict or a timeout, else the command's status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
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

/* -c's shell when $SHELL is unset or empty, as flock(1) does. */
#define DEFAULT_SHELL	"/bin/sh"

/* The signals passed on to the command while it runs. */
static const int fwd_signals[] = { SIGTERM, SIGHUP, SIGINT, SIGQUIT };
#define NR_FWD_SIGNALS	ARRAY_SIZE(fwd_signals)

static volatile pid_t child_pid;

static void usage_lines(FILE *f)
{
	fputs("Usage:\n"
	      " " PROG " [options] <resource> <command> [<argument>...]\n"
	      " " PROG " [options] <resource> -c <command>\n"
	      " " PROG " [options] <fd> <resource>\n"
	      " " PROG " --cluster[=<lockspace>] [--pid <pid>]\n", f);
}

static void __attribute__((noreturn)) help(void)
{
	usage_lines(stdout);
	fputs("\n"
"Run a command while holding a hierarchical lock on <resource> from\n"
HLOCK_DEVICE ", or lock <resource> on the locker a shell opened as\n"
"<fd> (( " PROG " 9 db/coll; ... ) 9<>" HLOCK_DEVICE ").  <resource> is a\n"
"path such as db/coll; \"\" is the global root.  Its ancestors get the\n"
"matching intent lock (IS or IX) first.  Two operands, the first all\n"
"digits, are the <fd> form.\n"
"\n"
"Options:\n"
" -s, --shared             get a shared lock (S)\n"
" -x, -e, --exclusive      get an exclusive lock (X, the default)\n"
" -m, --mode <mode>        get <mode>: IS, IX, S, SIX or X\n"
" -u, --unlock             <fd> form: release one acquisition of <resource>\n"
" -n, --nb, --nonblock, --nonblocking\n"
"                          fail rather than wait\n"
" -w, --timeout <secs>     wait at most <secs> seconds: a decimal number,\n"
"                            fractions allowed, at most 9223372036;\n"
"                            0 is like -n\n"
" -E, --conflict-exit-code <number>\n"
"                          exit code after a conflict or timeout (default 1)\n"
" -o, --close              accepted: the command never inherits the locker\n"
" -F, --no-fork            execute the command without forking; it inherits\n"
"                            the locker and holds the lock\n"
" -c, --command <command>  after <resource>: run <command> with $SHELL -c\n"
"                            (/bin/sh if $SHELL is unset or empty)\n"
"     --why <text>         describe what the lock is for (at most 63 bytes),\n"
"                            as lshlock's WHY column shows it\n"
"     --lease <secs>       hold the lock under a lease of <secs> seconds,\n"
"                            renewed every quarter of it while the command\n"
"                            runs; an expired lease (hlock stopped) is\n"
"                            taken over by a conflicting waiter\n"
"     --cluster[=<name>]   no lock: print the DLM lockspace the lock space\n"
"                            is bound to (nothing when none), or bind it to\n"
"                            <name> (\"\": to none; needs CAP_SYS_ADMIN)\n"
"     --pid <pid>          with --cluster: the lock space of <pid>'s IPC\n"
"                            namespace rather than hlock's own\n"
" -v, --verbose            tell on stderr how long the lock took and its\n"
"                            fencing token, why it was not granted, and the\n"
"                            lock statistics once the command has ended\n"
" -h, --help               display this help\n"
" -V, --version            display version\n"
"\n"
"Exit status (flock's):\n"
" the command's, or 128+N if signal N killed it; 0 in the <fd> form;\n"
" 1 (or -E's number) on a conflict (-n) or a timeout (-w); 64 usage error;\n"
" 65 invalid resource path, <fd> not a locker, or the lock call failed;\n"
" 66 " HLOCK_DEVICE " cannot be opened; 69 the command cannot be executed;\n"
" 71 system error.\n"
"\n"
"Signals: waiting for the lock, SIGINT and SIGTERM kill hlock and nothing\n"
"stays held.  While the command runs, SIGTERM, SIGHUP, SIGINT and SIGQUIT\n"
"sent to hlock with kill(1) are passed on to the command, and the lock is\n"
"kept until the command ends.\n"
"\n"
"For more details see " PROG "(1).\n", stdout);
	exit(0);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/*
 * The longest -w or --lease, in seconds: the kernel takes both as a
 * signed 64-bit count of nanoseconds (struct hlock_lock_args), which
 * holds 9223372036.854775807 s.
 */
#define MAX_SECONDS	(INT64_MAX / NS_PER_SEC)

/*
 * Seconds as a decimal number with an optional fraction ("2", "0.5",
 * ".25", "3."; digits past the ninth after the point are cut off) to
 * nanoseconds; -1 for anything else: a sign, an exponent, hexadecimal,
 * inf, nan, blanks, or more than MAX_SECONDS.
 */
static int64_t parse_seconds(const char *s)
{
	size_t whole = strspn(s, "0123456789"), frac = 0, i;
	int64_t sec = 0, ns = 0, scale = NS_PER_SEC;

	if (s[whole] == '.')
		frac = strspn(s + whole + 1, "0123456789");
	if (!whole && !frac)
		return -1;
	if (s[whole + (s[whole] == '.' ? frac + 1 : 0)])
		return -1;
	for (i = 0; i < whole; i++) {
		sec = sec * 10 + (s[i] - '0');
		if (sec > MAX_SECONDS)
			return -1;
	}
	for (i = 0; i < frac && scale > 1; i++) {
		scale /= 10;
		ns += (s[whole + 1 + i] - '0') * scale;
	}
	if (sec == MAX_SECONDS && ns > INT64_MAX % NS_PER_SEC)
		return -1;
	return sec * NS_PER_SEC + ns;
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

/*
 * Execute the command; never returns.  flock's exit codes for a failure:
 * EX_OSERR out of memory, EX_UNAVAILABLE the rest.
 */
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
	_exit(err == ENOMEM ? EX_OSERR : EX_UNAVAILABLE);
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
enum { OPT_WHY = 256, OPT_LEASE, OPT_CLUSTER, OPT_PID };

static const struct option long_opts[] = {
	{ "shared",		no_argument,		NULL, 's' },
	{ "exclusive",		no_argument,		NULL, 'x' },
	{ "mode",		required_argument,	NULL, 'm' },
	{ "unlock",		no_argument,		NULL, 'u' },
	{ "nonblock",		no_argument,		NULL, 'n' },
	{ "nonblocking",	no_argument,		NULL, 'n' },
	{ "nb",			no_argument,		NULL, 'n' },
	{ "timeout",		required_argument,	NULL, 'w' },
	{ "wait",		required_argument,	NULL, 'w' },
	{ "conflict-exit-code",	required_argument,	NULL, 'E' },
	{ "close",		no_argument,		NULL, 'o' },
	{ "no-fork",		no_argument,		NULL, 'F' },
	{ "command",		required_argument,	NULL, 'c' },
	{ "why",		required_argument,	NULL, OPT_WHY },
	{ "lease",		required_argument,	NULL, OPT_LEASE },
	{ "cluster",		optional_argument,	NULL, OPT_CLUSTER },
	{ "pid",		required_argument,	NULL, OPT_PID },
	{ "verbose",		no_argument,		NULL, 'v' },
	{ "help",		no_argument,		NULL, 'h' },
	{ "version",		no_argument,		NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* What the options asked for. */
struct opts {
	int mode;
	int conflict_code;
	int64_t timeout;	/* -1: for as long as needed */
	int64_t lease;		/* 0: none */
	const char *why;
	const char *cluster;	/* --cluster=NAME */
	long pid;		/* --pid, -1: none */
	bool cluster_op;	/* --cluster, with or without NAME */
	bool unlock;
	bool close_fd;
	bool no_fork;
	bool verbose;
};

static void parse_options(int argc, char **argv, struct opts *o)
{
	bool nonblock = false;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+sxeum:nw:E:oFc:vhV",
				  long_opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o->mode = HLOCK_S;
			o->unlock = false;
			break;
		case 'x':
		case 'e':
			o->mode = HLOCK_X;
			o->unlock = false;
			break;
		case 'm':
			o->mode = hlock_mode_parse(optarg);
			if (o->mode < 0)
				usage_error("invalid mode '%s' (expected IS, IX, S, SIX or X)",
					    optarg);
			o->unlock = false;
			break;
		case 'u':
			o->unlock = true;
			break;
		case 'n':
			nonblock = true;
			break;
		case 'w':
			o->timeout = parse_seconds(optarg);
			if (o->timeout < 0)
				usage_error("invalid timeout '%s' (expected seconds from 0 to %lld, e.g. 0.5)",
					    optarg, (long long)MAX_SECONDS);
			break;
		case 'E':
			o->conflict_code = parse_exit_code(optarg);
			if (o->conflict_code < 0)
				usage_error("invalid exit code '%s' (expected 0 to 255)",
					    optarg);
			break;
		case 'o':
			o->close_fd = true;
			break;
		case 'F':
			o->no_fork = true;
			break;
		case OPT_LEASE:
			o->lease = parse_seconds(optarg);
			if (o->lease <= 0)
				usage_error("invalid lease '%s' (expected seconds above 0, at most %lld, e.g. 0.5)",
					    optarg, (long long)MAX_SECONDS);
			break;
		case 'c':
			usage_error("-c goes after the resource");
		case OPT_WHY:
			if (strlen(optarg) >= HLOCK_WHY_LEN)
				usage_error("--why: at most %d bytes",
					    HLOCK_WHY_LEN - 1);
			o->why = optarg;
			break;
		case OPT_CLUSTER:
			o->cluster_op = true;
			o->cluster = optarg;
			break;
		case OPT_PID: {
			char *end;

			errno = 0;
			o->pid = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o->pid <= 0 ||
			    o->pid > INT32_MAX)
				usage_error("invalid pid '%s'", optarg);
			break;
		}
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			help();
		case 'V':
			printf(CLI_VERSION_LINE(PROG));
			exit(0);
		default:
			/* A long option only: bad_option() knows short ones. */
			if (optopt == OPT_WHY)
				usage_error("option '--why' requires an argument");
			if (optopt == OPT_LEASE)
				usage_error("option '--lease' requires an argument");
			if (optopt == OPT_PID)
				usage_error("option '--pid' requires an argument");
			bad_option("mwEc", argv[optind - 1]);
		}
	}
	if (nonblock)
		o->timeout = 0;
	if (o->no_fork && o->close_fd)
		usage_error("the --no-fork and --close options are incompatible");
	if (o->no_fork && o->lease)
		usage_error("--lease needs hlock to renew it: not with --no-fork");
	if (o->pid >= 0 && !o->cluster_op)
		usage_error("--pid goes with --cluster");
}

/* An operand that names a file descriptor: decimal digits only. */
static bool is_fd_operand(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

/*
 * The command of the command form, from the @nr operands after the
 * resource: COMMAND [ARG...] as it is, or the shell command of -c STRING,
 * --command STRING or --command=STRING, for $SHELL -c (flock's shell).
 */
static char **command_argv(char **args, int nr, char **sh_argv)
{
	static const char cmd_eq[] = "--command=";
	char *str, *sh;

	if (!strcmp(args[0], "-c") || !strcmp(args[0], "--command")) {
		if (nr != 2)
			usage_error("%s requires exactly one command argument",
				    args[0]);
		str = args[1];
	} else if (!strncmp(args[0], cmd_eq, sizeof(cmd_eq) - 1)) {
		if (nr != 1)
			usage_error("--command requires exactly one command argument");
		str = args[0] + sizeof(cmd_eq) - 1;
	} else {
		return args;
	}
	sh = getenv("SHELL");
	sh_argv[0] = sh && *sh ? sh : DEFAULT_SHELL;
	sh_argv[1] = "-c";
	sh_argv[2] = str;
	sh_argv[3] = NULL;
	return sh_argv;
}

/*
 * Say why the lock call on @path failed, the conflict and the timeout
 * only with -v as flock does, and return the exit code: flock's.  A
 * conflict's code is -E's, which may be 0: the caller must not take it
 * for a grant.
 */
static int lock_failed(int ret, const struct opts *o, const char *path,
		       int64_t start)
{
	switch (-ret) {
	case EAGAIN:
		if (o->verbose)
			fprintf(stderr, PROG ": cannot lock %s: a conflicting lock is held\n",
				cli_path_name(path));
		return o->conflict_code;
	case ETIMEDOUT:
		if (o->verbose)
			fprintf(stderr, PROG ": cannot lock %s: timed out after %.3f s\n",
				cli_path_name(path), (now_ns() - start) / 1e9);
		return o->conflict_code;
	case EINVAL:
	case ENAMETOOLONG:
		cli_path_error(path);
		return EX_DATAERR;
	case ENOMEM:
	case ENOLCK:
		fprintf(stderr, PROG ": cannot lock %s: %s\n",
			cli_path_name(path), strerror(-ret));
		return EX_OSERR;
	case ENOLINK:
		fprintf(stderr, PROG ": cannot lock %s: this node lost the cluster (%s)\n",
			cli_path_name(path), strerror(-ret));
		return EX_UNAVAILABLE;
	default:
		fprintf(stderr, PROG ": cannot lock %s: %s\n",
			cli_path_name(path), strerror(-ret));
		return EX_DATAERR;
	}
}

/*
 * Describe the locker (--why) and lock: true when granted, else false
 * with the exit code in *@code (-E's after a conflict, possibly 0).
 */
static bool take_lock(int fd, const struct opts *o, const char *path,
		      int *code)
{
	int64_t start;
	uint64_t token;
	int ret;

	if (o->why) {
		ret = hlock_describe(fd, o->why);
		if (ret < 0) {
			fprintf(stderr, PROG ": cannot describe the locker: %s\n",
				strerror(-ret));
			*code = EX_OSERR;
			return false;
		}
	}
	start = now_ns();
	ret = lock_path(fd, path, o->mode, o->timeout, o->lease);
	if (ret < 0) {
		*code = lock_failed(ret, o, path, start);
		return false;
	}
	if (o->verbose) {
		fprintf(stderr, PROG ": got %s on %s after %.3f s",
			hlock_mode_name(o->mode), cli_path_name(path),
			(now_ns() - start) / 1e9);
		/* A module without fencing tokens: no token to tell. */
		if (!hlock_token(fd, path, &token))
			fprintf(stderr, ", token %" PRIu64, token);
		fputc('\n', stderr);
	}
	*code = 0;
	return true;
}

/*
 * The file-descriptor form: lock @path on the locker @fdarg, or with -u
 * release one acquisition of it, and leave it to the shell's descriptor.
 */
static int fd_form(const struct opts *o, const char *fdarg,
		   const char *path)
{
	struct hlock_info info;
	long v;
	int fd, ret, code;

	if (!cli_long(fdarg, 0, INT_MAX, &v))
		usage_error("invalid file descriptor '%s'", fdarg);
	fd = (int)v;
	ret = hlock_info(fd, &info);
	if (ret == -EBADF)
		cli_die(EX_DATAERR, "%d: not an open file descriptor (for a command under a resource named %d, use -c)",
			fd, fd);
	if (ret < 0)
		cli_die(EX_DATAERR, "%d: not a locker of " HLOCK_DEVICE " (%s)",
			fd, strerror(-ret));
	if (!o->unlock) {
		take_lock(fd, o, path, &code);
		return code;
	}

	ret = hlock_unlock(fd, path);
	switch (-ret) {
	case 0:
		break;
	case ENOENT:
		cli_die(EX_DATAERR, "cannot unlock %s: not locked on %d",
			cli_path_name(path), fd);
	case EINVAL:
	case ENAMETOOLONG:
		cli_path_error(path);
		exit(EX_DATAERR);
	default:
		if (ret > 0)
			break;
		cli_die(ret == -ENOMEM ? EX_OSERR : EX_DATAERR,
			"cannot unlock %s: %s", cli_path_name(path),
			strerror(-ret));
	}
	if (o->verbose)
		fprintf(stderr, PROG ": unlocked %s on %d, acquisitions left: %d\n",
			cli_path_name(path), fd, ret);
	return 0;
}

/*
 * --cluster: print the DLM lockspace of a lock space, or bind it to
 * o->cluster ("" unbinds).
 */
static int cluster_form(const struct opts *o)
{
	char name[HLOCK_CLUSTER_NAME_MAX + 1], whose[64];
	pid_t pid = o->pid < 0 ? 0 : o->pid;
	int fd, ret;

	if (o->pid < 0)
		snprintf(whose, sizeof(whose), "this lock space");
	else
		snprintf(whose, sizeof(whose), "the lock space of pid %ld",
			 o->pid);
	ret = cli_open(PROG, &fd);
	if (ret)
		return ret;
	if (o->cluster)
		ret = hlock_cluster_set(fd, pid, o->cluster);
	else
		ret = hlock_cluster_get(fd, pid, name, sizeof(name));
	switch (-ret) {
	case 0:
		break;
	case ENOTTY:
		cli_die(EX_UNAVAILABLE, "this module cannot bind lock spaces to the DLM");
	case EPERM:
		cli_die(EX_NOPERM, "%s %s needs CAP_SYS_ADMIN",
			o->cluster ? "binding" : "reading the binding of", whose);
	case ESRCH:
		cli_die(EX_DATAERR, "no process %ld", o->pid);
	case EINVAL:
		cli_die(EX_DATAERR, "invalid lockspace name '%s' (letters, digits, '_', '-' and '.')",
			o->cluster);
	case ENAMETOOLONG:
		cli_die(EX_DATAERR, "lockspace name too long (at most %d bytes)",
			HLOCK_CLUSTER_NAME_MAX);
	case EBUSY:
		if (o->pid < 0)
			cli_die(EX_TEMPFAIL, "cannot bind %s: lockers are open in it, hlock's own too (the initial namespace's is the module parameter cluster)",
				whose);
		cli_die(EX_TEMPFAIL, "cannot bind %s: lockers are open in it",
			whose);
	case ENOPROTOOPT:
		cli_die(EX_UNAVAILABLE, "cannot bind %s: the kernel's DLM is not loaded (modprobe dlm)",
			whose);
	case ENOTCONN:
		cli_die(EX_UNAVAILABLE, "cannot bind %s: this node is not configured in a cluster (is dlm_controld running?)",
			whose);
	case EAGAIN:
		cli_die(EX_TEMPFAIL, "cannot bind %s: dlm_controld is not ready yet; try again in a second",
			whose);
	default:
		cli_die(EX_OSERR, "cannot %s %s: %s",
			o->cluster ? "bind" : "read the binding of", whose,
			strerror(-ret));
	}
	if (!o->cluster && *name)
		printf("%s\n", name);
	if (o->verbose && o->cluster)
		fprintf(stderr, PROG ": %s bound to %s\n", whose,
			*o->cluster ? o->cluster : "no lockspace");
	return 0;
}

/* The command form: lock @path, run @cmd and return its status. */
static int command_form(const struct opts *o, const char *path,
			char **cmd)
{
	int fd, ret, status;

	ret = cli_open(PROG, &fd);
	/* flock's code for a lock file that cannot be opened. */
	if (ret == EX_UNAVAILABLE)
		return EX_NOINPUT;
	if (ret)
		return ret;
	/* Never the command without the lock, whatever -E says. */
	if (!take_lock(fd, o, path, &ret))
		return ret;

	if (o->no_fork) {
		/* The command inherits the locker, and with it the lock. */
		if (fcntl(fd, F_SETFD, 0) < 0)
			cli_die(EX_OSERR, "fcntl: %s", strerror(errno));
		fflush(NULL);
		exec_command(cmd);
	}
	status = run_command(cmd, fd, o->lease);
	if (o->verbose)
		print_stats(fd);
	return status;
}

int main(int argc, char **argv)
{
	struct opts o = { .mode = HLOCK_X, .conflict_code = 1,
			  .timeout = -1, .pid = -1 };
	char *sh_argv[4];
	int nr;

	parse_options(argc, argv, &o);
	nr = argc - optind;
	if (o.cluster_op) {
		if (nr)
			usage_error("--cluster takes no operand");
		return cluster_form(&o);
	}
	if (nr == 2 && is_fd_operand(argv[optind])) {
		if (o.lease)
			usage_error("--lease needs hlock to renew it: not in the <fd> form");
		return fd_form(&o, argv[optind], argv[optind + 1]);
	}
	if (o.unlock)
		usage_error("-u unlocks on a locker of the shell: " PROG " -u <fd> <resource>");
	if (!nr)
		usage_error("no resource given");
	if (nr == 1 && is_fd_operand(argv[optind]))
		usage_error("no resource given after the file descriptor %s",
			    argv[optind]);
	if (nr == 1)
		usage_error("no command given");
	return command_form(&o, argv[optind],
			    command_argv(argv + optind + 1, nr - 1, sh_argv));
}
