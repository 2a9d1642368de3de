/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * hlock_sqlite: a SQLite VFS named "hlock" whose database locks are
 * hlock's (libhlock_sqlite(3)).  File I/O is the default unix VFS's.
 *
 * Statically linked programs call hlock_sqlite_register() once, then open
 * databases with sqlite3_open_v2(..., "hlock") or a "file:...?vfs=hlock"
 * URI.  The loadable extension (libhlock_sqlite.so) registers the VFS
 * when SQLite loads it.
 */
#ifndef HLOCK_SQLITE_H
#define HLOCK_SQLITE_H

#ifdef __cplusplus
extern "C" {
#endif

/* The name the VFS is registered under. */
#define HLOCK_SQLITE_VFS	"hlock"

/*
 * Register the VFS (once; later calls only make it the default if asked).
 * With @make_default non-zero it becomes SQLite's default VFS.  Returns
 * SQLITE_OK, or SQLite's error code (SQLITE_ERROR when SQLite has no unix
 * VFS to build on).
 */
int hlock_sqlite_register(int make_default);

#ifdef __cplusplus
}
#endif

#endif /* HLOCK_SQLITE_H */
