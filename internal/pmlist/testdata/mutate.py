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
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "targetkit", "testdata"))
from mutation import campaign  # noqa: E402

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


if __name__ == "__main__":
    sys.exit(campaign("pmlist", FILE, MUTANTS, MODES, seconds=6))
