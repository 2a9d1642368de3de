// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * hlock_sqlite: a SQLite VFS, "hlock", that locks databases through
 * /dev/hlock and leaves everything else to the unix VFS.
 *
 * A main database file is opened by the unix VFS and wrapped: reads,
 * writes, syncs, memory maps and the WAL index's mapping go to the unix
 * file; xLock, xUnlock, xCheckReservedLock and xShmLock are answered by a
 * locker of its own (one open of /dev/hlock per open database, made
 * process-owned so that a connection's death releases its locks before
 * waitpid() returns).  Journals, WAL files and temporary files are the
 * unix VFS's own: SQLite never locks them.
 *
 * The resources.  A database is named by its device and inode, so that
 * every path to one file meets:
 *
 *	sqlite/MAJOR:MINOR:INODE/shared    S: SHARED, X: EXCLUSIVE
 *	sqlite/MAJOR:MINOR:INODE/reserved  X: RESERVED (and PENDING, EXCLUSIVE)
 *	sqlite/MAJOR:MINOR:INODE/shmN      S or X: slot N of xShmLock (WAL)
 *
 * SQLite's states map onto them so:
 *
 *	NONE       nothing
 *	SHARED     S on shared
 *	RESERVED   S on shared, X on reserved
 *	PENDING    S on shared, X on reserved, and the conversion of shared
 *	           to X queued (HLOCK_F_ASYNC): a waiting conversion counts
 *	           among the modes waiting there, so new S requests queue
 *	           behind it while the readers that hold S finish
 *	EXCLUSIVE  X on shared (and X on reserved when reached through it)
 *
 * Where a lock call may wait.  SQLite's pager expects xLock never to block
 * (Debian's libsqlite3 is built without SQLITE_ENABLE_SETLK_TIMEOUT): it
 * avoids deadlocks by failing fast and lets its busy handler sleep and
 * retry where a wait is safe.  Lock by lock:
 *
 *	SHARED from NONE: safe to wait.  The connection holds nothing of
 *	this database, so its wait closes no cycle here.  The S request is
 *	queued and stays queued when xLock returns SQLITE_BUSY; the pager
 *	then calls the busy handler and asks again, or gives up and unlocks
 *	to NONE, which withdraws the request.  New readers queue behind a
 *	writer waiting for EXCLUSIVE, first come first served.
 *
 *	RESERVED from SHARED: never waits (a try).  The connection holds S
 *	on shared, and whoever holds RESERVED will wait for that S to go
 *	before it can commit: waiting here would deadlock.  SQLite knows it,
 *	and returns SQLITE_BUSY without calling the busy handler unless the
 *	transaction is new (BEGIN IMMEDIATE, or a write as its first
 *	statement), in which case it drops SHARED before the busy handler
 *	runs.
 *
 *	EXCLUSIVE from RESERVED: safe to wait, and the wait that matters.
 *	Only the RESERVED holder gets here, and the SHARED holders it waits
 *	for wait for nothing it holds (they only try RESERVED).  The
 *	conversion to X is queued and stays queued across SQLITE_BUSY: that
 *	is PENDING, which keeps new readers off until the writer commits,
 *	as unix's PENDING byte does, but in hlock's FIFO queue.
 *
 *	EXCLUSIVE from SHARED without RESERVED (rolling back a hot journal,
 *	closing the last connection of a WAL database): a try.  The caller
 *	wants to know whether it is alone; queueing would hold off readers
 *	for nothing.  RESERVED is not taken on the way: a reader that saw it
 *	would take the hot journal for a live transaction's.
 *
 *	xShmLock (WAL): tries, as SQLite's WAL code expects; it retries by
 *	itself.  In WAL mode readers never block the writer.
 *
 * How a wait is bounded by the connection's busy timeout.  The busy
 * handler that sqlite3_busy_timeout() (and PRAGMA busy_timeout, and
 * Python's timeout=) installs sleeps through the connection's VFS, this
 * one, and counts its own sleeps against the timeout.  When xLock returns
 * SQLITE_BUSY with a request queued, it notes the locker for the calling
 * thread; the next xSleep waits for that locker to become readable (the
 * request granted, or refused by deadlock detection) for at most the time
 * asked, and returns at the grant.  The waiter keeps its place in the
 * queue between the busy handler's calls, and wakes when the holders
 * leave, not at its next sleep's end.  A custom busy handler that sleeps
 * otherwise (sqlite3_sleep() uses the default VFS) keeps the place in the
 * queue but wakes on its own schedule.
 *
 * The default busy handler does not look at the clock: it counts its
 * calls, and takes each sleep to have lasted what it asked for (1, 2, 5,
 * 10, 15, 20, 25, 25, 25, 50, 50 ms, then 100 ms each, the last one cut
 * to what is left of the timeout).  A sleep that returns at a grant
 * lasted less; a statement that then has to wait again (BEGIN IMMEDIATE
 * queued for SHARED behind writer after writer, and losing the race for
 * RESERVED each time) would give up long before its timeout.  So the
 * thread keeps what the handler counted but did not sleep, and sleeps it
 * in the handler's last sleep, the cut one; a 1 ms sleep, the first of a
 * statement's waits, starts the count again.
 *
 * EDEADLK is SQLITE_BUSY at once: xLock returns it, and the next xSleep
 * of the thread returns without sleeping, so a busy handler that counts
 * its sleeps (the default one) gives up within microseconds unless a
 * retry finds the cycle gone.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <sqlite3ext.h>
#include "hlock.h"
#include "hlock_sqlite.h"

/* The loadable extension reaches SQLite through the routines it is given. */
SQLITE_EXTENSION_INIT1

/* "sqlite/" MAJOR ":" MINOR ":" INODE; then "/reserved" or "/shmN" too. */
#define HL_SQ_BASE_MAX	56
#define HL_SQ_NAME_MAX	(HL_SQ_BASE_MAX + 24)

struct hl_sq_file {
	sqlite3_file base;	/* pMethods: hl_sq_io */
	sqlite3_file *real;	/* the unix VFS's file, after this struct */
	int fd;			/* the locker, -1 once closed */
	int level;		/* SQLITE_LOCK_* held (PENDING: queued) */
	bool queued;		/* an HLOCK_F_ASYNC request waits on shared */
	bool reserved;		/* X held on reserved */
	unsigned char shm[SQLITE_SHM_NLOCK];	/* mode held on each slot */
	char shared[HL_SQ_NAME_MAX];
	char reserved_path[HL_SQ_NAME_MAX];
	char base_path[HL_SQ_BASE_MAX];
};

/* The unix VFS everything but locking goes to. */
static sqlite3_vfs *hl_sq_unix;

/*
 * What the thread's next xSleep waits for: the locker of the request the
 * last xLock left queued, or none (-1); or nothing at all after EDEADLK.
 * A descriptor, not a pointer: a file closed meanwhile leaves a number
 * that poll() at worst returns early on.
 */
static __thread int hl_sq_wake_fd = -1;
static __thread bool hl_sq_deadlock;
/* Microseconds the busy handler counted as slept that were not. */
static __thread long long hl_sq_owed_us;

static void hl_sq_wake_clear(void)
{
	hl_sq_wake_fd = -1;
	hl_sq_deadlock = false;
}

/*
 * A failed lock call as SQLite sees it: SQLITE_BUSY for a conflict (a
 * try that would wait, a request queued) and for EDEADLK, which also
 * tells the next xSleep not to sleep; @ioerr for anything else, logged.
 */
static int hl_sq_busy(struct hl_sq_file *f, int err, int ioerr,
		      const char *what)
{
	switch (err) {
	case -EINPROGRESS:
		hl_sq_wake_fd = f->fd;
		return SQLITE_BUSY;
	case -EAGAIN:
		return SQLITE_BUSY;
	case -EDEADLK:
		hl_sq_deadlock = true;
		return SQLITE_BUSY;
	default:
		sqlite3_log(ioerr, "hlock: %s on %s: %s", what, f->base_path,
			    strerror(-err));
		return ioerr;
	}
}

/* Withdraw the queued request: PENDING goes back to RESERVED. */
static int hl_sq_dequeue(struct hl_sq_file *f)
{
	int ret;

	if (!f->queued)
		return 0;
	/* Also a grant not collected yet: the locker is as before the call. */
	ret = hlock_unlock(f->fd, f->shared);
	if (ret < 0)
		return ret;
	f->queued = false;
	if (f->level == SQLITE_LOCK_PENDING)
		f->level = SQLITE_LOCK_RESERVED;
	return 0;
}

/*
 * Lock shared in @mode: a new S request (from NONE) or the conversion of
 * S to X (from RESERVED), queued when it must wait.  A request queued by
 * an earlier call is collected if granted.
 */
static int hl_sq_queue(struct hl_sq_file *f, int mode, int level)
{
	int ret;

	if (f->queued)
		ret = hlock_wait(f->fd, 0);
	else
		ret = hlock_lock(f->fd, f->shared, mode, HLOCK_F_ASYNC, 0);
	if (ret == -EINPROGRESS || (ret == -EAGAIN && f->queued)) {
		f->queued = true;
		if (level == SQLITE_LOCK_EXCLUSIVE)
			f->level = SQLITE_LOCK_PENDING;
		return hl_sq_busy(f, -EINPROGRESS, 0, NULL);
	}
	/* Granted, or refused: either way nothing waits any more. */
	f->queued = false;
	if (ret < 0) {
		/* A refused conversion leaves S: PENDING is given up. */
		if (f->level == SQLITE_LOCK_PENDING)
			f->level = SQLITE_LOCK_RESERVED;
		return hl_sq_busy(f, ret, SQLITE_IOERR_LOCK, "lock");
	}
	f->level = level;
	return SQLITE_OK;
}

static int hl_sq_lock(sqlite3_file *file, int level)
{
	struct hl_sq_file *f = (struct hl_sq_file *)file;
	int ret;

	hl_sq_wake_clear();
	if (f->level >= level)
		return SQLITE_OK;
	switch (level) {
	case SQLITE_LOCK_SHARED:
		/* Nothing held: a wait here closes no cycle. */
		return hl_sq_queue(f, HLOCK_S, level);
	case SQLITE_LOCK_RESERVED:
		/* Holding S, which the RESERVED holder waits for: try only. */
		ret = hlock_lock(f->fd, f->reserved_path, HLOCK_X, 0, 0);
		if (ret < 0)
			return hl_sq_busy(f, ret, SQLITE_IOERR_LOCK, "lock");
		f->reserved = true;
		f->level = SQLITE_LOCK_RESERVED;
		return SQLITE_OK;
	case SQLITE_LOCK_EXCLUSIVE:
		/* The one writer waits for the readers, holding new ones off. */
		if (f->reserved)
			return hl_sq_queue(f, HLOCK_X, level);
		/* Hot journal, WAL close: is anybody else here? */
		ret = hlock_lock(f->fd, f->shared, HLOCK_X, 0, 0);
		if (ret < 0)
			return hl_sq_busy(f, ret, SQLITE_IOERR_LOCK, "lock");
		f->level = SQLITE_LOCK_EXCLUSIVE;
		return SQLITE_OK;
	default:
		/* SQLite never asks for PENDING itself. */
		return SQLITE_MISUSE;
	}
}

static int hl_sq_unlock(sqlite3_file *file, int level)
{
	struct hl_sq_file *f = (struct hl_sq_file *)file;
	int ret = 0;

	hl_sq_wake_clear();
	if (level != SQLITE_LOCK_NONE && level != SQLITE_LOCK_SHARED)
		return SQLITE_MISUSE;
	if (f->queued)
		ret = hl_sq_dequeue(f);
	if (!ret && f->level == SQLITE_LOCK_EXCLUSIVE) {
		/*
		 * From EXCLUSIVE back to one acquisition of S (the conversion
		 * made a second one), or to none below.
		 */
		ret = hlock_downgrade(f->fd, f->shared, HLOCK_S);
		if (!ret)
			ret = hlock_unlock(f->fd, f->shared);
		if (ret > 0)
			ret = 0;
		if (!ret)
			f->level = SQLITE_LOCK_SHARED;
	}
	if (!ret && f->reserved) {
		ret = hlock_unlock(f->fd, f->reserved_path);
		if (!ret) {
			f->reserved = false;
			f->level = SQLITE_LOCK_SHARED;
		}
	}
	if (!ret && level == SQLITE_LOCK_NONE &&
	    f->level == SQLITE_LOCK_SHARED) {
		ret = hlock_unlock(f->fd, f->shared);
		if (!ret)
			f->level = SQLITE_LOCK_NONE;
	}
	if (ret < 0) {
		sqlite3_log(SQLITE_IOERR_UNLOCK, "hlock: unlock on %s: %s",
			    f->base_path, strerror(-ret));
		return SQLITE_IOERR_UNLOCK;
	}
	return SQLITE_OK;
}

/*
 * Whether any connection holds RESERVED, PENDING or EXCLUSIVE: this one
 * by its state, another by the X on reserved that a try of S meets.  An
 * EXCLUSIVE taken without RESERVED (a hot journal's rollback) holds X on
 * shared, which no caller can meet: SQLite asks while holding SHARED.
 */
static int hl_sq_check_reserved(sqlite3_file *file, int *out)
{
	struct hl_sq_file *f = (struct hl_sq_file *)file;
	int ret;

	*out = 0;
	if (f->level >= SQLITE_LOCK_RESERVED) {
		*out = 1;
		return SQLITE_OK;
	}
	ret = hlock_lock(f->fd, f->reserved_path, HLOCK_S, 0, 0);
	if (ret == -EAGAIN) {
		*out = 1;
		return SQLITE_OK;
	}
	if (!ret)
		ret = hlock_unlock(f->fd, f->reserved_path);
	if (ret < 0) {
		sqlite3_log(SQLITE_IOERR_CHECKRESERVEDLOCK,
			    "hlock: reserved lock probe on %s: %s",
			    f->base_path, strerror(-ret));
		return SQLITE_IOERR_CHECKRESERVEDLOCK;
	}
	return SQLITE_OK;
}

static void hl_sq_shm_path(const struct hl_sq_file *f, int slot, char *buf,
			   size_t size)
{
	snprintf(buf, size, "%s/shm%d", f->base_path, slot);
}

/*
 * The WAL index's locks: slot by slot, each a try; a slot that cannot be
 * had gives back those this call took.
 */
static int hl_sq_shm_lock(sqlite3_file *file, int ofst, int n, int flags)
{
	struct hl_sq_file *f = (struct hl_sq_file *)file;
	int mode = flags & SQLITE_SHM_EXCLUSIVE ? HLOCK_X : HLOCK_S;
	char path[HL_SQ_NAME_MAX];
	unsigned int taken = 0;
	int i, ret = 0;

	if (ofst < 0 || n < 1 || ofst + n > SQLITE_SHM_NLOCK)
		return SQLITE_MISUSE;
	if (flags & SQLITE_SHM_UNLOCK) {
		for (i = ofst; i < ofst + n; i++) {
			if (f->shm[i] == HLOCK_NL)
				continue;
			hl_sq_shm_path(f, i, path, sizeof(path));
			ret = hlock_unlock(f->fd, path);
			if (ret < 0)
				break;
			f->shm[i] = HLOCK_NL;
		}
		if (ret < 0) {
			sqlite3_log(SQLITE_IOERR_SHMLOCK,
				    "hlock: shm unlock on %s: %s",
				    f->base_path, strerror(-ret));
			return SQLITE_IOERR_SHMLOCK;
		}
		return SQLITE_OK;
	}
	for (i = ofst; i < ofst + n; i++) {
		if (f->shm[i] == mode)
			continue;
		if (f->shm[i] != HLOCK_NL) {
			/* SQLite unlocks a slot before it locks it otherwise. */
			ret = -EINVAL;
			break;
		}
		hl_sq_shm_path(f, i, path, sizeof(path));
		ret = hlock_lock(f->fd, path, mode, 0, 0);
		if (ret < 0)
			break;
		f->shm[i] = (unsigned char)mode;
		taken |= 1U << i;
	}
	if (ret >= 0)
		return SQLITE_OK;
	while (i-- > ofst) {
		if (!(taken & (1U << i)))
			continue;
		hl_sq_shm_path(f, i, path, sizeof(path));
		if (hlock_unlock(f->fd, path) >= 0)
			f->shm[i] = HLOCK_NL;
	}
	return hl_sq_busy(f, ret, SQLITE_IOERR_SHMLOCK, "shm lock");
}

static int hl_sq_close(sqlite3_file *file)
{
	struct hl_sq_file *f = (struct hl_sq_file *)file;
	int rc = SQLITE_OK;

	/* The last close of the locker releases whatever it holds. */
	if (f->fd >= 0) {
		if (hl_sq_wake_fd == f->fd)
			hl_sq_wake_clear();
		close(f->fd);
		f->fd = -1;
	}
	if (f->real->pMethods)
		rc = f->real->pMethods->xClose(f->real);
	return rc;
}

/* Everything else is the unix file's. */
static int hl_sq_read(sqlite3_file *file, void *buf, int amt,
		      sqlite3_int64 ofst)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xRead(r, buf, amt, ofst);
}

static int hl_sq_write(sqlite3_file *file, const void *buf, int amt,
		       sqlite3_int64 ofst)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xWrite(r, buf, amt, ofst);
}

static int hl_sq_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xTruncate(r, size);
}

static int hl_sq_sync(sqlite3_file *file, int flags)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xSync(r, flags);
}

static int hl_sq_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xFileSize(r, size);
}

/*
 * SQLITE_FCNTL_VFSNAME names the stack, this shim first ("hlock/unix");
 * SQLITE_FCNTL_LOCKSTATE is ours to answer; the rest is the unix file's.
 */
static int hl_sq_file_control(sqlite3_file *file, int op, void *arg)
{
	struct hl_sq_file *f = (struct hl_sq_file *)file;
	int rc;

	switch (op) {
	case SQLITE_FCNTL_LOCKSTATE:
		*(int *)arg = f->level;
		return SQLITE_OK;
	case SQLITE_FCNTL_VFSNAME:
		rc = f->real->pMethods->xFileControl(f->real, op, arg);
		if (rc == SQLITE_OK) {
			char *below = *(char **)arg;

			*(char **)arg = sqlite3_mprintf("%s/%s",
							HLOCK_SQLITE_VFS,
							below);
			sqlite3_free(below);
			if (!*(char **)arg)
				return SQLITE_NOMEM;
		}
		return rc;
	default:
		return f->real->pMethods->xFileControl(f->real, op, arg);
	}
}

static int hl_sq_sector_size(sqlite3_file *file)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xSectorSize(r);
}

static int hl_sq_device_characteristics(sqlite3_file *file)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xDeviceCharacteristics(r);
}

static int hl_sq_shm_map(sqlite3_file *file, int region, int size,
			 int extend, void volatile **pp)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xShmMap(r, region, size, extend, pp);
}

static void hl_sq_shm_barrier(sqlite3_file *file)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	r->pMethods->xShmBarrier(r);
}

static int hl_sq_shm_unmap(sqlite3_file *file, int delete_flag)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xShmUnmap(r, delete_flag);
}

static int hl_sq_fetch(sqlite3_file *file, sqlite3_int64 ofst, int amt,
		       void **pp)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xFetch(r, ofst, amt, pp);
}

static int hl_sq_unfetch(sqlite3_file *file, sqlite3_int64 ofst, void *p)
{
	sqlite3_file *r = ((struct hl_sq_file *)file)->real;

	return r->pMethods->xUnfetch(r, ofst, p);
}

static const sqlite3_io_methods hl_sq_io = {
	.iVersion = 3,
	.xClose = hl_sq_close,
	.xRead = hl_sq_read,
	.xWrite = hl_sq_write,
	.xTruncate = hl_sq_truncate,
	.xSync = hl_sq_sync,
	.xFileSize = hl_sq_file_size,
	.xLock = hl_sq_lock,
	.xUnlock = hl_sq_unlock,
	.xCheckReservedLock = hl_sq_check_reserved,
	.xFileControl = hl_sq_file_control,
	.xSectorSize = hl_sq_sector_size,
	.xDeviceCharacteristics = hl_sq_device_characteristics,
	.xShmMap = hl_sq_shm_map,
	.xShmLock = hl_sq_shm_lock,
	.xShmBarrier = hl_sq_shm_barrier,
	.xShmUnmap = hl_sq_shm_unmap,
	.xFetch = hl_sq_fetch,
	.xUnfetch = hl_sq_unfetch,
};

/*
 * The locker of a main database file: process-owned, described by the
 * file's name for lshlock's WHY column.  Opened before the file, so that
 * a missing module creates no empty database.  Returns it, or -1.
 */
static int hl_sq_locker(const char *name)
{
	size_t len = strlen(name);
	char why[HLOCK_WHY_LEN];
	int fd, ret;

	fd = hlock_open();
	if (fd < 0) {
		sqlite3_log(SQLITE_CANTOPEN,
			    "hlock: cannot open %s for %s: %s%s", HLOCK_DEVICE,
			    name, strerror(-fd),
			    fd == -ENOENT ? " (is the hlock module loaded?)" :
			    "");
		return -1;
	}
	ret = hlock_owner(fd, HLOCK_OWNER_PROCESS);
	if (ret < 0) {
		sqlite3_log(SQLITE_CANTOPEN,
			    "hlock: %s: process-owned lockers: %s (a module older than HLOCK_FEAT_OWNER?)",
			    HLOCK_DEVICE, strerror(-ret));
		close(fd);
		return -1;
	}
	/* The tail of the name, which tells databases apart best. */
	snprintf(why, sizeof(why), "sqlite %s",
		 len > sizeof(why) - 8 ? name + len - (sizeof(why) - 8) : name);
	/* Only a description: a module without it locks all the same. */
	hlock_describe(fd, why);
	return fd;
}

/* The resources' names, from the open file's device and inode. */
static int hl_sq_names(struct hl_sq_file *f, const char *name)
{
	struct stat st;

	if (stat(name, &st)) {
		sqlite3_log(SQLITE_CANTOPEN, "hlock: stat %s: %s", name,
			    strerror(errno));
		return SQLITE_CANTOPEN;
	}
	snprintf(f->base_path, sizeof(f->base_path), "sqlite/%u:%u:%llu",
		 major(st.st_dev), minor(st.st_dev),
		 (unsigned long long)st.st_ino);
	snprintf(f->shared, sizeof(f->shared), "%s/shared", f->base_path);
	snprintf(f->reserved_path, sizeof(f->reserved_path), "%s/reserved",
		 f->base_path);
	return SQLITE_OK;
}

static int hl_sq_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file,
		      int flags, int *out_flags)
{
	struct hl_sq_file *f = (struct hl_sq_file *)file;
	int rc;

	(void)vfs;
	/* Journals, WAL files and temporary files: unix's, unwrapped. */
	if (!(flags & SQLITE_OPEN_MAIN_DB) || !name)
		return hl_sq_unix->xOpen(hl_sq_unix, name, file, flags,
					 out_flags);
	memset(f, 0, sizeof(*f));
	f->real = (sqlite3_file *)(f + 1);
	f->fd = hl_sq_locker(name);
	if (f->fd < 0)
		return SQLITE_CANTOPEN;
	rc = hl_sq_unix->xOpen(hl_sq_unix, name, f->real, flags, out_flags);
	if (rc == SQLITE_OK) {
		rc = hl_sq_names(f, name);
		if (rc != SQLITE_OK)
			f->real->pMethods->xClose(f->real);
	}
	if (rc != SQLITE_OK) {
		close(f->fd);
		return rc;
	}
	f->base.pMethods = &hl_sq_io;
	return SQLITE_OK;
}

static long long hl_sq_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Whether @us is one of the default busy handler's uncut sleeps. */
static bool hl_sq_whole_sleep(int us)
{
	static const int ms[] = { 1, 2, 5, 10, 15, 20, 25, 50, 100 };
	size_t i;

	for (i = 0; i < sizeof(ms) / sizeof(ms[0]); i++)
		if (us == ms[i] * 1000)
			return true;
	return false;
}

/*
 * The busy handler's sleep: a wait for the request the thread's last
 * xLock left queued, which returns at its grant; none after EDEADLK.
 * What a wait cut short owes is slept in the handler's last sleep.
 */
static int hl_sq_sleep(sqlite3_vfs *vfs, int us)
{
	struct pollfd p = { .fd = hl_sq_wake_fd, .events = POLLIN };
	bool deadlock = hl_sq_deadlock;
	long long want = us, start;

	(void)vfs;
	hl_sq_wake_clear();
	if (deadlock)
		return 0;
	if (us == 1000) {
		hl_sq_owed_us = 0;
	} else if (!hl_sq_whole_sleep(us)) {
		want += hl_sq_owed_us;
		hl_sq_owed_us = 0;
	}
	if (want > INT_MAX)
		want = INT_MAX;
	if (p.fd < 0) {
		hl_sq_unix->xSleep(hl_sq_unix, (int)want);
		return us;
	}
	start = hl_sq_now_us();
	poll(&p, 1, (int)((want + 999) / 1000));
	/* A grant: the handler counts the rest of this sleep as slept. */
	want -= hl_sq_now_us() - start;
	if (want > 0)
		hl_sq_owed_us += want;
	return us;
}

/* The rest of the VFS is unix's, called with unix's own sqlite3_vfs. */
static int hl_sq_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	return hl_sq_unix->xDelete(hl_sq_unix, name, sync_dir);
}

static int hl_sq_access(sqlite3_vfs *vfs, const char *name, int flags,
			int *out)
{
	(void)vfs;
	return hl_sq_unix->xAccess(hl_sq_unix, name, flags, out);
}

static int hl_sq_full_pathname(sqlite3_vfs *vfs, const char *name, int n,
			       char *out)
{
	(void)vfs;
	return hl_sq_unix->xFullPathname(hl_sq_unix, name, n, out);
}

static void *hl_sq_dl_open(sqlite3_vfs *vfs, const char *name)
{
	(void)vfs;
	return hl_sq_unix->xDlOpen(hl_sq_unix, name);
}

static void hl_sq_dl_error(sqlite3_vfs *vfs, int n, char *msg)
{
	(void)vfs;
	hl_sq_unix->xDlError(hl_sq_unix, n, msg);
}

static void (*hl_sq_dl_sym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	(void)vfs;
	return hl_sq_unix->xDlSym(hl_sq_unix, h, sym);
}

static void hl_sq_dl_close(sqlite3_vfs *vfs, void *h)
{
	(void)vfs;
	hl_sq_unix->xDlClose(hl_sq_unix, h);
}

static int hl_sq_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return hl_sq_unix->xRandomness(hl_sq_unix, n, out);
}

static int hl_sq_current_time(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return hl_sq_unix->xCurrentTime(hl_sq_unix, out);
}

static int hl_sq_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return hl_sq_unix->xGetLastError(hl_sq_unix, n, out);
}

static int hl_sq_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	return hl_sq_unix->xCurrentTimeInt64(hl_sq_unix, out);
}

static sqlite3_vfs hl_sq_vfs = {
	.iVersion = 2,
	.zName = HLOCK_SQLITE_VFS,
	.xOpen = hl_sq_open,
	.xDelete = hl_sq_delete,
	.xAccess = hl_sq_access,
	.xFullPathname = hl_sq_full_pathname,
	.xDlOpen = hl_sq_dl_open,
	.xDlError = hl_sq_dl_error,
	.xDlSym = hl_sq_dl_sym,
	.xDlClose = hl_sq_dl_close,
	.xRandomness = hl_sq_randomness,
	.xSleep = hl_sq_sleep,
	.xCurrentTime = hl_sq_current_time,
	.xGetLastError = hl_sq_last_error,
	.xCurrentTimeInt64 = hl_sq_current_time64,
};

static pthread_once_t hl_sq_once = PTHREAD_ONCE_INIT;
static int hl_sq_registered = SQLITE_ERROR;

static void hl_sq_init(void)
{
	sqlite3_vfs *unix_vfs = sqlite3_vfs_find("unix");

	if (!unix_vfs || unix_vfs->iVersion < 2) {
		sqlite3_log(SQLITE_ERROR, "hlock: SQLite has no unix VFS");
		return;
	}
	hl_sq_unix = unix_vfs;
	hl_sq_vfs.szOsFile = (int)sizeof(struct hl_sq_file) +
			     unix_vfs->szOsFile;
	hl_sq_vfs.mxPathname = unix_vfs->mxPathname;
	hl_sq_registered = sqlite3_vfs_register(&hl_sq_vfs, 0);
}

int hlock_sqlite_register(int make_default)
{
	pthread_once(&hl_sq_once, hl_sq_init);
	if (hl_sq_registered != SQLITE_OK || !make_default)
		return hl_sq_registered;
	return sqlite3_vfs_register(&hl_sq_vfs, 1);
}

#ifndef SQLITE_CORE
/*
 * The loadable extension's entry point, the name SQLite derives from
 * libhlock_sqlite.so: the VFS outlives the connection that loaded it.
 */
__attribute__((visibility("default")))
int sqlite3_hlocksqlite_init(sqlite3 *db, char **err,
			     const sqlite3_api_routines *api)
{
	int rc;

	(void)db;
	SQLITE_EXTENSION_INIT2(api);
	rc = hlock_sqlite_register(0);
	if (rc != SQLITE_OK) {
		*err = sqlite3_mprintf("hlock: cannot register the VFS: %s",
				       sqlite3_errstr(rc));
		return rc;
	}
	return SQLITE_OK_LOAD_PERMANENTLY;
}
#endif
