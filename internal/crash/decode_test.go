package crash

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// lazyTag marks a data word that recovery left for the next operation to
// clean: the word holds the value with this bit set.
const lazyTag = 1 << 62

// lazyTarget is a lock-based CAS (one word at a time: it logs nothing) whose recovery cleans lazily: it marks
// every data word (lazyTag) and leaves the marks for operations to see
// through, as a design with descriptors left in place would. Its region:
// word 0 the lock (0 free, else the holder's worker + 1), words 1 .. Words
// the data. decode chooses how the harness may read it after recovery:
// "" (no Decoder: the marked words read as they are), "ok", or "stores"
// (a Decode that cleans the word it reads, which the harness refuses).
func lazyTarget(decode string) *target.Target {
	build := func(r *pmem.Region, c target.Config) (target.Instance, error) {
		x := &lazyInstance{r: r, words: c.Words}
		switch decode {
		case "ok":
			return lazyDecoder{x}, nil
		case "stores":
			return lazyCleaner{x}, nil
		}
		return x, nil
	}
	return &target.Target{Name: "lazy", Blocking: true,
		Size: func(c target.Config) (uint64, error) { return c.Words + 1, nil }, New: build, Open: build}
}

type lazyInstance struct {
	r     *pmem.Region
	words uint64
}

func (x *lazyInstance) lock(s *pmem.Steps, w int) {
	for s.Err == nil {
		if ok, err := s.W.CAS(0, 0, uint64(w)+1); err != nil {
			s.Err = err
		} else if ok {
			return
		}
	}
}

func (x *lazyInstance) unlock(s *pmem.Steps) {
	s.Store(0, 0)
	s.Persist(0)
}

func (x *lazyInstance) CAS(w int, words []target.Word) (bool, uint64, error) {
	s := &pmem.Steps{W: x.r.Worker(w)}
	x.lock(s, w)
	for _, y := range words {
		if v := s.Load(1+y.Addr) &^ lazyTag; s.Err == nil && v != y.Old {
			x.unlock(s)
			return false, y.Addr, s.Err
		}
	}
	for _, y := range words {
		s.Store(1+y.Addr, y.New)
		s.Persist(1 + y.Addr)
	}
	x.unlock(s)
	return s.Err == nil, 0, s.Err
}

func (x *lazyInstance) Read(w int, addrs, out []uint64) error {
	s := &pmem.Steps{W: x.r.Worker(w)}
	x.lock(s, w)
	for i, a := range addrs {
		out[i] = s.Load(1+a) &^ lazyTag
	}
	x.unlock(s)
	return s.Err
}

func (x *lazyInstance) Recover(w int) (string, error) {
	s := &pmem.Steps{W: x.r.Worker(w)}
	x.unlock(s)
	for a := range x.words {
		if v := s.Load(1 + a); s.Err == nil && v&lazyTag == 0 {
			s.Store(1+a, v|lazyTag)
			s.Persist(1 + a)
		}
	}
	return "", s.Err
}

func (x *lazyInstance) DataOffset(a uint64) uint64 { return 1 + a }

type lazyDecoder struct{ *lazyInstance }

func (x lazyDecoder) Decode(w int, a uint64) (uint64, error) {
	v, err := x.r.Worker(w).Load(1 + a)
	return v &^ lazyTag, err
}

type lazyCleaner struct{ *lazyInstance }

func (x lazyCleaner) Decode(w int, a uint64) (uint64, error) {
	v, err := x.r.Worker(w).Load(1 + a)
	if err == nil && v&lazyTag != 0 {
		err = x.r.Worker(w).Store(1+a, v&^lazyTag)
	}
	return v &^ lazyTag, err
}

// TestDecoder: a target that cleans lazily is judged by what its Decode
// makes of the words recovery left; without Decode, the marked words read
// as values nobody wrote; a Decode that writes is a finding.
func TestDecoder(t *testing.T) {
	run := func(decode string, seed uint64) (*Verdict, string) {
		c := pmwcasRun()
		c.Driver.Seed = seed
		c.Target = lazyTarget(decode)
		c.Driver.Threads, c.Driver.Words, c.Driver.K, c.Ops, c.Crashes = 2, 4, 1, 200, 3
		var buf bytes.Buffer
		v, err := Check(context.Background(), c, history.Strict, &buf)
		if err != nil {
			t.Fatal(err)
		}
		return v, buf.String()
	}
	for seed := range uint64(5) {
		if v, h := run("ok", seed); v.Violated() {
			t.Fatalf("seed %d, with Decode: %+v\n%s", seed, v.Anomalies, h)
		}
	}
	if v, h := run("", 1); !v.Violated() {
		t.Fatalf("without Decode, the marked words pass:\n%s", h)
	}
	v, h := run("stores", 1)
	if !v.Violated() || v.Anomalies[0].Kind != Corrupt || !strings.Contains(v.Anomalies[0].Explanation, "Decode changed region word") {
		t.Fatalf("a Decode that writes: %+v\n%s", v.Anomalies, h)
	}
}
