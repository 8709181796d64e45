package lin

import (
	"context"
	"fmt"
	"testing"

	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// fromV1 is a version 1 history as a version 2 one: one object "words".
func fromV1(h *history.History) *model.History {
	obj := model.Object{Name: "words", Model: "words", Params: []model.Param{{Key: "init", Value: fmt.Sprint(h.InitDefault)}}}
	for a, v := range h.Init {
		obj.Params = append(obj.Params, model.Param{Key: fmt.Sprint(a), Value: fmt.Sprint(v)})
	}
	m := &model.History{Objects: []model.Object{obj}, Events: h.Events}
	for _, pos := range h.Crashes {
		m.Crashes = append(m.Crashes, model.Crash{Pos: pos})
	}
	for _, op := range h.Ops {
		o := model.Op{Proc: int64(op.Proc), Line: op.Line, Call: op.Inv, Return: op.Ret, Crash: op.Crash, Status: model.Returned}
		for j, a := range op.Addrs {
			o.Args = append(o.Args, model.Number(a))
			switch op.Kind {
			case history.CAS:
				o.Args = append(o.Args, model.Number(op.Expected[j]), model.Number(op.New[j]))
			case history.Swap:
				o.Args = append(o.Args, model.Number(op.New[j]))
			}
		}
		o.Name = map[history.OpKind]string{history.Read: "read", history.CAS: "cas", history.Swap: "swap"}[op.Kind]
		switch op.Status {
		case history.Pending:
			o.Status = model.CutOff
		case history.Succeeded:
			o.Results = []model.Value{model.Sym(model.OK)}
		case history.Failed:
			o.Results = []model.Value{model.Sym(model.Fail), model.Number(op.FailAddr)}
		}
		if op.Status == history.Returned || op.Status == history.Failed {
			for _, v := range op.Values {
				o.Results = append(o.Results, model.Number(v))
			}
		}
		m.Ops = append(m.Ops, o)
	}
	return m
}

// TestAgreesWithExact: on the word histories of histgen (the mutated
// random histories that package exact's own differential test uses), the
// words model under this checker and package exact (another search, with
// its own statement of the rules) agree in every mode, recoverable
// mode's process order included.
func TestAgreesWithExact(t *testing.T) {
	n := uint64(1500)
	if testenv.Long() {
		n = 20000
	}
	for _, m := range history.Modes {
		agree, lin := 0, 0
		for seed := range n {
			cfg := histgen.RandomSmallConfig(seed)
			cfg.Mode = m
			c := histgen.RandomCase(cfg, seed)
			want, err := exact.Check(context.Background(), c.History, exact.Options{Mode: m})
			if err != nil {
				t.Fatal(err)
			}
			got, err := Check(context.Background(), fromV1(c.History), Options{Mode: m, NoShrink: true})
			if err != nil {
				t.Fatalf("seed %d: %v\n%s", seed, err, histgen.Text(c.History))
			}
			if want.Linearizable == (got.Verdict == Linearizable) {
				agree++
			} else {
				t.Errorf("seed %d, %s: exact says linearizable=%v, lin %v\n%s", seed, m, want.Linearizable, got.Verdict, histgen.Text(c.History))
			}
			if got.Verdict == Linearizable {
				lin++
			}
		}
		t.Logf("%s: %d histories, %d agree (%d linearizable)", m, n, agree, lin)
	}
}
