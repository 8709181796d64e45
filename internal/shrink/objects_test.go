package shrink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

func readV2(t *testing.T, text string) *model.History {
	t.Helper()
	h, err := history.ReadV2(strings.NewReader(text), "t.hist")
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return h
}

// shrinkText shrinks text in mode, writes the result and reads it back,
// and checks what every shrunk history must be (checkShrunk).
func shrinkText(t *testing.T, text string, mode history.Mode) (string, ObjectStats) {
	t.Helper()
	h := readV2(t, text)
	out, st, err := Objects(context.Background(), h, ObjectOptions{Mode: mode})
	if err != nil {
		t.Fatalf("%s mode: %v\n%s", mode, err, text)
	}
	var b bytes.Buffer
	if err := WriteObjects(&b, out, []string{"shrunk"}); err != nil {
		t.Fatal(err)
	}
	checkShrunk(t, h, b.String(), mode, st)
	return b.String(), st
}

var lineNote = regexp.MustCompile(`^(.*?)\s+# line (\d+)$`)

// checkShrunk checks a shrunk history (the text WriteObjects wrote of
// what Objects returned for h): it reads as a version 2 history; its
// object st.Object is not linearizable in mode; every invocation and
// crash names its line in h, where h has the same invocation (or a crash),
// with the same response; and it is 1-minimal: leaving out any one of
// its operations (as the shrinker builds a candidate) leaves a history
// whose object passes, or a result whose source is gone.
func checkShrunk(t *testing.T, h *model.History, text string, mode history.Mode, st ObjectStats) {
	t.Helper()
	got := readV2(t, text)
	res, err := lin.Check(context.Background(), got, lin.Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	if !violates(res, st.Object) {
		t.Fatalf("%s mode: the shrunk history does not fail:\n%s", mode, text)
	}
	if len(got.Ops) != st.Final || len(got.Crashes) != st.Crashes || got.Events != st.Lines {
		t.Errorf("stats %+v, history of %d ops, %d crashes, %d events", st, len(got.Ops), len(got.Crashes), got.Events)
	}
	byLine := map[int64]int{}
	for i, op := range h.Ops {
		byLine[op.Line] = i
	}
	crashLines := map[int64]bool{}
	for _, c := range h.Crashes {
		crashLines[c.Line] = true
	}
	var idx []int // got's operations as indices in h
	lines := strings.Split(text, "\n")
	for _, op := range got.Ops {
		m := lineNote.FindStringSubmatch(lines[op.Line-1])
		if m == nil {
			t.Fatalf("line %d %q names no original line", op.Line, lines[op.Line-1])
		}
		n, _ := strconv.ParseInt(m[2], 10, 64)
		i, ok := byLine[n]
		o := &h.Ops[i]
		if !ok || o.Proc != op.Proc || o.Name != op.Name || !slices.Equal(o.Args, op.Args) || !slices.Equal(o.Results, op.Results) || o.Status != op.Status {
			t.Fatalf("line %d %q is not the operation of the original's line %d", op.Line, lines[op.Line-1], n)
		}
		idx = append(idx, i)
	}
	for _, c := range got.Crashes {
		m := lineNote.FindStringSubmatch(lines[c.Line-1])
		if n, _ := strconv.ParseInt(m[2], 10, 64); m == nil || !crashLines[n] {
			t.Fatalf("crash at line %d %q names no crash of the original", c.Line, lines[c.Line-1])
		}
	}
	if !st.Minimal {
		t.Fatalf("not minimal: %+v", st)
	}
	s := &objShrinker{ctx: context.Background(), h: h}
	for i := range h.Ops {
		s.all = append(s.all, i)
	}
	for k := range idx {
		rest := slices.Delete(slices.Clone(idx), k, k+1)
		if len(rest) == 0 || lin.Orphans(h, rest, s.all) {
			continue
		}
		r, err := lin.Check(context.Background(), s.build(rest), lin.Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if violates(r, st.Object) {
			t.Fatalf("%s mode: not 1-minimal: without line %d it still fails:\n%s", mode, got.Ops[k].Line, text)
		}
	}
}

func violates(res *lin.Result, object string) bool {
	for _, o := range res.Objects {
		if o.Name == object {
			return o.Verdict == lin.Violation
		}
	}
	return false
}

// events are a shrunk history's lines without comments, for comparisons.
func events(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(strings.Split(l, "#")[0]); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// lostEnq is testdata/lost-after-crash.hist: a lost element, 0x1010
// enqueued before the crashes and gone after them; two objects, noise in
// every crash section, the map not involved.
func lostEnq(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "lost-after-crash.hist"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestObjectsLostElement: in every mode, the lost element's enq, the enq
// of the value the contents read (its source), the contents, and the two
// crashes between them; nothing of the map.
func TestObjectsLostElement(t *testing.T) {
	want := "pmlin-history v2\nobject q queue\n1 inv q enq 0x1010\n1 ret ok\ncrash\n2 inv q enq 0x1013\n2 ret ok\ncrash\n4 inv q contents\n4 ret 0x1013"
	for _, mode := range []history.Mode{history.Strict, history.Recoverable, history.Durable} {
		got, st := shrinkText(t, lostEnq(t), mode)
		if events(got) != want {
			t.Errorf("%s mode:\n%s\nwant\n%s", mode, got, want)
		}
		if st.Object != "q" || st.Original != 11 || st.OriginalCrashes != 2 || st.Final != 3 || st.Crashes != 2 || st.Lines != 8 {
			t.Errorf("%s mode: %+v", mode, st)
		}
	}
}

// TestObjectsMapResurrected: a removed pair comes back after a crash: the
// put, the remove, the crash and the get, in every mode.
func TestObjectsMapResurrected(t *testing.T) {
	in := `pmlin-history v2
object m map
object q queue
1 inv m put 1 0x2000
2 inv m put 2 0x2001
1 ret nil
2 ret nil
3 inv q enq 7
3 ret ok
1 inv m remove 1
2 inv m get 2
2 ret 0x2001
1 ret 0x2000
3 inv m put 2 0x2002
crash
4 inv m get 1
4 ret 0x2000
4 inv m get 2
4 ret 0x2001
4 inv q contents
4 ret 7
`
	want := "pmlin-history v2\nobject m map\n1 inv m put 1 0x2000\n1 ret nil\n1 inv m remove 1\n1 ret 0x2000\ncrash\n4 inv m get 1\n4 ret 0x2000"
	for _, mode := range []history.Mode{history.Strict, history.Recoverable, history.Durable} {
		got, st := shrinkText(t, in, mode)
		if events(got) != want || st.Object != "m" {
			t.Errorf("%s mode:\n%s\nwant\n%s", mode, got, want)
		}
	}
}

// recoverableOnly fails in recoverable mode (the cut-off enq 1, seen by a
// deq, must take effect before its process's next operation, enq 2, and
// 2 came out first) and in strict mode (before the crash), not in durable
// mode (enq 1 may take effect late). The register is noise.
const recoverableOnly = `pmlin-history v2
object q queue
object r register
1 inv q enq 1
3 inv r write 5
3 ret ok
crash
1 inv q enq 2
3 inv r read
1 ret ok
3 ret 5
2 inv q deq
2 ret 2
3 inv r write 6
3 ret ok
2 inv q deq
2 ret 1
`

// TestObjectsModes: a history shrunk in each mode keeps its crash (the
// process that the crash cut off invokes again after it: the history is
// well formed only with it), and a history that fails only in strict
// mode (a cut-off enq bounded by its crash) shrinks in strict mode and is
// refused in the others (ErrNotFailing).
func TestObjectsModes(t *testing.T) {
	want := "pmlin-history v2\nobject q queue\n1 inv q enq 1\ncrash\n1 inv q enq 2\n1 ret ok\n2 inv q deq\n2 ret 2\n2 inv q deq\n2 ret 1"
	for _, mode := range []history.Mode{history.Strict, history.Recoverable} {
		if got, _ := shrinkText(t, recoverableOnly, mode); events(got) != want {
			t.Errorf("%s mode:\n%s\nwant\n%s", mode, got, want)
		}
	}
	if _, _, err := Objects(context.Background(), readV2(t, recoverableOnly), ObjectOptions{Mode: history.Durable}); !errors.Is(err, ErrNotFailing) {
		t.Errorf("durable mode: %v, want ErrNotFailing", err)
	}
	strictOnly := `pmlin-history v2
object q queue
object r register
1 inv q enq 1
3 inv r write 5
3 ret ok
crash
2 inv q deq
3 inv r read
3 ret 5
2 ret empty
2 inv q deq
2 ret 1
`
	want = "pmlin-history v2\nobject q queue\n1 inv q enq 1\ncrash\n2 inv q deq\n2 ret empty\n2 inv q deq\n2 ret 1"
	if got, _ := shrinkText(t, strictOnly, history.Strict); events(got) != want {
		t.Errorf("strict mode:\n%s\nwant\n%s", got, want)
	}
	for _, mode := range []history.Mode{history.Recoverable, history.Durable} {
		if _, _, err := Objects(context.Background(), readV2(t, strictOnly), ObjectOptions{Mode: mode}); !errors.Is(err, ErrNotFailing) {
			t.Errorf("%s mode: %v, want ErrNotFailing", mode, err)
		}
	}
}

// TestObjectsErrors: an input its models refuse is the checker's error;
// a history the budget cannot decide is ErrUndecided.
func TestObjectsErrors(t *testing.T) {
	_, _, err := Objects(context.Background(), readV2(t, "pmlin-history v2\nobject q quue\n1 inv q deq\n1 ret empty\n"), ObjectOptions{})
	if err == nil || errors.Is(err, ErrNotFailing) || !strings.Contains(err.Error(), `unknown model "quue"`) {
		t.Errorf("unknown model: %v", err)
	}
	// A stack (no fast engine) whose search needs more than 1 state.
	stack := "pmlin-history v2\nobject s stack\n1 inv s push 1\n2 inv s push 2\n1 ret ok\n2 ret ok\n3 inv s pop\n3 ret 1\n3 inv s pop\n3 ret 2\n"
	if _, _, err := Objects(context.Background(), readV2(t, stack), ObjectOptions{MaxStates: 1}); !errors.Is(err, ErrUndecided) {
		t.Errorf("budget of 1 state: %v, want ErrUndecided", err)
	}
}

// genHistory draws a history of a queue q and a map m (keys 0-2) by 3
// processes, operations taking effect at their responses (or, answered
// "?", not at all), with crashes (each pending operation taking effect or
// not, the harness's process 9
// reading the contents and every key after it) and faults: a result
// changed (lies), or an element or a pair lost by a crash.
func genHistory(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("pmlin-history v2\nobject q queue\nobject m map\n")
	var queue []uint64
	pairs := map[uint64]uint64{}
	type pending struct {
		name string
		args []uint64
	}
	pend := map[int]*pending{}
	nextQ, nextM := uint64(0x100), uint64(0x1000) // values of the queue, of the map
	apply := func(p *pending) string {
		switch p.name {
		case "enq":
			queue = append(queue, p.args[0])
			return "ok"
		case "deq":
			if len(queue) == 0 {
				return "empty"
			}
			v := queue[0]
			queue = queue[1:]
			return model.Number(v).String()
		}
		old, ok := pairs[p.args[0]]
		res := "nil"
		if ok {
			res = model.Number(old).String()
		}
		switch p.name {
		case "put":
			pairs[p.args[0]] = p.args[1]
		case "remove":
			delete(pairs, p.args[0])
		}
		return res
	}
	for step := 0; step < 24+r.IntN(16); step++ {
		if r.IntN(12) == 0 {
			b.WriteString("crash\n")
			for _, p := range pend {
				if r.IntN(2) == 0 {
					apply(p)
				}
			}
			clear(pend)
			switch r.IntN(4) {
			case 0:
				if len(queue) > 0 {
					k := r.IntN(len(queue))
					queue = slices.Delete(queue, k, k+1)
				}
			case 1:
				delete(pairs, uint64(r.IntN(3)))
			}
			b.WriteString("9 inv q contents\n9 ret")
			if len(queue) == 0 {
				b.WriteString(" empty")
			}
			for _, v := range queue {
				fmt.Fprintf(&b, " %s", model.Number(v))
			}
			b.WriteString("\n")
			for k := range 3 {
				res := "nil"
				if v, ok := pairs[uint64(k)]; ok {
					res = model.Number(v).String()
				}
				fmt.Fprintf(&b, "9 inv m get %d\n9 ret %s\n", k, res)
			}
			continue
		}
		proc := 1 + r.IntN(3)
		if p := pend[proc]; p != nil {
			if r.IntN(10) == 0 { // answered "?": it took effect, or not
				if r.IntN(2) == 0 {
					apply(p)
				}
				fmt.Fprintf(&b, "%d ret ?\n", proc)
				delete(pend, proc)
				continue
			}
			res := apply(p)
			switch {
			case r.IntN(14) != 0 || p.name == "enq":
			case p.name == "deq":
				res = []string{"empty", model.Number(nextQ - 1).String()}[r.IntN(2)]
			default:
				res = []string{"nil", model.Number(nextM - 1).String()}[r.IntN(2)]
			}
			fmt.Fprintf(&b, "%d ret %s\n", proc, res)
			delete(pend, proc)
			continue
		}
		p := &pending{}
		switch r.IntN(5) {
		case 0, 1:
			p.name, p.args = "enq", []uint64{nextQ}
			nextQ++
		case 2:
			p.name = "deq"
		case 3:
			p.name, p.args = "put", []uint64{uint64(r.IntN(3)), nextM}
			nextM++
		default:
			p.name, p.args = []string{"get", "remove"}[r.IntN(2)], []uint64{uint64(r.IntN(3))}
		}
		obj := "q"
		if p.name != "enq" && p.name != "deq" {
			obj = "m"
		}
		fmt.Fprintf(&b, "%d inv %s %s", proc, obj, p.name)
		for _, a := range p.args {
			fmt.Fprintf(&b, " %s", model.Number(a))
		}
		b.WriteString("\n")
		pend[proc] = p
	}
	return b.String()
}

// TestObjectsRandom shrinks the random histories that fail, in each mode:
// each result fails on its own, names its original lines, is 1-minimal
// (checkShrunk) and is the same when shrunk again (deterministic).
func TestObjectsRandom(t *testing.T) {
	n := testenv.Count(0, 300, 3000)
	shrunk := 0
	for seed := range n {
		text := genHistory(rand.New(rand.NewPCG(uint64(seed), 7)))
		h := readV2(t, text)
		for _, mode := range []history.Mode{history.Strict, history.Recoverable, history.Durable} {
			res, err := lin.Check(context.Background(), h, lin.Options{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != lin.Violation {
				continue
			}
			got, st := shrinkText(t, text, mode)
			if again, _ := shrinkText(t, text, mode); again != got {
				t.Fatalf("seed %d, %s mode: two shrinkings differ:\n%s\n%s", seed, mode, got, again)
			}
			if st.Final > st.Original || st.Crashes > st.OriginalCrashes {
				t.Fatalf("seed %d: %+v", seed, st)
			}
			shrunk++
		}
	}
	if shrunk < n/4 {
		t.Errorf("only %d of %d histories x 3 modes fail: the generator's faults are too rare", shrunk, n)
	}
	t.Logf("shrunk %d failing histories (of %d, in 3 modes)", shrunk, n)
}

// TestObjectsAfter: a deq of a value never enqueued fails alone; the
// stats name the crash it came after (line 6), which the result cannot
// show.
func TestObjectsAfter(t *testing.T) {
	in := "pmlin-history v2\nobject q queue\n1 inv q enq 0x1001\n1 ret ok\n2 inv q enq 0x1002\ncrash\n2 inv q deq\n2 ret 0x1001\n3 inv q deq\n3 ret 7\n"
	got, st := shrinkText(t, in, history.Strict)
	if events(got) != "pmlin-history v2\nobject q queue\n3 inv q deq\n3 ret 7" || st.After != 6 || st.Crashes != 0 {
		t.Errorf("%+v\n%s", st, got)
	}
	if _, st := shrinkText(t, lostEnq(t), history.Strict); st.After != 0 {
		t.Errorf("lost element: After %d, want 0 (its first operation is the first of the history)", st.After)
	}
}
