package mwcas

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pmlin/pmlin/pmem"
)

// This file tests recovery as a new process does it: the crash image is
// reopened (pmem.Region.Reopen: header checks, no volatile state), the
// PMwCAS opened on it (superblock, descriptor pool) and only then recovered.

// wantOpenError fails unless err is an *OpenError of operation op wrapping
// kind.
func wantOpenError(t *testing.T, err error, op string, kind error) {
	t.Helper()
	var oe *OpenError
	if !errors.As(err, &oe) || oe.Op != op || !errors.Is(err, kind) {
		t.Fatalf("error %v (%T), want an *OpenError of %s wrapping %v", err, err, op, kind)
	}
}

func TestOpenErrors(t *testing.T) {
	c := Config{Words: 10, MaxWorkers: 2, DescriptorsPerWorker: 2, MaxK: 4}
	t.Run("status words", func(t *testing.T) {
		m, r := newTest(t, c, pmem.Options{})
		off := m.l.status(3)
		for _, st := range []uint64{stFree, stUndecided, stSucceeded, stSucceeded | DirtyBit, stFailed | 3<<8, stFailed | 3<<8 | DirtyBit} {
			r.Worker(0).Store(off, st)
			if _, err := Open(r, Config{}); err != nil {
				t.Fatalf("status %#x refused: %v", st, err)
			}
		}
		for _, st := range []uint64{4, stUndecided | DirtyBit, DirtyBit, stFailed | 4<<8, stSucceeded | 1<<8, descPtr(1), stFailed | 1<<16} {
			r.Worker(0).Store(off, st)
			_, err := Open(r, Config{})
			wantOpenError(t, err, "open", ErrCorrupt)
		}
	})
	t.Run("geometry", func(t *testing.T) {
		_, r := newTest(t, c, pmem.Options{})
		for _, ask := range []Config{{Words: 11}, {MaxK: 3}, {Stride: 2}, {LineOffset: 1}, {MaxWorkers: 1}, {DescriptorsPerWorker: 3}} {
			_, err := Open(r, ask)
			wantOpenError(t, err, "open", ErrGeometry)
		}
		if _, err := Open(r, Config{Mutant: "nope"}); err == nil || errors.As(err, new(*OpenError)) {
			t.Fatalf("unknown mutant: %v, want a plain error", err)
		}
	})
	t.Run("not formatted", func(t *testing.T) {
		blank, _ := pmem.NewMemory(200, pmem.Options{})
		defer blank.Close()
		_, err := Open(blank, Config{})
		wantOpenError(t, err, "open", ErrNotFormatted)
		tiny, _ := pmem.NewMemory(4, pmem.Options{})
		defer tiny.Close()
		_, err = Open(tiny, Config{})
		wantOpenError(t, err, "open", ErrNotFormatted)
	})
	t.Run("region too small for its superblock", func(t *testing.T) {
		_, r := newTest(t, c, pmem.Options{})
		b, _ := r.Image()
		small, err := pmem.OpenImage(cutImage(t, b, 40), pmem.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer small.Close()
		_, err = Open(small, Config{})
		wantOpenError(t, err, "open", ErrCorrupt)
	})
	t.Run("access errors are not OpenErrors", func(t *testing.T) {
		_, r := newTest(t, c, pmem.Options{})
		r.RequestCrash()
		if _, err := Open(r, Config{}); !errors.Is(err, pmem.ErrCrashed) || errors.As(err, new(*OpenError)) {
			t.Fatalf("Open of a crashing region: %v", err)
		}
	})
}

// cutImage re-heads the region file image b as a region of words words,
// keeping its first words.
func cutImage(t *testing.T, b []byte, words uint64) []byte {
	t.Helper()
	r, err := pmem.NewMemory(words, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, _ := r.Image()
	copy(out[pmem.HeaderSize:], b[pmem.HeaderSize:])
	return out
}

// garbageImage is the file image of a region big enough for c whose word 0
// is zero (so New accepts it) and whose other words hold what a PMwCAS
// would act on: descriptor pointers in the data words, decided statuses and
// entries in the pool. New must leave none of it durable behind a durable
// superblock.
func garbageImage(t *testing.T, c Config) []byte {
	t.Helper()
	n, err := RegionWords(c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l := newLayout(c.withDefaults())
	w := r.Worker(0)
	for a := range l.words {
		w.Store(l.data(a), descPtr(a%l.descs)|DirtyBit)
	}
	for d := range l.descs {
		w.Store(l.status(d), stSucceeded)
		w.Store(l.count(d), 1)
		w.Store(l.entry(d, 0), d%l.words)
		w.Store(l.entry(d, 0)+2, 1000+d)
	}
	w.Store(1, sbMagic) // a stale superblock word New must overwrite
	b, err := r.Image()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newPoint crashes New (variant mut) of c on a region holding img at its
// access at (past its last access: right after New returned) under policy
// pol, reopens the image as a new process would (a file in dir, or
// anonymous if dir is ""), and checks what it finds: a region Open refuses
// with ErrNotFormatted and New accepts, if New was cut short; else a PMwCAS
// that opens and recovers to all data words 0. It returns "" or what went
// wrong, and whether New was cut short.
func newPoint(t *testing.T, c Config, mut mutant, img []byte, dir string, at int, pol pmem.Policy, seed uint64) (string, bool) {
	h := &countHook{n: at}
	var r *pmem.Region
	var err error
	if dir == "" {
		r, err = pmem.OpenImage(img, pmem.Options{Emulate: true, Hook: h})
	} else {
		path := filepath.Join(dir, fmt.Sprintf("new-%d.pmem", fileSeq.Add(1)))
		defer os.Remove(path)
		if err = os.WriteFile(path, img, 0o644); err == nil {
			r, err = pmem.Open(path, pmem.Options{Emulate: true, Hook: h})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = format(r, c.withDefaults(), mut)
	cut := err != nil
	if cut && !errors.Is(err, pmem.ErrCrashed) {
		t.Fatalf("New crashed at access %d: %v", at, err)
	}
	r.SetHook(nil)
	if err := r.Crash(pol, rand.New(rand.NewPCG(seed, 11))); err != nil {
		t.Fatal(err)
	}
	nr, m, err := restart(r, mutNone)
	if nr == nil {
		t.Fatal(err)
	}
	defer nr.Close()
	if err != nil {
		if cut && errors.Is(err, ErrNotFormatted) && errors.As(err, new(*OpenError)) {
			if _, err := New(nr, c); err != nil {
				return "New refuses the image of a New cut short: " + err.Error(), cut
			}
			return "", cut
		}
		return "Open: " + err.Error(), cut
	}
	if _, err := m.Recover(0); err != nil {
		return "Recover: " + err.Error(), cut
	}
	if m.Config().Stride != c.withDefaults().Stride || m.Config().Words != c.Words {
		return fmt.Sprintf("reopened with geometry %+v", m.Config()), cut
	}
	for a, v := range dataWords(m) {
		if v != 0 {
			return fmt.Sprintf("data word %d = %#x after New", a, v), cut
		}
	}
	return "", cut
}

// newSweep crashes New at each of its accesses and right after it returned,
// under every policy (random with two image seeds), on anonymous regions,
// and under min and one random image on region files. The last points,
// between the superblock's stores and New's final fence, get 40 random
// images each: there one image in nine keeps the whole superblock line
// while other lines lose stores, which is what a durable superblock must
// not hide. It returns the points tried, the violations, and the first one.
func newSweep(t *testing.T, c Config, mut mutant) (points, violations int, first string) {
	img := garbageImage(t, c)
	dir := t.TempDir()
	h := &countHook{}
	r, err := pmem.OpenImage(img, pmem.Options{Emulate: true, Hook: h})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := format(r, c.withDefaults(), mut); err != nil {
		t.Fatal(err)
	}
	r.Close()
	last := h.count
	for at := 1; at <= last+1; at++ {
		runs := policyRuns(2)
		if at > last-sbWords/2 {
			runs = policyRuns(40)
		}
		for _, pr := range runs {
			for _, d := range []string{"", dir} {
				if d != "" && pr.p != pmem.PolicyMin && pr.seed != 1 {
					continue
				}
				v, cut := newPoint(t, c, mut, img, d, at, pr.p, pr.seed)
				if cut != (at <= last) {
					t.Fatalf("crash at access %d of %d: New cut short = %v", at, last, cut)
				}
				points++
				if v != "" {
					violations++
					if first == "" {
						first = fmt.Sprintf("crash at access %d of New, policy %s (seed %d), file %v: %s", at, pr.p, pr.seed, d != "", v)
					}
				}
			}
		}
	}
	return points, violations, first
}

// TestReopenDuringNew checks that New makes what it writes durable, the
// superblock last: reopened at any crash point during New, the region is
// either refused as not formatted (and New accepts it) or a clean PMwCAS;
// reopened right after New, always a clean PMwCAS. The variants of New that
// break this are caught.
func TestReopenDuringNew(t *testing.T) {
	configs := []Config{
		{Words: 10, MaxWorkers: 1, DescriptorsPerWorker: 2, MaxK: 2},
		{Words: 3, MaxWorkers: 1, DescriptorsPerWorker: 1, MaxK: 2, Stride: 8, LineOffset: 5},
	}
	for _, c := range configs {
		points, violations, first := newSweep(t, c, mutNone)
		if violations > 0 {
			t.Errorf("%+v: %d of %d crash points: %s", c, violations, points, first)
		}
		t.Logf("%+v: %d crash points during and right after New", c, points)
	}
	for _, mu := range []mutant{mutSuperblockUnflushed, mutSuperblockMagicFirst, mutFormatUnfenced} {
		points, violations, first := newSweep(t, configs[0], mu)
		if violations == 0 {
			t.Errorf("variant %s not caught in %d crash points", mu, points)
		}
		t.Logf("variant %s: caught at %d of %d points; first: %s", mu, violations, points, first)
	}
}

// TestReopenDuringOperations runs the systematic crash sweep of the one-
// worker plans and of a two-worker plan recovering through the reopened
// image (anonymous, and a region file for one plan), and checks that a New
// that never persisted its superblock is caught that way and only that way.
func TestReopenDuringOperations(t *testing.T) {
	seeds := []uint64{1, 2}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, p := range singlePlans() {
		if res := sweep(run{plan: p, reopen: true}, 2); res.violations > 0 {
			t.Errorf("%d violations; first: %s", res.violations, res.first)
		}
	}
	for _, seed := range seeds {
		if res := sweep(run{plan: concurrentPlans()[0], reopen: true, seed: seed}, 1); res.violations > 0 {
			t.Errorf("%d violations; first: %s", res.violations, res.first)
		}
	}
	p := singlePlans()[1]
	if res := sweep(run{plan: p, reopen: true, dir: t.TempDir()}, 1); res.violations > 0 {
		t.Errorf("region file: %d violations; first: %s", res.violations, res.first)
	}
	// The blind spot: recovering the live object never notices that the
	// superblock is not durable; reopening does, under the policies that
	// drop unflushed stores.
	if res := sweep(run{plan: p, hidden: mutSuperblockUnflushed}, 1); res.violations > 0 {
		t.Errorf("superblock-unflushed found without reopening: %s", res.first)
	}
	res := sweep(run{plan: p, hidden: mutSuperblockUnflushed, reopen: true}, 1)
	if res.violations == 0 || res.byPolicy["max"] > 0 {
		t.Errorf("superblock-unflushed with reopening: %d violations, by policy %v", res.violations, res.byPolicy)
	}
	t.Logf("superblock-unflushed caught by reopening at %d of %d points, by policy %v", res.violations, res.points, res.byPolicy)
}
