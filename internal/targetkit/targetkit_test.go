package targetkit

import (
	"errors"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

func TestMutantIndex(t *testing.T) {
	table := []target.Mutant{{}, {Name: "a"}, {Name: "b"}}
	for name, want := range map[string]int{"": 0, "a": 1, "b": 2} {
		if i, err := MutantIndex("t", table, name); i != want || err != nil {
			t.Errorf("%q: %d, %v; want %d", name, i, err, want)
		}
	}
	if _, err := MutantIndex("t", table, "c"); err == nil || !strings.Contains(err.Error(), `t: unknown mutant "c"`) {
		t.Errorf("unknown mutant: %v", err)
	}
}

func TestCheckSuperblock(t *testing.T) {
	r, err := pmem.NewMemory(16, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := r.Worker(0)
	if err := w.Store(0, 7); err != nil {
		t.Fatal(err)
	}
	if err := w.Store(1, 9); err != nil {
		t.Fatal(err)
	}
	errCorrupt := errors.New("corrupt")
	if err := CheckSuperblock(r, []uint64{7, 9}, "thing", errCorrupt); err != nil {
		t.Fatal(err)
	}
	err = CheckSuperblock(r, []uint64{7, 8}, "thing", errCorrupt)
	if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), "superblock word 1 is 0x9, want 0x8 (not a thing of this geometry)") {
		t.Errorf("wrong superblock: %v", err)
	}
}

// TestCheckSuperblockAt: a superblock further in the region is read there,
// and a mismatch names the region word.
func TestCheckSuperblockAt(t *testing.T) {
	r, err := pmem.NewMemory(32, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := r.Worker(0)
	if err := w.Store(17, 5); err != nil {
		t.Fatal(err)
	}
	errCorrupt := errors.New("corrupt")
	if err := CheckSuperblockAt(r, 16, []uint64{0, 5}, "thing", errCorrupt); err != nil {
		t.Fatal(err)
	}
	if err := CheckSuperblock(r, []uint64{0, 5}, "thing", errCorrupt); !errors.Is(err, errCorrupt) {
		t.Fatalf("at word 0: %v", err)
	}
	err = CheckSuperblockAt(r, 16, []uint64{0, 6}, "thing", errCorrupt)
	if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), "superblock word 17 is 0x5, want 0x6") {
		t.Errorf("wrong superblock: %v", err)
	}
}
