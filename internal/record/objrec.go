package record

import (
	"errors"
	"fmt"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// objText is what a Recorder of an object workload (SetObject) writes its
// operations with: the writer's InvokeOp and ReturnOp (history.ObjectWriter),
// which a history.Writer writes as version 2 text lines
// (docs/history-format.md, "Version 2") and a history.Recording keeps as
// the binary format's records, and the values of the record at hand.
type objText struct {
	w    Object
	ow   history.ObjectWriter
	vals []model.Value
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
// (Interrupted becomes a comment). A binary history holds the operations
// as serial records (its workers' logs are merged, not streamed: they
// name an operation by its index in the workload).
func (rc *Recorder) SetObject(w Object) error {
	ow, ok := rc.ew.(history.ObjectWriter)
	if !ok {
		return errors.New("driver: this history's writer writes version 1 operations (read, cas, swap) only")
	}
	rc.obj = &objText{w: w, ow: ow}
	return nil
}

// streams is the binary writer the workers' logs go to as they are, as
// stream records: nil for a text history, and for an object workload's,
// whose logs name an operation by its index in the workload and are
// merged into serial records (objText).
func (rc *Recorder) streams() *history.BinaryWriter {
	if rc.obj != nil {
		return nil
	}
	return rc.bw
}

// Object is the object workload rc records (nil: none, a version 1
// history).
func (rc *Recorder) Object() Object {
	if rc.obj == nil {
		return nil
	}
	return rc.obj.w
}

// pairs is the values of a log record's (symbol, number) pairs (checked
// by the validator), in o's memory.
func (o *objText) pairs(pay []uint64) []model.Value {
	o.vals = o.vals[:0]
	for j := 0; j+1 < len(pay); j += 2 {
		o.vals = append(o.vals, model.Value{Sym: model.Symbol(pay[j]), N: pay[j+1]})
	}
	return o.vals
}

// invokeOp writes the invocation of an object record's payload pay.
func (rc *Recorder) invokeOp(p int32, pay []uint64) {
	o := rc.obj
	o.ow.InvokeOp(p, o.w.Name(), o.w.Op(int(pay[0])), o.pairs(pay[1:]))
	rc.lines++
}

// returnOp writes the response of an object record's payload pay.
func (rc *Recorder) returnOp(p int32, pay []uint64) {
	rc.obj.ow.ReturnOp(p, rc.obj.pairs(pay), false)
	rc.lines++
}

// ObjectOp records a whole operation op of the object, with args and
// results res, by process p (the harness's own, when no other runs: the
// state read back after a recovery) and returns the line of its
// invocation.
func (rc *Recorder) ObjectOp(p int32, op string, args, res []model.Value) int64 {
	o := rc.obj
	o.ow.InvokeOp(p, o.w.Name(), op, args)
	rc.lines++
	line := rc.lines
	o.ow.ReturnOp(p, res, false)
	rc.lines++
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
