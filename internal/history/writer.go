package history

import (
	"bufio"
	"bytes"
	"io"
	"slices"
	"strconv"

	"github.com/pmlin/pmlin/model"
)

// EventWriter writes the events of a history one after another, in
// history order: Writer (text) and BinaryWriter (binary) both do.
type EventWriter interface {
	Header(initDefault uint64, init map[uint64]uint64)
	TextLine(line []byte)
	Comment(text string)
	Crash()
	InvokeRead(p int32, addrs []uint64)
	InvokeCAS(p int32, addrs, expected, new []uint64)
	InvokeSwap(p int32, addrs, new []uint64)
	ReturnRead(p int32, values []uint64)
	ReturnOK(p int32)
	ReturnFail(p int32, addr uint64)
	ReturnFailValues(p int32, addr uint64, values []uint64)
	Flush() error
}

// Writer writes a history in text format v1. It does not validate: it is
// the recorder's job to emit events in real-time order and to keep the
// format's rules (the Reader checks them). Errors are sticky and reported
// by Flush.
type Writer struct {
	bw  *bufio.Writer
	buf []byte
	n   int64
	err error
}

// NewWriter returns a Writer that buffers its output.
func NewWriter(w io.Writer) *Writer {
	size := 256 << 10
	if _, ok := w.(*bytes.Buffer); ok {
		size = 4 << 10 // memory: a large buffer would only be cleared and copied
	}
	return &Writer{bw: bufio.NewWriterSize(w, size), buf: make([]byte, 0, 256)}
}

// Written is the number of bytes written so far (including buffered ones).
func (w *Writer) Written() int64 { return w.n }

// appendValue appends a value as pmlin writes values everywhere
// (model.Value.Append).
func appendValue(b []byte, v uint64) []byte { return model.Number(v).Append(b) }

// FormatValue writes a value as pmlin writes values everywhere
// (model.Value.String): decimal below 4096, 0x hex from 4096 on.
func FormatValue(v uint64) string { return model.Number(v).String() }

func (w *Writer) emit() {
	w.buf = append(w.buf, '\n')
	if w.err == nil {
		var n int
		n, w.err = w.bw.Write(w.buf)
		w.n += int64(n)
	}
	w.buf = w.buf[:0]
}

// Header writes the magic line and the initial values (only those that
// differ from the format's default of 0, in address order).
func (w *Writer) Header(initDefault uint64, init map[uint64]uint64) {
	for _, l := range headerLines(initDefault, init) {
		w.buf = append(w.buf, l...)
		w.emit()
	}
}

// headerLines renders the header's lines (Writer and BinaryWriter).
func headerLines(initDefault uint64, init map[uint64]uint64) [][]byte {
	out := [][]byte{[]byte("pmlin-history v1")}
	if initDefault != 0 {
		out = append(out, appendValue([]byte("init "), initDefault))
	}
	addrs := make([]uint64, 0, len(init))
	for a := range init {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	var b []byte
	for i, a := range addrs {
		if i%8 == 0 {
			if i > 0 {
				out = append(out, b)
			}
			b = []byte("init")
		}
		b = append(b, ' ')
		b = strconv.AppendUint(b, a, 10)
		b = append(b, '=')
		b = appendValue(b, init[a])
	}
	if len(addrs) > 0 {
		out = append(out, b)
	}
	return out
}

// The append functions render one event line each (without its newline):
// the Writer and Op.Lines share them, so an operation reads the same in a
// history and in a report.

func appendProc(b []byte, p int32, what string) []byte {
	b = strconv.AppendInt(b, int64(p), 10)
	return append(b, what...)
}

func appendInvokeRead(b []byte, p int32, addrs []uint64) []byte {
	b = appendProc(b, p, " inv read")
	for _, a := range addrs {
		b = append(b, ' ')
		b = strconv.AppendUint(b, a, 10)
	}
	return b
}

func appendInvokeCAS(b []byte, p int32, addrs, expected, new []uint64) []byte {
	return appendInvokeUpdate(b, p, " inv cas", addrs, expected, new)
}

func appendInvokeSwap(b []byte, p int32, addrs, new []uint64) []byte {
	return appendInvokeUpdate(b, p, " inv swap", addrs, nil, new)
}

// appendInvokeUpdate renders the words of a cas (address:expected:new) or,
// expected nil, of a swap (address:new).
func appendInvokeUpdate(b []byte, p int32, what string, addrs, expected, new []uint64) []byte {
	b = appendProc(b, p, what)
	for i, a := range addrs {
		b = append(b, ' ')
		b = strconv.AppendUint(b, a, 10)
		if expected != nil {
			b = append(b, ':')
			b = appendValue(b, expected[i])
		}
		b = append(b, ':')
		b = appendValue(b, new[i])
	}
	return b
}

func appendValues(b []byte, values []uint64) []byte {
	for _, v := range values {
		b = append(b, ' ')
		b = appendValue(b, v)
	}
	return b
}

func appendReturnRead(b []byte, p int32, values []uint64) []byte {
	return appendValues(appendProc(b, p, " ret"), values)
}

// appendReturnFail renders "fail <addr>", followed by the values the
// failure reports, if any.
func appendReturnFail(b []byte, p int32, addr uint64, values []uint64) []byte {
	b = appendProc(b, p, " ret fail ")
	return appendValues(strconv.AppendUint(b, addr, 10), values)
}

// InvokeRead writes "<p> inv read a1 ... ak".
func (w *Writer) InvokeRead(p int32, addrs []uint64) {
	w.buf = appendInvokeRead(w.buf, p, addrs)
	w.emit()
}

// InvokeCAS writes "<p> inv cas a1:e1:n1 ...".
func (w *Writer) InvokeCAS(p int32, addrs, expected, new []uint64) {
	w.buf = appendInvokeCAS(w.buf, p, addrs, expected, new)
	w.emit()
}

// InvokeSwap writes "<p> inv swap a1:n1 ...".
func (w *Writer) InvokeSwap(p int32, addrs, new []uint64) {
	w.buf = appendInvokeSwap(w.buf, p, addrs, new)
	w.emit()
}

// ReturnRead writes "<p> ret v1 ... vk": a read's response, or a swap's
// (the values it replaced).
func (w *Writer) ReturnRead(p int32, values []uint64) {
	w.buf = appendReturnRead(w.buf, p, values)
	w.emit()
}

// ReturnOK writes "<p> ret ok".
func (w *Writer) ReturnOK(p int32) {
	w.buf = appendProc(w.buf, p, " ret ok")
	w.emit()
}

// ReturnFail writes "<p> ret fail <a>".
func (w *Writer) ReturnFail(p int32, addr uint64) {
	w.buf = appendReturnFail(w.buf, p, addr, nil)
	w.emit()
}

// ReturnFailValues writes "<p> ret fail <a> <v1> ... <vk>": a failure
// that reports the value it read at each of the cas's addresses.
func (w *Writer) ReturnFailValues(p int32, addr uint64, values []uint64) {
	w.buf = appendReturnFail(w.buf, p, addr, values)
	w.emit()
}

// Crash writes "crash".
func (w *Writer) Crash() {
	w.buf = append(w.buf, "crash"...)
	w.emit()
}

// TextLine writes line as it is (no newline in it): a comment, a blank
// line, the header or an init line.
func (w *Writer) TextLine(line []byte) {
	w.buf = append(w.buf, line...)
	w.emit()
}

// Comment writes "# text" (text must not contain a newline).
func (w *Writer) Comment(text string) {
	w.buf = append(w.buf, "# "...)
	w.buf = append(w.buf, text...)
	w.emit()
}

// Flush writes buffered output and returns the first error met.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.bw.Flush()
	return w.err
}
