// Package history reads and writes pmlin histories: the text format v1 of
// docs/history-format.md and its JSON Lines twin.
//
// A history is the real-time record of a run of a multi-word synchronization
// primitive: invocations and responses of multi-word reads (MwR),
// multi-word compare-and-swaps (MwCAS) and multi-word swaps (MwSwap, the
// paper's second codebase), and full-system crashes. It is the input of
// the linearizability analysis of Cepeda et al., "Toward Linearizability
// Testing for Multi-Word Persistent Synchronization Primitives" (OPODIS
// 2019), Section 3 (model) and Section 4 (assumptions).
//
// The Reader streams: it holds one line and one pending operation per
// process, never the whole file, so histories larger than memory can be
// analysed. It enforces every well-formedness rule of the format and names
// the file and line of the first violation. ReadAll builds an in-memory
// History for small histories (tests, the exact checker, shrinking). A
// Recording keeps a history in memory as the Writer's calls, for a
// producer and a consumer in one process (pmlin fuzz): its Reader gives
// the text's events, lines and errors without the text, as Events (Next)
// or, without their copies, as Steps (NextStep).
//
// Version 2 of the format (objects of any data type, generic operations,
// responses whose outcome is unknown; docs/history-format.md, "Version 2")
// is read whole by ReadV2, in text or JSON Lines, into a model.History,
// the in-memory form the checker for any model takes; WriteV2 writes one
// back and ConvertV2 converts between the two syntaxes line for line.
// Version tells a version 2 history from the rest by its header.
package history

import (
	"errors"
	"fmt"
)

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
	// Swap is a multi-word unconditional swap (MwSwap): it writes every
	// new value and returns the values it replaced.
	Swap
)

func (k OpKind) String() string {
	switch k {
	case Read:
		return "read"
	case CAS:
		return "cas"
	case Swap:
		return "swap"
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
	// Expected are a CAS's expected values, parallel to Addrs: on its
	// invocation and again on its response (so that a consumer can compare
	// them with the values a failure reports). Empty for a read or a swap.
	Expected []uint64
	// New are the new values of a CAS or a swap invocation, parallel to
	// Addrs. Empty for a read, and on every Return.
	New []uint64
	// Values (Return only), parallel to Addrs: the values a read
	// returned, the values a swap replaced, or the values a failed CAS
	// reports having read ("ret fail <a> <v1> ... <vk>"). Empty for a CAS
	// that succeeded or that failed without reporting values.
	Values []uint64
	// OK reports whether a CAS succeeded (Return of a CAS only); when it did
	// not, FailAddr is the address it blamed, one of Addrs. A swap always
	// succeeds: OK is true on its Return.
	OK       bool
	FailAddr uint64
	// InvLine is, on a Return, the line of the matching invocation: the
	// operation's identity in every report.
	InvLine int64
	// OpID is the operation's dense id (Invoke and Return): 0, 1, 2, ...
	// in invocation order, so consumers can keep per-operation state in a
	// slice and find a response's operation without tracking pending
	// operations themselves. -1 on a Crash.
	OpID int64
	// Interrupted are, on a Crash, the ids of the operations it cut off
	// (pending at the crash: they never get a response), in the order of
	// their processes' indexes.
	Interrupted []int64
}

// The kinds of input error, for errors.Is on an *Error (its Err). All
// but ErrCoarseClock wrap ErrMalformed. An *Error whose Err is none of them wraps the
// I/O error that stopped the Reader.
var (
	// ErrMalformed is any input the Reader rejects.
	ErrMalformed = errors.New("malformed history")
	// ErrSyntax: a line is not a header, directive or event of the
	// format (an unknown word, a bad number, a broken JSON object).
	ErrSyntax = fmt.Errorf("%w: syntax error", ErrMalformed)
	// ErrIllFormed: the lines parse but break a well-formedness rule of
	// docs/history-format.md (a response without a pending invocation, a
	// response that does not match its invocation, an address twice in
	// one operation, initial values after the first event, ...).
	ErrIllFormed = fmt.Errorf("%w: ill-formed", ErrMalformed)
	// ErrLimit: the input exceeds a limit of this implementation (line
	// length, words per operation, number of lines or operations).
	ErrLimit = fmt.Errorf("%w: over a limit", ErrMalformed)
	// ErrCoarseClock: a merge by timestamp met two processes that each
	// respond and invoke again at one timestamp, which no order of lines
	// can state without inventing which operation came first
	// (recorders/README.md, rule 4). The steps are well-formed: it is not
	// an ErrMalformed but a broken assumption, that the clock tells the
	// processes' steps apart.
	ErrCoarseClock = errors.New("the clock is too coarse for this history")
	// ErrCutShort: a recording that promised its closing line (a
	// "recording" line) was interrupted, or ends without it, or in the
	// middle of a line (Reader.Cut).
	ErrCutShort = fmt.Errorf("%w: cut short", ErrMalformed)
)

// Error is an input error that names its place, in the manner of
// encoding/csv's ParseError: Err says what kind of error it is (one of
// the kinds above, or the I/O error that stopped the Reader), Msg says it
// to a person.
type Error struct {
	File string
	// Line is the 1-based line, 0 when no line is to blame.
	Line int64
	// Column is the 1-based byte column of the offending token, 0 when
	// not known (JSON Lines, or a rule about the whole line).
	Column int
	Err    error
	Msg    string
}

// Error renders "file:line:column: msg", leaving out what is unknown.
func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Unwrap returns the kind, so that errors.Is(err, ErrSyntax) and the like
// work through wrapping.
func (e *Error) Unwrap() error { return e.Err }
