package lin_test

// Porcupine (github.com/anishathalye/porcupine), a third opinion on
// histories without crashes (it has no crash modes), with models of its
// own: porcModel below is written in Porcupine's style (a step that checks
// an output against a state) and shares nothing with the brute force's
// specifications but the model table they are both read from.
//
// Optional operations. Porcupine cannot drop an operation; it takes an
// operation whose response is unknown as one that returns at time
// infinity with any output. For an operation cut off by the end of the
// history or answered `?` (the durable window: anywhere after its
// invocation) that is equivalent to "optional" exactly when the operation
// can be placed last, after everything, without changing any result: true
// of every model here, because placing it last changes no recorded result,
// provided it can take effect at all there. Only mutex has operations that
// cannot take effect in some states (acquire of a held lock, release by
// another process); so porcModel lets an operation with unknown output
// that cannot take effect step as a no-op, which is then exactly
// "dropped" (and one that can take effect applies, which is "taken effect
// there"). Operations cut off by a crash have windows Porcupine cannot
// state, so histories with crashes are not given to it.

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// porcIn is the input of one Porcupine operation. Partitions are per
// object, so the state of a partition starts as nil and the first step
// takes the object's initial state from its input.
type porcIn struct {
	obj  int
	kind string // the object's model
	init porcState
	cap  int    // queue, stack: -1 unbounded
	def  uint64 // words: the value of a word never written
	name string
	args []model.Value
	proc int64
}

// porcOut is the output of one Porcupine operation: its results, or
// unknown.
type porcOut struct {
	unknown bool
	res     []model.Value
}

// porcState is the state of one object, rendered canonically so that
// Porcupine can compare states with ==.
type porcState = string

// porcStep is Porcupine's step for one object: whether the operation may
// give out in state s, and the next state. The state is a string:
// register "v"; counter "n"; queue/stack/pqueue/set "v,v,..." (a set and
// a pqueue sorted); map "k=v,..." sorted by key; mutex "" or the holder.
func porcStep(in porcIn, s porcState, out porcOut) (bool, porcState) {
	// want reports whether out is consistent with the results res.
	want := func(res ...model.Value) bool { return out.unknown || slices.Equal(out.res, res) }
	list := func() []string {
		if s == "" {
			return nil
		}
		return splitComma(s)
	}
	join := func(l []string) porcState { return joinComma(l) }
	arg := func(i int) string { return in.args[i].String() }
	switch in.kind {
	case "register":
		cur, _ := model.ParseValue(s)
		switch in.name {
		case "read":
			return want(cur), s
		case "write":
			return want(vOK), arg(0)
		case "cas":
			if cur == in.args[0] {
				return want(vOK), arg(1)
			}
			return want(vFail), s
		}
	case "counter":
		cur, _ := model.ParseValue(s)
		if in.name == "get" {
			return want(cur), s
		}
		next := model.Number(cur.N + in.args[0].N).String()
		switch in.name {
		case "add":
			return want(vOK), next
		case "fetchadd":
			return want(cur), next
		}
	case "queue", "stack", "pqueue":
		l := list()
		switch in.name {
		case "enq", "push", "insert":
			if in.cap >= 0 && len(l) >= in.cap {
				return want(vFail), s
			}
			l = append(l, arg(0))
			if in.kind == "pqueue" {
				slices.SortFunc(l, compareNumbers)
			}
			return want(vOK), join(l)
		case "deq", "pop", "removemin":
			if len(l) == 0 {
				return want(vEmpty), s
			}
			i := 0
			if in.kind == "stack" {
				i = len(l) - 1
			}
			v, _ := model.ParseValue(l[i])
			return want(v), join(slices.Delete(l, i, i+1))
		case "contents":
			if len(l) == 0 {
				return want(vEmpty), s
			}
			res := make([]model.Value, len(l))
			for j, e := range l {
				res[j], _ = model.ParseValue(e)
			}
			if in.kind == "stack" {
				slices.Reverse(res)
			}
			return want(res...), s
		}
	case "set":
		l := list()
		i := slices.Index(l, arg(0))
		switch in.name {
		case "contains":
			return want(boolVal(i >= 0)), s
		case "add":
			if i >= 0 {
				return want(vFalse), s
			}
			l = append(l, arg(0))
			slices.Sort(l)
			return want(vTrue), join(l)
		case "remove":
			if i < 0 {
				return want(vFalse), s
			}
			return want(vTrue), join(slices.Delete(l, i, i+1))
		}
	case "map":
		l := list()
		i := slices.IndexFunc(l, func(e string) bool { return e[:indexEq(e)] == arg(0) })
		old := vNil
		if i >= 0 {
			old, _ = model.ParseValue(l[i][indexEq(l[i])+1:])
		}
		store := func(v string) porcState {
			if i >= 0 {
				l[i] = arg(0) + "=" + v
			} else {
				l = append(l, arg(0)+"="+v)
				slices.Sort(l)
			}
			return join(l)
		}
		switch in.name {
		case "get":
			return want(old), s
		case "put":
			return want(old), store(arg(1))
		case "remove":
			if i < 0 {
				return want(vNil), s
			}
			return want(old), join(slices.Delete(l, i, i+1))
		case "putifabsent":
			if i >= 0 {
				return want(old), s
			}
			return want(vNil), store(arg(1))
		}
	case "mutex":
		me := fmt.Sprint(in.proc)
		ok := in.name == "acquire" && s == "" || in.name == "release" && s == me
		if !ok {
			return out.unknown, s // unknown: a no-op, see the file's comment
		}
		if in.name == "acquire" {
			return want(vOK), me
		}
		return want(vOK), ""
	case "words":
		return porcWords(in, s, out)
	case "kvappend":
		// One key's value (the partition is by key): its tokens.
		l := list()
		var tokens []string
		for _, a := range in.args[1:] {
			tokens = append(tokens, a.String())
		}
		switch in.name {
		case "get":
			if out.unknown {
				return true, s
			}
			if len(l) == 0 {
				return want(vEmpty), s
			}
			var res []model.Value
			for _, e := range l {
				v, _ := model.ParseValue(e)
				res = append(res, v)
			}
			return want(res...), s
		case "put":
			return want(vOK), join(tokens)
		case "append":
			return want(vOK), join(append(l, tokens...))
		}
	}
	panic("porcStep: " + in.kind + " " + in.name)
}

// porcWords is porcStep for the word array: state "a=v,..." sorted by
// address, the words ever written.
func porcWords(in porcIn, s porcState, out porcOut) (bool, porcState) {
	mem := map[uint64]uint64{}
	if s != "" {
		for _, e := range splitComma(s) {
			var a, v uint64
			fmt.Sscanf(e, "%d=%d", &a, &v)
			mem[a] = v
		}
	}
	get := func(a uint64) uint64 {
		if v, ok := mem[a]; ok {
			return v
		}
		return in.def
	}
	step := map[string]int{"read": 1, "swap": 2, "cas": 3}[in.name]
	var cur []model.Value
	match := true
	for i := 0; i < len(in.args); i += step {
		v := get(in.args[i].N)
		cur = append(cur, model.Number(v))
		if in.name == "cas" && v != in.args[i+1].N {
			match = false
		}
	}
	write := func() porcState {
		for i := 0; i < len(in.args); i += step {
			mem[in.args[i].N] = in.args[i+step-1].N
		}
		var l []string
		for a, v := range mem {
			l = append(l, fmt.Sprintf("%d=%d", a, v))
		}
		slices.Sort(l)
		return joinComma(l)
	}
	switch {
	case in.name == "read":
		return out.unknown || slices.Equal(out.res, cur), s
	case in.name == "swap":
		return out.unknown || slices.Equal(out.res, cur), write()
	case match:
		return out.unknown || slices.Equal(out.res, one(vOK)), write()
	case out.unknown:
		return true, s
	}
	r := out.res
	if len(r) < 2 || r[0] != vFail {
		return false, s
	}
	for i := 0; i < len(in.args); i += 3 {
		if in.args[i] == r[1] && get(in.args[i].N) != in.args[i+1].N {
			return len(r) == 2 || slices.Equal(r[2:], cur), s
		}
	}
	return false, s
}

func indexEq(e string) int {
	for i := range e {
		if e[i] == '=' {
			return i
		}
	}
	return len(e)
}

func splitComma(s string) []string {
	var l []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			l = append(l, s[start:i])
			start = i + 1
		}
	}
	return l
}

func joinComma(l []string) string {
	s := ""
	for i, e := range l {
		if i > 0 {
			s += ","
		}
		s += e
	}
	return s
}

func compareNumbers(a, b string) int {
	x, _ := model.ParseValue(a)
	y, _ := model.ParseValue(b)
	switch {
	case x.N < y.N:
		return -1
	case x.N > y.N:
		return 1
	}
	return 0
}

// porcModel is the Porcupine model of any history of porcHistory:
// partitioned by object.
var porcModel = porcupine.Model{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		// By object, and by key within a kvappend object.
		type part struct {
			obj int
			key model.Value
		}
		by := map[part][]porcupine.Operation{}
		var objs []part
		for _, op := range ops {
			in := op.Input.(porcIn)
			o := part{obj: in.obj}
			if in.kind == "kvappend" {
				o.key = in.args[0]
			}
			if _, ok := by[o]; !ok {
				objs = append(objs, o)
			}
			by[o] = append(by[o], op)
		}
		var parts [][]porcupine.Operation
		for _, o := range objs {
			parts = append(parts, by[o])
		}
		return parts
	},
	Init: func() any { return nil },
	Step: func(state, input, output any) (bool, any) {
		in := input.(porcIn)
		s, ok := state.(porcState)
		if !ok {
			s = in.init
		}
		return porcStep(in, s, output.(porcOut))
	},
	Equal: func(a, b any) bool { return a == b },
	Hash: func(s any) uint64 {
		h := fnv.New64a()
		str, _ := s.(porcState)
		h.Write([]byte(str))
		return h.Sum64()
	},
}

// porcHistory converts a history without crashes into Porcupine
// operations: positions are times; an operation cut off by the end or
// answered `?` returns at infinity with an unknown output. ok is false
// when h has a crash.
func porcHistory(h *model.History) ([]porcupine.Operation, bool, error) {
	if len(h.Crashes) > 0 {
		return nil, false, nil
	}
	ins := make([]porcIn, len(h.Objects))
	for i, obj := range h.Objects {
		in := porcIn{obj: i, kind: obj.Model, cap: -1, init: "0"}
		var words []string
		for _, p := range obj.Params {
			switch {
			case obj.Model == "words" && p.Key == "init":
				fmt.Sscan(p.Value, &in.def)
			case obj.Model == "words":
				words = append(words, p.Key+"="+p.Value)
			case p.Key == "init":
				v, err := model.ParseValue(p.Value)
				if err != nil {
					return nil, false, err
				}
				in.init = v.String()
			case p.Key == "cap":
				fmt.Sscan(p.Value, &in.cap)
			default:
				return nil, false, fmt.Errorf("object %s: param %s", obj.Name, p.Key)
			}
		}
		switch obj.Model {
		case "register", "counter":
		default:
			slices.Sort(words)
			in.init = joinComma(words)
		}
		ins[i] = in
	}
	ops := make([]porcupine.Operation, len(h.Ops))
	for i := range h.Ops {
		op := &h.Ops[i]
		in := ins[op.Object]
		in.name, in.args, in.proc = op.Name, op.Args, op.Proc
		out := porcOut{unknown: true}
		ret := int64(math.MaxInt64)
		if op.Status == model.Returned {
			out = porcOut{res: op.Results}
			ret = int64(op.Return)
		}
		ops[i] = porcupine.Operation{ClientId: int(op.Proc), Input: in, Call: int64(op.Call), Output: out, Return: ret}
	}
	return ops, true, nil
}

// crashFree is cfg without crashes, for Porcupine.
func crashFree(cfg genConfig) genConfig {
	cfg.crash, cfg.midCrash = 0, false
	return cfg
}

// TestOraclePorcupineBruteForce compares the brute force with Porcupine
// on crash-free histories of every model, in every mode (without a crash
// the modes coincide, which the brute force must show too).
func TestOraclePorcupineBruteForce(t *testing.T) {
	n := testenv.Count(0, 1000, 20000)
	for mi, m := range genModels {
		yes := 0
		for i := range n {
			r := rand.New(rand.NewPCG(uint64(i), uint64(100+mi)))
			h := genHistory(r, crashFree(genConfigFor(m, i)))
			ops, ok, err := porcHistory(h)
			if err != nil || !ok {
				t.Fatalf("%s seed (%d, %d): %v %v", m, i, 100+mi, ok, err)
			}
			p := porcupine.CheckOperations(porcModel, ops)
			for _, mode := range history.Modes {
				b, err := bruteForce(h, mode)
				if err != nil {
					t.Fatal(err)
				}
				if b != p {
					t.Fatalf("%s seed (%d, %d), %v: brute force says %v, Porcupine %v\n%s", m, i, 100+mi, mode, b, p, renderV2(h))
				}
			}
			if p {
				yes++
			}
		}
		t.Logf("%-8s %d crash-free histories agree: %d linearizable, %d not", m, n, yes, n-yes)
		if yes == 0 || yes == n {
			t.Errorf("%s: one verdict only", m)
		}
	}
}
