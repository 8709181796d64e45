#!/usr/bin/env python3
"""The mutation campaign of internal/pmlist: single-line mutants of its
flushes, fences, PMwCAS calls, search and recovery, each applied to a
private copy of the module, built, and fuzzed with `pmlin fuzz --target
pmlist` for a short budget in strict mode, then durable mode if strict
found nothing. A mutant is killed when a campaign exits 1 (a violation,
stuck, blocked or corrupt finding).

    python3 internal/pmlist/testdata/mutate.py [-seconds 6] [-out DIR] [-only a,b]

Each mutant names the statement it changes by its exact text (stripped,
occurring once in the file, or the n-th time) and gives the replacement
line; the script refuses a mutant whose text is not found as given.
"""
import argparse, json, os, re, shutil, subprocess, sys, time

FILE = "internal/pmlist/pmlist.go"

# name, kind, statement text, occurrence (1-based), replacement
MUTANTS = [
    ("node-next-flush", "deleted flush", "a.Flush(nOff)", 1, "// flush deleted"),
    ("node-key-flush", "deleted flush", "a.Flush(kOff)", 1, "// flush deleted"),
    ("node-key-flush-never", "negated condition", "if kOff/lineWords != nOff/lineWords {", 1, "if false {"),
    ("node-fence", "deleted fence", "a.Fence()", 2, "// fence deleted"),
    ("node-next-store", "wrong store", "a.Store(nOff, x.link(worker, f.curr))", 1, "a.Store(nOff, 0)"),
    ("add-ok-ignored", "CAS result ignored", "if ok {", 2, "if ok || !ok {"),
    ("add-spare-kept", "deleted store", "w.spare = 0", 1, "// spare kept"),
    ("remove-one-word", "PMwCAS narrowed", "ok, _, err := x.m.CAS(worker, w.words[:2])", 1, "ok, _, err := x.m.CAS(worker, w.words[:1])"),
    ("remove-no-mark", "wrong new value", "w.words[1] = mwcas.Word{Addr: nextAddr(f.curr), Old: f.cn, New: f.cn | markBit}", 1, "w.words[1] = mwcas.Word{Addr: nextAddr(f.curr), Old: f.cn, New: x.link(worker, node(f.cn))}"),
    ("remove-no-unlink", "wrong new value", "w.words[0] = mwcas.Word{Addr: nextAddr(f.pred), Old: f.pn, New: x.link(worker, node(f.cn))}", 2, "w.words[0] = mwcas.Word{Addr: nextAddr(f.pred), Old: f.pn, New: x.link(worker, f.curr)}"),
    ("find-no-restart", "negated condition", "if f.cn&markBit != 0 && x.mut != linkAfterDeleted {", 1, "if false {"),
    ("find-key-strict", "off by one", "if f.ckey >= k {", 1, "if f.ckey > k {"),
    ("find-pn-stale", "deleted assignment", "f.pred, f.pn = f.curr, f.cn", 1, "f.pred = f.curr"),
    ("contains-mark-ignored", "deleted condition", "return err == nil && f.curr != 0 && f.ckey == k && f.cn&markBit == 0, err", 1, "return err == nil && f.curr != 0 && f.ckey == k, err"),
    ("link-seq-fixed", "deleted increment", "w.seq++", 1, "// seq not advanced"),
    ("rec-top", "recovery", "top[w] = max(top[w], i)", 1, "_ = w // top not raised"),
    ("rec-frontier-off", "recovery", "x.ws[w].next = max(first, top[w]+1)", 1, "x.ws[w].next = max(first, top[w])"),
    ("rec-seq", "recovery", "x.ws[w].seq = maxTag/x.l.workers + 1", 1, "_ = maxTag // seq not set"),
    ("rec-maxtag", "recovery", "maxTag = max(maxTag, v>>tagShift&tagMask)", 1, "// tags not read"),
    ("rec-spare", "recovery", "x.ws[w].spare = 0", 1, "// spare kept"),
    ("walk-mark-check", "recovery check", "case v&markBit != 0:", 1, "case false:"),
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
    p = subprocess.run([pmlin, "fuzz", "--target", "pmlist", "--mode", mode, "--seed", "1",
                        "--seconds", str(seconds), "--jobs", "1", "--out", out],
                       capture_output=True, text=True, timeout=seconds + 120)
    first = next((l for l in p.stdout.splitlines() + p.stderr.splitlines() if l.startswith("pmlin fuzz:")), "")
    anomaly = next((l for l in p.stdout.splitlines() if l.startswith("anomaly")), "")
    return p.returncode, first, anomaly, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-seconds", type=float, default=6)
    ap.add_argument("-out", default="/tmp/pmlist-mutation")
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
                rc, first, anomaly, secs = fuzz(pmlin, mode, o.seconds, os.path.join(o.out, "runs", name, mode))
                r["runs"][mode] = {"rc": rc, "line": first, "anomaly": anomaly[:200], "seconds": round(secs, 1)}
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
