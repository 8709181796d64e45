package objcheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/model"
)

// TestValidate: each refusal names the object or the operation and the
// line to blame: the declaration, the invocation, or the response when
// only the results are wrong; an object brought in by version 1 lines is
// blamed at its first operation.
func TestValidate(t *testing.T) {
	n := model.Number
	h := func() *model.History {
		return &model.History{
			Objects: []model.Object{{Name: "q", Model: "queue", Line: 2}, {Name: "words", Model: "words"}},
			Ops: []model.Op{
				{Proc: 1, Object: 0, Name: "enq", Args: []model.Value{n(1)}, Results: []model.Value{model.Sym(model.OK)}, Call: 0, Return: 1, Crash: -1, Line: 3, RetLine: 4},
				{Proc: 2, Object: 1, Name: "read", Args: []model.Value{n(5)}, Results: []model.Value{n(0)}, Call: 2, Return: 3, Crash: -1, Line: 5, RetLine: 6},
			},
			Events: 4,
		}
	}
	if err := Validate(h(), nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		change     func(h *model.History)
		object, op int
		line       int64
		want       string
	}{
		{"unknown model", func(h *model.History) { h.Objects[0].Model = "quue" }, 0, -1, 2, `object q: unknown model "quue"`},
		{"bad parameter", func(h *model.History) { h.Objects[0].Params = []model.Param{{Key: "cap", Value: "x"}} }, 0, -1, 2, "object q: "},
		{"implicit words", func(h *model.History) { h.Objects[1].Params = []model.Param{{Key: "init", Value: "nil"}} }, 1, -1, 5, "object words: "},
		{"no such operation", func(h *model.History) { h.Ops[0].Name = "push" }, -1, 0, 3, `process 1: queue has no operation "push"`},
		{"wrong results", func(h *model.History) { h.Ops[0].Results = []model.Value{n(7)} }, -1, 0, 4, "process 1: queue enq"},
		{"wrong arguments", func(h *model.History) { h.Ops[1].Args = nil }, -1, 1, 5, "process 2: words read"},
		{"no such object", func(h *model.History) { h.Ops[1].Object = 2 }, -1, 1, 5, "process 2: an operation on object 2, of 2"},
	} {
		hh := h()
		c.change(hh)
		err := Validate(hh, nil)
		var e *Error
		if !errors.As(err, &e) || e.Object != c.object || e.Op != c.op || e.Line != c.line || !strings.HasPrefix(e.Msg, c.want) {
			t.Errorf("%s: %#v", c.name, err)
		}
	}
	own := func(name string) model.Maker { return nil }
	if err := Validate(h(), own); err == nil || !strings.Contains(err.Error(), `unknown model "queue"`) {
		t.Errorf("models: %v", err)
	}
}
