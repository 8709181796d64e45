"""persistent_queue: a persistent bounded FIFO queue whose state lives in a
file mapping, recorded as version 2 operations (an object of model queue)
with pmlin_recorder, to be crash-tested by

    pmlin fuzz --exec "python3 persistent_queue.py"          # no violation
    pmlin fuzz --exec "python3 persistent_queue.py --bug"    # caught

The Python twin of recorders/c/example/persistent_queue.c: read its
comment (the queue, why each operation is atomic across a kill, the bug);
recorders/README.md, "Recording version 2 operations".

The state is an mmap of a file (shared: a kill leaves every store in the
page cache): head and tail (how many elements were ever dequeued and
enqueued), then the slots. An enq writes slot tail, then advances tail (its
commit); a deq reads slot head, then advances head. --bug advances tail
before it writes the slot. Both variants yield between the two stores
(time.sleep(0)).

Each start: open the logs ($PMLIN_LOG_DIR), declare the queue, map the
state ($PMLIN_STATE_DIR/state; the lock dies with the process, so recovery
has nothing to do), dequeue until empty as process THREADS, and in role
run ($PMLIN_ROLE) start the threads and say ready().

Flags: --threads N (3) --cap N (4) --ops N (per thread and start, 20000)
--seed N (without PMLIN_SEED) --bug.
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

HEAD, TAIL, SLOTS = 0, 1, 2  # the state file, in 8-byte words


class Queue:
    """The queue on a shared mapping of the file path."""

    def __init__(self, path, cap, bug):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, 8 * (SLOTS + cap))
            self.m = mmap.mmap(fd, 8 * (SLOTS + cap))
        finally:
            os.close(fd)
        self.lock = threading.Lock()
        self.cap, self.bug = cap, bug

    def get(self, i):
        return struct.unpack_from("<Q", self.m, 8 * i)[0]

    def put(self, i, v):
        struct.pack_into("<Q", self.m, 8 * i, v)

    def enq(self, v):
        """False if the queue is full."""
        with self.lock:
            t = self.get(TAIL)
            if t - self.get(HEAD) == self.cap:
                return False
            if self.bug:  # the commit before the slot
                self.put(TAIL, t + 1)
            else:
                self.put(SLOTS + t % self.cap, v)
            time.sleep(0)  # a wide window between the two stores
            if self.bug:
                self.put(SLOTS + t % self.cap, v)
            else:
                self.put(TAIL, t + 1)  # the commit
            return True

    def deq(self):
        """The front element, or None if the queue is empty."""
        with self.lock:
            h = self.get(HEAD)
            if h == self.get(TAIL):
                return None
            v = self.get(SLOTS + h % self.cap)
            time.sleep(0)
            self.put(HEAD, h + 1)  # the commit
            return v


def recorded_deq(t, q, obj):
    t.inv_op(obj, "deq")
    v = q.deq()
    t.ret_op(["empty" if v is None else v])
    return v is not None


def worker(rec, q, obj, i, a, seed):
    t = rec.thread(i)
    rng = random.Random(seed * 1000003 + i)
    for _ in range(a.ops):
        if rng.random() < 0.5:
            v = t.tag()  # a value never enqueued before
            t.inv_op(obj, "enq", [v])
            t.ret_op(["ok" if q.enq(v) else "fail"])
        else:
            recorded_deq(t, q, obj)


def main(argv):
    p = argparse.ArgumentParser(description="a persistent queue for pmlin fuzz --exec")
    p.add_argument("--threads", type=int, default=3)
    p.add_argument("--cap", type=int, default=4)
    p.add_argument("--ops", type=int, default=20000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bug", action="store_true")
    a = p.parse_args(argv)
    state_dir = os.environ.get("PMLIN_STATE_DIR")
    if not state_dir or a.cap < 1 or a.threads < 1:
        p.error("run it under pmlin fuzz --exec (recorders/README.md), or set PMLIN_LOG_DIR and PMLIN_STATE_DIR")
    seed = int(os.environ.get("PMLIN_SEED", a.seed))
    sys.setswitchinterval(1e-5)  # let the threads interleave

    # 1. The logs, first: before the state is touched; the queue, alike
    #    in every start.
    rec = pmlin_recorder.Recorder(a.threads + 1)  # process THREADS reads back
    rec.open_logs()
    obj = rec.object("q", "queue", "cap=%d" % a.cap)
    # 2. Map the state, and read back what the kills left: deq until empty.
    q = Queue(os.path.join(state_dir, "state"), a.cap, a.bug)
    while recorded_deq(rec.thread(a.threads), q, obj):
        pass
    # 3. Role run: the workload; pmlin may kill it once it is ready.
    if os.environ.get("PMLIN_ROLE") != "recover":
        ts = [threading.Thread(target=worker, args=(rec, q, obj, i, a, seed)) for i in range(a.threads)]
        for th in ts:
            th.start()
        pmlin_recorder.ready()
        for th in ts:
            th.join()
    rec.close()  # marks the logs closed: this start ended by itself
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
