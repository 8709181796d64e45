package analyzer

import (
	"encoding/json"
	"fmt"

	"github.com/pmlin/pmlin/history"
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

// Edge is one edge of an explanation. Operations are named by the line of
// their invocation; 0 is the genesis vertex (the initial state).
type Edge struct {
	From int64
	To   int64
	Kind EdgeKind
	// Word is the address of a reads-from or auxiliary edge; the other
	// kinds have none.
	Word   uint64
	Reason string
}

// hasWord reports whether the edge is about one word: reads-from and
// auxiliary edges are; happens-before and recovery edges are not.
func (e Edge) hasWord() bool { return e.Kind == ReadsFrom || e.Kind == Auxiliary }

// edgeJSON is Edge as JSON: "word" is present exactly when the edge has
// one, so that address 0 is not mistaken for no address.
type edgeJSON struct {
	From   int64    `json:"from"`
	To     int64    `json:"to"`
	Kind   EdgeKind `json:"kind"`
	Word   *uint64  `json:"word,omitempty"`
	Reason string   `json:"reason"`
}

// MarshalJSON writes "word" for every edge that has one, 0 included. (The
// default decoding reads it back: Edge's fields match the keys.)
func (e Edge) MarshalJSON() ([]byte, error) {
	j := edgeJSON{From: e.From, To: e.To, Kind: e.Kind, Reason: e.Reason}
	if e.hasWord() {
		j.Word = &e.Word
	}
	return json.Marshal(j)
}

// Anomaly is one broken property, with the operations and words involved.
type Anomaly struct {
	Kind Kind `json:"kind"`
	// Ops are the operations involved, named by the line of their
	// invocation; for a cycle, in cycle order.
	Ops   []int64  `json:"ops"`
	Words []uint64 `json:"words"`
	// Explanation is a sentence a person can follow.
	Explanation string `json:"explanation"`
	// Edges justify a cycle, edge by edge; for the other kinds they are the
	// reads-from edges the explanation mentions.
	Edges []Edge `json:"edges,omitempty"`
	// Staleness lists, for the reads (and successful cas) of the anomaly
	// that observed an outdated value, how far behind it was (see
	// Staleness).
	Staleness []Staleness `json:"staleness,omitempty"`
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

// Result is the verdict on a history. Its JSON form is report.Verdict's.
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

// UndecidedError reports that deciding the history needs more completions
// of crashed operations to be tried than the budget allows.
type UndecidedError struct {
	File string
	Line int64
	Msg  string
}

func (e *UndecidedError) Error() string {
	return fmt.Sprintf("%s:%d: undecided: %s", e.File, e.Line, e.Msg)
}
