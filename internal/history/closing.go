package history

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// A recording that says whether it is complete (docs/history-format.md,
// "Recordings that say whether they are complete"): its header promises a
// closing line,
//
//	recording <M> operations
//
// and its last line (but comments and blank lines) is that closing line:
//
//	end                                     it is complete
//	interrupted after <N> of <M> operations its recorder was stopped early
//
// A file with the promise but no closing line was cut short (a recorder
// killed, a pipe broken); one that ends in the middle of a line (no line
// break) too. A history without the promise keeps the meaning it always
// had. The Reader reads a recording cut short to its end, then says so
// (Cut, and Next's error at the end unless Options.Prefix).

// The directives' words.
var (
	tokRecording   = []byte("recording")
	tokEnd         = []byte("end")
	tokInterrupted = []byte("interrupted")
	tokOperations  = []byte("operations")
	tokAfter       = []byte("after")
	tokOf          = []byte("of")
)

// RecordingLine is the directive of a header that promises a closing line
// (EndLine or InterruptedLine), for a recording of planned operations.
func RecordingLine(planned uint64) string {
	return "recording " + strconv.FormatUint(planned, 10) + " operations"
}

// EndLine is the closing line of a complete recording.
const EndLine = "end"

// InterruptedLine is the closing line of a recording stopped after done
// of its planned operations.
func InterruptedLine(done, planned uint64) string {
	return fmt.Sprintf("interrupted after %d of %d operations", done, planned)
}

// holdsNoEvent reports whether a text line is blank, a comment, or one of
// the directives that are not events (the header, init, the recording
// directives): a Recording's TextLine of such a line leaves its events to
// the fast path (Steps).
func holdsNoEvent(line []byte) bool {
	line = bytes.TrimLeft(line, " \t")
	if len(line) == 0 || line[0] == '#' {
		return true
	}
	word := line
	if i := bytes.IndexAny(line, " \t#"); i >= 0 {
		word = line[:i]
	}
	return isDirective(word)
}

// isDirective reports whether word starts a text line that holds no event
// but is not a comment.
func isDirective(word []byte) bool {
	for _, d := range [][]byte{tokMagic, tokInit, tokRecording, tokEnd, tokInterrupted} {
		if bytes.Equal(word, d) {
			return true
		}
	}
	return false
}

// parseRecordingText parses the text directives "recording M operations",
// "end" and "interrupted after N of M operations" (f: the line's fields,
// f[0] one of those words).
func (r *Reader) parseRecordingText(f [][]byte) error {
	isWord := func(i int, w []byte) bool { return i < len(f) && bytes.Equal(f[i], w) }
	switch {
	case bytes.Equal(f[0], tokRecording):
		if len(f) != 3 || !isWord(2, tokOperations) {
			return r.fail(ErrSyntax, nil, "the recording line is %q", "recording <M> operations")
		}
		m, err := r.number(f[1], "number of operations")
		if err != nil {
			return err
		}
		return r.promiseClosing(m)
	case bytes.Equal(f[0], tokEnd):
		if len(f) != 1 {
			return r.fail(ErrSyntax, nil, "the closing line is just %q", "end")
		}
		return r.closeRecording(false, 0, 0)
	}
	if len(f) != 6 || !isWord(1, tokAfter) || !isWord(3, tokOf) || !isWord(5, tokOperations) {
		return r.fail(ErrSyntax, nil, "the closing line of an interrupted recording is %q", "interrupted after <N> of <M> operations")
	}
	n, err := r.number(f[2], "number of operations")
	if err != nil {
		return err
	}
	m, err := r.number(f[4], "number of operations")
	if err != nil {
		return err
	}
	return r.closeRecording(true, n, m)
}

// parseRecordingJSON parses the JSON Lines twins of the directives:
// {"recording":M}, {"end":true}, {"interrupted":N,"of":M}.
func (r *Reader) parseRecordingJSON(j *jsonLine) error {
	if j.Of != nil && j.Interrupted == nil {
		return r.fail(ErrSyntax, nil, `"of" belongs to an {"interrupted":N,"of":M} line`)
	}
	switch {
	case j.Recording != nil:
		m, err := r.jsonNumber(j.Recording, "number of operations")
		if err != nil {
			return err
		}
		return r.promiseClosing(m)
	case j.End != nil:
		if !*j.End {
			return r.fail(ErrSyntax, nil, `the closing line is {"end":true}`)
		}
		return r.closeRecording(false, 0, 0)
	}
	if j.Of == nil {
		return r.fail(ErrSyntax, nil, `the closing line of an interrupted recording is {"interrupted":N,"of":M}`)
	}
	n, err := r.jsonNumber(j.Interrupted, "number of operations")
	if err != nil {
		return err
	}
	m, err := r.jsonNumber(j.Of, "number of operations")
	if err != nil {
		return err
	}
	return r.closeRecording(true, n, m)
}

// recording reports whether a JSON line is one of the directives.
func (j *jsonLine) recording() bool {
	return j.Recording != nil || j.End != nil || j.Interrupted != nil || j.Of != nil
}

// promiseClosing takes up "recording M operations": a directive of the
// header, given once.
func (r *Reader) promiseClosing(planned uint64) error {
	switch {
	case r.started:
		return r.fail(ErrIllFormed, nil, "a recording line after the first event: it belongs to the header, before any operation")
	case r.promise != 0:
		return r.fail(ErrIllFormed, nil, "the recording line is given twice (first at line %d)", r.promise)
	}
	r.promise, r.planned = r.line, planned
	return nil
}

// closeRecording takes up a closing line: "end" (interrupted false), or
// "interrupted after done of planned operations". Nothing but comments
// and blank lines may follow it: the general path (noFast) sees every
// later line and refuses it (afterClosing).
func (r *Reader) closeRecording(interrupted bool, done, planned uint64) error {
	r.started = true
	r.closed, r.interrupted, r.done, r.stopPlanned = r.line, interrupted, done, planned
	r.noFast = true
	return nil
}

// afterClosing is the error of a line that holds more than a comment
// after the closing line.
func (r *Reader) afterClosing() error {
	word := "end"
	if r.interrupted {
		word = "interrupted"
	}
	return r.fail(ErrIllFormed, nil, "the recording ended at line %d (%q): nothing but comments and blank lines may follow", r.closed, word)
}

// closingText is the text line of the directive the Reader has just taken
// up (a JSON Lines object converted to text), or nil if it took up none.
func (r *Reader) closingText() []byte {
	switch {
	case r.promise == r.line:
		return []byte(RecordingLine(r.planned))
	case r.closed == r.line && r.interrupted:
		return []byte(InterruptedLine(r.done, r.stopPlanned))
	case r.closed == r.line:
		return []byte(EndLine)
	}
	return nil
}

// end is Next at the end of the input: io.EOF, or the error of a
// recording cut short (Cut), unless Options.Prefix.
func (r *Reader) end() (*Event, error) {
	r.started, r.ended = true, true
	if err := r.Cut(); err != nil && !r.opts.Prefix {
		r.err = err
		return nil, err
	}
	return nil, io.EOF
}

// Cut says, once Next has returned io.EOF (or this error), whether the
// history is a recording cut short: an *Error of kind ErrCutShort that
// names the line of the "interrupted" line ("the recording was
// interrupted after N of M operations"), the line the file ends in the
// middle of, or the last line of a recording that promised a closing line
// and has none. It is nil for a complete recording, for a history that
// makes no promise (it means what it always meant), and before the end.
// With Options.Prefix, Next ends with io.EOF for such a recording too,
// the history read being its prefix: a caller decides the prefix and then
// reports Cut.
func (r *Reader) Cut() error {
	if !r.ended {
		return nil
	}
	_, ops, _ := r.counts()
	switch {
	case r.closed != 0 && r.interrupted:
		return &Error{File: r.name, Line: r.closed, Err: ErrCutShort,
			Msg: fmt.Sprintf("the recording was interrupted after %d of %d operations", r.done, r.stopPlanned)}
	case r.promise == 0 || r.closed != 0:
		return nil
	case r.midLine != 0:
		return &Error{File: r.name, Line: r.midLine, Err: ErrCutShort,
			Msg: fmt.Sprintf("the file ends in the middle of this line (it has no line break): the recording was cut short (%d operations before it, of the %d it planned)", ops, r.planned)}
	}
	return &Error{File: r.name, Line: r.line, Err: ErrCutShort,
		Msg: fmt.Sprintf("the recording ends without its closing line (promised at line %d): it was cut short (%d operations, of the %d it planned)", r.promise, ops, r.planned)}
}
