package histgen

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/testenv"
)

// seeds scales the number of random cases down under -short, and by half
// under the race detector (which makes these tests about seven times slower
// and finds nothing more in the single-goroutine generators than half the
// cases would); PMLIN_LONG=1 runs ten times n.
func seeds(t testing.TB, n int) uint64 {
	if raceEnabled && !testenv.Long() {
		n /= 2
	}
	return uint64(testenv.Count(0, n, 10*n))
}

// dump is a line-number-free rendering of h, to compare histories.
func dump(h *history.History) string {
	var b strings.Builder
	fmt.Fprintf(&b, "init %d %v events %d crashes %v\n", h.InitDefault, h.Init, h.Events, h.Crashes)
	for _, op := range h.Ops {
		fmt.Fprintf(&b, "%d p%d %v %v e%v n%v v%v %v fail=%d inv=%d ret=%d crash=%d\n",
			op.ID, op.Proc, op.Kind, op.Addrs, op.Expected, op.New, op.Values,
			op.Status, op.FailAddr, op.Inv, op.Ret, op.Crash)
	}
	return b.String()
}

// TestReaderAliasingRegression: a well-formed history that history.Reader
// once rejected (the Event's address buffer aliased a process's pending
// addresses: a return, the same process's next invocation, then another
// process's invocation overwrote the first one's addresses). Found by this
// package's round trips; kept so a regression names itself.
func TestReaderAliasingRegression(t *testing.T) {
	const src = "1 inv cas 5:0:1\n1 ret ok\n1 inv cas 5:1:2\n0 inv read 7\n1 ret fail 5\n"
	if _, err := history.ReadAll(strings.NewReader(src), "canary"); err != nil {
		t.Fatalf("history.ReadAll rejects a well-formed history: %v\n%s", err, src)
	}
}

// wellFormed checks h with Validate and through a text round trip.
func wellFormed(t *testing.T, h *history.History, what fmt.Stringer) {
	t.Helper()
	if err := Validate(h); err != nil {
		t.Fatalf("%v: Validate: %v\n%s", what, err, Text(h))
	}
	back, err := Reparse(h)
	if err != nil {
		t.Fatalf("%v: Reparse: %v\n%s", what, err, Text(h))
	}
	if got, want := dump(back), dump(h); got != want {
		t.Fatalf("%v: round trip differs:\n got %s\nwant %s", what, got, want)
	}
	for _, op := range back.Ops {
		if op.Line <= 0 || op.Ret >= 0 && op.RetLine <= op.Line {
			t.Fatalf("%v: reparsed op %d has lines %d, %d", what, op.ID, op.Line, op.RetLine)
		}
	}
}

type desc string

func (d desc) String() string { return string(d) }

func TestSmallWellFormedAndLinearizable(t *testing.T) {
	t.Parallel()
	n := seeds(t, 3000)
	for seed := range n {
		cfg := RandomSmallConfig(seed)
		h := Small(cfg, seed)
		what := desc(fmt.Sprintf("seed %d %+v", seed, cfg))
		wellFormed(t, h, what)
		if err := CheckAssumptions(h); err != nil {
			t.Fatalf("%v: %v\n%s", what, err, Text(h))
		}
		if len(h.Ops) != cfg.Ops || len(h.Crashes) != cfg.Crashes {
			t.Fatalf("%v: %d ops, %d crashes", what, len(h.Ops), len(h.Crashes))
		}
		for _, m := range history.Modes {
			ok, err := RefCheck(h, m)
			if err != nil {
				t.Fatal(err)
			}
			if !ok && m >= cfg.Mode {
				t.Fatalf("%v: base history not linearizable in mode %v\n%s", what, m, Text(h))
			}
		}
	}
}

func TestSmallConfigs(t *testing.T) {
	t.Parallel()
	cfgs := []SmallConfig{
		{Procs: 2, Ops: 1, Words: 1, MaxK: 1},
		{Procs: 6, Ops: 40, Words: 8, MaxK: 4, ReadFraction: 0.5, Crashes: 3, PendingAtEnd: true, Mode: history.Durable},
		{Procs: 3, Ops: 20, Words: 2, MaxK: 5, ReadFraction: 1, Crashes: 5},
		{Procs: 4, Ops: 20, Words: 3, MaxK: 3, ReadFraction: 0, Crashes: 2, Mode: history.Recoverable},
		{Procs: 1, Ops: 0, Crashes: 2},
		{}, // the zero value is usable
	}
	for i, cfg := range cfgs {
		for seed := range seeds(t, 200) {
			h := Small(cfg, seed)
			what := desc(fmt.Sprintf("config %d seed %d", i, seed))
			wellFormed(t, h, what)
			if err := CheckAssumptions(h); err != nil {
				t.Fatalf("%v: %v", what, err)
			}
		}
	}
}

func TestSmallDeterministic(t *testing.T) {
	for seed := range uint64(50) {
		cfg := RandomSmallConfig(seed)
		a, b := Text(Random(cfg, seed)), Text(Random(cfg, seed))
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two different histories:\n%s\n%s", seed, a, b)
		}
	}
	if bytes.Equal(Text(Small(DefaultSmall(), 1)), Text(Small(DefaultSmall(), 2))) {
		t.Fatal("seeds 1 and 2 give the same history")
	}
}

// TestSmallCoverage checks that the generator produces the situations the
// analyzer must handle, so a change cannot quietly make it tame.
func TestSmallCoverage(t *testing.T) {
	var reads, ok, fail, crashed, crashedVisible, pendingEnd, multi int
	var swaps, crashedSwaps, crashedSwapsVisible, failValues int
	for seed := range uint64(500) {
		cfg := RandomSmallConfig(seed)
		h := Small(cfg, seed)
		values := map[[2]uint64]bool{}
		for _, op := range h.Ops {
			for j, a := range op.Addrs {
				if op.Values != nil {
					values[[2]uint64{a, op.Values[j]}] = true
				}
			}
		}
		for _, op := range h.Ops {
			if len(op.Addrs) > 1 {
				multi++
			}
			switch op.Status {
			case history.Returned:
				if op.Kind == history.Swap {
					swaps++
				} else {
					reads++
				}
			case history.Succeeded:
				ok++
			case history.Failed:
				fail++
				if op.Values != nil {
					failValues++
				}
			case history.Pending:
				if op.Crash < 0 {
					pendingEnd++
				} else if op.Kind == history.CAS {
					crashed++
					if values[[2]uint64{op.Addrs[0], op.New[0]}] {
						crashedVisible++
					}
				} else if op.Kind == history.Swap {
					crashedSwaps++
					if values[[2]uint64{op.Addrs[0], op.New[0]}] {
						crashedSwapsVisible++
					}
				}
			}
		}
	}
	t.Logf("reads %d, cas ok %d, cas fail %d (reporting values %d), crashed cas %d (visible %d), swaps %d, crashed swaps %d (visible %d), pending at end %d, multi-word %d",
		reads, ok, fail, failValues, crashed, crashedVisible, swaps, crashedSwaps, crashedSwapsVisible, pendingEnd, multi)
	for name, v := range map[string]int{"reads": reads, "ok": ok, "fail": fail, "crashed": crashed,
		"crashed visible": crashedVisible, "pending at end": pendingEnd, "multi-word": multi,
		"swaps": swaps, "crashed swaps": crashedSwaps, "crashed swaps visible": crashedSwapsVisible, "failures reporting values": failValues} {
		if v < 20 {
			t.Errorf("only %d %s", v, name)
		}
	}
	if ok < fail/3 || fail < ok/3 {
		t.Errorf("CAS outcomes unbalanced: %d ok, %d fail", ok, fail)
	}
}

func TestMutationsWellFormed(t *testing.T) {
	t.Parallel()
	n := seeds(t, 400)
	applied := map[MutationKind]int{}
	keptAssumptions := map[MutationKind]int{}
	for seed := range n {
		cfg := RandomSmallConfig(seed)
		h := Small(cfg, seed)
		before := Text(h)
		rng := newRand(seed, 99)
		for _, k := range Kinds {
			out, ok := Mutate(h, k, rng)
			if !bytes.Equal(Text(h), before) {
				t.Fatalf("seed %d: Mutate(%v) modified its input", seed, k)
			}
			if !ok {
				if out != nil {
					t.Fatalf("seed %d: Mutate(%v) returned a history and false", seed, k)
				}
				continue
			}
			applied[k]++
			wellFormed(t, out, desc(fmt.Sprintf("seed %d %v", seed, k)))
			if CheckAssumptions(out) == nil {
				keptAssumptions[k]++
			}
		}
	}
	for _, k := range Kinds {
		t.Logf("%-28v applied %4d/%d, kept assumptions %4d", k, applied[k], n, keptAssumptions[k])
		if applied[k] < int(n)/10 {
			t.Errorf("%v applied only %d times in %d", k, applied[k], n)
		}
	}
}

// TestMutationSemantics checks, with the reference checker, the claims the
// MutationKind docs make, on base histories generated in every mode.
func TestMutationSemantics(t *testing.T) {
	t.Parallel()
	n := seeds(t, 300)
	// Kinds that are always (or, for the crashed-effect kinds, in the named
	// modes) non-linearizable, whatever target they pick.
	never := map[MutationKind][]history.Mode{
		FutureRead:               history.Modes,
		PhantomRead:              history.Modes,
		LostWrite:                history.Modes,
		CrashedEffectVisibleLate: {history.Strict, history.Recoverable},
		CrashedEffectAfterCrash:  {history.Strict},
		CrashedEffectPastCutOff:  {history.Strict, history.Recoverable},
	}
	// Kinds that keep a linearizable history linearizable, in the named
	// modes (when the base is linearizable there).
	keeps := map[MutationKind][]history.Mode{
		ReorderLater:             history.Modes,
		InsertCrash:              {history.Recoverable, history.Durable},
		CrashedEffectVisibleLate: {history.Durable},
		CrashedEffectAfterCrash:  {history.Recoverable, history.Durable},
		CrashedEffectPastCutOff:  {history.Durable},
	}
	for _, base := range history.Modes {
		nonLin := map[MutationKind]int{}
		applied := map[MutationKind]int{}
		strongN := map[MutationKind]int{}
		for seed := range n {
			cfg := RandomSmallConfig(seed)
			cfg.Mode = base
			h := Small(cfg, seed)
			rng := newRand(seed, 7)
			for _, k := range Kinds {
				out, ok, strong := mutate(h, k, rng)
				if !ok {
					continue
				}
				applied[k]++
				if strong {
					strongN[k]++
				}
				for _, m := range history.Modes {
					lin, err := RefCheck(out, m)
					if err != nil {
						t.Fatal(err)
					}
					if m == base && !lin {
						nonLin[k]++
					}
					if strong && lin {
						t.Errorf("base %v seed %d: strong %v linearizable in %v:\nbase\n%s\nmutated\n%s", base, seed, k, m, Text(h), Text(out))
					}
					if slices.Contains(never[k], m) && lin {
						t.Errorf("base %v seed %d: %v linearizable in %v:\n%s", base, seed, k, m, Text(out))
					}
					if m >= base && slices.Contains(keeps[k], m) && !lin {
						t.Errorf("base %v seed %d: %v not linearizable in %v:\nbase\n%s\nmutated\n%s", base, seed, k, m, Text(h), Text(out))
					}
				}
			}
		}
		for _, k := range Kinds {
			t.Logf("base %-11v %-28v non-linearizable %3d/%3d (strong targets %3d)", base, k, nonLin[k], applied[k], strongN[k])
		}
	}
}

func TestRandomBalance(t *testing.T) {
	t.Parallel()
	n := seeds(t, 2000)
	for _, m := range history.Modes {
		lin, total := 0, 0
		byCount := map[int][2]int{}
		for seed := range n {
			cfg := RandomSmallConfig(seed)
			cfg.Mode = m
			c := RandomCase(cfg, seed)
			wellFormed(t, c.History, c)
			ok, err := RefCheck(c.History, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Mutations) == 0 && !ok {
				t.Fatalf("%v: unmutated history not linearizable in %v", c, m)
			}
			total++
			bc := byCount[len(c.Mutations)]
			bc[1]++
			if ok {
				lin++
				bc[0]++
			}
			byCount[len(c.Mutations)] = bc
		}
		frac := float64(lin) / float64(total)
		t.Logf("mode %-11v linearizable %4d/%d = %.2f (by number of mutations, lin/total: %v)", m, lin, total, frac, byCount)
		if frac < 0.35 || frac > 0.65 {
			t.Errorf("mode %v: %.2f of Random's histories are linearizable, want about half", m, frac)
		}
	}
}

// TestSmallSeparatesModes checks that bases generated in the weaker modes
// sometimes need them: a crashed CAS that took effect after the crash (not
// strictly linearizable), or after its process's next operation (not
// recoverably linearizable).
func TestSmallSeparatesModes(t *testing.T) {
	t.Parallel()
	n := seeds(t, 1000)
	for _, m := range []history.Mode{history.Recoverable, history.Durable} {
		notIn := map[history.Mode]int{}
		for seed := range n {
			cfg := SmallConfig{Procs: 3, Ops: 12, Words: 3, MaxK: 2, ReadFraction: 0.5, Crashes: 2, Mode: m}
			h := Small(cfg, seed)
			for _, cm := range history.Modes {
				if ok, _ := RefCheck(h, cm); !ok {
					notIn[cm]++
				}
			}
		}
		t.Logf("%d bases generated in %v: not linearizable in %v", n, m, notIn)
		if notIn[m] > 0 {
			t.Errorf("%v: %d bases not linearizable in their own mode", m, notIn[m])
		}
		if notIn[history.Strict] < int(n)/100 || m == history.Durable && notIn[history.Recoverable] < int(n)/100 {
			t.Errorf("%v: too few bases need the mode: %v", m, notIn)
		}
	}
}

func TestKindsComplete(t *testing.T) {
	if len(Kinds) != int(numKinds)-1 {
		t.Fatalf("Kinds has %d kinds, want %d", len(Kinds), numKinds-1)
	}
	for i, k := range Kinds {
		if k != MutationKind(i+1) || strings.HasPrefix(k.String(), "MutationKind(") {
			t.Fatalf("Kinds[%d] = %v", i, k)
		}
	}
}

// TestRecoverableCASChains: in Recoverable mode a crashed CAS that takes
// effect late must do so before its process's next operation that stays in
// the history, which may itself be a crashed CAS that took effect. The
// simulator let the first take effect after the second: these two bases,
// found by PMLIN_LONG=1 runs of TestSmallSeparatesModes and
// TestMutationSemantics, were not recoverably linearizable.
func TestRecoverableCASChains(t *testing.T) {
	separates := SmallConfig{Procs: 3, Ops: 12, Words: 3, MaxK: 2, ReadFraction: 0.5, Crashes: 2, Mode: history.Recoverable}
	random := RandomSmallConfig(2092)
	random.Mode = history.Recoverable
	for _, c := range []struct {
		cfg  SmallConfig
		seed uint64
	}{{separates, 8634}, {random, 2092}} {
		h := Small(c.cfg, c.seed)
		if ok, err := RefCheck(h, history.Recoverable); !ok || err != nil {
			t.Errorf("seed %d, %+v: not recoverably linearizable (%v):\n%s", c.seed, c.cfg, err, Text(h))
		}
	}
}
