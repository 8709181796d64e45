package lin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// v1Text writes a words history without `?` and with one object as a
// version 1 file (docs/history-format.md, version 1), or says why not.
func v1Text(h *model.History) (string, bool) {
	if len(h.Objects) != 1 {
		return "", false
	}
	var b strings.Builder
	b.WriteString("pmlin-history v1\n")
	for _, p := range h.Objects[0].Params {
		if p.Key == "init" {
			fmt.Fprintf(&b, "init %s\n", p.Value)
		} else {
			fmt.Fprintf(&b, "init %s=%s\n", p.Key, p.Value)
		}
	}
	ev := make([]string, h.Events)
	for _, c := range h.Crashes {
		ev[c.Pos] = "crash"
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Status == model.Unknown {
			return "", false
		}
		addrs, exp, new := wordsOp(op.Name, op.Args)
		inv := fmt.Sprintf("%d inv %s", op.Proc, op.Name)
		for j, a := range addrs {
			switch op.Name {
			case "read":
				inv += fmt.Sprintf(" %d", a)
			case "swap":
				inv += fmt.Sprintf(" %d:%d", a, new[j])
			case "cas":
				inv += fmt.Sprintf(" %d:%d:%d", a, exp[j], new[j])
			}
		}
		ev[op.Call] = inv
		if op.Status == model.Returned {
			ret := fmt.Sprintf("%d ret", op.Proc)
			for _, r := range op.Results {
				ret += " " + r.String()
			}
			ev[op.Return] = ret
		}
	}
	for _, e := range ev {
		b.WriteString(e + "\n")
	}
	return b.String(), true
}

// TestOracleWordsAgainstVersion1 compares the brute force on words with
// version 1's exact checker (package exact), an older oracle with crash
// modes of its own, on histories with crashes. Version 1 reads the
// recoverable window as an order constraint (history.Mode), so the brute
// force is asked for that reading here: this checks the brute force's
// windows and words specification, not the reading version 2 chose.
func TestOracleWordsAgainstVersion1(t *testing.T) {
	n := testenv.Count(0, 2000, 20000)
	mi := len(genModels) + 1
	var compared, yes, crashed int
	for i := range n {
		h := genHistory(rand.New(rand.NewPCG(uint64(i), uint64(mi))), genConfigFor("words", i))
		text, ok := v1Text(h)
		if !ok {
			continue
		}
		h1, err := history.ReadAll(strings.NewReader(text), "v1")
		if err != nil {
			t.Fatalf("seed (%d, %d): %v\n%s", i, mi, err, text)
		}
		if len(h.Crashes) > 0 {
			crashed++
		}
		for _, mode := range history.Modes {
			b, err := bruteForceReading(h, mode, recoverOrder)
			if err != nil {
				t.Fatal(err)
			}
			res, err := exact.Check(context.Background(), h1, exact.Options{Mode: mode})
			if err != nil {
				t.Fatalf("seed (%d, %d): %v", i, mi, err)
			}
			if b != res.Linearizable {
				t.Fatalf("seed (%d, %d), %v: brute force says %v, version 1's exact checker %v\n%s", i, mi, mode, b, res.Linearizable, text)
			}
			compared++
			if b {
				yes++
			}
		}
	}
	t.Logf("words: %d verdicts (histories x modes) agree with version 1's exact checker, %d linearizable; %d histories with crashes", compared, yes, crashed)
	if yes == 0 || yes == compared || crashed == 0 {
		t.Error("one verdict only, or no crash")
	}
}
