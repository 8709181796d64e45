package mwcas

import (
	"errors"
	"testing"

	"github.com/pmlin/pmlin/pmem"
)

// TestLayoutPlacement checks where data words land for each layout: inside
// the data area, distinct, on lines of their own with Stride 8, at the
// asked position in the first line, and never on a descriptor's line.
func TestLayoutPlacement(t *testing.T) {
	cases := []struct {
		stride, offset uint64
		wantLines      uint64 // lines the data words of 9 words span
	}{
		{1, 0, 2}, {1, 7, 2}, {1, 4, 2}, {8, 0, 9}, {8, 3, 9}, {3, 5, 4}, {64, 7, 9},
	}
	for _, c := range cases {
		cfg := Config{Words: 9, MaxWorkers: 2, Stride: c.stride, LineOffset: c.offset}
		l := newLayout(cfg.withDefaults())
		lines := map[uint64]bool{}
		for a := range l.words {
			off := l.data(a)
			if off < sbWords || off >= l.descBase {
				t.Fatalf("%+v: word %d at %d, outside the data area [%d, %d)", cfg, a, off, sbWords, l.descBase)
			}
			if a > 0 && off != l.data(a-1)+c.stride {
				t.Fatalf("%+v: word %d at %d, word %d at %d", cfg, a, off, a-1, l.data(a-1))
			}
			lines[off/8] = true
		}
		if l.data(0)%8 != c.offset || l.descBase%8 != 0 || uint64(len(lines)) != c.wantLines {
			t.Fatalf("%+v: word 0 at %d, descriptors at %d, data on %d lines (want %d)", cfg, l.data(0), l.descBase, len(lines), c.wantLines)
		}
		if c.stride >= 8 && l.data(1)/8 == l.data(0)/8 {
			t.Fatalf("%+v: words 0 and 1 share a line", cfg)
		}
		n, err := RegionWords(cfg)
		if err != nil || n != l.total {
			t.Fatalf("%+v: RegionWords %d, %v", cfg, n, err)
		}
	}
	for _, bad := range []Config{{Words: 4, Stride: maxStride + 1}, {Words: 4, LineOffset: 8}} {
		if _, err := RegionWords(bad); err == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
}

// TestLayoutRoundTrip formats regions with other layouts, operates, and
// opens them again: the superblock keeps the layout, and the default layout
// keeps the superblock that builds before the option wrote.
func TestLayoutRoundTrip(t *testing.T) {
	for _, cfg := range []Config{
		{Words: 12, MaxWorkers: 2},
		{Words: 12, MaxWorkers: 2, Stride: 8},
		{Words: 12, MaxWorkers: 2, Stride: 3, LineOffset: 6},
	} {
		m, r := newTest(t, cfg, pmem.Options{Emulate: true})
		if ok, _, err := m.CAS(0, []Word{{0, 0, 10}, {7, 0, 17}, {11, 0, 21}}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if sb6, _ := r.Worker(0).Load(6); (sb6 == 0) != (cfg.Stride <= 1 && cfg.LineOffset == 0) {
			t.Fatalf("%+v: superblock word 6 = %#x", cfg, sb6)
		}
		if err := r.Crash(pmem.PolicyMin, nil); err != nil {
			t.Fatal(err)
		}
		nr, m2, err := restart(r, mutNone)
		if err != nil {
			t.Fatal(err)
		}
		defer nr.Close()
		if _, err := m2.Recover(1); err != nil {
			t.Fatal(err)
		}
		got := m2.Config()
		if got.Stride != max(cfg.Stride, 1) || got.LineOffset != cfg.LineOffset {
			t.Fatalf("%+v reopened as %+v", cfg, got)
		}
		out := make([]uint64, 3)
		if err := m2.Read(1, []uint64{0, 7, 11}, out); err != nil || out[0] != 10 || out[1] != 17 || out[2] != 21 {
			t.Fatalf("%+v: read %v, %v", cfg, out, err)
		}
		for a, v := range dataWords(m2) {
			if raw := nr.Snapshot()[m2.DataOffset(uint64(a))]; raw != v {
				t.Fatalf("DataOffset(%d) = %d holds %#x", a, m2.DataOffset(uint64(a)), raw)
			}
		}
		if _, err := Open(nr, Config{Stride: 5}); !errors.Is(err, ErrGeometry) {
			t.Fatalf("Open with another stride: %v", err)
		}
	}
}

// TestLayoutCrashes runs the systematic crash sweep of the one-worker plans
// with each data word on a line of its own and with a skewed dense layout,
// and shows why the option exists: a phase 1 that flushes only its first
// word's line is invisible while a MwCAS's words share a line, and caught
// once they do not.
func TestLayoutCrashes(t *testing.T) {
	for _, lay := range [][2]uint64{{8, 0}, {1, 5}} {
		for _, p := range singlePlans()[:3] {
			p.stride, p.lineOffset = lay[0], lay[1]
			if res := sweep(run{plan: p}, 1); res.violations > 0 {
				t.Errorf("stride %d, line offset %d: %d violations; first: %s", lay[0], lay[1], res.violations, res.first)
			}
		}
	}
	p := plan{name: "cas k=2 on adjacent words", words: 8, workers: [][]step{{cas([]uint64{0, 1}, []uint64{0, 0}, []uint64{1, 2})}}}
	if res := sweep(run{plan: p, hidden: mutFlushFirstWordOnly}, 2); res.violations > 0 {
		t.Errorf("dense layout: flush-first-word-only found: %s", res.first)
	}
	p.stride = 8
	res := sweep(run{plan: p, hidden: mutFlushFirstWordOnly}, 2)
	if res.violations == 0 {
		t.Error("one word per line: flush-first-word-only not found")
	}
	t.Logf("flush-first-word-only, one word per line: %d of %d crash points, by policy %v", res.violations, res.points, res.byPolicy)
}
