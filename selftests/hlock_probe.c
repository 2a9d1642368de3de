// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_probe: the VM harness's CPU-hog detector (scripts/vm-init starts
 * it, as the VM's program starts, on every VM of scripts/vm-run).
 *
 * The kernel's soft-lockup watchdog is slow here (vm-run sets
 * watchdog_thresh=30 for TCG, so 60 s) and can be fed by the very code
 * that hogs a CPU: console output touches it.  This probe does not depend
 * on it.  One SCHED_FIFO thread per CPU, pinned there, wakes every
 * PROBE_TICK_MS and notes when it ran.  A thread that wakes HOG_MS or more
 * late while another CPU's thread ran in that time was kept off its CPU by
 * kernel code that neither sleeps nor offers the CPU (cond_resched()): it
 * writes "hlock-probe: CPU N did not run for M ms" to the kernel log, which
 * vm-run's splat check counts as a failure.  When the whole VM stopped
 * (the host did not run it) every thread is late together, and nothing is
 * reported.  With one CPU it cannot tell the two apart and reports nothing.
 *
 * A thread can also be late on an idle CPU: its timer's interrupt came
 * late because the host ran the other virtual CPU and not this one (seen
 * on a host with two busy loops beside three TCG VMs, 63 to 335 s at a
 * time, with no soft lockup or RCU stall reported).  Nothing kept that CPU
 * busy, so that is no hog: the kernel counts the time as idle.  So the
 * thread compares its CPU's idle time in /proc/stat, sampled every
 * second, with its lateness: if at least half of it was idle, it writes
 * "hlock-probe: late on idle CPU N: ..." instead, at KERN_INFO, which the
 * splat check does not count.  Code that hogs a CPU keeps it from idling,
 * interrupts on or off, so it is reported as before.
 *
 *   hlock_probe [HOG_MS]   default 10000; runs until killed
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROBE_TICK_MS	100
/* A thread samples its CPU's idle time every this many ticks. */
#define IDLE_EVERY	10
#define MAX_CPUS	64

static long long hog_ms = 10000;
static int ncpus;
static long clk_tck;
/* When each CPU's thread last ran, in ms of CLOCK_MONOTONIC. */
static _Atomic long long last_ran[MAX_CPUS];

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The time @cpu spent idle since boot (idle and iowait in /proc/stat), in
 * ms; -1 if it cannot be read.
 */
static long long idle_ms(int cpu)
{
	unsigned long long user, nice, sys, idle, iowait;
	long long ret = -1;
	char name[16], line[256];
	FILE *f = fopen("/proc/stat", "re");
	int len;

	if (!f)
		return -1;
	len = snprintf(name, sizeof(name), "cpu%d ", cpu);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, name, len))
			continue;
		if (sscanf(line + len, "%llu %llu %llu %llu %llu", &user,
			   &nice, &sys, &idle, &iowait) == 5)
			ret = (long long)((idle + iowait) * 1000 / clk_tck);
		break;
	}
	fclose(f);
	return ret;
}

/*
 * Report that @cpu's thread was @late ms late while another CPU ran;
 * @idle: how much of that time @cpu was idle, or -1 if unknown.
 */
static void report(int cpu, long long late, long long idle)
{
	char line[160];
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	int n;

	if (idle >= 0 && 2 * idle >= late)
		n = snprintf(line, sizeof(line),
			     "<6>hlock-probe: late on idle CPU %d: %lld ms, %lld of them idle (the host did not run it; no hog)\n",
			     cpu, late, idle);
	else if (idle >= 0)
		n = snprintf(line, sizeof(line),
			     "<4>hlock-probe: CPU %d did not run for %lld ms (%lld ms of it idle)\n",
			     cpu, late, idle);
	else
		n = snprintf(line, sizeof(line),
			     "<4>hlock-probe: CPU %d did not run for %lld ms\n",
			     cpu, late);
	if (fd >= 0) {
		if (write(fd, line, n) < 0)
			perror("hlock_probe: /dev/kmsg");
		close(fd);
	}
	fputs(line + 3, stderr);
}

static void *probe(void *arg)
{
	int cpu = (int)(long)arg, other;
	struct timespec tick = { 0, PROBE_TICK_MS * 1000000L };
	long long before, after, idle_then = -1, idle_now, idle;
	unsigned int n = 0;

	for (;;) {
		before = now_ms();
		atomic_store(&last_ran[cpu], before);
		if (n++ % IDLE_EVERY == 0)
			idle_then = idle_ms(cpu);
		nanosleep(&tick, NULL);
		after = now_ms();
		if (after - before < hog_ms)
			continue;
		/* Did another CPU run meanwhile?  Then this one was hogged. */
		for (other = 0; other < ncpus; other++)
			if (other != cpu &&
			    atomic_load(&last_ran[other]) > before + PROBE_TICK_MS)
				break;
		if (other == ncpus)
			continue;
		/*
		 * Unless its CPU idled: the sample is at most a second older
		 * than @before, so a hog's share of idle time stays small.
		 */
		idle_now = idle_ms(cpu);
		idle = idle_then < 0 || idle_now < 0 ? -1 : idle_now - idle_then;
		report(cpu, after - before - PROBE_TICK_MS, idle);
		idle_then = idle_now;
		n = 1;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 50 };
	pthread_attr_t attr;
	pthread_t thread;
	cpu_set_t set;
	int cpu;

	if (argc > 1)
		hog_ms = atoll(argv[1]);
	clk_tck = sysconf(_SC_CLK_TCK);
	if (clk_tck <= 0)
		clk_tck = 100;
	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus < 2 || hog_ms <= 0)
		return 0;
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;
	for (cpu = 0; cpu < ncpus; cpu++) {
		pthread_attr_init(&attr);
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &sp);
		if (pthread_create(&thread, &attr, probe, (void *)(long)cpu)) {
			fprintf(stderr, "hlock_probe: no thread for CPU %d\n",
				cpu);
			return 1;
		}
		pthread_attr_destroy(&attr);
	}
	pause();
	return 0;
}
