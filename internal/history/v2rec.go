package history

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/pmlin/pmlin/internal/wire"
	"github.com/pmlin/pmlin/model"
)

// ObjectWriter is what an EventWriter of version 2 histories adds: the
// operations of objects of any model (docs/history-format.md, "Version 2").
// The header and the objects' declarations are text lines (TextLine). A
// Writer writes the text lines; a Recording keeps the binary format's
// records (wire.RecInvOp, wire.RecRetOp), from which History builds the
// model.History without the text.
type ObjectWriter interface {
	EventWriter
	// InvokeOp writes "p inv OBJ OP ARGS" (obj and op names of at most
	// 255 bytes, at most 255 arguments); obj "" is the object words of
	// version 1 lines ("p inv read A"). An operation of a declared object
	// of model words is written with its values one by one, which the
	// text does not read: WriteV2 and ConvertV2 write those.
	InvokeOp(p int32, obj, op string, args []model.Value)
	// ReturnOp writes "p ret RESULTS", or "p ret ?" if unknown (results
	// are then ignored).
	ReturnOp(p int32, results []model.Value, unknown bool)
}

// appendOpInv appends the text of an object's invocation, as version 2
// writes it.
// An empty obj is the object words of version 1 lines, written as they
// are: no name, and the values of a word joined by ':'.
func appendOpInv(b []byte, p int32, obj, op string, args []model.Value) []byte {
	b = strconv.AppendInt(b, int64(p), 10)
	b = append(b, " inv "...)
	stride := 1
	if obj == "" {
		stride = max(wordsStride(op), 1)
	} else {
		b = append(b, obj...)
		b = append(b, ' ')
	}
	b = append(b, op...)
	for i, v := range args {
		sep := byte(' ')
		if i%stride != 0 {
			sep = ':'
		}
		b = v.Append(append(b, sep))
	}
	return b
}

// appendOpRet appends the text of an object operation's response.
func appendOpRet(b []byte, p int32, results []model.Value, unknown bool) []byte {
	b = strconv.AppendInt(b, int64(p), 10)
	if unknown {
		return append(b, " ret ?"...)
	}
	b = append(b, " ret"...)
	for _, v := range results {
		b = v.Append(append(b, ' '))
	}
	return b
}

// InvokeOp writes "<p> inv <obj> <op> <args>".
func (w *Writer) InvokeOp(p int32, obj, op string, args []model.Value) {
	w.buf = appendOpInv(w.buf, p, obj, op, args)
	w.emit()
}

// ReturnOp writes "<p> ret <results>" or "<p> ret ?".
func (w *Writer) ReturnOp(p int32, results []model.Value, unknown bool) {
	w.buf = appendOpRet(w.buf, p, results, unknown)
	w.emit()
}

// putValues stores values as the records' (symbol, number) pairs.
func putValues(pay []uint64, vs []model.Value) {
	for i, v := range vs {
		pay[2*i], pay[2*i+1] = uint64(v.Sym), v.N
	}
}

// InvokeOp keeps the invocation as a wire.RecInvOp record.
func (rc *Recording) InvokeOp(p int32, obj, op string, args []model.Value) {
	putOpInv(rc.record(wire.RecInvOp, wire.OpInvWords(len(args), len(obj), len(op)), p), obj, op, args)
}

// ReturnOp keeps the response as a wire.RecRetOp record.
func (rc *Recording) ReturnOp(p int32, results []model.Value, unknown bool) {
	if unknown {
		results = nil
	}
	putOpRet(rc.record(wire.RecRetOp, 1+2*len(results), p), results, unknown)
}

// putOpInv fills the payload of a RecInvOp record (of the words
// wire.OpInvWords says).
func putOpInv(pay []uint64, obj, op string, args []model.Value) {
	pay[0] = wire.OpHead(len(args), len(obj), len(op))
	names := pay[1 : len(pay)-2*len(args)]
	for i := range names {
		names[i] = 0
	}
	packNames(names, obj, op)
	putValues(pay[len(pay)-2*len(args):], args)
}

// putOpRet fills the payload of a RecRetOp record (1+2*len(results)
// words; results empty if unknown).
func putOpRet(pay []uint64, results []model.Value, unknown bool) {
	pay[0] = uint64(len(results))
	if unknown {
		pay[0] = wire.RetUnknown
	}
	putValues(pay[1:], results)
}

// packNames packs the bytes of obj then op into words, the first in bits
// 0-7 (as a text record's), the last word zero-padded (words must be 0).
func packNames(words []uint64, obj, op string) {
	for i := 0; i < len(obj)+len(op); i++ {
		c := byte(0)
		if i < len(obj) {
			c = obj[i]
		} else {
			c = op[i-len(obj)]
		}
		words[i/8] |= uint64(c) << (8 * (i % 8))
	}
}

// opRecord is a RecInvOp or RecRetOp record's payload decoded; obj and op
// are slices of buf (the names' bytes).
type opRecord struct {
	obj, op []byte
	vals    []model.Value
	unknown bool
}

// decodeOp decodes the payload of a record of kind RecInvOp or RecRetOp,
// reusing o's memory; it returns an error message if the payload is not
// one the format allows (its k disagrees with word 0, a value is no
// value, a name's padding is not zero).
func (o *opRecord) decode(kind int, pay []uint64, buf []byte) (string, []byte) {
	o.vals, o.obj, o.op, o.unknown = o.vals[:0], nil, nil, false
	if len(pay) == 0 {
		return "an operation's record has no payload", buf
	}
	h := pay[0]
	n, names := int(h), 0
	if kind == wire.RecInvOp {
		n = wire.OpHeadArgs(h)
		if h>>24 != 0 || wire.OpInvWords(n, wire.OpHeadObj(h), wire.OpHeadOp(h)) != len(pay) {
			return fmt.Sprintf("an invocation's record of %d words does not hold what its first word says (%#x)", len(pay), h), buf
		}
		no, nop := wire.OpHeadObj(h), wire.OpHeadOp(h)
		names = (no + nop + 7) / 8
		buf = appendText(buf[:0], pay[1:1+names], no+nop)
		o.obj, o.op = buf[:no], buf[no:]
		if pad := pay[names] >> (8 * ((no + nop) % 8)); (no+nop)%8 != 0 && pad != 0 {
			return "an invocation's names are not zero-padded", buf
		}
	} else if o.unknown = h == wire.RetUnknown; o.unknown {
		n = 0
		if len(pay) != 1 {
			return fmt.Sprintf("an unknown response's record has %d words, not 1", len(pay)), buf
		}
	} else if h > 255 || 1+2*n != len(pay) {
		return fmt.Sprintf("a response's record of %d words does not hold what its first word says (%d results)", len(pay), h), buf
	}
	for j := 1 + names; j+1 < len(pay); j += 2 {
		v := model.Value{Sym: model.Symbol(pay[j]), N: pay[j+1]}
		if pay[j] > uint64(model.False) || v.Sym != model.Num && v.N != 0 {
			return fmt.Sprintf("symbol %d with number %d is not one of the format's values", pay[j], pay[j+1]), buf
		}
		o.vals = append(o.vals, v)
	}
	return "", buf
}

// writeOp writes a RecInvOp or RecRetOp record to w (Recording.WriteTo).
func writeOp(w *Writer, kind int, p int32, pay []uint64) {
	var o opRecord
	if msg, _ := o.decode(kind, pay, nil); msg != "" {
		w.Comment("malformed record: " + msg) // never kept by InvokeOp, ReturnOp
		return
	}
	if kind == wire.RecInvOp {
		w.InvokeOp(p, string(o.obj), string(o.op), o.vals)
	} else {
		w.ReturnOp(p, o.vals, o.unknown)
	}
}

// History builds the model.History of a recorded version 2 history
// (name is its Name and is used in errors), with the checks and line
// numbers of ReadV2 of the text WriteTo writes: its text records are read
// as that text's lines, its operation records checked and added by the
// same code (v2Reader's invoke, respond and crash), with no text written
// and parsed back.
func (rc *Recording) History(name string) (*model.History, error) {
	r := newV2Reader(name)
	b := v2Builder{r: r, names: map[string]string{}}
	ops := 0 // the operations, to size h.Ops once
	for pos := 0; pos < len(rc.words); {
		kind, _, _, next := rc.at(pos)
		if kind == wire.RecInvOp {
			ops++
		}
		pos = next
	}
	if ops > 0 {
		r.h.Ops = make([]model.Op, 0, ops)
	}
	for pos := 0; pos < len(rc.words); {
		kind, k, p, next := rc.at(pos)
		pay := rc.words[pos+1 : next]
		pos = next
		if err := b.record(kind, k, p, pay); err != nil {
			return nil, err
		}
	}
	return r.end()
}

// v2Builder feeds a v2Reader the records of a version 2 history.
type v2Builder struct {
	r     *v2Reader
	o     opRecord
	buf   []byte
	names map[string]string // object and operation names, one string each
	slab  []model.Value     // the operations' values, allocated in slabs
}

// record reads one record (one line).
func (b *v2Builder) record(kind, k int, p int32, pay []uint64) error {
	r := b.r
	if kind == wire.RecText {
		r.line++
		b.buf = appendText(b.buf[:0], pay, k)
		return r.readLine(string(b.buf))
	}
	if kind != wire.RecInvOp && kind != wire.RecRetOp {
		// A crash, or an operation of version 1 (object words): as its
		// line is read.
		var one Recording
		one.words = append(append(one.words, wire.SerialHead(kind, k, p)), pay...)
		var text bytes.Buffer
		one.WriteTo(&text) // cannot fail
		r.line++
		return r.readLine(string(bytes.TrimSuffix(text.Bytes(), []byte("\n"))))
	}
	r.line++
	if !r.sawHeader {
		return r.noHeader()
	}
	var msg string
	if msg, b.buf = b.o.decode(kind, pay, b.buf); msg != "" {
		return r.fail(ErrSyntax, 0, "process %d: %s", p, msg)
	}
	vals := b.values(b.o.vals)
	if kind == wire.RecRetOp {
		i, err := r.pendingOp(int64(p))
		if err != nil {
			return err
		}
		return r.respond(i, vals, b.o.unknown)
	}
	op := b.name(b.o.op)
	var obj int
	var err error
	if len(b.o.obj) == 0 {
		if !isWordsOp(op) {
			return r.fail(ErrIllFormed, 0, "process %d: an operation of no object is one of version 1 (read, cas or swap), not %q", p, clipString(op))
		}
		obj, err = r.wordsObject()
	} else {
		obj, err = r.object(b.name(b.o.obj), 0)
	}
	if err != nil {
		return err
	}
	if r.h.Objects[obj].Model == wordsModel {
		if !isWordsOp(op) {
			return r.fail(ErrIllFormed, 0, "process %d: object %s is of model words: its operations are read, cas and swap, not %q", p, r.h.Objects[obj].Name, clipString(op))
		}
	} else if !validName(op) {
		return r.fail(ErrSyntax, 0, "process %d: operation name %q is not a name ([a-z][a-z0-9_-]*)", p, clipString(op))
	}
	return r.invoke(int64(p), obj, op, vals)
}

// name is the string of a name's bytes, one string per name: the
// history's operations share it, and a look-up allocates nothing.
func (b *v2Builder) name(s []byte) string {
	n, ok := b.names[string(s)]
	if !ok {
		n = string(s)
		b.names[n] = n
	}
	return n
}

// values is a copy of vs that the history keeps (nil if empty), cut from
// a slab: one allocation for many operations.
func (b *v2Builder) values(vs []model.Value) []model.Value {
	if len(vs) == 0 {
		return nil
	}
	if cap(b.slab)-len(b.slab) < len(vs) {
		b.slab = make([]model.Value, 0, max(256, len(vs)))
	}
	n := len(b.slab)
	b.slab = append(b.slab, vs...)
	return b.slab[n:len(b.slab):len(b.slab)]
}
