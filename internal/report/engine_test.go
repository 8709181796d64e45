package report_test

import (
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/model"
)

// TestObjectsEngine: the history's engine is the one every object with
// operations was answered by, "exact" when the search answered one, and
// "mixed" when the queue and unique-value engines shared them; the text
// names each object's fast engine.
func TestObjectsEngine(t *testing.T) {
	h := &model.History{Objects: []model.Object{{Name: "a", Model: "map"}, {Name: "b", Model: "queue"}, {Name: "c", Model: "register"}}}
	for _, c := range []struct {
		engines []string
		ops     []int
		want    string
		text    []string
	}{
		{[]string{lin.EngineUnique, lin.EngineUnique, lin.EngineExact}, []int{1, 1, 0}, lin.EngineUnique,
			[]string{"(strict mode, unique-value engine)", "object a (map): linearizable, 1 operations\n"}},
		{[]string{lin.EngineUnique, lin.EngineQueue, lin.EngineExact}, []int{1, 1, 0}, "mixed",
			[]string{"(strict mode, several engines)", "object b (queue): linearizable, 1 operations, by the queue engine"}},
		{[]string{lin.EngineUnique, lin.EngineQueue, lin.EngineExact}, []int{1, 1, 1}, lin.EngineExact,
			[]string{"(strict mode, exact search)", "object c (register): linearizable, 1 operations\n"}},
	} {
		res := &lin.Result{Verdict: lin.Linearizable}
		for k, e := range c.engines {
			res.Objects = append(res.Objects, lin.ObjectResult{Object: k, Name: h.Objects[k].Name, Model: h.Objects[k].Model, Ops: c.ops[k], Engine: e})
		}
		v := report.NewObjectsVerdict(h, "x.hist", res)
		var b strings.Builder
		if err := v.Text(&b, nil); err != nil {
			t.Fatal(err)
		}
		if v.Engine != c.want {
			t.Errorf("%v: engine %q, want %q", c.engines, v.Engine, c.want)
		}
		for _, s := range c.text {
			if !strings.Contains(b.String(), s) {
				t.Errorf("%v: no %q in\n%s", c.engines, s, b.String())
			}
		}
	}
}
