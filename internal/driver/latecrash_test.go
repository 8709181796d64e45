package driver

import (
	"bytes"
	"context"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// cleanupTarget raises a flag in region word 0 with a CAS from 0 and lowers
// it at once (the cleanup), then writes word 8 (another cache line) and
// persists it, and only then persists word 0: a late CAS that lands on
// the lowered flag raises it again, the cleanup after it stays not durable
// for a while, and a late crash falls right before the fence that would
// make it durable.
type cleanupTarget struct{ r *pmem.Region }

func (f cleanupTarget) CAS(w int, _ []target.Word) (bool, uint64, error) {
	pw := f.r.Worker(w)
	x, err := pw.Load(0)
	if err != nil {
		return false, 0, err
	}
	if x == 0 {
		ok, err := pw.CAS(0, 0, uint64(w)+1)
		if err != nil {
			return false, 0, err
		}
		if ok {
			if err := pw.Store(0, 0); err != nil {
				return false, 0, err
			}
		}
	}
	for _, step := range []func() error{
		func() error { return pw.Store(8, uint64(w)+1) },
		func() error { return pw.Persist(8) },
		func() error { return pw.Persist(0) },
	} {
		if err := step(); err != nil {
			return false, 0, err
		}
	}
	return true, 0, nil
}

func (f cleanupTarget) Read(w int, addrs, out []uint64) error {
	for i := range addrs {
		out[i] = 0
	}
	_, err := f.r.Worker(w).Load(8)
	return err
}

// cleanupRun runs one segment of the flag target (3 workers, 40 operations
// each, late writes at probability 0.5) with the late crash if late, and
// returns its history, what it did and the region (crashing, if it did).
func cleanupRun(t *testing.T, seed uint64, late bool) (string, SegmentResult, *pmem.Region) {
	t.Helper()
	r, err := pmem.NewMemory(16, pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c := cfg(3, 4, 1, seed)
	c.Reads, c.Late = 0, 0.5
	var buf bytes.Buffer
	rec := record.NewRecorder(history.NewWriter(&buf))
	rec.Header()
	d, err := New(c, cleanupTarget{r}, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	seg, err := d.Segment(context.Background(), []int{40, 40, 40}, CrashPoint{Late: late})
	if err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	return buf.String(), seg, r
}

// TestLateCrash: a late-crash segment crashes right before the fence that
// would make the cleanup of a late write durable, and the image keeps the
// late value and every other store but the cleanup. The same seed replays
// the same history and the same crash; without the late crash the
// segment runs to its end.
func TestLateCrash(t *testing.T) {
	crashes := 0
	for seed := range uint64(30) {
		h, seg, r := cleanupRun(t, seed, true)
		lc := seg.LateCrash
		if lc == nil {
			if seg.Crashed {
				t.Fatalf("seed %d: crashed without a late crash", seed)
			}
			continue
		}
		crashes++
		if !seg.Crashed || lc.Off != 0 || lc.Late == 0 || lc.Late > 3 || lc.Now != 0 || lc.Others == 0 {
			t.Fatalf("seed %d: crashed %v at %+v; want word 0, written late with a flag 1..3, changed to 0, others' accesses since", seed, seg.Crashed, lc)
		}
		w8 := r.Peek(8)
		if err := r.CrashKeeping(lc.Off, lc.Keep); err != nil {
			t.Fatal(err)
		}
		if r.Peek(0) != lc.Late || r.Peek(8) != w8 {
			t.Fatalf("seed %d: image word 0 = %d (want the late %d), word 8 = %d (want %d)", seed, r.Peek(0), lc.Late, r.Peek(8), w8)
		}
		h2, seg2, _ := cleanupRun(t, seed, true)
		if h2 != h || *seg2.LateCrash != *lc {
			t.Fatalf("seed %d: the late crash does not replay: %+v, then %+v", seed, lc, seg2.LateCrash)
		}
		if _, seg3, _ := cleanupRun(t, seed, false); seg3.Crashed || seg3.LateCrash != nil {
			t.Fatalf("seed %d: crashed without the late crash", seed)
		}
	}
	if crashes < 3 {
		t.Fatalf("%d late crashes in 30 seeds", crashes)
	}
	t.Logf("%d late crashes in 30 seeds", crashes)
}
