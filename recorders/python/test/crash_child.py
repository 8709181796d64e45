"""crash_child: a persistent MwCAS on a file mapping, recorded with
pmlin_recorder into logs that survive a kill: the Python twin of
recorders/c/test/crash_child.c (read its comment), for the crash tests of
package recorders, which kill it with SIGKILL, restart it and gather the
logs.

The state is an mmap of a file (shared: a kill leaves every store in the
page cache): a redo record and the words. A MwCAS or a swap takes a lock,
compares, writes the redo record (addresses and new values, then "valid"),
writes the words, clears "valid". A start applies a valid redo record
again, so an operation cut off by a kill took effect entirely or not at
all. --bug writes the words without the redo record.

Usage: python3 crash_child.py STATE [--threads N] [--words N] [--k N]
    [--ops N] [--swaps PERCENT] [--seed N] [--bug] [--recover-only]
    [--log-bytes N] [--kill-after-ms MS]      (the logs go to $PMLIN_LOG_DIR)
"""

import argparse
import mmap
import os
import random
import signal
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pmlin_recorder import Recorder  # noqa: E402

MAX_K = 8
S_VALID, S_K, S_ADDRS, S_NEW, S_WORDS = 1, 2, 3, 3 + MAX_K, 32


class State:
    def __init__(self, path, bug):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, 8 * 4096)
            self.m = mmap.mmap(fd, 8 * 4096)
        finally:
            os.close(fd)
        self.lock = threading.Lock()
        self.bug = bug

    def get(self, i):
        return struct.unpack_from("<Q", self.m, 8 * i)[0]

    def put(self, i, v):
        struct.pack_into("<Q", self.m, 8 * i, v)

    def recover(self):
        if self.get(S_VALID):
            for i in range(min(self.get(S_K), MAX_K)):
                self.put(S_WORDS + self.get(S_ADDRS + i), self.get(S_NEW + i))
            self.put(S_VALID, 0)

    def apply(self, addrs, new):
        if not self.bug:
            self.put(S_K, len(addrs))
            for i, (a, n) in enumerate(zip(addrs, new)):
                self.put(S_ADDRS + i, a)
                self.put(S_NEW + i, n)
            self.put(S_VALID, 1)
        for a, n in zip(addrs, new):
            self.put(S_WORDS + a, n)
            time.sleep(0)  # a window between two words
        self.put(S_VALID, 0)


def worker(rec, st, i, a, gen):
    t = rec.thread(i)
    rng = random.Random(a.seed * 1000003 + i + gen * 7919)
    for _ in range(a.ops):
        addrs = rng.sample(range(a.words), a.k)
        t.inv_read(addrs)
        with st.lock:
            vals = [st.get(S_WORDS + x) for x in addrs]
        t.ret_read(vals)
        new = [t.tag() for _ in addrs]
        if rng.randrange(100) < a.swaps:
            t.inv_swap(list(zip(addrs, new)))
            with st.lock:
                old = [st.get(S_WORDS + x) for x in addrs]
                st.apply(addrs, new)
            t.ret_swap(old)
            continue
        t.inv_cas(list(zip(addrs, vals, new)))
        with st.lock:
            blamed = next((x for x, v in zip(addrs, vals) if st.get(S_WORDS + x) != v), None)
            if blamed is None:
                st.apply(addrs, new)
        if blamed is None:
            t.ret_ok()
        else:
            t.ret_fail(blamed)


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("state")
    p.add_argument("--threads", type=int, default=3)
    p.add_argument("--words", type=int, default=6)
    p.add_argument("--k", type=int, default=2)
    p.add_argument("--ops", type=int, default=5000)
    p.add_argument("--swaps", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bug", action="store_true")
    p.add_argument("--recover-only", action="store_true")
    p.add_argument("--log-bytes", type=int, default=0)
    p.add_argument("--kill-after-ms", type=float, default=0,
                   help="SIGKILL itself that long after its threads start")
    a = p.parse_args(argv)
    sys.setswitchinterval(1e-5)  # let the threads interleave
    rec = Recorder(a.threads + 1)  # the last one reads after recovery
    rec.open_logs(None, a.log_bytes)  # first: before the state is touched
    rec.set_init(0)
    rec.comment("crash_child.py " + " ".join(argv))
    st = State(a.state, a.bug)
    st.recover()
    r = rec.thread(a.threads)
    r.inv_read(range(a.words))
    r.ret_read([st.get(S_WORDS + x) for x in range(a.words)])
    if not a.recover_only:
        ts = [threading.Thread(target=worker, args=(rec, st, i, a, rec.generation)) for i in range(a.threads)]
        for th in ts:
            th.start()
        print("running", flush=True)  # for a test that kills it while its threads record
        if a.kill_after_ms > 0:
            # A kill at a precise moment of the recording.
            time.sleep(a.kill_after_ms / 1000)
            os.kill(os.getpid(), signal.SIGKILL)
        for th in ts:
            th.join()
    rec.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
