package lin

import (
	"context"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// fuzzVocab is every built-in model with its operations' names, and a few
// names no model has.
var fuzzVocab = []struct {
	model  string
	params []model.Param
	names  []string
	arity  []int    // of each name; words: per word
	kinds  []string // of each name's result: n number, N nil, o ok, f fail, e empty, t true, F false
}{
	{"register", nil, []string{"read", "write", "cas"}, []int{0, 1, 2}, []string{"nN", "o", "of"}},
	{"register", []model.Param{{Key: "init", Value: "nil"}}, []string{"read", "write", "cas"}, []int{0, 1, 2}, []string{"nN", "o", "of"}},
	{"counter", nil, []string{"add", "get", "fetchadd"}, []int{1, 0, 1}, []string{"o", "n", "n"}},
	{"queue", []model.Param{{Key: "cap", Value: "2"}}, []string{"enq", "deq"}, []int{1, 0}, []string{"of", "ne"}},
	{"queue", nil, []string{"enq", "deq"}, []int{1, 0}, []string{"o", "ne"}},
	{"stack", []model.Param{{Key: "cap", Value: "1"}}, []string{"push", "pop"}, []int{1, 0}, []string{"of", "ne"}},
	{"pqueue", nil, []string{"insert", "removemin"}, []int{1, 0}, []string{"o", "ne"}},
	{"kqueue", []model.Param{{Key: "k", Value: "1"}}, []string{"enq", "deq"}, []int{1, 0}, []string{"o", "ne"}},
	{"set", nil, []string{"add", "remove", "contains"}, []int{1, 1, 1}, []string{"tF", "tF", "tF"}},
	{"map", nil, []string{"put", "get", "remove", "putifabsent"}, []int{2, 1, 1, 2}, []string{"nN", "nN", "nN", "nN"}},
	{"mutex", nil, []string{"acquire", "release"}, []int{0, 0}, []string{"o", "o"}},
	{"words", []model.Param{{Key: "init", Value: "1"}}, []string{"read", "cas", "swap"}, []int{1, 3, 2}, []string{"n", "of", "n"}},
}

var fuzzKinds = map[byte]model.Value{'N': model.Sym(model.Nil), 'o': model.Sym(model.OK), 'f': model.Sym(model.Fail),
	'e': model.Sym(model.Empty), 't': model.Sym(model.True), 'F': model.Sym(model.False)}

var fuzzValues = []model.Value{model.Number(0), model.Number(1), model.Number(2), model.Number(3),
	model.Sym(model.Nil), model.Sym(model.OK), model.Sym(model.Fail), model.Sym(model.Empty),
	model.Sym(model.True), model.Sym(model.False)}

// fuzzHistory makes a well-placed history (positions, crashes and
// statuses consistent, as a reader makes them) of arbitrary operations
// from data: names, arities and results may be anything, so that
// validation sees bad operations too.
func fuzzHistory(data []byte) (*model.History, history.Mode) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	value := func() model.Value {
		if n := next(); n%16 != 0 {
			return model.Number(uint64(n) % 4)
		} else {
			return fuzzValues[n/16%len(fuzzValues)]
		}
	}
	mode := history.Modes[next()%3]
	h := &model.History{}
	nobj := 1 + next()%2
	vocab := make([]int, nobj)
	for k := range nobj {
		vocab[k] = next() % len(fuzzVocab)
		v := fuzzVocab[vocab[k]]
		h.Objects = append(h.Objects, model.Object{Name: string(rune('a' + k)), Model: v.model, Params: v.params})
	}
	type shape struct {
		n     int    // results
		kinds string // of the first
		word  uint64 // an address of a words cas, for its fail
	}
	shapes := map[int]shape{}

	pending := map[int64]int{}
	for len(data) > 0 && len(h.Ops) < 9 {
		c := next()
		p := int64(c % 4)
		switch {
		case c>>2%8 == 0:
			h.Crashes = append(h.Crashes, model.Crash{Pos: h.Events})
			for q, i := range pending {
				h.Ops[i-1].Crash = len(h.Crashes) - 1
				delete(pending, q)
			}
			h.Events++
		case pending[p] != 0:
			idx := pending[p] - 1
			op := &h.Ops[idx]
			delete(pending, p)
			op.Return = h.Events
			h.Events++
			if next()%6 == 0 {
				op.Status = model.Unknown
				continue
			}
			op.Status = model.Returned
			sh := shapes[idx]
			if next()%16 == 0 {
				for range next() % 4 {
					op.Results = append(op.Results, value())
				}
				continue
			}
			want := sh.n
			if k := sh.kinds[next()%len(sh.kinds)]; k != 'n' {
				op.Results = append(op.Results, fuzzKinds[k])
				want = 0
				if k == 'f' && h.Objects[op.Object].Model == "words" {
					op.Results = append(op.Results, model.Number(sh.word))
					if next()%2 == 0 {
						want = sh.n
					}
				}
			}
			for range want {
				op.Results = append(op.Results, model.Number(uint64(next()%4)))
			}
		default:
			obj := next() % nobj
			v := fuzzVocab[vocab[obj]]
			name, arity, sh := "nope", next()%4, shape{n: 1, kinds: "n"}
			if n := next(); n%16 != 0 {
				name, arity, sh.kinds = v.names[n%len(v.names)], v.arity[n%len(v.names)], v.kinds[n%len(v.names)]
				if v.model == "words" {
					k := 1 + next()%2
					arity *= k
					sh.n = k
				}
			}
			if next()%8 == 0 {
				arity = next() % 4
			}
			op := model.Op{Proc: p, Object: obj, Name: name, Status: model.CutOff, Call: h.Events, Return: -1, Crash: -1}
			for j := range arity {
				op.Args = append(op.Args, value())
				if st := max(1, arity/max(1, sh.n)); v.model == "words" && j%st == 0 {
					op.Args[j] = model.Number(uint64(len(h.Ops)+j/st) % 3) // distinct addresses
				}
			}
			if len(op.Args) > 0 {
				sh.word = op.Args[0].N
			}
			shapes[len(h.Ops)] = sh
			h.Ops = append(h.Ops, op)
			pending[p] = len(h.Ops)
			h.Events++
		}
	}
	return h, mode
}

// unpartitioned is model.Builtin without partitions.
func unpartitioned(name string) model.Maker {
	mk := model.Builtin(name)
	if mk == nil {
		return nil
	}
	return func(ps []model.Param) (*model.Model, error) {
		m, err := mk(ps)
		if err != nil {
			return nil, err
		}
		c := *m
		c.Partition = nil
		return &c, nil
	}
}

// FuzzCheck: no panic on any history; an error only from validation
// (never for a history that validation accepts), a verdict for every
// object otherwise, a witness for every violation; and the modes nest: a
// history linearizable in strict mode is in recoverable mode, and one
// linearizable in recoverable mode is in durable mode (each mode's
// completions include the stricter one's); and checking without the
// models' partitions gives the same verdicts.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{0, 0, 8, 1, 1, 1, 1, 2, 1, 0, 0, 5, 9, 1})
	f.Add([]byte{2, 1, 3, 12, 0, 1, 1, 1, 12, 1, 3, 0, 0, 4, 1, 2, 3})
	f.Add([]byte{1, 0, 9, 4, 0, 2, 2, 1, 2, 8, 0, 1, 2, 4, 1, 5, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, _ := fuzzHistory(data)
		var verdicts [3]Verdict
		for _, mode := range history.Modes {
			res, err := Check(context.Background(), h, Options{Mode: mode, MaxStates: 20000})
			if err != nil {
				return
			}
			if len(res.Objects) != len(h.Objects) {
				t.Fatalf("%d results for %d objects", len(res.Objects), len(h.Objects))
			}
			for _, o := range res.Objects {
				if o.Verdict == Violation && (o.Explanation == nil || len(o.Explanation.Ops) == 0) {
					t.Fatalf("violation of %s without a witness", o.Name)
				}
			}
			verdicts[mode] = res.Verdict
			// P-compositionality: the same verdict without partitions.
			whole, err := Check(context.Background(), h, Options{Mode: mode, MaxStates: 20000, NoShrink: true, Models: unpartitioned})
			if err != nil {
				t.Fatal(err)
			}
			if whole.Verdict != res.Verdict && whole.Verdict != Undecided && res.Verdict != Undecided {
				t.Fatalf("%v: %v by partitions, %v whole\n%s", mode, res.Verdict, whole.Verdict, fmtHist(h))
			}
		}
		for m := 1; m < 3; m++ {
			if verdicts[m-1] == Linearizable && verdicts[m] == Violation {
				t.Fatalf("linearizable in %v but not in %v: %v\n%s", history.Modes[m-1], history.Modes[m], verdicts, fmtHist(h))
			}
		}
	})
}
