package pmem

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// crashedWrites stores on three lines of r through worker 0, makes only line
// 1 durable, crashes r by PolicyMin and returns what the image must hold.
func crashedWrites(t *testing.T, r *Region) map[uint64]uint64 {
	t.Helper()
	w := r.Worker(0)
	for off, v := range map[uint64]uint64{1: 11, 9: 99, 17: 177} {
		if err := w.Store(off, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Persist(9); err != nil {
		t.Fatal(err)
	}
	w.Flush(17) // flushed, never fenced: lost under min
	r.RequestCrash()
	if _, err := r.Reopen(Options{}); !errors.Is(err, ErrCrashed) {
		t.Fatalf("Reopen of a region whose crash is pending: %v", err)
	}
	if err := r.Crash(PolicyMin, nil); err != nil {
		t.Fatal(err)
	}
	return map[uint64]uint64{1: 0, 9: 99, 17: 0}
}

// TestReopen reopens crashed regions, anonymous and file-backed, and checks
// that the new region holds the crash image and nothing else of the old one.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.pmem")
	file, err := Create(path, 40, Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Region{mustMemory(t, 40, Options{Emulate: true}), file} {
		want := crashedWrites(t, r)
		old := r.Worker(0)
		nr, err := r.Reopen(Options{Emulate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nr.Close() })
		if _, err := old.Load(0); !errors.Is(err, errClosed) {
			t.Fatalf("the old region still answers: %v", err)
		}
		if nr.Path() != r.Path() || nr.Words() != 40 || !nr.isEmulated() || nr.crashCount() != 0 {
			t.Fatalf("reopened: path %q, %d words, emulated %v, %d crashes", nr.Path(), nr.Words(), nr.isEmulated(), nr.crashCount())
		}
		for off, v := range want {
			if got := nr.Snapshot()[off]; got != v {
				t.Errorf("%q: word %d = %d after reopen, want %d", r.Path(), off, got, v)
			}
			if d, _ := nr.Durable(off); d != v {
				t.Errorf("%q: word %d not durable after reopen", r.Path(), off)
			}
		}
		// A fresh worker has no flush pending from the old life: a fence
		// makes nothing durable that was not already.
		w := nr.Worker(0)
		w.Store(1, 5)
		w.Fence()
		if d, _ := nr.Durable(1); d != 0 {
			t.Errorf("%q: a fence on the reopened region persisted an unflushed store", r.Path())
		}
	}
}

// TestImageRoundTrip writes an image to a file that Open accepts, and checks
// that OpenImage refuses what Open refuses.
func TestImageRoundTrip(t *testing.T) {
	r := mustMemory(t, 20, Options{})
	w := r.Worker(0)
	for i := range uint64(20) {
		w.Store(i, i*i+1<<40)
	}
	img, err := r.Image()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "img.pmem")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := OpenImage(img, Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !slices.Equal(f.Snapshot(), r.Snapshot()) || !slices.Equal(a.Snapshot(), r.Snapshot()) {
		t.Fatalf("image round trip: file %v, anonymous %v, want %v", f.Snapshot(), a.Snapshot(), r.Snapshot())
	}
	damaged := slices.Clone(img)
	damaged[17] ^= 1
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, errBadMagic},
		{"damaged header", damaged, errChecksum},
		{"data cut", img[:len(img)-1], errTruncated},
		{"oversized", append(slices.Clone(img), 0), errSize},
	} {
		if nr, err := OpenImage(c.b, Options{}); !errors.Is(err, c.want) {
			if nr != nil {
				nr.Close()
			}
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	r.Close()
	if _, err := r.Image(); !errors.Is(err, errClosed) {
		t.Fatalf("Image of a closed region: %v", err)
	}
}

// TestReopenEmulatorFresh: the emulator an anonymous region hands over at
// Reopen (to keep its logs' capacity) starts as a new one would: what
// threads see is durable, no store is pending, and a store after the
// reopen is lost by PolicyMin until flushed and fenced.
func TestReopenEmulatorFresh(t *testing.T) {
	r, err := NewMemory(40, Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	w := r.Worker(0)
	for off := range uint64(40) {
		if err := w.Store(off, 100+off); err != nil { // never flushed
			t.Fatal(err)
		}
	}
	w.MarkLinearization()
	for _, crash := range []bool{false, true} {
		if crash {
			if err := r.Crash(PolicyMax, nil); err != nil {
				t.Fatal(err)
			}
		}
		nr, err := r.Reopen(Options{Emulate: true})
		if err != nil {
			t.Fatal(err)
		}
		r = nr
		if p := r.Pending(); p != 0 {
			t.Fatalf("crash %v: %d stores pending after the reopen", crash, p)
		}
		for off := range uint64(40) {
			if d, err := r.Durable(off); err != nil || d != 100+off {
				t.Fatalf("crash %v: word %d durable %d (%v), want %d", crash, off, d, err, 100+off)
			}
		}
		w = r.Worker(0)
		if err := w.Store(3, 7); err != nil {
			t.Fatal(err)
		}
		if err := w.Store(20, 8); err != nil {
			t.Fatal(err)
		}
		if err := w.Persist(20); err != nil {
			t.Fatal(err)
		}
		if err := r.Crash(PolicyTargeted, nil); err != nil { // no mark since the reopen
			t.Fatal(err)
		}
		if got := r.Snapshot(); got[3] != 103 || got[20] != 8 {
			t.Fatalf("crash %v: after the reopen words 3 and 20 are %d and %d, want 103 (lost) and 8 (persisted)", crash, got[3], got[20])
		}
		if err := w.Store(20, 120); err != nil {
			t.Fatal(err)
		}
		if err := r.Crash(PolicyMax, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRenew renews a used region, larger and smaller, and checks that the
// new one is what NewMemory makes (every word zero and durable, nothing
// pending, no mark), that handles on the old one are dead, and that what
// cannot be renewed is refused.
func TestRenew(t *testing.T) {
	r, err := NewMemory(40, Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, words := range []uint64{40, 300, 7, 500} {
		w := r.Worker(0)
		for off := range r.Words() {
			if err := w.Store(off, 100+off); err != nil { // never flushed
				t.Fatal(err)
			}
		}
		w.Persist(0)
		w.MarkLinearization()
		nr, err := r.Renew(words, Options{Emulate: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Store(0, 1); !errors.Is(err, errClosed) {
			t.Fatalf("%d words: a store through the old region's worker: %v, want errClosed", words, err)
		}
		r = nr
		if r.Words() != words || r.Pending() != 0 {
			t.Fatalf("%d words: renewed to %d words, %d stores pending", words, r.Words(), r.Pending())
		}
		for off := range words {
			if d, err := r.Durable(off); err != nil || d != 0 || r.Snapshot()[off] != 0 {
				t.Fatalf("%d words: word %d durable %d (%v), seen %d, want 0", words, off, d, err, r.Snapshot()[off])
			}
		}
		if err := r.Worker(0).Store(words-1, 9); err != nil {
			t.Fatal(err)
		}
		if err := r.Crash(PolicyTargeted, nil); err != nil { // no mark since the renewal
			t.Fatal(err)
		}
		if got := r.Snapshot()[words-1]; got != 0 {
			t.Fatalf("%d words: an unflushed store after the renewal survived the crash: %d", words, got)
		}
	}
	if _, err := r.Renew(1<<20, Options{}); !errors.Is(err, errSize) {
		t.Fatalf("renewed beyond the mapping: %v, want errSize", err)
	}
	r.Close()
	if _, err := r.Renew(8, Options{}); !errors.Is(err, errClosed) {
		t.Fatalf("renewed a closed region: %v, want errClosed", err)
	}
	f, err := Create(filepath.Join(t.TempDir(), "r.pmem"), 8, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Renew(8, Options{}); err == nil {
		t.Fatal("renewed a file-backed region")
	}
}
