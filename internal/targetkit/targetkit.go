// Package targetkit holds what every built-in target (lockmwcas, dqueue,
// levelhash, pmlist) needs of the same shape: finding a planted bug by name, and
// checking the superblock that New wrote when Open attaches to a region, and
// the crash hook their tests cut operations with.
// One home, so that a new target does not write them again.
package targetkit

import (
	"fmt"

	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// MutantIndex returns the index of the planted bug name in table, whose
// entry 0 stands for the correct code (name ""), or an error that names
// the target.
func MutantIndex(targetName string, table []target.Mutant, name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	for i := 1; i < len(table); i++ {
		if table[i].Name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s: unknown mutant %q", targetName, name)
}

// CheckSuperblock reads region words 0 .. len(want)-1 as worker 0 and
// reports the first that differs from want as corrupt (wrapped), naming
// the target: the region is not one of its instances of this geometry.
// An access error (a crash) is returned as it is.
func CheckSuperblock(r *pmem.Region, want []uint64, targetName string, corrupt error) error {
	return CheckSuperblockAt(r, 0, want, targetName, corrupt)
}

// CheckSuperblockAt is CheckSuperblock for a superblock at region word
// base: a target that shares its region with another structure's
// superblock at word 0 (pmlist, built on the PMwCAS) keeps its own
// further on.
func CheckSuperblockAt(r *pmem.Region, base uint64, want []uint64, targetName string, corrupt error) error {
	a := pmem.Steps{W: r.Worker(0)}
	for i := range want {
		if v := a.Load(base + uint64(i)); a.Err == nil && v != want[i] {
			return fmt.Errorf("%w: superblock word %d is %#x, want %#x (not a %s of this geometry)", corrupt, base+uint64(i), v, want[i], targetName)
		}
	}
	return a.Err
}

// CrashAt is a pmem.AccessHook that crashes the region at its N-th access
// (never if N is 0), counting accesses in Seen: the built-in targets' tests
// cut an operation, or a recovery, at an access they choose.
type CrashAt struct{ N, Seen int }

func (h *CrashAt) Access(int, pmem.AccessKind, uint64) error {
	if h.Seen++; h.Seen == h.N {
		return pmem.ErrCrashed
	}
	return nil
}
