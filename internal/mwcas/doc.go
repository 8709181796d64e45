// Package mwcas is a persistent multi-word compare-and-swap (PMwCAS) on a
// pmem.Region, after Wang, Levandoski and Larson, "Easy Lock-Free Indexing in
// Non-Volatile Memory", ICDE 2018, with the bugs a linearizability checker
// should find planted as selectable mutants.
//
// What implements which part of the paper:
//
//   - The persistent single-word CAS with a dirty bit (the paper's section on
//     persistent CAS, "pcas"): a word written with the dirty bit set is not
//     known to be durable; whoever meets it flushes it, fences, and clears the
//     bit before using the value (persistWord, pread).
//   - Descriptors and the two-phase PMwCAS (the paper's section "PMwCAS
//     Operation"): a descriptor holds a status and, per word, address, old
//     and new value. Phase 1 installs a pointer to the descriptor in every
//     word, in address order, each with an RDCSS (a pointer to the word's
//     entry is put in first and replaced by the descriptor pointer only while
//     the status is still undecided), helping any other descriptor met on the
//     way. The installed words are then flushed, the status is decided by a
//     single CAS (with a dirty bit) and persisted; phase 2 replaces each
//     pointer by the new value (or the old one if the operation failed), with
//     the dirty bit, flushes it and clears the bit. Readers that meet a
//     descriptor help it to the end; readers that meet a dirty word persist
//     it first.
//   - Memory management (the paper's section on the descriptor pool and
//     epoch-based reclamation): descriptors live in the region, in a pool
//     partitioned among workers, and a descriptor is reused only after every
//     worker that could still hold a pointer to it has left the epoch in
//     which it was retired. A worker whose RDCSS lands after the status was
//     decided makes the undo of its pointer durable before it leaves,
//     whoever undid it: a worker that entered after the retirement may
//     have. The global epoch is a Go atomic, not region memory; its
//     advance marks a scheduling point (pmem.Worker.Volatile) between the
//     load and the CAS, so the harness's deterministic scheduler can
//     interleave advancers there.
//   - Recovery (the paper's section on recovery): every data word is
//     scanned; a word holding a descriptor pointer takes the new value if the
//     descriptor's durable status is succeeded and the old value otherwise, a
//     word holding an RDCSS pointer takes its old value, dirty bits are
//     cleared; only then are the descriptors freed. A crash during recovery
//     is harmless: recovery changes descriptors last, so running it again
//     makes the same decisions.
//
// The paper's section titles are given, not numbers, because numbering differs
// between the versions of the paper in circulation.
//
// Beyond the paper, for the OPODIS paper's second codebase (a persistent
// multi-word swap, its Figure 10):
//
//   - Swap is a PMwCAS whose expected values are whatever the words hold:
//     its descriptor says "swap", and phase 1 records in each slot's old
//     field the value it is about to displace (made durable before the
//     install, so recovery rolls back to it), then freezes the field once
//     the descriptor is in the word, before the status is decided; the
//     frozen fields are the values the swap returns. Helpers, dirty bits,
//     phase 2 and recovery are the MwCAS's (installSwap says why the old
//     field needs no lock).
//   - CASReport is a MwCAS whose failure also reports the values it read: a
//     snapshot of every word (as Read takes it) after the failure was
//     decided.
//
// # Words and values
//
// The data words are addressed by a dense index 0 .. Words-1 (not a byte
// offset); that index is the address a history names. Values must fit in
// ValueMask: the three top bits of a word are the dirty flag, the descriptor
// flag and the RDCSS flag.
//
// # Region layout
//
// Region word 0-7 hold a superblock (magic, version, geometry, data layout,
// checksum), the data words follow from word 8, then the descriptor pool,
// each descriptor on whole cache lines: status, count (with a flag for a
// swap), then address, old and new per word. RegionWords tells how big a region a configuration needs.
//
// By default the data words are dense, eight to a 64-byte line, so one
// flush persists a word's neighbours too and a missing per-word flush goes
// unseen while a MwCAS's words share a line. Config.Stride spreads them
// (8: one per line) and Config.LineOffset shifts where the line boundaries
// fall; PMwCAS.DataOffset says where word a lives.
//
// # Opening after a restart
//
// New makes everything it writes durable before it returns, the superblock
// last. Open is what a new process runs on the reopened region
// (pmem.Region.Reopen): it checks the superblock and every descriptor's
// status, then Recover repairs the words. A region they cannot accept gets
// an *OpenError, which a harness that crashes the PMwCAS reports as a
// finding.
//
// # Crashes
//
// Every region access can fail with pmem.ErrCrashed once a crash has been
// requested; the operation then unwinds (internally by a panic confined to
// this package) and the operation returns an error wrapping pmem.ErrCrashed.
// After pmem.Region.Crash, call Recover before any new operation, on the
// same object or, as a new process would, on the PMwCAS that Open returns
// for the reopened region.
//
// # Linearization marks
//
// Just before every status CAS (the step that decides an operation, its
// linearization point when it succeeds) the worker calls
// pmem.Worker.MarkLinearization, so the targeted crash policy drops exactly
// the stores from the deciding step on that were not yet durable.
//
// # Assumptions
//
// The multi-word read takes two equal consecutive collects as a snapshot,
// which is sound only if no value is ever written twice to a word (the OPODIS
// paper's assumption 1, which the driver keeps with unique tags); with
// repeated values it can return a torn result.
//
// The CAS needs it too, once helpers can be held back: if a word gets a
// value back (v, then w, then v again), a helper's late RDCSS can land on
// the second v after its descriptor succeeded, and another helper, held
// since it read the status undecided, can then complete that RDCSS into
// the descriptor's pointer, so that the next reader applies the finished
// MwCAS again. internal/pmlist, whose next words would go back to earlier
// values, keeps them new with a tag (its planted bug next-untagged
// leaves the tag out, and pmlin fuzz finds it).
package mwcas
