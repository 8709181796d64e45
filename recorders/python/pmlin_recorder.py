"""Record histories of multi-word reads, CAS and swaps for pmlin, from Python.

pmlin decides whether a history of multi-word operations is linearizable
(the method of Cepeda et al., OPODIS 2019). This module records such a
history while your threads run your primitive and writes it in pmlin's
text format v1 (v2 when objects are declared, below). Standard library
only; the same API shape as the C/C++ header recorders/c/pmlin.h::

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

Operations on objects of any model (format version 2; recorders/README.md,
"Recording version 2 operations")::

    q = rec.object("q", "queue", "cap=4")  # before the threads record
    t.inv_op(q, "enq", [t.tag()])
    t.ret_op(["ok"])                       # symbols by name; or t.ret_unknown(): "ret ?"

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

A program that may be killed (crash testing: SIGKILL, then a restart that
recovers) keeps its logs in a file mapping: ``rec.open_logs(dir)`` right
after ``Recorder(...)``, before anything touches the state; each run of the
program is a new generation of logs in ``dir``, and after the kills
``pmlin gather dir`` writes one history (recorders/README.md, "Logs that
survive a kill", which this module follows as the C header does: the same
file format, the same order of writing and committing a record).

What may run concurrently: the methods of a :class:`Thread` by its owner
thread only (different Thread objects concurrently, freely); the methods
of :class:`Recorder` only while no thread records (before ``start()`` and
after ``join()``).

A misuse (a response with nothing pending, an invocation while one is
pending, a failure blaming an address the cas does not name, a clock that
goes backwards, ...) raises :class:`RecordingError` at once, in the
thread that made it.
"""

import mmap
import os
import re
import struct
import time

__all__ = ["Recorder", "Thread", "RecordingError", "TAG_SHIFT", "LOG_BYTES_DEFAULT", "SYMBOLS"]

TAG_SHIFT = 32
"""Tags are ``(generation << 16 | pid + 1) << TAG_SHIFT | counter``,
counter from 1; generation 0 for logs in memory, the log file's otherwise,
so that a restarted program never hands out a tag of an earlier run."""

LOG_BYTES_DEFAULT = 64 << 20
"""The default room of each thread's log in a log file (a sparse file:
pages cost nothing until written)."""

# The file format of recorders/README.md, "The file format": the same
# constants as recorders/c/pmlin.h.
_MAGIC = 0x31474C4E494C4D50  # "PMLINLG1"
_BYTE_ORDER = 0x0102030405060708
_PAGE_WORDS = 512
_HEAD_WORDS = 512
_RECLOG_WORDS = 131072
_ERR_WORDS = 64
_ERR_TEXT = 400
_MAX_N = 0xFFFFFF
_COMMITTED = 1 << 63
_K_OFF = 0xA0761D6478BD642F
_K_LOG = 0xD6E8FEB86659FD93
_M64 = (1 << 64) - 1
_REC = {"read": 1, "cas": 2, "swap": 3, "values": 4, "ok": 5, "fail": 6, "fail_values": 7,
        "op": 8, "op_ret": 9, "unknown": 10,
        "error": 16, "comment": 17, "init": 18, "init_word": 19, "crash": 20, "close": 21, "object": 22}

# Version 2 (recorders/README.md, "Recording version 2 operations"): the
# format's symbols, by their code in a record, and the limits of pmlin.h.
SYMBOLS = ("nil", "ok", "fail", "empty", "true", "false")
MAX_OP_VALUES = 64
MAX_OP_NAME = 255
_NAME = re.compile(r"[a-z][a-z0-9_-]*\Z")


def _sum(h, first, words):
    """Adds words, at positions first, first+1, ... of a record, to the sum
    of its check: each word rotated left by 7 times its position,
    exclusive-or'ed in."""
    for i, w in enumerate(words, first):
        r = 7 * i & 63
        h ^= (w << r | w >> (64 - r)) & _M64
    return h


def _seal(h):
    """The 31-bit check of a record from its sum."""
    return ((h ^ h >> 32) * _K_LOG & _M64) >> 33


class _Log:
    """One log in a mapping (a thread's, or the recorder's own): appends
    records in the order of recorders/README.md, "Logs that survive a
    kill": the first word (kind and size, not committed), then the rest,
    then the first word again with its check and the commit bit, last."""

    def __init__(self, mem, base, words, seed):
        self.mem, self.base, self.seed = mem, base, seed
        self.cap = words - _ERR_WORDS  # the rest is kept for an error record
        self.len = 0

    def open(self, kind, n, words, payload):
        """Starts a record of ``words`` words: its first word, then its
        payload (after the timestamp's place); returns the partial sum of
        its check, or None if it does not fit."""
        if self.len + words > self.cap:
            return None
        lo = kind | n << 8
        at = self.base + 8 * self.len
        struct.pack_into("<Q", self.mem, at, lo)
        if payload:
            struct.pack_into("<%dQ" % len(payload), self.mem, at + 16, *payload)
        return _sum(_sum((self.seed + self.len * _K_OFF) & _M64, 0, (lo,)), 2, payload)

    def commit(self, kind, n, words, ts, h):
        """Stamps and commits the record opened at the end of the log."""
        at = self.base + 8 * self.len
        struct.pack_into("<Q", self.mem, at + 8, ts)
        h = _seal(_sum(h, 1, (ts,)))
        struct.pack_into("<Q", self.mem, at, kind | n << 8 | h << 32 | _COMMITTED)
        self.len += words

    def withdraw(self, words):
        """Takes the last record, of ``words`` words, out of the log, in an
        order a kill may cut anywhere: the commit bit (the last byte of the
        first word) cleared first, which leaves a torn record a reader
        cuts; then the other words zeroed; then the first word."""
        self.len -= words
        at = self.base + 8 * self.len
        struct.pack_into("<B", self.mem, at + 7, 0)
        struct.pack_into("<%dQ" % (words - 1), self.mem, at + 8, *([0] * (words - 1)))
        struct.pack_into("<Q", self.mem, at, 0)

    def put(self, kind, n, ts, payload):
        h = self.open(kind, n, 2 + len(payload), payload)
        if h is None:
            return False
        self.commit(kind, n, 2 + len(payload), ts, h)
        return True

    def put_text(self, kind, ts, text, reserve=False):
        """A record holding text (a comment, an error): n is its length in
        bytes. With reserve, in the room kept for an error record."""
        b = text.encode("utf-8")[:_MAX_N]
        b += b"\0" * (-len(b) % 8)
        n = len(text.encode("utf-8")[:_MAX_N])
        payload = struct.unpack("<%dQ" % (len(b) // 8), b)
        if reserve:
            self.cap += _ERR_WORDS
        return self.put(_REC[kind], n, ts, list(payload))

# Step kinds, as stored in a thread's list: (timestamp, kind, payload).
_INV_READ, _INV_CAS, _INV_SWAP = "read", "cas", "swap"
_RET_VALUES, _RET_OK, _RET_FAIL = "values", "ok", "fail"
_INV_OP, _RET_OP, _RET_UNKNOWN = "op", "op_ret", "unknown"  # version 2
_INVOCATIONS = (_INV_READ, _INV_CAS, _INV_SWAP, _INV_OP)


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
        self._tag_base = (pid + 1) << TAG_SHIFT
        self._log = None  # a _Log, once the recorder's logs are mapped

    def _fail(self, msg):
        msg = "thread %d, step %d: %s" % (self.pid, len(self._steps) + 1, msg)
        log, self._log = self._log, None  # the log ends with its error
        if log is not None:
            # So that pmlin gather refuses the log as write() would: the
            # process may be killed before it writes anything.
            log.put_text("error", self._last_ts, msg, reserve=True)
        raise RecordingError(msg)

    def _full(self):
        self._fail("its log is full (%d bytes): give open_logs more room per thread"
                   % (8 * (self._log.cap + _ERR_WORDS)))

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
        return self._tag_base | self._tags

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
        if len(addrs) > _MAX_N:
            self._fail("an operation on %d words: at most %d" % (len(addrs), _MAX_N))
        log = self._log
        if log is not None:
            # Everything of the record but its timestamp before the clock
            # is read, so that the recorded interval grows by little.
            words = _flat(kind, payload)
            h = log.open(_REC[kind], len(addrs), 2 + len(words), words)
            if h is None:
                self._full()
        self._pending = (kind, addrs)
        ts = self._stamp()
        self._steps.append((ts, kind, payload))
        if log is not None:
            log.commit(_REC[kind], len(addrs), 2 + len(words), ts, h)

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

    def _respond(self, want, kind, payload, ts, words=None):
        if self._pending is None:
            self._fail("a response with no pending invocation")
        if self._pending[0] != want:
            self._fail("the response of a %s answers a pending %s" % (
                want if want != _INV_OP else "version 2 operation",
                self._pending[0] if self._pending[0] != _INV_OP else "version 2 operation"))
        self._pending = None
        self._steps.append((ts, kind, payload))
        if self._log is not None and words is not None:  # version 2: the record's words given
            if not self._log.put(_REC[kind], len(payload), ts, words):
                self._full()
        elif self._log is not None:
            if kind == _RET_FAIL and len(payload) > 1:
                rk, n = _REC["fail_values"], len(payload) - 1
            else:
                rk, n = _REC[kind], len(payload) if kind == _RET_VALUES else 0
            if not self._log.put(rk, n, ts, list(payload)):
                self._full()

    def _withdraw(self):
        """Takes the pending invocation, the thread's last step, out of its
        log (pmlin_ret_fail_unknown in pmlin.h)."""
        _, kind, payload = self._steps.pop()
        self._pending = None
        if self._log is not None:
            self._log.withdraw(2 + len(_flat(kind, payload)))

    def _values(self, values):
        values = tuple(_u64(v, "value") for v in values)
        if self._pending is not None and self._pending[0] != _INV_OP and len(values) != len(self._pending[1]):
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

    def ret_fail(self, addr=None, values=None):
        """The pending cas failed, blaming ``addr``: one of its addresses
        that it saw hold another value than the expected one during the
        operation (not before it was invoked). With ``values``, also the
        values it read at each of its addresses, in order, from one atomic
        snapshot (``ret fail <a> <v1> ... <vk>``). Without ``addr`` (a
        primitive that returns only a bool): a cas of one word blames it;
        one of more words is withdrawn, left out of the history
        (recorders/README.md, rule 6)."""
        ts = self._stamp()
        if addr is None:
            if values is not None:
                self._fail("a failure that reports values must name its address")
            if self._pending is None or self._pending[0] != _INV_CAS or len(self._pending[1]) == 1:
                addr = self._pending[1][0] if self._pending is not None and self._pending[1] else None
            else:
                self._withdraw()
                return
        if self._pending is not None and addr not in self._pending[1]:
            self._fail("the failure blames address %r, which the cas does not name" % (addr,))
        payload = (addr,) if values is None else (addr,) + self._values(values)
        self._respond(_INV_CAS, _RET_FAIL, payload, ts)

    # ---- version 2: operations on objects of any model ----

    def _op_values(self, values, what):
        """The words of version 2 values: the symbol mask, then each
        number or symbol code."""
        values = tuple(values)
        if len(values) > MAX_OP_VALUES:
            self._fail("%d %s: at most %d" % (len(values), what, MAX_OP_VALUES))
        mask, words = 0, []
        for i, v in enumerate(values):
            if isinstance(v, str) and v in SYMBOLS:
                mask |= 1 << i
                words.append(SYMBOLS.index(v) + 1)
            elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64:
                words.append(v)
            else:
                self._fail("value %d (%r) is neither an unsigned 64-bit integer nor a symbol %s"
                           % (i + 1, v, "/".join(SYMBOLS)))
        return values, [mask] + words

    def inv_op(self, obj, op, args=()):
        """Invocation of operation ``op`` (its model's name: "enq", "put",
        ...) with arguments ``args`` (integers, or symbols such as "nil")
        on object ``obj``, an id :meth:`Recorder.object` returned."""
        if self._pending is not None:
            self._fail("an invocation while the thread's previous operation "
                       "is pending (no response recorded)")
        objects = self._rec._objects
        if not isinstance(obj, int) or isinstance(obj, bool) or not 0 <= obj < len(objects):
            self._fail("an operation on object %r, which Recorder.object did not return" % (obj,))
        if not isinstance(op, str) or not _NAME.match(op) or len(op) > MAX_OP_NAME:
            self._fail("an operation name %r that is not [a-z][a-z0-9_-]* of at most %d characters"
                       % (op, MAX_OP_NAME))
        args, words = self._op_values(args, "arguments")
        name = op.encode("ascii")
        n = len(args) | len(name) << 8
        log = self._log
        if log is not None:
            b = name + b"\0" * (-len(name) % 8)
            words = [obj] + words + list(struct.unpack("<%dQ" % (len(b) // 8), b))
            h = log.open(_REC[_INV_OP], n, 2 + len(words), words)
            if h is None:
                self._full()
        self._pending = (_INV_OP, ())
        ts = self._stamp()
        self._steps.append((ts, _INV_OP, (objects[obj].split(" ", 1)[0], op, args)))
        if log is not None:
            log.commit(_REC[_INV_OP], n, 2 + len(words), ts, h)

    def ret_op(self, results):
        """The response of the pending :meth:`inv_op`: its results (one at
        least: "ok", an integer, "empty", ...)."""
        ts = self._stamp()
        results, words = self._op_values(results, "results")
        if not results:
            self._fail("a response with no result (ret_unknown() says the outcome is unknown)")
        self._respond(_INV_OP, _RET_OP, results, ts, words)

    def ret_unknown(self):
        """The outcome of the pending :meth:`inv_op` is unknown (``ret ?``:
        it may or may not have taken effect, any time after its
        invocation)."""
        ts = self._stamp()
        self._respond(_INV_OP, _RET_UNKNOWN, (), ts, [])


def _thread_words(thread_bytes):
    """Each thread's log in words, whole pages (0: the default)."""
    return ((thread_bytes or LOG_BYTES_DEFAULT) // 8 + _PAGE_WORDS - 1) // _PAGE_WORDS * _PAGE_WORDS


def _flat(kind, payload):
    """An invocation's payload as the words of its record."""
    if kind == _INV_READ:
        return list(payload)
    return [w for word in payload for w in word]


def _op_value(v):
    return v if isinstance(v, str) else _value(v)


def _event(pid, kind, payload):
    """The text of one step of process pid (without newline)."""
    if kind == _INV_OP:
        name, op, args = payload
        return "%d inv %s %s%s" % (pid, name, op, "".join(" " + _op_value(v) for v in args))
    if kind == _RET_OP:
        return "%d ret %s" % (pid, " ".join(_op_value(v) for v in payload))
    if kind == _RET_UNKNOWN:
        return "%d ret ?" % pid
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


def ready():
    """Tells ``pmlin fuzz --exec`` that this start of the program is ready
    to be killed: it has opened its logs, recovered its state, recorded
    its read of it, and started its threads (recorders/README.md, "The
    protocol of pmlin fuzz --exec"). Writes the line ``ready`` to the file
    descriptor that the environment variable PMLIN_READY_FD names, and
    closes it; pmlin times its kill from then on. Without PMLIN_READY_FD
    (the program run by hand) it does nothing."""
    fd = os.environ.get("PMLIN_READY_FD")
    if not fd:
        return
    fd = int(fd)
    try:
        os.write(fd, b"ready\n")
    finally:
        os.close(fd)


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
        self._comments = []  # (timestamp, text); timestamp 0: at the top
        self._objects = []  # version 2: each object's "name model params", by id
        self._log = None  # the recorder's own _Log, once mapped
        self._mem = None  # the mapping open_logs made
        self.generation = 0
        """The generation of the mapped logs (1, 2, ...: the runs of the
        program in one log directory); 0 while the logs are in memory."""

    def thread(self, i):
        """The log of thread i (process id i), 0 <= i < threads; any other
        i raises :class:`RecordingError`."""
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(self._threads):
            raise RecordingError("thread %r: this recorder has threads 0 to %d"
                                 % (i, len(self._threads) - 1))
        return self._threads[i]

    def _put(self, kind, n, ts, payload):
        """A record in the recorder's own log, if mapped."""
        if self._log is not None and not self._log.put(_REC[kind], n, ts, payload):
            self._log.put_text("error", ts, "the recorder's own log: it is full (%d bytes): too many initial "
                               "values, comments or crashes" % (8 * _RECLOG_WORDS), reserve=True)
            self._log = None
            raise RecordingError("the recorder's own log is full")

    def set_init(self, value):
        """The initial value of every word (default 0): the state before the
        first operation of the history (a restarted program that recovers
        a state does not set it, or sets the same)."""
        self._init_default = _u64(value, "initial value")
        self._put("init", 0, 0, [value])

    def set_init_word(self, addr, value):
        """The initial value of one word."""
        if addr in self._init_words:
            raise RecordingError("initial value given twice for address %d" % addr)
        self._init_words[_u64(addr, "address")] = _u64(value, "initial value")
        self._put("init_word", 0, 0, [addr, value])

    def object(self, name, model, params=""):
        """Declares an object of a version 2 history: its name
        ([a-z][a-z0-9_-]*, not read, cas, swap or crash), its model
        ("queue", "map", ...: docs/history-format.md) and its parameters
        ("cap=8"; several separated by spaces). Returns its id for
        :meth:`Thread.inv_op` (0, 1, ... in the order declared). A
        recorder with objects writes version 2, where the word operations
        act on the implicit object "words". Declare the objects before any
        thread records, and in every run of a program whose mapped logs
        pmlin gather merges the same ones, in the same order."""
        for x in (name, model):
            if not isinstance(x, str) or not _NAME.match(x) or len(x) > 64 or (
                    x is name and name in ("read", "cas", "swap", "crash")):
                raise RecordingError("object: a name and a model are [a-z][a-z0-9_-]* (at most 64 "
                                     "characters), the name not read, cas, swap or crash: %r" % (x,))
        if not isinstance(params, str) or any(c < " " or c > "~" or c == "#" for c in params):
            raise RecordingError("object: parameters are printable ASCII without '#': %r" % (params,))
        if any(o.split(" ", 1)[0] == name for o in self._objects):
            raise RecordingError("object: object declared twice: %s" % name)
        decl = " ".join([name, model] + ([params] if params else []))
        self._objects.append(decl)
        if self._log is not None:
            self._log.put_text("object", 0, decl)
        return len(self._objects) - 1

    def _recorded(self):
        return any(t._steps for t in self._threads) or bool(self._crashes)

    def _between(self):
        """A timestamp strictly after every step, crash and comment recorded
        so far; with the default clock, later steps get later ones: the
        place of a crash or a comment among the steps (README, rule 7)."""
        last = max([t._last_ts for t in self._threads] + self._crashes[-1:]
                   + [c[0] for c in self._comments[-1:]])
        ts = self._tick(last)
        if not self._custom_clock:
            self._tick(ts)  # every later step gets a later timestamp
        return ts

    def comment(self, text):
        """A comment line in the history (command, seed, ...): at the top if
        nothing was recorded yet, else where it is made, after every step
        recorded before it and before every step recorded after it (like a
        crash). Call it while no thread records."""
        text = text.replace("\r", " ").replace("\n", " ")
        ts = self._between() if self._recorded() else 0
        self._comments.append((ts, text))
        if self._log is not None:
            self._log.put_text("comment", ts, text)

    def crash(self):
        """A full-system crash inside this process, between every step
        recorded so far and every step recorded after it; every pending
        operation is interrupted. Call it while no thread records. A crash
        that kills the process needs no call: pmlin gather writes it."""
        ts = self._between()
        for t in self._threads:
            t._pending = None
        self._crashes.append(ts)
        self._put("crash", 0, ts, [])

    # ---- logs that survive a kill (README, "Logs that survive a kill") ----

    def open_logs(self, dir=None, thread_bytes=0):
        """Keeps the logs in a new file of directory ``dir`` (None: the
        environment variable PMLIN_LOG_DIR), mapped shared, so that every
        record committed before the process is killed is in the file. The
        file is ``dir/gen-NNNNNN.pmlog``, NNNNNN the generation: one more
        than the last one in dir (created exclusively); dir is created if
        missing. ``thread_bytes`` is each thread's room (0: 64 MiB; the file
        is sparse). Call it right after ``Recorder(...)``, before the
        program touches the state it recovers and before anything is
        recorded; ``pmlin gather dir`` turns the generations into one
        history. Returns the file's path."""
        self._may_open()
        dir = dir or os.environ.get("PMLIN_LOG_DIR")
        if not dir:
            raise RecordingError("no log directory: give open_logs one, or set PMLIN_LOG_DIR")
        thread_words = _thread_words(thread_bytes)
        size = 8 * (_HEAD_WORDS + _RECLOG_WORDS + len(self._threads) * thread_words)
        os.makedirs(dir, exist_ok=True)
        gen = 1
        while True:
            path = os.path.join(dir, "gen-%06d.pmlog" % gen)
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
                break
            except FileExistsError:
                gen += 1
        try:
            os.ftruncate(fd, size)
            mem = mmap.mmap(fd, size)  # shared, readable and writable
        finally:
            os.close(fd)
        self._mem = mem
        self._lay_out(mem, gen, thread_words)
        return path

    def open_buffer(self, buf, generation):
        """Keeps the logs in ``buf``, a writable buffer of the caller's (an
        mmap of a file of its own, say), as generation ``generation`` (1 or
        more), in the layout of a log file, so that a file holding the
        buffer is a log pmlin gather reads. The buffer is zeroed; each
        thread gets an equal part, whole pages."""
        self._may_open()
        if generation < 1:
            raise RecordingError("open_buffer: the generation must be 1 or more")
        fixed = _HEAD_WORDS + _RECLOG_WORDS
        words = len(buf) // 8
        thread_words = (words - fixed) // len(self._threads) // _PAGE_WORDS * _PAGE_WORDS if words > fixed else 0
        if thread_words < 2 * _ERR_WORDS:
            raise RecordingError("a buffer of %d bytes is too small for %d threads" % (len(buf), len(self._threads)))
        used = 8 * (fixed + len(self._threads) * thread_words)
        buf[:used] = bytes(used)
        self._lay_out(buf, generation, thread_words)

    def _may_open(self):
        if self._log is not None or self._mem is not None:
            raise RecordingError("the logs are open already")
        if self._recorded():
            raise RecordingError("open the logs before recording anything")

    def _lay_out(self, mem, gen, thread_words):
        n = len(self._threads)
        if n >= 1 << 16 or (gen << 16 | n) >> (64 - TAG_SHIFT):
            raise RecordingError("generation %d of %d threads does not fit in the tags" % (gen, n))
        nonce = int.from_bytes(os.urandom(8), "little")
        struct.pack_into("<11Q", mem, 8, 1, _BYTE_ORDER, gen, n, nonce, _HEAD_WORDS, _RECLOG_WORDS,
                         thread_words, os.getpid(), self._clock(), TAG_SHIFT)
        self._log = _Log(mem, 8 * _HEAD_WORDS, _RECLOG_WORDS, nonce)
        for i, t in enumerate(self._threads):
            t._log = _Log(mem, 8 * (_HEAD_WORDS + _RECLOG_WORDS + i * thread_words), thread_words,
                          (nonce + (i + 1) * _K_LOG) & _M64)
            t._tag_base = ((gen << 16) + i + 1) << TAG_SHIFT
        self.generation = gen
        struct.pack_into("<Q", mem, 0, _MAGIC)  # last: a file without it recorded nothing
        if self._init_default is not None:
            self._put("init", 0, 0, [self._init_default])
        for a, v in self._init_words.items():
            self._put("init_word", 0, 0, [a, v])
        for ts, text in self._comments:
            self._log.put_text("comment", ts, text)
        for decl in self._objects:
            self._log.put_text("object", 0, decl)

    def close(self):
        """Ends the recording in the mapped logs (pmlin gather then writes no
        crash line after this generation unless an operation was left
        pending) and unmaps the file open_logs mapped. The history stays
        in memory: write() and the others still work. Call it while no
        thread records; without mapped logs it does nothing."""
        if self._log is not None:
            self._put("close", 0, self._clock(), [])
        self._log = None
        for t in self._threads:
            t._log = None
        if self._mem is not None:
            self._mem.close()
            self._mem = None

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
        for t in self._threads:
            if t._pending is not None:
                # A thread that stopped in the middle of an operation must
                # say so with crash() (README, rule 7), not leave it for the
                # history to read as cut off by a crash nobody recorded.
                raise RecordingError(
                    "thread %d: its last operation (step %d) is pending at the end: record its "
                    "response, or call crash() to cut it off" % (t.pid, len(t._steps)))

    def _head(self, magic):
        yield magic
        for ts, c in self._comments:
            if ts == 0 or magic == "pmlin-log v1":  # pmlin merge drops comments anyway
                yield "# " + c
        for decl in self._objects:
            yield "object " + decl
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
        for line in self._head("pmlin-history v2" if self._objects else "pmlin-history v1"):
            yield line
        pos = [0] * len(self._threads)
        c = 0
        later = [cm for cm in self._comments if cm[0]]  # comments made while recording
        m = 0
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
            if m < len(later) and (best < 0 or later[m][0] < key[0]) and (
                    c >= len(self._crashes) or later[m][0] < self._crashes[c]):
                yield "# " + later[m][1]
                m += 1
                continue
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
        if self._objects:
            raise RecordingError("log_lines: pmlin merge reads version 1 logs, and this recorder has "
                                 "version 2 objects: write the history, or gather mapped logs with pmlin gather")
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
