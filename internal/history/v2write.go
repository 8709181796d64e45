package history

import (
	"bufio"
	"io"
	"strconv"

	"github.com/pmlin/pmlin/model"
)

// WriteV2 writes h as a version 2 history in syntax Text or JSONL: the
// header, a declaration of every object in h.Objects' order, then the
// events in the order of their positions. ReadV2 of what it writes gives h
// back, but for the lines (Line, RetLine, Object.Line) and Name. It
// refuses, before writing anything, a history it cannot write so:
// positions that do not number the events one by one, names outside the
// format's grammar, a words operation or response of the wrong shape. A
// history read by ReadV2 is always writable.
func WriteV2(out io.Writer, h *model.History, syntax Format) error {
	events, err := v2Events(h)
	if err != nil {
		return err
	}
	if syntax != Text && syntax != JSONL {
		return notWritable("the syntax is text or JSON Lines, not %v", syntax)
	}
	w := &v2Writer{w: bufio.NewWriter(out), h: h, syntax: syntax, implicit: -1}
	w.header()
	for i := range h.Objects {
		w.declare(i)
	}
	for _, ev := range events {
		w.event(ev)
	}
	return w.w.Flush()
}

// WritableV2 is WriteV2's refusal of h, or nil, without writing it: the
// Go API checks a history of objects it builds as one the format can hold
// (names in its grammar, events numbered one by one), writing its text
// only when asked to.
func WritableV2(h *model.History) error {
	_, err := v2Events(h)
	return err
}

// ConvertV2 converts the version 2 history in (either syntax) to syntax
// to, line for line: every operation keeps its line, so reports of
// either file name the same operations. Comments and blank lines stay as
// they are; a comment at the end of a line that holds anything else is not
// kept.
func ConvertV2(out io.Writer, in io.Reader, name string, to Format) (ConvertStats, error) {
	r := newV2Reader(name)
	r.keep, r.raws = true, map[int64]string{}
	h, err := r.read(in)
	if err != nil {
		return ConvertStats{}, err
	}
	st := ConvertStats{From: r.syntax, Events: int64(h.Events), Lines: r.line}
	if _, err := v2Events(h); err != nil {
		return st, err // (never: what ReadV2 reads is writable)
	}
	if to != Text && to != JSONL && to != Binary {
		return st, notWritable("the syntax is text, JSON Lines or binary, not %v", to)
	}
	if r.binary {
		st.From = Binary
	}
	if to == Binary {
		return st, convertV2Binary(out, r, h)
	}
	w := &v2Writer{w: bufio.NewWriter(out), h: h, syntax: to, implicit: r.implicit}
	at := v2LineItems(h)
	for line := int64(1); line <= r.line; line++ {
		if raw, ok := r.raws[line]; ok && r.binary && to == Text && !eventAt(at, line) {
			// The text form of a binary history's text record: as it is.
			w.b = append(w.b, raw...)
			w.line()
		} else if it, ok := at[line]; ok && it.decl >= 0 {
			w.declare(it.decl)
		} else if ok {
			w.event(it.ev)
		} else if line == r.headerLine {
			w.header()
		} else if params, ok := r.inits[line]; ok {
			w.init(params)
		} else {
			w.b = append(w.b, r.comments[line]...)
			w.line()
		}
	}
	return st, w.w.Flush()
}

// v2LineItem is what a line of a history read holds: the declaration of
// object decl, or (decl -1) the event ev.
type v2LineItem struct {
	ev   v2Event
	decl int
}

// v2LineItems maps the lines of h that hold a declaration or an event to
// them (ConvertV2 writes the other lines as the reader kept them).
func v2LineItems(h *model.History) map[int64]v2LineItem {
	at := make(map[int64]v2LineItem, 2*len(h.Ops)+len(h.Objects)+len(h.Crashes))
	for i, o := range h.Objects {
		if o.Line > 0 {
			at[o.Line] = v2LineItem{decl: i}
		}
	}
	for i, op := range h.Ops {
		at[op.Line] = v2LineItem{ev: v2Event{op: i}, decl: -1}
		if op.RetLine > 0 {
			at[op.RetLine] = v2LineItem{ev: v2Event{op: i, ret: true}, decl: -1}
		}
	}
	for _, c := range h.Crashes {
		at[c.Line] = v2LineItem{ev: v2Event{op: -1}, decl: -1}
	}
	return at
}

// eventAt tells a line of the map v2LineItems that holds an event.
func eventAt(at map[int64]v2LineItem, line int64) bool {
	it, ok := at[line]
	return ok && it.decl < 0
}

// v2Writer writes the lines of a version 2 history.
type v2Writer struct {
	w      *bufio.Writer
	b      []byte
	h      *model.History
	syntax Format
	// implicit is the object words that version 1 lines bring in
	// without a declaration (ConvertV2), whose operations are written
	// without its name; -1: none.
	implicit int
}

func (w *v2Writer) line() {
	w.b = append(w.b, '\n')
	w.w.Write(w.b)
	w.b = w.b[:0]
}

func (w *v2Writer) header() {
	if w.syntax == JSONL {
		w.b = append(w.b, `{"header":"pmlin-history v2"}`...)
	} else {
		w.b = append(w.b, v2Header...)
	}
	w.line()
}

func (w *v2Writer) declare(i int) {
	o := &w.h.Objects[i]
	b := w.b
	if w.syntax == JSONL {
		b = append(b, `{"object":`...)
		b = strconv.AppendQuote(b, o.Name)
		b = append(b, `,"model":`...)
		b = strconv.AppendQuote(b, o.Model)
		if len(o.Params) > 0 {
			b = append(b, `,"params":{`...)
			for i, p := range o.Params {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendQuote(b, p.Key)
				b = append(b, ':')
				b = strconv.AppendQuote(b, p.Value)
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	} else {
		b = append(b, "object "...)
		b = append(b, o.Name...)
		b = append(b, ' ')
		b = append(b, o.Model...)
		for _, p := range o.Params {
			b = append(b, ' ')
			b = append(b, p.Key...)
			b = append(b, '=')
			b = append(b, p.Value...)
		}
	}
	w.b = b
	w.line()
}

// init writes version 1's init line that gave the object words the
// parameters params: the default ("init") or initial values of addresses.
func (w *v2Writer) init(params []model.Param) {
	b := w.b
	def := len(params) == 1 && params[0].Key == "init"
	value := func(s string) model.Value {
		v, _ := model.ParseValue(s) // (the reader wrote it)
		return v
	}
	switch {
	case w.syntax == Text && def:
		b = append(b, "init "...)
		b = append(b, params[0].Value...)
	case w.syntax == Text:
		b = append(b, "init"...)
		for _, p := range params {
			b = append(b, ' ')
			b = append(b, p.Key...)
			b = append(b, '=')
			b = append(b, p.Value...)
		}
	case def:
		b = append(b, `{"init":`...)
		b = appendJSONValue(b, value(params[0].Value))
		b = append(b, '}')
	default:
		b = append(b, `{"init":{`...)
		for i, p := range params {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, p.Key)
			b = append(b, ':')
			b = appendJSONValue(b, value(p.Value))
		}
		b = append(b, "}}"...)
	}
	w.b = b
	w.line()
}

func (w *v2Writer) event(ev v2Event) {
	switch {
	case ev.op < 0 && w.syntax == JSONL:
		w.b = append(w.b, `{"crash":true}`...)
	case ev.op < 0:
		w.b = append(w.b, "crash"...)
	case w.syntax == JSONL && !ev.ret:
		w.b = appendJSONInv(w.b, w.h, &w.h.Ops[ev.op], w.implicit)
	case w.syntax == JSONL:
		w.b = appendJSONRet(w.b, w.h, &w.h.Ops[ev.op])
	case !ev.ret:
		w.b = appendTextInv(w.b, w.h, &w.h.Ops[ev.op], w.implicit)
	default:
		w.b = appendTextRet(w.b, &w.h.Ops[ev.op])
	}
	w.line()
}

// v2Event is one event of a model.History to write: an operation's
// invocation or response, or a crash (op -1).
type v2Event struct {
	op  int
	ret bool
}

// v2Events puts h's events in order, refusing what WriteV2 cannot write.
func v2Events(h *model.History) ([]v2Event, error) {
	names := map[string]bool{}
	for _, o := range h.Objects {
		switch {
		case !validName(o.Name) || reservedName(o.Name):
			return nil, notWritable("object name %q is not a name of the format", o.Name)
		case names[o.Name]:
			return nil, notWritable("object %s is declared twice", o.Name)
		case !validName(o.Model):
			return nil, notWritable("object %s: model name %q is not a name of the format", o.Name, o.Model)
		}
		names[o.Name] = true
		for _, p := range o.Params {
			if msg := validParam(p); msg != "" {
				return nil, notWritable("object %s: %s", o.Name, msg)
			}
		}
	}
	if h.Events < 0 || h.Events > 2*len(h.Ops)+len(h.Crashes) {
		return nil, notWritable("%d events for %d operations and %d crashes", h.Events, len(h.Ops), len(h.Crashes))
	}
	events := make([]v2Event, h.Events)
	filled := make([]bool, h.Events)
	place := func(pos int, ev v2Event) error {
		if pos < 0 || pos >= h.Events || filled[pos] {
			return notWritable("two events at position %d, or a position outside 0 .. %d", pos, h.Events-1)
		}
		events[pos], filled[pos] = ev, true
		return nil
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if err := checkWritableOp(h, op); err != nil {
			return nil, err
		}
		if err := place(op.Call, v2Event{op: i}); err != nil {
			return nil, err
		}
		if (op.Status == model.CutOff) != (op.Return < 0) {
			return nil, notWritable("operation %d: a response position %d with status %d", i, op.Return, op.Status)
		}
		if op.Return >= 0 {
			if op.Return <= op.Call {
				return nil, notWritable("operation %d returns (position %d) before its invocation (%d)", i, op.Return, op.Call)
			}
			if err := place(op.Return, v2Event{op: i, ret: true}); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range h.Crashes {
		if err := place(c.Pos, v2Event{op: -1}); err != nil {
			return nil, err
		}
	}
	for pos, ok := range filled {
		if !ok {
			return nil, notWritable("position %d holds no event", pos)
		}
	}
	return events, nil
}

// checkWritableOp refuses an operation the syntaxes cannot write.
func checkWritableOp(h *model.History, op *model.Op) error {
	if op.Object < 0 || op.Object >= len(h.Objects) {
		return notWritable("an operation on object %d, of %d", op.Object, len(h.Objects))
	}
	if op.Proc < 0 || op.Proc > MaxProc {
		return notWritable("process id %d is not in 0 .. %d", op.Proc, MaxProc)
	}
	if h.Objects[op.Object].Model != wordsModel {
		if !validName(op.Name) {
			return notWritable("operation name %q is not a name of the format", op.Name)
		}
		if op.Status == model.Returned && len(op.Results) == 0 {
			return notWritable("a %s that returned has no result", op.Name)
		}
		return nil
	}
	if !isWordsOp(op.Name) {
		return notWritable("object %s is of model words: no operation %q", h.Objects[op.Object].Name, op.Name)
	}
	stride := wordsStride(op.Name)
	if len(op.Args) == 0 || len(op.Args)%stride != 0 {
		return notWritable("a %s has %d arguments: it has %d per word", op.Name, len(op.Args), stride)
	}
	for _, v := range op.Args {
		if v.Sym != model.Num {
			return notWritable("a %s's arguments are numbers, not %v", op.Name, v)
		}
	}
	if op.Status != model.Returned {
		return nil
	}
	res := op.Results
	if op.Name == "cas" {
		switch {
		case len(res) == 1 && res[0] == model.Sym(model.OK):
			return nil
		case len(res) >= 2 && res[0] == model.Sym(model.Fail):
			res = res[1:]
		default:
			return notWritable("a cas returns ok or fail <address> [<v1> ... <vk>], not %v", res)
		}
	}
	for _, v := range res {
		if v.Sym != model.Num {
			return notWritable("a %s's response holds numbers, not %v", op.Name, v)
		}
	}
	return nil
}

// appendTextInv writes an invocation; one on object implicit (brought in
// by version 1 lines) is written as version 1 writes it, without the
// object's name.
func appendTextInv(b []byte, h *model.History, op *model.Op, implicit int) []byte {
	b = strconv.AppendInt(b, op.Proc, 10)
	b = append(b, " inv "...)
	if op.Object != implicit {
		b = append(b, h.Objects[op.Object].Name...)
		b = append(b, ' ')
	}
	b = append(b, op.Name...)
	stride := 1
	if h.Objects[op.Object].Model == wordsModel {
		stride = wordsStride(op.Name)
	}
	for i, v := range op.Args {
		if i%stride == 0 {
			b = append(b, ' ')
		} else {
			b = append(b, ':')
		}
		b = append(b, v.String()...)
	}
	return b
}

func appendTextRet(b []byte, op *model.Op) []byte {
	b = strconv.AppendInt(b, op.Proc, 10)
	b = append(b, " ret"...)
	if op.Status == model.Unknown {
		return append(b, " ?"...)
	}
	for _, v := range op.Results {
		b = append(b, ' ')
		b = append(b, v.String()...)
	}
	return b
}

// appendJSONValue writes a value as the JSON Lines syntax does: a number
// below 4096 as a JSON integer, a larger one as a string in 0x hex (as
// text writes it, and exact for readers whose numbers are doubles), a
// symbol as a string.
func appendJSONValue(b []byte, v model.Value) []byte {
	if v.Sym == model.Num && v.N < 4096 {
		return strconv.AppendUint(b, v.N, 10)
	}
	return strconv.AppendQuote(b, v.String())
}

func appendJSONValues(b []byte, vs []model.Value) []byte {
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONValue(b, v)
	}
	return append(b, ']')
}

// Names and parameters are quoted with strconv: for the printable ASCII
// the format allows them, its quoting is JSON's.

func appendJSONInv(b []byte, h *model.History, op *model.Op, implicit int) []byte {
	b = append(b, `{"p":`...)
	b = strconv.AppendInt(b, op.Proc, 10)
	b = append(b, `,"inv":`...)
	b = strconv.AppendQuote(b, op.Name)
	if op.Object != implicit {
		b = append(b, `,"object":`...)
		b = strconv.AppendQuote(b, h.Objects[op.Object].Name)
	}
	switch {
	case h.Objects[op.Object].Model != wordsModel:
		if len(op.Args) > 0 {
			b = append(b, `,"args":`...)
			b = appendJSONValues(b, op.Args)
		}
	case op.Name == "read":
		b = append(b, `,"addrs":`...)
		b = appendJSONValues(b, op.Args)
	default:
		stride := wordsStride(op.Name)
		b = append(b, `,"words":[`...)
		for i := 0; i < len(op.Args); i += stride {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONValues(b, op.Args[i:i+stride])
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendJSONRet(b []byte, h *model.History, op *model.Op) []byte {
	b = append(b, `{"p":`...)
	b = strconv.AppendInt(b, op.Proc, 10)
	b = append(b, `,"ret":`...)
	res := op.Results
	switch {
	case op.Status == model.Unknown:
		b = append(b, `"?"`...)
	case h.Objects[op.Object].Model == wordsModel && op.Name == "cas" && res[0] == model.Sym(model.OK):
		b = append(b, `"ok"`...)
	case h.Objects[op.Object].Model == wordsModel && op.Name == "cas":
		b = append(b, `"fail","addr":`...)
		b = appendJSONValue(b, res[1])
		if len(res) > 2 {
			b = append(b, `,"values":`...)
			b = appendJSONValues(b, res[2:])
		}
	default:
		b = appendJSONValues(b, res)
	}
	return append(b, '}')
}
