"""v2_record: records version 2 operations with pmlin_recorder, the twin
of recorders/c/test/v2_record.c (the same history, the same misuses), for
the Go tests (recorders/v2_test.go).

    v2_record.py write          the history, written to standard output
    v2_record.py mapped DIR     the same into mapped logs in DIR
    v2_record.py misuse N       misuse N: its error on standard error, exit 1;
                                exit 3 past the last
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pmlin_recorder  # noqa: E402


def record(rec):
    a, b = rec.thread(0), rec.thread(1)
    q, m, g = rec.object("q", "queue", "cap=2"), rec.object("m", "map"), rec.object("reg", "register", "init=nil")
    a.inv_op(q, "enq", [0x100001])
    b.inv_op(q, "deq")
    a.ret_op(["ok"])
    b.ret_op([0x100001])
    a.inv_op(m, "put", [7, 5])
    a.ret_op(["nil"])
    b.inv_op(g, "cas", ["nil", 3])
    b.ret_unknown()
    a.inv_read([10])  # a version 1 step: the implicit object words
    a.ret_read([0])
    b.inv_op(q, "deq")
    b.ret_op(["empty"])


def misuse(rec, n):
    a = rec.thread(0)
    q = rec.object("q", "queue")
    if n == 0:
        a.inv_op(q + 1, "enq", [1])
    elif n == 1:
        a.inv_op(q, "Enq", [1])
    elif n == 2:
        a.inv_op(q, "enq", ["maybe"])
    elif n == 3:
        a.inv_op(q, "enq", [1])
        a.ret_read([1])
    elif n == 4:
        a.inv_op(q, "deq")
        a.ret_op([])
    elif n == 5:
        rec.object("cas", "queue")
    elif n == 6:
        rec.object("q", "stack")
    else:
        sys.exit(3)
    rec.write(sys.stdout)


def main():
    ticks = [0]

    def clock():
        ticks[0] += 1
        return ticks[0]

    rec = pmlin_recorder.Recorder(2, clock=clock)
    try:
        if sys.argv[1:2] == ["write"]:
            record(rec)
            rec.write(sys.stdout)
        elif sys.argv[1:2] == ["mapped"]:
            rec.open_logs(sys.argv[2], 65536)
            record(rec)
            rec.close()
        elif sys.argv[1:2] == ["misuse"]:
            misuse(rec, int(sys.argv[2]))
        else:
            sys.stderr.write("usage: v2_record.py write | mapped DIR | misuse N\n")
            sys.exit(2)
    except pmlin_recorder.RecordingError as e:
        sys.stderr.write("pmlin: %s\n" % e)
        sys.exit(1)


if __name__ == "__main__":
    main()
