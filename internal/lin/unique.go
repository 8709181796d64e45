package lin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// EngineUnique is the unique-value engine: an object of the built-in map or
// register read as a history of words (one per key; the register is one
// word) and decided by the precedence-multigraph analyzer (package
// analyzer, Cepeda et al., OPODIS 2019), in near-linear time.
const EngineUnique = "unique"

// The translation (uniqueApplies says when it is exact, translate does it).
// A map's key K is word K, whose value stands for the key's: a number is
// itself, and "no value" is a number above every value of the object
// (absent, the word's initial value) or, after a remove that took a value
// away, a tombstone of its own above that (absent+1, absent+2, ...):
//
//	get K -> V                     read K -> V
//	put K V -> W                   swap K:V -> W (what it replaced)
//	remove K -> V (a value)        swap K:tombstone -> V
//	remove K -> nil                read K -> absent (it changes nothing)
//	putifabsent K V -> nil         cas K:absent:V -> ok
//	putifabsent K V -> W           cas K:absent:V -> fail K W (a failure that reports W)
//	an operation cut off or ?      the same invocation, cut off
//
// A register is word 0: read -> read, cas E N -> cas 0:E:N (ok, or fail 0
// without values); nil is the value above every number of the object.
//
// The word history then has the map's meaning exactly when no "no value"
// the analyzer tells apart is one the map cannot: either no operation on
// K can leave a tombstone (no remove that took a value, and none that may
// have), or none observes "no value" (no result nil, no putifabsent that
// may have succeeded, which expects the initial absent and would fail on a
// tombstone where the map succeeds). The analyzer itself checks the rest
// of its assumptions (Assumption 1: a value written twice to a key, or the
// initial one; Assumption 2 for a register's failed cas): breaking one is
// its error, and then the exact search decides the object.

// uniqueApplies says why the unique-value engine cannot decide object obj
// of h, whose operations are ops (in order of invocation), in mode ("" when
// it can), and which operations it cannot take (taint, indexes in h.Ops):
// the parts that hold them go to the search, the engine takes the others
// (a part never depends on another's operations but through process order,
// which joins them into one part).
func uniqueApplies(h *model.History, obj int, ops []int, mode history.Mode) (why string, taint []int) {
	o := &h.Objects[obj]
	switch o.Model {
	case "map":
		if len(o.Params) != 0 {
			return "map with parameters", nil
		}
	case "register":
	default:
		return "not a map or a register", nil
	}
	maxVal, _ := valueRange(h, obj, ops)
	keys := map[uint64]uint8{} // map: per key, canTomb | seesAbsent
	const canTomb, seesAbsent = 1, 2
	removes := uint64(0)
	lastCrash := -1
	if len(h.Crashes) > 0 {
		lastCrash = h.Crashes[len(h.Crashes)-1].Pos
	}
	for _, i := range ops {
		op := &h.Ops[i]
		if op.Name == "write" {
			// A write returns no old value: it is neither a swap (which
			// says what it replaced) nor a cas, and the analyzer has no
			// blind write.
			return "a register write (no old value)", nil
		}
		if !uniqueKnows(o.Model, op.Name) {
			// An operation the translation does not know (a model that
			// grew one): never guess its words.
			return fmt.Sprintf("a %s operation %q the translation does not know", o.Model, op.Name), nil
		}
		if op.Status == model.Unknown && mode.CrashBounds() && op.Call < lastCrash {
			// In the word history it stays pending on a process of its
			// own: a crash after it would close its window (strict),
			// which "?" leaves open.
			taint = append(taint, i)
		}
		if o.Model != "map" {
			continue
		}
		k := op.Args[0].N
		nilResult := op.Status == model.Returned && op.Results[0].Sym == model.Nil
		if op.Name == "remove" && !nilResult {
			keys[k] |= canTomb
			removes++
		}
		if nilResult || (op.Name == "putifabsent" && op.Status != model.Returned) {
			keys[k] |= seesAbsent
		}
	}
	if maxVal >= math.MaxUint64-1-removes {
		return "values too close to 2^64 to leave room for nil and the removes", nil
	}
	// A key whose value a remove may take away and that an operation sees
	// without a value: nil does not say which remove's absence it saw.
	for _, i := range ops {
		if o.Model == "map" && keys[h.Ops[i].Args[0].N] == canTomb|seesAbsent {
			taint = append(taint, i)
		}
	}
	if mode.ProcessOrder() {
		// A "?" operation runs on a process of its own in the word
		// history: it must not be inside its process's order (window.go's
		// processOrder), where it would end a chain the analyzer passes on.
		for _, chain := range processOrder(h, ops, nil) {
			for _, x := range chain {
				if h.Ops[ops[x]].Status == model.Unknown {
					taint = append(taint, ops[x])
				}
			}
		}
	}
	return "", taint
}

// uniqueKnows says whether translate knows operation name of model m.
func uniqueKnows(m, name string) bool {
	switch m {
	case "map":
		return name == "get" || name == "put" || name == "remove" || name == "putifabsent"
	case "register":
		return name == "read" || name == "cas"
	}
	return false
}

// valueRange is the greatest number among the values of object obj's
// operations ops (arguments but a map's keys, results) and of its initial
// value, and that initial value (a register's; nil for a map).
func valueRange(h *model.History, obj int, ops []int) (uint64, model.Value) {
	o := &h.Objects[obj]
	init := model.Sym(model.Nil)
	if o.Model == "register" {
		init = model.Number(0)
		for _, p := range o.Params {
			if v, err := model.ParseValue(p.Value); p.Key == "init" && err == nil {
				init = v
			}
		}
	}
	m := init.N
	for _, i := range ops {
		op := &h.Ops[i]
		vals := op.Args
		if o.Model == "map" {
			vals = op.Args[1:]
		}
		for _, v := range vals {
			m = max(m, v.N)
		}
		if op.Status == model.Returned {
			m = max(m, op.Results[0].N)
		}
	}
	return m, init
}

// wordHistory is an object's operations as a version 1 history of words.
type wordHistory struct {
	text []byte
	// line: per line of text (1-based), the operation of h.Ops its
	// invocation or response is (>= 0), or -1 - the crash it is, or
	// math.MinInt32 (header).
	line   []int32
	absent uint64  // the map's "no value" / the register's nil
	tombs  []int32 // tombstone absent+1+j is written by operation tombs[j]
	isMap  bool
}

// translate writes object obj's operations ops (uniqueApplies holds) as a
// word history.
func translate(h *model.History, obj int, ops []int) *wordHistory {
	o := &h.Objects[obj]
	w := &wordHistory{isMap: o.Model == "map"}
	maxVal, init := valueRange(h, obj, ops)
	w.absent = maxVal + 1
	if init.Sym != model.Num {
		init.N = w.absent // a map's, or a register's nil
	}
	enc := func(v model.Value) uint64 {
		if v.Sym == model.Num {
			return v.N
		}
		return w.absent // nil: the only symbol among map and register values
	}
	var buf bytes.Buffer
	buf.Grow(len(ops) * 40)
	wr := history.NewWriter(&buf)
	wr.Header(init.N, nil)
	w.line = append(w.line, math.MinInt32, math.MinInt32)
	if init.N != 0 {
		w.line = append(w.line, math.MinInt32)
	}
	procs := map[int64]int32{}
	for _, i := range ops {
		if op := &h.Ops[i]; op.Status != model.Unknown {
			if _, ok := procs[op.Proc]; !ok {
				procs[op.Proc] = int32(len(procs))
			}
		}
	}
	proc := make([]int32, len(ops)) // the word process of each of ops
	fresh := int32(len(procs))      // the next process of its own
	var addr, val, exp [1]uint64
	// Events in order of position: invocations (ops are by Call),
	// responses (a heap of the pending ones by position) and crashes.
	var pend retHeap
	crash := 0
	j := 0
	for j < len(ops) || len(pend) > 0 || crash < len(h.Crashes) {
		next, kind := math.MaxInt, 0
		if j < len(ops) {
			next, kind = h.Ops[ops[j]].Call, 1
		}
		if len(pend) > 0 && pend[0].pos < next {
			next, kind = pend[0].pos, 2
		}
		if crash < len(h.Crashes) && h.Crashes[crash].Pos < next {
			kind = 3
		}
		switch kind {
		case 3:
			wr.Crash()
			w.line = append(w.line, int32(-1-crash))
			crash++
		case 1:
			i := ops[j]
			op := &h.Ops[i]
			p := procs[op.Proc]
			if op.Status == model.Unknown {
				// Pending to the end on a process of its own: "?" leaves
				// its window open and its process free to go on.
				p = fresh
				fresh++
			}
			proc[j] = p
			if w.isMap {
				addr[0] = op.Args[0].N
			}
			switch name := op.Name; {
			case name == "get" || name == "read" || (name == "remove" && op.Status == model.Returned && op.Results[0].Sym == model.Nil):
				wr.InvokeRead(p, addr[:])
			case name == "put":
				val[0] = op.Args[1].N
				wr.InvokeSwap(p, addr[:], val[:])
			case name == "remove":
				val[0] = w.absent + 1 + uint64(len(w.tombs))
				w.tombs = append(w.tombs, int32(i))
				wr.InvokeSwap(p, addr[:], val[:])
			case name == "putifabsent":
				exp[0], val[0] = w.absent, op.Args[1].N
				wr.InvokeCAS(p, addr[:], exp[:], val[:])
			default: // register cas
				exp[0], val[0] = enc(op.Args[0]), enc(op.Args[1])
				wr.InvokeCAS(p, addr[:], exp[:], val[:])
			}
			w.line = append(w.line, int32(i))
			if op.Status == model.Returned {
				pend.push(ret{pos: op.Return, j: j})
			}
			j++
		case 2:
			r := pend.pop()
			i := ops[r.j]
			op := &h.Ops[i]
			p := proc[r.j]
			res := op.Results[0]
			switch {
			case op.Name == "putifabsent" && res.Sym == model.Nil, op.Name == "cas" && res.Sym == model.OK:
				wr.ReturnOK(p)
			case op.Name == "putifabsent":
				val[0] = res.N
				wr.ReturnFailValues(p, op.Args[0].N, val[:])
			case op.Name == "cas":
				wr.ReturnFail(p, 0)
			default:
				val[0] = enc(res)
				wr.ReturnRead(p, val[:])
			}
			w.line = append(w.line, int32(i))
		}
	}
	wr.Flush() // into a bytes.Buffer: no error
	w.text = buf.Bytes()
	return w
}

type ret struct{ pos, j int }

// retHeap is a min-heap of pending responses by position.
type retHeap []ret

func (q *retHeap) push(r ret) {
	*q = append(*q, r)
	s := *q
	for k := len(s) - 1; k > 0; {
		u := (k - 1) / 2
		if s[u].pos <= s[k].pos {
			break
		}
		s[u], s[k] = s[k], s[u]
		k = u
	}
}

func (q *retHeap) pop() ret {
	s := *q
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for k := 0; ; {
		c := 2*k + 1
		if c >= n {
			break
		}
		if c+1 < n && s[c+1].pos < s[c].pos {
			c++
		}
		if s[k].pos <= s[c].pos {
			break
		}
		s[k], s[c] = s[c], s[k]
		k = c
	}
	*q = s
	return top
}

// uniqueOutcome is the unique-value engine's answer about an object: a
// verdict, or ok false with why when the analyzer could not decide (an
// assumption broken, its budget of completions spent: the exact search
// then decides).
type uniqueOutcome struct {
	verdict Verdict
	ok      bool
	why     string
	failing int // on a violation: an operation of the first anomaly
	anomaly *analyzer.Anomaly
	words   *wordHistory
	ops     int
}

// decideUnique decides object obj (operations ops, uniqueApplies holds) by
// the analyzer on its word history, with workers goroutines (0: all).
func decideUnique(ctx context.Context, h *model.History, obj int, ops []int, opt *Options, workers int) uniqueOutcome {
	w := translate(h, obj, ops)
	r := history.NewReader(bytes.NewReader(w.text), h.Objects[obj].Name, history.Options{})
	a, err := analyzer.Analyze(ctx, r, analyzer.Options{Mode: opt.Mode, MaxAnomalies: 4, SizeHint: int64(len(w.text)), Workers: workers})
	out := uniqueOutcome{words: w, ops: len(ops), failing: -1}
	var ae *analyzer.AssumptionError
	var ue *analyzer.UndecidedError
	switch {
	case err == nil:
	case errors.As(err, &ae):
		out.why = fmt.Sprintf("breaks the analyzer's Assumption %d at %s", ae.Assumption, w.where(h, opt, ae.Line))
		return out
	case errors.As(err, &ue):
		out.why = "the analyzer's search of completions ran out of budget"
		return out
	default:
		// ctx's end; or the word history refused, which would be a bug of
		// the translation: the exact search decides, never a guess.
		out.why = err.Error()
		return out
	}
	out.ok = true
	if a.Result.Linearizable {
		out.verdict = Linearizable
		return out
	}
	out.verdict = Violation
	out.anomaly = &a.Result.Anomalies[0]
	for _, l := range out.anomaly.Ops {
		if i := w.op(l); i >= 0 {
			out.failing = i
			break
		}
	}
	if out.failing < 0 {
		out.failing = ops[0]
	}
	return out
}

// op is the operation of h.Ops at line l of the word history, or -1.
func (w *wordHistory) op(l int64) int {
	if l <= 0 || l >= int64(len(w.line)) || w.line[l] < 0 {
		return -1
	}
	return int(w.line[l])
}

// where names line l of the word history in h's terms.
func (w *wordHistory) where(h *model.History, opt *Options, l int64) string {
	if i := w.op(l); i >= 0 {
		return opt.where(h, i)
	}
	if l > 0 && l < int64(len(w.line)) && w.line[l] != math.MinInt32 {
		return opt.crashWhere(h, int(-1-w.line[l]))
	}
	return "the start"
}

// value says a word's value v in the model's terms.
func (w *wordHistory) value(h *model.History, opt *Options, v uint64) string {
	switch {
	case v < w.absent:
		return model.Number(v).String()
	case v == w.absent && w.isMap:
		return "no value"
	case v == w.absent:
		return "nil"
	case v-w.absent-1 < uint64(len(w.tombs)):
		return "no value (removed by " + ref(h, int(w.tombs[v-w.absent-1])).Op + " at " + opt.where(h, int(w.tombs[v-w.absent-1])) + ")"
	}
	return model.Number(v).String()
}

// explainUnique explains the unique-value engine's violation u: by the
// exact search on the failing part when it is small and the search finds
// the violation within uniqueExplainStates (a minimal set of operations,
// the longest order), else from the analyzer's anomaly told in the
// model's terms (keys, values, the object's operations and lines).
func explainUnique(ctx context.Context, h *model.History, p *part, bounds []int, opt *Options, sh *shared, u *uniqueOutcome) *Explanation {
	if len(p.ops) <= queueExplainMax {
		o := *opt
		o.MaxStates = min(opt.maxStates(), uniqueExplainStates)
		if out := decide(ctx, h, p, bounds, &o, sh); out.verdict == Violation {
			return explain(ctx, h, p, bounds, &o, &out)
		}
	}
	obj := &h.Objects[h.Ops[u.failing].Object]
	w, an := u.words, u.anomaly
	e := &Explanation{Object: obj.Name, Model: obj.Model, Failing: opt.ref(h, u.failing)}
	for _, l := range an.Ops {
		if i := w.op(l); i >= 0 {
			e.Ops = append(e.Ops, opt.ref(h, i))
		}
	}
	where := "the register"
	if w.isMap && len(an.Words) > 0 {
		var ks []string
		for _, k := range an.Words {
			ks = append(ks, model.Number(k).String())
		}
		where = "key " + strings.Join(ks, ", ")
	}
	name := func(l int64) string {
		if l == 0 {
			return "the initial state"
		}
		if i := w.op(l); i >= 0 {
			return ref(h, i).Op + " at " + opt.where(h, i)
		}
		return w.where(h, opt, l)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "No order of the operations of %s (%s) on %s explains them (the precedence-graph method, Cepeda et al.): ", obj.Name, obj.Model, where)
	switch an.Kind {
	case analyzer.Cycle:
		b.WriteString("each must take effect before the next, round a cycle:")
		for _, ed := range an.Edges {
			fmt.Fprintf(&b, " %s before %s (%s);", name(ed.From), name(ed.To), w.edgeReason(h, opt, ed))
		}
	case analyzer.Dangling:
		fmt.Fprintf(&b, "%s saw a value that no operation gave that key", name(an.Ops[0]))
	case analyzer.UnexplainedFailure:
		fmt.Fprintf(&b, "%s failed, but the value it expected was never replaced", name(an.Ops[0]))
	case analyzer.Fork:
		b.WriteString("two operations replaced the same value")
		for _, ed := range an.Edges {
			if ed.Kind == analyzer.ReadsFrom {
				b.WriteString(", " + w.value(h, opt, ed.Value))
				break
			}
		}
		b.WriteString(":")
		for _, l := range an.Ops {
			fmt.Fprintf(&b, " %s;", name(l))
		}
	case analyzer.UnreachableWrite:
		fmt.Fprintf(&b, "%s replaced a value that no sequence of the writes from the initial one leaves there", name(an.Ops[0]))
	default:
		b.WriteString(string(an.Kind))
	}
	e.Sentence = strings.TrimSuffix(b.String(), ";") + "."
	return e
}

// uniqueExplainStates bounds the search that explains a violation the
// unique-value engine found: the engine answered because the search may
// be slow there.
const uniqueExplainStates = 200_000

// edgeReason says in the model's terms why edge ed orders its operations.
func (w *wordHistory) edgeReason(h *model.History, opt *Options, ed analyzer.Edge) string {
	v := w.value(h, opt, ed.Value)
	switch ed.Rule {
	case analyzer.RuleRead, analyzer.RuleExpected, analyzer.RuleReplaced:
		return "the second saw " + v + ", which the first left"
	case analyzer.RulePlaced:
		return "the second, cut off, took effect after the last write of " + v
	case analyzer.RuleReadFirst:
		return "the first saw " + v + ", which the second replaced"
	case analyzer.RuleFailedAfter:
		return "the second failed expecting " + v + ", which the first replaced"
	case analyzer.RuleReturned:
		return "the first returned before the second was invoked"
	}
	if ed.Kind == analyzer.Recovery {
		return "the first, cut off by a crash, takes effect before its process's next operation (recoverable mode)"
	}
	if ed.CrashLine > 0 {
		return "the first, cut off by " + w.where(h, opt, ed.CrashLine) + ", took effect before it"
	}
	return string(ed.Rule)
}

// unit is an object the unique-value engine may decide: its parts (indexes
// in the parts searched) and their operations, all the object's or those
// of the parts uniqueApplies leaves it.
type unit struct {
	obj   int
	parts []int
	ops   []int
}

// uniqueUnits finds the objects the unique-value engine may decide: of a
// built-in map or register, whose parts hold its operations alone (in
// recoverable mode, process order may join them to other objects': the
// word history holds one object), and where uniqueApplies; a unit is the
// parts of such an object free of the operations uniqueApplies taints.
func uniqueUnits(h *model.History, parts []*part, opt *Options) []unit {
	if opt.Generic || opt.Engine == EngineExact || opt.Engine == EngineQueue || opt.Models != nil {
		return nil
	}
	byObj := map[int][]int{}
	alone := map[int]bool{}
	for k, p := range parts {
		for _, o := range p.objs {
			m := h.Objects[o].Model
			if m != "map" && m != "register" {
				continue
			}
			if _, ok := alone[o]; !ok {
				alone[o] = true
			}
			alone[o] = alone[o] && len(p.objs) == 1
			byObj[o] = append(byObj[o], k)
		}
	}
	// Each object's operations in order of invocation: one pass, not a
	// sort of its parts' (millions of operations).
	ops := map[int][]int{}
	for i := range h.Ops {
		if o := h.Ops[i].Object; alone[o] {
			ops[o] = append(ops[o], i)
		}
	}
	var units []unit
	for o := range h.Objects {
		if !alone[o] {
			continue
		}
		why, taint := uniqueApplies(h, o, ops[o], opt.Mode)
		if why != "" {
			continue
		}
		u := unit{obj: o, parts: byObj[o], ops: ops[o]}
		if len(taint) > 0 {
			// The parts free of tainted operations, and their operations.
			bad := map[int]bool{}
			for _, i := range taint {
				bad[i] = true
			}
			u.parts, u.ops = nil, nil
			for _, k := range byObj[o] {
				if !slices.ContainsFunc(parts[k].ops, func(i int) bool { return bad[i] }) {
					u.parts = append(u.parts, k)
					u.ops = append(u.ops, parts[k].ops...)
				}
			}
			slices.Sort(u.ops)
		}
		if len(u.parts) > 0 {
			units = append(units, u)
		}
	}
	return units
}

// decideUnit decides the parts of unit u into outs: by the unique-value
// engine and the search at once (race), or the engine opt.Engine forces.
// The engine's verdict is the object's: on a violation, the part of the
// failing operation carries it, and the others are linearizable as far as
// the engine tells.
func decideUnit(ctx context.Context, h *model.History, parts []*part, u *unit, bounds []int, opt *Options, sh *shared, outs []outcome) {
	exact := func(ctx context.Context) ([]outcome, bool) {
		res := make([]outcome, len(u.parts))
		ok := true
		for x, k := range u.parts {
			if ctx.Err() != nil {
				// Lost the race, or another part of the object is a
				// violation: a small part's search ends before it looks
				// at ctx, so the loop must.
				for y := x; y < len(res); y++ {
					res[y] = outcome{verdict: Undecided, reason: "cancelled", failing: -1}
				}
				return res, false
			}
			res[x] = decide(ctx, h, parts[k], bounds, opt, sh)
			res[x].engine = EngineExact
			if res[x].verdict == Violation {
				for y := x + 1; y < len(res); y++ {
					res[y] = outcome{verdict: Undecided, reason: "cancelled", failing: -1}
				}
				return res, true
			}
			ok = ok && res[x].verdict == Linearizable
		}
		return res, ok
	}
	workers := 1 // the search has the other core
	if opt.Engine == EngineUnique {
		workers = 0
	}
	unique := func(ctx context.Context) ([]outcome, bool) {
		q := decideUnique(ctx, h, u.obj, u.ops, opt, workers)
		if !q.ok {
			return nil, false
		}
		res := make([]outcome, len(u.parts))
		blamed := false
		for x, k := range u.parts {
			res[x] = outcome{verdict: Linearizable, failing: -1, engine: EngineUnique}
			if q.verdict == Violation && !blamed && slices.Contains(parts[k].ops, q.failing) {
				res[x] = outcome{verdict: Violation, failing: q.failing, unique: &q, engine: EngineUnique}
				blamed = true
			}
		}
		if q.verdict == Violation && !blamed {
			// The anomaly names an operation of the object, so of one of
			// its parts; were it not, the violation must still stand.
			q.failing = parts[u.parts[0]].ops[0]
			res[0] = outcome{verdict: Violation, failing: q.failing, unique: &q, engine: EngineUnique}
		}
		return res, true
	}
	var res []outcome
	if opt.Engine == EngineUnique {
		var ok bool
		if res, ok = unique(ctx); !ok {
			res, _ = exact(ctx)
		}
	} else {
		res = raceParts(ctx, opt.raceStart(len(u.ops)), unique, exact)
	}
	for x, k := range u.parts {
		outs[k] = res[x]
	}
}
