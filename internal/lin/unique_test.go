package lin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// uniqueGen is a generator of operations for genHistory whose written
// values are unique in the history (put, putifabsent, a register's cas
// write a new number each; a cas expects one written before, or an
// initial one), and of lies among the values written so far, the initial
// ones and nil. removes: the map's remove too.
func uniqueGen(removes bool) (func(*rand.Rand, string) (string, []model.Value), func(*rand.Rand, string, string, []model.Value) []model.Value) {
	next := uint64(10)
	var seen []model.Value
	fresh := func() model.Value {
		next++
		v := model.Number(next)
		seen = append(seen, v)
		return v
	}
	old := func(r *rand.Rand) model.Value {
		if len(seen) == 0 || r.IntN(4) == 0 {
			if r.IntN(3) == 0 {
				return vNil
			}
			return model.Number(uint64(r.IntN(3)))
		}
		return seen[r.IntN(len(seen))]
	}
	calls := func(r *rand.Rand, m string) (string, []model.Value) {
		if m == "register" {
			if r.IntN(2) == 0 {
				return "read", nil
			}
			return "cas", []model.Value{old(r), fresh()}
		}
		key := model.Number(uint64(r.IntN(2)))
		names := []string{"get", "put", "put", "putifabsent"}
		if removes {
			names = append(names, "remove")
		}
		switch n := names[r.IntN(len(names))]; n {
		case "put", "putifabsent":
			return n, []model.Value{key, fresh()}
		default:
			return n, []model.Value{key}
		}
	}
	lies := func(r *rand.Rand, m, name string, args []model.Value) []model.Value {
		if name == "cas" {
			return one([]model.Value{vOK, vFail}[r.IntN(2)])
		}
		v := old(r)
		if m == "map" && v.Sym == model.Num && v.N < 10 && r.IntN(2) == 0 {
			v = vNil // a map's values are all written ones
		}
		return one(v)
	}
	return calls, lies
}

// uniqueModels are the shapes the unique-value engine is compared on.
var uniqueModels = []struct {
	name, model string
	removes     bool
}{{"map", "map", true}, {"map-noremove", "map", false}, {"register", "register", false}}

// genUnique is history i of shape s (uniqueModels[s]).
func genUnique(s, i int) *model.History {
	um := uniqueModels[s]
	cfg := genConfigFor(um.model, i)
	cfg.calls, cfg.lies = uniqueGen(um.removes)
	return genHistory(rand.New(rand.NewPCG(uint64(i), uint64(100+s))), cfg)
}

// checkEngine checks h in mode with opt, failing t on an error or an
// undecided verdict; it returns the verdict and how many objects with
// operations engine answered, wholly or with the search for some keys
// (EngineMixed).
func checkEngine(t *testing.T, h *model.History, mode history.Mode, opt lin.Options, engine string, where func() string) (bool, int) {
	t.Helper()
	opt.Mode = mode
	res, err := lin.Check(context.Background(), h, opt)
	if err != nil {
		t.Fatalf("%s, %v: %v\n%s", where(), mode, err, renderV2(h))
	}
	if res.Verdict == lin.Undecided {
		t.Fatalf("%s, %v: undecided\n%s", where(), mode, renderV2(h))
	}
	n := 0
	for _, o := range res.Objects {
		if o.Ops > 0 && (o.Engine == engine || o.Engine == lin.EngineMixed && engine == lin.EngineUnique) {
			n++
		}
		if o.Verdict == lin.Violation && (o.Explanation == nil || o.Explanation.Sentence == "" || len(o.Explanation.Ops) == 0) {
			t.Fatalf("%s, %v: object %s's violation unexplained: %+v", where(), mode, o.Name, o.Explanation)
		}
	}
	return res.Verdict == lin.Linearizable, n
}

// TestUniqueAgreesBruteForce compares the unique-value engine (forced:
// Options.Engine) with the definition-level brute force
// (oracle_brute_test.go) on random histories of maps (with and without
// remove) and registers whose written values are unique, with crashes, `?`,
// pending operations and lies, in every mode: 1,500 per shape by default,
// 20,000 under PMLIN_LONG=1. It counts the objects the engine answered
// for (the others fell back to the search, for a reason uniqueApplies or
// the analyzer gives) and fails if it answered too few to test it. The
// default (engine and search in a race) must agree too.
func TestUniqueAgreesBruteForce(t *testing.T) {
	n := testenv.Count(0, 1500, 20000)
	for s, um := range uniqueModels {
		var yes, objs, by [3]int
		for i := range n {
			h := genUnique(s, i)
			for _, mode := range history.Modes {
				b, err := bruteForce(h, mode)
				if err != nil {
					t.Fatal(err)
				}
				where := func() string { return fmt.Sprintf("%s seed %d", um.name, i) }
				l, k := checkEngine(t, h, mode, lin.Options{Engine: lin.EngineUnique}, lin.EngineUnique, where)
				if l != b {
					t.Fatalf("%s, %v: the unique-value engine says %v, the brute force %v\n%s", where(), mode, l, b, renderV2(h))
				}
				// The default: the engine and the search in a race.
				if l, _ := checkEngine(t, h, mode, lin.Options{}, "", where); l != b {
					t.Fatalf("%s, %v: the race says %v, the brute force %v\n%s", where(), mode, l, b, renderV2(h))
				}
				if b {
					yes[mode]++
				}
				by[mode] += k
				for _, o := range h.Objects {
					for j := range h.Ops {
						if h.Objects[h.Ops[j].Object].Name == o.Name {
							objs[mode]++
							break
						}
					}
				}
			}
		}
		t.Logf("%-12s %d histories x 3 modes agree; linearizable strict %d, recoverable %d, durable %d; objects answered by the engine %v of %v",
			um.name, n, yes[0], yes[1], yes[2], by, objs)
		for mode := range by {
			if by[mode] < objs[mode]/3 || yes[mode] < n/10 || yes[mode] > n*9/10 {
				t.Errorf("%s, %v: the engine answered %d objects of %d, %d histories of %d linearizable: too few to test it", um.name, history.Modes[mode], by[mode], objs[mode], yes[mode], n)
			}
		}
	}
}

// uniqueCases are histories at the edges of what the unique-value engine
// takes: engine is the engine that must answer, for each mode, with the
// brute force's verdict.
var uniqueCases = []struct {
	name, text string
	engine     string
}{
	// Strict: a "?" before a crash stays open (the put may take effect
	// after the crash, between the two gets); in the word history it
	// would be pending at the crash and bounded by it.
	{"unknown-before-crash", `object m map
1 inv m put 0 11
1 ret ?
crash
2 inv m get 0
2 ret nil
2 inv m get 0
2 ret 11
`, lin.EngineExact},
	// Recoverable: the put cut off by the crash must precede process 1's
	// get answered ?, if it stays, and not the get after it; the engine
	// would order it before the second get (the ? one runs on a process
	// of its own there).
	{"unknown-in-process-order", `object m map
1 inv m put 0 11
crash
1 inv m get 0
1 ret ?
1 inv m get 0
1 ret nil
2 inv m get 0
2 ret 11
`, lin.EngineExact},
	// nil after a remove: which tombstone it saw is unknown.
	{"nil-after-remove", `object m map
1 inv m put 0 11
1 ret nil
1 inv m remove 0
1 ret 11
1 inv m get 0
1 ret nil
`, lin.EngineExact},
	// A remove that took a value, and no nil anywhere on its key: the
	// engine (a swap to a tombstone); key 1's nil is fine.
	{"remove-no-nil", `object m map
1 inv m put 0 11
2 inv m get 1
2 ret nil
1 ret 0x20
1 inv m remove 0
1 ret 11
`, lin.EngineUnique},
	// Key 0 as above, to the search; key 1 (a get of a value nobody
	// wrote) to the engine.
	{"nil-after-remove-one-key", `object m map
1 inv m put 0 11
1 ret nil
1 inv m remove 0
1 ret 11
1 inv m get 0
1 ret nil
2 inv m put 1 12
2 ret nil
2 inv m get 1
2 ret 13
`, lin.EngineMixed},
	// A register write has no old value.
	{"register-write", `object r register
1 inv r write 11
1 ret ok
1 inv r read
1 ret 11
`, lin.EngineExact},
	// A value written twice (Assumption 1): the analyzer refuses it.
	{"repeated-value", `object m map
1 inv m put 0 11
1 ret nil
1 inv m put 0 11
1 ret 11
`, lin.EngineExact},
	// A register's cas expecting nil, its initial value, and a failed one
	// that reports nothing (Assumption 2 holds: 11 was read before it).
	{"register-nil", `object r register init=nil
1 inv r cas nil 11
1 ret ok
1 inv r read
1 ret 11
2 inv r cas 11 12
2 ret ok
1 inv r cas 11 13
1 ret fail
`, lin.EngineUnique},
	// putifabsent: one that succeeds expects nil, one that fails reports
	// the value; here the failure saw a value written after it returned.
	{"putifabsent-future", `object m map
1 inv m putifabsent 0 11
1 ret 12
2 inv m putifabsent 0 12
2 ret nil
`, lin.EngineUnique},
}

// TestUniqueCases: each case is answered by the engine it names, with the
// brute force's verdict, in every mode.
func TestUniqueCases(t *testing.T) {
	for _, c := range uniqueCases {
		h, err := parseV2(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, mode := range history.Modes {
			if (c.name == "unknown-before-crash" && mode != history.Strict) || (c.name == "unknown-in-process-order" && mode != history.Recoverable) {
				continue // the engine takes them in the other modes
			}
			b, err := bruteForce(h, mode)
			if err != nil {
				t.Fatal(err)
			}
			where := func() string { return c.name }
			l, k := checkEngine(t, h, mode, lin.Options{Engine: lin.EngineUnique}, c.engine, where)
			if l != b || k != 1 {
				t.Errorf("%s, %v: %v (want %v), answered by %s: %v", c.name, mode, l, b, c.engine, k == 1)
			}
		}
	}
}

// TestUniqueAgreesExact compares the unique-value engine with the exact
// search (both forced) on larger histories than the brute force takes:
// 12 to 40 operations of up to 5 processes, 300 per shape by default,
// 3,000 under PMLIN_LONG=1.
func TestUniqueAgreesExact(t *testing.T) {
	n := testenv.Count(0, 300, 3000)
	for s, um := range uniqueModels {
		var yes, by, undecided int
		for i := range n {
			cfg := genConfigFor(um.model, i)
			cfg.minOps, cfg.maxOps, cfg.procs = 12, 40, 5
			cfg.calls, cfg.lies = uniqueGen(um.removes)
			h := genHistory(rand.New(rand.NewPCG(uint64(i), uint64(200+s))), cfg)
			mode := history.Modes[i%3]
			res, err := lin.Check(context.Background(), h, lin.Options{Mode: mode, Engine: lin.EngineExact, MaxStates: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict == lin.Undecided {
				undecided++
				continue
			}
			where := func() string { return fmt.Sprintf("%s seed %d", um.name, i) }
			l, k := checkEngine(t, h, mode, lin.Options{Engine: lin.EngineUnique}, lin.EngineUnique, where)
			if l != (res.Verdict == lin.Linearizable) {
				t.Fatalf("%s, %v: the unique-value engine says %v, the exact search %v\n%s", where(), mode, l, res.Verdict, renderV2(h))
			}
			by += k
			if l {
				yes++
			}
		}
		t.Logf("%-12s %d histories agree (%d linearizable), %d objects answered by the engine; %d undecided by the search, skipped", um.name, n-undecided, yes, by, undecided)
		if by < n/10 { // a map with removes keeps few keys free of nil
			t.Errorf("%s: the engine answered %d objects", um.name, by)
		}
	}
}
