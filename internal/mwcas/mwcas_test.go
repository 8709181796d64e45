package mwcas

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pmlin/pmlin/pmem"
)

func newTest(t testing.TB, c Config, opts pmem.Options) (*PMwCAS, *pmem.Region) {
	t.Helper()
	n, err := RegionWords(c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmem.NewMemory(n, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	m, err := New(r, c)
	if err != nil {
		t.Fatal(err)
	}
	return m, r
}

// dataWords returns the data words as they are in the region.
func dataWords(m *PMwCAS) []uint64 {
	s := m.r.Snapshot()
	out := make([]uint64, m.l.words)
	for a := range out {
		out[a] = s[m.DataOffset(uint64(a))]
	}
	return out
}

func TestCASAndRead(t *testing.T) {
	for _, emulate := range []bool{false, true} {
		m, _ := newTest(t, Config{Words: 16, MaxWorkers: 2}, pmem.Options{Emulate: emulate})
		ok, _, err := m.CAS(0, []Word{{3, 0, 30}, {1, 0, 10}})
		if !ok || err != nil {
			t.Fatalf("CAS: %v %v", ok, err)
		}
		ok, failed, err := m.CAS(1, []Word{{1, 10, 11}, {3, 31, 32}, {5, 0, 50}})
		if ok || err != nil || failed != 3 {
			t.Fatalf("CAS with a wrong old value: ok=%v failed=%d err=%v, want failure at 3", ok, failed, err)
		}
		out := make([]uint64, 3)
		if err := m.Read(1, []uint64{1, 3, 5}, out); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out, []uint64{10, 30, 0}) {
			t.Fatalf("Read = %v", out)
		}
		if err := m.Read(0, []uint64{3}, out); err != nil || out[0] != 30 {
			t.Fatalf("Read one = %v %v", out[0], err)
		}
		for a, v := range dataWords(m) {
			if v&flagBits != 0 {
				t.Fatalf("word %d holds flags after quiescence: %#x", a, v)
			}
		}
		if emulate && m.r.Pending() != 0 {
			// Everything a completed operation wrote that matters is durable;
			// only dirty-bit clearings may be pending.
			for a := range m.l.words {
				d, _ := m.r.Durable(m.l.data(a))
				if d&^DirtyBit != dataWords(m)[a] {
					t.Fatalf("word %d: durable %#x, visible %#x", a, d, dataWords(m)[a])
				}
			}
		}
	}
}

// TestSwapAndReport: a swap returns what it replaced, in the caller's
// order, whatever its Old fields say; a failure that reports values reads
// every word, in the caller's order; a success leaves read alone.
func TestSwapAndReport(t *testing.T) {
	m, _ := newTest(t, Config{Words: 16, MaxWorkers: 2}, pmem.Options{Emulate: true})
	old := make([]uint64, 3)
	if err := m.Swap(0, []Word{{Addr: 3, Old: 99, New: 30}, {Addr: 1, New: 10}}, old); err != nil || old[0] != 0 || old[1] != 0 {
		t.Fatal(old, err)
	}
	if err := m.Swap(1, []Word{{Addr: 1, New: 11}, {Addr: 5, New: 50}, {Addr: 3, New: 31}}, old); err != nil || !slices.Equal(old, []uint64{10, 0, 30}) {
		t.Fatal(old, err)
	}
	read := []uint64{7, 7}
	ok, failed, err := m.CASReport(0, []Word{{5, 50, 51}, {1, 10, 12}}, read)
	if err != nil || ok || failed != 1 || !slices.Equal(read, []uint64{50, 11}) {
		t.Fatal(ok, failed, read, err)
	}
	read = []uint64{7, 7}
	if ok, _, err := m.CASReport(0, []Word{{5, 50, 51}, {1, 11, 12}}, read); err != nil || !ok || read[0] != 7 {
		t.Fatal(ok, read, err)
	}
	for a, v := range dataWords(m) {
		if v&flagBits != 0 {
			t.Fatalf("word %d holds flags after quiescence: %#x", a, v)
		}
	}
}

func TestArgumentErrors(t *testing.T) {
	m, _ := newTest(t, Config{Words: 8, MaxWorkers: 2, MaxK: 3}, pmem.Options{})
	bad := [][]Word{
		nil,
		{{1, 0, 1}, {2, 0, 1}, {3, 0, 1}, {4, 0, 1}},
		{{8, 0, 1}},
		{{1, 0, 1}, {1, 0, 2}},
		{{1, MaxValue + 1, 1}},
		{{1, 0, DirtyBit}},
	}
	for _, ws := range bad {
		if _, _, err := m.CAS(0, ws); err == nil {
			t.Errorf("CAS(%v) accepted", ws)
		}
	}
	if _, _, err := m.CAS(2, []Word{{1, 0, 1}}); err == nil {
		t.Error("worker out of range accepted")
	}
	if err := m.Read(0, []uint64{9}, make([]uint64, 1)); err == nil {
		t.Error("read out of range accepted")
	}
	if err := m.Read(0, []uint64{1, 2}, make([]uint64, 1)); err == nil {
		t.Error("short out accepted")
	}
	for _, ws := range bad[:4] {
		if err := m.Swap(0, ws, make([]uint64, 4)); err == nil {
			t.Errorf("Swap(%v) accepted", ws)
		}
	}
	if err := m.Swap(0, []Word{{1, 0, DirtyBit}}, make([]uint64, 1)); err == nil {
		t.Error("Swap of a value with flags accepted")
	}
	if err := m.Swap(0, []Word{{1, 0, 1}, {2, 0, 1}}, make([]uint64, 1)); err == nil {
		t.Error("Swap with a short old accepted")
	}
	if _, _, err := m.CASReport(0, []Word{{1, 0, 1}, {2, 0, 1}}, make([]uint64, 1)); err == nil {
		t.Error("CASReport with a short read accepted")
	}
	if _, err := RegionWords(Config{Words: 8, MaxK: 65}); err == nil {
		t.Error("MaxK 65 accepted")
	}
	if _, err := RegionWords(Config{Words: 8, Mutant: "nope"}); err == nil || !strings.Contains(err.Error(), "dirty-spurious-failure") {
		t.Errorf("unknown mutant: %v", err)
	}
}

func TestNewOpenRecover(t *testing.T) {
	c := Config{Words: 10, MaxWorkers: 3, DescriptorsPerWorker: 2, MaxK: 4}
	m, r := newTest(t, c, pmem.Options{Emulate: true})
	if _, err := New(r, c); !errors.Is(err, ErrFormatted) {
		t.Fatalf("New on a formatted region: %v", err)
	}
	if ok, _, err := m.CAS(0, []Word{{9, 0, 90}}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	m2, err := Open(r, Config{Words: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Read(0, []uint64{9}, make([]uint64, 1)); !errors.Is(err, ErrNeedsRecovery) {
		t.Fatalf("Read before Recover: %v", err)
	}
	if _, err := Open(r, Config{Words: 11}); err == nil {
		t.Fatal("Open with a different geometry succeeded")
	}
	if _, err := Open(r, Config{Mutant: "nope"}); err == nil {
		t.Fatal("Open with an unknown mutant succeeded")
	}
	if _, err := m2.Recover(0); err != nil {
		t.Fatal(err)
	}
	if got := m2.Config(); got != (Config{Words: 10, MaxWorkers: 3, DescriptorsPerWorker: 2, MaxK: 4, Stride: 1}) {
		t.Fatalf("Config() = %+v", got)
	}
	out := make([]uint64, 1)
	if err := m2.Read(2, []uint64{9}, out); err != nil || out[0] != 90 {
		t.Fatalf("after recovery: %v %v", out, err)
	}

	blank, _ := pmem.NewMemory(1000, pmem.Options{})
	defer blank.Close()
	if _, err := Open(blank, Config{}); !errors.Is(err, ErrNotFormatted) {
		t.Fatalf("Open on a blank region: %v", err)
	}
	small, _ := pmem.NewMemory(16, pmem.Options{})
	defer small.Close()
	if _, err := New(small, c); err == nil {
		t.Fatal("New on a too small region succeeded")
	}
}

func TestDamagedSuperblock(t *testing.T) {
	c := Config{Words: 10, MaxWorkers: 1}
	for i := range sbWords {
		_, r := newTest(t, c, pmem.Options{})
		w := r.Worker(0)
		v, _ := w.Load(uint64(i))
		w.Store(uint64(i), v^0x10)
		_, err := Open(r, Config{})
		if err == nil {
			t.Fatalf("superblock word %d damaged: Open succeeded", i)
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotFormatted) {
			t.Fatalf("superblock word %d damaged: %v", i, err)
		}
	}
}

func TestRecoveryRefusesCorruptWords(t *testing.T) {
	c := Config{Words: 8, MaxWorkers: 1, DescriptorsPerWorker: 1}
	cases := map[string]uint64{
		"pointer to a free descriptor":     descPtr(0),
		"pointer beyond the pool":          descPtr(5),
		"RDCSS pointer beyond the pool":    rdcssPtr(9, 0),
		"both flags":                       descBit | rdcssBit,
		"RDCSS pointer to an unnamed word": rdcssPtr(0, 0),
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			m, r := newTest(t, c, pmem.Options{})
			r.Worker(0).Store(m.l.data(3), v)
			r.Worker(0).Store(m.l.entry(0, 0), 7)
			if _, err := m.Recover(0); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Recover: %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestMutantsList(t *testing.T) {
	ms := Mutants()
	if len(ms) < 9 {
		t.Fatalf("%d mutants", len(ms))
	}
	if !slices.IsSortedFunc(ms, func(a, b Mutant) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("Mutants() not sorted")
	}
	for _, mu := range ms {
		if mu.Description == "" || CheckMutant(mu.Name) != nil {
			t.Fatalf("mutant %+v", mu)
		}
	}
	if CheckMutant("") != nil || CheckMutant("bogus") == nil {
		t.Fatal("CheckMutant")
	}
}

// bank is a stress workload: each word is an account whose balance is in the
// low 24 bits and a unique tag above; transfers move money between k
// accounts with one MwCAS, and every snapshot must show the same total.
type bank struct {
	m        *PMwCAS
	accounts uint64
	total    uint64
}

const balanceBits = 24

func newBank(t testing.TB, m *PMwCAS, accounts uint64) *bank {
	b := &bank{m: m, accounts: accounts}
	for a := range accounts {
		if ok, _, err := m.CAS(0, []Word{{a, 0, 1000}}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		b.total += 1000
	}
	return b
}

func balance(v uint64) uint64 { return v & (1<<balanceBits - 1) }

// worker runs ops transfers (or audits, one in four) as worker id. It stops
// early, without error, when the region crashes.
func (b *bank) worker(id int, seed uint64, ops int, k int, done *atomic.Int64) error {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	addrs := make([]uint64, k)
	vals := make([]uint64, k)
	all := make([]uint64, b.accounts)
	allVals := make([]uint64, b.accounts)
	for i := range all {
		all[i] = uint64(i)
	}
	words := make([]Word, k)
	var tag uint64
	for range ops {
		if rng.IntN(4) == 0 {
			if err := b.m.Read(id, all, allVals); err != nil {
				return err
			}
			sum := uint64(0)
			for _, v := range allVals {
				sum += balance(v)
			}
			if sum != b.total {
				return errors.New("audit: torn snapshot")
			}
			continue
		}
		for i := range addrs {
		again:
			addrs[i] = rng.Uint64N(b.accounts)
			if slices.Contains(addrs[:i], addrs[i]) {
				goto again
			}
		}
		if err := b.m.Read(id, addrs, vals); err != nil {
			return err
		}
		amount := rng.Uint64N(10)
		if balance(vals[0]) < amount {
			amount = 0
		}
		for i := range words {
			tag++
			nb := balance(vals[i])
			switch i {
			case 0:
				nb -= amount
			case 1:
				nb += amount
			}
			words[i] = Word{addrs[i], vals[i], (uint64(id)<<20|tag)<<balanceBits | nb}
		}
		if _, _, err := b.m.CAS(id, words); err != nil {
			return err
		}
		if done != nil {
			done.Add(1)
		}
	}
	return nil
}

func (b *bank) check(t testing.TB) {
	t.Helper()
	sum := uint64(0)
	for a, v := range dataWords(b.m)[:b.accounts] {
		if v&flagBits != 0 {
			t.Fatalf("account %d holds flags: %#x", a, v)
		}
		sum += balance(v)
	}
	if sum != b.total {
		t.Fatalf("total %d, want %d", sum, b.total)
	}
}

func TestStress(t *testing.T) {
	ops := 3000
	if testing.Short() {
		ops = 500
	}
	for _, emulate := range []bool{false, true} {
		for _, k := range []int{1, 2, 4} {
			m, r := newTest(t, Config{Words: 16, MaxWorkers: 4, DescriptorsPerWorker: 2}, pmem.Options{Emulate: emulate})
			b := newBank(t, m, 12)
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for id := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[id] = b.worker(id, uint64(k), ops, max(k, 2), nil)
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("emulate=%v k=%d: %v", emulate, k, err)
			}
			b.check(t)
			if !emulate {
				continue
			}
			// Every operation completed, so every crash image must recover to
			// exactly the state before the crash.
			before := slices.Clone(dataWords(m))
			for _, p := range pmem.Policies() {
				img, err := r.CrashImage(p, rand.New(rand.NewPCG(1, 2)), pmem.Options{Emulate: true})
				if err != nil {
					t.Fatal(err)
				}
				m2, _, err := Recover(img, Config{})
				if err != nil {
					t.Fatal(err)
				}
				if after := dataWords(m2); !slices.Equal(before, after) {
					t.Fatalf("policy %s: recovered %v, want %v", p, after, before)
				}
				img.Close()
			}
		}
	}
}

// TestStressCrash crashes the region while workers run freely, under every
// policy, recovers, and checks that no transfer was torn; then runs on the
// recovered region.
func TestStressCrash(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		p := pmem.Policies()[round%4]
		m, r := newTest(t, Config{Words: 16, MaxWorkers: 3, DescriptorsPerWorker: 2}, pmem.Options{Emulate: true})
		b := newBank(t, m, 10)
		for life := range 3 {
			var done atomic.Int64
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for id := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[id] = b.worker(id, uint64(round*10+life), 1<<30, 3, &done)
				}()
			}
			for done.Load() < 300 {
				if err := errors.Join(errs...); err != nil {
					break
				}
				runtime.Gosched()
			}
			r.RequestCrash()
			wg.Wait()
			for _, err := range errs {
				if err != nil && !errors.Is(err, pmem.ErrCrashed) {
					t.Fatalf("round %d: %v", round, err)
				}
			}
			if err := r.Crash(p, rand.New(rand.NewPCG(uint64(round), 0))); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Recover(0); err != nil {
				t.Fatalf("round %d policy %s: recovery: %v", round, p, err)
			}
			b.check(t)
		}
	}
}
