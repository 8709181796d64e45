package history

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/pmlin/pmlin/internal/wire"
	"github.com/pmlin/pmlin/model"
)

// Binary histories of version 2 (docs/history-format.md, "The binary
// history", kinds 10 and 11): the header, declarations, init lines and
// comments as text records, operations as RecInvOp and RecRetOp records,
// crashes as RecCrash, all in serial blocks. ReadV2 reads them with the
// builder of Recording.History (v2Builder): one set of checks for every
// syntax.

// InvokeOp writes a RecInvOp record.
func (w *BinaryWriter) InvokeOp(p int32, obj, op string, args []model.Value) {
	putOpInv(w.rec(wire.RecInvOp, wire.OpInvWords(len(args), len(obj), len(op)), p), obj, op, args)
}

// ReturnOp writes a RecRetOp record.
func (w *BinaryWriter) ReturnOp(p int32, results []model.Value, unknown bool) {
	if unknown {
		results = nil
	}
	putOpRet(w.rec(wire.RecRetOp, 1+2*len(results), p), results, unknown)
}

// isBinaryV2 tells a binary history whose first line that is not blank or
// a comment is the version 2 header (Version), from head, the input's
// first bytes.
func isBinaryV2(head []byte) bool {
	if !bytes.HasPrefix(head, []byte(wire.Magic)) {
		return false
	}
	words := len(head)/8 - 1
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(head[8+8*i:]) }
	if words < 2 || word(0) != wire.BlockHeader(wire.BlockSerial, 0, 0) {
		return false
	}
	end := min(words, 2+int(min(word(1), wire.MaxBlockWords)))
	for q := 2; q < end; {
		h := word(q)
		kind, k := wire.SerialKind(h), wire.SerialK(h)
		n := wire.RecWords(kind, k)
		if kind != wire.RecText || q+1+n > end {
			return false
		}
		line := appendText(nil, wordsOf(head[8+8*(q+1):8+8*(q+1+n)]), k)
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if f := bytes.Fields(line); len(f) > 0 {
			return len(f) == 2 && string(f[0]) == "pmlin-history" && string(f[1]) == "v2"
		}
		q += 1 + n
	}
	return false
}

// wordsOf is b (a multiple of 8 bytes) as little-endian words.
func wordsOf(b []byte) []uint64 {
	w := make([]uint64, len(b)/8)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return w
}

// binFailV2 is an error of a version 2 binary history's structure at
// byte offset off, after the lines read so far (as the version 1
// reader's, Reader.binFail).
func (r *v2Reader) binFail(off int, format string, args ...any) error {
	return &Error{File: r.name, Err: ErrSyntax, Msg: fmt.Sprintf(format, args...) + fmt.Sprintf(" (binary history, byte offset %d, after line %d)", off, r.line)}
}

// readBinary reads a version 2 binary history from br, which starts with
// the magic.
func (r *v2Reader) readBinary(br *bufio.Reader) (*model.History, error) {
	r.binary = true
	data, err := io.ReadAll(br)
	if err != nil {
		return nil, &Error{File: r.name, Line: r.line + 1, Err: err, Msg: "read error: " + err.Error()}
	}
	if rest := (len(data) - len(wire.Magic)) % 8; rest != 0 {
		return nil, r.binFail(len(data)-rest, "the file's length after the magic is not a multiple of 8 bytes: it was cut short")
	}
	words := wordsOf(data[len(wire.Magic):])
	off := func(i int) int { return len(wire.Magic) + 8*i }
	b := v2Builder{r: r, names: map[string]string{}}
	ended := false
	for pos := 0; pos < len(words); {
		if pos+2 > len(words) || pos+2+int(min(words[pos+1], uint64(len(words)))) > len(words) {
			return nil, r.binFail(off(pos), "the file ends inside a block: it was cut short")
		}
		hdr, n := words[pos], int(words[pos+1])
		if n > wire.MaxBlockWords {
			return nil, r.binFail(off(pos), "a block of %d words is longer than %d", n, wire.MaxBlockWords)
		}
		typ, start, end := int(hdr&0xff), pos+2, pos+2+n
		if (typ == wire.BlockSerial || typ == wire.BlockEnd) && hdr>>8 != 0 {
			return nil, r.binFail(off(pos), "block header %#x has flags or a field: a serial or end block has none", hdr)
		}
		switch typ {
		case wire.BlockSerial:
			for q := start; q < end; {
				h := words[q]
				kind, k, p := wire.SerialKind(h), wire.SerialK(h), wire.SerialProc(h)
				nw := wire.RecWords(kind, k)
				switch {
				case kind < wire.RecInvRead || kind > wire.RecRetOp || nw < 0:
					return nil, r.binFail(off(q), "record kind %d is not one of a serial block's (1 to %d)", kind, wire.RecRetOp)
				case p > MaxProc:
					return nil, r.binFail(off(q), "process id %d is larger than %d", p, MaxProc)
				case (kind == wire.RecText || kind == wire.RecCrash) && p != 0:
					return nil, r.binFail(off(q), "a text or crash record's process field is %d, not 0", p)
				case kind == wire.RecText && k > DefaultMaxLineBytes:
					return nil, r.binFail(off(q), "a text record of %d bytes is longer than %d", k, DefaultMaxLineBytes)
				case q+1+nw > end:
					return nil, r.binFail(off(q), "a record of kind %d runs past the end of its block", kind)
				}
				if err := b.record(kind, k, int32(p), words[q+1:q+1+nw]); err != nil {
					return nil, err
				}
				q += 1 + nw
			}
		case wire.BlockEnd:
			if n != 1 || words[start] != uint64(r.line) {
				return nil, r.binFail(off(pos), "the end block does not hold the %d lines read so far", r.line)
			}
		case wire.BlockSection, wire.BlockStream:
			return nil, r.binFail(off(pos), "a version 2 binary history holds no concurrent sections (pmlin writes its operations in serial blocks)")
		default:
			return nil, r.binFail(off(pos), "block type %d is not one of the format's (1 to 4)", typ)
		}
		ended = typ == wire.BlockEnd
		pos = end
	}
	if !ended {
		return nil, r.binFail(len(data), "the file does not end with an end block: it was cut short")
	}
	return r.end()
}

// convertV2Binary writes the history ConvertV2 read (r, h) as a binary
// history, line for line: the lines that hold no event as text records
// (written by v2Writer as in text), the events as records.
func convertV2Binary(out io.Writer, r *v2Reader, h *model.History) error {
	bw := NewBinaryWriter(out)
	var text bytes.Buffer
	tw := &v2Writer{w: bufio.NewWriter(&text), h: h, syntax: Text, implicit: r.implicit}
	asText := func(write func()) {
		write()
		tw.w.Flush()
		bw.TextLine(bytes.TrimSuffix(text.Bytes(), []byte("\n")))
		text.Reset()
	}
	at := v2LineItems(h)
	for line := int64(1); line <= r.line; line++ {
		it, ok := at[line]
		raw, isRaw := r.raws[line]
		switch {
		case isRaw && !eventAt(at, line):
			// A line of text that holds no event: as it is.
			bw.TextLine([]byte(raw))
		case ok && it.decl >= 0:
			asText(func() { tw.declare(it.decl) })
		case ok && it.ev.op < 0:
			bw.Crash()
		case ok && it.ev.ret:
			op := &h.Ops[it.ev.op]
			bw.ReturnOp(int32(op.Proc), op.Results, op.Status == model.Unknown)
		case ok:
			op := &h.Ops[it.ev.op]
			obj := h.Objects[op.Object].Name
			if op.Object == r.implicit {
				obj = ""
			}
			if len(obj) > 255 || len(op.Name) > 255 || len(op.Args) > 255 || len(op.Results) > 255 {
				return fmt.Errorf("%s:%d: an operation of names longer than 255 bytes or of more than 255 values has no binary record", r.name, line)
			}
			bw.InvokeOp(int32(op.Proc), obj, op.Name, op.Args)
		case line == r.headerLine:
			asText(tw.header)
		default:
			if params, ok := r.inits[line]; ok {
				asText(func() { tw.init(params) })
			} else {
				bw.TextLine([]byte(r.comments[line]))
			}
		}
	}
	return bw.Flush()
}
