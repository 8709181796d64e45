package target_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pmlin/pmlin/internal/crash"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// inPlace is a multi-word CAS that a careful reader would accept without
// crashes: one lock word taken with a region CAS, then each new value
// written in place and persisted. A crash between two of its writes keeps
// half of the operation.
type inPlace struct{ r *pmem.Region }

// Region word 0 is the lock; data word a is region word 8+a.
func (m inPlace) DataOffset(a uint64) uint64 { return 8 + a }

func (m inPlace) CAS(worker int, words []target.Word) (bool, uint64, error) {
	s := pmem.Steps{W: m.r.Worker(worker)}
	for s.Err == nil && !s.CAS(0, 0, 1) { // spin: every attempt is a region access
	}
	for _, x := range words {
		if v := s.Load(m.DataOffset(x.Addr)); s.Err == nil && v != x.Old {
			s.Store(0, 0)
			return false, x.Addr, s.Err
		}
	}
	for _, x := range words {
		s.Store(m.DataOffset(x.Addr), x.New)
		s.Persist(m.DataOffset(x.Addr))
	}
	s.Store(0, 0)
	return s.Err == nil, 0, s.Err
}

func (m inPlace) Read(worker int, addrs []uint64, out []uint64) error {
	s := pmem.Steps{W: m.r.Worker(worker)}
	for s.Err == nil && !s.CAS(0, 0, 1) {
	}
	for i, a := range addrs {
		out[i] = s.Load(m.DataOffset(a))
	}
	s.Store(0, 0)
	return s.Err
}

// Recover releases the lock a crash may have left taken; it cannot mend a
// half-written operation: there is no log.
func (m inPlace) Recover(worker int) (string, error) {
	s := pmem.Steps{W: m.r.Worker(worker)}
	s.Store(0, 0)
	s.Persist(0)
	return "lock released", s.Err
}

// TestInPlaceTorn runs a fuzzing campaign on a target made of the pieces
// above: pmlin crashes it between two of its writes and reports the torn
// operation. (A user runs such a campaign with pmlintest.Fuzz or a pmlin
// of their own, cli.Main.)
func TestInPlaceTorn(t *testing.T) {
	attach := func(r *pmem.Region, c target.Config) (target.Instance, error) { return inPlace{r}, nil }
	inplace := &target.Target{
		Name:        "inplace",
		Description: "a MwCAS under one lock that writes in place, without a log",
		Size:        func(c target.Config) (uint64, error) { return 8 + c.Words, nil },
		New:         attach, // a region of zeros is an empty inPlace
		Open:        attach,
	}
	run := crash.DefaultConfig()
	run.Target = inplace
	_, found, err := crash.Fuzz(context.Background(), crash.FuzzConfig{Run: run, Seed: 1, Mode: history.Strict, MaxRuns: 100, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if found == nil {
		t.Fatal("100 runs found no violation")
	}
	got := fmt.Sprintln("violation in run", found.Index+1, "of the campaign:", found.Verdict.Anomalies[0].Kind) +
		fmt.Sprintln("replay: pmlin run", found.Config.Flags())
	const want = "violation in run 2 of the campaign: cycle\n" +
		"replay: pmlin run --target inplace --threads 4 --ops 1000 --words 8 --k 2 --reads 0.5 --crashes 6 --policy mix --recovery-crash 0.1 --sched deterministic --seed 4754066425326119843\n"
	if got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}
