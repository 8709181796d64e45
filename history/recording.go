package history

import (
	"bytes"
	"io"
	"maps"
	"slices"
)

// Recording is a history kept in memory as the calls that wrote it, for a
// producer and a consumer in one process (pmlin fuzz records and checks a
// history per run): Reader hands its events to the analyzer with the same
// checks and line numbers as the text, without writing the text and
// parsing it back, and WriteTo writes the text, byte for byte what a
// Writer given the same calls writes, only when it is wanted (a finding).
//
// The calls are kept as records in one array of words: a head (record
// kind, process id, count of words or values) then the payload. A Reset
// keeps the memory for the next history.
type Recording struct {
	words    []uint64
	comments []string
	headers  []header
	text     bool // TextLine was called: a line that may hold anything
}

// header is what a Header call was given.
type header struct {
	initDefault uint64
	init        map[uint64]uint64
}

// The records' kinds.
const (
	rHeader = iota + 1
	rComment
	rText // a line as it is (TextLine)
	rCrash
	rInvRead  // payload: k addresses
	rInvCAS   // k (address, expected, new)
	rInvSwap  // k (address, new)
	rRetRead  // k values
	rRetOK    // nothing
	rRetFail  // the blamed address, then the values if any (count n)
	rRetFailV // (as rRetFail)
)

// record appends a record's head: kind, process p and count n.
func (rc *Recording) record(kind int, p int32, n int) {
	rc.words = append(rc.words, uint64(kind)|uint64(uint32(p))<<8|uint64(n)<<40)
}

// payload is the number of words a record of kind and count n carries:
// per kind, words per item and words besides (a table: the reader asks it
// of every record).
func payload(kind, n int) int {
	return int(payloadPer[kind&15])*n + int(payloadFixed[kind&15])
}

var (
	payloadPer   = [16]uint8{rInvRead: 1, rRetRead: 1, rInvCAS: 3, rInvSwap: 2, rRetFail: 1, rRetFailV: 1}
	payloadFixed = [16]uint8{rRetFail: 1, rRetFailV: 1}
)

// Reset empties the recording, keeping its memory.
func (rc *Recording) Reset() {
	rc.words, rc.comments, rc.headers = rc.words[:0], rc.comments[:0], rc.headers[:0]
	rc.text = false
}

// Size is about the size of the history in text, in bytes (a hint).
func (rc *Recording) Size() int64 { return int64(len(rc.words))*10 + 1 }

func (rc *Recording) Header(initDefault uint64, init map[uint64]uint64) {
	rc.record(rHeader, 0, len(rc.headers))
	rc.headers = append(rc.headers, header{initDefault, maps.Clone(init)})
}

func (rc *Recording) Comment(text string) {
	rc.record(rComment, 0, len(rc.comments))
	rc.comments = append(rc.comments, text)
}

// TextLine keeps line (a comment, a blank line, a header, init or
// recording line). Only a line that may hold an event turns Steps off:
// NextStep hands over the events of records alone.
func (rc *Recording) TextLine(line []byte) {
	rc.text = rc.text || !holdsNoEvent(line)
	rc.record(rText, 0, len(rc.comments))
	rc.comments = append(rc.comments, string(line))
}

func (rc *Recording) Crash() { rc.record(rCrash, 0, 0) }

func (rc *Recording) InvokeRead(p int32, addrs []uint64) {
	rc.record(rInvRead, p, len(addrs))
	rc.words = append(rc.words, addrs...)
}

func (rc *Recording) InvokeCAS(p int32, addrs, expected, new []uint64) {
	rc.record(rInvCAS, p, len(addrs))
	for i, a := range addrs {
		rc.words = append(rc.words, a, expected[i], new[i])
	}
}

func (rc *Recording) InvokeSwap(p int32, addrs, new []uint64) {
	rc.record(rInvSwap, p, len(addrs))
	for i, a := range addrs {
		rc.words = append(rc.words, a, new[i])
	}
}

// InvokeCASTriples is InvokeCAS of an invocation given as its (address,
// expected, new) triples, as the Recording keeps them: a producer that
// holds them so (the driver's logs) need not split them for InvokeCAS to
// interleave them again.
func (rc *Recording) InvokeCASTriples(p int32, triples []uint64) {
	rc.record(rInvCAS, p, len(triples)/3)
	rc.words = append(rc.words, triples...)
}

// InvokeSwapPairs is InvokeSwap of an invocation given as its (address,
// new) pairs (see InvokeCASTriples).
func (rc *Recording) InvokeSwapPairs(p int32, pairs []uint64) {
	rc.record(rInvSwap, p, len(pairs)/2)
	rc.words = append(rc.words, pairs...)
}

func (rc *Recording) ReturnRead(p int32, values []uint64) {
	rc.record(rRetRead, p, len(values))
	rc.words = append(rc.words, values...)
}

func (rc *Recording) ReturnOK(p int32) { rc.record(rRetOK, p, 0) }

func (rc *Recording) ReturnFail(p int32, addr uint64) {
	rc.record(rRetFail, p, 0)
	rc.words = append(rc.words, addr)
}

func (rc *Recording) ReturnFailValues(p int32, addr uint64, values []uint64) {
	rc.record(rRetFailV, p, len(values))
	rc.words = append(rc.words, addr)
	rc.words = append(rc.words, values...)
}

// Flush is a no-op: a recording has no error to report.
func (rc *Recording) Flush() error { return nil }

// WriteTo writes the history in text format v1, as a Writer given the
// same calls would have.
func (rc *Recording) WriteTo(out io.Writer) (int64, error) {
	w := NewWriter(out)
	var addrs, exp, nw []uint64
	for pos := 0; pos < len(rc.words); {
		kind, p, n := rc.head(pos)
		pay := rc.words[pos+1 : pos+1+payload(kind, n)]
		pos += 1 + len(pay)
		switch kind {
		case rHeader:
			w.Header(rc.headers[n].initDefault, rc.headers[n].init)
		case rComment:
			w.Comment(rc.comments[n])
		case rText:
			w.TextLine([]byte(rc.comments[n]))
		case rCrash:
			w.Crash()
		case rInvRead:
			w.InvokeRead(p, pay)
		case rInvCAS, rInvSwap:
			addrs, exp, nw = splitWords(pay, kind == rInvCAS, addrs[:0], exp[:0], nw[:0])
			if kind == rInvCAS {
				w.InvokeCAS(p, addrs, exp, nw)
			} else {
				w.InvokeSwap(p, addrs, nw)
			}
		case rRetRead:
			w.ReturnRead(p, pay)
		case rRetOK:
			w.ReturnOK(p)
		case rRetFail:
			w.ReturnFail(p, pay[0])
		case rRetFailV:
			w.ReturnFailValues(p, pay[0], pay[1:])
		}
	}
	err := w.Flush()
	return w.Written(), err
}

// head decodes the head of the record at pos.
func (rc *Recording) head(pos int) (kind int, p int32, n int) {
	h := rc.words[pos]
	return int(h & 0xff), int32(uint32(h >> 8)), int(h >> 40)
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
// process, count and payload (a slice of the recording's words, which
// must not be appended to). Small enough to be inlined.
func (r *Reader) nextRecord() (kind int, p int32, n int, pay []uint64) {
	kind, p, n = r.rec.head(r.recPos)
	pos := r.recPos + 1
	r.recPos = pos + payload(kind, n)
	r.line++
	return kind, p, n, r.rec.words[pos:r.recPos]
}

// recordedEvent takes one recorded line: an event, or nil (a comment, the
// header).
func (r *Reader) recordedEvent(kind int, p int32, n int, pay []uint64) (*Event, error) {
	if kind > rCrash && p >= 0 {
		// An invocation or a response: nearly every record.
		if kind <= rInvSwap {
			ev := r.clearEvent()
			ev.Op = recordOps[kind&15]
			if kind == rInvRead {
				ev.Addrs = setWords(ev.Addrs, pay)
			} else {
				ev.Addrs, ev.Expected, ev.New = splitWords(pay, kind == rInvCAS, ev.Addrs, ev.Expected, ev.New)
			}
			return r.invoke(p)
		}
		return r.recordedReturn(kind, p, pay)
	}
	rc := r.rec
	switch {
	case kind == rComment:
		return nil, nil
	case kind == rText:
		// As the text's line is read (the general path).
		r.raw = append(r.raw[:0], rc.comments[n]...)
		line, err := r.content(r.raw)
		if err != nil || len(line) == 0 {
			return nil, err
		}
		return r.parseText(line)
	case kind == rHeader:
		return nil, r.recordedHeader(rc.headers[n])
	case kind == rCrash:
		return r.crashEvent(), nil
	}
	// Not a process id: the text's error, from the text.
	return r.parseText(r.recordedLine(kind, p, pay))
}

// recordedHeader takes a header's lines: the magic line (read), the
// default initial value's and the initial words' lines, eight a line.
func (r *Reader) recordedHeader(h header) error {
	if err := r.header("v1"); err != nil {
		return err
	}
	if h.initDefault != 0 {
		r.line++
		if err := r.setInitDefault(h.initDefault); err != nil {
			return err
		}
	}
	for i, a := range slices.Sorted(maps.Keys(h.init)) {
		if i%8 == 0 {
			r.line++
		}
		if err := r.setInitWord(a, h.init[a]); err != nil {
			return err
		}
	}
	return nil
}

// recordedReturn is a recorded response, matched with the pending
// operation as the text's would be.
func (r *Reader) recordedReturn(kind int, p int32, pay []uint64) (*Event, error) {
	idx, ps, err := r.pendingFor(p)
	if err != nil {
		return nil, err
	}
	ev := &r.cur.Event
	ev.Values, ev.OK, ev.FailAddr = ev.Values[:0], false, 0
	var resp response
	switch kind {
	case rRetRead:
		resp.kind = retValues
		ev.Values = setWords(ev.Values, pay)
	case rRetOK:
		resp.kind = retOK
	default:
		resp = response{kind: retFail, failAddr: pay[0]}
		ev.Values = setWords(ev.Values, pay[1:])
	}
	if (ps.op == CAS) != (resp.kind != retValues) {
		// A response of the wrong kind: the text's error, from the text.
		return r.parseText(r.recordedLine(kind, p, pay))
	}
	return r.respond(idx, ps, resp)
}

// recordedLine renders a recorded event as the text's line (r.raw, for
// the columns of errors): the rare malformed record is parsed as its text
// is, so that its error is the text's.
func (r *Reader) recordedLine(kind int, p int32, pay []uint64) []byte {
	b := r.raw[:0]
	switch kind {
	case rCrash:
		b = append(b, "crash"...)
	case rInvRead:
		b = appendInvokeRead(b, p, pay)
	case rInvCAS, rInvSwap:
		addrs, exp, nw := splitWords(pay, kind == rInvCAS, nil, nil, nil)
		if kind == rInvCAS {
			b = appendInvokeCAS(b, p, addrs, exp, nw)
		} else {
			b = appendInvokeSwap(b, p, addrs, nw)
		}
	case rRetRead:
		b = appendReturnRead(b, p, pay)
	case rRetOK:
		b = appendProc(b, p, " ret ok")
	default:
		b = appendReturnFail(b, p, pay[0], pay[1:])
	}
	r.raw = b
	return b
}
