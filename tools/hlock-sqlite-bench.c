// SPDX-License-Identifier: GPL-2.0
/*
 * hlock-sqlite-bench: SQLite databases shared by processes, locked by
 * SQLite's unix VFS (POSIX record locks) and by the VFS "hlock"
 * (lib/sqlite/), side by side in one run.
 *
 *   hlock-sqlite-bench [-n N] [-t SECONDS] [-r ROUNDS] [-d DIR]
 *                      [-j delete|wal] [-l writers|readers|alone]
 *
 * For each journal mode (DELETE, WAL; -j one of them) and each load (-l
 * one of them):
 *   writers  N processes, each committing one-row updates (BEGIN
 *            IMMEDIATE ... COMMIT) back to back;
 *   readers  N processes, each reading the whole of a small table in a
 *            read transaction back to back, and 1 writer as above;
 *   alone    the writer of "readers" with nobody beside it: the time
 *            its statements take when they wait for no lock, the floor
 *            under every wait of the readers load;
 * both VFSs run for SECONDS each, with a 10 s busy timeout, on a new
 * database in DIR.  The rounds are interleaved (each round runs every
 * candidate, the VFS that starts alternating), and the figures are
 * summed (transactions) or pooled (the writer's transaction times) over
 * the rounds.  It reports transactions per second, and the writers'
 * longest wait and its 99th percentile: the time a writer's BEGIN
 * IMMEDIATE and its COMMIT took, the statements that take the locks
 * (RESERVED, EXCLUSIVE; in WAL mode the WAL's write lock), not the UPDATE
 * between them; under the readers load also the longest and the shortest
 * read transaction (BEGIN to COMMIT), as in rollback mode an EXCLUSIVE
 * lock must wait out the read transactions under way, whatever the VFS,
 * and anyone's longest wait there (a write's or a read's); then hlock's
 * throughput over unix's, unix's waits over hlock's, and the
 * transactions that failed with SQLITE_BUSY (a wait longer than the busy
 * timeout: rolled back, counted).  Nothing here asserts a threshold: it
 * reports.  Any other SQLite error ends the run with status 1.  After the
 * tables come one line per figure, "bench: KEY VALUE", for scripts; `make
 * bench` (scripts/bench) runs it in a VM whose clock counts instructions
 * (vm-run --icount), which the host's load does not move.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <sqlite3.h>
#include "hlock_sqlite.h"

#define BUSY_MS		10000
#define ACCOUNTS	100
#define ROWS		200
/* Writer transaction times kept per candidate, over all rounds. */
#define MAX_LAT		200000
#define MAX_PROCS	64

enum load { WRITERS, READERS, ALONE, NR_LOADS };
enum vfs { UNIX, HLOCK, NR_VFS };

static const char *const load_name[NR_LOADS] = { "writers", "readers", "alone" };
static const char *const load_title[NR_LOADS] = {
	"N writers", "N readers+1 writer", "1 writer alone"
};
static const char *const vfs_name[NR_VFS] = { "unix", "hlock" };
static const char *const mode_name[2] = { "delete", "wal" };

/* One candidate's figures, in memory shared with the workers. */
struct figures {
	long long writes;
	long long reads;
	long long busy;
	long long seconds_ns;
	int64_t read_max_ns;
	int64_t read_min_ns;	/* INT64_MAX until a read is timed */
	int nr_lat;
	int64_t lat_ns[MAX_LAT];
};

struct shared {
	volatile int stop;
	int failed;
	struct figures fig[2][NR_LOADS][NR_VFS];
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what, sqlite3 *db)
{
	fprintf(stderr, "hlock-sqlite-bench: %s: %s\n", what,
		db ? sqlite3_errmsg(db) : "failed");
	exit(1);
}

static sqlite3 *open_db(const char *path, enum vfs v, int wal)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE, vfs_name[v]) != SQLITE_OK)
		die(path, db);
	sqlite3_busy_timeout(db, BUSY_MS);
	if (!wal && sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL,
				 NULL) != SQLITE_OK)
		die("journal_mode", db);
	return db;
}

static void exec(sqlite3 *db, const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		die(sql, db);
}

/*
 * Run @sql: true when done, false for SQLITE_BUSY (a wait longer than the
 * busy timeout: the transaction is rolled back and counted); any other
 * error ends the run.
 */
static bool try_exec(sqlite3 *db, const char *sql, struct figures *fig)
{
	int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		return true;
	if ((rc & 0xff) != SQLITE_BUSY)
		die(sql, db);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	__atomic_add_fetch(&fig->busy, 1, __ATOMIC_RELAXED);
	return false;
}

static void create_db(const char *path, enum vfs v, int wal)
{
	char sql[128];
	sqlite3 *db;
	int i;

	unlink(path);
	db = open_db(path, v, wal);
	if (wal)
		exec(db, "PRAGMA journal_mode=WAL");
	exec(db, "CREATE TABLE accounts(id INTEGER PRIMARY KEY, balance INTEGER);"
	     "CREATE TABLE rows(id INTEGER PRIMARY KEY, v INTEGER, pad TEXT);"
	     "BEGIN");
	for (i = 1; i <= ACCOUNTS; i++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO accounts VALUES(%d, 0)", i);
		exec(db, sql);
	}
	for (i = 1; i <= ROWS; i++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO rows VALUES(%d, %d, printf('%%.40c', 'x'))",
			 i, i);
		exec(db, sql);
	}
	exec(db, "COMMIT");
	sqlite3_close(db);
}

/* *@max = the larger of *@max and @v, in memory the workers share. */
static void i64_max(int64_t *max, int64_t v)
{
	int64_t old = __atomic_load_n(max, __ATOMIC_RELAXED);

	while (v > old &&
	       !__atomic_compare_exchange_n(max, &old, v, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* *@min = the smaller of *@min and @v, in memory the workers share. */
static void i64_min(int64_t *min, int64_t v)
{
	int64_t old = __atomic_load_n(min, __ATOMIC_RELAXED);

	while (v < old &&
	       !__atomic_compare_exchange_n(min, &old, v, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* A worker: write or read transactions until told to stop. */
static void worker(struct shared *sh, struct figures *fig, const char *path,
		   enum vfs v, int wal, bool writes)
{
	unsigned int seed = (unsigned int)getpid();
	sqlite3_stmt *upd, *rd;
	sqlite3 *db = open_db(path, v, wal);
	int64_t t0, wait;
	int i, c;

	if (sqlite3_prepare_v2(db, "UPDATE accounts SET balance = balance + 1 WHERE id = ?",
			       -1, &upd, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT count(*), sum(v) FROM rows", -1, &rd,
			       NULL) != SQLITE_OK)
		die("prepare", db);
	while (!sh->stop) {
		if (writes) {
			/* The statements that wait: BEGIN IMMEDIATE, COMMIT. */
			t0 = now_ns();
			if (!try_exec(db, "BEGIN IMMEDIATE", fig))
				continue;
			wait = now_ns() - t0;
			sqlite3_bind_int(upd, 1, (int)(rand_r(&seed) % ACCOUNTS) + 1);
			if (sqlite3_step(upd) != SQLITE_DONE)
				die("update", db);
			sqlite3_reset(upd);
			t0 = now_ns();
			if (!try_exec(db, "COMMIT", fig))
				continue;
			wait += now_ns() - t0;
			__atomic_add_fetch(&fig->writes, 1, __ATOMIC_RELAXED);
			i = __atomic_fetch_add(&fig->nr_lat, 1, __ATOMIC_RELAXED);
			if (i < MAX_LAT)
				fig->lat_ns[i] = wait;
		} else {
			t0 = now_ns();
			exec(db, "BEGIN");
			c = sqlite3_step(rd);
			sqlite3_reset(rd);
			if ((c & 0xff) == SQLITE_BUSY) {
				try_exec(db, "ROLLBACK", fig);
				__atomic_add_fetch(&fig->busy, 1,
						   __ATOMIC_RELAXED);
				continue;
			}
			if (c != SQLITE_ROW)
				die("read", db);
			if (!try_exec(db, "COMMIT", fig))
				continue;
			__atomic_add_fetch(&fig->reads, 1, __ATOMIC_RELAXED);
			wait = now_ns() - t0;
			i64_max(&fig->read_max_ns, wait);
			i64_min(&fig->read_min_ns, wait);
		}
	}
	sqlite3_finalize(upd);
	sqlite3_finalize(rd);
	sqlite3_close(db);
	exit(0);
}

static void run(struct shared *sh, const char *dir, int n, int seconds,
		int wal, enum load l, enum vfs v)
{
	struct figures *fig = &sh->fig[wal][l][v];
	pid_t pids[MAX_PROCS + 1];
	int i, nr = 0, status;
	char path[256];
	int64_t t0;

	snprintf(path, sizeof(path), "%s/bench-%s.db", dir, vfs_name[v]);
	create_db(path, v, wal);
	sh->stop = 0;
	/* Nothing buffered for the children to print again. */
	fflush(NULL);
	t0 = now_ns();
	for (i = l == ALONE ? n : 0; i < n + (l != WRITERS); i++) {
		/*
		 * Under the readers load, the last one writes; alone, it is
		 * the only one.
		 */
		bool writes = l != READERS || i == n;

		pids[nr] = fork();
		if (pids[nr] < 0)
			die("fork", NULL);
		if (!pids[nr])
			worker(sh, fig, path, v, wal, writes);
		nr++;
	}
	usleep((useconds_t)seconds * 1000000);
	sh->stop = 1;
	for (i = 0; i < nr; i++) {
		if (waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			sh->failed = 1;
	}
	fig->seconds_ns += now_ns() - t0;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Whether @name is the one asked for with -j or -l, or none was. */
static bool wanted(const char *only, const char *name)
{
	return !only || !strcmp(only, name);
}

/* The shortest read transaction in microseconds, 0 when none was read. */
static double read_min_us(const struct figures *f)
{
	return f->reads ? (double)f->read_min_ns / 1e3 : 0;
}

static double tps(const struct figures *f)
{
	return f->seconds_ns ? (double)(f->writes + f->reads) * 1e9 /
			       (double)f->seconds_ns : 0;
}

int main(int argc, char **argv)
{
	int n = 4, seconds = 3, rounds = 2, r, wal, l, k, c;
	const char *dir = "/tmp", *only_mode = NULL, *only_load = NULL;
	double t[NR_VFS], p99[NR_VFS], mx[NR_VFS], worst[NR_VFS];
	struct shared *sh;

	while ((c = getopt(argc, argv, "n:t:r:d:j:l:h")) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		case 't': seconds = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'd': dir = optarg; break;
		case 'j': only_mode = optarg; break;
		case 'l': only_load = optarg; break;
		default:
			fprintf(stderr, "usage: hlock-sqlite-bench [-n N] [-t SECONDS] [-r ROUNDS] [-d DIR] [-j delete|wal] [-l writers|readers|alone]\n");
			return 2;
		}
	}
	if (n < 1 || n > MAX_PROCS || seconds < 1 || rounds < 1 ||
	    (only_mode && strcmp(only_mode, mode_name[0]) &&
	     strcmp(only_mode, mode_name[1])) ||
	    (only_load && strcmp(only_load, load_name[WRITERS]) &&
	     strcmp(only_load, load_name[READERS]) &&
	     strcmp(only_load, load_name[ALONE]))) {
		fprintf(stderr, "hlock-sqlite-bench: -n 1 to %d, -t and -r at least 1, -j delete or wal, -l writers, readers or alone\n",
			MAX_PROCS);
		return 2;
	}
	if (hlock_sqlite_register(0) != SQLITE_OK)
		die("registering the hlock VFS", NULL);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap", NULL);
	memset(sh, 0, sizeof(*sh));
	for (wal = 0; wal < 2; wal++)
		for (l = 0; l < NR_LOADS; l++)
			for (k = 0; k < NR_VFS; k++)
				sh->fig[wal][l][k].read_min_ns = INT64_MAX;

	printf("SQLite %s, %d processes, %d s per run, %d rounds, busy timeout %d ms\n",
	       sqlite3_libversion(), n, seconds, rounds, BUSY_MS);
	for (r = 0; r < rounds; r++)
		for (wal = 0; wal < 2; wal++)
			for (l = 0; l < NR_LOADS; l++)
				for (k = 0; k < NR_VFS; k++)
					if (wanted(only_mode, mode_name[wal]) &&
					    wanted(only_load, load_name[l]))
						run(sh, dir, n, seconds, wal, l,
						    (k + r) % NR_VFS);
	if (sh->failed) {
		fprintf(stderr, "hlock-sqlite-bench: a worker failed\n");
		return 1;
	}

	printf("%-7s %-18s %9s %10s %6s %9s %11s %12s %11s %12s %6s %15s %13s\n",
	       "journal", "load", "unix tx/s", "hlock tx/s", "x unix",
	       "busy u/h", "unix max us", "hlock max us", "unix p99 us",
	       "hlock p99 us", "max /", "read max us u/h", "min us u/h");
	for (wal = 0; wal < 2; wal++) {
		for (l = 0; l < NR_LOADS; l++) {
			if (!wanted(only_mode, mode_name[wal]) ||
			    !wanted(only_load, load_name[l]))
				continue;
			for (k = 0; k < NR_VFS; k++) {
				struct figures *f = &sh->fig[wal][l][k];
				int m = f->nr_lat < MAX_LAT ? f->nr_lat : MAX_LAT;

				t[k] = tps(f);
				mx[k] = p99[k] = 0;
				if (m) {
					qsort(f->lat_ns, (size_t)m,
					      sizeof(f->lat_ns[0]), cmp64);
					mx[k] = (double)f->lat_ns[m - 1] / 1e3;
					p99[k] = (double)f->lat_ns[(m - 1) * 99 / 100] / 1e3;
				}
			}
			printf("%-7s %-18s %9.0f %10.0f %6.2f %4lld/%-4lld",
			       mode_name[wal], load_title[l],
			       t[UNIX], t[HLOCK], t[UNIX] ? t[HLOCK] / t[UNIX] : 0,
			       sh->fig[wal][l][UNIX].busy,
			       sh->fig[wal][l][HLOCK].busy);
			printf(" %11.0f %12.0f %11.0f %12.0f %6.1f",
			       mx[UNIX], mx[HLOCK], p99[UNIX], p99[HLOCK],
			       mx[HLOCK] ? mx[UNIX] / mx[HLOCK] : 0);
			if (l == READERS)
				printf(" %7.0f/%-7.0f %6.0f/%-6.0f\n",
				       (double)sh->fig[wal][l][UNIX].read_max_ns / 1e3,
				       (double)sh->fig[wal][l][HLOCK].read_max_ns / 1e3,
				       read_min_us(&sh->fig[wal][l][UNIX]),
				       read_min_us(&sh->fig[wal][l][HLOCK]));
			else
				printf("\n");
			for (k = 0; k < NR_VFS; k++) {
				struct figures *f = &sh->fig[wal][l][k];
				const char *key = load_name[l];

				printf("bench: sqlite.%s.%s.%s.tps %.0f\n",
				       mode_name[wal], key, vfs_name[k], t[k]);
				printf("bench: sqlite.%s.%s.%s.busy %lld\n",
				       mode_name[wal], key, vfs_name[k], f->busy);
				if (l == READERS) {
					printf("bench: sqlite.%s.%s.%s.reader_max_us %.0f\n",
					       mode_name[wal], key, vfs_name[k],
					       (double)f->read_max_ns / 1e3);
					printf("bench: sqlite.%s.%s.%s.reader_min_us %.0f\n",
					       mode_name[wal], key, vfs_name[k],
					       read_min_us(f));
				}
				printf("bench: sqlite.%s.%s.%s.writes %lld\n",
				       mode_name[wal], key, vfs_name[k], f->writes);
				printf("bench: sqlite.%s.%s.%s.writer_max_us %.0f\n",
				       mode_name[wal], key, vfs_name[k], mx[k]);
				printf("bench: sqlite.%s.%s.%s.writer_p99_us %.0f\n",
				       mode_name[wal], key, vfs_name[k], p99[k]);
			}
			printf("bench: sqlite.%s.%s.tps_x_unix %.2f\n",
			       mode_name[wal], load_name[l],
			       t[UNIX] ? t[HLOCK] / t[UNIX] : 0);
			printf("bench: sqlite.%s.%s.writer_max_unix_over_hlock %.1f\n",
			       mode_name[wal], load_name[l],
			       mx[HLOCK] ? mx[UNIX] / mx[HLOCK] : 0);
			if (l == READERS) {
				/* Anyone's longest wait: a write's or a read's. */
				for (k = 0; k < NR_VFS; k++) {
					double rd = (double)sh->fig[wal][l][k].read_max_ns / 1e3;

					worst[k] = rd > mx[k] ? rd : mx[k];
				}
				printf("bench: sqlite.%s.%s.anyone_max_us %.0f %.0f\n",
				       mode_name[wal], load_name[l], worst[UNIX],
				       worst[HLOCK]);
				printf("bench: sqlite.%s.%s.anyone_max_hlock_over_unix %.2f\n",
				       mode_name[wal], load_name[l],
				       worst[UNIX] ? worst[HLOCK] / worst[UNIX] : 0);
			}
		}
	}
	return 0;
}
