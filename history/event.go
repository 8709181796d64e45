// Package history reads and writes pmlin histories: the text format v1 of
// docs/history-format.md and its JSON Lines twin.
//
// A history is the real-time record of a run of a multi-word synchronization
// primitive: invocations and responses of multi-word reads (MwR) and
// multi-word compare-and-swaps (MwCAS), and full-system crashes. It is the
// input of the linearizability analysis of Cepeda et al., "Toward
// Linearizability Testing for Multi-Word Persistent Synchronization
// Primitives" (OPODIS 2019), Section 3 (model) and Section 4 (assumptions).
//
// The Reader streams: it holds one line and one pending operation per
// process, never the whole file, so histories larger than memory can be
// analysed. It enforces every well-formedness rule of the format and names
// the file and line of the first violation. ReadAll builds an in-memory
// History for small histories (tests, the exact checker, shrinking).
package history

import "fmt"

// EventKind says what a line of a history records.
type EventKind uint8

const (
	// Invoke is the invocation of an operation ("<p> inv ...").
	Invoke EventKind = iota + 1
	// Return is the response of a process's pending operation ("<p> ret ...").
	Return
	// Crash is a full-system crash followed by recovery ("crash").
	Crash
)

func (k EventKind) String() string {
	switch k {
	case Invoke:
		return "inv"
	case Return:
		return "ret"
	case Crash:
		return "crash"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// OpKind is the kind of an operation.
type OpKind uint8

const (
	// Read is a multi-word read (MwR).
	Read OpKind = iota + 1
	// CAS is a multi-word compare-and-swap (MwCAS).
	CAS
)

func (k OpKind) String() string {
	switch k {
	case Read:
		return "read"
	case CAS:
		return "cas"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Event is one decoded event of a history. The Reader reuses an Event's
// slices between calls to Next: copy what must outlive the next call.
type Event struct {
	Kind EventKind
	// Line is the 1-based line number of the event in its file.
	Line int64
	// Proc is the process id as written in the file; ProcIndex is a dense
	// index (0, 1, 2, ...) the Reader assigns to process ids in order of
	// first appearance, so consumers can keep per-process state in a slice.
	Proc      int32
	ProcIndex int32
	// Op is the kind of the operation invoked (Invoke) or completed (Return).
	Op OpKind
	// Addrs are the operation's addresses, in the invocation's order. On a
	// Return they are the addresses of the invocation it completes.
	Addrs []uint64
	// Expected and New are a CAS invocation's expected and new values,
	// parallel to Addrs. Empty for a read.
	Expected []uint64
	New      []uint64
	// Values are a read's returned values, parallel to Addrs (Return only).
	Values []uint64
	// OK reports whether a CAS succeeded (Return of a CAS only); when it did
	// not, FailAddr is the address it blamed, one of Addrs.
	OK       bool
	FailAddr uint64
	// InvLine is, on a Return, the line of the matching invocation: the
	// operation's identity in every report.
	InvLine int64
}

// Error is a malformed-input error that names its place.
type Error struct {
	File string
	Line int64
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}
