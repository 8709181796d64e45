package analyzer

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pmlin/pmlin/internal/history"
)

// Kind names an anomaly, as in docs/cli-contract.md.
type Kind string

const (
	// Cycle: property (i) is broken; the order constraints contradict.
	Cycle Kind = "cycle"
	// Dangling: property (ii); a read returned, or a successful cas expected,
	// a value that nothing wrote at that word.
	Dangling Kind = "dangling"
	// UnexplainedFailure: property (ii); a failed cas blamed a word whose
	// expected value no successful cas ever overwrote.
	UnexplainedFailure Kind = "unexplained-failure"
	// Fork: property (iii); two successful cas replaced the same value at
	// the same word.
	Fork Kind = "fork"
	// UnreachableWrite: property (iii); a successful cas is off its word's
	// reads-from path from the initial state.
	UnreachableWrite Kind = "unreachable-write"
)

// EdgeKind is the reason for an edge of the precedence multigraph.
type EdgeKind string

const (
	HappensBefore EdgeKind = "hb"
	ReadsFrom     EdgeKind = "rf"
	Auxiliary     EdgeKind = "aux"
	// Recovery is the edge from a crashed cas completed under the
	// recoverable rule to its process's next operation.
	Recovery EdgeKind = "recovery"
)

// Edge is one edge of an explanation, as data: what makes it (Kind and
// Rule), what it is about (Word, Value) and the lines that justify it;
// Reason says it in a sentence, rendered from those fields (render.go).
// Operations are named by the line of their invocation; 0 is the genesis
// vertex (the initial state).
type Edge struct {
	From int64    `json:"from"`
	To   int64    `json:"to"`
	Kind EdgeKind `json:"kind"`
	// Rule is the rule of the method that makes the edge (see Rule).
	Rule Rule `json:"rule"`
	// Word and Value: the address of a reads-from or auxiliary edge and
	// the value it is about (read, expected, or replaced there); the other
	// kinds have none.
	Word  uint64 `json:"word"`
	Value uint64 `json:"value"`
	// RetLine is the line of From's response (a happens-before edge).
	RetLine int64 `json:"ret_line,omitempty"`
	// CrashLine is the crash that cut From off (a happens-before edge
	// from a cut-off cas in strict mode, a recovery edge).
	CrashLine int64 `json:"crash_line,omitempty"`
	// ObservedBy is, for an edge from a cut-off cas, an operation that
	// observed one of its values: why it took effect (0 when it was
	// completed to explain a failure instead).
	ObservedBy int64 `json:"observed_by,omitempty"`
	// Skipped are, for a recovery edge, From's process's operations cut
	// off in between, which left the history and passed the edge on.
	Skipped []CutOff `json:"skipped,omitempty"`
	Reason  string   `json:"reason"`
}

// CutOff is an operation cut off by a crash: both by line.
type CutOff struct {
	Op    int64 `json:"op"`
	Crash int64 `json:"crash"`
}

// hasWord reports whether the edge is about one word: reads-from and
// auxiliary edges are; happens-before and recovery edges are not.
func (e Edge) hasWord() bool { return e.Kind == ReadsFrom || e.Kind == Auxiliary }

// edgeJSON is Edge as JSON, in the fields' order: "word" and "value" are
// present exactly when the edge has them, so that address 0 and value 0
// are not mistaken for none.
type edgeJSON struct {
	From       int64    `json:"from"`
	To         int64    `json:"to"`
	Kind       EdgeKind `json:"kind"`
	Rule       Rule     `json:"rule"`
	Word       *uint64  `json:"word,omitempty"`
	Value      *uint64  `json:"value,omitempty"`
	RetLine    int64    `json:"ret_line,omitempty"`
	CrashLine  int64    `json:"crash_line,omitempty"`
	ObservedBy int64    `json:"observed_by,omitempty"`
	Skipped    []CutOff `json:"skipped,omitempty"`
	Reason     string   `json:"reason"`
}

// MarshalJSON writes "word" and "value" for every edge that has them, 0
// included, and for no other. (The default decoding reads it back.)
func (e Edge) MarshalJSON() ([]byte, error) {
	j := edgeJSON{From: e.From, To: e.To, Kind: e.Kind, Rule: e.Rule, RetLine: e.RetLine, CrashLine: e.CrashLine,
		ObservedBy: e.ObservedBy, Skipped: e.Skipped, Reason: e.Reason}
	if e.hasWord() {
		j.Word, j.Value = &e.Word, &e.Value
	}
	return json.Marshal(j)
}

// Anomaly is one broken property, with the operations and words involved.
type Anomaly struct {
	Kind Kind `json:"kind"`
	// Ops are the operations involved, named by the line of their
	// invocation; for a cycle, in cycle order.
	Ops []int64 `json:"ops"`
	// OriginalOps are, for a history cut from another (a shrunk one, see
	// Options.Origin), the lines Ops had there, parallel to Ops (0: not
	// known).
	OriginalOps []int64  `json:"original_ops,omitempty"`
	Words       []uint64 `json:"words"`
	// Crashes are the crash lines the anomaly's evidence involves: a crash
	// that cut one of its operations off, or that falls between them.
	Crashes []int64 `json:"crashes,omitempty"`
	// Explanation says the whole anomaly in sentences a person can follow:
	// Summary, the cycle's edges, the evidence and the staleness.
	Explanation string `json:"explanation"`
	// Summary is its first sentence: what is broken.
	Summary string `json:"summary,omitempty"`
	// Edges justify a cycle, edge by edge; for the other kinds they are the
	// reads-from edges the explanation mentions.
	Edges []Edge `json:"edges,omitempty"`
	// Evidence are the facts of the history that tell how it came about,
	// earliest first: the crash story (operations cut off and how they
	// were completed, what a read after the crash found) and other direct
	// evidence (see Evidence).
	Evidence []Evidence `json:"evidence,omitempty"`
	// Staleness lists, for the reads (and successful cas) of the anomaly
	// that observed an outdated value, how far behind it was (see
	// Staleness).
	Staleness []Staleness `json:"staleness,omitempty"`
	// Root is, for an anomaly that an earlier one implies (it involves an
	// operation the earlier one holds at fault: see implies in roots.go),
	// the index of its root in the same list; nil for a root. The first
	// anomaly is always a root, and a root comes before those it implies.
	Root *int `json:"root,omitempty"`
}

// EdgeCounts counts the edges of the multigraph by kind.
type EdgeCounts struct {
	HappensBefore int64 `json:"hb"`
	ReadsFrom     int64 `json:"rf"`
	Auxiliary     int64 `json:"aux"`
	Recovery      int64 `json:"recovery"`
}

// Total is the number of edges.
func (c EdgeCounts) Total() int64 {
	return c.HappensBefore + c.ReadsFrom + c.Auxiliary + c.Recovery
}

// Result is the verdict on a history. Its JSON form is pmlin check --json's
// verdict (docs/cli-contract.md).
type Result struct {
	Linearizable bool
	Mode         history.Mode
	Operations   int64
	Stats
	// Anomalies lists what is broken (at most Options.MaxAnomalies of
	// each kind); Omitted counts those left out of the list.
	Anomalies []Anomaly
	Omitted   int64
}

// Stats are the figures of a check besides the verdict: the history's
// size and the graph's.
type Stats struct {
	Processes int   `json:"processes"`
	Crashes   int64 `json:"crashes"`
	Words     int   `json:"words"`
	// Vertices are the operations kept in the graph plus genesis.
	Vertices int64      `json:"vertices"`
	Edges    EdgeCounts `json:"edges"`
	// Pending operations cut off by a crash or by the end: Dropped were
	// left out, Completed were taken to have succeeded.
	Dropped   int64 `json:"dropped"`
	Completed int64 `json:"completed"`
}

// AssumptionError reports an input the method cannot decide: it breaks
// Assumption 1 or 2 of the OPODIS paper (docs/history-format.md) in a way
// that matters for the verdict.
type AssumptionError struct {
	File       string
	Line       int64
	Assumption int
	Msg        string
}

func (e *AssumptionError) Error() string {
	return fmt.Sprintf("%s:%d: breaks Assumption %d: %s", e.File, e.Line, e.Assumption, e.Msg)
}

// Is makes errors.Is(err, ErrAssumption) true of every *AssumptionError.
func (e *AssumptionError) Is(target error) bool { return target == ErrAssumption }

// ErrAssumption and ErrUndecided are the kinds of *AssumptionError and
// *UndecidedError, for errors.Is where the type is not at hand (package
// pmlin's callers).
var (
	ErrAssumption = errors.New("breaks an assumption of the method")
	ErrUndecided  = errors.New("undecided")
)

// UndecidedError reports that deciding the history needs more completions
// of crashed operations to be tried than the budget allows.
type UndecidedError struct {
	File string
	Line int64
	Msg  string
	// Operations are the history's (it was read whole): a small one is
	// decided by the exact search instead (pmlin check, pmlin.Check).
	Operations int64
}

func (e *UndecidedError) Error() string {
	return fmt.Sprintf("%s:%d: undecided: %s", e.File, e.Line, e.Msg)
}

// Is makes errors.Is(err, ErrUndecided) true of every *UndecidedError.
func (e *UndecidedError) Is(target error) bool { return target == ErrUndecided }
