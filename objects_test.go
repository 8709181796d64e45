package pmlin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// A queue checked from Go, in Porcupine's shape: operations with call and
// return timestamps, the object and its model declared once. Process 2's
// deq returned a value nobody enqueued; the result names operations by
// their index in Operations.
func ExampleCheck_objects() {
	n := model.Number
	h := pmlin.History{
		Objects: []model.Object{{Name: "q", Model: "queue"}},
		Operations: []pmlin.Operation{
			{Process: 1, Name: "enq", Args: []model.Value{n(7)}, Call: 10, Return: 20, Outcome: pmlin.Returned, Results: []model.Value{model.Sym(model.OK)}},
			{Process: 2, Name: "deq", Call: 30, Return: 40, Outcome: pmlin.Returned, Results: []model.Value{n(8)}},
			{Process: 1, Name: "deq", Call: 35, Outcome: pmlin.Pending},
		},
		Crashes: []int64{50},
	}
	res, err := pmlin.Check(context.Background(), h, pmlin.Options{Mode: pmlin.Durable})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("linearizable:", res.Linearizable, "witness:", res.Witness)
	// Output:
	// linearizable: false witness: [1]
}

func qop(proc int, name string, call, ret int64, out pmlin.Outcome, args, results []model.Value) pmlin.Operation {
	return pmlin.Operation{Process: proc, Name: name, Args: args, Results: results, Call: call, Return: ret, Outcome: out}
}

func vals(vs ...uint64) []model.Value {
	out := make([]model.Value, len(vs))
	for i, v := range vs {
		out[i] = model.Number(v)
	}
	return out
}

var okv = []model.Value{model.Sym(model.OK)}

// TestCheckObjectsEngine: a map of unique values is answered by the
// unique-value engine, and Result.Engine says so.
func TestCheckObjectsEngine(t *testing.T) {
	nilv := []model.Value{model.Sym(model.Nil)}
	h := pmlin.History{
		Objects: []model.Object{{Name: "m", Model: "map"}},
		Operations: []pmlin.Operation{
			qop(1, "put", 10, 20, pmlin.Returned, vals(7, 100), nilv),
			qop(2, "get", 30, 40, pmlin.Returned, vals(7), vals(100)),
			qop(2, "get", 50, 60, pmlin.Returned, vals(7), vals(101)),
		},
	}
	res, err := pmlin.Check(context.Background(), h, pmlin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizable || res.Engine != "unique" || len(res.Anomalies) != 1 {
		t.Errorf("%+v", res)
	}
}

// TestCheckObjectsModes: a register's write cut off by a crash and seen
// only after its process's next operation: durable only; the caller's
// operations are listed in any order; the history as checked is version 2
// text naming each operation's index.
func TestCheckObjectsModes(t *testing.T) {
	h := pmlin.History{
		Objects: []model.Object{{Name: "x", Model: "register"}},
		Operations: []pmlin.Operation{
			qop(2, "read", 300, 310, pmlin.Returned, nil, vals(1)), // listed first, called last
			qop(1, "write", 10, 0, pmlin.Pending, vals(1), nil),
			qop(2, "read", 100, 110, pmlin.Returned, nil, vals(0)),
			qop(1, "read", 200, 210, pmlin.Returned, nil, vals(0)),
		},
		Crashes: []int64{50},
	}
	for mode, want := range map[pmlin.Mode]bool{pmlin.Strict: false, pmlin.Recoverable: false, pmlin.Durable: true} {
		res, err := pmlin.Check(context.Background(), h, pmlin.Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if res.Linearizable != want || res.Engine != "exact" || res.Mode != mode {
			t.Errorf("%v: %+v", mode, res)
		}
		if !want && (len(res.Witness) == 0 || len(res.Anomalies) != 1 || res.Anomalies[0].Kind != "nonlinearizable") {
			t.Errorf("%v: witness %v, anomalies %+v", mode, res.Witness, res.Anomalies)
		}
		var text bytes.Buffer
		if err := res.WriteHistory(&text); err != nil {
			t.Fatal(err)
		}
		mh, err := history.ReadV2(bytes.NewReader(text.Bytes()), "x")
		if err != nil {
			t.Fatalf("%v\n%s", err, text.String())
		}
		lines := strings.Split(text.String(), "\n")
		for i := range h.Operations {
			if l := res.Line(i); !strings.HasSuffix(lines[l-1], fmt.Sprintf("# op %d", i)) {
				t.Errorf("operation %d: line %d is %q", i, l, lines[l-1])
			}
		}
		if len(mh.Ops) != 4 || len(mh.Crashes) != 1 || mh.Ops[0].Name != "write" || mh.Ops[0].Crash != 0 || !strings.Contains(text.String(), "crash  # crash 0") {
			t.Errorf("the history as checked:\n%s", text.String())
		}
		var direct bytes.Buffer
		if _, err := h.WriteTo(&direct); err != nil || direct.String() != text.String() {
			t.Errorf("History.WriteTo: %v\n%s", err, direct.String())
		}
		var rep bytes.Buffer
		if err := res.WriteReport(&rep); err != nil || !strings.Contains(rep.String(), "object x (register)") {
			t.Errorf("report: %v\n%s", err, rep.String())
		}
	}
}

// TestCheckObjectsUnknown: an operation answered "?" (Unknown) may take
// effect at any time after its call, in every mode.
func TestCheckObjectsUnknown(t *testing.T) {
	h := pmlin.History{
		Objects: []model.Object{{Name: "c", Model: "counter"}, {Name: "s", Model: "set"}},
		Operations: []pmlin.Operation{
			qop(1, "add", 10, 20, pmlin.Unknown, vals(5), nil),
			{Process: 3, Object: 1, Name: "add", Args: vals(1), Call: 10, Return: 15, Outcome: pmlin.Returned, Results: []model.Value{model.Sym(model.True)}},
			qop(2, "get", 30, 40, pmlin.Returned, nil, vals(0)),
			qop(2, "get", 50, 60, pmlin.Returned, nil, vals(5)),
		},
	}
	res, err := pmlin.Check(context.Background(), h, pmlin.Options{})
	if err != nil || !res.Linearizable {
		t.Fatalf("%v, %+v", err, res)
	}
	h.Operations[3].Results = vals(6)
	if res, err := pmlin.Check(context.Background(), h, pmlin.Options{}); err != nil || res.Linearizable || len(res.Witness) == 0 || res.Witness[len(res.Witness)-1] != 3 {
		t.Fatalf("%v, %+v", err, res)
	}
}

// TestCheckObjectsOwnModel: a model of the caller's own, found by
// Options.Models beside the built-in ones.
func TestCheckObjectsOwnModel(t *testing.T) {
	// "latch": set -> ok, once; test -> true once set, false before.
	latch := func(params []model.Param) (*model.Model, error) {
		return &model.Model{
			Init: func() []any { return []any{false} },
			Step: func(s any, op *model.Op) []any {
				set := s.(bool)
				switch {
				case op.Name == "set":
					return []any{true}
				case op.Status != model.Returned:
					return []any{set}
				case op.Results[0] == model.Sym(model.True) && set, op.Results[0] == model.Sym(model.False) && !set:
					return []any{set}
				}
				return nil
			},
			Key:      func(s any) string { return fmt.Sprint(s) },
			Validate: func(op *model.Op) error { return nil },
		}, nil
	}
	models := func(name string) model.Maker {
		if name == "latch" {
			return latch
		}
		return model.Builtin(name)
	}
	tr, fa := []model.Value{model.Sym(model.True)}, []model.Value{model.Sym(model.False)}
	h := pmlin.History{
		Objects: []model.Object{{Name: "l", Model: "latch"}},
		Operations: []pmlin.Operation{
			qop(1, "test", 10, 20, pmlin.Returned, nil, fa),
			qop(1, "set", 30, 40, pmlin.Returned, nil, okv),
			qop(2, "test", 50, 60, pmlin.Returned, nil, fa),
		},
	}
	res, err := pmlin.Check(context.Background(), h, pmlin.Options{Models: models})
	if err != nil || res.Linearizable || !slicesEqual(res.Witness, []int{2}) && !slicesEqual(res.Witness, []int{1, 2}) {
		t.Fatalf("%v, %+v", err, res)
	}
	h.Operations[2].Results = tr
	if res, err := pmlin.Check(context.Background(), h, pmlin.Options{Models: models}); err != nil || !res.Linearizable {
		t.Fatalf("%v, %+v", err, res)
	}
	if _, err := pmlin.Check(context.Background(), h, pmlin.Options{}); err == nil || !strings.Contains(err.Error(), `unknown model "latch"`) {
		t.Fatalf("without Models: %v", err)
	}
}

func slicesEqual(a, b []int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestCheckObjectsErrors: what Check cannot judge is an *Error naming the
// caller's operation.
func TestCheckObjectsErrors(t *testing.T) {
	good := func() pmlin.History {
		return pmlin.History{
			Objects: []model.Object{{Name: "q", Model: "queue"}},
			Operations: []pmlin.Operation{
				qop(1, "enq", 10, 20, pmlin.Returned, vals(1), okv),
				qop(2, "deq", 30, 40, pmlin.Returned, nil, vals(1)),
			},
		}
	}
	if res, err := pmlin.Check(context.Background(), good(), pmlin.Options{}); err != nil || !res.Linearizable {
		t.Fatalf("the good history: %v", err)
	}
	for _, c := range []struct {
		name   string
		change func(h *pmlin.History)
		op     int
		want   string
		kind   error
	}{
		{"no operation", func(h *pmlin.History) { h.Operations = nil }, -1, "no operation", pmlin.ErrIllFormed},
		{"unknown model", func(h *pmlin.History) { h.Objects[0].Model = "quue" }, -1, `object q: unknown model "quue"`, pmlin.ErrIllFormed},
		{"bad parameter", func(h *pmlin.History) { h.Objects[0].Params = []model.Param{{Key: "cap", Value: "x"}} }, -1, "object q: ", pmlin.ErrIllFormed},
		{"no such operation", func(h *pmlin.History) { h.Operations[1].Name = "pop" }, 1, `queue has no operation "pop"`, pmlin.ErrIllFormed},
		{"wrong results", func(h *pmlin.History) { h.Operations[0].Results = vals(3) }, 0, "queue enq", pmlin.ErrIllFormed},
		{"no results", func(h *pmlin.History) { h.Operations[0].Results = nil }, 0, "returned no result", pmlin.ErrIllFormed},
		{"results of a pending", func(h *pmlin.History) { h.Operations[1].Outcome = pmlin.Pending }, 1, "has Results but ended pending", pmlin.ErrIllFormed},
		{"word-array fields", func(h *pmlin.History) { h.Operations[1].Kind = pmlin.Read }, 1, "has the word array's fields", pmlin.ErrSyntax},
		{"no such object", func(h *pmlin.History) { h.Operations[1].Object = 1 }, 1, "acts on object 1", pmlin.ErrSyntax},
		{"a cas outcome", func(h *pmlin.History) { h.Operations[1].Outcome = pmlin.OK }, 1, "ends Returned, Unknown or Pending", pmlin.ErrIllFormed},
		{"overlap", func(h *pmlin.History) { h.Operations[1].Process = 1; h.Operations[1].Call = 15 }, 1, "must not overlap", pmlin.ErrIllFormed},
		{"initial words", func(h *pmlin.History) { h.Init = 5 }, -1, "initial values as its objects' parameters", pmlin.ErrSyntax},
		{"bad object name", func(h *pmlin.History) { h.Objects[0].Name = "Q" }, -1, `object name "Q"`, pmlin.ErrSyntax},
		{"coarse clock", func(h *pmlin.History) {
			h.Operations = append(h.Operations, qop(1, "deq", 40, 50, pmlin.Returned, nil, []model.Value{model.Sym(model.Empty)}),
				qop(2, "enq", 40, 50, pmlin.Returned, vals(2), okv))
			h.Operations[0].Return = 40
		}, 0, "", pmlin.ErrCoarseClock},
	} {
		h := good()
		c.change(&h)
		_, err := pmlin.Check(context.Background(), h, pmlin.Options{})
		var pe *pmlin.Error
		if !errors.As(err, &pe) || pe.Op != c.op && c.kind != pmlin.ErrCoarseClock || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.kind) {
			t.Errorf("%s: %v (%#v), want operation %d, %q", c.name, err, pe, c.op, c.want)
		}
	}
	// The word array's operations in a history without objects keep
	// their meaning, and an object's fields there are refused.
	w := pmlin.History{Operations: []pmlin.Operation{{Process: 1, Kind: pmlin.Read, Addrs: []uint64{1}, Call: 1, Return: 2, Outcome: pmlin.Returned, Values: []uint64{0}, Name: "read"}}}
	if _, err := pmlin.Check(context.Background(), w, pmlin.Options{}); err == nil || !strings.Contains(err.Error(), "History.Objects") {
		t.Errorf("an object's field in a word history: %v", err)
	}
}

// TestCheckObjectsHTML: Result.WriteHTML writes a history of objects'
// report, its witness highlighted (the deq of a value never enqueued).
func TestCheckObjectsHTML(t *testing.T) {
	h := pmlin.History{
		Objects: []model.Object{{Name: "q", Model: "queue"}},
		Operations: []pmlin.Operation{
			qop(1, "enq", 10, 20, pmlin.Returned, vals(7), okv),
			qop(2, "deq", 30, 40, pmlin.Returned, nil, vals(8)),
		},
	}
	res, err := pmlin.Check(context.Background(), h, pmlin.Options{})
	if err != nil || res.Linearizable {
		t.Fatalf("%v %+v", err, res)
	}
	var b bytes.Buffer
	if err := res.WriteHTML(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `data-object="q"`) || strings.Count(page, `<g class="op`) != 2 || strings.Count(page, `<g class="op hl`) != 1 {
		t.Fatalf("no timeline of q with its witness highlighted:\n%s", page)
	}
}

// TestCheckObjectsLinError: an operation the exact checker refuses after
// the validation up front passed it (a model of the caller's whose
// Validate changes its mind) is blamed by the caller's index, in Error.Op
// and its message, never by a line of the version 2 text.
func TestCheckObjectsLinError(t *testing.T) {
	calls := 0
	fickle := func(params []model.Param) (*model.Model, error) {
		m, err := model.Builtin("counter")(params)
		if err != nil {
			return nil, err
		}
		validate := m.Validate
		m.Validate = func(op *model.Op) error {
			if op.Name == "get" {
				if calls++; calls > 1 {
					return errors.New("get is refused the second time")
				}
			}
			return validate(op)
		}
		return m, nil
	}
	models := func(name string) model.Maker {
		if name == "fickle" {
			return fickle
		}
		return model.Builtin(name)
	}
	h := pmlin.History{
		Objects: []model.Object{{Name: "c", Model: "fickle"}},
		Operations: []pmlin.Operation{
			qop(2, "get", 30, 40, pmlin.Returned, nil, vals(1)),
			qop(1, "add", 10, 20, pmlin.Returned, vals(1), okv),
		},
	}
	_, err := pmlin.Check(context.Background(), h, pmlin.Options{Models: models})
	var pe *pmlin.Error
	if !errors.As(err, &pe) || pe.Op != 0 || !errors.Is(err, pmlin.ErrIllFormed) || err.Error() != "operation 0: get is refused the second time" {
		t.Fatalf("%#v: %v", pe, err)
	}
}
