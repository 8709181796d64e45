package history

import (
	"bytes"
	"io"
	"slices"

	"github.com/pmlin/pmlin/internal/wire"
)

// Recording is a history kept in memory as the calls that wrote it, for a
// producer and a consumer in one process (pmlin fuzz records and checks a
// history per run): Reader hands its events to the analyzer with the same
// checks and line numbers as the text, without writing the text and
// parsing it back, and WriteTo writes the text, byte for byte what a
// Writer given the same calls writes, only when it is wanted (a finding).
//
// The calls are kept as the records of a binary history's serial block
// (docs/history-format.md, "The binary history"; package internal/wire): a
// head word (record kind, k, process id) then the payload, one record a
// line, the header's lines and comments as text records; but the record
// of a response without values (ok, fail) has k 0, where the file's
// repeats its invocation's k: the calls do not give it, and keeping every
// process's would cost each invocation a look-up. A Reset keeps the memory
// for the next history.
type Recording struct {
	words []uint64
	text  bool // TextLine was called: a line that may hold anything
}

// record appends the head of a record of kind, k and process p, and
// returns its payload to fill.
func (rc *Recording) record(kind, k int, p int32) []uint64 {
	rc.words = append(rc.words, wire.SerialHead(kind, k, p))
	n, w := len(rc.words), wire.RecWords(kind, k)
	rc.words = slices.Grow(rc.words, w)[:n+w]
	return rc.words[n:]
}

// recordOf appends a record of kind, k and process p with payload pay.
func (rc *Recording) recordOf(kind, k int, p int32, pay []uint64) {
	rc.words = append(append(rc.words, wire.SerialHead(kind, k, p)), pay...)
}

// Reset empties the recording, keeping its memory.
func (rc *Recording) Reset() {
	rc.words, rc.text = rc.words[:0], false
}

// Size is about the size of the history in text, in bytes (a hint).
func (rc *Recording) Size() int64 { return int64(len(rc.words))*10 + 1 }

func (rc *Recording) Header(initDefault uint64, init map[uint64]uint64) {
	for _, l := range headerLines(initDefault, init) {
		rc.textRecord(l)
	}
}

func (rc *Recording) Comment(text string) { rc.textRecord([]byte("# " + text)) }

// TextLine keeps line (a comment, a blank line, a header, init or
// recording line). Only a line that may hold an event turns Steps off:
// NextStep hands over the events of records alone.
func (rc *Recording) TextLine(line []byte) {
	rc.text = rc.text || !holdsNoEvent(line)
	rc.textRecord(line)
}

// textRecord keeps line as a text record.
func (rc *Recording) textRecord(line []byte) {
	packText(rc.record(wire.RecText, len(line), 0), line)
}

func (rc *Recording) Crash() { rc.recordOf(wire.RecCrash, 0, 0, nil) }

func (rc *Recording) InvokeRead(p int32, addrs []uint64) {
	rc.recordOf(wire.RecInvRead, len(addrs), p, addrs)
}

func (rc *Recording) InvokeCAS(p int32, addrs, expected, new []uint64) {
	pay := rc.record(wire.RecInvCAS, len(addrs), p)
	for i, a := range addrs {
		pay[3*i], pay[3*i+1], pay[3*i+2] = a, expected[i], new[i]
	}
}

func (rc *Recording) InvokeSwap(p int32, addrs, new []uint64) {
	pay := rc.record(wire.RecInvSwap, len(addrs), p)
	for i, a := range addrs {
		pay[2*i], pay[2*i+1] = a, new[i]
	}
}

// InvokeCASTriples is InvokeCAS of an invocation given as its (address,
// expected, new) triples, as the Recording keeps them: a producer that
// holds them so (internal/record's logs) need not split them for InvokeCAS to
// interleave them again.
func (rc *Recording) InvokeCASTriples(p int32, triples []uint64) {
	rc.recordOf(wire.RecInvCAS, len(triples)/3, p, triples)
}

// InvokeSwapPairs is InvokeSwap of an invocation given as its (address,
// new) pairs (see InvokeCASTriples).
func (rc *Recording) InvokeSwapPairs(p int32, pairs []uint64) {
	rc.recordOf(wire.RecInvSwap, len(pairs)/2, p, pairs)
}

func (rc *Recording) ReturnRead(p int32, values []uint64) {
	rc.recordOf(wire.RecRetValues, len(values), p, values)
}

func (rc *Recording) ReturnOK(p int32) { rc.recordOf(wire.RecRetOK, 0, p, nil) }

func (rc *Recording) ReturnFail(p int32, addr uint64) {
	rc.words = append(rc.words, wire.SerialHead(wire.RecRetFail, 0, p), addr)
}

func (rc *Recording) ReturnFailValues(p int32, addr uint64, values []uint64) {
	rc.words = append(append(rc.words, wire.SerialHead(wire.RecRetFailValues, len(values), p), addr), values...)
}

// Flush is a no-op: a recording has no error to report.
func (rc *Recording) Flush() error { return nil }

// WriteTo writes the history in text format v1, as a Writer given the
// same calls would have.
func (rc *Recording) WriteTo(out io.Writer) (int64, error) {
	w := NewWriter(out)
	var addrs, exp, nw []uint64
	for pos := 0; pos < len(rc.words); {
		kind, k, p, next := rc.at(pos)
		pay := rc.words[pos+1 : next]
		pos = next
		switch kind {
		case wire.RecText:
			w.TextLine(textBytes(pay, k))
		case wire.RecCrash:
			w.Crash()
		case wire.RecInvRead:
			w.InvokeRead(p, pay)
		case wire.RecInvCAS, wire.RecInvSwap:
			addrs, exp, nw = splitWords(pay, kind == wire.RecInvCAS, addrs[:0], exp[:0], nw[:0])
			if kind == wire.RecInvCAS {
				w.InvokeCAS(p, addrs, exp, nw)
			} else {
				w.InvokeSwap(p, addrs, nw)
			}
		case wire.RecRetValues:
			w.ReturnRead(p, pay)
		case wire.RecRetOK:
			w.ReturnOK(p)
		case wire.RecRetFail:
			w.ReturnFail(p, pay[0])
		case wire.RecRetFailValues:
			w.ReturnFailValues(p, pay[0], pay[1:])
		case wire.RecInvOp, wire.RecRetOp:
			writeOp(w, kind, p, pay) // version 2 (v2rec.go)
		}
	}
	err := w.Flush()
	return w.Written(), err
}

// at decodes the record at pos: its kind, k and process, and where the
// next record begins.
func (rc *Recording) at(pos int) (kind, k int, p int32, next int) {
	h := rc.words[pos]
	kind, k = wire.SerialKind(h), wire.SerialK(h)
	return kind, k, int32(uint32(wire.SerialProc(h))), pos + 1 + wire.RecWords(kind, k)
}

// splitWords sets addrs, exp (a cas) and nw, reusing their memory, to
// the addresses, expected values and new values of an invocation's
// payload. Written by index into slices sized once: an append per word
// showed in the checks of pmlin fuzz, which reads every invocation so.
func splitWords(pay []uint64, cas bool, addrs, exp, nw []uint64) ([]uint64, []uint64, []uint64) {
	if cas {
		k := len(pay) / 3
		addrs, exp, nw = fit(addrs, k), fit(exp, k), fit(nw, k)
		for j := range k {
			t := pay[3*j : 3*j+3 : 3*j+3]
			addrs[j], exp[j], nw[j] = t[0], t[1], t[2]
		}
		return addrs, exp, nw
	}
	k := len(pay) / 2
	addrs, nw = fit(addrs, k), fit(nw, k)
	for j := range k {
		t := pay[2*j : 2*j+2 : 2*j+2]
		addrs[j], nw[j] = t[0], t[1]
	}
	return addrs, exp[:0], nw
}

// fit is s resized to k items, reusing its memory if it has room (its
// contents are not kept).
func fit(s []uint64, k int) []uint64 {
	if cap(s) < k {
		return make([]uint64, k, max(k, 8))
	}
	return s[:k]
}

// setWords is dst, reusing its memory, holding the words of src: a loop,
// where copy would call memmove for the one to three words of most
// operations.
func setWords(dst, src []uint64) []uint64 {
	dst = fit(dst, len(src))
	for j, v := range src {
		dst[j] = v
	}
	return dst
}

// Reader returns a Reader of the recorded history: its events, line
// numbers, checks and errors are those of a Reader of the text WriteTo
// writes (name is used in errors). The recording must not change while it
// is read.
func (rc *Recording) Reader(name string, opts Options) *Reader {
	r := NewReader(bytes.NewReader(nil), name, opts) // no text: the smallest buffer
	r.rec, r.format, r.steps = rc, Text, !rc.text
	return r
}

// Source is the Source of the recorded history (Reader's).
func (rc *Recording) Source(name string, opts Options) Source {
	return func() (*Reader, func() error, error) {
		return rc.Reader(name, opts), func() error { return nil }, nil
	}
}

// nextRecorded is Next for a Reader of a Recording.
func (r *Reader) nextRecorded() (*Event, error) {
	rc := r.rec
	for r.recPos < len(rc.words) {
		kind, p, n, pay := r.nextRecord()
		ev, err := r.recordedEvent(kind, p, n, pay)
		if err != nil {
			return nil, err
		}
		if ev != nil {
			if r.closed != 0 {
				return nil, r.afterClosing()
			}
			r.events++
			return ev, nil
		}
	}
	return r.end()
}

// nextRecord takes the recording's next record (one line): its kind,
// process, k and payload (a slice of the recording's words, which must
// not be appended to). Small enough to be inlined.
func (r *Reader) nextRecord() (kind int, p int32, k int, pay []uint64) {
	kind, k, p, next := r.rec.at(r.recPos)
	pay = r.rec.words[r.recPos+1 : next]
	r.recPos = next
	r.line++
	return kind, p, k, pay
}

// isEvent reports whether a record of kind is an invocation or a
// response (the kinds below a crash's).
func isEvent(kind int) bool { return kind < wire.RecCrash }

// recordedEvent takes one recorded line: an event, or nil (a comment, the
// header).
func (r *Reader) recordedEvent(kind int, p int32, k int, pay []uint64) (*Event, error) {
	if isEvent(kind) && p >= 0 {
		// An invocation or a response: nearly every record.
		return r.serialEvent(p, kind, k, pay, -1)
	}
	switch kind {
	case wire.RecText:
		// As the text's line is read (the general path).
		r.raw = appendText(r.raw[:0], pay, k)
		line, err := r.content(r.raw)
		if err != nil || len(line) == 0 {
			return nil, err
		}
		return r.parseText(line)
	case wire.RecCrash:
		return r.crashEvent(), nil
	}
	// Not a process id: the text's error, from the text.
	return r.parseText(r.recordedLine(kind, p, pay))
}

// recordedLine renders a recorded event as the text's line (r.raw, for
// the columns of errors): the rare malformed record is parsed as its text
// is, so that its error is the text's.
func (r *Reader) recordedLine(kind int, p int32, pay []uint64) []byte {
	b := r.raw[:0]
	switch kind {
	case wire.RecCrash:
		b = append(b, "crash"...)
	case wire.RecInvRead:
		b = appendInvokeRead(b, p, pay)
	case wire.RecInvCAS, wire.RecInvSwap:
		addrs, exp, nw := splitWords(pay, kind == wire.RecInvCAS, nil, nil, nil)
		if kind == wire.RecInvCAS {
			b = appendInvokeCAS(b, p, addrs, exp, nw)
		} else {
			b = appendInvokeSwap(b, p, addrs, nw)
		}
	case wire.RecRetValues:
		b = appendReturnRead(b, p, pay)
	case wire.RecRetOK:
		b = appendProc(b, p, " ret ok")
	default:
		b = appendReturnFail(b, p, pay[0], pay[1:])
	}
	r.raw = b
	return b
}
