package pmem

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func mustMemory(t testing.TB, words uint64, opts Options) *Region {
	t.Helper()
	r, err := NewMemory(words, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestLoadStoreCAS(t *testing.T) {
	for _, emulate := range []bool{false, true} {
		r := mustMemory(t, 100, Options{Emulate: emulate})
		w := r.Worker(0)
		if err := w.Store(7, 42); err != nil {
			t.Fatal(err)
		}
		if v, err := w.Load(7); err != nil || v != 42 {
			t.Fatalf("load = %d, %v", v, err)
		}
		if ok, err := w.CAS(7, 41, 1); ok || err != nil {
			t.Fatalf("CAS with a wrong old value succeeded: %v %v", ok, err)
		}
		if ok, err := w.CAS(7, 42, 43); !ok || err != nil {
			t.Fatalf("CAS failed: %v %v", ok, err)
		}
		if _, err := w.Load(100); !errors.Is(err, errOutOfRange) {
			t.Fatalf("load out of range: %v", err)
		}
		if err := w.Store(1<<40, 1); !errors.Is(err, errOutOfRange) {
			t.Fatalf("store out of range: %v", err)
		}
		if err := w.Flush(100); !errors.Is(err, errOutOfRange) {
			t.Fatalf("flush out of range: %v", err)
		}
		if r.Worker(0) != w {
			t.Fatal("Worker(0) returned a different handle")
		}
	}
}

func TestConcurrentCASCounter(t *testing.T) {
	for _, emulate := range []bool{false, true} {
		r := mustMemory(t, 16, Options{Emulate: emulate})
		const workers, incs = 4, 2000
		var wg sync.WaitGroup
		for id := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := r.Worker(id)
				for range incs {
					for {
						v, err := w.Load(3)
						if err != nil {
							t.Error(err)
							return
						}
						ok, err := w.CAS(3, v, v+1)
						if err != nil {
							t.Error(err)
							return
						}
						if ok {
							break
						}
					}
					if err := w.Persist(3); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if v, _ := r.Worker(0).Load(3); v != workers*incs {
			t.Fatalf("counter = %d, want %d", v, workers*incs)
		}
		if d, _ := r.Durable(3); d != workers*incs {
			t.Fatalf("durable counter = %d, want %d", d, workers*incs)
		}
		if r.Pending() != 0 {
			t.Fatalf("%d stores pending after every store was persisted", r.Pending())
		}
	}
}

func TestFlushFenceDurability(t *testing.T) {
	r := mustMemory(t, 64, Options{Emulate: true})
	a, b, c := r.Worker(0), r.Worker(1), r.Worker(2)
	a.Store(0, 1) // line 0, never flushed
	c.Store(8, 2) // line 1, flushed by c, never fenced by c
	c.Flush(8)
	a.Store(16, 3) // line 2, flushed and fenced by a
	a.Flush(16)
	b.Fence() // b's fence does not complete the others' flushes
	a.Store(24, 4)
	a.Flush(24)
	a.Fence()
	a.Store(24, 5) // after the flush: not durable
	want := map[uint64]uint64{0: 0, 8: 0, 16: 3, 24: 4}
	for off, v := range want {
		if d, _ := r.Durable(off); d != v {
			t.Errorf("durable word %d = %d, want %d", off, d, v)
		}
	}
	img, err := r.CrashImage(PolicyMin, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	for off, v := range want {
		if got := img.Snapshot()[off]; got != v {
			t.Errorf("min image word %d = %d, want %d", off, got, v)
		}
	}
	img2, _ := r.CrashImage(PolicyMax, nil, Options{})
	defer img2.Close()
	for off, v := range map[uint64]uint64{0: 1, 8: 2, 16: 3, 24: 5} {
		if got := img2.Snapshot()[off]; got != v {
			t.Errorf("max image word %d = %d, want %d", off, got, v)
		}
	}
}

// TestRandomImagesArePrefixes checks that a random image keeps, per line, a
// prefix of the line's stores: the second word of a line is only new if the
// first (stored before it) is too.
func TestRandomImagesArePrefixes(t *testing.T) {
	seen := map[[2]uint64]bool{}
	for seed := range uint64(200) {
		r := mustMemory(t, 8, Options{Emulate: true})
		w := r.Worker(0)
		w.Store(0, 1)
		w.Store(1, 1)
		img, err := r.CrashImage(PolicyRandom, rand.New(rand.NewPCG(seed, 0)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := img.Snapshot()
		img.Close()
		if s[1] == 1 && s[0] == 0 {
			t.Fatalf("seed %d: image %v is not a prefix of the line's stores", seed, s[:2])
		}
		seen[[2]uint64{s[0], s[1]}] = true
	}
	if len(seen) != 3 {
		t.Fatalf("random images covered %v, want all three prefixes", seen)
	}
}

func TestTargetedPolicy(t *testing.T) {
	r := mustMemory(t, 32, Options{Emulate: true})
	w := r.Worker(0)
	w.Store(0, 1)  // before the mark, unflushed: kept
	w.Store(8, 2)  // before the mark, unflushed: kept
	w.Store(16, 3) // persisted after the mark: kept
	w.MarkLinearization()
	w.Store(0, 10) // after the mark: dropped
	w.Store(16, 30)
	w.Persist(16)
	w.Store(24, 4) // after the mark: dropped
	if err := r.Crash(PolicyTargeted, nil); err != nil {
		t.Fatal(err)
	}
	s := r.Snapshot()
	for off, v := range map[uint64]uint64{0: 1, 8: 2, 16: 30, 24: 0} {
		if s[off] != v {
			t.Errorf("targeted image word %d = %d, want %d", off, s[off], v)
		}
	}
	if r.Pending() != 0 || r.crashCount() != 1 {
		t.Fatalf("after crash: pending %d, crashes %d", r.Pending(), r.crashCount())
	}
}

func TestCrashPolicyErrors(t *testing.T) {
	r := mustMemory(t, 8, Options{})
	if err := r.Crash(PolicyMin, nil); !errors.Is(err, errNoEmulation) {
		t.Fatalf("min crash without emulation: %v", err)
	}
	if err := r.Crash(PolicyMax, nil); err != nil {
		t.Fatalf("max crash without emulation: %v", err)
	}
	e := mustMemory(t, 8, Options{Emulate: true})
	if err := e.Crash(PolicyRandom, nil); err == nil {
		t.Fatal("random crash without a generator succeeded")
	}
	for _, p := range Policies() {
		q, err := ParsePolicy(p.String())
		if err != nil || q != p {
			t.Fatalf("ParsePolicy(%q) = %v, %v", p, q, err)
		}
	}
	if _, err := ParsePolicy("maybe"); err == nil {
		t.Fatal("ParsePolicy accepted an unknown name")
	}
}

// crashAt is a hook that requests a crash at the n-th access.
type crashAt struct {
	mu    sync.Mutex
	n     int
	count int
	kinds []AccessKind
}

func (h *crashAt) Access(worker int, kind AccessKind, off uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count++
	h.kinds = append(h.kinds, kind)
	if h.count == h.n {
		return ErrCrashed
	}
	return nil
}

func TestHookCrashStopsEveryWorker(t *testing.T) {
	h := &crashAt{n: 3}
	r := mustMemory(t, 16, Options{Emulate: true, Hook: h})
	a, b := r.Worker(0), r.Worker(1)
	if err := a.Store(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(0); err != nil {
		t.Fatal(err)
	}
	if err := a.Fence(); !errors.Is(err, ErrCrashed) {
		t.Fatalf("third access: %v, want ErrCrashed", err)
	}
	if _, err := b.Load(0); !errors.Is(err, ErrCrashed) {
		t.Fatalf("other worker after the crash: %v, want ErrCrashed", err)
	}
	if !r.Crashing() {
		t.Fatal("region not crashing")
	}
	if err := r.Crash(PolicyMin, nil); err != nil {
		t.Fatal(err)
	}
	if r.Crashing() {
		t.Fatal("still crashing after Crash")
	}
	r.SetHook(nil)
	if v, err := b.Load(0); err != nil || v != 0 {
		t.Fatalf("after a min crash with the fence cut off: %d, %v; want 0", v, err)
	}
	want := []AccessKind{AccessStore, AccessFlush, AccessFence, AccessLoad}
	if len(h.kinds) != len(want) {
		t.Fatalf("hook saw %v, want %v", h.kinds, want)
	}
	for i := range want {
		if h.kinds[i] != want[i] {
			t.Fatalf("hook saw %v, want %v", h.kinds, want)
		}
	}
}

func TestRequestCrash(t *testing.T) {
	r := mustMemory(t, 8, Options{Emulate: true})
	w := r.Worker(0)
	w.Store(1, 9)
	r.RequestCrash()
	if err := w.Store(2, 9); !errors.Is(err, ErrCrashed) {
		t.Fatalf("store after RequestCrash: %v", err)
	}
	if err := r.Crash(PolicyMax, nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := w.Load(1); v != 9 {
		t.Fatalf("max crash lost a store: %d", v)
	}
}

func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.pmem")
	r, err := Create(path, 1000, Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	w := r.Worker(0)
	w.Store(999, 77)
	w.Store(5, 55)
	w.Persist(5)
	// The crash image is written through to the file.
	if err := r.Crash(PolicyMin, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, errLocked) {
		t.Fatalf("second open of a locked file: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Load(0); !errors.Is(err, errClosed) {
		t.Fatalf("load after close: %v", err)
	}
	if _, err := Create(path, 10, Options{}); err == nil {
		t.Fatal("Create overwrote an existing file")
	}
	r2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	s := r2.Snapshot()
	if s[5] != 55 || s[999] != 0 || r2.Words() != 1000 || r2.Path() != path {
		t.Fatalf("reopened: word5=%d word999=%d words=%d", s[5], s[999], r2.Words())
	}
	if h, err := readHeader(path); err != nil || h.Words != 1000 {
		t.Fatalf("readHeader: %+v %v", h, err)
	}
}

func TestRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	r, err := Create(good, 16, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	img, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	reheader := func(mod func(*fileHeader)) []byte {
		h := newHeader(16)
		mod(&h)
		b := append([]byte(nil), img...)
		copy(b, h.encode())
		return b
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, errBadMagic},
		{"foreign", []byte("#!/bin/sh\necho hello\n"), errBadMagic},
		{"magic only", img[:8], errTruncated},
		{"short magic", img[:4], errTruncated},
		{"header cut", img[:30], errTruncated},
		{"data cut", img[:HeaderSize+8], errTruncated},
		{"damaged word count", func() []byte { b := append([]byte(nil), img...); b[17] ^= 1; return b }(), errChecksum},
		{"damaged checksum", func() []byte { b := append([]byte(nil), img...); b[41] ^= 0x80; return b }(), errChecksum},
		{"oversized", append(append([]byte(nil), img...), 0, 0, 0, 0, 0, 0, 0, 0), errSize},
		{"future version", reheader(func(h *fileHeader) { h.Version = 2 }), errVersion},
		{"zero words", reheader(func(h *fileHeader) { h.Words = 0 }), errGeometry},
		{"line size", reheader(func(h *fileHeader) { h.LineBytes = 128 }), errGeometry},
		{"flags", reheader(func(h *fileHeader) { h.Flags = 1 }), errGeometry},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(p, Options{})
			if err == nil {
				r.Close()
				t.Fatalf("opened a bad file")
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name the file", err)
			}
			after, _ := os.ReadFile(p)
			if string(after) != string(c.data) {
				t.Fatal("a refused file was modified")
			}
		})
	}
	if _, err := Open(filepath.Join(dir, "missing"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Open(dir, Options{}); err == nil {
		t.Fatal("opened a directory")
	}
}

func TestHardwareFlush(t *testing.T) {
	if !hwFlushSupported {
		if _, err := NewMemory(8, Options{HardwareFlush: true}); err == nil {
			t.Fatal("hardware flush accepted on an architecture without it")
		}
		t.Skip("no hardware flush on this architecture")
	}
	r := mustMemory(t, 64, Options{HardwareFlush: true, Emulate: true})
	w := r.Worker(0)
	for i := range uint64(64) {
		w.Store(i, i)
		if err := w.Flush(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Fence(); err != nil {
		t.Fatal(err)
	}
	if d, _ := r.Durable(63); d != 63 {
		t.Fatalf("durable = %d", d)
	}
}

// TestKilledWriterFileReopens runs a child process that stores into a region
// file until it is killed with SIGKILL; the file must open again, unlocked and
// with every store the child reported.
func TestKilledWriterFileReopens(t *testing.T) {
	if p := os.Getenv("PMEM_TEST_CHILD"); p != "" {
		childWriter(p)
		return
	}
	if testing.Short() {
		t.Skip("spawns a process")
	}
	path := filepath.Join(t.TempDir(), "killed.pmem")
	r, err := Create(path, 4096, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterFileReopens$")
	cmd.Env = append(os.Environ(), "PMEM_TEST_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if sc.Text() == "ready" {
			ready = true
			break
		}
	}
	if !ready {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("child never became ready")
	}
	time.Sleep(20 * time.Millisecond) // let it be in the middle of its stores
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	r2, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer r2.Close()
	s := r2.Snapshot()
	for i := range 1024 {
		if s[i] < 1 {
			t.Fatalf("word %d = %d: a store made before 'ready' was lost", i, s[i])
		}
	}
}

func childWriter(path string) {
	r, err := Open(path, Options{})
	if err != nil {
		os.Exit(3)
	}
	w := r.Worker(0)
	for round := uint64(1); ; round++ {
		for i := range r.Words() {
			w.Store(i, round)
		}
		if round == 1 {
			os.Stdout.WriteString("ready\n")
		}
	}
}

// tokenHook is an ExclusiveHook for two workers that take turns, one
// access each: the worker that accesses passes the turn to the other and
// waits for it to come back (its first access only waits, worker 0
// starting with the turn), through channels.
type tokenHook struct {
	turn    [2]chan struct{}
	started [2]bool // each touched by its worker only
}

func (h *tokenHook) Exclusive() {}
func (h *tokenHook) Access(w int, _ AccessKind, _ uint64) error {
	if h.started[w] || w == 0 {
		h.turn[1-w] <- struct{}{}
	}
	h.started[w] = true
	<-h.turn[w]
	return nil
}

// steps are a worker's accesses in exclusiveWork: step j of iteration i.
func exclusiveStep(k *Worker, w int, i uint64, j int) error {
	off := (i*3 + uint64(w)) % 16
	switch j {
	case 0:
		_, err := k.CAS(off, 0, 1)
		return err
	case 1:
		return k.Store(off, i<<1|uint64(w))
	case 2:
		return k.Flush(off + 8*(i%2)) // the line of off, or another
	default:
		return k.Fence()
	}
}

// TestExclusiveHook has two workers store, flush and fence on shared lines
// of an emulated region, taking turns under an ExclusiveHook (the lines'
// locks skipped; -race checks that the hand-off orders them), and compares
// what is visible, durable and pending with the same accesses made in the
// same order by one goroutine without the hook (the locks taken).
func TestExclusiveHook(t *testing.T) {
	h := &tokenHook{turn: [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}}
	r, err := NewMemory(24, Options{Emulate: true, Hook: h})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const iters, steps = 50, 4
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { h.turn[1-w] <- struct{}{} }() // the turn to the other, at the end
			k := r.Worker(w)
			for i := range uint64(iters) {
				for j := range steps {
					if err := exclusiveStep(k, w, i, j); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	r.SetHook(nil)
	seq, err := NewMemory(24, Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	for i := range uint64(iters) {
		for j := range steps {
			for w := range 2 {
				if err := exclusiveStep(seq.Worker(w), w, i, j); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if r.Pending() != seq.Pending() || r.Pending() == 0 {
		t.Fatalf("%d stores pending, in order without the hook %d (want the same, not 0)", r.Pending(), seq.Pending())
	}
	for off := range uint64(24) {
		d, _ := r.Durable(off)
		ds, _ := seq.Durable(off)
		if v, vs := r.Snapshot()[off], seq.Snapshot()[off]; d != ds || v != vs {
			t.Fatalf("word %d: durable %d, seen %d; in order without the hook %d, %d", off, d, v, ds, vs)
		}
	}
}

// casSeer is a CASHook that records the CAS it is told of, and fails the
// one expecting fail.
type casSeer struct {
	crashAt
	seen [][3]uint64 // worker, offset, expected value
	fail uint64
}

func (h *casSeer) AccessCAS(worker int, off, old uint64) error {
	h.seen = append(h.seen, [3]uint64{uint64(worker), off, old})
	if old == h.fail {
		return ErrCrashed
	}
	return nil
}

// TestCASHook: a hook that is a CASHook is told each CAS's expected value
// (through AccessCAS, not Access), and its error stops the CAS as Access's
// would; a plain hook sees the CAS through Access.
func TestCASHook(t *testing.T) {
	h := &casSeer{fail: 99}
	r := mustMemory(t, 8, Options{Hook: h})
	w := r.Worker(2)
	if ok, err := w.CAS(3, 0, 7); !ok || err != nil {
		t.Fatalf("CAS: %v %v", ok, err)
	}
	if ok, err := w.CAS(3, 0, 8); ok || err != nil {
		t.Fatalf("CAS of a changed word: %v %v", ok, err)
	}
	if ok, err := w.CAS(3, 99, 8); ok || !errors.Is(err, ErrCrashed) || !r.Crashing() {
		t.Fatalf("CAS failed by the hook: %v %v, crashing %v", ok, err, r.Crashing())
	}
	want := [][3]uint64{{2, 3, 0}, {2, 3, 0}, {2, 3, 99}}
	if fmt.Sprint(h.seen) != fmt.Sprint(want) || len(h.kinds) != 0 {
		t.Fatalf("AccessCAS saw %v (want %v), Access saw %v", h.seen, want, h.kinds)
	}
	p := &crashAt{}
	r = mustMemory(t, 8, Options{Hook: p})
	if ok, err := r.Worker(0).CAS(1, 0, 1); !ok || err != nil || len(p.kinds) != 1 || p.kinds[0] != AccessCAS {
		t.Fatalf("plain hook: %v %v, saw %v", ok, err, p.kinds)
	}
}

// TestCrashKeeping: the image keeps every store not yet durable but, on
// one line, only the stores among the first upto made to it; durable
// stores stay whatever upto says.
func TestCrashKeeping(t *testing.T) {
	stores := func() *Region {
		r := mustMemory(t, 16, Options{Emulate: true})
		w := r.Worker(0)
		w.Store(0, 1) // line 0, store 1: made durable
		w.Persist(0)
		w.Store(1, 2) // store 2
		w.Store(0, 3) // store 3: the change a late crash drops
		w.Store(2, 4) // store 4
		w.Store(8, 5) // line 1, never flushed: kept
		return r
	}
	r := stores()
	if n := r.LineStores(0); n != 4 {
		t.Fatalf("line 0 had %d stores, want 4", n)
	}
	if n := r.LineStores(9); n != 1 {
		t.Fatalf("line 1 had %d stores, want 1", n)
	}
	for _, c := range []struct {
		upto uint64
		want [4]uint64 // words 0, 1, 2 and 8
	}{{0, [4]uint64{1, 0, 0, 5}}, {1, [4]uint64{1, 0, 0, 5}}, {2, [4]uint64{1, 2, 0, 5}}, {3, [4]uint64{3, 2, 0, 5}}, {9, [4]uint64{3, 2, 4, 5}}} {
		img := stores()
		if err := img.CrashKeeping(1, c.upto); err != nil {
			t.Fatal(err)
		}
		s := img.Snapshot()
		if got := [4]uint64{s[0], s[1], s[2], s[8]}; got != c.want {
			t.Errorf("upto %d: image %v, want %v", c.upto, got, c.want)
		}
		if d, _ := img.Durable(2); d != s[2] || img.Pending() != 0 {
			t.Errorf("upto %d: word 2 durable %d after the crash, visible %d; %d stores pending", c.upto, d, s[2], img.Pending())
		}
		img.Close()
	}
	if err := mustMemory(t, 8, Options{}).CrashKeeping(0, 1); !errors.Is(err, errNoEmulation) {
		t.Fatalf("without emulation: %v", err)
	}
	if err := r.CrashKeeping(16, 1); !errors.Is(err, errOutOfRange) {
		t.Fatalf("word out of range: %v", err)
	}
}
