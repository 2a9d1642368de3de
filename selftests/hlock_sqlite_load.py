#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The SQLite VFS "hlock" from Python's sqlite3 module, for
hlock_sqlite_test's python test:

    hlock_sqlite_load.py LSHLOCK DATABASE

loads the extension libhlock_sqlite (found on the library path) into a
connection, opens DATABASE through the VFS, and while a write transaction
is open checks with LSHLOCK that this process holds X on the database's
reserved resource; commits three rows.  Exits 0 when all of that held,
1 with a message otherwise.
"""

import os
import sqlite3
import subprocess
import sys


def main() -> int:
    lshlock, path = sys.argv[1], sys.argv[2]
    loader = sqlite3.connect(":memory:")
    loader.enable_load_extension(True)
    loader.load_extension("libhlock_sqlite")
    loader.close()

    db = sqlite3.connect("file:%s?vfs=hlock" % path, uri=True, timeout=30,
                         isolation_level=None)
    db.execute("CREATE TABLE t(a)")
    st = os.stat(path)
    reserved = "sqlite/%d:%d:%d/reserved" % (os.major(st.st_dev),
                                             os.minor(st.st_dev), st.st_ino)
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT INTO t VALUES(?)", [(1,), (2,), (3,)])
    out = subprocess.run([lshlock, "-r", "-n", "-o", "PID,MODE,RESOURCE"],
                         check=True, capture_output=True, text=True).stdout
    db.execute("COMMIT")
    db.close()
    want = "%d X %s" % (os.getpid(), reserved)
    if want not in out.splitlines():
        print("lshlock shows no line %r:\n%s" % (want, out))
        return 1
    print("python: %s" % want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
