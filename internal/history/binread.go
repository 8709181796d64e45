package history

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/pmlin/pmlin/internal/tie"
	"github.com/pmlin/pmlin/internal/wire"
)

// binReader decodes a binary history (internal/wire) for a Reader: it reads
// the blocks in order, checks each as it comes (so that errors come in
// file order, naming the byte offset), and merges the streams of a
// section by timestamp. Each event it hands to the Reader's own checks
// (invoke, respond, crashEvent), the ones the text syntax goes through, so
// a binary history is held to the same rules.
//
// Memory: the blocks of a section read ahead of its slowest stream (a
// recorder that dumps its streams evenly, as the driver does, keeps that
// to a few blocks per stream).
type binReader struct {
	r   *Reader
	off int64 // byte offset of the next unread byte
	v1  bool  // a version 1 file: a stream record's timestamp is a word of its own

	serial    []uint64 // payload of the serial block being read
	spos      int
	serialOff int64 // its byte offset

	sec     *binSection
	lastSec *binSection // the section before, for errors
	pending *binBlock   // a block read after a section, kept until it drains
	sawEnd  bool        // the last block read was an end block
	free    [][]uint64
	hdr     [16]byte
}

type binBlock struct {
	typ, flags int
	field      uint32
	payload    []uint64
	off        int64 // byte offset of its header
}

type binSection struct {
	streams []binStream
	waiting int       // streams whose last block has not come
	merge   tie.Merge // of its streams; timestamps restart in every section
}

type binStream struct {
	proc   int32
	blocks [][]uint64
	offs   []int64 // byte offset of each queued block's payload
	pos    int     // next record in blocks[0]
	last   bool    // its last block has come
	ts     uint64  // its latest timestamp read
}

// binFail is an error of the binary structure at byte offset off (no line
// is to blame: the events there are not merged yet).
func (r *Reader) binFail(off int64, format string, args ...any) error {
	r.err = &Error{File: r.name, Err: ErrSyntax, Msg: fmt.Sprintf(format, args...) + fmt.Sprintf(" (binary history, byte offset %d, after line %d)", off, r.line)}
	return r.err
}

// sniffBinary sets the Reader up for a binary history if the input starts
// with its magic.
func (r *Reader) sniffBinary() (bool, error) {
	head, _ := r.br.Peek(len(wire.Magic))
	if len(head) < 6 || !bytes.HasPrefix(head, []byte(wire.Magic[:6])) {
		return false, nil
	}
	// The one place the version is told apart: what differs is the stream
	// records' head (streamHead).
	v1 := string(head) == wire.MagicV1
	if string(head) != wire.Magic && !v1 {
		return true, r.binFail(0, "a binary history of another version (%q); this pmlin reads %q and %q", head[6:], wire.MagicV1[6:], wire.Magic[6:])
	}
	r.br.Discard(len(wire.Magic))
	r.format = Binary
	r.bin = &binReader{r: r, off: int64(len(wire.Magic)), v1: v1}
	return true, nil
}

// readBlock reads the next block, checking its structure. At the end of
// the input it returns nil and io.EOF if the last block was an end block.
func (b *binReader) readBlock() (*binBlock, error) {
	r := b.r
	off := b.off
	n, err := io.ReadFull(r.br, b.hdr[:])
	b.off += int64(n)
	switch {
	case err == io.EOF && b.sawEnd:
		return nil, io.EOF
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, r.binFail(b.off, "the file ends before its end block: it was cut short (its recorder stopped before finishing it), and its streams may end at different times, so no order of its events can be trusted")
	case err != nil:
		return nil, &Error{File: r.name, Err: err, Msg: "read error: " + err.Error()}
	}
	h := binary.LittleEndian.Uint64(b.hdr[:8])
	length := binary.LittleEndian.Uint64(b.hdr[8:])
	blk := &binBlock{typ: int(h & 0xff), flags: int(h & 0xffff00), field: uint32(h >> 32), off: off}
	switch {
	case blk.typ < wire.BlockSerial || blk.typ > wire.BlockEnd:
		return nil, r.binFail(off, "unknown block type %d", blk.typ)
	case blk.flags&^wire.BlockLast != 0 || blk.flags != 0 && blk.typ != wire.BlockStream:
		return nil, r.binFail(off, "block flags %#x are not defined for a block of type %d", blk.flags>>8, blk.typ)
	case blk.field != 0 && blk.typ != wire.BlockStream:
		return nil, r.binFail(off, "bits 32-63 of the header of a block of type %d must be zero", blk.typ)
	case length > wire.MaxBlockWords:
		return nil, r.binFail(off, "a block of %d words: at most %d are accepted", length, wire.MaxBlockWords)
	case blk.typ == wire.BlockEnd && length != 1:
		return nil, r.binFail(off, "an end block holds one word, not %d", length)
	}
	if blk.payload, err = b.readWords(int(length)); err != nil {
		return nil, err
	}
	b.sawEnd = blk.typ == wire.BlockEnd
	return blk, nil
}

// readWords reads n words, growing the buffer as they arrive (a header
// that claims a huge block does not allocate it before the bytes are
// there).
func (b *binReader) readWords(n int) ([]uint64, error) {
	var buf []uint64
	if m := len(b.free); m > 0 && cap(b.free[m-1]) >= n {
		buf, b.free = b.free[m-1][:0], b.free[:m-1]
	}
	const step = 1 << 17
	for len(buf) < n {
		m := min(n-len(buf), step)
		buf = slices.Grow(buf, m)[:len(buf)+m]
		got, err := io.ReadFull(b.r.br, byteView(buf[len(buf)-m:]))
		b.off += int64(got)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, b.r.binFail(b.off, "the file ends inside a block: it was cut short")
		}
		if err != nil {
			return nil, &Error{File: b.r.name, Err: err, Msg: "read error: " + err.Error()}
		}
	}
	if !littleEndian {
		for i, v := range buf {
			var x [8]byte
			binary.NativeEndian.PutUint64(x[:], v)
			buf[i] = binary.LittleEndian.Uint64(x[:])
		}
	}
	return buf, nil
}

// byteView is the memory of words as bytes (to read into).
func byteView(words []uint64) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8*len(words))
}

// streamHead decodes the head of the stream record at p[pos]: its kind,
// k and timestamp, and its words before the payload (version 2: one, see
// StreamHead; version 1: a header word, kind in bits 0-7 and k in bits
// 8-31, then a timestamp word). The record must have those words.
func (b *binReader) streamHead(p []uint64, pos int) (kind, k int, ts uint64, head int) {
	h := p[pos]
	if b.v1 {
		return wire.SerialKind(h), wire.SerialK(h), p[pos+1], 2
	}
	return wire.StreamKind(h), wire.StreamK(h), wire.StreamStamp(h), 1
}

// checkRecords checks that a block's payload is whole records of kinds
// the block may hold, each with a k and reserved bits in range; a
// stream's timestamps must not decrease (from *ts on).
func (b *binReader) checkRecords(p []uint64, off int64, stream bool, ts *uint64) error {
	r := b.r
	head := 1
	if stream && b.v1 {
		head = 2
	}
	for pos := 0; pos < len(p); {
		at := off + 8*int64(pos)
		if pos+head > len(p) {
			return r.binFail(at, "a record is cut short by the end of its block")
		}
		h := p[pos]
		kind, k, hi := wire.SerialKind(h), wire.SerialK(h), wire.SerialProc(h)
		var t uint64 // a stream record's timestamp
		if stream {
			kind, k, t, _ = b.streamHead(p, pos)
			if !b.v1 {
				hi = 0 // no reserved bits
			}
		}
		switch {
		case kind < wire.RecInvRead || kind > wire.MaxRecKind || stream && kind > wire.RecRetFailValues:
			return r.binFail(at, "unknown record kind %d", kind)
		case kind == wire.RecCrash && (k != 0 || hi != 0):
			return r.binFail(at, "a crash record has k %d and bits 32-63 %#x; both must be zero", k, hi)
		case kind == wire.RecText && hi != 0:
			return r.binFail(at, "bits 32-63 of a text record must be zero")
		case kind == wire.RecText && k > r.opts.MaxLineBytes:
			return r.binFail(at, "a text line of %d bytes; at most %d are accepted", k, r.opts.MaxLineBytes)
		case kind < wire.RecCrash && (k < 1 || k > r.opts.MaxWords):
			return r.binFail(at, "a record of %d words; from 1 to %d are accepted", k, r.opts.MaxWords)
		case kind < wire.RecCrash && stream && hi != 0:
			return r.binFail(at, "bits 32-63 of a stream record must be zero")
		case kind < wire.RecCrash && hi > MaxProc:
			return r.binFail(at, "process id %d is over %d", hi, MaxProc)
		}
		n := head + wire.RecWords(kind, k)
		if pos+n > len(p) {
			return r.binFail(at, "a record is cut short by the end of its block")
		}
		if stream {
			if t < *ts {
				return r.binFail(at, "the stream goes back in time (timestamp %d after %d)", t, *ts)
			}
			*ts = t
		}
		if kind == wire.RecText {
			if err := b.checkText(p[pos+1:pos+n], k, at); err != nil {
				return err
			}
		}
		pos += n
	}
	return nil
}

// checkText checks a text record's bytes: no line break, valid UTF-8, and
// zero padding.
func (b *binReader) checkText(words []uint64, k int, at int64) error {
	line := textBytes(words, k)
	if bytes.ContainsAny(line, "\n\r") {
		return b.r.binFail(at, "a text record holds a line break")
	}
	if !utf8.Valid(line) {
		return b.r.binFail(at, "a text record is not valid UTF-8")
	}
	if k%8 != 0 && words[len(words)-1]>>(8*(k%8)) != 0 {
		return b.r.binFail(at, "the padding of a text record is not zero")
	}
	return nil
}

// textBytes is the text of a text record of k bytes.
func textBytes(words []uint64, k int) []byte { return appendText(make([]byte, 0, k), words, k) }

// appendText appends the text of a text record of k bytes to b: its
// words in little-endian order, the padding cut.
func appendText(b []byte, words []uint64, k int) []byte {
	n := len(b)
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b[:n+k]
}

// recycle keeps a consumed block's buffer for the next blocks.
func (b *binReader) recycle(p []uint64) {
	if len(b.free) < 64 {
		b.free = append(b.free, p)
	}
}

// nextBinary is Reader.Next for a binary history.
func (r *Reader) nextBinary() (*Event, error) {
	ev, err := r.bin.next()
	if err != nil {
		if err != io.EOF {
			if r.err == nil {
				r.err = err
			}
			return nil, r.err
		}
		return r.end()
	}
	if r.closed != 0 {
		return nil, r.afterClosing()
	}
	r.events++
	return ev, nil
}

// next returns the next event of a binary history.
func (b *binReader) next() (*Event, error) {
	for {
		switch {
		case b.sec != nil:
			ev, done, err := b.nextMerged()
			if err != nil || !done {
				return ev, err
			}
			b.sec, b.lastSec = nil, b.sec
		case b.spos < len(b.serial):
			ev, err := b.nextSerial()
			if ev != nil || err != nil {
				return ev, err
			}
		default:
			blk := b.pending
			b.pending = nil
			if blk == nil {
				var err error
				if blk, err = b.readBlock(); err != nil {
					return nil, err
				}
			}
			if err := b.startBlock(blk); err != nil {
				return nil, err
			}
		}
	}
}

// startBlock takes up a block read outside a section.
func (b *binReader) startBlock(blk *binBlock) error {
	r := b.r
	switch blk.typ {
	case wire.BlockSerial:
		b.lastSec = nil
		if err := b.checkRecords(blk.payload, blk.off+16, false, nil); err != nil {
			return err
		}
		b.serial, b.spos, b.serialOff = blk.payload, 0, blk.off+16
	case wire.BlockSection:
		b.lastSec = nil
		sec := &binSection{streams: make([]binStream, len(blk.payload)), waiting: len(blk.payload)}
		sec.merge.Reset(len(blk.payload))
		seen := make(map[uint64]bool, len(blk.payload))
		for i, p := range blk.payload {
			if p > MaxProc {
				return r.binFail(blk.off+16+8*int64(i), "process id %d is over %d", p, MaxProc)
			}
			if seen[p] {
				return r.binFail(blk.off+16+8*int64(i), "process %d has two streams in one section", p)
			}
			seen[p] = true
			sec.streams[i].proc = int32(p)
		}
		b.sec = sec
	case wire.BlockStream:
		if s := b.lastSec; s != nil && int(blk.field) < len(s.streams) {
			return r.binFail(blk.off, "a block of the stream of process %d after its last block", s.streams[blk.field].proc)
		}
		return r.binFail(blk.off, "a stream block outside a section")
	case wire.BlockEnd:
		if got := blk.payload[0]; got != uint64(r.line) {
			return r.binFail(blk.off, "the end block counts %d lines, the blocks before it hold %d: blocks are missing or repeated", got, r.line)
		}
	}
	return nil
}

// nextMerged returns the next event of the open section; done when the
// section has none left. The streams are merged by the tie rule of
// recorders/README.md (rule 4: package internal/tie), which looks at a
// response's next record too: a stream whose head is a response waits
// for that record (or its last block), and the merge reads blocks while a
// stream waits.
func (b *binReader) nextMerged() (ev *Event, done bool, err error) {
	sec := b.sec
	for {
		i, hd, st := sec.merge.Next()
		switch st {
		case tie.End:
			return nil, true, nil
		case tie.Wait:
			if err := b.readInSection(); err != nil {
				return nil, false, err
			}
			continue
		}
		s := &sec.streams[i]
		if c, clash := sec.merge.Place(i, b.r.line+1); clash {
			b.r.line++
			return nil, false, b.r.fail(ErrCoarseClock, nil, "%s", tie.Message(s.proc, hd.TS, sec.streams[c.Stream].proc, fmt.Sprintf("its response at line %d", c.At)))
		}
		ev, err := b.takeStream(s)
		b.setHead(i)
		return ev, false, err
	}
}

// setHead tells the section's merge the head of stream i (head): a step,
// the end of the stream, or that it waits for a block.
func (b *binReader) setHead(i int) {
	s := &b.sec.streams[i]
	hd, ok := b.head(s)
	switch {
	case ok:
		b.sec.merge.Set(i, hd)
	case s.last:
		b.sec.merge.Done(i)
	default:
		b.sec.merge.Wait(i)
	}
}

// head is the head record of stream s as the tie rule sees it; not ok
// when s has no record queued, or its head is a response and the record
// after it has not been read (nor the stream's last block).
func (b *binReader) head(s *binStream) (tie.Head, bool) {
	if len(s.blocks) == 0 {
		return tie.Head{}, false
	}
	p := s.blocks[0]
	kind, k, ts, head := b.streamHead(p, s.pos)
	hd := tie.Head{TS: ts, Ret: !wire.IsInvocation(kind)}
	if !hd.Ret {
		return hd, true
	}
	next, np := s.pos+head+wire.RecWords(kind, k), p
	if next == len(p) {
		if len(s.blocks) == 1 {
			return hd, s.last // the last record, or the next is unread
		}
		next, np = 0, s.blocks[1] // queued blocks are not empty
	}
	nkind, _, nts, _ := b.streamHead(np, next)
	hd.Again = wire.IsInvocation(nkind) && nts == ts
	return hd, true
}

// readInSection reads the next block while a section waits for its
// streams: a stream block is queued; any other block ends the section
// (every stream is then complete) and is kept for after it.
func (b *binReader) readInSection() error {
	r, sec := b.r, b.sec
	blk, err := b.readBlock()
	if err == io.EOF {
		return r.binFail(b.off, "the file ends inside a section")
	}
	if err != nil {
		return err
	}
	if blk.typ != wire.BlockStream {
		for i := range sec.streams {
			sec.streams[i].last = true
			b.setHead(i)
		}
		sec.waiting = 0
		b.pending = blk
		return nil
	}
	i := int(blk.field)
	if i >= len(sec.streams) {
		return r.binFail(blk.off, "a block of stream %d in a section of %d streams", i, len(sec.streams))
	}
	s := &sec.streams[i]
	if s.last {
		return r.binFail(blk.off, "a block of the stream of process %d after its last block", s.proc)
	}
	if err := b.checkRecords(blk.payload, blk.off+16, true, &s.ts); err != nil {
		return err
	}
	if blk.flags&wire.BlockLast != 0 {
		s.last = true
		sec.waiting--
	}
	if len(blk.payload) > 0 {
		s.blocks = append(s.blocks, blk.payload)
		s.offs = append(s.offs, blk.off+16)
	} else {
		b.recycle(blk.payload)
	}
	b.setHead(i)
	return nil
}

// takeStream decodes the head record of stream s (a stream record) into
// an event.
func (b *binReader) takeStream(s *binStream) (*Event, error) {
	p := s.blocks[0]
	kind, k, _, head := b.streamHead(p, s.pos)
	n := head + wire.RecWords(kind, k)
	ev, err := b.event(s.proc, kind, k, p[s.pos+head:s.pos+n], s.offs[0]+8*int64(s.pos))
	s.pos += n
	if s.pos == len(p) {
		b.recycle(p)
		s.blocks, s.offs, s.pos = s.blocks[1:], s.offs[1:], 0
	}
	return ev, err
}

// nextSerial decodes the next record of the serial block: an event, or
// nil for a text line that holds none.
func (b *binReader) nextSerial() (*Event, error) {
	p := b.serial[b.spos:]
	at := b.serialOff + 8*int64(b.spos)
	h := p[0]
	kind, k, proc := wire.SerialKind(h), wire.SerialK(h), int32(wire.SerialProc(h))
	n := 1 + wire.RecWords(kind, k)
	b.spos += n
	if b.spos == len(b.serial) {
		b.recycle(b.serial)
		b.serial, b.spos = nil, 0
	}
	switch kind {
	case wire.RecCrash:
		b.r.line++
		b.r.raw = nil
		return b.r.crashEvent(), nil
	case wire.RecText:
		return nil, b.textLine(textBytes(p[1:n], k), at)
	}
	return b.event(proc, kind, k, p[1:n], at)
}

// textLine takes up a line kept as text: the header, an init line, a
// comment or a blank line (never an event: their order is the blocks').
func (b *binReader) textLine(line []byte, at int64) error {
	r := b.r
	r.line++
	r.raw = line
	c, err := r.content(line)
	if err != nil {
		return err
	}
	if len(c) > 0 {
		word := c
		if i := bytes.IndexAny(c, " \t"); i >= 0 {
			word = c[:i]
		}
		if !isDirective(word) {
			return r.fail(ErrSyntax, nil, "a text record holds %q: only the header, init and recording lines, comments and blank lines are kept as text in a binary history (byte offset %d)", clip(c), at)
		}
		if _, err := r.parseText(c); err != nil {
			return err
		}
	}
	r.nonEvent(line)
	return nil
}

// event decodes an event record of process proc (payload p, at byte
// offset at) into r.cur.Event and has the Reader check and record it.
func (b *binReader) event(proc int32, kind, k int, p []uint64, at int64) (*Event, error) {
	b.r.line++
	b.r.raw = nil
	return b.r.serialEvent(proc, kind, k, p, at)
}

// serialEvent decodes an event record of a serial block or a stream (its
// kind, process proc, k and payload p) into r.cur.Event and has the Reader
// check and record it: the one decoder of a record, a binary file's and a
// Recording's. at is the record's byte offset in the file, for errors, or
// -1 for a Recording, whose errors are its text's; a Recording's responses
// without values have k 0, not their invocation's, so their k is not
// checked.
func (r *Reader) serialEvent(proc int32, kind, k int, p []uint64, at int64) (*Event, error) {
	ev := r.clearEvent()
	if wire.IsInvocation(kind) {
		ev.Op = recordOps[kind&15]
		if kind == wire.RecInvRead {
			ev.Addrs = setWords(ev.Addrs, p)
		} else {
			ev.Addrs, ev.Expected, ev.New = splitWords(p, kind == wire.RecInvCAS, ev.Addrs, ev.Expected, ev.New)
		}
		return r.invoke(proc)
	}
	idx, ps, err := r.pendingFor(proc)
	if err != nil {
		return nil, err
	}
	if at >= 0 && k != len(ps.addrs) {
		return nil, r.fail(ErrIllFormed, nil, "process %d: the response to the %s of line %d is a record of %d words, the operation has %d (byte offset %d)", proc, ps.op, ps.invLine, k, len(ps.addrs), at)
	}
	var resp response
	switch kind {
	case wire.RecRetValues:
		resp.kind = retValues
		ev.Values = setWords(ev.Values, p)
	case wire.RecRetOK:
		resp.kind = retOK
	default:
		resp = response{kind: retFail, failAddr: p[0]}
		ev.Values = setWords(ev.Values, p[1:])
	}
	if (ps.op == CAS) == (resp.kind == retValues) {
		if at < 0 {
			// The text's error, from the text.
			return r.parseText(r.recordedLine(kind, proc, p))
		}
		what := "values"
		if resp.kind != retValues {
			what = "a cas's outcome"
		}
		return nil, r.fail(ErrIllFormed, nil, "process %d: the response to the %s of line %d is %s (byte offset %d)", proc, ps.op, ps.invLine, what, at)
	}
	return r.respond(idx, ps, resp)
}
