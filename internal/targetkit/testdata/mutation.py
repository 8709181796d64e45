"""The engine of the built-in data-structure targets' mutation campaigns
(internal/dqueue/testdata/mutate.py, internal/pmlist/testdata/mutate.py):
each single-line mutant is applied to a private copy of the module, built,
and fuzzed with `pmlin fuzz --target T` for a short budget in each mode in
turn; a mutant is killed when a campaign exits 1 (a violation, stuck,
blocked or corrupt finding). The unmutated module runs first as a control.

A mutant is (name, kind, statement text, occurrence (1-based),
replacement): it names the statement it changes by its exact text
(stripped, the n-th occurrence in the file) and gives the replacement line;
a mutant whose text is not found as given stops the campaign.
"""
import argparse, json, os, re, shutil, subprocess, time


def apply(src, text, nth, repl):
    lines = src.split("\n")
    hits = [i for i, l in enumerate(lines) if l.strip() == text]
    if len(hits) < nth:
        raise SystemExit(f"mutant text {text!r}: {len(hits)} occurrences, want at least {nth}")
    i = hits[nth - 1]
    indent = re.match(r"\s*", lines[i]).group(0)
    lines[i] = indent + repl
    return "\n".join(lines), i + 1


def fuzz(pmlin, target, mode, seconds, out):
    t0 = time.time()
    p = subprocess.run([pmlin, "fuzz", "--target", target, "--mode", mode, "--seed", "1",
                        "--seconds", str(seconds), "--jobs", "1", "--out", out],
                       capture_output=True, text=True, timeout=seconds + 120)
    first = next((l for l in p.stdout.splitlines() + p.stderr.splitlines() if l.startswith("pmlin fuzz:")), "")
    anomaly = next((l for l in p.stdout.splitlines() if l.startswith("anomaly")), "")
    return p.returncode, first, anomaly, time.time() - t0


def campaign(target, file, mutants, modes, seconds):
    """Runs the campaign of file's mutants against target: returns the
    exit status (0 when the unmutated control is not killed)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("-seconds", type=float, default=seconds)
    ap.add_argument("-out", default=f"/tmp/{target}-mutation")
    ap.add_argument("-only", default="")
    o = ap.parse_args()
    root = subprocess.run(["go", "env", "GOMOD"], capture_output=True, text=True, check=True).stdout.strip()
    root = os.path.dirname(root)
    work = os.path.join(o.out, "module")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(root, work, ignore=shutil.ignore_patterns(".git"))
    path = os.path.join(work, file)
    orig = open(path).read()
    only = set(filter(None, o.only.split(",")))
    results = []
    for name, kind, text, nth, repl in [("control", "none", None, 0, None)] + mutants:
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
            for mode in modes:
                rc, first, anomaly, secs = fuzz(pmlin, target, mode, o.seconds, os.path.join(o.out, "runs", name, mode))
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
