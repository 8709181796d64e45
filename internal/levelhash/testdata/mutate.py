#!/usr/bin/env python3
"""The mutation campaign of internal/levelhash: 29 single-line mutants of
levelhash.go (deleted flushes and fences, CASes turned into plain takes of a
lock, negated checks, deleted statements, recovery), each applied to a
private copy of the module (without .git) in $TMPDIR/levelhash-mutate. For
each mutant it runs the package's tests
(`go test -count=1 -run 'TestSequential|TestCrashPoints|TestConcurrent'`)
and, with --fuzz SECONDS, builds the mutant pmlin (-pgo=off) and runs
`pmlin fuzz --target levelhash --seconds SECONDS --seed 1 --jobs 1 --json`.
A mutant is killed when the tests fail (or time out) or the fuzz exits 1.
One JSON line per mutant on stdout, the unmutated control first.

    python3 internal/levelhash/testdata/mutate.py [--fuzz SECONDS] [NAME ...]

Run from anywhere inside the repository (git is needed: a mutant names its
line by its number at commit 106c266 and the text it must hold, and is found
again as the same occurrence of that text in the current file; the script
stops on a mutant whose text is not where it says).
"""
import json, os, shutil, subprocess, sys, time

SRC = subprocess.run(['git', 'rev-parse', '--show-toplevel'], cwd=os.path.dirname(os.path.abspath(__file__)), capture_output=True, text=True, check=True).stdout.strip()
WORK = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'levelhash-mutate')
COPY = os.path.join(WORK, 'mutcopy')
F = 'internal/levelhash/levelhash.go'
D = None
M = [
 ('create-gen-unpersisted','deleted flush',317,'a.Persist(t.l.genOff)',D),
 ('lock-never-taken','CAS to store',369,'!a.CAS(b+lockWord, 0, owner)','\t\tfor a.Err == nil && !a.CAS(b+lockWord, a.Load(b+lockWord), owner) {'),
 ('write-kv-unflushed','deleted flush',417,'a.Flush(keyOff(b, i))',D),
 ('write-kv-unfenced','deleted fence',418,'a.Fence()',D),
 ('write-token-unflushed','deleted flush',425,'a.Flush(b + tokenWord)',D),
 ('write-token-unfenced','deleted fence',426,'a.Fence()',D),
 ('clear-unflushed','deleted flush',432,'a.Flush(b + tokenWord)',D),
 ('clear-unfenced','deleted fence',433,'a.Fence()',D),
 ('generation-unchecked','negated condition',-1,'w != lv.word()','\t\tif w := a.Load(t.l.genOff); a.Err != nil || w != lv.word() && false {'),
 ('inplace-unflushed','deleted flush',517,'a.Flush(keyOff(b, j))',D),
 ('inplace-unfenced','deleted fence',518,'a.Fence()',D),
 ('update-kv-unflushed','deleted flush',535,'a.Flush(keyOff(b, i))',D),
 ('update-kv-unfenced','deleted fence',536,'a.Fence()',D),
 ('update-token-unflushed','deleted flush',542,'a.Flush(b + tokenWord)',D),
 ('update-token-unfenced','deleted fence',543,'a.Fence()',D),
 ('trylock-skipped','CAS to store',604,'!a.CAS(dst+lockWord, 0, owner)','\t\t\tif !mine && !a.CAS(dst+lockWord, a.Load(dst+lockWord), owner) {'),
 ('move-source-kept','deleted statement',None,'t.clear(a, b, i) // a crash',D),
 ('resize-lock-never-taken','CAS to store',639,'!a.CAS(b+lockWord, 0, owner)','\t\t\t\tfor a.Err == nil && !a.CAS(b+lockWord, a.Load(b+lockWord), owner) {'),
 ('resize-generation-unchecked','negated condition',-2,'w != lv.word()','\tif w := a.Load(l.genOff); a.Err != nil || w != lv.word() && false {'),
 ('resize-level-not-cleared','deleted statement',661,'a.Store(b+tokenWord, 0)',D),
 ('resize-clear-unflushed','deleted flush',662,'a.Flush(b + tokenWord)',D),
 ('rehash-kv-unflushed','deleted flush',679,'a.Flush(keyOff(dst, k))',D),
 ('rehash-token-unflushed','deleted flush',680,'a.Flush(dst + tokenWord)',D),
 ('rehash-unfenced','deleted fence',692,'a.Fence()',D),
 ('resize-gen-unpersisted','deleted flush',694,'a.Persist(l.genOff)',D),
 ('recover-keeps-locks','negated condition',715,'a.Load(b+lockWord) != 0','\t\t\tif false {'),
 ('recover-lock-unflushed','deleted flush',717,'a.Flush(b + lockWord)',D),
 ('recover-dedupe-unflushed','deleted flush',738,'a.Flush(b + tokenWord)',D),
 ('recover-unfenced','deleted fence',745,'a.Fence()',D),
]

# The line numbers above are of the file at commit 106c266; each becomes
# the n-th line holding its anchor, found again in the current file.
_OLD = subprocess.run(['git', 'show', '106c266:' + F], cwd=SRC, capture_output=True, text=True).stdout.splitlines()

def apply(lines, m):
    name, kind, ln, anchor, rep = m
    if ln is not None and ln < 0:  # the (-ln)-th line holding the anchor now
        hits = [i for i, l in enumerate(lines) if anchor in l]
        ln = hits[-ln - 1] + 1
    elif ln is not None:
        assert anchor in _OLD[ln - 1], (name, _OLD[ln - 1])
        nth = sum(1 for l in _OLD[:ln - 1] if anchor in l)
        hits = [i for i, l in enumerate(lines) if anchor in l]
        ln = hits[nth] + 1
    if ln is None:
        hits = [i for i, l in enumerate(lines) if anchor in l]
        assert len(hits) == 1, (name, hits)
        i = hits[0]
    else:
        i = ln - 1
        assert anchor in lines[i], (name, lines[i])
    out = list(lines)
    out[i] = (rep + '\n') if rep is not None else '\n'
    return out, i + 1

def run(cmd, timeout):
    t = time.time()
    try:
        p = subprocess.run(cmd, cwd=COPY, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.time() - t
    except subprocess.TimeoutExpired:
        return 'timeout', '', time.time() - t

def main():
    fuzz = None
    only = None
    args = sys.argv[1:]
    if args[:1] == ['--fuzz']:
        fuzz = args[1]; args = args[2:]
    if args:
        only = set(args)
    if os.path.exists(COPY):
        shutil.rmtree(COPY)
    shutil.copytree(SRC, COPY, ignore=shutil.ignore_patterns('.git', 'pmlin-out'))
    orig = open(os.path.join(COPY, F)).readlines()
    results = []
    for m in [('control', '-', None, None, None)] + M:
        if only and m[0] not in only and m[0] != 'control':
            continue
        if m[0] == 'control':
            lines, ln = orig, 0
        else:
            lines, ln = apply(orig, m)
        open(os.path.join(COPY, F), 'w').writelines(lines)
        r = {'name': m[0], 'kind': m[1], 'line': ln}
        rc, out, dt = run(['go', 'test', '-count=1', '-run', 'TestSequential|TestCrashPoints|TestConcurrent', './internal/levelhash'], 300)
        r['tests'] = 'killed' if rc not in (0,) else 'survived'
        r['tests_rc'] = rc
        r['tests_s'] = round(dt, 1)
        if rc not in (0,):
            first = [l for l in out.splitlines() if 'levelhash_test.go' in l or 'panic' in l or 'FAIL' in l][:1]
            r['tests_why'] = first[0].strip()[:200] if first else out[-200:]
        if fuzz:
            b, bo, _ = run(['go', 'build', '-pgo=off', '-o', os.path.join(WORK, 'mutpmlin'), './cmd/pmlin'], 300)
            if b != 0:
                r['fuzz'] = 'build error'
            else:
                fo = os.path.join(WORK, 'mutfuzz-' + m[0])
                shutil.rmtree(fo, ignore_errors=True)
                rc, out, dt = run([os.path.join(WORK, 'mutpmlin'), 'fuzz', '--target', 'levelhash', '--seconds', fuzz, '--seed', '1', '--jobs', '1', '--json', '--out', fo], int(fuzz) + 120)
                r['fuzz_rc'] = rc
                r['fuzz'] = {0: 'survived', 1: 'killed', 2: 'error'}.get(rc, str(rc))
                last = [l for l in out.splitlines() if l.startswith('{')][-1:]
                if last:
                    try:
                        j = json.loads(last[0])
                        f = j.get('finding') or {}
                        r['fuzz_after'] = f.get('after_seconds')
                        r['fuzz_runs'] = j.get('runs')
                        v = (f.get('verdict') or {}).get('anomalies') or []
                        r['fuzz_kind'] = v[0].get('kind') if v else None
                    except Exception as e:
                        r['fuzz_json_err'] = str(e)
                if rc == 2:
                    r['fuzz_err'] = out.strip().splitlines()[-1][:200] if out.strip() else ''
        print(json.dumps(r), flush=True)
        results.append(r)
    open(os.path.join(COPY, F), 'w').writelines(orig)

main()
