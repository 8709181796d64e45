package history

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"unsafe"

	"github.com/pmlin/pmlin/internal/wire"
)

// BinaryWriter writes a binary history (docs/history-format.md, "Binary
// histories"; its words: package internal/wire). Serial events have the methods of
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
		w.write([]byte(wire.Magic))
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
		w.block(wire.BlockHeader(wire.BlockSerial, 0, 0), w.serial)
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
	w.serial = slices.Grow(w.serial, 1+wire.RecWords(kind, k))[:n+1+wire.RecWords(kind, k)]
	w.serial[n] = wire.SerialHead(kind, k, proc)
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
	packText(w.rec(wire.RecText, len(line), 0), line)
}

// packText fills p, a text record's payload, with line: its bytes in
// little-endian order, zero padding.
func packText(p []uint64, line []byte) {
	for i := range p {
		var w [8]byte
		copy(w[:], line[min(8*i, len(line)):])
		p[i] = binary.LittleEndian.Uint64(w[:])
	}
}

// Comment writes "# text".
func (w *BinaryWriter) Comment(text string) { w.TextLine([]byte("# " + text)) }

// Crash writes a crash.
func (w *BinaryWriter) Crash() { w.rec(wire.RecCrash, 0, 0) }

// InvokeRead writes a read's invocation.
func (w *BinaryWriter) InvokeRead(p int32, addrs []uint64) {
	w.pendingK[p] = len(addrs)
	copy(w.rec(wire.RecInvRead, len(addrs), p), addrs)
}

// InvokeCAS writes a cas's invocation.
func (w *BinaryWriter) InvokeCAS(p int32, addrs, expected, new []uint64) {
	w.pendingK[p] = len(addrs)
	pay := w.rec(wire.RecInvCAS, len(addrs), p)
	for i, a := range addrs {
		pay[3*i], pay[3*i+1], pay[3*i+2] = a, expected[i], new[i]
	}
}

// InvokeSwap writes a swap's invocation.
func (w *BinaryWriter) InvokeSwap(p int32, addrs, new []uint64) {
	w.pendingK[p] = len(addrs)
	pay := w.rec(wire.RecInvSwap, len(addrs), p)
	for i, a := range addrs {
		pay[2*i], pay[2*i+1] = a, new[i]
	}
}

// ReturnRead writes a read's or a swap's response.
func (w *BinaryWriter) ReturnRead(p int32, values []uint64) {
	copy(w.rec(wire.RecRetValues, len(values), p), values)
}

// ReturnOK writes a cas's success.
func (w *BinaryWriter) ReturnOK(p int32) { w.rec(wire.RecRetOK, w.pendingK[p], p) }

// ReturnFail writes a cas's failure at addr.
func (w *BinaryWriter) ReturnFail(p int32, addr uint64) {
	w.rec(wire.RecRetFail, w.pendingK[p], p)[0] = addr
}

// ReturnFailValues writes the failure of a cas at addr that reports the
// values it read.
func (w *BinaryWriter) ReturnFailValues(p int32, addr uint64, values []uint64) {
	pay := w.rec(wire.RecRetFailValues, len(values), p)
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
	w.block(wire.BlockHeader(wire.BlockSection, 0, 0), ids)
	w.section = len(procs)
}

// StreamBlock writes records (stream records: head word, see
// wire.StreamHead, and payload) of stream i of the open section; last says
// it is that stream's last block in the section. The caller keeps the records well formed.
func (w *BinaryWriter) StreamBlock(i int, records []uint64, last bool) {
	if w.section < 0 || i < 0 || i >= w.section {
		w.setErr(errors.New("history: stream block outside a section or of an unknown stream"))
		return
	}
	flags := 0
	if last {
		flags = wire.BlockLast
	}
	w.block(wire.BlockHeader(wire.BlockStream, flags, uint32(i)), records)
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
	w.block(wire.BlockHeader(wire.BlockEnd, 0, 0), []uint64{uint64(w.lines)})
	if w.err == nil {
		w.err = w.bw.Flush()
	}
	return w.err
}

// littleEndian: this machine stores words as the format does, so words
// are written from memory as they are.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// wordBytes returns the bytes of words in the format's byte order: the
// words' own memory on a little-endian machine (the workers' logs of internal/record go to
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
