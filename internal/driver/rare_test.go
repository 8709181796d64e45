package driver

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// rarePath is a target whose every operation stores a word, flushes and
// fences it, but for the operations numbered in rare (over all workers,
// counted from 1), which take another path: "store, load, store, flush,
// fence", as a movement whose token is stored before its item is
// flushed. It notes whether an access of the rare path's flush failed
// (the crash fell right before it) and whether any other did.
type rarePath struct {
	r     *pmem.Region
	rare  map[int]bool
	calls *int
	// atRare, atOther: a crash stopped the rare path's flush, another
	// access.
	atRare, atOther *bool
}

func (p rarePath) CAS(w int, _ []target.Word) (bool, uint64, error) {
	*p.calls++ // one worker at a time: the deterministic scheduler
	s := &pmem.Steps{W: p.r.Worker(w)}
	if p.rare[*p.calls] {
		s.Store(2, 1)
		s.Load(3)
		s.Store(3, 1)
		if s.Err == nil {
			s.Flush(2)
			if errors.Is(s.Err, pmem.ErrCrashed) && !*p.atOther {
				*p.atRare = true
				return false, 0, s.Err
			}
		}
		s.Fence()
	} else {
		s.Load(0)
		s.Store(1, uint64(w))
		s.Flush(1)
		s.Fence()
	}
	if errors.Is(s.Err, pmem.ErrCrashed) && !*p.atRare {
		*p.atOther = true // (once crashed, every access fails)
	}
	return s.Err == nil, 0, s.Err
}

func (p rarePath) Read(w int, addrs, out []uint64) error {
	for i := range addrs {
		out[i] = 0
	}
	_, err := p.r.Worker(w).Load(0)
	return err
}

// rareRun runs two segments of 40 operations per worker of the rarePath
// target, the second with rare (CrashPoint.Rare), the operations 100, 110,
// 120 and 130 on the rare path (in the second segment), sites counted if
// count; it returns the second segment's result, where its crash fell and
// the history.
func rareRun(t *testing.T, seed uint64, count, rare bool, first CrashPoint) (SegmentResult, bool, bool, string) {
	t.Helper()
	r, err := pmem.NewMemory(8, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	rec := record.NewRecorder(history.NewWriter(&buf))
	rec.Header()
	c := cfg(2, 4, 1, seed)
	c.Reads = 0
	calls := 0
	var atRare, atOther bool
	p := rarePath{r: r, rare: map[int]bool{100: true, 110: true, 120: true, 130: true}, calls: &calls, atRare: &atRare, atOther: &atOther}
	d, err := New(c, p, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if count {
		d.CountSites(seed)
	}
	var seg SegmentResult
	for i, cp := range []CrashPoint{first, {Rare: rare}} {
		if seg, err = d.Segment(context.Background(), []int{40, 40}, cp); err != nil {
			t.Fatal(err)
		}
		if i == 0 && seg.Crashed {
			t.Fatalf("seed %d: the first segment crashed (%+v)", seed, first)
		}
	}
	rec.Flush()
	return seg, atRare, atOther, buf.String()
}

// TestRareCrash: with sites counted, a segment of CrashPoint.Rare after
// the first crashes right before the flush of a path the run had not
// taken (drawn with probability rareCrashP at its first time: in about a
// quarter of the seeds), never elsewhere (every other site was met in the
// first segment), and a run replays byte for byte. Without Rare, or
// without sites counted, or in the run's first segment, nothing crashes.
func TestRareCrash(t *testing.T) {
	hit := 0
	const seeds = 40
	for seed := range uint64(seeds) {
		seg, atRare, atOther, h := rareRun(t, seed, true, true, CrashPoint{})
		if atOther || seg.Crashed != atRare || seg.RareCrash != atRare {
			t.Fatalf("seed %d: crashed %v (rare %v) at the rare flush %v, elsewhere %v", seed, seg.Crashed, seg.RareCrash, atRare, atOther)
		}
		if atRare {
			hit++
		}
		if _, _, _, again := rareRun(t, seed, true, true, CrashPoint{}); again != h {
			t.Fatalf("seed %d: the run does not replay", seed)
		}
		for _, c := range []struct {
			count, rare bool
			first       CrashPoint
		}{{false, true, CrashPoint{}}, {true, false, CrashPoint{}}} {
			if seg, _, _, _ := rareRun(t, seed, c.count, c.rare, c.first); seg.Crashed {
				t.Fatalf("seed %d: sites counted %v, Rare %v: crashed", seed, c.count, c.rare)
			}
		}
	}
	if hit < seeds/10 || hit > seeds/2 {
		t.Fatalf("%d of %d seeds crashed at the rare path's first flush (want about a quarter)", hit, seeds)
	}
}

// TestRareCrashNotInFirstSegment: the first segment learns the run's
// paths; a rare path there is not crashed at, though every site is new.
func TestRareCrashNotInFirstSegment(t *testing.T) {
	for seed := range uint64(20) {
		r, err := pmem.NewMemory(8, pmem.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		rec := record.NewRecorder(history.NewWriter(&buf))
		rec.Header()
		calls := 0
		var atRare, atOther bool
		p := rarePath{r: r, rare: map[int]bool{5: true, 10: true}, calls: &calls, atRare: &atRare, atOther: &atOther}
		c := cfg(2, 4, 1, seed)
		c.Reads = 0
		d, err := New(c, p, r, rec)
		if err != nil {
			t.Fatal(err)
		}
		d.CountSites(seed)
		seg, err := d.Segment(context.Background(), []int{20, 20}, CrashPoint{Rare: true})
		if err != nil {
			t.Fatal(err)
		}
		if seg.Crashed {
			t.Fatalf("seed %d: the first segment crashed at a new site", seed)
		}
		d.Close()
		r.Close()
	}
}
