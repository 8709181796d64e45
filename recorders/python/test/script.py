"""script: drives pmlin_recorder from a script on standard input, with a
clock the script sets; the same commands as recorders/c/test/script.c, so
the Go tests in package recorders hold both recorders to the same merge
rules and misuse errors. Exit 1 with the error on standard error."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pmlin_recorder  # noqa: E402


def numbers(args):
    out = []
    for a in args:
        for part in a.replace("=", ":").split(":"):
            out.append(int(part, 0))
    return out


def main():
    now = [0]
    rec = None
    try:
        for line in sys.stdin:
            f = line.split()
            if not f:
                continue
            cmd, args = f[0], f[1:]
            if cmd == "comment":
                rec.comment(line.rstrip("\n")[len("comment "):])
                continue
            if cmd == "threads":
                rec = pmlin_recorder.Recorder(int(args[0]), clock=lambda: now[0])
                continue
            if cmd.startswith(("inv-", "ret-")) or cmd == "tag":
                t, args = rec.thread(int(args[0])), args[1:]
            v = numbers(args)
            if cmd == "clock":
                now[0] = v[0]
            elif cmd == "init":
                if len(v) == 1:
                    rec.set_init(v[0])
                for i in range(0, len(v) - 1, 2):
                    rec.set_init_word(v[i], v[i + 1])
            elif cmd == "inv-read":
                t.inv_read(v)
            elif cmd == "inv-cas":
                t.inv_cas([tuple(v[i:i + 3]) for i in range(0, len(v), 3)])
            elif cmd == "inv-swap":
                t.inv_swap([tuple(v[i:i + 2]) for i in range(0, len(v), 2)])
            elif cmd == "ret-read":
                t.ret_read(v)
            elif cmd == "ret-swap":
                t.ret_swap(v)
            elif cmd == "ret-ok":
                t.ret_ok()
            elif cmd == "ret-fail":
                if v:
                    t.ret_fail(v[0], v[1:] if len(v) > 1 else None)
                else:
                    t.ret_fail()
            elif cmd == "tag":
                print("0x%x" % t.tag())
            elif cmd == "crash":
                rec.crash()
            elif cmd == "write":
                rec.write(sys.stdout)
            elif cmd == "log":
                rec.write_log(sys.stdout)
            else:
                print("script: unknown command " + cmd, file=sys.stderr)
                return 2
    except pmlin_recorder.RecordingError as e:
        sys.stdout.flush()
        print("pmlin: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
