// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_probe_check: does the VM harness's CPU-hog probe (hlock_probe.c)
 * tell a hog from a CPU that idled?  Run by make check in a VM of
 * scripts/vm-run with 2 CPUs, where vm-init started the probe:
 *
 * 1. Idle: its thread on CPU 1 is stopped (ptrace) for the probe's
 *    threshold and 3 s more, while nothing else runs on CPU 1; once let
 *    go, it is late on an idle CPU and must say so at KERN_INFO
 *    ("hlock-probe: late on idle CPU 1"), which no splat check counts.
 * 2. Hog: a SCHED_FIFO thread above the probe's spins on CPU 1 for as
 *    long; the probe must report "hlock-probe: CPU 1 did not run", which
 *    fails the VM (scripts/check expects that failure, and both lines).
 *
 * Prints TAP; exits 0 when both lines were seen in /dev/kmsg.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_CPU	1
#define PROBE_WAIT_MS	30000

static long long threshold_ms;
static int kmsg = -1;

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

/*
 * The probe's pid and its threshold (its argument), from /proc; the tid
 * of its thread pinned to @cpu.  Return: that tid, or -1.
 */
static pid_t probe_thread(int cpu)
{
	char path[300], spath[600], buf[256], want[16];
	struct dirent *d, *t;
	pid_t tid = -1;
	DIR *proc, *task;
	FILE *f;

	snprintf(want, sizeof(want), "%d\n", cpu);
	proc = opendir("/proc");
	while (proc && tid < 0 && (d = readdir(proc))) {
		size_t n;

		snprintf(path, sizeof(path), "/proc/%s/cmdline", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		if (!strstr(buf, "hlock_probe"))
			continue;
		threshold_ms = n > strlen(buf) + 1 ?
			atoll(buf + strlen(buf) + 1) : 10000;
		snprintf(path, sizeof(path), "/proc/%s/task", d->d_name);
		task = opendir(path);
		while (task && (t = readdir(task))) {
			char line[128];

			snprintf(spath, sizeof(spath),
				 "/proc/%s/task/%s/status", d->d_name,
				 t->d_name);
			f = fopen(spath, "re");
			if (!f)
				continue;
			while (fgets(line, sizeof(line), f))
				if (!strncmp(line, "Cpus_allowed_list:\t", 19) &&
				    !strcmp(line + 19, want))
					tid = atoi(t->d_name);
			fclose(f);
		}
		if (task)
			closedir(task);
	}
	if (proc)
		closedir(proc);
	return tid;
}

/* Wait up to @ms for a kernel log line containing @what. */
static int kmsg_wait(const char *what, long long ms)
{
	long long end = now_ms() + ms;
	char rec[1024];
	ssize_t n;

	while (now_ms() < end) {
		n = read(kmsg, rec, sizeof(rec) - 1);
		if (n < 0) {
			if (errno == EAGAIN) {
				usleep(100000);
				continue;
			}
			if (errno == EPIPE)	/* overwritten: read on */
				continue;
			return 0;
		}
		rec[n] = '\0';
		if (strstr(rec, what)) {
			printf("# %s", strchr(rec, ';') ? strchr(rec, ';') + 1 : rec);
			return 1;
		}
	}
	return 0;
}

static void *spin(void *arg)
{
	long long end = now_ms() + *(long long *)arg;

	while (now_ms() < end)
		;
	return NULL;
}

int main(void)
{
	struct sched_param sp = { .sched_priority = 60 };
	long long hold, deadline;
	pthread_attr_t attr;
	pthread_t thread;
	cpu_set_t set;
	int ok, status, failed = 0;
	pid_t tid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..2\n");
	pin(0);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("Bail out! no CPU %d\n", PROBE_CPU);
		return 1;
	}
	/*
	 * vm-init starts the probe in the background just before this
	 * program, and the probe pins each thread once it runs: on a busy
	 * host that can take seconds.  Look again for up to PROBE_WAIT_MS.
	 */
	deadline = now_ms() + PROBE_WAIT_MS;
	while ((tid = probe_thread(PROBE_CPU)) < 0 && now_ms() < deadline)
		usleep(100000);
	if (tid < 0) {
		printf("Bail out! no hlock_probe thread on CPU %d after %d ms\n",
		       PROBE_CPU, PROBE_WAIT_MS);
		return 1;
	}
	hold = threshold_ms + 3000;
	printf("# probe thread %d, threshold %lld ms, held off %lld ms\n", tid,
	       threshold_ms, hold);
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg < 0 || lseek(kmsg, 0, SEEK_END) < 0) {
		perror("/dev/kmsg");
		return 1;
	}

	/* 1. The probe's thread stopped while its CPU idles. */
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) ||
	    ptrace(PTRACE_INTERRUPT, tid, 0, 0) ||
	    waitpid(tid, &status, __WALL) != tid) {
		perror("ptrace");
		return 1;
	}
	usleep(hold * 1000);
	if (ptrace(PTRACE_DETACH, tid, 0, 0)) {
		perror("PTRACE_DETACH");
		return 1;
	}
	ok = kmsg_wait("hlock-probe: late on idle CPU 1:", 10000);
	printf("%sok 1 a thread late on an idle CPU is no hog\n",
	       ok ? "" : "not ");
	failed += !ok;

	/* 2. A thread above the probe's keeps CPU 1 busy. */
	pthread_attr_init(&attr);
	CPU_ZERO(&set);
	CPU_SET(PROBE_CPU, &set);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &sp);
	if (pthread_create(&thread, &attr, spin, &hold)) {
		printf("Bail out! no SCHED_FIFO thread\n");
		return 1;
	}
	pthread_join(thread, NULL);
	ok = kmsg_wait("hlock-probe: CPU 1 did not run", 10000);
	printf("%sok 2 a thread kept off a busy CPU is reported\n",
	       ok ? "" : "not ");
	failed += !ok;
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       2 - failed, failed);
	return failed ? 1 : 0;
}
