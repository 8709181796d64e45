package exact

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

func parse(t testing.TB, text string) *history.History {
	t.Helper()
	h, err := history.ReadAll(strings.NewReader(text), "test")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return h
}

// verdicts are the expected answers in Strict, Recoverable and Durable mode.
type verdicts [3]bool

var (
	all  = verdicts{true, true, true}
	none = verdicts{false, false, false}
)

// checkAll runs Check in every mode, compares with want, validates every
// linearizable answer and compares with the brute force when it is small.
func checkAll(t *testing.T, h *history.History, want verdicts) {
	t.Helper()
	for _, mode := range history.Modes {
		res, err := Check(context.Background(), h, Options{Mode: mode})
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if res.Linearizable != want[mode] {
			t.Errorf("%v: linearizable = %v, want %v (failing %v)", mode, res.Linearizable, want[mode], res.Failing)
		}
		if res.Linearizable {
			if err := Validate(h, mode, res.Order); err != nil {
				t.Errorf("%v: order %v does not validate: %v", mode, res.Order, err)
			}
		} else if len(res.Failing) == 0 {
			t.Errorf("%v: not linearizable but no failing component", mode)
		}
		if len(h.Ops) <= 8 {
			if bf := bruteForce(h, mode); bf != res.Linearizable {
				t.Errorf("%v: brute force says %v, Check %v", mode, bf, res.Linearizable)
			}
		}
	}
}

func TestRules(t *testing.T) {
	tests := []struct {
		name string
		hist string
		want verdicts
	}{
		{"empty", ``, all},
		{"sequential", `
			1 inv cas 1:0:5
			1 ret ok
			1 inv read 1
			1 ret 5`, all},
		{"real time: a read after a completed write sees it", `
			1 inv cas 1:0:5
			1 ret ok
			2 inv read 1
			2 ret 0`, none},
		{"real time: a concurrent read may see the old value", `
			1 inv cas 1:0:5
			2 inv read 1
			2 ret 0
			1 ret ok`, all},
		{"real time: reads cannot go back", `
			1 inv cas 1:0:5
			2 inv read 1
			2 ret 5
			2 inv read 1
			2 ret 0
			1 ret ok`, none},
		{"real time is transitive across words", `
			1 inv cas 1:0:5
			2 inv read 2
			2 ret 7
			1 ret ok
			3 inv cas 2:0:7
			3 ret ok`, none},
		{"multi-word read is atomic", `
			1 inv cas 1:0:5 2:0:6
			2 inv read 1 2
			2 ret 5 0
			1 ret ok`, none},
		{"multi-word read sees all or nothing", `
			1 inv cas 1:0:5 2:0:6
			2 inv read 1 2
			2 ret 5 6
			2 inv read 2 1
			2 ret 6 5
			1 ret ok`, all},
		{"fail blaming a word that matches is wrong", `
			1 inv cas 1:0:5 2:7:8
			1 ret fail 1`, none},
		{"fail blaming a differing word is fine though another matches", `
			1 inv cas 1:0:5 2:7:8
			1 ret fail 2`, all},
		{"fail where every word matches is wrong", `
			1 inv cas 1:0:5
			1 ret fail 1`, none},
		{"fail explained by a concurrent write", `
			1 inv cas 1:0:5
			2 inv cas 1:0:6
			2 ret fail 1
			1 ret ok`, all},
		{"cas expecting a value nobody wrote", `
			1 inv cas 1:7:8
			1 ret ok`, none},
		{"cas expecting the initial value of its word", `
			init 1=7
			1 inv cas 1:7:8 2:0:1
			1 ret ok
			1 inv read 1 2 3
			1 ret 8 1 0`, all},
		{"pending read is dropped", `
			1 inv read 1
			crash
			2 inv read 1
			2 ret 0`, all},
		{"crashed cas dropped", `
			1 inv cas 1:0:5
			crash
			2 inv read 1
			2 ret 0`, all},
		{"crashed cas took effect", `
			1 inv cas 1:0:5
			crash
			2 inv read 1
			2 ret 5`, all},
		{"crashed cas takes effect after its invocation only", `
			2 inv read 1
			2 ret 5
			1 inv cas 1:0:5
			crash`, none},
		{"a failure explained only by a crashed cas", `
			1 inv cas 1:0:5
			crash
			2 inv cas 1:0:6
			2 ret fail 1`, all},
		{"a failure explained by a crashed cas that nothing else saw", `
			1 inv cas 1:0:5 2:0:5
			crash
			2 inv cas 1:0:6
			2 ret fail 1
			2 inv read 2
			2 ret 5`, all},
		{"a crashed cas cannot explain a failure and a later initial value", `
			1 inv cas 1:0:5
			crash
			2 inv cas 1:0:6
			2 ret fail 1
			2 inv read 1
			2 ret 0`, none},
		{"a crashed cas takes effect wholly or not at all", `
			1 inv cas 1:0:5 2:0:6
			crash
			2 inv read 1
			2 ret 5
			2 inv read 2
			2 ret 0`, none},
		{"a crashed cas succeeds only if its expected values match", `
			1 inv cas 1:0:5
			1 ret ok
			2 inv cas 1:0:6
			crash
			3 inv read 1
			3 ret 6`, none},
		// Strict: a crashed cas precedes everything invoked after the crash.
		// Recoverable: it need only precede its process's next op.
		{"late effect: recoverable but not strict", `
			1 inv cas 1:0:5
			crash
			2 inv read 1
			2 ret 0
			2 inv read 1
			2 ret 5`, verdicts{false, true, true}},
		{"late effect past the next op: durable only", `
			1 inv cas 1:0:5
			crash
			1 inv read 1
			1 ret 0
			2 inv read 1
			2 ret 5`, verdicts{false, false, true}},
		{"recoverable constrains only the next op, not what is invoked after it", `
			1 inv cas 1:0:5
			crash
			1 inv read 1
			2 inv read 1
			2 ret 0
			1 ret 5`, verdicts{false, true, true}},
		// The next op touches another word: the constraint crosses
		// components, which the partition must merge.
		{"recoverable next op on another word", `
			1 inv cas 1:0:5
			crash
			1 inv read 2
			1 ret 0
			2 inv read 1
			2 ret 0
			2 inv read 1
			2 ret 5`, verdicts{false, false, true}},
		{"recoverable next op is a pending read: no constraint", `
			1 inv cas 1:0:5
			crash
			1 inv read 2
			crash
			2 inv read 1
			2 ret 0
			2 inv read 1
			2 ret 5`, verdicts{false, true, true}},
		{"recoverable next op is a dropped pending cas: no constraint", `
			1 inv cas 1:0:5
			crash
			1 inv cas 2:9:9
			crash
			2 inv read 1
			2 ret 0
			1 inv read 1
			1 ret 5`, verdicts{false, true, true}},
		{"strict holds across words through real time", `
			1 inv cas 1:0:5
			crash
			2 inv read 2
			2 ret 0
			3 inv read 1
			3 ret 0
			3 inv read 1
			3 ret 5`, verdicts{false, true, true}},
		{"two crashed cas in a chain", `
			1 inv cas 1:0:5
			crash
			2 inv cas 1:5:6
			crash
			3 inv read 1
			3 ret 6`, all},
		{"strict: the second crashed cas cannot precede the first", `
			1 inv cas 1:5:6
			crash
			2 inv cas 1:0:5
			crash
			3 inv read 1
			3 ret 6`, verdicts{false, true, true}},
		{"pending at the end may take effect late in every mode", `
			1 inv cas 1:0:5
			2 inv read 1
			2 ret 0
			2 inv read 1
			2 ret 5`, all},
		{"pending at the end may be dropped", `
			1 inv cas 1:0:5
			2 inv read 1
			2 ret 0`, all},
		{"pending at the end cannot be undone", `
			1 inv cas 1:0:5
			2 inv read 1
			2 ret 5
			2 inv read 1
			2 ret 0`, none},
		// Assumption 1 broken: values repeat.
		{"ABA: a value written back", `
			1 inv cas 1:0:1
			1 ret ok
			1 inv cas 1:1:0
			1 ret ok
			1 inv read 1
			1 ret 0
			1 inv cas 1:0:1
			1 ret ok
			1 inv read 1
			1 ret 1`, all},
		{"two concurrent cas from 0 to 1 both succeed: impossible", `
			1 inv cas 1:0:1
			2 inv cas 1:0:1
			1 ret ok
			2 ret ok`, none},
		{"two concurrent cas from 0 to 1 both succeed: with a write back", `
			1 inv cas 1:0:1
			2 inv cas 1:0:1
			3 inv cas 1:1:0
			1 ret ok
			2 ret ok
			3 ret ok`, all},
		{"a cas that writes the value it expects", `
			1 inv cas 1:0:0
			1 ret ok
			2 inv cas 1:0:0
			2 ret fail 1`, none},
		// Assumption 2 broken: a cas expects a value no read returned.
		{"cas expecting a value written concurrently", `
			1 inv cas 1:0:3
			2 inv cas 1:3:4
			2 ret ok
			1 ret ok`, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkAll(t, parse(t, tt.hist), tt.want)
		})
	}
}

func TestComponents(t *testing.T) {
	h := parse(t, `
		1 inv cas 1:0:5
		2 inv read 2
		2 ret 0
		1 ret ok
		3 inv read 3 1
		3 ret 0 5
		4 inv read 9
		crash`)
	res, err := Check(context.Background(), h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// {cas 1, read 3 1} and {read 2}; the pending read of 9 is dropped.
	if res.Components != 2 || !res.Linearizable || len(res.Order) != 3 {
		t.Errorf("got %+v, want 2 components and 3 ops linearized", res)
	}

	h = parse(t, `
		1 inv cas 1:0:5
		2 inv read 2
		2 ret 7
		1 ret ok`)
	res, err = Check(context.Background(), h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizable || len(res.Failing) != 1 || res.Failing[0] != 1 {
		t.Errorf("got %+v, want the read of word 2 alone failing", res)
	}
}

func TestValidateExplains(t *testing.T) {
	h := parse(t, `
		1 inv cas 1:0:5
		1 ret ok
		2 inv read 1
		2 ret 5
		3 inv cas 1:0:6
		crash
		4 inv read 1
		4 ret 5`)
	tests := []struct {
		mode  history.Mode
		order []int
		want  string // a substring of the error, "" for none
	}{
		{history.Strict, []int{0, 1, 3}, ""},
		{history.Strict, []int{0, 1}, "line 8 completed but is not linearized"},
		{history.Strict, []int{1, 0, 3}, "line 2 responded before operation of line 4"},
		{history.Strict, []int{0, 1, 3, 3}, "appears twice"},
		{history.Strict, []int{0, 1, 3, 7}, "no operation 7"},
		{history.Strict, []int{0, 1, 2, 3}, "expected 0 at address 1, which holds 5"},
		{history.Strict, []int{0, 1, 3, 2}, "cut off by the crash"},
	}
	for _, tt := range tests {
		err := Validate(h, tt.mode, tt.order)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v %v: %v", tt.mode, tt.order, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v %v: error %v, want %q", tt.mode, tt.order, err, tt.want)
		}
	}

	h = parse(t, `
		1 inv cas 1:0:5 2:0:6
		1 ret fail 1
		2 inv read 1
		crash`)
	if err := Validate(h, history.Strict, []int{0}); err == nil || !strings.Contains(err.Error(), "holds the expected 0") {
		t.Errorf("fail at a matching word: %v", err)
	}
	if err := Validate(h, history.Strict, []int{0, 1}); err == nil || !strings.Contains(err.Error(), "pending read") {
		t.Errorf("pending read linearized: %v", err)
	}
}

func TestBudgetAndCancel(t *testing.T) {
	h := parse(t, subsetHistory(12))
	_, err := Check(context.Background(), h, Options{MaxStates: 5})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "14 operations") {
		t.Errorf("budget: got %v", err)
	}
	res, err := Check(context.Background(), h, Options{MaxStates: -1})
	if err != nil || res.Linearizable || res.States < 1<<12 {
		t.Errorf("no budget: got %+v, %v; want not linearizable after at least 4096 states", res, err)
	}
	// Cancellation is polled every 1024 states.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Check(ctx, h, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: got %v", err)
	}
}

// subsetHistory has n cas ops pending at the end, each on its own word, and
// a read of all the words that cannot be explained because a cas on another
// word returned before it: the search tries every subset of the pending ops.
func subsetHistory(n int) string {
	var b strings.Builder
	var words, values []string
	for p := range n {
		fmt.Fprintf(&b, "%d inv cas %d:0:1\n", p, p)
		words, values = append(words, strconv.Itoa(p)), append(values, "1")
	}
	fmt.Fprintf(&b, "100 inv cas 100:0:1\n100 ret ok\n")
	fmt.Fprintf(&b, "101 inv read %s 100\n101 ret %s 0\n", strings.Join(words, " "), strings.Join(values, " "))
	return b.String()
}

func TestBadInput(t *testing.T) {
	h := parse(t, "1 inv cas 1:0:5\n1 ret ok\n")
	h.Ops[0].Status = history.Returned
	if _, err := Check(context.Background(), h, Options{}); err == nil {
		t.Error("a cas with status returned was accepted")
	}
	if _, err := Check(context.Background(), nil, Options{}); err == nil {
		t.Error("nil history accepted")
	}
	if _, err := Check(context.Background(), parse(t, ""), Options{Mode: 7}); err == nil {
		t.Error("mode 7 accepted")
	}
}
