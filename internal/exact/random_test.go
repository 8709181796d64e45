package exact

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/testenv"
)

// genConfig shapes random histories. Small word and value counts make
// repeated values and coincidences frequent, so both verdicts occur often.
type genConfig struct {
	procs, words, values int
	minOps, maxOps, maxK int

	crash float64 // chance per step of a crash, while an op is in flight
	lie   float64 // chance that a response is corrupted
	late  float64 // chance per step that a crashed cas takes effect late

	// unique makes every written value fresh (the recorder's Assumption 1),
	// so that reads pin down which cas took effect.
	unique bool
	// complete lets every op respond before the history ends.
	complete bool

	swap   float64 // chance that an update is a swap rather than a cas
	report float64 // chance that a failed cas reports the values it read
}

// genOp is an operation in flight in the generator's simulated execution.
type genOp struct {
	read, swap bool
	addrs      []uint64
	exp, new   []uint64
	applied    bool
	vals       []uint64 // what it saw (a swap: what it replaced)
	ok         bool
	fail       uint64
}

// genHistory simulates a run of a correct word array: every op takes effect
// atomically at a random moment between its invocation and its response,
// crashes interrupt ops that may or may not have taken effect, and (the
// durable-only behaviour) an interrupted cas may take effect after the crash.
// Then a response is sometimes corrupted. The History is built directly,
// event by event, as ReadAll would build it.
func genHistory(r *rand.Rand, cfg genConfig) *history.History {
	h := &history.History{}
	if r.IntN(4) == 0 {
		h.InitDefault = uint64(r.IntN(cfg.values))
	}
	if r.IntN(4) == 0 {
		h.Init = map[uint64]uint64{uint64(1 + r.IntN(cfg.words)): uint64(r.IntN(cfg.values))}
	}
	mem := map[uint64]uint64{}
	get := func(a uint64) uint64 {
		if v, ok := mem[a]; ok {
			return v
		}
		return h.InitValue(a)
	}
	apply := func(op *genOp) {
		op.applied = true
		op.vals = op.vals[:0]
		for _, a := range op.addrs {
			op.vals = append(op.vals, get(a))
		}
		if op.read {
			return
		}
		if op.swap {
			op.ok = true
			for k, a := range op.addrs {
				mem[a] = op.new[k]
			}
			return
		}
		var differ []uint64
		for k, a := range op.addrs {
			if get(a) != op.exp[k] {
				differ = append(differ, a)
			}
		}
		if len(differ) > 0 {
			op.ok, op.fail = false, differ[r.IntN(len(differ))]
			return
		}
		op.ok = true
		for k, a := range op.addrs {
			mem[a] = op.new[k]
		}
	}
	matches := func(op *genOp) bool {
		if op.swap {
			return true
		}
		for k, a := range op.addrs {
			if get(a) != op.exp[k] {
				return false
			}
		}
		return true
	}
	event := func() int {
		h.Events++
		return h.Events - 1
	}

	busy := make([]*genOp, cfg.procs)
	busyID := make([]int, cfg.procs)
	var limbo []*genOp // cas ops cut off by a crash before taking effect
	sinceCrash := 0    // ops invoked since the last crash
	nops := cfg.minOps + r.IntN(cfg.maxOps-cfg.minOps+1)
	fresh := uint64(cfg.values) // the last fresh value
	for {
		idle := 0
		for _, op := range busy {
			if op == nil {
				idle++
			}
		}
		if len(h.Ops) == nops && (idle == cfg.procs || !cfg.complete && r.IntN(4) == 0) {
			break // leave the rest pending at the end
		}
		// Pick a step: invoke, apply, respond, crash or late effect.
		type step struct{ kind, p int }
		var steps []step
		for p, op := range busy {
			switch {
			case op == nil && len(h.Ops) < nops:
				steps = append(steps, step{0, p})
			case op != nil && !op.applied:
				steps = append(steps, step{1, p})
			case op != nil:
				steps = append(steps, step{2, p})
			}
		}
		if r.Float64() < cfg.crash && idle < cfg.procs {
			steps = []step{{3, 0}}
		} else if len(limbo) > 0 && sinceCrash > 0 && r.Float64() < cfg.late {
			// Late, but after something that may observe the old value.
			steps = []step{{4, 0}}
		}
		if len(steps) == 0 {
			break
		}
		s := steps[r.IntN(len(steps))]
		switch s.kind {
		case 0: // invoke
			op := &genOp{read: r.IntN(5) < 2}
			k := 1 + r.IntN(min(cfg.maxK, cfg.words))
			for _, a := range r.Perm(cfg.words)[:k] {
				op.addrs = append(op.addrs, uint64(a+1))
			}
			op.swap = !op.read && cfg.swap > 0 && r.Float64() < cfg.swap
			if !op.read {
				for _, a := range op.addrs {
					e := get(a)
					if r.IntN(3) == 0 {
						e = uint64(r.IntN(cfg.values))
					}
					if !op.swap {
						op.exp = append(op.exp, e)
					}
					if cfg.unique {
						fresh++
						op.new = append(op.new, fresh)
					} else {
						op.new = append(op.new, uint64(r.IntN(cfg.values)))
					}
				}
			}
			pos := event()
			hop := history.Op{ID: len(h.Ops), Line: int64(pos + 1), Proc: int32(s.p), Kind: history.Read,
				Addrs: op.addrs, Inv: pos, Ret: -1, Crash: -1}
			switch {
			case op.swap:
				hop.Kind, hop.New = history.Swap, op.new
			case !op.read:
				hop.Kind, hop.Expected, hop.New = history.CAS, op.exp, op.new
			}
			busy[s.p], busyID[s.p] = op, hop.ID
			sinceCrash++
			h.Ops = append(h.Ops, hop)
		case 1: // take effect
			apply(busy[s.p])
		case 2: // respond
			op, hop := busy[s.p], &h.Ops[busyID[s.p]]
			busy[s.p] = nil
			hop.Ret = event()
			hop.RetLine = int64(hop.Ret + 1)
			lie := r.Float64() < cfg.lie
			switch {
			case op.read || op.swap:
				hop.Status, hop.Values = history.Returned, slices.Clone(op.vals)
				if lie {
					hop.Values[r.IntN(len(op.vals))] = uint64(r.IntN(cfg.values))
				}
			case !lie && op.ok, lie && !op.ok && r.IntN(2) == 0:
				hop.Status = history.Succeeded
			case lie: // blame any word, perhaps one that matched
				hop.Status, hop.FailAddr = history.Failed, op.addrs[r.IntN(len(op.addrs))]
			default:
				hop.Status, hop.FailAddr = history.Failed, op.fail
			}
			if hop.Status == history.Failed && cfg.report > 0 && r.Float64() < cfg.report {
				hop.Values = slices.Clone(op.vals) // what it read when it failed
				if r.Float64() < cfg.lie {
					hop.Values[r.IntN(len(op.vals))] = uint64(r.IntN(cfg.values))
				}
			}
		case 3: // crash
			pos := event()
			for p, op := range busy {
				if op == nil {
					continue
				}
				if !op.applied && !op.read {
					limbo = append(limbo, op)
				}
				h.Ops[busyID[p]].Crash = len(h.Crashes)
				busy[p] = nil
			}
			h.Crashes = append(h.Crashes, pos)
			sinceCrash = 0
		case 4: // a crashed cas takes effect late, if it can; else perhaps later
			i := r.IntN(len(limbo))
			if op := limbo[i]; matches(op) || r.IntN(2) == 0 {
				apply(op)
				limbo = slices.Delete(limbo, i, i+1)
			}
		}
	}
	return h
}

// bruteForce decides linearizability from the definition alone: for every
// subset of the pending cas ops to keep, it tries every order of the kept
// and completed ops (pruning an order as soon as a prefix breaks a rule). It
// shares no code with Check or Validate.
func bruteForce(h *history.History, mode history.Mode) bool {
	var completed, pending []int
	for i := range h.Ops {
		switch op := &h.Ops[i]; {
		case op.Status != history.Pending:
			completed = append(completed, i)
		case op.Kind != history.Read:
			pending = append(pending, i)
		}
	}
	// must reports whether a must come before b when both are linearized.
	must := func(a, b int) bool {
		A, B := &h.Ops[a], &h.Ops[b]
		if A.Status != history.Pending {
			return A.Ret < B.Inv
		}
		if A.Crash < 0 {
			return false
		}
		switch mode {
		case history.Strict:
			return h.Crashes[A.Crash] < B.Inv
		case history.Recoverable:
			// Process order: every later operation of its process
			// that is linearized comes after it.
			return A.Kind != history.Read && A.Proc == B.Proc && A.Inv < B.Inv
		}
		return false
	}
	mem := map[uint64]uint64{}
	get := func(a uint64) uint64 {
		if v, ok := mem[a]; ok {
			return v
		}
		return h.InitValue(a)
	}
	var set []int
	used := make([]bool, len(h.Ops))
	var permute func(left int) bool
	permute = func(left int) bool {
		if left == 0 {
			return true
		}
	next:
		for _, x := range set {
			if used[x] {
				continue
			}
			for _, y := range set {
				if !used[y] && y != x && must(y, x) {
					continue next
				}
			}
			op := &h.Ops[x]
			saved := map[uint64]uint64{}
			switch {
			case op.Kind == history.Read:
				for k, a := range op.Addrs {
					if get(a) != op.Values[k] {
						continue next
					}
				}
			case op.Status == history.Failed:
				for k, a := range op.Addrs {
					if a == op.FailAddr && get(a) == op.Expected[k] || op.Values != nil && get(a) != op.Values[k] {
						continue next
					}
				}
			default:
				for k, a := range op.Addrs {
					switch {
					case op.Kind == history.CAS && get(a) != op.Expected[k],
						op.Kind == history.Swap && op.Status == history.Returned && get(a) != op.Values[k]:
						continue next
					}
				}
				for k, a := range op.Addrs {
					old, had := mem[a]
					if had {
						saved[a] = old
					}
					mem[a] = op.New[k]
				}
			}
			used[x] = true
			ok := permute(left - 1)
			used[x] = false
			if op.Kind != history.Read && op.Status != history.Failed {
				for _, a := range op.Addrs {
					if old, had := saved[a]; had {
						mem[a] = old
					} else {
						delete(mem, a)
					}
				}
			}
			if ok {
				return true
			}
		}
		return false
	}
	for mask := 0; mask < 1<<len(pending); mask++ {
		set = slices.Clone(completed)
		for i, id := range pending {
			if mask&(1<<i) != 0 {
				set = append(set, id)
			}
		}
		if permute(len(set)) {
			return true
		}
	}
	return false
}

// smallConfigs make histories of at most 7 ops, for the brute force.
var smallConfigs = []genConfig{
	{procs: 2, words: 2, values: 2, minOps: 1, maxOps: 7, maxK: 2, crash: 0.1, lie: 0.2, late: 0.3},
	{procs: 3, words: 2, values: 3, minOps: 3, maxOps: 7, maxK: 2, crash: 0.15, lie: 0.15, late: 0.3},
	{procs: 3, words: 3, values: 3, minOps: 4, maxOps: 7, maxK: 3, crash: 0.1, lie: 0.15, late: 0.3},
	{procs: 3, words: 3, values: 2, minOps: 4, maxOps: 7, maxK: 2, lie: 0.2}, // crash-free
	// Correct but for late effects of crashed cas: tells the modes apart.
	{procs: 2, words: 1, values: 2, minOps: 5, maxOps: 7, maxK: 1, crash: 0.1, late: 0.3},
	{procs: 3, words: 2, values: 3, minOps: 5, maxOps: 7, maxK: 2, crash: 0.1, lie: 0.05, late: 0.3, unique: true},
}

// swapConfigs add swaps and failures that report values (histories of at
// most 7 ops too).
var swapConfigs = []genConfig{
	{procs: 2, words: 2, values: 2, minOps: 1, maxOps: 7, maxK: 2, crash: 0.1, lie: 0.2, late: 0.3, swap: 0.5, report: 0.5},
	{procs: 3, words: 2, values: 3, minOps: 3, maxOps: 7, maxK: 2, crash: 0.15, lie: 0.15, late: 0.3, swap: 0.4, report: 0.5},
	{procs: 3, words: 3, values: 3, minOps: 4, maxOps: 7, maxK: 2, lie: 0.2, swap: 0.5, report: 0.7}, // crash-free
	// Correct but for late effects: cut-off swaps tell the modes apart.
	{procs: 2, words: 1, values: 3, minOps: 5, maxOps: 7, maxK: 1, crash: 0.1, late: 0.3, swap: 0.6},
	{procs: 3, words: 2, values: 3, minOps: 5, maxOps: 7, maxK: 2, crash: 0.1, lie: 0.05, late: 0.3, unique: true, swap: 0.5, report: 0.5},
}

// TestAgainstBruteForce compares Check with the brute force on thousands of
// random tiny histories, in every mode, and validates every linearization.
func TestAgainstBruteForce(t *testing.T) {
	n := testenv.Count(0, 40000, 200000)
	againstBruteForce(t, smallConfigs, n, rand.New(rand.NewPCG(1, 2)))
}

// TestAgainstBruteForceSwaps does the same on histories with swaps and
// failures that report values.
func TestAgainstBruteForceSwaps(t *testing.T) {
	n := testenv.Count(0, 10000, 50000)
	againstBruteForce(t, swapConfigs, n, rand.New(rand.NewPCG(3, 4)))
}

func againstBruteForce(t *testing.T, configs []genConfig, n int, r *rand.Rand) {
	var yes, no [3]int
	differ := 0           // histories whose verdict depends on the mode
	swaps, valued := 0, 0 // histories with a swap, with a failure reporting values
	for i := range n {
		h := genHistory(r, configs[i%len(configs)])
		s, v := false, false
		for _, op := range h.Ops {
			s = s || op.Kind == history.Swap
			v = v || op.Status == history.Failed && op.Values != nil
		}
		if s {
			swaps++
		}
		if v {
			valued++
		}
		// Now and then, go through the text format: the generator's
		// histories must be well formed, and mean the same when read back.
		var reread *history.History
		if i%40 == 0 {
			reread = parse(t, text(h))
		}
		var got [3]bool
		for _, mode := range history.Modes {
			res, err := Check(context.Background(), h, Options{Mode: mode})
			if err != nil {
				t.Fatalf("history %d: %v", i, err)
			}
			got[mode] = res.Linearizable
			if reread != nil {
				if again, err := Check(context.Background(), reread, Options{Mode: mode}); err != nil || again.Linearizable != res.Linearizable {
					t.Fatalf("history %d, %v: %v, read back from text: %v, %v\n%s", i, mode, res.Linearizable, again.Linearizable, err, text(h))
				}
			}
			if bf := bruteForce(h, mode); bf != res.Linearizable {
				t.Fatalf("history %d, %v: Check says %v, brute force %v\n%s", i, mode, res.Linearizable, bf, text(h))
			}
			if res.Linearizable {
				yes[mode]++
				if err := Validate(h, mode, res.Order); err != nil {
					t.Fatalf("history %d, %v: order %v: %v\n%s", i, mode, res.Order, err, text(h))
				}
			} else {
				no[mode]++
			}
		}
		if got[history.Strict] != got[history.Durable] {
			differ++
		}
		// Strict asks more than Recoverable, which asks more than Durable.
		if got[history.Strict] && !got[history.Recoverable] || got[history.Recoverable] && !got[history.Durable] {
			t.Fatalf("history %d: verdicts %v are not monotone\n%s", i, got, text(h))
		}
	}
	t.Logf("%d histories with a verdict that depends on the mode; %d with a swap, %d with a failure that reports values", differ, swaps, valued)
	if configs[0].swap > 0 && (swaps < n/2 || valued < n/10) {
		t.Errorf("too few swaps (%d) or failures with values (%d)", swaps, valued)
	}
	if differ < n/400 {
		t.Errorf("only %d histories tell the modes apart", differ)
	}
	for _, mode := range history.Modes {
		t.Logf("%v: %d histories, %d linearizable, %d not", mode, n, yes[mode], no[mode])
		if yes[mode] < n/10 || no[mode] < n/10 {
			t.Errorf("%v: verdicts too lopsided to test much: %d yes, %d no", mode, yes[mode], no[mode])
		}
	}
}

func text(h *history.History) string {
	var b bytes.Buffer
	h.WriteTo(&b)
	return b.String()
}

// FuzzCheck compares Check with the brute force on histories generated from
// the fuzzer's seed.
func FuzzCheck(f *testing.F) {
	for i := range uint64(8) {
		f.Add(i, i*7+1)
	}
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		r := rand.New(rand.NewPCG(s1, s2))
		configs := append(slices.Clone(smallConfigs), swapConfigs...)
		h := genHistory(r, configs[int(s1%uint64(len(configs)))])
		for _, mode := range history.Modes {
			res, err := Check(context.Background(), h, Options{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if bf := bruteForce(h, mode); bf != res.Linearizable {
				t.Fatalf("%v: Check says %v, brute force %v\n%s", mode, res.Linearizable, bf, text(h))
			}
			if res.Linearizable {
				if err := Validate(h, mode, res.Order); err != nil {
					t.Fatalf("%v: %v\n%s", mode, err, text(h))
				}
			}
		}
	})
}
