package driver

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/model"
)

// The workload of a data-structure target (target.Target.Model): the
// operations of its version 2 model (docs/history-format.md, "The built-in
// models of version 2"), drawn by weight, with arguments the model's fast
// paths and explanations want: every value an element, a map's value or a
// register's content is a unique tag (as the v1 workload's new values,
// (process+1)<<32 | counter: never 0, below 1<<target.ValueBits), so that
// a lost or resurrected element is told apart from every other; keys and
// set members are drawn from 0 .. Keys-1, few enough that operations on
// one key meet.

// DefaultKeys is the number of keys of a map or set workload that sets
// none (--keys).
const DefaultKeys = 8

// MaxKeys bounds Keys: the state read back after each recovery asks
// every key.
const MaxKeys = 1 << 12

// argKind says how an operation's argument is drawn.
type argKind uint8

const (
	argTag   argKind = iota + 1 // a unique tag
	argKey                      // a key, 0 .. Keys-1
	argSmall                    // a small number, 1 .. 3 (a counter's add)
	argSeen                     // a value the process saw last (a register's cas)
)

// modelOp is an operation of a built-in model as the workload draws it.
type modelOp struct {
	name   string
	args   []argKind
	weight int // in the harness's mix of the model (0: not drawn by default)
}

// modelOps are the operations of the built-in models the workload draws,
// with the harness's default weights. A queue's, stack's or priority
// queue's adds and removes are even: its length is a random walk, rarely
// empty for long and never long, as the exact checker needs. An element
// that stays in the container keeps every place its add could take apart
// until something removes it, so a long queue multiplies the search's
// states by the windows of its concurrent adds: with adds at 3:2, 14 runs
// in 20 of a lock-based queue (200 operations, 4 threads, 6 crashes)
// exceeded the checker's budget, with 1:1 none (the slowest 0.3 s).
var modelOps = map[string][]modelOp{
	"queue":    {{"enq", []argKind{argTag}, 1}, {"deq", nil, 1}},
	"kqueue":   {{"enq", []argKind{argTag}, 1}, {"deq", nil, 1}},
	"stack":    {{"push", []argKind{argTag}, 1}, {"pop", nil, 1}},
	"pqueue":   {{"insert", []argKind{argTag}, 1}, {"removemin", nil, 1}},
	"map":      {{"put", []argKind{argKey, argTag}, 3}, {"get", []argKind{argKey}, 3}, {"remove", []argKind{argKey}, 2}, {"putifabsent", []argKind{argKey, argTag}, 1}},
	"set":      {{"add", []argKind{argKey}, 2}, {"remove", []argKind{argKey}, 1}, {"contains", []argKind{argKey}, 2}},
	"register": {{"read", nil, 2}, {"write", []argKind{argTag}, 1}, {"cas", []argKind{argSeen, argTag}, 1}},
	"counter":  {{"add", []argKind{argSmall}, 2}, {"get", nil, 2}, {"fetchadd", []argKind{argSmall}, 1}},
}

// KeyedModel reports whether a model's workload draws keys (--keys
// applies).
func KeyedModel(name string) bool { return name == "map" || name == "set" }

// ObjectWorkload is the workload of a data-structure target: which
// operations of its model are drawn, how often, and over how many keys.
type ObjectWorkload struct {
	// Object is the object's name in the history, Model its model's
	// name and Params its parameters ("object NAME MODEL PARAMS").
	Object, Model string
	Params        []model.Param
	// Ops are the operations drawn, in a fixed order (a log names an
	// operation by its index here), each with its weight (> 0).
	Ops     []string
	Weights []int
	// Keys is the number of keys (map, set): 0 .. Keys-1.
	Keys uint64

	args  [][]argKind
	total int
}

// NewObjectWorkload is the workload of an object named object of the
// built-in model spec ("queue", "queue cap=8"), its operations weighed by
// mix (nil: the harness's mix for the model; an operation absent from a
// mix given is never drawn), over keys keys (map, set; else not used).
func NewObjectWorkload(object, spec string, mix map[string]int, keys uint64) (*ObjectWorkload, error) {
	f := strings.Fields(spec)
	if len(f) == 0 {
		return nil, fmt.Errorf("no model")
	}
	ops, ok := modelOps[f[0]]
	if !ok {
		return nil, fmt.Errorf("model %q has no workload (the harness draws one for %s)", f[0], strings.Join(slices.Sorted(maps.Keys(modelOps)), ", "))
	}
	w := &ObjectWorkload{Object: object, Model: f[0], Keys: keys}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		w.Params = append(w.Params, model.Param{Key: k, Value: v})
	}
	for name, n := range mix {
		if n < 0 {
			return nil, fmt.Errorf("mix: operation %s has weight %d (at least 0)", name, n)
		}
		if !slices.ContainsFunc(ops, func(o modelOp) bool { return o.name == name }) {
			names := make([]string, len(ops))
			for i, o := range ops {
				names[i] = o.name
			}
			return nil, fmt.Errorf("mix: model %s has no operation %q (it has %s)", f[0], name, strings.Join(names, ", "))
		}
	}
	for _, o := range ops {
		n := o.weight
		if mix != nil {
			n = mix[o.name]
		}
		if n == 0 {
			continue
		}
		w.Ops = append(w.Ops, o.name)
		w.Weights = append(w.Weights, n)
		w.args = append(w.args, o.args)
		w.total += n
	}
	if w.total == 0 {
		return nil, fmt.Errorf("mix: no operation of model %s has a weight", f[0])
	}
	if KeyedModel(w.Model) && (keys < 1 || keys > MaxKeys) {
		return nil, fmt.Errorf("keys = %d (1..%d allowed)", keys, MaxKeys)
	}
	return w, nil
}

// objMaxArgs and objMaxResults bound an operation's arguments and results
// (every built-in model's operations have at most two and one): as many as
// a log's record holds.
const (
	objMaxArgs    = record.MaxArgs
	objMaxResults = record.MaxResults
)

// objOp is one operation of an object workload: what a worker invokes and
// what it got.
type objOp struct {
	code  int // index in ObjectWorkload.Ops
	nargs int
	args  [objMaxArgs]model.Value
	res   []model.Value // cap objMaxResults
}

// objProc is the workload state of one process of an object workload. It
// survives crashes, as proc does.
type objProc struct {
	id   int32
	rng  *rand.Rand
	w    *ObjectWorkload
	ctr  uint64      // the last tag counter used
	seen model.Value // the last value a register read returned
	op   objOp
}

func newObjProc(id int32, w *ObjectWorkload, seed uint64) *objProc {
	return &objProc{id: id, rng: rand.New(rand.NewPCG(seed, 0x0b1ec7^uint64(id))), w: w,
		op: objOp{res: make([]model.Value, 0, objMaxResults)}}
}

// next draws the next operation.
func (p *objProc) next() (*objOp, error) {
	o := &p.op
	u := p.rng.IntN(p.w.total)
	o.code = 0
	for u >= p.w.Weights[o.code] {
		u -= p.w.Weights[o.code]
		o.code++
	}
	kinds := p.w.args[o.code]
	o.nargs = len(kinds)
	for i, k := range kinds {
		switch k {
		case argTag:
			if p.ctr >= MaxTag {
				return nil, fmt.Errorf("process %d used up its %d tags", p.id, uint64(MaxTag))
			}
			p.ctr++
			o.args[i] = model.Number(uint64(p.id+1)<<32 | p.ctr)
		case argKey:
			o.args[i] = model.Number(p.rng.Uint64N(p.w.Keys))
		case argSmall:
			o.args[i] = model.Number(1 + p.rng.Uint64N(3))
		case argSeen:
			o.args[i] = p.seen
		}
	}
	o.res = o.res[:0]
	return o, nil
}

// done takes note of a returned operation: a register's read is what a
// later cas expects.
func (p *objProc) done(o *objOp) {
	if p.w.Model == "register" && p.w.Ops[o.code] == "read" && len(o.res) == 1 {
		p.seen = o.res[0]
	}
}

// Describe writes an operation as the history does: "enq 0x100001".
func (w *ObjectWorkload) describe(o *objOp) string {
	var b []byte
	b = append(b, w.Ops[o.code]...)
	for _, a := range o.args[:o.nargs] {
		b = a.Append(append(b, ' '))
	}
	return string(b)
}

// Declaration is the history's declaration of the object: "object NAME
// MODEL PARAMS".
func (w *ObjectWorkload) Declaration() string {
	b := []byte("object " + w.Object + " " + w.Model)
	for _, p := range w.Params {
		b = append(b, ' ')
		b = append(b, p.Key...)
		b = append(b, '=')
		b = append(b, p.Value...)
	}
	return string(b)
}

// Name is the object's name in the history (record.Object).
func (w *ObjectWorkload) Name() string { return w.Object }

// Op is the name of operation i, the index a log's record holds
// (record.Object).
func (w *ObjectWorkload) Op(i int) string { return w.Ops[i] }

// NumOps is the number of operations (record.Object).
func (w *ObjectWorkload) NumOps() int { return len(w.Ops) }

// curOp is worker w's current operation, for a report: its kind and
// addresses, or an object workload's operation as the history writes it.
func (d *Driver) curOp(w int) (history.OpKind, []uint64, string) {
	if d.obj != nil {
		return 0, nil, d.ow.describe(&d.oprocs[w].op)
	}
	o := &d.procs[w].op
	return o.kind, append([]uint64(nil), o.addrs...), ""
}

// opName names an operation in a report: "cas of addresses [1 3]", or an
// object workload's operation as the history writes it.
func opName(kind history.OpKind, addrs []uint64, op string) string {
	if op != "" {
		return op
	}
	return fmt.Sprintf("%s of addresses %v", kind, addrs)
}

// RecordState records st, the state an object's State returned (in the
// form target.Object.State gives for the workload's model), as operations
// of process p that read it, each answered by st, and returns the line of
// the first: a queue's, stack's, priority queue's or kqueue's contents
// (the elements in st's order, or empty), a map's get of every key 0 ..
// Keys-1 and a set's contains of every one, a register's read, a
// counter's get. The checker then judges what recovery left like any
// other operations. An error says that st is not of the model's form (a
// key out of order or beyond the workload's, an odd count of a map's
// keys and values, a symbol where a number goes): a finding about the
// target's State, and nothing is written.
//
// rc records an object workload of the driver's (NewObjectWorkload,
// record.Recorder.SetObject).
func RecordState(rc *record.Recorder, p int32, st []model.Value) (int64, error) {
	w := Recorded(rc)
	if w == nil {
		return 0, errors.New("driver: the recorder records no object workload of the driver's")
	}
	nums := func(vs []model.Value) error {
		for i, v := range vs {
			if v.Sym != model.Num {
				return fmt.Errorf("value %d of the state, %v, is not a number", i+1, v)
			}
		}
		return nil
	}
	// members checks that keys (every step-th value of st) ascend below
	// Keys.
	members := func(step int) error {
		if len(st)%step != 0 {
			return fmt.Errorf("%d values: not key, value pairs", len(st))
		}
		for i := 0; i < len(st); i += step {
			k := st[i]
			switch {
			case k.Sym != model.Num:
				return fmt.Errorf("key %v is not a number", k)
			case k.N >= w.Keys:
				return fmt.Errorf("key %v is none of the workload's keys (0..%d): no operation could have put it there", k, w.Keys-1)
			case i > 0 && k.N <= st[i-step].N:
				return fmt.Errorf("keys %v, %v: not ascending", st[i-step], k)
			}
		}
		return nil
	}
	var err error
	switch w.Model {
	case "queue", "stack", "pqueue", "kqueue":
		if err = nums(st); err == nil {
			res := st
			if len(st) == 0 {
				res = []model.Value{model.Sym(model.Empty)}
			}
			return rc.ObjectOp(p, "contents", nil, res), nil
		}
	case "map":
		if err = members(2); err == nil {
			err = nums(st)
		}
		if err == nil {
			first := rc.Lines() + 1
			j := 0
			for k := range w.Keys {
				v := model.Sym(model.Nil)
				if j < len(st) && st[j].N == k {
					v, j = st[j+1], j+2
				}
				rc.ObjectOp(p, "get", []model.Value{model.Number(k)}, []model.Value{v})
			}
			return first, nil
		}
	case "set":
		if err = members(1); err == nil {
			first := rc.Lines() + 1
			j := 0
			for k := range w.Keys {
				v := model.Sym(model.False)
				if j < len(st) && st[j].N == k {
					v, j = model.Sym(model.True), j+1
				}
				rc.ObjectOp(p, "contains", []model.Value{model.Number(k)}, []model.Value{v})
			}
			return first, nil
		}
	case "register", "counter":
		switch {
		case len(st) != 1:
			err = fmt.Errorf("%d values, not one", len(st))
		case w.Model == "counter" || st[0].Sym != model.Nil:
			err = nums(st)
		}
		if err == nil {
			op := "read"
			if w.Model == "counter" {
				op = "get"
			}
			return rc.ObjectOp(p, op, nil, st), nil
		}
	default:
		err = fmt.Errorf("model %s has no state form", w.Model)
	}
	return 0, fmt.Errorf("the state is not a %s's (%s): %w", w.Model, stateForm(w.Model), err)
}

// stateForm says what target.Object.State returns for a model.
func stateForm(m string) string {
	switch m {
	case "queue", "kqueue":
		return "the elements, front first"
	case "stack":
		return "the elements, top first"
	case "pqueue":
		return "the elements, least first"
	case "map":
		return "key, value, ... for every key that has a value, keys ascending"
	case "set":
		return "the members, ascending"
	}
	return "the one value"
}

// Recorded is the object workload rc records (record.Recorder.SetObject), nil if
// it records none of this package's.
func Recorded(rc *record.Recorder) *ObjectWorkload {
	w, _ := rc.Object().(*ObjectWorkload)
	return w
}
