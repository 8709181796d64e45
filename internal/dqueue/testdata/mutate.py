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
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "targetkit", "testdata"))
from mutation import campaign  # noqa: E402

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


if __name__ == "__main__":
    sys.exit(campaign("dqueue", FILE, MUTANTS, MODES, seconds=8))
