"""persistent_mwcas: a persistent multi-word CAS whose state lives in a file
mapping, recorded with pmlin_recorder, to be crash-tested by

    pmlin fuzz --exec "python3 persistent_mwcas.py"          # no violation
    pmlin fuzz --exec "python3 persistent_mwcas.py --bug"    # caught

The Python twin of recorders/c/example/persistent_mwcas.c: read its
comment (the primitive, the crash model, the protocol of pmlin fuzz
--exec); recorders/README.md, "Crash-testing your C/C++ program", walks
through both.

The state is an mmap of a file (shared: a kill leaves every store in the
page cache): a redo record and the words. A MwCAS takes a lock, compares,
writes the redo record (addresses and new values, then "valid"), writes the
words, clears "valid". A start applies a valid redo record again, so an
operation cut off by a kill took effect entirely or not at all. --bug
writes the words without the redo record. Both variants yield between the
words (time.sleep(0)).

Each start: open the logs ($PMLIN_LOG_DIR), map and recover the state
($PMLIN_STATE_DIR/state), record a read of every word (process THREADS),
and in role run ($PMLIN_ROLE) start the threads and say ready().

Flags: --threads N (4) --words N (8) --k N (2) --ops N (per thread and
start, 20000) --seed N (without PMLIN_SEED) --bug.
"""

import argparse
import mmap
import os
import random
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pmlin_recorder  # noqa: E402

MAX_K = 8
# The state file, in 8-byte words: the redo record, then the words.
VALID, K, ADDRS, VALUES, WORDS = 0, 1, 2, 2 + MAX_K, 2 + 2 * MAX_K


class State:
    """The MwCAS on a shared mapping of the file dir/state."""

    def __init__(self, path, words, bug):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, 8 * (WORDS + words))
            self.m = mmap.mmap(fd, 8 * (WORDS + words))
        finally:
            os.close(fd)
        self.lock = threading.Lock()  # the lock dies with the process
        self.bug = bug

    def get(self, i):
        return struct.unpack_from("<Q", self.m, 8 * i)[0]

    def put(self, i, v):
        struct.pack_into("<Q", self.m, 8 * i, v)

    def recover(self):
        if self.get(VALID):
            for i in range(min(self.get(K), MAX_K)):
                self.put(WORDS + self.get(ADDRS + i), self.get(VALUES + i))
            self.put(VALID, 0)

    def mwread(self, addrs):
        with self.lock:
            return [self.get(WORDS + a) for a in addrs]

    def mwcas(self, addrs, expected, new):
        """Returns None on success, else a word that differed."""
        with self.lock:
            for a, e in zip(addrs, expected):
                if self.get(WORDS + a) != e:
                    return a
            if not self.bug:  # the redo record: all or nothing across a kill
                self.put(K, len(addrs))
                for i, (a, n) in enumerate(zip(addrs, new)):
                    self.put(ADDRS + i, a)
                    self.put(VALUES + i, n)
                self.put(VALID, 1)
            for a, n in zip(addrs, new):
                self.put(WORDS + a, n)
                time.sleep(0)  # a wide window between two words
            self.put(VALID, 0)
            return None


def worker(rec, st, i, a, seed):
    t = rec.thread(i)
    rng = random.Random(seed * 1000003 + i)
    for _ in range(a.ops):
        addrs = rng.sample(range(a.words), a.k)
        t.inv_read(addrs)
        vals = st.mwread(addrs)
        t.ret_read(vals)
        new = [t.tag() for _ in addrs]  # values never written before
        t.inv_cas(list(zip(addrs, vals, new)))
        blamed = st.mwcas(addrs, vals, new)
        if blamed is None:
            t.ret_ok()
        else:
            t.ret_fail(blamed)


def main(argv):
    p = argparse.ArgumentParser(description="a persistent MwCAS for pmlin fuzz --exec")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--words", type=int, default=8)
    p.add_argument("--k", type=int, default=2)
    p.add_argument("--ops", type=int, default=20000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bug", action="store_true")
    a = p.parse_args(argv)
    state_dir = os.environ.get("PMLIN_STATE_DIR")
    if not state_dir or not 1 <= a.k <= min(a.words, MAX_K):
        p.error("run it under pmlin fuzz --exec (recorders/README.md), or set PMLIN_LOG_DIR and PMLIN_STATE_DIR; 1 <= k <= words, k <= 8")
    seed = int(os.environ.get("PMLIN_SEED", a.seed))
    sys.setswitchinterval(1e-5)  # let the threads interleave

    # 1. The logs, first: before the state is touched.
    rec = pmlin_recorder.Recorder(a.threads + 1)  # process THREADS reads after recovery
    rec.open_logs()
    rec.set_init(0)
    # 2. Recover, and record a read of every word: what recovery left.
    st = State(os.path.join(state_dir, "state"), a.words, a.bug)
    st.recover()
    r = rec.thread(a.threads)
    r.inv_read(range(a.words))
    r.ret_read([st.get(WORDS + x) for x in range(a.words)])
    # 3. Role run: the workload; pmlin may kill it once it is ready.
    if os.environ.get("PMLIN_ROLE") != "recover":
        ts = [threading.Thread(target=worker, args=(rec, st, i, a, seed)) for i in range(a.threads)]
        for th in ts:
            th.start()
        pmlin_recorder.ready()
        for th in ts:
            th.join()
    rec.close()  # marks the logs closed: this start ended by itself
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
