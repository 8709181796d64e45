package history

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"unsafe"
)

// The binary history (docs/history-format.md, "Binary histories"): a pmlin
// extension for recorders that cannot afford the text, above all the
// driver, whose workers' logs go to the file as they are. It holds the
// same events as the text format; a file is little-endian 64-bit words:
// the magic word, then blocks, the last one an end block.
//
// A block is a header word (type in bits 0-7, flags in bits 8-31, a field
// in bits 32-63), a length word (the payload's words) and the payload:
//
//	serial   events in history order, each one line of the text form
//	section  opens a concurrent section; payload: its streams' process ids
//	stream   the timestamped records of one stream of the open section
//	         (field: the stream's index in the section; flag last: the
//	         stream has no more records in this section)
//	end      the history may end here; payload: its lines so far
//
// A section's events are the records of its streams merged by timestamp,
// the least first; on equal timestamps an invocation goes before a
// response, then the stream listed first. The section ends at the next
// serial, section or end block.
//
// A serial record is a header word (kind in bits 0-7, k in bits 8-31, the
// process id in bits 32-63) followed by the payload its kind and k say. A
// stream record (version 2) is one word holding the kind (bits 0-3), k
// (bits 4-11) and the timestamp (bits 12-63), then the payload: the
// driver's workers store one word per record for what took two in
// version 1 (a header, k in bits 8-31, and a timestamp word), about a
// quarter of the bytes a recording stores, copies and writes. Version 1
// files are still read (binread.go).

// BinaryMagic is the first word of a binary history, as bytes: a first
// byte that is not UTF-8 text, the name and the version. A BinaryWriter
// writes version 2.
const BinaryMagic = "\x89PMLINB2"

// binaryMagicV1 is the magic of version 1, whose stream records are a
// header word and a timestamp word.
const binaryMagicV1 = "\x89PMLINB1"

// Block types of a binary history.
const (
	BlockSerial  = 1
	BlockSection = 2
	BlockStream  = 3
	BlockEnd     = 4
)

// BlockLast is the stream block flag "the stream's last block in its
// section" (bit 8 of the header word).
const BlockLast = 1 << 8

// Record kinds of a binary history. Events are one line each.
const (
	RecInvRead        = 1 // k addresses
	RecInvCAS         = 2 // k (address, expected, new) triples
	RecRetValues      = 3 // k values: a read's or a swap's response
	RecRetOK          = 4 // nothing
	RecRetFail        = 5 // the blamed address
	RecInvSwap        = 6 // k (address, new) pairs
	RecRetFailValues  = 7 // the blamed address, then k values
	RecCrash          = 8 // serial only; k 0
	RecText           = 9 // serial only; k bytes of text, zero-padded to whole words
	maxRecKind        = RecText
	recKMask          = 1<<24 - 1
	maxBinaryBlockLen = 1 << 27 // words: a block of a gigabyte is refused
)

// RecWords is the number of payload words of a record of kind with k words
// (-1 for an unknown kind).
func RecWords(kind, k int) int {
	switch kind {
	case RecInvRead, RecRetValues:
		return k
	case RecInvCAS:
		return 3 * k
	case RecRetOK, RecCrash:
		return 0
	case RecRetFail:
		return 1
	case RecInvSwap:
		return 2 * k
	case RecRetFailValues:
		return 1 + k
	case RecText:
		return (k + 7) / 8
	}
	return -1
}

// IsInvocation reports whether a record kind is an invocation.
func IsInvocation(kind int) bool {
	return kind == RecInvRead || kind == RecInvCAS || kind == RecInvSwap
}

// RecHeader is a serial record's header word.
func RecHeader(kind, k int, proc int32) uint64 {
	return uint64(kind) | uint64(k)<<8 | uint64(uint32(proc))<<32
}

// MaxStreamK and MaxStamp are the largest k and timestamp a stream record
// holds (version 2: 8 and 52 bits).
const (
	MaxStreamK = 1<<8 - 1
	MaxStamp   = 1<<52 - 1
)

// StreamHead is the head word of a stream record of kind (a kind of the
// streams, 1 to 7), k (1 to MaxStreamK) and timestamp ts (at most
// MaxStamp). Unchecked: the driver's workers call it for every record and
// keep to those ranges themselves.
func StreamHead(kind, k int, ts uint64) uint64 {
	return uint64(kind) | uint64(k)<<4 | ts<<12
}

// StreamKind, StreamK and StreamStamp decode a stream record's head word.
func StreamKind(h uint64) int     { return int(h & 15) }
func StreamK(h uint64) int        { return int(h >> 4 & MaxStreamK) }
func StreamStamp(h uint64) uint64 { return h >> 12 }

func blockHeader(typ int, flags int, field uint32) uint64 {
	return uint64(typ) | uint64(flags) | uint64(field)<<32
}

// BinaryWriter writes a binary history. Serial events have the methods of
// Writer; a concurrent section is BeginSection, StreamBlock for each
// block, and EndSection. Like Writer it does not validate (the Reader
// does) and its errors are sticky, reported by Flush.
type BinaryWriter struct {
	out     io.Writer
	bw      *bufio.Writer
	serial  []uint64 // the open serial block's payload
	hdr     [2]uint64
	lines   int64
	n       int64
	err     error
	started bool
	section int // streams of the open section; -1 when none is open
	// pendingK is the k of each process's pending invocation, which its
	// response's record repeats.
	pendingK map[int32]int
}

// serialFlushWords is the size at which an open serial block is written.
const serialFlushWords = 1 << 15

// NewBinaryWriter returns a BinaryWriter that buffers its output.
func NewBinaryWriter(w io.Writer) *BinaryWriter {
	return &BinaryWriter{out: w, bw: bufio.NewWriterSize(w, 1<<20), section: -1, pendingK: map[int32]int{}}
}

// Lines is the number of lines of the history's text form so far.
func (w *BinaryWriter) Lines() int64 { return w.lines }

// Written is the number of bytes written so far (including buffered ones).
func (w *BinaryWriter) Written() int64 { return w.n }

func (w *BinaryWriter) write(b []byte) {
	if w.err != nil {
		return
	}
	if !w.started {
		w.started = true
		w.write([]byte(BinaryMagic))
	}
	var n int
	n, w.err = w.bw.Write(b)
	w.n += int64(n)
}

// block writes a block header and its payload. A large payload (a
// driver's chunk) goes straight to the underlying writer, not through the
// buffer: one copy less.
func (w *BinaryWriter) block(header uint64, payload []uint64) {
	w.hdr = [2]uint64{header, uint64(len(payload))}
	w.write(wordBytes(w.hdr[:]))
	if len(payload) < directWords || w.err != nil {
		w.write(wordBytes(payload))
		return
	}
	if w.err = w.bw.Flush(); w.err == nil {
		var n int
		n, w.err = w.out.Write(wordBytes(payload))
		w.n += int64(n)
	}
}

// directWords is the payload from which a block bypasses the buffer.
const directWords = 1 << 13

// flushSerial writes the open serial block, if any.
func (w *BinaryWriter) flushSerial() {
	if len(w.serial) > 0 {
		w.block(blockHeader(BlockSerial, 0, 0), w.serial)
		w.serial = w.serial[:0]
	}
}

// rec appends a serial record and counts its line; it returns the
// payload to fill.
// A full serial block is written before the next record, not after this
// one: the caller fills the payload rec returns only once rec has returned.
func (w *BinaryWriter) rec(kind, k int, proc int32) []uint64 {
	w.section = -1
	w.lines++
	if len(w.serial) >= serialFlushWords {
		w.flushSerial()
	}
	n := len(w.serial)
	w.serial = slices.Grow(w.serial, 1+RecWords(kind, k))[:n+1+RecWords(kind, k)]
	w.serial[n] = RecHeader(kind, k, proc)
	return w.serial[n+1:]
}

// Header writes the magic line and the initial values as Writer does (the
// same lines).
func (w *BinaryWriter) Header(initDefault uint64, init map[uint64]uint64) {
	for _, l := range headerLines(initDefault, init) {
		w.TextLine(l)
	}
}

// TextLine writes a line kept as text: a comment, a blank line, the header
// or an init line of the text format (no newline).
func (w *BinaryWriter) TextLine(line []byte) {
	p := w.rec(RecText, len(line), 0)
	clear(p)
	for i, c := range line {
		p[i/8] |= uint64(c) << (8 * (i % 8))
	}
}

// Comment writes "# text".
func (w *BinaryWriter) Comment(text string) { w.TextLine([]byte("# " + text)) }

// Crash writes a crash.
func (w *BinaryWriter) Crash() { w.rec(RecCrash, 0, 0) }

// InvokeRead writes a read's invocation.
func (w *BinaryWriter) InvokeRead(p int32, addrs []uint64) {
	w.pendingK[p] = len(addrs)
	copy(w.rec(RecInvRead, len(addrs), p), addrs)
}

// InvokeCAS writes a cas's invocation.
func (w *BinaryWriter) InvokeCAS(p int32, addrs, expected, new []uint64) {
	w.pendingK[p] = len(addrs)
	pay := w.rec(RecInvCAS, len(addrs), p)
	for i, a := range addrs {
		pay[3*i], pay[3*i+1], pay[3*i+2] = a, expected[i], new[i]
	}
}

// InvokeSwap writes a swap's invocation.
func (w *BinaryWriter) InvokeSwap(p int32, addrs, new []uint64) {
	w.pendingK[p] = len(addrs)
	pay := w.rec(RecInvSwap, len(addrs), p)
	for i, a := range addrs {
		pay[2*i], pay[2*i+1] = a, new[i]
	}
}

// ReturnRead writes a read's or a swap's response.
func (w *BinaryWriter) ReturnRead(p int32, values []uint64) {
	copy(w.rec(RecRetValues, len(values), p), values)
}

// ReturnOK writes a cas's success.
func (w *BinaryWriter) ReturnOK(p int32) { w.rec(RecRetOK, w.pendingK[p], p) }

// ReturnFail writes a cas's failure at addr.
func (w *BinaryWriter) ReturnFail(p int32, addr uint64) {
	w.rec(RecRetFail, w.pendingK[p], p)[0] = addr
}

// ReturnFailValues writes the failure of a cas at addr that reports the
// values it read.
func (w *BinaryWriter) ReturnFailValues(p int32, addr uint64, values []uint64) {
	pay := w.rec(RecRetFailValues, len(values), p)
	pay[0] = addr
	copy(pay[1:], values)
}

// BeginSection opens a concurrent section of the streams of procs, in
// this order (the order that breaks ties).
func (w *BinaryWriter) BeginSection(procs []int32) {
	w.flushSerial()
	ids := make([]uint64, len(procs))
	for i, p := range procs {
		ids[i] = uint64(uint32(p))
	}
	w.block(blockHeader(BlockSection, 0, 0), ids)
	w.section = len(procs)
}

// StreamBlock writes records (stream records: head word, see StreamHead,
// and payload) of stream i of the open section; last says it is that stream's last
// block in the section. The caller keeps the records well formed.
func (w *BinaryWriter) StreamBlock(i int, records []uint64, last bool) {
	if w.section < 0 || i < 0 || i >= w.section {
		w.setErr(errors.New("history: stream block outside a section or of an unknown stream"))
		return
	}
	flags := 0
	if last {
		flags = BlockLast
	}
	w.block(blockHeader(BlockStream, flags, uint32(i)), records)
}

// EndSection closes the open section, whose streams held events records in
// all (its lines).
func (w *BinaryWriter) EndSection(events int64) {
	w.section = -1
	w.lines += events
}

func (w *BinaryWriter) setErr(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Flush writes what is buffered and an end block (the history may end
// here) and returns the first error met.
func (w *BinaryWriter) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.flushSerial()
	w.block(blockHeader(BlockEnd, 0, 0), []uint64{uint64(w.lines)})
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	return w.err
}

// littleEndian: this machine stores words as the format does, so words
// are written from memory as they are.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// wordBytes returns the bytes of words in the format's byte order: the
// words' own memory on a little-endian machine (the driver's logs go to
// the file with no copy but the write's), a converted copy elsewhere.
func wordBytes(words []uint64) []byte {
	if len(words) == 0 {
		return nil
	}
	if littleEndian {
		return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8*len(words))
	}
	b := make([]byte, 8*len(words))
	for i, v := range words {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}
