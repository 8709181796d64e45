#!/usr/bin/env python3
"""The mutation campaign of internal/dqueue: single-line mutants of its
flushes, fences, CASes and recovery, each applied to a private copy of the
module, built, and fuzzed with `pmlin fuzz --target dqueue` for a short
budget in each mode. A mutant is killed when a campaign exits 1 (a
violation, stuck, blocked or corrupt finding).

    python3 internal/dqueue/testdata/mutate.py [-seconds 8] [-out DIR] [-only a,b]

Each mutant names the statement it changes by its exact text (stripped,
occurring once in the file, or the n-th time) and gives the replacement
line; the script refuses a mutant whose text is not found as given.
"""
import argparse, json, os, re, shutil, subprocess, sys, time

FILE = "internal/dqueue/dqueue.go"

# name, kind, statement text, occurrence (1-based), replacement
MUTANTS = [
    ("node-flush", "deleted flush", "a.Flush(l.node(n)) // the node is on one line (stride divides it)", 1, "_ = n"),
    ("node-fence", "deleted fence", "a.Fence()", 3, "// fence deleted"),
    ("link-cas-store", "CAS to store", "linked = a.CAS(l.next(last), 0, n)", 1, "a.Store(l.next(last), n); linked = true"),
    ("link-flush", "deleted flush", "a.Flush(l.next(last))", 1, "// flush deleted"),
    ("link-fence", "deleted fence", "a.Fence()", 4, "// fence deleted"),
    ("enq-tail-cas", "deleted CAS", "a.CAS(l.tail, last, n)", 1, "// tail CAS deleted"),
    ("enq-help-flush", "deleted flush", "a.Flush(l.next(last))", 2, "// flush deleted"),
    ("enq-help-fence", "deleted fence", "a.Fence()", 5, "// fence deleted"),
    ("enq-help-cas-store", "CAS to store", "a.CAS(l.tail, last, next)", 1, "a.Store(l.tail, next)"),
    ("cell-init-flush", "deleted flush", "a.Flush(l.cell(c))", 1, "// flush deleted"),
    ("slot-flush", "deleted flush", "a.Flush(l.slot(w))", 1, "// flush deleted"),
    ("empty-cell-flush", "deleted flush", "a.Flush(l.cell(c))", 2, "// flush deleted"),
    ("deq-help-flush", "deleted flush", "a.Flush(l.next(last))", 3, "// flush deleted"),
    ("deq-help-fence", "deleted fence", "a.Fence()", 9, "// fence deleted"),
    ("mark-cas-store", "CAS to store", "won = a.CAS(l.mark(next), 0, mark)", 1, "a.Store(l.mark(next), mark); won = true"),
    ("mark-flush", "deleted flush", "a.Flush(l.mark(next))", 1, "// flush deleted"),
    ("mark-fence", "deleted fence", "a.Fence()", 10, "// fence deleted"),
    ("cell-value-fence", "deleted fence", "a.Fence()", 11, "// fence deleted"),
    ("deq-head-cas", "deleted CAS", "a.CAS(l.head, first, next)", 1, "// head CAS deleted"),
    ("help-mark-flush", "deleted flush", "a.Flush(l.mark(next))", 2, "// flush deleted"),
    ("help-mark-fence", "deleted fence", "a.Fence()", 12, "// fence deleted"),
    ("help-same-context", "negated condition", "if a.Load(l.head) != first {", 1, "if a.Load(l.head) != first && false {"),
    ("help-head-cas", "deleted CAS", "a.CAS(l.head, first, next)", 2, "// head CAS deleted"),
    ("rec-cell-flush", "recovery", "a.Flush(l.cell(c))", 4, "// flush deleted"),
    ("rec-head-store", "recovery", "a.Store(l.head, h)", 1, "// head store deleted"),
    ("rec-head-flush", "recovery", "a.Flush(l.head)", 1, "// flush deleted"),
    ("rec-tail-store", "recovery", "a.Store(l.tail, t)", 1, "// tail store deleted"),
    ("rec-tail-flush", "recovery", "a.Flush(l.tail)", 1, "// flush deleted"),
    ("rec-top-walk", "recovery", "top = max(top, t)", 1, "// top not raised"),
    ("rec-node-frontier", "recovery", "a.Store(l.nodeNext, top+1)", 1, "// frontier store deleted"),
    ("rec-node-frontier-off", "recovery", "a.Store(l.nodeNext, top+1)", 1, "a.Store(l.nodeNext, top)"),
    ("rec-cell-frontier", "recovery", "a.Store(l.cellNext, cells+1)", 1, "// frontier store deleted"),
    ("rec-cell-fence", "recovery", "a.Fence() // the cells before head: a finished dequeue's result is durable before its node leaves the list", 1, "// fence deleted"),
    ("rec-final-fence", "recovery", "a.Fence()", 14, "// fence deleted"),
    ("rec-mark-stop", "recovery", "if m == 0 || a.Err != nil {", 1, "if m != 0 || a.Err != nil {"),
]

MODES = ["strict", "durable"]


def apply(src, text, nth, repl):
    lines = src.split("\n")
    hits = [i for i, l in enumerate(lines) if l.strip() == text]
    if len(hits) < nth:
        raise SystemExit(f"mutant text {text!r}: {len(hits)} occurrences, want at least {nth}")
    i = hits[nth - 1]
    indent = re.match(r"\s*", lines[i]).group(0)
    lines[i] = indent + repl
    return "\n".join(lines), i + 1


def fuzz(pmlin, mode, seconds, out):
    t0 = time.time()
    p = subprocess.run([pmlin, "fuzz", "--target", "dqueue", "--mode", mode, "--seed", "1",
                        "--seconds", str(seconds), "--jobs", "1", "--out", out],
                       capture_output=True, text=True, timeout=seconds + 120)
    first = next((l for l in p.stdout.splitlines() + p.stderr.splitlines() if l.startswith("pmlin fuzz:")), "")
    return p.returncode, first, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-seconds", type=float, default=8)
    ap.add_argument("-out", default="/tmp/dqueue-mutation")
    ap.add_argument("-only", default="")
    o = ap.parse_args()
    root = subprocess.run(["go", "env", "GOMOD"], capture_output=True, text=True, check=True).stdout.strip()
    root = os.path.dirname(root)
    work = os.path.join(o.out, "module")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(root, work, ignore=shutil.ignore_patterns(".git"))
    path = os.path.join(work, FILE)
    orig = open(path).read()
    only = set(filter(None, o.only.split(",")))
    results = []
    for name, kind, text, nth, repl in [("control", "none", None, 0, None)] + MUTANTS:
        if only and name not in only and name != "control":
            continue
        src, line = (orig, 0) if text is None else apply(orig, text, nth, repl)
        open(path, "w").write(src)
        pmlin = os.path.join(o.out, "pmlin")
        b = subprocess.run(["go", "build", "-o", pmlin, "./cmd/pmlin"], cwd=work, capture_output=True, text=True)
        r = {"name": name, "kind": kind, "line": line, "change": repl}
        if b.returncode != 0:
            r["verdict"] = "does not build: " + b.stderr.strip().splitlines()[-1]
        else:
            r["runs"] = {}
            for mode in MODES:
                rc, first, secs = fuzz(pmlin, mode, o.seconds, os.path.join(o.out, "runs", name, mode))
                r["runs"][mode] = {"rc": rc, "line": first, "seconds": round(secs, 1)}
                if rc == 1:
                    break
            r["verdict"] = "killed" if any(v["rc"] == 1 for v in r["runs"].values()) else "survived"
        open(path, "w").write(orig)
        results.append(r)
        print(json.dumps(r), flush=True)
    muts = [r for r in results if r["name"] != "control"]
    killed = sum(r["verdict"] == "killed" for r in muts)
    print(f"score: {killed}/{len(muts)} killed", flush=True)
    json.dump(results, open(os.path.join(o.out, "mutation.json"), "w"), indent=1)
    return 0 if results and results[0]["verdict"] != "killed" else 1


if __name__ == "__main__":
    sys.exit(main())
