package report_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/model"
)

// objectsHist has three objects: a queue whose deq returns a value
// enqueued only by a cut-off enq (a crash cuts it off; an enq answered ?
// and one cut off by the end are there too), a register whose read misses
// a write that returned before it (a witness of two operations), and a
// linearizable counter.
const objectsHist = `pmlin-history v2
object q queue
object x register
object c counter
1 inv q enq 1
2 inv q enq 2
1 ret ok
2 ret ok
3 inv q deq
3 ret 2
1 inv q enq 3
2 inv c add 1
2 ret ok
crash
1 inv q deq
4 inv q enq 4
4 ret ?
1 ret 3
2 inv q deq
2 ret 4
5 inv x write 1
5 ret ok
6 inv x read
6 ret 0
3 inv q enq 5
`

// objectsPage checks text (version 2) in mode and renders its report.
func objectsPage(t *testing.T, text string, mode history.Mode) (*model.History, *lin.Result, string) {
	t.Helper()
	h, err := history.ReadV2(strings.NewReader(text), "objects.hist")
	if err != nil {
		t.Fatal(err)
	}
	res, err := lin.Check(context.Background(), h, lin.Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.NewObjectsVerdict(h, "objects.hist", res).HTML(&b); err != nil {
		t.Fatal(err)
	}
	return h, res, b.String()
}

// pageElem is an element of a report, with the object of its section.
type pageElem struct {
	name, object string
	attrs        map[string]string
	text         string // its own text, for <text>, <code> and <li>
}

func (e pageElem) hasClass(c string) bool {
	return slices.Contains(strings.Fields(e.attrs["class"]), c)
}

var scriptRE = regexp.MustCompile(`(?s)<script[^>]*>.*?</script>`)

// parsePage reads a report with encoding/xml, strictly (the template
// closes its void elements: a report is well-formed XML but for HTML's
// entities), scripts left out: it fails on tags that do not nest, and
// returns the elements in order.
func parsePage(t *testing.T, page string) []pageElem {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(scriptRE.ReplaceAllString(page, "")))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	var out []pageElem
	var stack []int // indexes in out of the open elements
	object := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the report does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := pageElem{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if e.name == "section" {
				object = e.attrs["data-object"]
			}
			// A bar's or a crash's shape, on its group.
			if len(stack) > 0 && out[stack[len(stack)-1]].name == "g" && (e.name == "rect" || e.name == "line") {
				for _, a := range []string{"x", "width", "x1"} {
					if v, ok := e.attrs[a]; ok {
						out[stack[len(stack)-1]].attrs[e.name+"."+a] = v
					}
				}
			}
			e.object = object
			out = append(out, e)
			stack = append(stack, len(out)-1)
		case xml.EndElement:
			if len(stack) == 0 {
				t.Fatalf("</%s> closes nothing", tok.Name.Local)
			}
			if out[stack[len(stack)-1]].name == "section" {
				object = ""
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			for _, k := range stack {
				out[k].text += string(tok)
			}
		}
	}
	if len(stack) != 0 {
		t.Fatalf("%d elements left open", len(stack))
	}
	return out
}

// bars are the operation bars of the object's timeline, by operation
// index.
func bars(t *testing.T, elems []pageElem, object string) map[int]pageElem {
	t.Helper()
	out := map[int]pageElem{}
	for _, e := range elems {
		if e.name != "g" || !e.hasClass("op") || e.object != object {
			continue
		}
		i, err := strconv.Atoi(e.attrs["data-index"])
		if err != nil {
			t.Fatalf("a bar without an index: %v", e.attrs)
		}
		if _, dup := out[i]; dup {
			t.Fatalf("operation %d drawn twice", i)
		}
		out[i] = e
	}
	return out
}

func opsOf(h *model.History, object string) []int {
	var out []int
	for i, op := range h.Ops {
		if h.Objects[op.Object].Name == object {
			out = append(out, i)
		}
	}
	return out
}

// TestObjectsHTML: the report of a history with two violating objects and
// a linearizable one draws every operation of each object in its own
// section, highlights exactly the witness, outlines the operation that
// could not take effect, marks cut-off and ? operations and the crash,
// and writes each explanation's sentence, longest order and state.
func TestObjectsHTML(t *testing.T) {
	h, res, page := objectsPage(t, objectsHist, history.Strict)
	elems := parsePage(t, page)
	if !strings.Contains(page, "NOT LINEARIZABLE") || strings.Contains(page, "http://") && strings.Contains(page, "src=") {
		t.Fatal("no verdict, or a resource loaded from the network")
	}
	violations := 0
	for _, or := range res.Objects {
		got := bars(t, elems, or.Name)
		want := opsOf(h, or.Name)
		if len(got) != len(want) {
			t.Errorf("object %s: %d bars, want %d", or.Name, len(got), len(want))
		}
		for _, i := range want {
			if _, ok := got[i]; !ok {
				t.Errorf("object %s: operation %d (line %d) not drawn", or.Name, i, h.Ops[i].Line)
			}
		}
		for i, b := range got {
			op := &h.Ops[i]
			if b.hasClass("cut") != (op.Status == model.CutOff) || b.hasClass("unknown") != (op.Status == model.Unknown) {
				t.Errorf("line %d (%v): class %q", op.Line, op.Status, b.attrs["class"])
			}
			if b.attrs["data-line"] != fmt.Sprint(op.Line) {
				t.Errorf("operation %d: data-line %q, want %d", i, b.attrs["data-line"], op.Line)
			}
			if op.Status == model.Unknown && !strings.Contains(b.text, "?") {
				t.Errorf("line %d: no ? drawn: %q", op.Line, b.text)
			}
		}
		x := or.Explanation
		if or.Verdict != lin.Violation {
			for i, b := range got {
				if b.hasClass("hl") || b.hasClass("fail") || b.hasClass("pre") {
					t.Errorf("object %s is linearizable, and operation %d is marked: %q", or.Name, i, b.attrs["class"])
				}
			}
			continue
		}
		violations++
		var hl, wit []int
		for i, b := range got {
			if b.hasClass("hl") {
				hl = append(hl, i)
			}
		}
		for _, r := range x.Ops {
			wit = append(wit, r.Index)
		}
		slices.Sort(hl)
		slices.Sort(wit)
		if !slices.Equal(hl, wit) {
			t.Errorf("object %s: highlighted %v, the witness is %v", or.Name, hl, wit)
		}
		if b := got[x.Failing.Index]; !b.hasClass("fail") {
			t.Errorf("object %s: the failing operation (line %d) is not outlined: %q", or.Name, x.Failing.Line, b.attrs["class"])
		}
		for k, r := range x.Prefix {
			if b := got[r.Index]; !b.hasClass("pre") || b.hasClass("left") != r.LeftOut || !strings.Contains(b.text, fmt.Sprint(x.PrefixLen-len(x.Prefix)+k+1)) {
				t.Errorf("object %s: the %dth operation of the longest order (line %d) is not numbered: %q %q", or.Name, k+1, r.Line, b.attrs["class"], b.text)
			}
		}
		if !strings.Contains(page, template.HTMLEscapeString(x.Sentence)) {
			t.Errorf("object %s: the sentence %q is not written", or.Name, x.Sentence)
		}
		var items, states int
		for _, e := range elems {
			if e.object != or.Name {
				continue
			}
			if e.name == "li" && strings.Contains(e.text, "process") {
				items++
			}
			if e.name == "code" && e.text == x.State {
				states++
			}
		}
		if items != len(x.Ops)+len(x.Prefix) || states != 1 {
			t.Errorf("object %s: %d operations listed, want %d; the state %q written %d times", or.Name, items, len(x.Ops)+len(x.Prefix), x.State, states)
		}
	}
	if violations != 2 || len(res.Objects) != 3 {
		t.Fatalf("%d violations among %d objects, want 2 among 3", violations, len(res.Objects))
	}
	// The witness of x is its two operations; the crash is drawn in q's
	// timeline, not in x's (which has none in its stretch).
	if n := len(res.Objects[1].Explanation.Ops); n != 2 {
		t.Errorf("the witness of x has %d operations, want 2", n)
	}
	crashes := map[string]int{}
	for _, e := range elems {
		if e.name == "g" && e.hasClass("crash") && e.attrs["data-crash"] == fmt.Sprint(h.Crashes[0].Line) {
			crashes[e.object]++
		}
	}
	if crashes["q"] != 1 || crashes["x"] != 0 {
		t.Errorf("crash lines drawn: %v, want one in q's timeline", crashes)
	}
	// The bar of the enq the crash cut off ends at the crash's line.
	var crashX string
	for _, e := range elems {
		if e.name == "g" && e.hasClass("crash") && e.object == "q" {
			crashX = e.attrs["line.x1"]
		}
	}
	cut := 0
	for i, b := range bars(t, elems, "q") {
		if h.Ops[i].Crash < 0 {
			continue
		}
		cut++
		x, _ := strconv.ParseFloat(b.attrs["rect.x"], 64)
		w, _ := strconv.ParseFloat(b.attrs["rect.width"], 64)
		if cx, _ := strconv.ParseFloat(crashX, 64); x+w < cx-0.11 || x+w > cx+0.11 || b.attrs["line.x1"] != crashX {
			t.Errorf("line %d, cut off by the crash: its bar ends at %.1f (its red end at %s), the crash is at %s", h.Ops[i].Line, x+w, b.attrs["line.x1"], crashX)
		}
	}
	if cut != 1 {
		t.Errorf("%d operations cut off by the crash, want 1", cut)
	}
}

// TestObjectsHTMLLarge: past report.TimelineMax operations, a linearizable
// object gets a line instead of a timeline, and a violating one a timeline
// of its explanation's operations and the nearest others (TimelineAround
// in all) that has its whole witness highlighted, and says how many it
// leaves out.
func TestObjectsHTMLLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("pmlin-history v2\nobject c counter\nobject x register\n")
	n := report.TimelineMax + 50
	for k := 0; k < n; k++ {
		p := k%3 + 1
		fmt.Fprintf(&b, "%d inv c add 1\n%d ret ok\n", p, p)
		v := k
		if k == n/2 {
			v = k - 2 // a stale read in the middle
		}
		fmt.Fprintf(&b, "%d inv x write %d\n%d ret ok\n%d inv x read\n%d ret %d\n", p, k, p, p, p, v)
	}
	h, res, page := objectsPage(t, b.String(), history.Strict)
	elems := parsePage(t, page)
	if got := bars(t, elems, "c"); len(got) != 0 {
		t.Errorf("counter c: %d bars drawn, want a summary", len(got))
	}
	if !strings.Contains(page, fmt.Sprintf("%d operations by 3 processes.", n)) || !strings.Contains(page, "Too many operations to draw") {
		t.Error("no summary line for c")
	}
	got := bars(t, elems, "x")
	if len(got) != report.TimelineAround {
		t.Errorf("register x: %d bars of %d", len(got), len(opsOf(h, "x")))
	}
	x := res.Objects[1].Explanation
	if x == nil {
		t.Fatalf("x: %+v", res.Objects[1])
	}
	for _, r := range append(slices.Clone(x.Ops), x.Failing) {
		if bar, ok := got[r.Index]; !ok || !bar.hasClass("hl") && r.Index != x.Failing.Index {
			t.Errorf("the witness's operation at line %d is not drawn highlighted", r.Line)
		}
	}
	gaps := 0
	for _, e := range elems {
		if e.name == "g" && e.hasClass("gap") && e.object == "x" {
			gaps++
		}
	}
	if !strings.Contains(page, fmt.Sprintf("%d of the object's %d operations are drawn", len(got), 2*n)) || gaps == 0 {
		t.Errorf("the operations left out are not said (%d bands)", gaps)
	}
}

// TestObjectsHTMLMany: the timelines of objects with no violation draw
// report.DrawnMax operations in all, the objects past it summed up; a
// violating object is drawn whatever comes before.
func TestObjectsHTMLMany(t *testing.T) {
	var b strings.Builder
	b.WriteString("pmlin-history v2\n")
	objects, each := 2*report.DrawnMax/100+1, 100
	for k := 0; k < objects; k++ {
		fmt.Fprintf(&b, "object c%d counter\n", k)
	}
	b.WriteString("object x register\n")
	for k := 0; k < objects; k++ {
		for j := 0; j < each/2; j++ {
			fmt.Fprintf(&b, "1 inv c%d add 1\n1 ret ok\n1 inv c%d get\n1 ret %d\n", k, k, j+1)
		}
	}
	b.WriteString("1 inv x write 1\n1 ret ok\n1 inv x read\n1 ret 0\n")
	_, _, page := objectsPage(t, b.String(), history.Strict)
	elems := parsePage(t, page)
	drawn, summed := 0, 0
	for k := 0; k < objects; k++ {
		n := len(bars(t, elems, fmt.Sprintf("c%d", k)))
		if n != 0 && n != each {
			t.Fatalf("c%d: %d bars of %d", k, n, each)
		}
		drawn += n
		if n == 0 {
			summed++
		}
	}
	if drawn != report.DrawnMax || summed != objects-report.DrawnMax/each || strings.Count(page, "Not drawn: the report draws at most") != summed {
		t.Errorf("%d operations drawn, %d objects summed up", drawn, summed)
	}
	if n := len(bars(t, elems, "x")); n != 2 {
		t.Errorf("the violating register: %d bars", n)
	}
}

// TestObjectsHTMLJoined: in recoverable mode process order joins objects
// a and b into one search, whose longest order holds b's operations: a's
// timeline draws them too, marked as another object's, so that every
// operation its explanation names is on it.
func TestObjectsHTMLJoined(t *testing.T) {
	h, res, page := objectsPage(t, `pmlin-history v2
object a register
object b register
1 inv a write 1
crash
1 inv b write 2
1 ret ok
2 inv b read
2 ret 2
2 inv a read
2 ret 0
2 inv a read
2 ret 1
`, history.Recoverable)
	x := res.Objects[0].Explanation
	if x == nil || res.Objects[1].Verdict != lin.Undecided {
		t.Fatalf("%+v", res.Objects)
	}
	elems := parsePage(t, page)
	got := bars(t, elems, "a")
	others := 0
	// The lists name b's operations as b's.
	ofB, listedB := 0, 0
	for _, r := range append(slices.Clone(x.Ops), x.Prefix...) {
		if h.Objects[h.Ops[r.Index].Object].Name == "b" {
			ofB++
		}
	}
	for _, e := range elems {
		if e.object == "a" && e.name == "li" && strings.Contains(e.text, "object b, process") {
			listedB++
		}
	}
	if ofB == 0 || listedB != ofB {
		t.Errorf("%d operations of b listed as b's, want %d", listedB, ofB)
	}
	for _, r := range append(append(slices.Clone(x.Ops), x.Prefix...), x.Failing) {
		b, ok := got[r.Index]
		if !ok {
			t.Errorf("line %d, named by a's explanation, is not on a's timeline", r.Line)
			continue
		}
		if other := h.Objects[h.Ops[r.Index].Object].Name != "a"; b.hasClass("other") != other || other && !strings.Contains(b.text, "b: ") {
			t.Errorf("line %d: class %q, label %q", r.Line, b.attrs["class"], b.text)
		}
	}
	for _, b := range got {
		if b.hasClass("other") {
			others++
		}
	}
	if others == 0 || len(got) != len(opsOf(h, "a"))+others {
		t.Errorf("%d bars on a's timeline, %d of other objects", len(got), others)
	}
}

// TestObjectsHTMLUnused: an object declared and never used has no
// timeline, and the page says so (drawing it indexed its first operation).
func TestObjectsHTMLUnused(t *testing.T) {
	_, _, page := objectsPage(t, "pmlin-history v2\nobject a mutex\nobject b mutex\n1 inv a acquire\n1 ret ok\n", history.Strict)
	if !strings.Contains(page, "No operation to draw.") {
		t.Errorf("object b without operations: no summary in\n%s", page)
	}
}
