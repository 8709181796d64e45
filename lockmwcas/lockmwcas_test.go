package lockmwcas

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

func config(mutant string) target.Config {
	return target.Config{Words: 8, Workers: 2, MaxK: 2, Mutant: mutant, Params: map[string]string{"stripes": "2"}}
}

func newRegion(t *testing.T, c target.Config) (*pmem.Region, *lockMwCAS) {
	t.Helper()
	n, err := Target().Size(c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	in, err := create(r, c)
	if err != nil {
		t.Fatal(err)
	}
	return r, in.(*lockMwCAS)
}

// crashAt crashes the region at its n-th access.
type crashAt struct{ n, seen int }

func (h *crashAt) Access(int, pmem.AccessKind, uint64) error {
	if h.seen++; h.seen == h.n {
		return pmem.ErrCrashed
	}
	return nil
}

// state reads, directly, data words 0 and 1, and whether every lock is
// free and every log retired.
func state(r *pmem.Region, m *lockMwCAS) (w0, w1 uint64, clean bool) {
	s := r.Snapshot()
	clean = true
	for st := range m.l.stripes {
		clean = clean && s[m.l.lock(st)] == 0
	}
	for w := range m.l.workers {
		clean = clean && s[m.l.commit(w)] == 0
	}
	return s[m.l.data(0)], s[m.l.data(1)], clean
}

// crashOneCAS crashes, under policy p, a CAS of words 0 and 1 (from 10, 11
// to 20, 21, by worker 1) at its access `at` (0: after it returned),
// recovers, and says what is left. done is false once `at` is past the
// CAS's last access.
func crashOneCAS(t *testing.T, mutant string, p pmem.Policy, at int, rng *rand.Rand) (w0, w1 uint64, clean, returned, done bool) {
	c := config(mutant)
	r, m := newRegion(t, c)
	if ok, _, err := m.CAS(0, []target.Word{{Addr: 0, Old: 0, New: 10}, {Addr: 1, Old: 0, New: 11}}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	h := &crashAt{n: at}
	r.SetHook(h)
	ok, _, err := m.CAS(1, []target.Word{{Addr: 1, Old: 11, New: 21}, {Addr: 0, Old: 10, New: 20}})
	r.SetHook(nil)
	switch {
	case err == nil && at > 0:
		return 0, 0, false, false, false
	case err != nil && !errors.Is(err, pmem.ErrCrashed), err == nil && !ok:
		t.Fatal(ok, err)
	}
	if err := r.Crash(p, rng); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Recover(0); err != nil {
		t.Fatal(err)
	}
	w0, w1, clean = state(r, m)
	return w0, w1, clean, err == nil, true
}

// TestEveryCrashPoint crashes a CAS at each of its accesses, and after it
// returned, under every policy: recovery leaves it all done or not at all,
// durable once it returned, with every lock free and every log retired.
// The planted bugs of durability break this somewhere.
func TestEveryCrashPoint(t *testing.T) {
	broken := map[string]bool{}
	for _, mutant := range []string{"", "log-unfenced", "data-unflushed", "recovery-keeps-locks"} {
		for _, p := range pmem.Policies() {
			rng := rand.New(rand.NewPCG(1, 2))
			for at := 0; ; at++ {
				for range 8 { // the random policy draws again
					w0, w1, clean, returned, done := crashOneCAS(t, mutant, p, at, rng)
					if !done {
						goto next
					}
					ok := clean && (w0 == 20 && w1 == 21 || w0 == 10 && w1 == 11 && !returned)
					if !ok && mutant == "" {
						t.Fatalf("%s, crash at access %d: words %d %d, clean %v, returned %v", p, at, w0, w1, clean, returned)
					}
					broken[mutant] = broken[mutant] || !ok
				}
			}
		next:
		}
	}
	for _, mutant := range []string{"log-unfenced", "data-unflushed", "recovery-keeps-locks"} {
		if !broken[mutant] {
			t.Errorf("%s: no crash point shows it", mutant)
		}
	}
}

func TestOpenChecksTheSuperblock(t *testing.T) {
	c := config("")
	r, _ := newRegion(t, c)
	if _, err := open(r, c); err != nil {
		t.Fatal(err)
	}
	other := c
	other.Params = map[string]string{"stripes": "1"}
	if _, err := open(r, other); !errors.Is(err, errCorrupt) {
		t.Fatalf("another geometry: %v", err)
	}
	n, _ := Target().Size(c)
	blank, _ := pmem.NewMemory(n, pmem.Options{})
	defer blank.Close()
	if _, err := open(blank, c); !errors.Is(err, errCorrupt) {
		t.Fatalf("a blank region: %v", err)
	}
	m, err := open(r, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.CAS(0, []target.Word{{Addr: 0, Old: 0, New: 1}}); err == nil || !strings.Contains(err.Error(), "Recover") {
		t.Fatalf("an operation before Recover: %v", err)
	}
}

func TestBadArguments(t *testing.T) {
	_, m := newRegion(t, config(""))
	for i, err := range []error{
		func() error { _, _, err := m.CAS(0, []target.Word{{Addr: 8}}); return err }(),
		func() error { _, _, err := m.CAS(0, []target.Word{{Addr: 1}, {Addr: 1}}); return err }(),
		func() error { _, _, err := m.CAS(2, []target.Word{{Addr: 1}}); return err }(),
		func() error { _, _, err := m.CAS(0, make([]target.Word, 3)); return err }(),
		m.Read(0, []uint64{9}, make([]uint64, 1)),
	} {
		if err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
	for _, c := range []target.Config{
		{Words: 8, Workers: 2, MaxK: 2, Params: map[string]string{"stripes": "0"}},
		{Words: 8, Workers: 2, MaxK: 2, Mutant: "nope", Params: map[string]string{"stripes": "2"}},
		{Words: 0, Workers: 2, MaxK: 2, Params: map[string]string{"stripes": "2"}},
	} {
		if _, err := Target().Size(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestSwapAndReport: a swap returns what it replaced, in the caller's
// order; a failure that reports values reads every word; a success does
// not touch read.
func TestSwapAndReport(t *testing.T) {
	_, m := newRegion(t, config(""))
	old := make([]uint64, 2)
	if err := m.Swap(0, []target.Word{{Addr: 3, New: 30}, {Addr: 1, New: 10}}, old); err != nil || old[0] != 0 || old[1] != 0 {
		t.Fatal(old, err)
	}
	if err := m.Swap(1, []target.Word{{Addr: 1, New: 11}, {Addr: 3, New: 31}}, old); err != nil || old[0] != 10 || old[1] != 30 {
		t.Fatal(old, err)
	}
	read := []uint64{7, 7}
	ok, failed, err := m.CASReport(0, []target.Word{{Addr: 3, Old: 31, New: 32}, {Addr: 1, Old: 10, New: 12}}, read)
	if err != nil || ok || failed != 1 || read[0] != 31 || read[1] != 11 {
		t.Fatal(ok, failed, read, err)
	}
	read = []uint64{7, 7}
	ok, _, err = m.CASReport(0, []target.Word{{Addr: 3, Old: 31, New: 32}, {Addr: 1, Old: 11, New: 12}}, read)
	if err != nil || !ok || read[0] != 7 {
		t.Fatal(ok, read, err)
	}
	if _, _, err := m.CASReport(0, []target.Word{{Addr: 3}}, nil); err == nil {
		t.Error("no room for the values accepted")
	}
	if err := m.Swap(0, []target.Word{{Addr: 3}, {Addr: 3}}, old); err == nil {
		t.Error("an address twice accepted")
	}
}
