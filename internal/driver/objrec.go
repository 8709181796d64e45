package driver

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/pmlin/pmlin/model"
)

// objText is what a Recorder of an object workload (SetObject) writes its
// operations with: version 2 text lines (docs/history-format.md,
// "Version 2"), "P inv OBJECT OP ARGS" and "P ret RESULTS", through the
// writer's TextLine, so that a history.Writer writes them and a
// history.Recording keeps them as they are.
type objText struct {
	w *ObjectWorkload
	b []byte
}

// SetObject makes rc record a version 2 history of the operations of the
// object workload w: Header writes the version 2 header and the object's
// declaration, the merge writes the object records of the workers' logs
// (a driver of an object workload logs nothing else), and the closing
// lines of version 1 (Promise, End) are left out, as version 2 has none
// (Interrupted becomes a comment). A binary history is refused: it holds
// version 1 operations only.
func (rc *Recorder) SetObject(w *ObjectWorkload) error {
	if rc.bw != nil {
		return errors.New("driver: a binary history holds version 1 operations (read, cas, swap) only: a data-structure target's history is recorded as text")
	}
	rc.obj = &objText{w: w}
	return nil
}

// Object is the object workload rc records (nil: none, a version 1
// history).
func (rc *Recorder) Object() *ObjectWorkload {
	if rc.obj == nil {
		return nil
	}
	return rc.obj.w
}

// line writes the line in o.b.
func (rc *Recorder) objLine() {
	rc.ew.TextLine(rc.obj.b)
	rc.obj.b = rc.obj.b[:0]
	rc.lines++
}

// objHead starts the line of process p's event: "P inv OBJECT OP" (inv)
// or "P ret".
func (rc *Recorder) objHead(p int32, op string) {
	o := rc.obj
	o.b = strconv.AppendInt(o.b[:0], int64(p), 10)
	if op == "" {
		o.b = append(o.b, " ret"...)
		return
	}
	o.b = append(o.b, " inv "...)
	o.b = append(o.b, o.w.Object...)
	o.b = append(o.b, ' ')
	o.b = append(o.b, op...)
}

// appendPairs appends the values of a record's (symbol, number) pairs
// (checked by the validator).
func (o *objText) appendPairs(pay []uint64) {
	for j := 0; j+1 < len(pay); j += 2 {
		o.b = model.Value{Sym: model.Symbol(pay[j]), N: pay[j+1]}.Append(append(o.b, ' '))
	}
}

// invokeOp writes the invocation of an object record's payload pay.
func (rc *Recorder) invokeOp(p int32, pay []uint64) {
	rc.objHead(p, rc.obj.w.Ops[pay[0]])
	rc.obj.appendPairs(pay[1:])
	rc.objLine()
}

// returnOp writes the response of an object record's payload pay.
func (rc *Recorder) returnOp(p int32, pay []uint64) {
	rc.objHead(p, "")
	rc.obj.appendPairs(pay)
	rc.objLine()
}

// ObjectOp records a whole operation op of the object, with args and
// results res, by process p (the harness's own, when no other runs: the
// state read back after a recovery) and returns the line of its
// invocation.
func (rc *Recorder) ObjectOp(p int32, op string, args, res []model.Value) int64 {
	rc.objHead(p, op)
	for _, a := range args {
		rc.obj.b = a.Append(append(rc.obj.b, ' '))
	}
	rc.objLine()
	line := rc.lines
	rc.objHead(p, "")
	for _, v := range res {
		rc.obj.b = v.Append(append(rc.obj.b, ' '))
	}
	rc.objLine()
	return line
}

// v2Header is the first line of a version 2 history.
const v2Header = "pmlin-history v2"

// objHeader writes the version 2 header and the object's declaration.
func (rc *Recorder) objHeader() {
	rc.ew.TextLine([]byte(v2Header))
	rc.ew.TextLine([]byte(rc.obj.w.Declaration()))
	rc.lines += 2
}

// objInterrupted writes the comment of a recording stopped after done of
// its planned operations.
func (rc *Recorder) objInterrupted(done, planned uint64) {
	rc.Comment(fmt.Sprintf("interrupted after %d of %d operations", done, planned))
}

// objOpWords bounds the words of one object operation's records (its
// invocation and its response).
var objOpWords = recWords(recInvOp, objMaxArgs) + recWords(recRetOp, objMaxResults)

// ObjectLogK is the k to size and lay out shared logs (SharedLogWords,
// LayoutSharedLogs) for an object workload: the operations of k words
// take at least as many words of log as an object's operation
// (TestObjectLogK).
const ObjectLogK = 3

// logObjInvocation logs o's invocation at ts (the log has room: reserve).
func logObjInvocation(l *wlog, o *objOp, ts int64) {
	l.mark(ts)
	q := l.record(recInvOp, o.nargs, ts)
	recPut(q, recHeader, uint64(o.code))
	for i, a := range o.args[:o.nargs] {
		recPut(q, recHeader+1+2*i, uint64(a.Sym))
		recPut(q, recHeader+2+2*i, a.N)
	}
	l.invTS = uint64(ts)
	l.commitRecord(recInvOp, recHeader+1+2*o.nargs, ts)
}

// logObjResponse logs o's response at ts (checkResults passed).
func logObjResponse(l *wlog, o *objOp, ts int64) {
	res := o.res
	q := l.record(recRetOp, len(res), ts)
	for i, v := range res {
		recPut(q, recHeader+2*i, uint64(v.Sym))
		recPut(q, recHeader+1+2*i, v.N)
	}
	l.commitRecord(recRetOp, recHeader+2*len(res), ts)
}

// checkResults refuses results of an object's operation that no model
// has: more than objMaxResults of them (every built-in model's operations
// return one), or a symbol the format does not know. Such an operation
// is a finding of the target's (its error stops the segment).
func checkResults(res []model.Value) error {
	if len(res) > objMaxResults {
		return fmt.Errorf("it returned %d results (an operation of a built-in model returns one)", len(res))
	}
	for _, v := range res {
		if v.Sym > model.False || v.Sym != model.Num && v.N != 0 {
			return fmt.Errorf("it returned a value that is not one of the format's (symbol %d, number %d)", v.Sym, v.N)
		}
	}
	return nil
}

// ObjectState records st, the state an object's State returned (in the
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
func (rc *Recorder) ObjectState(p int32, st []model.Value) (int64, error) {
	w := rc.obj.w
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
			first := rc.lines + 1
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
			first := rc.lines + 1
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
