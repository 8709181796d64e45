package pmlin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/internal/shrink"
	"github.com/pmlin/pmlin/model"
)

// Kind is the kind of an operation: Read, CAS or Swap (package history's).
type Kind = history.OpKind

// The kinds of operations.
const (
	Read = history.Read // a multi-word read (MwR)
	CAS  = history.CAS  // a multi-word compare-and-swap (MwCAS)
	Swap = history.Swap // a multi-word swap (MwSwap): writes New, returns the values it replaced
)

// Mode is the completion rule for operations cut off by a crash (package
// history's; package analyzer explains the rules).
type Mode = history.Mode

// The modes.
const (
	Strict      = history.Strict
	Recoverable = history.Recoverable
	Durable     = history.Durable
)

// Outcome is how an operation ended. The zero value is none, an error: a
// response left out by mistake must not pass for an operation cut off.
type Outcome uint8

const (
	// Returned: a read returned Values, or a swap the Values it replaced.
	Returned Outcome = iota + 1
	// OK: a cas succeeded and wrote every New value.
	OK
	// Failed: a cas failed; FailAddr is one of its addresses whose value
	// differed from the expected one (recorders/README.md, "What a
	// recorder must do", says which address a failure may blame), and
	// Values, if not nil, the values it read at each of its addresses.
	Failed
	// Pending: no response; the operation was cut off by the first crash
	// after its call, or by the end of the history.
	Pending
	// Unknown: an operation on an object (History.Objects) that was
	// answered, but whose outcome is not known (Jepsen's :info; "ret ?"
	// in the format): it may or may not have taken effect, at any time
	// after its call.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Returned:
		return "returned"
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Pending:
		return "pending"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Operation is one operation of a History: who called what when, and how
// it ended (Porcupine's Operation, for multi-word reads and cas, or for
// objects of any model).
//
// An operation on the word array has a Kind and the fields from Addrs to
// FailAddr; an operation of a history of objects (History.Objects) has
// Object, Name, Args and Results instead, and ends Returned, Unknown or
// Pending.
type Operation struct {
	// Process is the calling thread's id, 0 to 2^31-1.
	Process int
	// Object is the object it acts on (an index in History.Objects), Name
	// the operation ("enq"), Args its arguments and Results, when
	// Returned, what it returned, as its model says
	// (docs/history-format.md, "The built-in models of version 2").
	Object        int
	Name          string
	Args, Results []model.Value
	Kind          Kind
	// Addrs are the words, distinct, in the operation's own order; the
	// slices below are parallel to it.
	Addrs []uint64
	// Expected are a cas's expected values (nil for a read or a swap),
	// New a cas's or a swap's new values (nil for a read). A new value
	// must differ from the word's initial value and from every other
	// value written to it (Assumption 1: docs/history-format.md).
	Expected, New []uint64
	// Call and Return are the invocation and response timestamps (Return
	// is ignored for a Pending operation).
	Call, Return int64
	Outcome      Outcome
	// Values are what a read returned or a swap replaced (Outcome
	// Returned), or what a failed cas reports having read (Outcome
	// Failed; nil when it reports nothing).
	Values []uint64
	// FailAddr is the address a failed cas blames (Outcome Failed).
	FailAddr uint64
}

// History is what Check judges: operations on the word array of version 1
// (read, cas, swap), or, when Objects is not nil, on objects of any model.
type History struct {
	// Objects are the objects of a history of objects: each with its name
	// (for messages), its model (Options.Models finds it) and the model's
	// parameters. An object of model "words" takes read, cas and swap
	// with their arguments flattened (docs/history-format.md, "The
	// built-in models of version 2").
	Objects []model.Object
	// Init is the initial value of every word not in InitWords.
	Init      uint64
	InitWords map[uint64]uint64
	// Operations in any order: their timestamps order them.
	Operations []Operation
	// Crashes are the timestamps of full-system crashes, each followed by
	// recovery: see the package doc.
	Crashes []int64
}

// Options tune Check. The zero value checks in strict mode.
type Options struct {
	Mode Mode
	// Name names the history in reports and errors (default "history").
	Name string
	// MaxAnomalies bounds the anomalies listed per kind (default 20).
	MaxAnomalies int
	// Models finds the maker of a model of History.Objects by name; nil:
	// model.Builtin. A model of one's own goes here (wrap model.Builtin
	// to keep the built-in ones).
	Models func(name string) model.Maker
}

// Result is a verdict on a History.
type Result struct {
	Linearizable bool
	Mode         Mode
	// Engine is the method that answered: "graph" (package analyzer), or
	// "exact" (an exhaustive search, as pmlin check's) for a history of at
	// most 200 operations that the graph method left undecided
	// (WriteReport says why). For a history of objects, as pmlin check's
	// version 2 verdict says it: "exact", "queue", "unique" or "mixed". An
	// exact verdict has no anomalies: when not linearizable, Witness are
	// operations, by index, that cannot be ordered on their own.
	Engine  string
	Witness []int
	// Anomalies are what is broken, operations named by their index in
	// History.Operations; Omitted counts those not listed.
	Anomalies []Anomaly
	Omitted   int64
	// Hint says what the anomalies tell about the recorder rather than
	// the primitive, or is "": for instance an operation that observed a
	// value before its writer was called, which says the timestamps are
	// not those of one global clock. It names operations by index.
	Hint string

	name string
	a    *analyzer.Analysis     // nil for an exact verdict
	v    *report.Verdict        // the exact verdict, if it is one
	ov   *report.ObjectsVerdict // the verdict on a history of objects
	lay  *layout
}

// Anomaly is one broken property (analyzer.Anomaly), operations by index.
type Anomaly struct {
	// Kind: analyzer's kinds; "nonlinearizable" for an object of a
	// version 2 model; "stuck" for an operation of a synchronisation
	// object (exchanger, channel) that never returned though it should
	// have, in a history that is linearizable (Result.Linearizable stays
	// true): its Ops are the operation, then its partner.
	Kind string
	// Ops are the operations involved (for a cycle, in cycle order).
	Ops   []int
	Words []uint64
	// Explanation says it in sentences, naming operations by index
	// ("operation 3 (process 2 cas)"), crashes by index ("crash 1") and
	// responses by their timestamps ("returned at time 20"), for a
	// history of objects too (package doc, "Operations named by index").
	Explanation string
	// Edges are the witness: for a cycle, each edge of a shortest cycle.
	Edges []Edge
}

// Edge is an edge of a witness: From must come before To.
type Edge struct {
	// From and To are operations by index; -1 is the initial state.
	From, To int
	// Kind is the edge's kind: "hb" (happens before), "rf" (reads from),
	// "aux" (an auxiliary edge of the OPODIS paper), as pmlin check
	// --json names them.
	Kind string
	// Word is the address of a reads-from or auxiliary edge.
	Word uint64
	// Reason says why From comes before To, in Explanation's words.
	Reason string
}

// Error is a history Check cannot judge: ill-formed, breaking an
// assumption of the method, holding no operation, or undecided. It names
// the operation (or the crash) to blame, by index, and so does Msg any
// other it involves ("as does the cas of operation 0").
type Error struct {
	// Op is the index in History.Operations of the operation to blame,
	// Crash the index in History.Crashes of the crash; -1 when none is.
	Op, Crash int
	Msg       string
	// Err is the cause, of one of the kinds below (errors.Is).
	Err error
}

// The kinds of an Error's cause, for errors.Is.
var (
	// ErrMalformed: the history breaks the format; ErrSyntax (a field
	// out of range), ErrIllFormed (a rule of well-formedness) and ErrLimit
	// (a limit of pmlin's) are kinds of it.
	ErrMalformed = history.ErrMalformed
	ErrSyntax    = history.ErrSyntax
	ErrIllFormed = history.ErrIllFormed
	ErrLimit     = history.ErrLimit
	// ErrCoarseClock: timestamps that tie in a way no order can state
	// (recorders/README.md, rule 4).
	ErrCoarseClock = history.ErrCoarseClock
	// ErrAssumption: the history breaks an assumption of the method
	// (docs/history-format.md, Assumptions 1 and 2) in a way that matters.
	ErrAssumption = analyzer.ErrAssumption
	// ErrUndecided: deciding needs more than the budget allows.
	ErrUndecided = analyzer.ErrUndecided
)

func (e *Error) Error() string {
	switch {
	case e.Op >= 0:
		return fmt.Sprintf("operation %d: %s", e.Op, e.Msg)
	case e.Crash >= 0:
		return fmt.Sprintf("crash %d: %s", e.Crash, e.Msg)
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Check decides whether h is linearizable. The error is an *Error, or
// ctx's.
func Check(ctx context.Context, h History, opts Options) (*Result, error) {
	if opts.Name == "" {
		opts.Name = "history"
	}
	if h.Objects != nil {
		return checkObjects(ctx, h, opts)
	}
	lay, err := lay(h)
	if err != nil {
		return nil, err
	}
	events := lay.rec.Source(opts.Name, history.Options{})
	a, err := analyzer.Analyze(ctx, lay.rec.Reader(opts.Name, history.Options{}),
		analyzer.Options{Mode: opts.Mode, MaxAnomalies: opts.MaxAnomalies, SizeHint: lay.rec.Size(), Names: lay})
	if ue := (*analyzer.UndecidedError)(nil); errors.As(err, &ue) {
		if res, err := lay.decideExactly(ctx, opts, ue, events); res != nil || err != nil {
			return res, err
		}
	}
	if err != nil {
		return nil, lay.blame(err)
	}
	res := &Result{Linearizable: a.Result.Linearizable, Mode: opts.Mode, Engine: report.EngineGraph, Omitted: a.Result.Omitted, name: opts.Name, a: a, lay: lay}
	for _, an := range a.Result.Anomalies {
		res.Anomalies = append(res.Anomalies, lay.anomaly(an))
	}
	if pairs := analyzer.ObservationsBeforeWrites(a.Result); len(pairs) > 0 {
		concatenated, _ := history.LooksConcatenated(lay.rec.Reader(opts.Name, history.Options{}))
		res.Hint = analyzer.RecorderHint(lay, pairs, concatenated)
	}
	return res, nil
}

// decideExactly decides by the exact search a history the graph method
// left undecided (ue), if it is small enough (exact.Fallback): nil, nil
// when it is not, or when that search runs out of its budget too. The
// search reads the events the graph method read.
func (l *layout) decideExactly(ctx context.Context, opts Options, ue *analyzer.UndecidedError, events history.Source) (*Result, error) {
	if ue.Operations > exact.FallbackOps {
		return nil, nil
	}
	r, done, err := events()
	if err != nil {
		return nil, nil
	}
	h, err := history.ReadEvents(r)
	done()
	if err != nil {
		return nil, nil
	}
	res, tried, err := exact.Fallback(ctx, h, exact.Options{Mode: opts.Mode})
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case !tried || err != nil:
		return nil, nil
	}
	var witness []int
	if !res.Linearizable {
		if witness, err = shrink.ExactWitness(ctx, h, res.Failing, shrink.WitnessOptions{Mode: opts.Mode}); err != nil {
			return nil, err
		}
	}
	v := report.ExactVerdict(h, opts.Mode, res, witness)
	v.GraphUndecided = ue.Msg
	out := &Result{Linearizable: res.Linearizable, Mode: opts.Mode, Engine: report.EngineExact, name: opts.Name, v: v, lay: l}
	for _, line := range v.Witness {
		out.Witness = append(out.Witness, l.op(line))
	}
	return out, nil
}

// Line is the line of operation op's invocation in WriteHistory's text:
// for those who print the text, and the line the HTML report's timelines
// name.
func (r *Result) Line(op int) int64 { return r.lay.invLine[op] }

// WriteHistory writes the history as it was checked, in text format v1
// (History.WriteTo), or version 2 for a history of objects: rendered now,
// from the events checked (Check renders no text).
func (r *Result) WriteHistory(w io.Writer) error {
	text, err := r.lay.text()
	if err != nil {
		return err
	}
	_, err = w.Write(text)
	return err
}

// WriteReport writes the verdict for a person: pmlin check's text report,
// naming operations and crashes by index, then the hint if there is one.
// An exact verdict on a history of words names them by the line of
// WriteHistory's text, as pmlin check would.
func (r *Result) WriteReport(w io.Writer) error {
	if r.ov != nil {
		return r.ov.Text(w, r.lay)
	}
	if r.a == nil {
		return report.ExactText(w, r.name, r.v)
	}
	if err := report.Text(w, r.name, r.a.Result, r.lay); err != nil {
		return err
	}
	if r.Hint != "" {
		_, err := fmt.Fprintf(w, "\nhint: %s\n", r.Hint)
		return err
	}
	return nil
}

// WriteHTML writes pmlin check --report's self-contained HTML report: for
// a history of objects, each object's verdict, explanation and timeline.
// An exact verdict on a history of words has none: it has no graph to
// draw.
func (r *Result) WriteHTML(ctx context.Context, w io.Writer) error {
	if r.ov != nil {
		return r.ov.HTML(w)
	}
	if r.a == nil {
		return errors.New("pmlin: the exact search decided this history: there is no graph to report")
	}
	d, err := report.Collect(ctx, r.a, r.name, r.lay.rec.Source(r.name, history.Options{}), report.Options{})
	if err != nil {
		return err
	}
	return report.HTML(w, d)
}

// WriteTo writes h in text format v1, the events Check reads as pmlin
// check would read them: steps merged by timestamp (package doc), each
// invocation line ending with "# op I" and each crash line with
// "# crash K"; a history of objects in version 2. An error is an *Error.
func (h History) WriteTo(w io.Writer) (int64, error) {
	var l *layout
	var err error
	if h.Objects != nil {
		_, l, _, err = layObjects(h, "history")
	} else {
		l, err = lay(h)
	}
	if err != nil {
		return 0, err
	}
	text, err := l.text()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(text)
	return int64(n), err
}

// anomaly names an analyzer anomaly's operations by index.
func (l *layout) anomaly(an analyzer.Anomaly) Anomaly {
	out := Anomaly{Kind: string(an.Kind), Words: an.Words, Explanation: an.Explanation}
	for _, line := range an.Ops {
		out.Ops = append(out.Ops, l.op(line))
	}
	for _, e := range an.Edges {
		out.Edges = append(out.Edges, Edge{From: l.op(e.From), To: l.op(e.To), Kind: string(e.Kind), Word: e.Word, Reason: e.Reason})
	}
	return out
}

// op is the operation invoked at line, -1 for line 0 (the initial state).
func (l *layout) op(line int64) int {
	if i, ok := l.at(line); ok && !i.ret && i.op >= 0 {
		return i.op
	}
	return -1
}

// blame turns an error of the reader or the analyzer, which names a line
// of the text, into an *Error naming the operation or crash of that line.
func (l *layout) blame(err error) error {
	var he *history.Error
	var ae *analyzer.AssumptionError
	var ue *analyzer.UndecidedError
	var line int64
	msg := err.Error()
	switch {
	case errors.As(err, &he):
		line, msg = he.Line, he.Msg
	case errors.As(err, &ae):
		line, msg = ae.Line, fmt.Sprintf("breaks Assumption %d: %s", ae.Assumption, ae.Msg)
	case errors.As(err, &ue):
		line, msg = ue.Line, "undecided: "+ue.Msg
	default:
		return err // ctx's
	}
	e := &Error{Op: -1, Crash: -1, Msg: msg, Err: err}
	if at, ok := l.at(line); ok {
		e.Op, e.Crash = at.op, at.crash
		if at.ret {
			e.Msg = "its response: " + msg
		}
	}
	return e
}

// opError is an *Error of operation i, of one of history's kinds.
func opError(i int, kind error, format string, args ...any) error {
	return &Error{Op: i, Crash: -1, Err: kind, Msg: fmt.Sprintf(format, args...)}
}

// kindKnown reports whether k is a kind of operation of the format (the
// history package names it).
func kindKnown(k Kind) bool { return !strings.HasPrefix(k.String(), "OpKind(") }
