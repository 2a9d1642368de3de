# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Hierarchical locks for processes through /dev/hlock.

hlock gives processes MongoDB-style hierarchical (multi-granularity)
locks: resources form a tree named by paths ("" the root, "db",
"db/coll", ...), locking a path in S or X takes the intents IS or IX on
its ancestors, and every resource keeps a FIFO queue.  A locker is an
open file of /dev/hlock; closing it, or the death of the last process
that has it open, releases everything it holds.

    import hlock

    with hlock.Locker() as locker:
        with locker.lock("db/coll", "X", timeout=1.5):
            ...                         # db/coll held in X, db in IX

This module is a thin layer over libhlock.so.1 (libhlock(3)) through
ctypes.  Errors are OSError: the usual subclasses where Python has one
(BlockingIOError for a try that would wait, TimeoutError, PermissionError,
FileNotFoundError for nothing held on the path...), DeadlockError for
EDEADLK and HlockError for the other errnos of hlock.  Bad arguments (an
unknown mode, a malformed path) raise ValueError or TypeError before any
call.  A blocking call interrupted by a signal whose handler does not
raise is made again (PEP 475), with what is left of its timeout.

The semantics (modes, intents, queues, recursion, asynchronous requests)
are described in Documentation/userspace-api/hlock.rst and hlock(4);
the calls in libhlock(3).
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import enum
import errno
import math
import os
import struct
import threading
import time
from typing import Dict, List, Optional, Tuple, Union

__all__ = [
    "DEVICE", "MAX_DEPTH", "NAME_MAX", "PATH_MAX", "LVB_LEN",
    "Mode", "State", "Level", "Policy",
    "HlockError", "DeadlockError",
    "Locker", "Lock", "Record", "Stats", "LevelStats", "TicketStats",
    "Info", "check_path",
]

#: The device node a Locker opens by default.
DEVICE = "/dev/hlock"
#: Levels below the root a path may have.
MAX_DEPTH = 8
#: Bytes in one component of a path.
NAME_MAX = 255
#: Bytes in a whole path.
PATH_MAX = MAX_DEPTH * (NAME_MAX + 1) - 1
#: Bytes of a lock value block.
LVB_LEN = 32

# uapi/linux/hlock.h
_F_FRONT = 1 << 0
_F_COMPAT_FIRST = 1 << 1
_F_ASYNC = 1 << 2
_STATS_GLOBAL = 0
_STATS_LOCKER = 1
_NR_MODES = 6
_NR_LEVELS = 4
_MAX_BLOCKERS = 8
_REC_LEASE = 1 << 0
_REC_CLUSTER = 1 << 2
# struct hlock_lock_record and struct hlock_record_ext.
_RECORD = struct.Struct("<6I2Q2I%dI16s" % _MAX_BLOCKERS)
_RECORD_EXT = struct.Struct("<QqII64s")


class Mode(enum.IntEnum):
    """Lock modes, Gray's multi-granularity modes (HLOCK_NL...HLOCK_X)."""

    NL = 0   #: no lock (what held() returns for nothing held)
    IS = 1   #: intent shared: something below is read
    IX = 2   #: intent exclusive: something below is written
    S = 3    #: shared: the resource and its subtree are read
    SIX = 4  #: S and IX at once
    X = 5    #: exclusive: the resource and its subtree are owned

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, mode: ModeLike) -> "Mode":
        """Return the Mode that *mode* names.

        *mode* is a Mode, its value (0 to 5) or its name in any case
        ("x", "SIX").  Anything else raises ValueError (TypeError for a
        value of another type).
        """
        if isinstance(mode, Mode):
            return mode
        if isinstance(mode, str):
            try:
                return cls[mode.strip().upper()]
            except KeyError:
                raise ValueError(
                    "hlock: unknown lock mode %r: use one of IS, IX, S, "
                    "SIX, X" % (mode,)) from None
        if isinstance(mode, int) and not isinstance(mode, bool):
            try:
                return cls(mode)
            except ValueError:
                raise ValueError(
                    "hlock: lock mode %d out of range: modes are 0 (NL) "
                    "to 5 (X)" % mode) from None
        raise TypeError("hlock: a lock mode is a str, an int or a Mode, "
                        "not %s" % type(mode).__name__)


ModeLike = Union[Mode, str, int]
PathLike = Union[str, bytes]


class State(enum.IntEnum):
    """States of a request in the lock table (HLOCK_STATE_*)."""

    GRANTED = 0
    WAITING = 1
    CONVERTING = 2

    def __str__(self) -> str:
        return self.name.lower()


class Level(enum.IntEnum):
    """Levels of the statistics: a resource's depth (HLOCK_LEVEL_*)."""

    GLOBAL = 0
    DATABASE = 1
    COLLECTION = 2
    OBJECT = 3  #: and every deeper level


class Policy(enum.IntEnum):
    """Grant policies (the module parameter grant_policy)."""

    BATCH = 0
    FIFO = 1


class HlockError(OSError):
    """An error of hlock that no built-in OSError subclass stands for
    (EBUSY, ENOLCK, EOVERFLOW, ESTALE, ENOLINK, EINVAL, ...)."""


class DeadlockError(HlockError):
    """EDEADLK: the wait would have closed a cycle of waiting lockers;
    the locker is as it was before the call."""


# Why an errno happened, by call, where strerror alone is unclear.
_HINTS: Dict[Tuple[str, int], str] = {
    ("lock", errno.EAGAIN): "held in a conflicting mode",
    ("lock", errno.ETIMEDOUT): "the timeout passed",
    ("lock", errno.EBUSY): "another lock call of this locker is in "
                           "flight or not collected",
    ("lock", errno.EPERM): "front and compat_first need CAP_SYS_NICE",
    ("lock", errno.ENOLCK): "more resources than max_locks_per_locker",
    ("lock", errno.EDEADLK): "the wait would close a cycle",
    ("lock", errno.ENOLINK): "this node lost its cluster",
    ("unlock", errno.ENOENT): "nothing acquired or queued on the path",
    ("unlock", errno.EBUSY): "the path is on the path of a lock call "
                             "in flight",
    ("unlock", errno.ESTALE): "the lease on the path was taken over",
    ("downgrade", errno.ENOENT): "nothing held on the path",
    ("downgrade", errno.EINVAL): "the mode held does not cover it, or it "
                                 "does not cover what is held below",
    ("wait", errno.EAGAIN): "not granted yet",
    ("wait", errno.ETIMEDOUT): "the timeout passed; still queued",
    ("wait", errno.ENOENT): "no request pending, or it was cancelled",
    ("wait", errno.EDEADLK): "the wait would close a cycle; withdrawn",
    ("token", errno.ENOENT): "nothing held on the path",
    ("lvb", errno.ENOENT): "nothing held on the path",
    ("lvb", errno.EACCES): "the mode held is too weak",
}


# Where the C library's text speaks of something else.
_STRERROR = {errno.ETIMEDOUT: "Timed out"}


def _error(err: int, call: str, path: Optional[bytes] = None) -> OSError:
    """The exception for errno *err* of *call* on *path*."""
    msg = _STRERROR.get(err) or os.strerror(err)
    hint = _HINTS.get((call, err))
    msg = "hlock %s: %s" % (call, msg) + (" (%s)" % hint if hint else "")
    name = None if path is None else os.fsdecode(path) if path else '""'
    if err == errno.EDEADLK:
        return DeadlockError(err, msg, name)
    exc = OSError(err, msg, name)
    if type(exc) is OSError:
        return HlockError(err, msg, name)
    return exc


def check_path(path: PathLike) -> bytes:
    """Return *path* as the bytes hlock takes, or raise ValueError.

    A path is "" (the root) or 1 to MAX_DEPTH components separated by
    single '/', each 1 to NAME_MAX bytes, none of them NUL: "db",
    "db/coll".  A str is encoded as UTF-8 (surrogateescape, so that the
    paths of table() come back as they were).
    """
    if isinstance(path, str):
        raw = path.encode("utf-8", "surrogateescape")
    elif isinstance(path, (bytes, bytearray, memoryview)):
        raw = bytes(path)
    else:
        raise TypeError("hlock: a resource path is a str or bytes, not %s"
                        % type(path).__name__)
    if not raw:
        return raw

    def bad(why: str) -> ValueError:
        shown = repr(path)
        if len(shown) > 60:
            shown = shown[:40] + "..." + shown[-12:]
        return ValueError("hlock: invalid resource path %s: %s"
                          % (shown, why))

    if b"\0" in raw:
        raise bad("it contains a NUL byte")
    if raw.startswith(b"/"):
        raise bad("it starts with '/'; paths are relative to the root "
                  "(write %r)" % raw.strip(b"/").decode("utf-8", "replace"))
    if raw.endswith(b"/"):
        raise bad("it ends with '/' (write %r)"
                  % raw.rstrip(b"/").decode("utf-8", "replace"))
    parts = raw.split(b"/")
    if b"" in parts:
        raise bad("it has an empty component ('//')")
    for part in parts:
        if len(part) > NAME_MAX:
            raise bad("a component is %d bytes long, more than %d"
                      % (len(part), NAME_MAX))
    if len(parts) > MAX_DEPTH:
        raise bad("it is %d levels deep, more than %d"
                  % (len(parts), MAX_DEPTH))
    return raw


def _lock_mode(mode: ModeLike) -> Mode:
    m = Mode.parse(mode)
    if m == Mode.NL:
        raise ValueError("hlock: mode NL cannot be locked: use one of IS, "
                         "IX, S, SIX, X")
    return m


_NS = 1000000000
_NS_MAX = (1 << 63) - 1


def _timeout_ns(timeout: Optional[float], blocking: bool) -> int:
    """The kernel's timeout: -1 forever, 0 a try, else nanoseconds."""
    if not blocking:
        if timeout is not None:
            raise ValueError("hlock: a timeout makes no sense with "
                             "blocking=False")
        return 0
    if timeout is None:
        return -1
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError("hlock: a timeout is a number of seconds, not %s"
                        % type(timeout).__name__)
    if math.isnan(timeout) or timeout < 0:
        raise ValueError("hlock: timeout %r: want seconds >= 0 (None "
                         "waits forever)" % (timeout,))
    if math.isinf(timeout) or timeout * _NS >= _NS_MAX:
        return -1
    ns = int(timeout * _NS)
    # A positive timeout shorter than a nanosecond is not a try.
    return ns if ns or not timeout else 1


# --- libhlock.so.1 -----------------------------------------------------------

_c_int64 = ctypes.c_int64
_c_char_p = ctypes.c_char_p


class _Info(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32),
                ("max_depth", ctypes.c_uint32),
                ("name_max", ctypes.c_uint32),
                ("path_max", ctypes.c_uint32),
                ("flags", ctypes.c_uint32),
                ("grant_policy", ctypes.c_uint32),
                ("features", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64 * 3)]


class _LevelStats(ctypes.Structure):
    _fields_ = [("acquire_count", ctypes.c_uint64 * _NR_MODES),
                ("wait_count", ctypes.c_uint64 * _NR_MODES),
                ("wait_time_ns", ctypes.c_uint64 * _NR_MODES)]


class _TicketStats(ctypes.Structure):
    _fields_ = [("out", ctypes.c_uint64),
                ("available", ctypes.c_uint64),
                ("total", ctypes.c_uint64),
                ("waiting", ctypes.c_uint64)]


class _Stats(ctypes.Structure):
    _fields_ = [("level", _LevelStats * _NR_LEVELS),
                ("timeouts", ctypes.c_uint64),
                ("interrupts", ctypes.c_uint64),
                ("cancels", ctypes.c_uint64),
                ("deadlocks", ctypes.c_uint64),
                ("takeovers", ctypes.c_uint64),
                ("yields", ctypes.c_uint64),
                ("tickets", _TicketStats * 2)]


_PROTOTYPES = {
    "hlock_lock_lease": [ctypes.c_int, _c_char_p, ctypes.c_int,
                         ctypes.c_uint, _c_int64, _c_int64],
    "hlock_wait": [ctypes.c_int, _c_int64],
    "hlock_unlock": [ctypes.c_int, _c_char_p],
    "hlock_downgrade": [ctypes.c_int, _c_char_p, ctypes.c_int],
    "hlock_held": [ctypes.c_int, _c_char_p],
    "hlock_info": [ctypes.c_int, ctypes.POINTER(_Info)],
    "hlock_stats": [ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_Stats)],
    "hlock_table": [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                    ctypes.POINTER(ctypes.c_size_t)],
    "hlock_renew": [ctypes.c_int],
    "hlock_token": [ctypes.c_int, _c_char_p,
                    ctypes.POINTER(ctypes.c_uint64)],
    "hlock_describe": [ctypes.c_int, _c_char_p],
    "hlock_lvb_get": [ctypes.c_int, _c_char_p, ctypes.c_void_p],
    "hlock_lvb_set": [ctypes.c_int, _c_char_p, ctypes.c_void_p],
}

_lib_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def _libhlock() -> ctypes.CDLL:
    """libhlock.so.1 ($HLOCK_LIBHLOCK names another file), loaded once."""
    global _lib
    with _lib_lock:
        if _lib is None:
            name = os.environ.get("HLOCK_LIBHLOCK") or "libhlock.so.1"
            try:
                lib = ctypes.CDLL(name)
            except OSError as e:
                raise ImportError("hlock: cannot load %s (install libhlock1):"
                                  " %s" % (name, e)) from None
            for fn, args in _PROTOTYPES.items():
                f = getattr(lib, fn)
                f.argtypes = args
                f.restype = ctypes.c_int
            _lib = lib
        return _lib


def _check_signals() -> None:
    """Run the Python signal handlers now (they raise if they want the
    call to end)."""
    api = getattr(ctypes, "pythonapi", None)
    if api is not None:
        api.PyErr_CheckSignals()


class _Deadline:
    """What is left of a timeout across calls made again after EINTR."""

    def __init__(self, ns: int) -> None:
        self.ns = ns
        self.end = time.monotonic_ns() + ns if ns > 0 else 0

    def left(self) -> int:
        if self.ns <= 0:
            return self.ns
        # Still a wait, not a try, once it passed: the call says
        # ETIMEDOUT then.
        return max(1, self.end - time.monotonic_ns())


# --- Results -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Info:
    """What the running module supports (HLOCK_IOC_GET_INFO)."""

    abi_version: int
    max_depth: int
    name_max: int
    path_max: int
    flags: int
    grant_policy: Policy
    features: int


@dataclasses.dataclass(frozen=True)
class Record:
    """One request of the lock table (struct hlock_lock_record)."""

    path: str              #: the resource ("" the root)
    pid: int               #: the process of the locker's last lock call
    mode: Mode             #: held, or asked for while waiting
    convert_mode: Mode     #: target of a conversion, else NL
    state: State
    wait_ns: int           #: how long it has waited, else 0
    held_ns: int           #: how long it has been held, else 0
    nr_blockers: int       #: how many requests block it
    blockers: Tuple[int, ...]  #: pids of the first blockers, holders first
    comm: str              #: command name of pid
    token: int = 0         #: fencing token of the grant, else 0
    lease_ns: Optional[int] = None  #: time left on a lease, else None
    flags: int = 0         #: HLOCK_REC_* bits
    node_mode: Optional[Mode] = None  #: the node's DLM mode (cluster)
    why: str = ""          #: the locker's description


@dataclasses.dataclass(frozen=True)
class LevelStats:
    """Counters of one level, each a tuple indexed by Mode."""

    acquire_count: Tuple[int, ...]
    wait_count: Tuple[int, ...]
    wait_time_ns: Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class TicketStats:
    """One ticket pool (MongoDB's concurrentTransactions)."""

    out: int
    available: int
    total: int
    waiting: int


@dataclasses.dataclass(frozen=True)
class Stats:
    """Lock statistics (struct hlock_stats); levels indexed by Level,
    tickets by 0 (read) and 1 (write)."""

    levels: Tuple[LevelStats, ...]
    timeouts: int
    interrupts: int
    cancels: int
    deadlocks: int
    takeovers: int
    yields: int
    tickets: Tuple[TicketStats, ...]


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _records(buf: bytes, count: int) -> List[Record]:
    out = []
    off = 0
    for _ in range(count):
        f = _RECORD.unpack_from(buf, off)
        rec_len, path_len, pid, mode, convert_mode, state = f[:6]
        wait_ns, held_ns, nr_blockers = f[6], f[7], f[8]
        blockers = tuple(b for b in f[10:10 + _MAX_BLOCKERS] if b)
        start = off + _RECORD.size
        path = buf[start:start + path_len].decode("utf-8", "surrogateescape")
        extra: Dict[str, object] = {}
        ext_off = _RECORD.size + ((path_len + 8) & ~7)
        if rec_len >= ext_off + _RECORD_EXT.size:
            token, lease_ns, flags, node_mode, why = \
                _RECORD_EXT.unpack_from(buf, off + ext_off)
            extra = {
                "token": token,
                "lease_ns": lease_ns if flags & _REC_LEASE else None,
                "flags": flags,
                "node_mode": (Mode(node_mode) if flags & _REC_CLUSTER
                              else None),
                "why": _text(why),
            }
        out.append(Record(path=path, pid=pid, mode=Mode(mode),
                          convert_mode=Mode(convert_mode),
                          state=State(state), wait_ns=wait_ns,
                          held_ns=held_ns, nr_blockers=nr_blockers,
                          blockers=blockers, comm=_text(f[-1]),
                          **extra))  # type: ignore[arg-type]
        if rec_len < _RECORD.size:
            break
        off += rec_len
    return out


# --- Lockers and locks -------------------------------------------------------


class Lock:
    """One acquisition of a path by a Locker, as lock() returns it.

    A context manager: leaving the with block unlocks it, unless unlock()
    did already.  A lock call on a path already held adds an acquisition
    (recursion); each Lock releases the one it made.
    """

    __slots__ = ("locker", "path", "mode", "_released")

    def __init__(self, locker: "Locker", path: PathLike, mode: Mode) -> None:
        self.locker = locker
        self.path = path
        self.mode = mode
        self._released = False

    @property
    def released(self) -> bool:
        """Whether unlock() released this acquisition."""
        return self._released

    def unlock(self) -> int:
        """Release the acquisition; return the acquisitions left on the
        path.  A second call raises ValueError."""
        if self._released:
            raise ValueError("hlock: %r is released already" % (self,))
        left = self.locker.unlock(self.path)
        self._released = True
        return left

    release = unlock

    def downgrade(self, mode: ModeLike) -> None:
        """Lower the mode held on the path to *mode*."""
        m = Mode.parse(mode)
        self.locker.downgrade(self.path, m)
        self.mode = m

    def __enter__(self) -> "Lock":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._released and not self.locker.closed:
            self.unlock()

    def __repr__(self) -> str:
        return "<hlock.Lock %r %s%s>" % (
            self.path, self.mode.name, " released" if self._released else "")


class Locker:
    """A locker: one open file description of /dev/hlock.

    Everything it holds is released when it is closed (close(), the end
    of a with block, or garbage collection) or when the last process
    that has it open exits.  Children made by fork() share it.  A locker
    makes one lock call at a time: while one waits or an asynchronous
    request is pending, other lock calls fail with EBUSY (HlockError);
    use one locker per thread or task that locks.
    """

    def __init__(self, device: str = DEVICE) -> None:
        """Open *device* (O_RDWR | O_CLOEXEC); FileNotFoundError when the
        module is not loaded, PermissionError when not in group hlock."""
        self._fd = -1
        self._lib = _libhlock()
        self._pending: Optional[Tuple[PathLike, Mode]] = None
        try:
            self._fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError as e:
            e.strerror = "%s (is the hlock module loaded?)" % e.strerror
            raise

    # - the file -

    def fileno(self) -> int:
        """The locker's file descriptor (readable once an asynchronous
        request is granted or failed)."""
        self._check_open()
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        """Close the locker, releasing all it holds (unless another
        process still has it open).  Closing twice does nothing."""
        fd, self._fd = self._fd, -1
        self._pending = None
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> "Locker":
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except (OSError, AttributeError):
            pass

    def __repr__(self) -> str:
        return "<hlock.Locker fd=%d%s>" % (
            self._fd, " closed" if self.closed else "")

    def _check_open(self) -> None:
        if self._fd < 0:
            raise ValueError("hlock: I/O operation on a closed Locker")

    def _call(self, call: str, fn: str, path: Optional[bytes],
              *args: object) -> int:
        self._check_open()
        ret: int = getattr(self._lib, fn)(self._fd, *args)
        if ret < 0:
            raise _error(-ret, call, path)
        return ret

    # - locking -

    def lock(self, path: PathLike = "", mode: ModeLike = Mode.X, *,
             timeout: Optional[float] = None, blocking: bool = True,
             front: bool = False, compat_first: bool = False,
             lease: Optional[float] = None) -> Lock:
        """Lock *path* in *mode*, with intents on its ancestors.

        Waits as long as needed (timeout None), at most *timeout* seconds
        (TimeoutError), or not at all with blocking=False or timeout 0
        (BlockingIOError).  A lock of a path held already adds an
        acquisition, or converts to the least upper bound of the modes.
        *front* and *compat_first* are HLOCK_F_FRONT and
        HLOCK_F_COMPAT_FIRST (PermissionError without CAP_SYS_NICE);
        *lease* asks for a lease of that many seconds.

        A signal whose handler raises ends the wait with that exception;
        one whose handler returns makes the call again (at the tail of
        the queue, with what is left of the timeout).  Every failure
        leaves the locker as it was.  Returns a Lock, a context manager
        that unlocks the acquisition.
        """
        raw = check_path(path)
        m = _lock_mode(mode)
        flags = (_F_FRONT if front else 0) | \
            (_F_COMPAT_FIRST if compat_first else 0)
        lease_ns = 0 if lease is None else _timeout_ns(lease, True)
        if lease is not None and lease_ns <= 0:
            raise ValueError("hlock: lease %r: want seconds > 0" % (lease,))
        deadline = _Deadline(_timeout_ns(timeout, blocking))
        while True:
            self._check_open()
            ret = self._lib.hlock_lock_lease(self._fd, raw, m, flags,
                                             deadline.left(), lease_ns)
            if ret != -errno.EINTR:
                break
            _check_signals()
        if ret < 0:
            raise _error(-ret, "lock", raw)
        return Lock(self, path, m)

    def unlock(self, path: PathLike = "") -> int:
        """Release one acquisition of *path* (and its intents), or cancel
        the asynchronous request queued on it; return the acquisitions
        left on the path.  FileNotFoundError when there is none."""
        raw = check_path(path)
        left = self._call("unlock", "hlock_unlock", raw, raw)
        if self._pending is not None and \
                check_path(self._pending[0]) == raw:
            self._pending = None
        return left

    def downgrade(self, path: PathLike, mode: ModeLike) -> None:
        """Lower the mode held on *path* to *mode*."""
        raw = check_path(path)
        self._call("downgrade", "hlock_downgrade", raw, raw,
                   _lock_mode(mode))

    def held(self, path: PathLike = "") -> Mode:
        """The mode this locker holds on *path* (Mode.NL for none)."""
        raw = check_path(path)
        return Mode(self._call("held", "hlock_held", raw, raw))

    # - asynchronous requests -

    @property
    def pending(self) -> Optional[Tuple[PathLike, Mode]]:
        """The (path, mode) of the asynchronous request not yet collected,
        or None."""
        return self._pending

    def request(self, path: PathLike = "", mode: ModeLike = Mode.X, *,
                front: bool = False,
                compat_first: bool = False) -> Optional[Lock]:
        """Ask for *path* in *mode* without waiting (HLOCK_F_ASYNC).

        Returns the Lock when granted at once; else None, the request
        stays queued and the locker becomes readable (select, poll,
        loop.add_reader) once it is granted or failed: wait() collects
        it, cancel() withdraws it.  Until then the locker's other lock
        calls fail with EBUSY.
        """
        raw = check_path(path)
        m = _lock_mode(mode)
        flags = _F_ASYNC | (_F_FRONT if front else 0) | \
            (_F_COMPAT_FIRST if compat_first else 0)
        self._check_open()
        ret = self._lib.hlock_lock_lease(self._fd, raw, m, flags, 0, 0)
        if ret == 0:
            return Lock(self, path, m)
        if ret != -errno.EINPROGRESS:
            raise _error(-ret, "lock", raw)
        self._pending = (path, m)
        return None

    def wait(self, timeout: Optional[float] = None, *,
             blocking: bool = True) -> Lock:
        """Wait for the request of request() and collect it: return its
        Lock.

        TimeoutError after *timeout* seconds, BlockingIOError with
        blocking=False when not granted yet: the request stays queued
        then, as through signals (their handlers' exceptions end the
        wait).  FileNotFoundError when no request is pending,
        DeadlockError when it was refused.
        """
        deadline = _Deadline(_timeout_ns(timeout, blocking))
        while True:
            self._check_open()
            ret = self._lib.hlock_wait(self._fd, deadline.left())
            if ret != -errno.EINTR:
                break
            _check_signals()
        pending, err = self._pending, -ret
        if ret < 0 and err not in (errno.EAGAIN, errno.ETIMEDOUT):
            self._pending = None
        if ret < 0:
            raise _error(err, "wait", None if pending is None
                         else check_path(pending[0]))
        self._pending = None
        if pending is None:
            # Requested through another Locker object on this file.
            raise HlockError(errno.ENOENT,
                             "hlock wait: collected a request this Locker "
                             "did not make")
        return Lock(self, pending[0], pending[1])

    def cancel(self) -> None:
        """Withdraw the pending asynchronous request (also one granted
        but not collected).

        Nothing of the request is left queued or granted afterwards,
        whatever the unlock that withdraws it reports: a lease on the
        path that was taken over (ESTALE) is said by that unlock too, and
        a kernel that reported it instead of withdrawing is asked again.
        """
        if self._pending is None:
            raise ValueError("hlock: no asynchronous request is pending")
        raw = check_path(self._pending[0])
        self._check_open()
        ret = self._lib.hlock_unlock(self._fd, raw)
        self._pending = None
        # Whatever it said: collect what is left of the request and give
        # it back.  ENOENT: nothing is queued (withdrawn); EBUSY: another
        # thread's blocking call owns the slot now, not this request.
        for _ in range(3):
            left = self._lib.hlock_wait(self._fd, 0)
            if left == -errno.EAGAIN:
                self._lib.hlock_unlock(self._fd, raw)
                continue
            if left == 0:
                self._lib.hlock_unlock(self._fd, raw)
            break
        if ret < 0 and ret not in (-errno.ESTALE, -errno.ENOENT):
            raise _error(-ret, "unlock", raw)

    async def lock_async(self, path: PathLike = "",
                         mode: ModeLike = Mode.X, *,
                         timeout: Optional[float] = None,
                         front: bool = False,
                         compat_first: bool = False) -> Lock:
        """lock() for asyncio: await the grant without blocking the loop.

        The request is queued with request() and its grant awaited with
        loop.add_reader() on the locker.  After *timeout* seconds it is
        withdrawn and TimeoutError raised; a cancelled task withdraws it
        too.  The locker makes one lock call at a time: use one locker
        per task that waits.
        """
        loop = asyncio.get_running_loop()
        deadline = _Deadline(_timeout_ns(timeout, True))
        lock = self.request(path, mode, front=front,
                            compat_first=compat_first)
        if lock is not None:
            return lock
        fd = self._fd
        try:
            while True:
                ready = loop.create_future()

                def wake(ready: "asyncio.Future[None]" = ready) -> None:
                    if not ready.done():
                        ready.set_result(None)

                loop.add_reader(fd, wake)
                try:
                    if deadline.ns < 0:
                        await ready
                    else:
                        await asyncio.wait_for(ready, deadline.left() / _NS)
                except asyncio.TimeoutError:
                    raise _error(errno.ETIMEDOUT, "lock",
                                 check_path(path)) from None
                finally:
                    loop.remove_reader(fd)
                try:
                    return self.wait(blocking=False)
                except BlockingIOError:
                    continue
        except BaseException:
            if self._pending is not None and not self.closed:
                self.cancel()
            raise

    # - the lock space -

    def table(self) -> List[Record]:
        """The lock table of the locker's lock space: every request,
        granted, waiting or converting, as Records."""
        needed = ctypes.c_size_t(0)
        size = 4096
        for _ in range(8):
            buf = ctypes.create_string_buffer(size)
            self._check_open()
            ret = self._lib.hlock_table(self._fd, buf, size,
                                        ctypes.byref(needed))
            if ret >= 0:
                return _records(buf.raw, ret)
            if ret != -errno.ENOSPC:
                raise _error(-ret, "table")
            # Room for the records that appear meanwhile.
            size = needed.value + needed.value // 4 + 4096
        raise _error(errno.ENOSPC, "table")

    def stats(self, scope: str = "global") -> Stats:
        """Lock statistics of the lock space (*scope* "global") or of this
        locker ("locker")."""
        scopes = {"global": _STATS_GLOBAL, "locker": _STATS_LOCKER}
        if scope not in scopes:
            raise ValueError("hlock: stats scope %r: want 'global' or "
                             "'locker'" % (scope,))
        st = _Stats()
        self._call("stats", "hlock_stats", None, scopes[scope],
                   ctypes.byref(st))
        return Stats(
            levels=tuple(LevelStats(tuple(lv.acquire_count),
                                    tuple(lv.wait_count),
                                    tuple(lv.wait_time_ns))
                         for lv in st.level),
            timeouts=st.timeouts, interrupts=st.interrupts,
            cancels=st.cancels, deadlocks=st.deadlocks,
            takeovers=st.takeovers, yields=st.yields,
            tickets=tuple(TicketStats(t.out, t.available, t.total,
                                      t.waiting) for t in st.tickets))

    def info(self) -> Info:
        """The running module's ABI version, limits, policy and features."""
        info = _Info()
        self._call("info", "hlock_info", None, ctypes.byref(info))
        return Info(info.abi_version, info.max_depth, info.name_max,
                    info.path_max, info.flags, Policy(info.grant_policy),
                    info.features)

    # - the rest of libhlock -

    def describe(self, why: str) -> None:
        """Set the locker's description, shown in the table ("" clears
        it); at most 63 bytes of UTF-8, no NUL."""
        raw = why.encode("utf-8")
        if b"\0" in raw or len(raw) > 63:
            raise ValueError("hlock: a description is at most 63 bytes, "
                             "without NUL")
        self._call("describe", "hlock_describe", None, raw)

    def token(self, path: PathLike) -> int:
        """The fencing token of this locker's grant on *path*."""
        raw = check_path(path)
        tok = ctypes.c_uint64(0)
        self._call("token", "hlock_token", raw, raw, ctypes.byref(tok))
        return tok.value

    def renew(self) -> int:
        """Renew every lease of the locker; return how many."""
        return self._call("renew", "hlock_renew", None)

    def lvb_get(self, path: PathLike) -> bytes:
        """The lock value block last published on *path* (S, SIX or X
        held there)."""
        raw = check_path(path)
        buf = ctypes.create_string_buffer(LVB_LEN)
        self._call("lvb", "hlock_lvb_get", raw, raw, buf)
        return buf.raw

    def lvb_set(self, path: PathLike, value: bytes) -> None:
        """Give *value* (at most LVB_LEN bytes, padded with zeros) to
        publish on *path* when its SIX or X is released or downgraded."""
        raw = check_path(path)
        if len(value) > LVB_LEN:
            raise ValueError("hlock: a lock value block is at most %d "
                             "bytes" % LVB_LEN)
        buf = ctypes.create_string_buffer(bytes(value), LVB_LEN)
        self._call("lvb", "hlock_lvb_set", raw, raw, buf)
