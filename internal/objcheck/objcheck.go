// Package objcheck validates a version 2 history (docs/history-format.md,
// "Version 2") against its objects' models before the exact checker
// (internal/lin) runs, so that pmlin check and the Go API name the object
// or the operation to blame in their own terms: a line of the file, an
// index of the caller's.
package objcheck

import (
	"fmt"

	"github.com/pmlin/pmlin/model"
)

// Error is an object whose model is unknown or refuses its parameters
// (Op -1), or an operation its model does not have (Object -1).
type Error struct {
	Object, Op int
	// Line is the line to blame in the history read: the object's
	// declaration, the operation's invocation, or its response when only
	// its results are wrong; 0 when the history was not read from a file.
	Line int64
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Validate makes each object's model (models: nil for model.Builtin) and
// checks each operation against it, as internal/lin does before it
// searches.
func Validate(h *model.History, models func(string) model.Maker) error {
	if models == nil {
		models = model.Builtin
	}
	ms := make([]*model.Model, len(h.Objects))
	for i, o := range h.Objects {
		fail := func(format string, args ...any) error {
			return &Error{Object: i, Op: -1, Line: ObjectLine(h, i), Msg: fmt.Sprintf("object %s: ", o.Name) + fmt.Sprintf(format, args...)}
		}
		mk := models(o.Model)
		if mk == nil {
			return fail("unknown model %q (docs/history-format.md lists the built-in models)", o.Model)
		}
		m, err := mk(o.Params)
		if err != nil {
			return fail("%v", err)
		}
		if m == nil || m.Init == nil || m.Step == nil || m.Key == nil || m.Validate == nil {
			return fail("model %s lacks Init, Step, Key or Validate", o.Model)
		}
		ms[i] = m
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Object < 0 || op.Object >= len(ms) {
			return &Error{Object: -1, Op: i, Line: op.Line, Msg: fmt.Sprintf("process %d: an operation on object %d, of %d", op.Proc, op.Object, len(ms))}
		}
		if err := ms[op.Object].Validate(op); err != nil {
			// Results its model does not allow are the response's
			// fault: the operation without them is valid.
			line, unanswered := op.Line, *op
			unanswered.Status, unanswered.Results = model.CutOff, nil
			if op.Status == model.Returned && ms[op.Object].Validate(&unanswered) == nil {
				line = op.RetLine
			}
			return &Error{Object: -1, Op: i, Line: line, Msg: fmt.Sprintf("process %d: %v", op.Proc, err)}
		}
	}
	return nil
}

// ObjectLine is the line to blame for object i of h: its declaration,
// or (an object brought in by version 1 lines) its first operation's.
func ObjectLine(h *model.History, i int) int64 {
	if l := h.Objects[i].Line; l > 0 {
		return l
	}
	for k := range h.Ops {
		if h.Ops[k].Object == i {
			return h.Ops[k].Line
		}
	}
	return 0
}
