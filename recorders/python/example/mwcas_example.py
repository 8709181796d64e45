"""mwcas_example: a small multi-word CAS (MwCAS) of its own, run by Python
threads and recorded with pmlin_recorder, for ``pmlin check``.

The MwCAS takes one lock per word, in address order (no deadlock),
compares, writes the new values if every word held its expected value, and
releases the locks; the multi-word read locks the same way. Both are
linearizable: each takes effect while it holds all its locks.

``--bug`` plants a check-then-act race: the MwCAS compares under the locks,
releases them, and takes them again to write without comparing again. Two
operations that expect the same values can both succeed, one overwriting
the other's value unseen (pmlin reports a fork, or a cycle). Both variants
yield the interpreter at the same place (``time.sleep(0)``, like a
preemption), which makes the window wide enough that the bug shows in
every run of a few hundred operations.

Each thread repeats: read k distinct random words, then a MwCAS (or, with
``--swaps``, sometimes a swap) on them that expects the values read and
writes fresh tags, so the history keeps the method's two assumptions.
``--crashes N`` stops every thread N times at its next operation boundary
(an operation cut off before it touched the words, or after it took effect
but before it returned: both pending in the history), records a crash,
reads every word as process <threads>, and goes on with new threads.

``--coarse-clock`` stamps the steps with CLOCK_MONOTONIC_COARSE (Linux: a
tick every few milliseconds), to show what a clock too coarse does: threads
that each return and start their next operation within one tick leave no
honest order, and the recorder (like ``pmlin merge`` of the ``--log``)
refuses the recording rather than guess.

Usage: python3 mwcas_example.py [--bug] [--threads N] [--ops N] [--words N]
    [--k N] [--crashes N] [--swaps PERCENT] [--fail-values] [--coarse-clock]
    [--seed N] [-o FILE] [--log FILE] [--force]
"""

import argparse
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pmlin_recorder import Recorder, RecordingError  # noqa: E402


class Words:
    """The shared words and the MwCAS under test."""

    def __init__(self, n, bug):
        self.values = [0] * n
        self.locks = [threading.Lock() for _ in range(n)]
        self.bug = bug

    def _lock(self, addrs):
        for a in sorted(addrs):
            self.locks[a].acquire()

    def _unlock(self, addrs):
        for a in sorted(addrs, reverse=True):
            self.locks[a].release()

    def read(self, addrs):
        self._lock(addrs)
        vals = [self.values[a] for a in addrs]
        self._unlock(addrs)
        return vals

    def cas(self, addrs, expected, new):
        """(True, None, seen) or (False, blamed address, seen): the first
        address, in the invocation's order, that held another value than
        the expected one, seen under the locks."""
        self._lock(addrs)
        seen = [self.values[a] for a in addrs]
        blamed = next((a for a, s, e in zip(addrs, seen, expected) if s != e), None)
        if self.bug:
            # The planted bug: the decision is taken, the locks let go.
            self._unlock(addrs)
            time.sleep(0)
            if blamed is not None:
                return False, blamed, seen
            self._lock(addrs)
        else:
            time.sleep(0)
        if blamed is None:
            for a, n in zip(addrs, new):
                self.values[a] = n
        self._unlock(addrs)
        return blamed is None, blamed, seen

    def swap(self, addrs, new):
        self._lock(addrs)
        old = [self.values[a] for a in addrs]
        for a, n in zip(addrs, new):
            self.values[a] = n
        self._unlock(addrs)
        return old


class Crash(Exception):
    """Unwinds a worker whose operation a crash cut off."""


class Run:
    """The workload: threads, their quotas, the crash trigger."""

    def __init__(self, args, rec):
        self.args, self.rec = args, rec
        self.words = Words(args.words, args.bug)
        self.stop = threading.Event()
        self.started = 0  # operations started in this segment, under count_lock
        self.count_lock = threading.Lock()
        self.crash_after = 0
        self.rngs = [random.Random(args.seed * 1000003 + i) for i in range(args.threads)]
        self.quota = [args.ops // args.threads + (i < args.ops % args.threads)
                      for i in range(args.threads)]

    def begin_op(self, i):
        # The crash trigger is the example's own business, not the recorder's.
        self.quota[i] -= 1
        with self.count_lock:
            self.started += 1
            if self.crash_after and self.started >= self.crash_after:
                self.stop.set()

    def point(self):
        if self.stop.is_set():
            raise Crash()

    def worker(self, i, barrier):
        t, rng, a = self.rec.thread(i), self.rngs[i], self.args
        barrier.wait()
        try:
            while self.quota[i] > 0 and not self.stop.is_set():
                addrs = rng.sample(range(a.words), a.k)
                self.begin_op(i)
                t.inv_read(addrs)
                self.point()  # cut off before it read
                vals = self.words.read(addrs)
                t.ret_read(vals)
                if self.quota[i] <= 0 or self.stop.is_set():
                    break
                new = [t.tag() for _ in addrs]
                self.begin_op(i)
                if rng.randrange(100) < a.swaps:
                    t.inv_swap(list(zip(addrs, new)))
                    self.point()
                    old = self.words.swap(addrs, new)
                    self.point()  # took effect, cut off before it returned
                    t.ret_swap(old)
                    continue
                t.inv_cas(list(zip(addrs, vals, new)))
                self.point()
                ok, blamed, seen = self.words.cas(addrs, vals, new)
                if ok:
                    self.point()
                    t.ret_ok()
                else:
                    t.ret_fail(blamed, seen if a.fail_values else None)
        except Crash:
            pass

    def segments(self):
        a = self.args
        per_segment = a.ops // (a.crashes + 1)
        for seg in range(a.crashes + 1):
            last = seg == a.crashes
            self.stop.clear()
            self.started, self.crash_after = 0, 0 if last else per_segment
            barrier = threading.Barrier(a.threads)
            ts = [threading.Thread(target=self.worker, args=(i, barrier)) for i in range(a.threads)]
            for th in ts:
                th.start()
            for th in ts:
                th.join()
            if last:
                break
            self.rec.crash()
            # Recovery: no lock is held (threads stop outside critical
            # sections); read every word as process <threads>.
            t = self.rec.thread(a.threads)
            t.inv_read(range(a.words))
            t.ret_read(list(self.words.values))


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bug", action="store_true", help="plant the check-then-act race")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--ops", type=int, default=400, help="operations over all threads")
    p.add_argument("--words", type=int, default=4)
    p.add_argument("--k", type=int, default=2, help="words per operation")
    p.add_argument("--crashes", type=int, default=0)
    p.add_argument("--swaps", type=int, default=0, help="percent of updates that are swaps")
    p.add_argument("--fail-values", action="store_true", help="failures report the values read")
    p.add_argument("--coarse-clock", action="store_true",
                   help="stamp with CLOCK_MONOTONIC_COARSE (Linux), a clock too coarse")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("-o", dest="out", default="-", help="the history (default standard output)")
    p.add_argument("--log", help="also write the unmerged logs, for pmlin merge")
    p.add_argument("--force", action="store_true", help="overwrite -o and --log")
    a = p.parse_args(argv)
    if a.threads < 1 or a.ops < 1 or a.k < 1 or a.words < a.k or a.crashes < 0 or not 0 <= a.swaps <= 100:
        p.error("need threads, ops >= 1, k >= 1, words >= k, crashes >= 0, swaps in 0..100")
    if a.coarse_clock and not sys.platform.startswith("linux"):
        p.error("--coarse-clock: CLOCK_MONOTONIC_COARSE is Linux's")
    return a


def coarse_clock():
    """--coarse-clock's clock: CLOCK_MONOTONIC_COARSE (6 on Linux, where
    the time module may not name it)."""
    return time.clock_gettime_ns(getattr(time, "CLOCK_MONOTONIC_COARSE", 6))


def main(argv):
    a = parse(argv)
    # The last thread reads after each crash.
    rec = Recorder(a.threads + 1, clock=coarse_clock if a.coarse_clock else None)
    rec.comment("mwcas_example.py " + " ".join(argv))
    Run(a, rec).segments()
    try:
        if a.log:
            rec.write_file(a.log, overwrite=a.force, log=True)
        if a.out == "-":
            rec.write(sys.stdout)
        else:
            rec.write_file(a.out, overwrite=a.force)
    except RecordingError as e:
        print("mwcas_example.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
