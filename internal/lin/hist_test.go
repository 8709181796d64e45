package lin

import (
	"strings"
	"testing"

	"github.com/pmlin/pmlin/model"
)

// parse reads a small version 2 history for the tests ("object NAME
// MODEL [K=V...]", "P inv OBJ OP ARGS", "P ret RESULTS|?", "crash"); the
// real readers are package history's. Version 1 words syntax (a:e:n) is
// flattened as docs/history-format.md says.
func parse(t testing.TB, text string) *model.History {
	t.Helper()
	h, err := parseHist(text)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func parseHist(text string) (*model.History, error) {
	h := &model.History{Name: "test.hist"}
	objs := map[string]int{}
	pending := map[int64]int{}
	for n, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		lineNo := int64(n + 1)
		switch {
		case f[0] == "object":
			o := model.Object{Name: f[1], Model: f[2], Line: lineNo}
			for _, kv := range f[3:] {
				k, v, _ := strings.Cut(kv, "=")
				o.Params = append(o.Params, model.Param{Key: k, Value: v})
			}
			objs[f[1]] = len(h.Objects)
			h.Objects = append(h.Objects, o)
		case f[0] == "crash":
			h.Crashes = append(h.Crashes, model.Crash{Pos: h.Events, Line: lineNo})
			for p, i := range pending {
				h.Ops[i].Crash = len(h.Crashes) - 1
				delete(pending, p)
			}
			h.Events++
		case f[1] == "inv":
			var p int64
			for _, c := range f[0] {
				p = p*10 + int64(c-'0')
			}
			var args []model.Value
			for _, a := range f[4:] {
				for _, s := range strings.Split(a, ":") {
					v, err := model.ParseValue(s)
					if err != nil {
						return nil, err
					}
					args = append(args, v)
				}
			}
			pending[p] = len(h.Ops)
			h.Ops = append(h.Ops, model.Op{Proc: p, Object: objs[f[2]], Name: f[3], Args: args, Status: model.CutOff,
				Call: h.Events, Return: -1, Crash: -1, Line: lineNo})
			h.Events++
		case f[1] == "ret":
			var p int64
			for _, c := range f[0] {
				p = p*10 + int64(c-'0')
			}
			op := &h.Ops[pending[p]]
			delete(pending, p)
			op.Return, op.RetLine = h.Events, lineNo
			if f[2] == "?" {
				op.Status = model.Unknown
			} else {
				op.Status = model.Returned
				for _, a := range f[2:] {
					v, err := model.ParseValue(a)
					if err != nil {
						return nil, err
					}
					op.Results = append(op.Results, v)
				}
			}
			h.Events++
		}
	}
	return h, nil
}
