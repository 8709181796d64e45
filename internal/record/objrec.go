package record

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
	w Object
	b []byte
}

// Object is what a Recorder needs of an object workload (the driver's) to
// write its operations: the history's declaration of the object
// ("object NAME MODEL PARAMS", docs/history-format.md), its name, and the
// names of its operations, which a log's invocation record names by
// index.
type Object interface {
	Declaration() string
	Name() string
	Op(i int) string
	NumOps() int
}

// MaxArgs and MaxResults bound an object operation's arguments and
// results (every built-in model's operations have at most two and one):
// the room a log keeps for an operation (ObjectOpWords).
const (
	MaxArgs    = 2
	MaxResults = 4
)

// SetObject makes rc record a version 2 history of the operations of the
// object workload w: Header writes the version 2 header and the object's
// declaration, the merge writes the object records of the workers' logs
// (a driver of an object workload logs nothing else), and the closing
// lines of version 1 (Promise, End) are left out, as version 2 has none
// (Interrupted becomes a comment). A binary history is refused: it holds
// version 1 operations only.
func (rc *Recorder) SetObject(w Object) error {
	if rc.bw != nil {
		return errors.New("driver: a binary history holds version 1 operations (read, cas, swap) only: a data-structure target's history is recorded as text")
	}
	rc.obj = &objText{w: w}
	return nil
}

// Object is the object workload rc records (nil: none, a version 1
// history).
func (rc *Recorder) Object() Object {
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
	o.b = append(o.b, o.w.Name()...)
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
	rc.objHead(p, rc.obj.w.Op(int(pay[0])))
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
// invocation and its response): recWords's arithmetic, written as a
// constant (TestObjectLogK checks it).
const objOpWords = recHeader + 1 + 2*MaxArgs + recHeader + 2*MaxResults

// ObjectLogK is the k to size and lay out shared logs (SharedLogWords,
// LayoutSharedLogs) for an object workload: the operations of k words
// take at least as many words of log as an object's operation
// (TestObjectLogK).
const ObjectLogK = 3

// CheckResults refuses results of an object's operation that no model
// has: more than MaxResults of them (every built-in model's operations
// return one), or a symbol the format does not know. Such an operation
// is a finding of the target's (its error stops the segment).
func CheckResults(res []model.Value) error {
	if len(res) > MaxResults {
		return fmt.Errorf("it returned %d results (an operation of a built-in model returns one)", len(res))
	}
	for _, v := range res {
		if v.Sym > model.False || v.Sym != model.Num && v.N != 0 {
			return fmt.Errorf("it returned a value that is not one of the format's (symbol %d, number %d)", v.Sym, v.N)
		}
	}
	return nil
}
