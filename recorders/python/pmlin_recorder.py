"""Record histories of multi-word reads, CAS and swaps for pmlin, from Python.

pmlin decides whether a history of multi-word operations is linearizable
(the method of Cepeda et al., OPODIS 2019). This module records such a
history while your threads run your primitive and writes it in pmlin's
text format v1. Standard library only; the same API shape as the C/C++
header recorders/c/pmlin.h::

    rec = Recorder(threads=4)              # processes 0..3
    # in thread i:
    t = rec.thread(i)
    t.inv_read([10, 11])                   # just before the first shared access
    vals = my_mwread([10, 11])
    t.ret_read(vals)                       # just after the last one
    new = [t.tag(), t.tag()]               # values never written before
    t.inv_cas([(10, vals[0], new[0]), (11, vals[1], new[1])])
    ok, blamed = my_mwcas(...)
    t.ret_ok() if ok else t.ret_fail(blamed)
    # after joining the threads:
    rec.write_file("run.hist")             # then: pmlin check run.hist

The duties of a recorder (recorders/README.md has them in full):

* One global clock: ``time.perf_counter_ns()``, which is system-wide and
  monotonic (CLOCK_MONOTONIC on Linux, QueryPerformanceCounter on Windows,
  where ``time.monotonic_ns()`` ticks only every 15.6 ms). A per-thread
  clock (``time.thread_time_ns()``, a per-thread counter) would make the
  threads' timestamps incomparable and the merge would invent an order.
* The invocation's timestamp is taken before the operation's first access
  to shared state, the response's after its last: call ``inv_*`` as the
  last thing before the operation and ``ret_*`` as the first thing after.
  In CPython the interpreter executes a thread's bytecodes in program
  order and the GIL (or, in free-threaded builds, the locks of the
  objects involved) orders the accesses of different threads, so the
  clock call cannot move across a shared access.
* No shared state while recording: each thread appends to its own list;
  no lock, no shared counter.
* The merge (:meth:`Recorder.lines`) orders the steps by timestamp; each
  thread's steps keep their order (only the heads of the threads' lists
  are compared); on equal timestamps an invocation goes before a response
  (an interval may grow, never shrink), then a response whose thread
  invokes again at that timestamp, then the lower process id. Two threads
  that each respond and invoke again at one timestamp raise
  :class:`RecordingError`: no order of their lines would be honest (the
  clock is too coarse; recorders/README.md, rule 4, has the rule).

What may run concurrently: the methods of a :class:`Thread` by its owner
thread only (different Thread objects concurrently, freely); the methods
of :class:`Recorder` only while no thread records (before ``start()`` and
after ``join()``).

A misuse (a response with nothing pending, an invocation while one is
pending, a failure blaming an address the cas does not name, a clock that
goes backwards, ...) raises :class:`RecordingError` at once, in the
thread that made it.
"""

import os
import time

__all__ = ["Recorder", "Thread", "RecordingError", "TAG_SHIFT"]

TAG_SHIFT = 32
"""Tags are ``(pid + 1) << TAG_SHIFT | counter``, counter from 1."""

# Step kinds, as stored in a thread's list: (timestamp, kind, payload).
_INV_READ, _INV_CAS, _INV_SWAP = "read", "cas", "swap"
_RET_VALUES, _RET_OK, _RET_FAIL = "values", "ok", "fail"
_INVOCATIONS = (_INV_READ, _INV_CAS, _INV_SWAP)


class RecordingError(Exception):
    """A misuse of the recorder, or a recording that cannot be written."""


def _value(v):
    # Small numbers in decimal, tags (high bits set) in hex, as pmlin does.
    return str(v) if v < 4096 else "0x%x" % v


def _u64(v, what):
    if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v >= 1 << 64:
        raise RecordingError("%s %r is not an unsigned 64-bit integer" % (what, v))
    return v


class Thread:
    """One thread's log; process id ``pid`` in the history."""

    def __init__(self, recorder, pid):
        self._rec = recorder
        self.pid = pid
        self._steps = []
        self._pending = None  # the pending invocation's (kind, addrs)
        self._last_ts = 0
        self._tags = 0

    def _fail(self, msg):
        raise RecordingError(
            "thread %d, step %d: %s" % (self.pid, len(self._steps) + 1, msg))

    def _stamp(self):
        ts = self._rec._clock()
        if ts < self._last_ts:
            self._fail("the clock went backwards (%d after %d): it must be one "
                       "global monotonic clock" % (ts, self._last_ts))
        self._last_ts = ts
        return ts

    def tag(self):
        """A value never returned before by this recorder, for a new value
        (Assumption 1 of the method: no value is written twice to a word,
        nor equal to its initial value)."""
        self._tags += 1
        if self._tags >= 1 << TAG_SHIFT:
            self._fail("out of tags")
        return (self.pid + 1) << TAG_SHIFT | self._tags

    # ---- invocations: the timestamp is the last thing taken ----

    def _invoke(self, kind, addrs, payload):
        if self._pending is not None:
            self._fail("an invocation while the thread's previous operation "
                       "is pending (no response recorded)")
        if not addrs:
            self._fail("an operation on no word")
        for a in addrs:
            _u64(a, "address")
        if len(set(addrs)) != len(addrs):
            self._fail("an address appears twice in one operation")
        self._pending = (kind, addrs)
        self._steps.append((self._stamp(), kind, payload))

    def inv_read(self, addrs):
        """Invocation of a read of the distinct words ``addrs``."""
        addrs = tuple(addrs)
        self._invoke(_INV_READ, addrs, addrs)

    def inv_cas(self, words):
        """Invocation of a cas: ``words`` are (address, expected, new)."""
        words = tuple((a, _u64(e, "value"), _u64(n, "value")) for a, e, n in words)
        self._invoke(_INV_CAS, tuple(w[0] for w in words), words)

    def inv_swap(self, words):
        """Invocation of a swap: ``words`` are (address, new)."""
        words = tuple((a, _u64(n, "value")) for a, n in words)
        self._invoke(_INV_SWAP, tuple(w[0] for w in words), words)

    # ---- responses: the timestamp is the first thing taken ----

    def _respond(self, want, kind, payload, ts):
        if self._pending is None:
            self._fail("a response with no pending invocation")
        if self._pending[0] != want:
            self._fail("the response of a %s answers a pending %s" % (want, self._pending[0]))
        self._pending = None
        self._steps.append((ts, kind, payload))

    def _values(self, values):
        values = tuple(_u64(v, "value") for v in values)
        if self._pending is not None and len(values) != len(self._pending[1]):
            self._fail("%d values for an operation on %d words" % (len(values), len(self._pending[1])))
        return values

    def ret_read(self, values):
        """A read's response: its values, in the invocation's order."""
        ts = self._stamp()
        self._respond(_INV_READ, _RET_VALUES, self._values(values), ts)

    def ret_swap(self, old_values):
        """A swap's response: the values it replaced, in order."""
        ts = self._stamp()
        self._respond(_INV_SWAP, _RET_VALUES, self._values(old_values), ts)

    def ret_ok(self):
        """The pending cas succeeded."""
        ts = self._stamp()
        self._respond(_INV_CAS, _RET_OK, (), ts)

    def ret_fail(self, addr, values=None):
        """The pending cas failed, blaming ``addr``: one of its addresses
        that it saw hold another value than the expected one during the
        operation (not before it was invoked). With ``values``, also the
        values it read at each of its addresses, in order, from one atomic
        snapshot (``ret fail <a> <v1> ... <vk>``)."""
        ts = self._stamp()
        if self._pending is not None and addr not in self._pending[1]:
            self._fail("the failure blames address %r, which the cas does not name" % (addr,))
        payload = (addr,) if values is None else (addr,) + self._values(values)
        self._respond(_INV_CAS, _RET_FAIL, payload, ts)


def _event(pid, kind, payload):
    """The text of one step of process pid (format v1, without newline)."""
    if kind == _INV_READ:
        return "%d inv read %s" % (pid, " ".join(str(a) for a in payload))
    if kind == _INV_CAS:
        return "%d inv cas %s" % (pid, " ".join(
            "%d:%s:%s" % (a, _value(e), _value(n)) for a, e, n in payload))
    if kind == _INV_SWAP:
        return "%d inv swap %s" % (pid, " ".join("%d:%s" % (a, _value(n)) for a, n in payload))
    if kind == _RET_VALUES:
        return "%d ret %s" % (pid, " ".join(_value(v) for v in payload))
    if kind == _RET_OK:
        return "%d ret ok" % pid
    return "%d ret fail %d%s" % (pid, payload[0], "".join(" " + _value(v) for v in payload[1:]))


class Recorder:
    """Records a history of ``threads`` threads, processes 0..threads-1.

    ``clock`` replaces ``time.perf_counter_ns`` (for tests, or a clock of
    your own): it must be one global, non-decreasing integer clock.
    """

    def __init__(self, threads, clock=None):
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self._clock = clock or time.perf_counter_ns
        self._custom_clock = clock is not None
        self._threads = [Thread(self, i) for i in range(threads)]
        self._crashes = []
        self._init_default = None
        self._init_words = {}
        self._comments = []

    def thread(self, i):
        """The log of thread i (process id i), 0 <= i < threads; any other
        i raises :class:`RecordingError`."""
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(self._threads):
            raise RecordingError("thread %r: this recorder has threads 0 to %d"
                                 % (i, len(self._threads) - 1))
        return self._threads[i]

    def set_init(self, value):
        """The initial value of every word (default 0)."""
        self._init_default = _u64(value, "initial value")

    def set_init_word(self, addr, value):
        """The initial value of one word."""
        if addr in self._init_words:
            raise RecordingError("initial value given twice for address %d" % addr)
        self._init_words[_u64(addr, "address")] = _u64(value, "initial value")

    def comment(self, text):
        """A comment line at the top of the history (command, seed, ...)."""
        self._comments.append(text.replace("\r", " ").replace("\n", " "))

    def crash(self):
        """A full-system crash, between every step recorded so far and every
        step recorded after it; every pending operation is interrupted.
        Call it while no thread records."""
        last = max([t._last_ts for t in self._threads] + self._crashes[-1:])
        ts = self._tick(last)
        for t in self._threads:
            t._pending = None
        self._crashes.append(ts)
        if not self._custom_clock:
            self._tick(ts)  # every later step gets a later timestamp

    def _tick(self, after):
        for _ in range(10 ** 6):
            ts = self._clock()
            if ts > after:
                return ts
        raise RecordingError("crash: the clock does not advance past the last step")

    def _check(self):
        if not any(t._steps for t in self._threads):
            raise RecordingError("no operation was recorded: nothing to write "
                                 "(an empty history would prove nothing)")

    def _head(self, magic):
        yield magic
        for c in self._comments:
            yield "# " + c
        if self._init_default:
            yield "init " + _value(self._init_default)
        words = sorted(self._init_words.items())
        for i in range(0, len(words), 8):
            yield "init " + " ".join("%d=%s" % (a, _value(v)) for a, v in words[i:i + 8])

    @staticmethod
    def _again(steps, j):
        """Step j is a response and the thread's next step an invocation
        with the same timestamp."""
        return (steps[j][1] not in _INVOCATIONS and j + 1 < len(steps)
                and steps[j + 1][1] in _INVOCATIONS and steps[j + 1][0] == steps[j][0])

    def _check_ties(self):
        # Two threads that each respond and invoke again at one timestamp:
        # which of their operations came first is lost, and every order of
        # their lines would invent it (recorders/README.md, rule 4).
        first = {}  # timestamp -> the first such thread
        for t in self._threads:
            for j, (ts, _, _) in enumerate(t._steps):
                if self._again(t._steps, j):
                    other = first.setdefault(ts, t.pid)
                    if other != t.pid:
                        raise RecordingError(
                            "process %d responds and invokes its next operation at timestamp %d, "
                            "as process %d does: which of their operations came first is unknown, "
                            "and any order of these steps would invent it: the clock is too coarse "
                            "for this history; use time.perf_counter_ns() (the default clock)"
                            % (t.pid, ts, other))

    def lines(self):
        """The history, merged, line by line (format v1, no newlines)."""
        self._check()
        self._check_ties()
        for line in self._head("pmlin-history v1"):
            yield line
        pos = [0] * len(self._threads)
        c = 0
        while True:
            # The least (timestamp, invocation before response, a response
            # whose thread invokes again at its timestamp first, process
            # id) among the heads: only heads, so a thread's order is kept.
            best, key = -1, None
            for i, t in enumerate(self._threads):
                if pos[i] < len(t._steps):
                    ts, kind, _ = t._steps[pos[i]]
                    k = (ts, kind not in _INVOCATIONS, not self._again(t._steps, pos[i]))
                    if key is None or k < key:
                        best, key = i, k
            if c < len(self._crashes) and (best < 0 or self._crashes[c] <= key[0]):
                if best >= 0 and self._crashes[c] == key[0]:
                    raise RecordingError(
                        "crash %d has the timestamp of a step of process %d (%d): was "
                        "crash() called while threads recorded?" % (c + 1, best, key[0]))
                yield "crash"
                c += 1
                continue
            if best < 0:
                return
            t = self._threads[best]
            _, kind, payload = t._steps[pos[best]]
            pos[best] += 1
            yield _event(t.pid, kind, payload)

    def log_lines(self):
        """The logs unmerged, each step as ``<ts> <event>``, thread after
        thread, then the crashes: the input of ``pmlin merge``."""
        self._check()
        for line in self._head("pmlin-log v1"):
            yield line
        for t in self._threads:
            for ts, kind, payload in t._steps:
                yield "%d %s" % (ts, _event(t.pid, kind, payload))
        for ts in self._crashes:
            yield "%d crash" % ts

    def write(self, f):
        """Write the history to the text file object ``f``."""
        for line in self.lines():
            f.write(line + "\n")

    def write_log(self, f):
        """Write the unmerged logs to ``f`` (see :meth:`log_lines`)."""
        for line in self.log_lines():
            f.write(line + "\n")

    def write_file(self, path, overwrite=False, log=False):
        """Write the history (or, with ``log``, the logs) to ``path``; an
        existing file is replaced only with ``overwrite``. Nothing is left
        behind on error."""
        lines = list(self.log_lines() if log else self.lines())  # errors first
        try:
            f = open(path, "w" if overwrite else "x", encoding="utf-8", newline="\n")
        except FileExistsError:
            raise RecordingError("%s: the file exists (not overwritten)" % path) from None
        try:
            with f:
                for line in lines:
                    f.write(line + "\n")
        except BaseException:
            os.remove(path)
            raise
