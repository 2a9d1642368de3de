// SPDX-License-Identifier: GPL-2.0
/*
 * hlock_sqlite_test: SQLite databases shared by processes through the
 * "hlock" VFS (lib/sqlite/, libhlock_sqlite(3)), with Debian's libsqlite3,
 * in rollback (DELETE) and WAL journal modes:
 *
 *   totals      writers moving money between accounts and readers adding
 *               it up, all with busy timeouts, one writer killed in the
 *               middle of a transaction: no BUSY, the sum unchanged, each
 *               writer's commits counted once, integrity_check ok
 *   killed      a writer killed holding the database's write lock, which
 *               lshlock shows under its pid: once waitpid() returned, a
 *               connection that does not wait reads the old data (the hot
 *               journal rolled back) and takes the write lock
 *   queue       a writer waits for EXCLUSIVE behind a reader in hlock's
 *               queue (PENDING), and a later reader queues behind it and
 *               reads what it committed; in WAL mode the writer commits
 *               while the reader reads its snapshot
 *   deadlock    a wait that would close a cycle with another locker is
 *               SQLITE_BUSY at once, under a ten-minute busy timeout
 *   shell, python  the loadable extension in Debian's sqlite3 shell and
 *               in Python's sqlite3 module (hlock_sqlite_load.py)
 *   no_module   without /dev/hlock, or with a device that is not hlock's,
 *               opening fails with a message that says so, and creates
 *               no file
 *
 * Run in the VM by scripts/vm-tests, with sqlite3, lshlock and
 * hlock_sqlite_load.py beside it and build/selftests/python-root as the
 * root (python3, libhlock.so.1, libhlock_sqlite.so).  HLOCK_TEST_SCALE
 * shrinks the transaction counts.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* The harness's macros trip -Wextra, as hlock_test.c explains. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"
#include "hlock_sqlite.h"

#define ACCOUNTS	10
#define BALANCE		1000
#define WORKERS		4
#define READERS		2
#define FILLER		100
/* Long enough that any BUSY is a failure of the VFS, not of the load. */
#define BUSY_MS		60000

/* What a child process reports through its exit status. */
enum { CHILD_OK, CHILD_BUSY, CHILD_SQL, CHILD_SUM, CHILD_PIPE };

/* Shared with the children (MAP_SHARED). */
struct shared {
	int committed[WORKERS + 1];
	int value[4];
	int rc[2];
};

static sqlite3 *db_open(const char *path, int busy_ms)
{
	sqlite3 *db = NULL;

	if (hlock_sqlite_register(0) != SQLITE_OK)
		return NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE, HLOCK_SQLITE_VFS) != SQLITE_OK) {
		fprintf(stderr, "# open %s: %s\n", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db, busy_ms);
	return db;
}

/* Run @sql; SQLITE_OK or the error, said on stderr. */
static int db_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);

	if (rc != SQLITE_OK)
		fprintf(stderr, "# [%d] %s: %s\n", getpid(), sql,
			err ? err : sqlite3_errstr(rc));
	sqlite3_free(err);
	return rc;
}

/* The integer the one-row query @sql returns, or -1 (said on stderr). */
static long long db_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	long long v = -1;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_ROW)
		fprintf(stderr, "# [%d] %s: %s\n", getpid(), sql,
			sqlite3_errstr(rc));
	return v;
}

/* A status for the child's exit from a failed statement's code. */
static int child_status(int rc)
{
	return (rc & 0xff) == SQLITE_BUSY ? CHILD_BUSY : CHILD_SQL;
}

static bool integrity_ok(sqlite3 *db)
{
	sqlite3_stmt *st;
	bool ok = false;

	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st,
			       NULL) != SQLITE_OK)
		return false;
	if (sqlite3_step(st) == SQLITE_ROW)
		ok = !strcmp((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	return ok;
}

/* The resource path the VFS names @path's database by, into @buf. */
static bool db_base(const char *path, char *buf, size_t size)
{
	struct stat st;

	if (stat(path, &st))
		return false;
	snprintf(buf, size, "sqlite/%u:%u:%llu", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino);
	return true;
}

static void remove_dir(const char *dir)
{
	char cmd[PATH_MAX + 16];

	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", dir);
}

/* Wait for one byte from @fd: the other side's signal. */
static bool pipe_wait(int fd)
{
	char c;

	return read(fd, &c, 1) == 1;
}

static bool pipe_signal(int fd)
{
	return write(fd, "x", 1) == 1;
}

/*
 * Whether the lock table shows @pid with a request on @path in @mode
 * (the mode asked for while waiting, the target while converting) and
 * @state, waiting for it up to SETTLE_NS.
 */
static bool table_shows(pid_t pid, const char *path, int mode, int state)
{
	const struct hlock_lock_record *rec;
	int64_t waited = 0;
	void *buf;
	int fd, n, i;
	bool found = false;

	fd = hlock_open();
	if (fd < 0)
		return false;
	while (!found && waited < SETTLE_NS) {
		n = hlock_table_alloc(fd, &buf);
		if (n < 0)
			break;
		rec = buf;
		for (i = 0; i < n; i++, rec = hlock_record_next(rec)) {
			int m = state == HLOCK_STATE_CONVERTING ?
				(int)rec->convert_mode : (int)rec->mode;

			if ((pid_t)rec->pid == pid && m == mode &&
			    (int)rec->state == state &&
			    !strcmp(hlock_record_path(rec), path))
				found = true;
		}
		free(buf);
		if (!found) {
			usleep(10000);
			waited += 10 * MS;
		}
	}
	close(fd);
	return found;
}

/*
 * Whether lshlock (the tool beside this test) lists @pid holding @mode on
 * @path.
 */
static bool lshlock_shows(pid_t pid, const char *mode, const char *path)
{
	char line[512], m[16], res[256];
	bool found = false;
	FILE *p;
	int lpid;

	p = popen("./lshlock -r -n -o PID,MODE,STATE,RESOURCE", "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		fputs("# lshlock: ", stderr);
		fputs(line, stderr);
		if (sscanf(line, "%d %15s granted %255s", &lpid, m, res) == 3 &&
		    lpid == pid && !strcmp(m, mode) && !strcmp(res, path))
			found = true;
	}
	return pclose(p) == 0 && found;
}

FIXTURE(sq) {
	char dir[64];
	char db[96];
	char base[64];
	struct shared *sh;
};

FIXTURE_VARIANT(sq) {
	const char *journal;
	bool wal;
};

FIXTURE_VARIANT_ADD(sq, rollback) {
	.journal = "DELETE",
	.wal = false,
};

FIXTURE_VARIANT_ADD(sq, wal) {
	.journal = "WAL",
	.wal = true,
};

FIXTURE_SETUP(sq)
{
	char sql[256];
	sqlite3 *db;
	int i;

	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	ASSERT_EQ(SQLITE_OK, hlock_sqlite_register(0));
	strcpy(self->dir, "/tmp/hlock_sqlite.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->db, sizeof(self->db), "%s/test.db", self->dir);
	self->sh = mmap(NULL, sizeof(*self->sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh);
	db = db_open(self->db, BUSY_MS);
	ASSERT_NE(NULL, db);
	snprintf(sql, sizeof(sql), "PRAGMA journal_mode=%s", variant->journal);
	ASSERT_EQ(SQLITE_OK, db_exec(db, sql));
	ASSERT_EQ(SQLITE_OK, db_exec(db,
		"CREATE TABLE accounts(id INTEGER PRIMARY KEY, balance INTEGER);"
		"CREATE TABLE counts(worker INTEGER PRIMARY KEY, n INTEGER);"
		"CREATE TABLE filler(id INTEGER PRIMARY KEY, b BLOB);"));
	ASSERT_EQ(SQLITE_OK, db_exec(db, "BEGIN"));
	for (i = 1; i <= ACCOUNTS; i++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO accounts VALUES(%d, %d)", i, BALANCE);
		ASSERT_EQ(SQLITE_OK, db_exec(db, sql));
	}
	for (i = 0; i <= WORKERS; i++) {
		snprintf(sql, sizeof(sql), "INSERT INTO counts VALUES(%d, 0)",
			 i);
		ASSERT_EQ(SQLITE_OK, db_exec(db, sql));
	}
	for (i = 1; i <= FILLER; i++) {
		snprintf(sql, sizeof(sql),
			 "INSERT INTO filler VALUES(%d, zeroblob(2000))", i);
		ASSERT_EQ(SQLITE_OK, db_exec(db, sql));
	}
	ASSERT_EQ(SQLITE_OK, db_exec(db, "COMMIT"));
	/* The journal mode is the database's (WAL) or set per connection. */
	ASSERT_EQ(variant->wal ? 1 : 0,
		  db_int(db, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"));
	ASSERT_EQ(SQLITE_OK, sqlite3_close(db));
	ASSERT_TRUE(db_base(self->db, self->base, sizeof(self->base)));
}

FIXTURE_TEARDOWN(sq)
{
	remove_dir(self->dir);
}

/* A connection in the fixture's journal mode (DELETE is per connection). */
static sqlite3 *sq_open(const char *path, bool wal, int busy_ms)
{
	sqlite3 *db = db_open(path, busy_ms);

	if (db && !wal && db_exec(db, "PRAGMA journal_mode=DELETE")) {
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

/*
 * One transfer between two accounts and one more commit counted for
 * @id; with @die, stop before the commit, half done, and wait to be
 * killed after saying so on @fd.
 */
static int transfer(sqlite3 *db, int id, unsigned int *seed, bool die, int fd)
{
	int a = (int)(rand_r(seed) % ACCOUNTS) + 1;
	int b = a % ACCOUNTS + 1, amount = (int)(rand_r(seed) % 50);
	char sql[160];
	int rc;

	rc = db_exec(db, "BEGIN IMMEDIATE");
	if (rc)
		return rc;
	snprintf(sql, sizeof(sql),
		 "UPDATE accounts SET balance = balance - %d WHERE id = %d",
		 amount, a);
	rc = db_exec(db, sql);
	if (die) {
		if (!rc && pipe_signal(fd))
			pause();
		return SQLITE_INTERNAL;
	}
	if (!rc) {
		snprintf(sql, sizeof(sql),
			 "UPDATE accounts SET balance = balance + %d WHERE id = %d;"
			 "UPDATE counts SET n = n + 1 WHERE worker = %d",
			 amount, b, id);
		rc = db_exec(db, sql);
	}
	if (!rc)
		rc = db_exec(db, "COMMIT");
	if (rc)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

static int writer(const char *path, bool wal, int id, int n,
		  struct shared *sh, int die_after, int fd)
{
	unsigned int seed = (unsigned int)getpid();
	sqlite3 *db = sq_open(path, wal, BUSY_MS);
	int i, rc;

	if (!db)
		return CHILD_SQL;
	for (i = 0; i < n; i++) {
		rc = transfer(db, id, &seed, i == die_after, fd);
		if (rc)
			return child_status(rc);
		__atomic_add_fetch(&sh->committed[id], 1, __ATOMIC_SEQ_CST);
	}
	sqlite3_close(db);
	return CHILD_OK;
}

/* A read transaction at a time: the sum must always be the same. */
static int reader(const char *path, bool wal, int n)
{
	sqlite3 *db = sq_open(path, wal, BUSY_MS);
	long long sum;
	int i, rc;

	if (!db)
		return CHILD_SQL;
	for (i = 0; i < n; i++) {
		rc = db_exec(db, "BEGIN");
		if (rc)
			return child_status(rc);
		sum = db_int(db, "SELECT sum(balance) FROM accounts");
		if (sum < 0)
			return child_status(sqlite3_errcode(db));
		if (sum != ACCOUNTS * BALANCE) {
			fprintf(stderr, "# [%d] sum %lld\n", getpid(), sum);
			return CHILD_SUM;
		}
		rc = db_exec(db, "COMMIT");
		if (rc)
			return child_status(rc);
	}
	sqlite3_close(db);
	return CHILD_OK;
}

/* A child's CHILD_* status, or 100 + the signal that killed it. */
static int child_exit(pid_t pid)
{
	int status = wait_child(pid);

	if (status < 0)
		return status;
	if (WIFSIGNALED(status))
		return 100 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

TEST_F_TIMEOUT(sq, totals, 300)
{
	int n = test_scaled(120, 10), die_after = n / 3;
	pid_t pids[WORKERS + READERS + 1];
	int i, p[2], status;
	sqlite3 *db;
	char sql[96];

	ASSERT_EQ(0, pipe(p));
	for (i = 0; i <= WORKERS + READERS; i++) {
		pids[i] = fork_child(i <= WORKERS ? p[1] : -1, -1);
		ASSERT_GE(pids[i], 0);
		if (pids[i])
			continue;
		/* Worker 0 dies half-way through a transfer. */
		if (i <= WORKERS)
			_exit(writer(self->db, variant->wal, i, n, self->sh,
				     i ? -1 : die_after, p[1]));
		_exit(reader(self->db, variant->wal, 2 * n));
	}
	close(p[1]);
	ASSERT_TRUE(pipe_wait(p[0]));
	ASSERT_EQ(0, kill(pids[0], SIGKILL));
	EXPECT_EQ(100 + SIGKILL, child_exit(pids[0]));
	for (i = 1; i <= WORKERS + READERS; i++) {
		status = child_exit(pids[i]);
		EXPECT_EQ(CHILD_OK, status) TH_LOG("child %d (pid %d): %s", i,
			pids[i], status == CHILD_BUSY ? "SQLITE_BUSY" :
			status == CHILD_SUM ? "bad sum" : "error");
	}
	close(p[0]);

	db = sq_open(self->db, variant->wal, BUSY_MS);
	ASSERT_NE(NULL, db);
	EXPECT_EQ(ACCOUNTS * BALANCE,
		  db_int(db, "SELECT sum(balance) FROM accounts"));
	EXPECT_EQ(die_after, self->sh->committed[0]);
	for (i = 0; i <= WORKERS; i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT n FROM counts WHERE worker = %d", i);
		EXPECT_EQ(i ? n : die_after, db_int(db, sql))
			TH_LOG("worker %d", i);
		EXPECT_EQ(i ? n : die_after, self->sh->committed[i]);
	}
	EXPECT_TRUE(integrity_ok(db));
	sqlite3_close(db);
}

/*
 * The victim: a transaction too big for its cache, so that its changes
 * reach the database file (rollback: under EXCLUSIVE) or the WAL, then
 * says so and waits to be killed.
 */
static int victim(const char *path, bool wal, int fd)
{
	sqlite3 *db = sq_open(path, wal, BUSY_MS);
	int rc;

	if (!db)
		return CHILD_SQL;
	rc = db_exec(db, "PRAGMA cache_size=2");
	if (!rc)
		rc = db_exec(db, "BEGIN IMMEDIATE");
	if (!rc)
		rc = db_exec(db,
			"UPDATE accounts SET balance = balance - 500 WHERE id = 1;"
			"UPDATE filler SET b = randomblob(2000)");
	if (rc)
		return child_status(rc);
	if (!pipe_signal(fd))
		return CHILD_PIPE;
	pause();
	return CHILD_OK;
}

TEST_F_TIMEOUT(sq, killed, 120)
{
	char path[96];
	int p[2];
	sqlite3 *db;
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	pid = fork_child(p[1], -1);
	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(victim(self->db, variant->wal, p[1]));
	close(p[1]);
	ASSERT_TRUE(pipe_wait(p[0]));
	close(p[0]);
	/*
	 * What holds the database, by its pid: EXCLUSIVE once the cache
	 * spilled (rollback), the WAL's write lock, slot 0 (WAL).
	 */
	snprintf(path, sizeof(path), "%s/%s", self->base,
		 variant->wal ? "shm0" : "shared");
	EXPECT_TRUE(lshlock_shows(pid, "X", path));
	snprintf(path, sizeof(path), "%s/reserved", self->base);
	if (!variant->wal)
		EXPECT_TRUE(lshlock_shows(pid, "X", path));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(100 + SIGKILL, child_exit(pid));

	/* Nobody waits from here on: the dead writer's locks are gone. */
	db = sq_open(self->db, variant->wal, 0);
	ASSERT_NE(NULL, db);
	EXPECT_EQ(ACCOUNTS * BALANCE,
		  db_int(db, "SELECT sum(balance) FROM accounts"));
	EXPECT_EQ(0, db_int(db, "SELECT count(*) FROM filler WHERE b != zeroblob(2000)"));
	EXPECT_EQ(SQLITE_OK, db_exec(db, "BEGIN IMMEDIATE"));
	EXPECT_EQ(SQLITE_OK, db_exec(db, "UPDATE accounts SET balance = balance + 1 WHERE id = 1"));
	EXPECT_EQ(SQLITE_OK, db_exec(db, "ROLLBACK"));
	EXPECT_TRUE(integrity_ok(db));
	sqlite3_close(db);
}

/*
 * A reader that holds a read transaction: reads account 1 into
 * @sh->value[@slot], says so on @out, waits for @in, reads it again into
 * @slot + 1, then ends.
 */
static int holding_reader(const char *path, bool wal, struct shared *sh,
			  int slot, int out, int in)
{
	sqlite3 *db = sq_open(path, wal, BUSY_MS);
	long long v;
	int rc;

	if (!db)
		return CHILD_SQL;
	rc = db_exec(db, "BEGIN");
	if (rc)
		return child_status(rc);
	v = db_int(db, "SELECT balance FROM accounts WHERE id = 1");
	if (v < 0)
		return child_status(sqlite3_errcode(db));
	sh->value[slot] = (int)v;
	if (out >= 0 && !pipe_signal(out))
		return CHILD_PIPE;
	if (in >= 0 && !pipe_wait(in))
		return CHILD_PIPE;
	v = db_int(db, "SELECT balance FROM accounts WHERE id = 1");
	if (v < 0)
		return child_status(sqlite3_errcode(db));
	sh->value[slot + 1] = (int)v;
	rc = db_exec(db, "COMMIT");
	sqlite3_close(db);
	return rc ? child_status(rc) : CHILD_OK;
}

static int moving_writer(const char *path, bool wal)
{
	sqlite3 *db = sq_open(path, wal, BUSY_MS);
	int rc;

	if (!db)
		return CHILD_SQL;
	rc = db_exec(db, "BEGIN IMMEDIATE;"
		     "UPDATE accounts SET balance = balance + 7 WHERE id = 1;"
		     "UPDATE accounts SET balance = balance - 7 WHERE id = 2;"
		     "COMMIT");
	sqlite3_close(db);
	return rc ? child_status(rc) : CHILD_OK;
}

TEST_F_TIMEOUT(sq, queue, 120)
{
	int ready[2], go[2];
	pid_t a, w, b;
	char path[96];

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	a = fork_child(ready[1], go[0]);
	ASSERT_GE(a, 0);
	if (!a)
		_exit(holding_reader(self->db, variant->wal, self->sh, 0,
				     ready[1], go[0]));
	ASSERT_TRUE(pipe_wait(ready[0]));
	w = fork_child(-1, -1);
	ASSERT_GE(w, 0);
	if (!w)
		_exit(moving_writer(self->db, variant->wal));
	if (variant->wal) {
		/* Readers do not hold the writer back in WAL mode. */
		EXPECT_EQ(CHILD_OK, child_exit(w));
	} else {
		/* PENDING: the conversion of S to X waits behind A's S. */
		snprintf(path, sizeof(path), "%s/shared", self->base);
		ASSERT_TRUE(table_shows(w, path, X, HLOCK_STATE_CONVERTING));
	}
	b = fork_child(-1, -1);
	ASSERT_GE(b, 0);
	if (!b)
		_exit(holding_reader(self->db, variant->wal, self->sh, 2, -1,
				     -1));
	if (!variant->wal) {
		/* B queues behind the writer, which still waits for A. */
		ASSERT_TRUE(table_shows(b, path, S, HLOCK_STATE_WAITING));
		EXPECT_TRUE(table_shows(w, path, X, HLOCK_STATE_CONVERTING));
	}
	ASSERT_TRUE(pipe_signal(go[1]));
	EXPECT_EQ(CHILD_OK, child_exit(a));
	EXPECT_EQ(CHILD_OK, child_exit(b));
	if (!variant->wal)
		EXPECT_EQ(CHILD_OK, child_exit(w));
	/* A read its snapshot twice; B came after the writer. */
	EXPECT_EQ(BALANCE, self->sh->value[0]);
	EXPECT_EQ(BALANCE, self->sh->value[1]);
	EXPECT_EQ(BALANCE + 7, self->sh->value[2]);
	EXPECT_EQ(BALANCE + 7, self->sh->value[3]);
}

/* A directory of its own and a database name in it, for the other tests. */
FIXTURE(scratch) {
	char dir[64];
	char db[96];
};

FIXTURE_SETUP(scratch)
{
	if (!have_device())
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	strcpy(self->dir, "/tmp/hlock_sqlite.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->db, sizeof(self->db), "%s/test.db", self->dir);
}

FIXTURE_TEARDOWN(scratch)
{
	remove_dir(self->dir);
}

/*
 * The writer of the deadlock test: a transaction under a ten-minute busy
 * timeout, whose COMMIT's result it reports in @sh->rc[0] after @in says
 * go; then, after the next go, COMMIT again into @sh->rc[1].
 */
static int deadlock_writer(const char *path, struct shared *sh, int out,
			   int in)
{
	sqlite3 *db = db_open(path, 600000);
	int rc;

	if (!db)
		return CHILD_SQL;
	rc = db_exec(db, "BEGIN IMMEDIATE;"
		     "UPDATE accounts SET balance = balance + 1 WHERE id = 1");
	if (rc)
		return child_status(rc);
	if (!pipe_signal(out) || !pipe_wait(in))
		return CHILD_PIPE;
	sh->rc[0] = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	if (!pipe_signal(out) || !pipe_wait(in))
		return CHILD_PIPE;
	sh->rc[1] = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	return CHILD_OK;
}

TEST_F_TIMEOUT(scratch, deadlock, 120)
{
	const char *path = self->db;
	char base[64], shared[96], reserved[96];
	struct hlock_stats before, after;
	int ready[2], go[2], fd;
	struct shared *sh;
	sqlite3 *db;
	pid_t w;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	db = db_open(path, BUSY_MS);
	ASSERT_NE(NULL, db);
	ASSERT_EQ(SQLITE_OK, db_exec(db,
		"CREATE TABLE accounts(id INTEGER PRIMARY KEY, balance INTEGER);"
		"INSERT INTO accounts VALUES(1, 0)"));
	sqlite3_close(db);
	ASSERT_TRUE(db_base(path, base, sizeof(base)));
	snprintf(shared, sizeof(shared), "%s/shared", base);
	snprintf(reserved, sizeof(reserved), "%s/reserved", base);

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	w = fork_child(ready[1], go[0]);
	ASSERT_GE(w, 0);
	if (!w)
		_exit(deadlock_writer(path, sh, ready[1], go[0]));
	ASSERT_TRUE(pipe_wait(ready[0]));
	/* Another locker reads, then waits for the writer's RESERVED. */
	fd = hlock_open();
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, hlock_lock(fd, shared, S, 0, 0));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(fd, reserved, S, ASYNC, 0));
	ASSERT_EQ(0, hlock_stats(fd, HLOCK_STATS_GLOBAL, &before));
	/* The writer's wait for EXCLUSIVE would close the cycle. */
	ASSERT_TRUE(pipe_signal(go[1]));
	ASSERT_TRUE(pipe_wait(ready[0]));
	EXPECT_EQ(SQLITE_BUSY, sh->rc[0]);
	ASSERT_EQ(0, hlock_stats(fd, HLOCK_STATS_GLOBAL, &after));
	EXPECT_LT(before.deadlocks, after.deadlocks);
	/* The other locker gives up: the COMMIT goes through. */
	EXPECT_EQ(0, hlock_unlock(fd, reserved));
	EXPECT_EQ(0, hlock_unlock(fd, shared));
	ASSERT_TRUE(pipe_signal(go[1]));
	EXPECT_EQ(CHILD_OK, child_exit(w));
	EXPECT_EQ(SQLITE_OK, sh->rc[1]);
	close(fd);
	db = db_open(path, BUSY_MS);
	ASSERT_NE(NULL, db);
	EXPECT_EQ(1, db_int(db, "SELECT balance FROM accounts WHERE id = 1"));
	sqlite3_close(db);
}

/* Run @cmd, its output into @out; its exit status, or -1. */
static int run(const char *cmd, char *out, size_t size)
{
	size_t n = 0, r;
	FILE *p = popen(cmd, "r");

	if (!p)
		return -1;
	while (n + 1 < size && (r = fread(out + n, 1, size - 1 - n, p)) > 0)
		n += r;
	out[n] = '\0';
	r = (size_t)pclose(p);
	fprintf(stderr, "# %s:\n%s", cmd, out);
	return WIFEXITED((int)r) ? WEXITSTATUS((int)r) : -1;
}

/*
 * Debian's sqlite3 shell loads the extension by its name (from the
 * library path) and opens the database through the VFS; while its
 * transaction is open, lshlock shows the RESERVED lock.
 */
TEST_F_TIMEOUT(scratch, shell, 60)
{
	char cmd[1024], out[4096], want[160], base[64];
	const char *path = self->db;

	ASSERT_EQ(0, access("./sqlite3", X_OK)) TH_LOG("no ./sqlite3 (--extra /usr/bin/sqlite3)");
	snprintf(cmd, sizeof(cmd),
		 "printf '%%s\\n' '.vfsname' 'CREATE TABLE t(a);'"
		 " 'BEGIN IMMEDIATE;' 'INSERT INTO t VALUES(1), (2), (3);'"
		 " '.system ./lshlock -r -n -o MODE,STATE,RESOURCE'"
		 " 'COMMIT;' 'SELECT count(*) FROM t;' |"
		 " ./sqlite3 -bail -cmd '.load libhlock_sqlite'"
		 " -cmd '.open file:%s?vfs=hlock' 2>&1", path);
	ASSERT_EQ(0, run(cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "hlock/unix\n"));
	EXPECT_NE(NULL, strstr(out, "\n3\n"));
	ASSERT_TRUE(db_base(path, base, sizeof(base)));
	snprintf(want, sizeof(want), "X granted %s/reserved\n", base);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("no line %s", want);
}

/*
 * Python's sqlite3 module loads the extension (load_extension) and opens
 * a database through the VFS: hlock_sqlite_load.py checks with lshlock
 * that its own pid holds RESERVED in a transaction.
 */
TEST_F_TIMEOUT(scratch, python, 60)
{
	char cmd[512], out[4096];
	const char *path = self->db;
	sqlite3 *db;

	ASSERT_EQ(0, access("/usr/bin/python3", X_OK)) TH_LOG("no python3 (--rootfs python-root)");
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 ./hlock_sqlite_load.py ./lshlock %s 2>&1",
		 path);
	EXPECT_EQ(0, run(cmd, out, sizeof(out)));
	db = db_open(path, BUSY_MS);
	ASSERT_NE(NULL, db);
	EXPECT_EQ(3, db_int(db, "SELECT count(*) FROM t"));
	sqlite3_close(db);
}

static char log_text[1024];

static void log_cb(void *arg, int code, const char *msg)
{
	(void)arg;
	(void)code;
	snprintf(log_text, sizeof(log_text), "%s", msg);
}

/*
 * Opening without the module (no /dev/hlock) and with a device that is
 * not hlock's (/dev/null's numbers under its name), in a mount namespace
 * of the test's own with /dev a fresh tmpfs: SQLITE_CANTOPEN, a log line
 * naming the cause, and no database file made.
 */
TEST_F_TIMEOUT(scratch, no_module, 60)
{
	const char *path = self->db;
	sqlite3 *db = NULL;

	ASSERT_EQ(SQLITE_OK, sqlite3_config(SQLITE_CONFIG_LOG, log_cb, NULL));
	ASSERT_EQ(0, unshare(CLONE_NEWNS));
	ASSERT_EQ(0, mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL));
	ASSERT_EQ(0, mount("none", "/dev", "tmpfs", 0, NULL));

	EXPECT_EQ(SQLITE_CANTOPEN, sqlite3_open_v2(path, &db,
		  SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
		  hlock_sqlite_register(0) ? NULL : HLOCK_SQLITE_VFS));
	EXPECT_NE(NULL, strstr(log_text, "is the hlock module loaded?"))
		TH_LOG("log: %s", log_text);
	EXPECT_NE(0, access(path, F_OK));
	sqlite3_close(db);

	ASSERT_EQ(0, mknod(HLOCK_DEVICE, S_IFCHR | 0600, makedev(1, 3)));
	log_text[0] = '\0';
	db = NULL;
	EXPECT_EQ(SQLITE_CANTOPEN, sqlite3_open_v2(path, &db,
		  SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, HLOCK_SQLITE_VFS));
	EXPECT_NE(NULL, strstr(log_text, "process-owned lockers"))
		TH_LOG("log: %s", log_text);
	EXPECT_NE(0, access(path, F_OK));
	sqlite3_close(db);
}

TEST_HARNESS_MAIN
