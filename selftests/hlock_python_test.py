#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# hlock_python_test.py: tests of the Python binding (lib/python/hlock) on
# Debian's python3, in the VM:
#
#   scripts/vm-run --rootfs build/selftests/python-root \
#       selftests/hlock_python_test.py
#
# (build/selftests/python-root, from scripts/python-root: the interpreter,
# the standard library modules these tests use, the hlock package and
# libhlock.so.1).  HLOCK_PYTHONPATH, if set, is put first on sys.path (the
# packaged module, scripts/vm-deb).  Prints kselftest-style TAP and a
# "# Totals:" line; exits 0 if every test passed, else 1; without
# /dev/hlock, skips every test and exits 4 (KSFT_SKIP).
#
# Every test uses resource names of its own (py<N>/...), closes its
# lockers and reaps its threads and children.  Waits are poll loops on the
# lock table, never fixed sleeps; no timing is asserted.

import asyncio
import errno
import os
import select
import signal
import sys
import threading
import time
import traceback

if os.environ.get("HLOCK_PYTHONPATH"):
    sys.path.insert(0, os.environ["HLOCK_PYTHONPATH"])

import hlock  # noqa: E402
from hlock import Locker, Mode, State  # noqa: E402

# A guard against hangs only: no test asserts how long anything takes.
GUARD = 60.0
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


def raises(exc, fn, *args, **kw):
    """Call fn; it must raise exc (exactly that class or a subclass);
    return the exception."""
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    except Exception as e:
        raise Failed("%s raised %s: %s, not %s"
                     % (getattr(fn, "__name__", fn), type(e).__name__, e,
                        exc.__name__)) from e
    raise Failed("%s raised nothing, not %s"
                 % (getattr(fn, "__name__", fn), exc.__name__))


def until(pred, what):
    end = time.monotonic() + GUARD
    while not pred():
        if time.monotonic() > end:
            raise Failed("gave up waiting for " + what)
        time.sleep(0.005)


def records(lk, path, state=None):
    return [r for r in lk.table()
            if r.path == path and (state is None or r.state == state)]


def waiting(lk, path):
    return len(records(lk, path, State.WAITING))


class Thread(threading.Thread):
    """A thread whose exception is re-raised by finish()."""

    def __init__(self, fn, *args):
        super().__init__(daemon=True)
        self.fn, self.args, self.exc, self.result = fn, args, None, None

    def run(self):
        try:
            self.result = self.fn(*self.args)
        except BaseException as e:  # noqa: B902
            self.exc = e

    def finish(self):
        self.join(GUARD)
        check(not self.is_alive(), "a thread still runs")
        if self.exc is not None:
            raise self.exc
        return self.result


# --- the tests ---------------------------------------------------------------


@test
def bad_input():
    """Bad modes and paths are ValueError/TypeError naming the fault,
    raised before any call."""
    with Locker() as lk:
        e = raises(ValueError, lk.lock, "py1/a", "Q")
        check("unknown lock mode 'Q'" in str(e), str(e))
        raises(ValueError, lk.lock, "py1/a", 9)
        e = raises(ValueError, lk.lock, "py1/a", "NL")
        check("NL cannot be locked" in str(e), str(e))
        raises(TypeError, lk.lock, "py1/a", 1.5)
        for path, why in (("/py1", "starts with '/'"),
                          ("py1/", "ends with '/'"),
                          ("py1//a", "empty component"),
                          ("py1/" + "n" * 256, "256 bytes long"),
                          ("/".join("py1abcdefg"), "10 levels deep"),
                          ("py1\0a", "NUL")):
            e = raises(ValueError, lk.lock, path, "X")
            check(why in str(e), "%r: %s" % (path, e))
        raises(TypeError, lk.lock, 42, "X")
        raises(ValueError, lk.lock, "py1/a", "X", timeout=-1)
        raises(ValueError, lk.lock, "py1/a", "X", timeout=1,
               blocking=False)
        raises(ValueError, lk.stats, "nobody")
        # The longest valid path is accepted by the module as it is.
        deep = "/".join(["n" * 255] * 8)
        with lk.lock(deep, "S"):
            check(lk.held(deep) == Mode.S, "the longest path held")
        check(lk.table() == [] or not records(lk, "py1"),
              "nothing of py1 left")
        check(Mode.parse("six") is Mode.SIX and Mode.parse(5) is Mode.X,
              "Mode.parse")


@test
def lock_held_unlock():
    """lock() takes the intents above; the handle unlocks; recursion
    counts acquisitions."""
    with Locker() as lk:
        with lk.lock("py2/coll", "X", timeout=1.5) as h:
            check(isinstance(h, hlock.Lock), "lock() returns a Lock")
            check(lk.held("py2/coll") == Mode.X, "X on py2/coll")
            check(lk.held("py2") == Mode.IX, "IX on py2")
            check(lk.held("") == Mode.IX, "IX on the root")
            h2 = lk.lock("py2/coll", Mode.S)   # covered: recursion
            check(h2.unlock() == 1, "one acquisition left")
            raises(ValueError, h2.unlock)
        check(h.released, "the with block released it")
        check(lk.held("py2/coll") == Mode.NL, "nothing held after with")
        check(lk.held("py2") == Mode.NL, "no intent left")
        e = raises(FileNotFoundError, lk.unlock, "py2/coll")
        check(e.errno == errno.ENOENT and "py2/coll" in str(e), str(e))
        # Downgrade: X to S lets another locker's S in.
        h = lk.lock("py2/d", "X")
        with Locker() as other:
            raises(BlockingIOError, other.lock, "py2/d", "S",
                   blocking=False)
            h.downgrade("S")
            check(h.mode == Mode.S and lk.held("py2/d") == Mode.S,
                  "downgraded to S")
            other.lock("py2/d", "S", blocking=False).unlock()
        e = raises(OSError, h.downgrade, "X")
        check(isinstance(e, hlock.HlockError) and e.errno == errno.EINVAL,
              "an upgrade by downgrade is EINVAL: %r" % e)
        h.unlock()


@test
def errno_mapping():
    """EAGAIN, ETIMEDOUT, ENOENT, EBUSY and EDEADLK become BlockingIOError,
    TimeoutError, FileNotFoundError, HlockError and DeadlockError."""
    with Locker() as a, Locker() as b:
        a.lock("py3/x", "X")
        e = raises(BlockingIOError, b.lock, "py3/x", "S", blocking=False)
        check(e.errno == errno.EAGAIN, "EAGAIN")
        e = raises(BlockingIOError, b.lock, "py3/x", "S", timeout=0)
        e = raises(TimeoutError, b.lock, "py3/x", "X", timeout=0.05)
        check(e.errno == errno.ETIMEDOUT and "py3/x" in str(e), str(e))
        check(waiting(a, "py3/x") == 0, "the timed-out request withdrawn")
        check(b.held("py3") == Mode.NL, "and its intents")
        # EBUSY: a lock call while an asynchronous request is pending.
        check(b.request("py3/x", "X") is None, "queued")
        e = raises(hlock.HlockError, b.lock, "py3/y", "X")
        check(e.errno == errno.EBUSY and "in flight" in str(e), str(e))
        b.cancel()
        check(b.pending is None and waiting(a, "py3/x") == 0, "cancelled")
        # EDEADLK: a waits for b's py3/b while b asks for a's py3/x.
        b.lock("py3/b", "X")
        t = Thread(a.lock, "py3/b", "X")
        t.start()
        until(lambda: waiting(b, "py3/b") == 1, "a to wait for py3/b")
        e = raises(hlock.DeadlockError, b.lock, "py3/x", "X")
        check(e.errno == errno.EDEADLK and isinstance(e, OSError), str(e))
        b.unlock("py3/b")
        t.finish().unlock()
        a.unlock("py3/x")
        e = raises(FileNotFoundError, b.wait, blocking=False)
        check(e.errno == errno.ENOENT, "wait with nothing pending")


@test
def grant_order_fifo():
    """Waiters are granted in the order they queued, after the release."""
    order = []
    with Locker() as holder:
        holder.lock("py4/q", "X")
        threads = []
        lockers = [Locker() for _ in range(4)]

        def waiter(i):
            with lockers[i].lock("py4/q", "X"):
                order.append(i)

        for i in range(4):
            t = Thread(waiter, i)
            t.start()
            threads.append(t)
            until(lambda: waiting(holder, "py4/q") == i + 1,
                  "waiter %d to queue" % i)
        check(order == [], "nobody granted while X is held")
        holder.unlock("py4/q")
        for t in threads:
            t.finish()
        for lk in lockers:
            lk.close()
    check(order == [0, 1, 2, 3], "grant order %s" % order)


@test
def grant_order_readers_behind_writer():
    """An S asked for after a waiting X waits behind it (no starvation);
    after the X, the readers are granted together."""
    with Locker() as r1, Locker() as w, Locker() as r2, Locker() as r3:
        r1.lock("py5/q", "S")
        t = Thread(lambda: w.lock("py5/q", "X"))
        t.start()
        until(lambda: waiting(r1, "py5/q") == 1, "the writer to queue")
        raises(BlockingIOError, r2.lock, "py5/q", "S", blocking=False)
        check(r2.request("py5/q", "S") is None and
              r3.request("py5/q", "S") is None, "readers queue behind")
        r1.unlock("py5/q")
        t.finish()
        raises(BlockingIOError, r2.wait, blocking=False)
        w.unlock("py5/q")
        r2.wait().unlock()
        r3.wait().unlock()


@test
def try_and_timeout_leave_nothing():
    """A try and a timeout leave the locker as it was (counted in the
    statistics)."""
    with Locker() as a, Locker() as b:
        a.lock("py6/t", "S")
        before = b.stats("locker").timeouts
        raises(BlockingIOError, b.lock, "py6/t", "X", blocking=False)
        raises(TimeoutError, b.lock, "py6/t", "X", timeout=0.01)
        check(b.stats("locker").timeouts == before + 2, "2 timeouts counted")
        check(not [r for r in b.table() if r.path.startswith("py6") and
                   r.mode == Mode.X], "no X request left")
        b.lock("py6/t", "S", blocking=False).unlock()


@test
def signal_interrupts():
    """A signal whose handler raises ends a wait with its exception and
    withdraws the request; one whose handler returns lets the call wait
    on and get the lock."""
    main = threading.get_ident()

    class Stop(Exception):
        pass

    def raising(sig, frame):
        raise Stop()

    seen = []

    def quiet(sig, frame):
        seen.append(sig)

    old = signal.getsignal(signal.SIGUSR1)
    try:
        with Locker() as holder, Locker() as lk:
            holder.lock("py7/s", "X")
            before = lk.stats("locker").interrupts

            def kick(release):
                signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
                until(lambda: waiting(holder, "py7/s") == 1,
                      "the main thread to wait")
                signal.pthread_kill(main, signal.SIGUSR1)
                if release:
                    until(lambda: seen, "the handler to run")
                    # Waiting again (its call made once more).
                    until(lambda: waiting(holder, "py7/s") == 1,
                          "the main thread to wait again")
                    holder.unlock("py7/s")

            signal.signal(signal.SIGUSR1, raising)
            t = Thread(kick, False)
            t.start()
            raises(Stop, lk.lock, "py7/s", "X")
            t.finish()
            check(waiting(holder, "py7/s") == 0, "the request withdrawn")
            check(lk.held("py7") == Mode.NL, "no intent left")
            check(lk.stats("locker").interrupts == before + 1,
                  "one interrupt counted")

            signal.signal(signal.SIGUSR1, quiet)
            t = Thread(kick, True)
            t.start()
            h = lk.lock("py7/s", "X", timeout=GUARD)
            t.finish()
            check(seen == [signal.SIGUSR1], "the handler ran once")
            check(lk.held("py7/s") == Mode.X, "granted after the signal")
            check(lk.stats("locker").interrupts == before + 2,
                  "the second interrupt counted")
            h.unlock()

            # wait() keeps the request queued through a signal.
            holder.lock("py7/s", "X")
            check(lk.request("py7/s", "X") is None, "queued")
            seen.clear()
            t = Thread(kick, True)
            t.start()
            h = lk.wait(GUARD)
            t.finish()
            check(seen and h.mode == Mode.X, "collected after the signal")
            h.unlock()
    finally:
        signal.signal(signal.SIGUSR1, old)


@test
def request_wait_poll():
    """request() queues; the locker becomes readable at the grant, and
    wait() collects it."""
    with Locker() as holder, Locker() as lk:
        h = lk.request("py8/r", "S")
        check(isinstance(h, hlock.Lock), "granted at once")
        h.unlock()
        holder.lock("py8/r", "X")
        check(lk.request("py8/r", "X") is None, "queued")
        check(lk.pending == ("py8/r", Mode.X), "pending")
        check(select.select([lk], [], [], 0)[0] == [], "not readable")
        raises(BlockingIOError, lk.wait, blocking=False)
        raises(TimeoutError, lk.wait, 0.01)
        check(waiting(holder, "py8/r") == 1, "still queued after both")
        holder.unlock("py8/r")
        check(select.select([lk], [], [], GUARD)[0] == [lk], "readable")
        h = lk.wait(blocking=False)
        check(h.mode == Mode.X and lk.held("py8/r") == Mode.X, "collected")
        check(lk.pending is None, "nothing pending")
        h.unlock()


async def asyncio_body():
    with Locker() as holder, Locker() as a, Locker() as b:
        holder.lock("py9/a", "X")
        ta = asyncio.ensure_future(a.lock_async("py9/a", "S"))
        tb = asyncio.ensure_future(b.lock_async("py9/a", "S"))
        # The loop runs on while both wait: this coroutine sees them
        # queue and releases the holder.
        while waiting(holder, "py9/a") < 2:
            await asyncio.sleep(0.005)
        check(not ta.done() and not tb.done(), "both wait")
        holder.unlock("py9/a")
        ha, hb = await asyncio.wait_for(asyncio.gather(ta, tb), GUARD)
        check(a.held("py9/a") == Mode.S and b.held("py9/a") == Mode.S,
              "both readers granted")
        ha.unlock()
        hb.unlock()
        # Granted at once.
        h = await a.lock_async("py9/b", "X", timeout=1)
        check(a.held("py9/b") == Mode.X, "granted at once")
        # A timeout withdraws the request.
        before = b.stats("locker").cancels
        try:
            await b.lock_async("py9/b", "X", timeout=0.05)
            raise Failed("lock_async did not time out")
        except TimeoutError as e:
            check(e.errno == errno.ETIMEDOUT, "ETIMEDOUT: %r" % e)
        check(b.pending is None and waiting(a, "py9/b") == 0,
              "withdrawn after the timeout")
        check(b.stats("locker").cancels == before + 1, "one cancel counted")
        # So does a cancelled task.
        t = asyncio.ensure_future(b.lock_async("py9/b", "X"))
        while waiting(a, "py9/b") < 1:
            await asyncio.sleep(0.005)
        t.cancel()
        try:
            await t
            raise Failed("the cancelled task got the lock")
        except asyncio.CancelledError:
            pass
        check(b.pending is None and waiting(a, "py9/b") == 0,
              "withdrawn after the cancellation")
        # A deadlock found at collection is DeadlockError.
        b.lock("py9/c", "X")
        t = asyncio.ensure_future(a.lock_async("py9/c", "X"))
        while waiting(a, "py9/c") < 1:
            await asyncio.sleep(0.005)
        raises(hlock.DeadlockError, b.lock, "py9/b", "X")
        b.unlock("py9/c")
        hc = await asyncio.wait_for(t, GUARD)
        check(a.held("py9/c") == Mode.X, "granted after the release")
        hc.unlock()
        h.unlock()


@test
def asyncio_test():
    """lock_async() awaits the grant without blocking the loop; a timeout
    and a cancellation withdraw the request."""
    asyncio.run(asyncio_body())


async def asyncio_cancel_body():
    with Locker() as holder, Locker() as b, Locker() as c:
        # Queued: covered by asyncio_test.  Granted but not collected: the
        # holder's unlock grants the request before the task's loop sees
        # the locker readable; the cancellation must give it back.
        holder.lock("py13/g", "X")
        t = asyncio.ensure_future(b.lock_async("py13/g", "X"))
        while waiting(holder, "py13/g") < 1:
            await asyncio.sleep(0.005)
        holder.unlock("py13/g")
        check(records(holder, "py13/g", State.GRANTED), "granted")
        t.cancel()
        try:
            await t
            raise Failed("the cancelled task got the granted lock")
        except asyncio.CancelledError:
            pass
        check(b.pending is None and b.held("py13/g") == Mode.NL,
              "the grant was given back")
        check(not records(holder, "py13/g"), "nothing left on py13/g")
        # After a takeover of a lease on the path: the withdrawing unlock
        # also says ESTALE, and the task still ends cancelled, with
        # nothing granted.
        b.lock("py13/l", "X", lease=0.05)
        ct = asyncio.ensure_future(c.lock_async("py13/l", "X"))
        hc = await asyncio.wait_for(ct, GUARD)
        check(b.held("py13/l") == Mode.NL, "taken over")
        t = asyncio.ensure_future(b.lock_async("py13/l", "X"))
        while waiting(c, "py13/l") < 1:
            await asyncio.sleep(0.005)
        t.cancel()
        try:
            await t
            raise Failed("the cancelled task got the lock")
        except asyncio.CancelledError:
            pass
        except hlock.HlockError as e:
            raise Failed("the cancelled task ended with %r" % e)
        check(b.pending is None and waiting(c, "py13/l") == 0,
              "withdrawn after the takeover")
        hc.unlock()
        check(b.held("py13/l") == Mode.NL and not records(c, "py13/l"),
              "nothing granted to the cancelled task")


@test
def asyncio_cancel():
    """A cancelled lock_async() leaves nothing queued or granted: queued,
    granted but not collected, and after a lease on its path was taken
    over (its withdrawing unlock then says ESTALE too)."""
    asyncio.run(asyncio_cancel_body())


@test
def release_at_close():
    """Closing a locker releases what it holds, and grants the waiter."""
    a = Locker()
    a.lock("py10/c", "X")
    a.lock("py10/c/d", "X")
    with Locker() as b:
        raises(BlockingIOError, b.lock, "py10/c", "S", blocking=False)
        t = Thread(b.lock, "py10/c", "X")
        t.start()
        until(lambda: waiting(b, "py10/c") == 1, "b to queue")
        a.close()
        a.close()
        check(a.closed, "closed")
        raises(ValueError, a.lock, "py10/c", "X")
        t.finish()
        check(b.held("py10/c") == Mode.X, "b granted at a's close")
        check(not records(b, "py10/c/d"), "a's py10/c/d gone")
        b.unlock("py10/c")
    # A with block closes the locker.
    with Locker() as c:
        c.lock("py10/w", "X")
    with Locker() as d:
        d.lock("py10/w", "X", blocking=False).unlock()


@test
def release_at_process_death():
    """A child killed while it holds: its locks go with it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            lk = Locker()
            lk.lock("py11/k", "X")
            os.write(w, b"1")
            while True:
                time.sleep(60)
        finally:
            os._exit(1)
    os.close(w)
    try:
        check(os.read(r, 1) == b"1", "the child locked")
        with Locker() as lk:
            rec = records(lk, "py11/k")
            check(len(rec) == 1 and rec[0].pid == pid and
                  rec[0].mode == Mode.X and rec[0].state == State.GRANTED,
                  "the child holds X: %r" % rec)
            raises(BlockingIOError, lk.lock, "py11/k", "X", blocking=False)
            t = Thread(lk.lock, "py11/k", "X")
            t.start()
            until(lambda: waiting(lk, "py11/k") == 1, "the waiter")
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            pid = 0
            check(os.WIFSIGNALED(status), "the child was killed")
            t.finish()
            check(lk.held("py11/k") == Mode.X, "granted at the death")
            check(all(r.pid == os.getpid() for r in lk.table()
                      if r.path.startswith("py11")), "nothing of the child")
            lk.unlock("py11/k")
    finally:
        os.close(r)
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


@test
def table_and_stats():
    """table() shows holders, intents and waiters with their blockers;
    stats() counts per level and mode."""
    with open("/proc/self/comm") as f:
        comm = f.read().strip()
    with Locker() as a, Locker() as b:
        info = a.info()
        check(info.abi_version >= 2 and info.max_depth == hlock.MAX_DEPTH
              and info.path_max == hlock.PATH_MAX, "info: %r" % (info,))
        a.describe("python test")
        a.lock("py12/c/o", "S")
        t = Thread(b.lock, "py12/c/o", "X")
        t.start()
        until(lambda: waiting(a, "py12/c/o") == 1, "b to queue")
        recs = records(a, "py12/c/o")
        held = [r for r in recs if r.state == State.GRANTED]
        wait = [r for r in recs if r.state == State.WAITING]
        check(len(held) == 1 and len(wait) == 1, "two requests: %r" % recs)
        g, q = held[0], wait[0]
        check(g.mode == Mode.S and g.pid == os.getpid() and
              g.comm == comm, "the holder: %r" % (g,))
        check(g.held_ns >= 0 and g.wait_ns == 0, "times of the holder")
        if info.features & (1 << 5):   # HLOCK_FEAT_DESCRIBE
            check(g.why == "python test", "why: %r" % g.why)
        check(q.mode == Mode.X and q.nr_blockers == 1 and
              q.blockers == (os.getpid(),), "the waiter: %r" % (q,))
        # Above: a's IS and the IX b's X waits under, both granted.
        for up in ("py12", "py12/c"):
            modes = sorted(r.mode for r in records(a, up, State.GRANTED))
            check(modes == [Mode.IS, Mode.IX], "%s: %r" % (up, modes))
        a.unlock("py12/c/o")
        t.finish()
        st = a.stats("locker")
        obj = st.levels[hlock.Level.OBJECT]
        check(obj.acquire_count[Mode.S] == 1 and
              obj.acquire_count[Mode.X] == 0, "a's object-level counts")
        check(st.levels[hlock.Level.DATABASE].acquire_count[Mode.IS] == 1,
              "a's intent on py12 counted")
        sb = b.stats("locker")
        check(sb.levels[hlock.Level.OBJECT].wait_count[Mode.X] == 1,
              "b's X waited")
        check(len(st.tickets) == 2, "two ticket pools")
        b.unlock("py12/c/o")
        check(not records(a, "py12/c/o"), "the table is empty again")


# --- the harness -------------------------------------------------------------


def main():
    print("TAP version 13")
    print("1..%d" % len(TESTS))
    if not os.path.exists(hlock.DEVICE):
        for i, fn in enumerate(TESTS, 1):
            print("ok %d %s # SKIP no %s" % (i, fn.__name__, hlock.DEVICE))
        print("# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:%d error:0"
              % len(TESTS))
        return 4
    print("# python %s, hlock from %s" % (sys.version.split()[0],
                                          os.path.dirname(hlock.__file__)))
    npass = nfail = 0
    for i, fn in enumerate(TESTS, 1):
        try:
            fn()
        except Exception:
            for line in traceback.format_exc().splitlines():
                print("# " + line)
            print("not ok %d %s" % (i, fn.__name__))
            nfail += 1
        else:
            print("ok %d %s" % (i, fn.__name__))
            npass += 1
        sys.stdout.flush()
    print("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0"
          % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
