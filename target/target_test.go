package target_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/crash"
	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

func sample() *target.Target {
	attach := func(r *pmem.Region, c target.Config) (target.Instance, error) { return inPlace{r}, nil }
	return &target.Target{
		Name:    "sample",
		Mutants: []target.Mutant{{Name: "bug-one", Description: "one"}},
		Params:  []target.Param{{Name: "size", Default: "3", Usage: "a size"}},
		Size:    func(c target.Config) (uint64, error) { return 8 + c.Words, nil },
		New:     attach,
		Open:    attach,
	}
}

func TestCheck(t *testing.T) {
	if err := sample().Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		change func(*target.Target)
		err    string
	}{
		{func(t *target.Target) { t.Name = "" }, "name"},
		{func(t *target.Target) { t.Name = "9lives" }, "starting with a letter"},
		{func(t *target.Target) { t.Open = nil }, "must both be set"},
		{func(t *target.Target) { t.Size = nil }, "Size must be set"},
		{func(t *target.Target) { t.Model = "queue" }, "sets NewObject and OpenObject"},
		{func(t *target.Target) {
			t.NewObject = func(*pmem.Region, target.Config) (target.Object, error) { return nil, nil }
		}, "NewObject and OpenObject are for data-structure targets"},
		{func(t *target.Target) { t.Mutants = append(t.Mutants, t.Mutants[0]) }, `mutant name "bug-one"`},
		{func(t *target.Target) { t.Params = append(t.Params, target.Param{Name: "Size"}) }, `parameter name "Size"`},
	} {
		tg := sample()
		tc.change(tg)
		if err := tg.Check(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v, want %q", err, tc.err)
		}
	}
	obj := func(model string) *target.Target {
		tg := sample()
		tg.New, tg.Open, tg.Model = nil, nil, model
		tg.NewObject = func(*pmem.Region, target.Config) (target.Object, error) { return nil, nil }
		tg.OpenObject = tg.NewObject
		return tg
	}
	if err := obj("queue cap=8").Check(); err != nil {
		t.Error(err)
	}
	for model, want := range map[string]string{"quue": `unknown model "quue"`, "queue cap": "not key=value", "queue cap=0": "model queue cap=0"} {
		if err := obj(model).Check(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("model %q: %v, want %q", model, err, want)
		}
	}
	var nilTarget *target.Target
	if err := nilTarget.Check(); err == nil {
		t.Error("nil target accepted")
	}
}

func TestConfigInt(t *testing.T) {
	c := target.Config{Params: map[string]string{"size": "70"}}
	if v, err := c.Int("size", 1, 100); v != 70 || err != nil {
		t.Fatal(v, err)
	}
	if _, err := c.Int("size", 1, 10); err == nil || !strings.Contains(err.Error(), "--size 70: out of range (1..10)") {
		t.Fatal(err)
	}
	if _, err := (target.Config{Params: map[string]string{"size": "x"}}).Int("size", 1, 10); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Fatal(err)
	}
}

// TestInPlaceWithoutCrashes: the example's target is linearizable as long
// as nothing crashes, so the violation the example finds is the crash's.
func TestInPlaceWithoutCrashes(t *testing.T) {
	run := crash.DefaultConfig()
	run.Target, run.Crashes = sample(), 0
	_, found, err := crash.Fuzz(context.Background(), crash.FuzzConfig{Run: run, Seed: 1, Mode: history.Strict, MaxRuns: 20, Jobs: 1})
	if err != nil || found != nil {
		t.Fatal(err, found)
	}
}

// TestOptionalOperations: a target without them is run without them by a
// campaign's mix, and refused, with a clear error, by a workload that asks
// for them; the PMwCAS has both.
func TestOptionalOperations(t *testing.T) {
	run := crash.DefaultConfig()
	run.Target, run.Crashes = sample(), 0
	if o, err := crash.ProbeOptional(run); err != nil || o != (crash.Optional{}) {
		t.Fatal(o, err)
	}
	st, found, err := crash.Fuzz(context.Background(), crash.FuzzConfig{Run: run, Seed: 1, Mode: history.Strict, MaxRuns: 8, Jobs: 1, Mix: crash.Mix{Optional: true}})
	if err != nil || found != nil || st.Mix.OptionalOps != "" || st.Mix.Optional != 0 {
		t.Fatal(err, found, st.Mix)
	}
	for _, ask := range []func(*crash.Config){
		func(c *crash.Config) { c.Driver.Swaps = 0.2 },
		func(c *crash.Config) { c.Driver.FailValues = true },
	} {
		c := run
		ask(&c)
		_, err := crash.Run(context.Background(), c, io.Discard)
		if !errors.Is(err, driver.ErrUnsupported) {
			t.Errorf("%+v: %v", c.Driver, err)
		}
	}
	run.Target = mwcas.Target()
	if o, err := crash.ProbeOptional(run); err != nil || !o.Swap || !o.FailValues {
		t.Fatal(o, err)
	}
}
