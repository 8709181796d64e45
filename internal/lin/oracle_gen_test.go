package lin_test

// Random small histories of every built-in model, for the agreement tests.
// A generator simulates a run of correct objects (oracle_spec_test.go's
// specifications) with real concurrency: every operation takes effect at
// a random step between its invocation and its response. Then it breaks
// the run, so that both verdicts are common:
//   - crashes cut off every operation in flight; one that had not taken
//     effect may still take effect later (at any later step: legal in
//     durable mode only, or in recoverable mode when its process has not
//     invoked again), or never;
//   - a response may be `?`, whether or not the operation took effect,
//     and a `?` operation that had not may take effect later;
//   - a response may lie: a random result of the right kind, or the
//     results of a phantom (what the operation would answer now, without
//     taking effect; a blocked acquire answers ok);
//   - a kqueue declared with factor K is, in half the histories, run with
//     K+1: a relaxed queue one step too relaxed.
// Values are drawn from 0..3 and keys from 0..1, so collisions (and so
// both verdicts) are frequent. Every history comes from a seed, which the
// tests print with any failure.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/pmlin/pmlin/model"
)

// genModels lists the models the generators and the brute force cover
// and Porcupine's models (oracle_porc_test.go) too.
var genModels = []string{"register", "counter", "queue", "stack", "pqueue", "set", "map", "mutex", "words"}

// bruteModels adds the models Porcupine's side does not have: kqueue,
// whose deq is nondeterministic (oracle_kqueue_test.go). Its index in
// this list is its seed's second word, after genModels' own.
var bruteModels = append(slices.Clip(genModels), "kqueue")

// genConfig shapes a generated history.
type genConfig struct {
	model   string
	minOps  int // operations, minOps..maxOps
	maxOps  int
	procs   int     // processes 1..procs
	crash   float64 // chance per step of a crash while something is in flight
	unknown float64 // chance that a response is `?`
	lie     float64 // chance that a response lies
	late    float64 // chance per step that an op cut off or `?` takes effect late
	pending float64 // chance that the history ends with operations pending
	// effect is the chance that a process's turn makes its operation take
	// effect (else the turn passes).
	effect float64
	// retire is the chance that a process whose operation a crash cut off
	// never invokes again (as Jepsen gives it a new process id).
	retire float64
	// plain makes one object without parameters (the benchmark's).
	plain bool
	// midCrash replaces random crashes by one crash, once half the
	// operations are invoked and one is in flight, and in half the
	// histories a second one at three quarters.
	midCrash bool
}

// genMax is the most operations of a generated history.
const genMax = 7

// genConfigFor is the configuration of history i of model m, one of
// four kinds in turn: lies (violations in every mode); one or two crashes
// in the middle of the run and effects that come late (verdicts that
// depend on the mode); the same with operations slow to take effect, so
// that crashes catch them and late effects are seen, and processes that a
// crash interrupts sometimes retire (the windows); and a little of
// everything.
func genConfigFor(m string, i int) genConfig {
	switch i % 4 {
	case 0:
		if m == "kqueue" {
			// Its lies come mostly from a queue one step too relaxed
			// (genHistory): long runs, fewer random lies, two processes,
			// so that out-of-order deqs are not hidden by concurrency.
			return genConfig{model: m, minOps: 5, maxOps: genMax, procs: 2, crash: 0.02, unknown: 0.04, lie: 0.5, late: 0.3, pending: 0.15, effect: 1}
		}
		return genConfig{model: m, minOps: 2, maxOps: genMax, procs: 3, crash: 0.02, unknown: 0.04, lie: 0.8, late: 0.3, pending: 0.15, effect: 1}
	case 1:
		return genConfig{model: m, minOps: 4, maxOps: genMax, procs: 3, midCrash: true, unknown: 0.05, lie: 0.1, late: 0.3, pending: 0.1, effect: 1}
	case 2:
		return genConfig{model: m, minOps: 5, maxOps: genMax, procs: 3, midCrash: true, unknown: 0.03, lie: 0.05, late: 0.2, pending: 0.1, effect: 0.3, retire: 0.5}
	}
	return genConfig{model: m, minOps: 2, maxOps: genMax, procs: 4, crash: 0.08, unknown: 0.1, lie: 0.35, late: 0.2, pending: 0.3, effect: 1}
}

// genObject declares a random object of model m.
func genObject(r *rand.Rand, m, name string) model.Object {
	obj := model.Object{Name: name, Model: m}
	param := func(k, v string) { obj.Params = append(obj.Params, model.Param{Key: k, Value: v}) }
	switch m {
	case "register":
		switch r.IntN(4) {
		case 0:
			param("init", "nil")
		case 1:
			param("init", fmt.Sprint(r.IntN(3)))
		}
	case "counter":
		if r.IntN(2) == 0 {
			param("init", fmt.Sprint(r.IntN(3)))
		}
	case "queue", "stack":
		if r.IntN(2) == 0 {
			param("cap", fmt.Sprint(1+r.IntN(2)))
		}
	case "kqueue":
		param("k", fmt.Sprint(r.IntN(4)))
	case "words":
		if r.IntN(3) == 0 {
			param("init", fmt.Sprint(r.IntN(2)))
		}
		if r.IntN(3) == 0 {
			param(fmt.Sprint(r.IntN(3)), fmt.Sprint(r.IntN(3)))
		}
	}
	return obj
}

// insertRemove names the two operations of the container models.
var insertRemove = map[string][2]string{"queue": {"enq", "deq"}, "kqueue": {"enq", "deq"}, "stack": {"push", "pop"}, "pqueue": {"insert", "removemin"}}

// genCall draws an operation of model m: its name and arguments.
func genCall(r *rand.Rand, m string) (string, []model.Value) {
	val := func() model.Value { return model.Number(uint64(1 + r.IntN(3))) }
	key := func() model.Value { return model.Number(uint64(r.IntN(2))) }
	pick := func(names ...string) string { return names[r.IntN(len(names))] }
	switch m {
	case "register":
		switch pick("read", "write", "cas") {
		case "read":
			return "read", nil
		case "write":
			return "write", []model.Value{val()}
		}
		e := model.Number(uint64(r.IntN(4)))
		if r.IntN(6) == 0 {
			e = vNil
		}
		return "cas", []model.Value{e, val()}
	case "counter":
		switch pick("add", "get", "fetchadd") {
		case "get":
			return "get", nil
		case "add":
			return "add", []model.Value{model.Number(uint64(r.IntN(3)))}
		}
		return "fetchadd", []model.Value{model.Number(uint64(r.IntN(3)))}
	case "queue", "kqueue", "stack", "pqueue":
		pair := insertRemove[m]
		if r.IntN(8) == 0 {
			return "contents", nil
		}
		if r.IntN(2) == 0 {
			if m == "kqueue" {
				// Fewer repeated values, so that an element taken out
				// of order shows (1..3 often hides it behind a twin).
				return pair[0], []model.Value{model.Number(uint64(1 + r.IntN(6)))}
			}
			return pair[0], []model.Value{val()}
		}
		return pair[1], nil
	case "set":
		return pick("add", "remove", "contains"), []model.Value{val()}
	case "map":
		switch n := pick("put", "get", "remove", "putifabsent"); n {
		case "put", "putifabsent":
			return n, []model.Value{key(), val()}
		default:
			return n, []model.Value{key()}
		}
	case "mutex":
		return pick("acquire", "release"), nil
	case "words":
		// One or two distinct words of 0..2.
		addrs := []uint64{uint64(r.IntN(3))}
		if r.IntN(2) == 0 {
			addrs = append(addrs, (addrs[0]+1+uint64(r.IntN(2)))%3)
		}
		name := pick("read", "cas", "cas", "swap")
		var args []model.Value
		for _, a := range addrs {
			args = append(args, model.Number(a))
			switch name {
			case "cas":
				args = append(args, model.Number(uint64(r.IntN(3))), val())
			case "swap":
				args = append(args, val())
			}
		}
		return name, args
	}
	panic("genCall: unknown model " + m)
}

// genLie draws a result of the right kind for operation name of model m,
// likely a wrong one (an enq of an unbounded queue may be answered fail:
// impossible, not an input error, docs/history-format.md).
func genLie(r *rand.Rand, m, name string, args []model.Value) []model.Value {
	v := func() model.Value { return model.Number(uint64(r.IntN(4))) }
	if m == "words" {
		if name == "cas" {
			if r.IntN(2) == 0 {
				return one(vOK)
			}
			return []model.Value{vFail, args[3*r.IntN(len(args)/3)]}
		}
		var res []model.Value
		for range len(args) / map[string]int{"read": 1, "swap": 2}[name] {
			res = append(res, v())
		}
		return res
	}
	pick := func(vs ...model.Value) []model.Value { return one(vs[r.IntN(len(vs))]) }
	if name == "contents" {
		if r.IntN(3) == 0 {
			return one(vEmpty)
		}
		res := []model.Value{model.Number(uint64(1 + r.IntN(3)))}
		for r.IntN(2) == 0 {
			res = append(res, model.Number(uint64(1+r.IntN(3))))
		}
		return res
	}
	switch name {
	case "read", "get", "fetchadd", "deq", "pop", "removemin", "remove", "put", "putifabsent":
		switch {
		case m == "set":
			return pick(vTrue, vFalse)
		case name == "deq" || name == "pop" || name == "removemin":
			return pick(v(), v(), vEmpty)
		case m == "map" || m == "register" && r.IntN(4) == 0:
			return pick(v(), v(), vNil)
		}
		return one(v())
	case "cas", "enq", "push":
		return pick(vOK, vFail)
	case "add", "contains":
		if m == "set" {
			return pick(vTrue, vFalse)
		}
		return one(vOK)
	}
	return one(vOK) // write, insert, acquire, release: ok is all they answer
}

// genOp is an operation of the simulated run.
type genOp struct {
	idx     int // in h.Ops
	applied bool
	res     []model.Value
	phantom bool // answers what it would answer, without taking effect
	// lateFrom is the event from which, cut off or answered `?` without
	// having taken effect, it may take effect: two events after it went
	// late, so that some other operation may see the state without it.
	lateFrom int
}

// genHistory simulates one run under cfg, from r.
func genHistory(r *rand.Rand, cfg genConfig) *model.History {
	h := &model.History{}
	nobj := 1 + r.IntN(2)
	if cfg.plain {
		nobj = 1
	}
	specs := make([]*seqSpec, nobj)
	states := make([]any, nobj)
	for i := range nobj {
		obj := genObject(r, cfg.model, string(rune('a'+i)))
		if cfg.plain {
			obj.Params = nil
		}
		h.Objects = append(h.Objects, obj)
		sim := obj
		if cfg.model == "kqueue" && r.IntN(2) == 0 {
			// An over-relaxed queue: declared with factor K, run with
			// K+1, so its lies sit just past the boundary (a deq one
			// step too far, the oldest skipped once too often).
			k, _ := strconv.Atoi(obj.Params[0].Value)
			sim.Params = []model.Param{{Key: "k", Value: strconv.Itoa(k + 1)}}
		}
		s, err := newSpec(sim)
		if err != nil {
			panic(err)
		}
		specs[i], states[i] = s, s.initial
	}
	nops := cfg.minOps + r.IntN(cfg.maxOps-cfg.minOps+1)
	procs := 1 + r.IntN(cfg.procs)
	inflight := map[int64]*genOp{}
	retired := map[int64]bool{}
	var late []*genOp // cut off or `?`, not applied: may take effect later
	endPending := r.Float64() < cfg.pending
	secondCrash := r.IntN(2) == 0

	// simulate runs op on its object's current state: the specification's
	// effect, or for a nondeterministic one (kqueue) one of its effects
	// at random, so the simulated object is a correct relaxed queue.
	simulate := func(op *model.Op) (any, []model.Value, bool) {
		sp := specs[op.Object]
		if sp.outcomes == nil {
			return sp.apply(states[op.Object], op.Name, op.Proc, op.Args)
		}
		outs := sp.outcomes(states[op.Object], op.Name, op.Proc, op.Args)
		if len(outs) == 0 {
			return nil, nil, false
		}
		o := outs[r.IntN(len(outs))]
		return o.next, o.res, true
	}
	apply := func(g *genOp) bool {
		op := &h.Ops[g.idx]
		next, res, ok := simulate(op)
		if !ok {
			return false
		}
		states[op.Object], g.res, g.applied = next, res, true
		return true
	}
	for step := 0; step < 200+40*nops; step++ {
		if len(h.Ops) == nops && len(inflight) == 0 {
			break
		}
		if len(h.Ops) == nops && endPending && r.IntN(3) == 0 {
			break
		}
		// A late operation takes effect.
		if len(late) > 0 && r.Float64() < cfg.late {
			i := r.IntN(len(late))
			if late[i].lateFrom <= h.Events && apply(late[i]) {
				late = append(late[:i], late[i+1:]...)
			}
			continue
		}
		// A crash.
		crash := r.Float64() < cfg.crash
		if cfg.midCrash {
			crash = len(h.Crashes) == 0 && 2*len(h.Ops) >= nops ||
				len(h.Crashes) == 1 && secondCrash && 4*len(h.Ops) >= 3*nops
		}
		if len(inflight) > 0 && crash {
			for p, g := range inflight {
				h.Ops[g.idx].Crash = len(h.Crashes)
				retired[p] = r.Float64() < cfg.retire
				if !g.applied && !g.phantom {
					g.lateFrom = h.Events + 2
					late = append(late, g)
				}
				delete(inflight, p)
			}
			h.Crashes = append(h.Crashes, model.Crash{Pos: h.Events})
			h.Events++
			continue
		}
		p := int64(1 + r.IntN(procs))
		g, busy := inflight[p]
		switch {
		case !busy && retired[p]:
		case !busy && len(h.Ops) < nops: // invoke
			name, args := genCall(r, cfg.model)
			h.Ops = append(h.Ops, model.Op{Proc: p, Object: r.IntN(nobj), Name: name, Args: args,
				Status: model.CutOff, Call: h.Events, Return: -1, Crash: -1})
			h.Events++
			inflight[p] = &genOp{idx: len(h.Ops) - 1}
		case busy && !g.applied && !g.phantom && r.Float64() >= cfg.effect:
			// the turn passes
		case busy && !g.applied && !g.phantom: // take effect, or become a phantom
			op := &h.Ops[g.idx]
			if r.Float64() < cfg.lie/2 {
				g.phantom, g.res = true, genLie(r, cfg.model, op.Name, op.Args)
				if _, res, ok := simulate(op); ok {
					g.res = res
				}
				continue
			}
			apply(g)
		case busy && r.Float64() < cfg.unknown: // respond `?`, applied or not
			op := &h.Ops[g.idx]
			op.Status, op.Return = model.Unknown, h.Events
			h.Events++
			if !g.applied && !g.phantom {
				g.lateFrom = h.Events + 2
				late = append(late, g)
			}
			delete(inflight, p)
		case busy: // respond
			op := &h.Ops[g.idx]
			op.Status, op.Return, op.Results = model.Returned, h.Events, g.res
			if cfg.model == "words" && len(g.res) > 2 && r.IntN(2) == 0 {
				op.Results = g.res[:2] // a failed cas need not report values
			}
			if r.Float64() < cfg.lie/2 {
				op.Results = genLie(r, cfg.model, op.Name, op.Args)
			}
			h.Events++
			delete(inflight, p)
		}
	}
	return h
}
