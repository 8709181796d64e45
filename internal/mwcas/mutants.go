package mwcas

import (
	"fmt"
	"slices"
	"strings"
)

// mutant identifies a planted bug; 0 is the correct algorithm.
type mutant uint8

const (
	mutNone mutant = iota
	// mutDirtySpuriousFailure: phase 1 meets its expected value with the
	// dirty bit set (a phase-2 or rollback write not yet cleaned) and takes
	// it as a mismatch, so the MwCAS fails although the word held the
	// expected value: the bug the OPODIS paper found in the original code.
	// Exposed by an interleaving: a MwCAS that fails rolls a word back to v
	// (v|dirty), and before the rollback's flush-and-clear another MwCAS
	// expecting v reaches that word; it fails blaming a word that holds v.
	mutDirtySpuriousFailure
	// mutReadDirtyUnpersisted: a persistent read that meets a dirty word or a
	// dirty status uses the value without flushing it. Exposed by a helper
	// that reads a just-decided (dirty) status, does phase 2 on its strength,
	// and a crash (min, random or targeted) that falls in the helper's phase 2
	// before the status line was flushed: the durable status is undecided,
	// recovery rolls back the words still holding the descriptor while the
	// helper's new values stay: a torn MwCAS.
	mutReadDirtyUnpersisted
	// mutDescriptorUnflushed: the descriptor is filled but not flushed before
	// its pointer is installed. Exposed by a crash (min, or random) after the
	// installed words were persisted and before the status line was: recovery
	// finds words pointing to a descriptor whose durable contents are empty or
	// belong to its previous use.
	mutDescriptorUnflushed
	// mutStatusUnpersisted: the status is decided without the dirty bit and
	// never flushed before phase 2. Exposed by a crash (min, targeted, or
	// random) in phase 2: some words durably hold new values, the others the
	// descriptor, whose durable status is undecided, so they roll back.
	mutStatusUnpersisted
	// mutRecoveryWrongWay: recovery rolls a succeeded descriptor back and
	// every other one forward. Exposed by any crash (under any policy) that
	// leaves a descriptor pointer in a word: after phase 1 and before phase
	// 2 finished.
	mutRecoveryWrongWay
	// mutRecoverySkipsRDCSS: recovery ignores RDCSS pointers and leaves them
	// in the words. Exposed by a crash that keeps an RDCSS pointer in the
	// durable image: between an RDCSS install and the store that replaces it,
	// under max or random (min keeps it only if the line was flushed since).
	mutRecoverySkipsRDCSS
	// mutStatusWithoutCAS: the status is written with a plain store of the
	// outcome instead of a CAS from undecided. Exposed by a helper that
	// decides late: it is in phase 1 of a descriptor when another worker
	// decides it succeeded and starts phase 2; the helper reads a word that
	// phase 2 already changed, takes it for a mismatch and overwrites the
	// status with failed, so the words phase 2 has not reached yet are
	// rolled back: a torn MwCAS. Two contending MwCAS that help each other
	// produce it; the tests found it in a crash sweep of two contending
	// read-modify-writes (random policy), where the torn state is what
	// recovery keeps.
	mutStatusWithoutCAS
	// mutReadSingleCollect: the multi-word read takes one collect and no
	// second one to validate it. Exposed by an interleaving: a MwCAS on two
	// words completes between the reader's reads of them; the read returns
	// one old and one new value.
	mutReadSingleCollect
	// mutPhase2Unflushed: phase 2 writes the final values without the dirty
	// bit and without flushing them. Exposed by a crash after the operation
	// returned and its descriptor was reused (a small pool): the durable words
	// still hold the pointer, and recovery reads the descriptor's next
	// operation. Also by the all-or-nothing check when the reused
	// descriptor's new operation is undecided.
	mutPhase2Unflushed
	// mutWordsUnpersisted: the installed descriptor pointers are not flushed
	// before the status is decided. Exposed by a crash (min) after the status
	// is durable and during phase 2: a word whose pointer never became
	// durable keeps its old value while the others get new ones.
	mutWordsUnpersisted
	// mutSwapStaleOld: a swap returns as its old values the values it read
	// before installing its descriptor, instead of the ones phase 1
	// displaced. Exposed by an interleaving: another swap or MwCAS
	// replaces a word between the read and the install; both then claim to
	// have replaced the same value, the fork of the OPODIS paper's Figure
	// 10 (no crash needed).
	mutSwapStaleOld
	// mutDescriptorReusedEarly: the descriptor of a failed MwCAS goes
	// back to its owner's free list at once, without waiting for the
	// workers inside an operation to leave the epoch it was retired in
	// (its words were rolled back, so nobody seems to need it). Exposed
	// by a helper still at work on it: it read the descriptor's entries
	// and status, is descheduled (or held by the late-write policy), and
	// the owner fills the descriptor with its next operation; the
	// helper's RDCSS then lands over the value a word got back, a pointer
	// to a descriptor that no longer names that word (ABA on reuse): a
	// stale pointer nobody can complete (stuck, a livelock), or the new
	// operation's values in a word it never named (cycles, forks). Small
	// pools reuse often; no crash is needed.
	mutDescriptorReusedEarly
	mutCount
)

// Variants that only this package's tests plant: no name selects them, so
// the harness's campaigns over Mutants() do not expect to find them. The
// first three break New's durability and are found only by reopening crash
// images (reopen_test.go); the fourth hides behind a dense data layout
// (layout_test.go); the last is linearizable and only blocks, which only
// the harness's progress check finds (progress_test.go). A harness that
// reopens images and varies the layout can promote them to the table.
const (
	// mutSuperblockUnflushed: New stores the superblock and fences without
	// flushing its line: a crash right after New loses the PMwCAS.
	mutSuperblockUnflushed mutant = mutCount + 1 + iota
	// mutSuperblockMagicFirst: New stores the magic first: a crash during
	// New can leave a magic without the words it vouches for.
	mutSuperblockMagicFirst
	// mutFormatUnfenced: New does not fence the zeroed words before the
	// superblock: a crash can keep the superblock and lose the zeroing.
	mutFormatUnfenced
	// mutFlushFirstWordOnly: phase 1 flushes the line of the first
	// installed word only: harmless while all of a MwCAS's words share a
	// line.
	mutFlushFirstWordOnly
	// mutHelpSkipped: help does nothing, so whoever meets another
	// operation's descriptor in a word spins until its owner finishes: still
	// linearizable, but blocked for good if the owner stops.
	mutHelpSkipped
)

var hiddenNames = map[mutant]string{
	mutSuperblockUnflushed:  "superblock-unflushed",
	mutSuperblockMagicFirst: "superblock-magic-first",
	mutFormatUnfenced:       "format-unfenced",
	mutFlushFirstWordOnly:   "flush-first-word-only",
	mutHelpSkipped:          "help-skipped",
}

// Mutant names a planted bug.
type Mutant struct {
	Name        string
	Description string
}

var mutantTable = [mutCount]Mutant{
	mutDirtySpuriousFailure:  {"dirty-spurious-failure", "phase 1 takes its expected value with the dirty bit set as a mismatch and fails (the OPODIS paper's bug)"},
	mutReadDirtyUnpersisted:  {"read-dirty-unpersisted", "a persistent read uses a dirty word or dirty status without flushing it first"},
	mutDescriptorUnflushed:   {"descriptor-unflushed", "the descriptor is not flushed before its pointer is installed in the words"},
	mutStatusUnpersisted:     {"status-unpersisted", "the decided status is not persisted before phase 2"},
	mutRecoveryWrongWay:      {"recovery-wrong-way", "recovery rolls succeeded operations back and the others forward"},
	mutRecoverySkipsRDCSS:    {"recovery-skips-rdcss", "recovery leaves RDCSS pointers in the words"},
	mutStatusWithoutCAS:      {"status-without-cas", "the status is written with a plain store instead of a CAS from undecided"},
	mutReadSingleCollect:     {"read-single-collect", "the multi-word read takes a single collect (no double collect)"},
	mutPhase2Unflushed:       {"phase2-unflushed", "phase 2 writes the final values without dirty bit or flush"},
	mutWordsUnpersisted:      {"words-unpersisted", "installed descriptor pointers are not persisted before the status is decided"},
	mutSwapStaleOld:          {"swap-stale-old", "a swap returns the values it read before installing its descriptor, not the ones it displaced (the fork of the OPODIS paper's Figure 10)"},
	mutDescriptorReusedEarly: {"descriptor-reused-early", "a failed cas's descriptor is reused at once, without epoch-based reclamation's grace period: a late helper installs a stale pointer to it after its owner's cleanup (ABA on reuse)"},
}

// Mutants lists the planted bugs, sorted by name.
func Mutants() []Mutant {
	out := append([]Mutant(nil), mutantTable[1:]...)
	slices.SortFunc(out, func(a, b Mutant) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// CheckMutant reports whether name is "" (the correct algorithm) or the name
// of a planted bug.
func CheckMutant(name string) error {
	_, err := parseMutant(name)
	return err
}

func parseMutant(name string) (mutant, error) {
	if name == "" || name == "none" {
		return mutNone, nil
	}
	for i, m := range mutantTable {
		if i > 0 && m.Name == name {
			return mutant(i), nil
		}
	}
	names := make([]string, 0, mutCount)
	for _, m := range Mutants() {
		names = append(names, m.Name)
	}
	return 0, fmt.Errorf("mwcas: unknown mutant %q (known: %s)", name, strings.Join(names, ", "))
}

func (m mutant) String() string {
	if m == mutNone {
		return ""
	}
	if m >= mutCount {
		return hiddenNames[m]
	}
	return mutantTable[m].Name
}
