package lin

import (
	"fmt"
	"strconv"

	"github.com/pmlin/pmlin/model"
)

// The sentences of a check (explanations, stuck operations, undecided
// reasons, errors) name a history's operations and crashes here, once.
// With Options.Names nil they are named by the lines of the file read, as
// pmlin check prints them; with a Namer, as it says: the Go API's caller
// knows them by its own indexes, never having seen a text. The Namer is the
// analyzer's, keyed by line, the line each event has in h (Op.Line,
// Crash.Line): one way to name events whichever checker speaks.

// ref names operation i of h, with where it is.
func (o *Options) ref(h *model.History, i int) OpRef {
	r := ref(h, i)
	if o.Names != nil && r.Line > 0 {
		r.name = o.Names.Op(r.Line)
	}
	return r
}

// at says where operation i of h is in a sentence: "line 14".
func (o *Options) at(h *model.History, i int) string {
	r := o.ref(h, i)
	return r.at()
}

// where names operation i of h at the head of a message: "FILE:14".
func (o *Options) where(h *model.History, i int) string {
	if l := h.Ops[i].Line; o.Names != nil && l > 0 {
		return o.Names.Op(l)
	}
	return h.Where(i)
}

// crashWhere names crash k of h in a sentence: "the crash at FILE:12".
func (o *Options) crashWhere(h *model.History, k int) string {
	c := h.Crashes[k]
	switch {
	case c.Line == 0:
		return fmt.Sprintf("crash %d", k)
	case o.Names != nil:
		return o.Names.Crashes(c.Line)
	}
	return "the crash at " + lineOf(h, c.Line)
}

// objectWhere names object k of h at the head of a message: "FILE:3:
// object q", or "object q" when it was not declared on a line or is named
// through a Namer (whose caller knows its objects by name).
func (o *Options) objectWhere(h *model.History, k int) string {
	obj := &h.Objects[k]
	where := "object " + obj.Name
	if obj.Line > 0 && o.Names == nil {
		where = lineOf(h, obj.Line) + ": " + where
	}
	return where
}

// lineOf names line of h's file: "FILE:14", or "line 14" without a name.
func lineOf(h *model.History, line int64) string {
	if h.Name == "" {
		return "line " + strconv.FormatInt(line, 10)
	}
	return h.Name + ":" + strconv.FormatInt(line, 10)
}

// OpError is an input error that blames operation Op of the history (an
// index in History.Ops), named in its message as the sentences name it.
type OpError struct {
	Op    int
	Where string // "FILE:14", "operation 3"
	Err   error
}

func (e *OpError) Error() string { return e.Where + ": " + e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

// opError blames operation i of h for err.
func (o *Options) opError(h *model.History, i int, err error) error {
	return &OpError{Op: i, Where: o.where(h, i), Err: err}
}
