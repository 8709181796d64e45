package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/model"
)

// The bounds of a version 2 report's timelines.
const (
	// TimelineMax is the most operations of one object drawn: an object
	// with no violation and more gets a line of figures; a violating one
	// gets those of its explanation and the nearest others, up to
	// TimelineAround in all, so that the drawing stays readable.
	TimelineMax    = 200
	TimelineAround = 24
	// DrawnMax bounds the operations drawn of the objects with no
	// violation, all together, so that a history of many objects makes a
	// page a browser opens; the objects past it get their line.
	DrawnMax = 2000
)

// Timeline geometry of a version 2 report. The drawing is at most
// objTLWidth wide before it scrolls, inside its own box: with the lane
// labels, the section's padding and the page's margins, a page 1000 px
// wide shows it whole, so a small history needs no sideways scroll.
const (
	objTLWidth  = 840.0
	objTLLeft   = 8.0
	objTLTop    = 26.0 // the axis of line numbers above the lanes
	objTLLane   = 40.0
	objTLBar    = 14.0
	objTLGap    = 12.0 // a stretch of the object's operations not drawn
	objTLBottom = 8.0
	objColMin   = 14.0
	objColMax   = 90.0
	objCharW    = 6.0 // a character of the 10 px monospace labels
)

//go:embed objhtml.tmpl
var objTemplateText string

var objTemplate = template.Must(template.New("objects").Funcs(template.FuncMap{
	"px": func(f float64) string { return fmt.Sprintf("%.1f", f) },
	// witnessTitle is lin's sentence, capitalised for a heading's line.
	"witnessTitle": func(minimal, sync bool) string {
		t := lin.WitnessTitle(minimal, sync)
		return strings.ToUpper(t[:1]) + t[1:]
	},
}).Parse(objTemplateText))

// objPage is what the template draws.
type objPage struct {
	V        *ObjectsVerdict
	Verdict  string
	Bad      bool
	Figures  []string // "9 operations", "1 crash", ...
	Engine   string   // which answered, in words
	Sections []objSection
}

// objSection is one object: its verdict, its explanation when it
// violates, its timeline or, too large to draw, a line of figures.
type objSection struct {
	ObjectVerdict
	ID       string // the anchor of its section
	Anomaly  *ObjectAnomaly
	PrefixAt int // the place in the longest order of Anomaly.Prefix[0], from 1
	Timeline *objTimeline
	Summary  string
	Figures  string // its operations and processes
	Says     string // the verdict in words
	Class    string // of the verdict: ok, bad, und
	Failing  string // the operation that could not take effect
	// Witness and Prefix are the anomaly's, with their objects.
	Witness, Prefix []listedOp
}

// listedOp is an operation of an explanation's lists, with the name of
// its object when it is not the section's (joined by process order).
type listedOp struct {
	ObjectOp
	Of string
}

// listed are ops, their objects told by refs (the same operations, from
// the explanation; nil: none told) in h.
func listed(h *model.History, object string, ops []ObjectOp, refs []lin.OpRef) []listedOp {
	out := make([]listedOp, len(ops))
	for k, op := range ops {
		out[k].ObjectOp = op
		if h != nil && k < len(refs) {
			if name := h.Objects[h.Ops[refs[k].Index].Object].Name; name != object {
				out[k].Of = name
			}
		}
	}
	return out
}

// objTimeline is the drawing of an object's operations: a lane per
// process, a bar per operation from its invocation to its response, crash
// lines across the lanes.
type objTimeline struct {
	Width, Height float64
	LaneH, BarH   float64
	Shown, Of     int // operations drawn, of the object's
	Lanes         []objLane
	Ticks         []objTick
	Gaps          []objGap
	Crashes       []objCrash
	Bars          []objBar
}

type objLane struct {
	Proc int64
	Y    float64
	Mid  float64 // of its label
}

type objTick struct {
	X    float64
	Text string
}

type objGap struct {
	X, Y, W, H float64
	Title      string
}

type objCrash struct {
	X, Y1, Y2, TextX float64
	Line             int64
	Label            string
}

// objBar is one operation. Class holds its status ("returned",
// "unknown", "cut"), "hl" for the explanation's witness, "fail" for the
// operation that could not take effect, "pre" for one of the longest
// replayed order shown (Order its place there, from 1).
type objBar struct {
	Index          int // in model.History.Ops
	Line           int64
	X, Y, W        float64
	End            float64 // x of the bar's end, for its end mark
	Class          string
	Label          string // under the bar, cut to the room there
	Title          string // the whole operation, on hovering
	Order          int
	OrderText      string // Order, when it fits in the bar
	OrdX, OrdY     float64
	CapY1, CapY2   float64 // the red end of a cut-off bar
	MarkX, MarkY   float64 // the ? of an unknown one
	LabelY         float64
	Cut, Unknown   bool
	LeftOut, Crash bool // Crash: cut off by a crash, not by the end
}

// HTML writes the verdict as one self-contained HTML page (inline CSS,
// SVG and a small script; no network loads): the verdict and figures, a
// table of the objects' verdicts, then a section per object, violating
// ones first: the explanation's sentence, its witness, the end of the
// longest order that replays correctly with the model's state after it,
// and a timeline of the object's operations (a lane per process, each
// operation a bar from invocation to response, cut-off and "?" operations
// drawn apart, crashes as lines across the lanes, the witness
// highlighted, the operation that could not take effect outlined). An
// object of more than TimelineMax operations is drawn only around its
// explanation, or, when linearizable, summed up in a line.
//
// After drawing, the script records on <body> how many highlighted bars
// there are (data-highlighted), how many of them have a size on screen
// (data-highlighted-drawn), how many bars are drawn (data-ops-drawn), how
// many timeline boxes scroll sideways (data-scrolled), by how many pixels
// the page is wider than the window (data-page-overflow), and
// data-render="ok"; script errors go to data-errors. Tests read these from
// a headless browser's DOM.
func (v *ObjectsVerdict) HTML(w io.Writer) error {
	p := objPage{V: v, Verdict: v.says(), Bad: v.Found(), Engine: v.engineName()}
	count := func(n int64, one, many string) string { return fmt.Sprintf("%d %s", n, plural(int(n), one, many)) }
	p.Figures = []string{count(int64(v.Operations), "operation", "operations"), count(int64(v.Processes), "process", "processes"),
		count(int64(v.Crashes), "crash", "crashes"), count(int64(len(v.Objects)), "object", "objects"),
		count(v.States, "state searched", "states searched")}
	for k, o := range v.Objects {
		s := objSection{ObjectVerdict: o, ID: fmt.Sprintf("object-%d", k+1), Says: o.says(),
			Class: map[string]string{"linearizable": "ok", "violation": "bad"}[o.Verdict]}
		if s.Class == "" {
			s.Class = "und"
		}
		if len(o.Stuck) > 0 {
			s.Class = "bad"
		}
		for i := range v.Anomalies {
			if v.Anomalies[i].Object == o.Name {
				s.Anomaly = &v.Anomalies[i]
				s.PrefixAt = s.Anomaly.PrefixLen - len(s.Anomaly.Prefix) + 1
				s.Witness, s.Prefix = listed(v.hist, o.Name, s.Anomaly.Witness, nil), listed(v.hist, o.Name, s.Anomaly.Prefix, nil)
				if f := s.Anomaly.expl; f != nil {
					s.Witness, s.Prefix = listed(v.hist, o.Name, s.Anomaly.Witness, f.Ops), listed(v.hist, o.Name, s.Anomaly.Prefix, f.Prefix)
					of := listed(v.hist, o.Name, []ObjectOp{{}}, []lin.OpRef{f.Failing})[0].Of
					if of != "" {
						of = "object " + of + ", "
					}
					s.Failing = fmt.Sprintf("%s (%sprocess %d, %s)", f.Failing.At(), of, f.Failing.Proc, f.Failing.Op)
				}
			}
		}
		p.Sections = append(p.Sections, s)
	}
	rank := map[string]int{"violation": 0, "undecided": 1}
	slices.SortStableFunc(p.Sections, func(a, b objSection) int {
		ra, ok := rank[a.Verdict]
		if !ok {
			ra = 2
		}
		rb, ok := rank[b.Verdict]
		if !ok {
			rb = 2
		}
		return ra - rb
	})
	if h := v.hist; h != nil {
		byName := map[string]int{}
		for i, o := range h.Objects {
			byName[o.Name] = i
		}
		byObj := make([][]int, len(h.Objects))
		for i := range h.Ops {
			byObj[h.Ops[i].Object] = append(byObj[h.Ops[i].Object], i)
		}
		budget := DrawnMax
		for k := range p.Sections {
			s := &p.Sections[k]
			ops := byObj[byName[s.Name]]
			procs := map[int64]bool{}
			for _, i := range ops {
				procs[h.Ops[i].Proc] = true
			}
			s.Figures = fmt.Sprintf("%d %s by %d %s", len(ops), plural(len(ops), "operation", "operations"),
				len(procs), plural(len(procs), "process", "processes"))
			s.Timeline, s.Summary = objectTimeline(h, ops, s.Anomaly, &budget)
		}
	}
	return objTemplate.Execute(w, p)
}

// objectTimeline draws the object's operations ops: all of them up to
// TimelineMax, while *budget (operations still to draw in the report)
// lasts; beyond, those of its explanation x and the others nearest to
// them; without x, none, and the summary says why.
func objectTimeline(h *model.History, ops []int, x *ObjectAnomaly, budget *int) (*objTimeline, string) {
	shown := ops
	switch {
	case len(ops) == 0: // declared, never used
		return nil, "No operation to draw."
	case x != nil && x.expl != nil && len(ops) > TimelineMax:
		shown = around(h, ops, x.expl)
	case x != nil:
	case len(ops) > TimelineMax:
		return nil, fmt.Sprintf("Too many operations to draw (a timeline shows at most %d).", TimelineMax)
	case len(ops) > *budget:
		return nil, fmt.Sprintf("Not drawn: the report draws at most %d operations of objects with no violation, and those above took them.", DrawnMax)
	}
	if x == nil {
		*budget -= len(shown)
	} else if x.expl != nil {
		shown = withJoined(h, ops, shown, x.expl)
	}
	return layoutObjectTimeline(h, ops, shown, x), ""
}

// withJoined adds to shown (in invocation order) the operations of other
// objects that the explanation x names: in recoverable mode, process
// order joins objects into one search, whose longest order and witness
// may hold them.
func withJoined(h *model.History, ops, shown []int, x *lin.Explanation) []int {
	obj := h.Ops[ops[0]].Object
	out := slices.Clone(shown)
	for _, refs := range [][]lin.OpRef{x.Ops, x.Prefix, x.Origins, {x.Failing}} {
		for _, r := range refs {
			if h.Ops[r.Index].Object != obj {
				out = append(out, r.Index)
			}
		}
	}
	slices.Sort(out) // History.Ops are in invocation order
	return slices.Compact(out)
}

// around picks the object's operations (ops) to draw: those the
// explanation names, then those whose invocation is nearest to the
// failing operation's, up to TimelineAround in all.
func around(h *model.History, ops []int, x *lin.Explanation) []int {
	keep := map[int]bool{x.Failing.Index: true}
	for _, refs := range [][]lin.OpRef{x.Ops, x.Prefix, x.Origins} {
		for _, r := range refs {
			keep[r.Index] = true
		}
	}
	at := h.Ops[x.Failing.Index].Call
	rest := slices.Clone(ops)
	slices.SortStableFunc(rest, func(a, b int) int {
		return abs(h.Ops[a].Call-at) - abs(h.Ops[b].Call-at)
	})
	for _, i := range rest {
		if len(keep) >= TimelineAround {
			break
		}
		keep[i] = true
	}
	var out []int
	for _, i := range ops {
		if keep[i] {
			out = append(out, i)
		}
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// layoutObjectTimeline places the operations shown (a subset of the
// object's operations ops, in invocation order): a column per event of
// theirs (invocation, response, and the crashes among them), a narrow
// band where operations of the object are left out, and an end column for
// those cut off by the end of the history.
func layoutObjectTimeline(h *model.History, ops, shown []int, x *ObjectAnomaly) *objTimeline {
	obj := h.Ops[ops[0]].Object
	t := &objTimeline{Of: len(ops), LaneH: objTLLane, BarH: objTLBar}
	for _, i := range shown {
		if h.Ops[i].Object == obj {
			t.Shown++
		}
	}
	lo, hi := h.Events, -1
	var pos []int
	var procs []int64
	for _, i := range shown {
		op := &h.Ops[i]
		pos = append(pos, op.Call)
		lo, hi = min(lo, op.Call), max(hi, op.Call)
		if op.Return >= 0 {
			pos = append(pos, op.Return)
			hi = max(hi, op.Return)
		}
		if !slices.Contains(procs, op.Proc) {
			procs = append(procs, op.Proc)
		}
	}
	slices.Sort(procs)
	crashAt := map[int]int64{} // position -> line
	for _, i := range shown {
		if c := h.Ops[i].Crash; c >= 0 {
			crashAt[h.Crashes[c].Pos] = h.Crashes[c].Line
			hi = max(hi, h.Crashes[c].Pos)
		}
	}
	for _, c := range h.Crashes {
		if c.Pos > lo && c.Pos < hi {
			crashAt[c.Pos] = c.Line
		}
	}
	for p := range crashAt {
		pos = append(pos, p)
	}
	slices.Sort(pos)
	pos = slices.Compact(pos)

	// The events of the object's operations left out, for the bands.
	isShown := map[int]bool{}
	for _, i := range shown {
		isShown[i] = true
	}
	var hidden []int
	for _, i := range ops {
		if !isShown[i] {
			hidden = append(hidden, h.Ops[i].Call)
		}
	}
	slices.Sort(hidden)
	hiddenIn := func(a, b int) int { // left out, invoked strictly between positions a and b
		i, _ := slices.BinarySearch(hidden, a+1)
		j, _ := slices.BinarySearch(hidden, b)
		return j - i
	}
	// hidden[k]: the operations left out invoked before column k (k = 0:
	// before the first; len(pos): after the last).
	hiddenAt := make([]int, len(pos)+1)
	gaps := 0
	for k := range hiddenAt {
		a, b := -1, h.Events
		if k > 0 {
			a = pos[k-1]
		}
		if k < len(pos) {
			b = pos[k]
		}
		hiddenAt[k] = hiddenIn(a, b)
		if hiddenAt[k] > 0 {
			gaps++
		}
	}
	cols := float64(len(pos) + 1) // and the end
	col := min(objColMax, max(objColMin, (objTLWidth-2*objTLLeft-float64(gaps)*objTLGap)/cols))
	xs := make([]float64, len(pos))
	laneTop := objTLTop
	t.Height = laneTop + float64(len(procs))*objTLLane + objTLBottom
	xcur := objTLLeft
	band := func(n int) {
		if n > 0 {
			t.Gaps = append(t.Gaps, objGap{X: xcur + 1, Y: laneTop, W: objTLGap - 2, H: t.Height - laneTop - objTLBottom,
				Title: fmt.Sprintf("%d %s of this object not drawn", n, plural(n, "operation", "operations"))})
			xcur += objTLGap
		}
	}
	for k := range pos {
		band(hiddenAt[k])
		xs[k] = xcur + col/2
		xcur += col
	}
	band(hiddenAt[len(pos)])
	end := xcur + col/2
	t.Width = end + col/2 + objTLLeft
	xOf := func(p int) float64 {
		k, _ := slices.BinarySearch(pos, p)
		return xs[k]
	}
	for k, p := range procs {
		y := laneTop + float64(k)*objTLLane
		t.Lanes = append(t.Lanes, objLane{Proc: p, Y: y, Mid: y + objTLLane/2 + 4})
	}
	// The axis: the line of each event, where it fits.
	lineAt := map[int]int64{}
	for _, i := range shown {
		op := &h.Ops[i]
		lineAt[op.Call] = op.Line
		if op.Return >= 0 {
			lineAt[op.Return] = op.RetLine
		}
	}
	for p, l := range crashAt {
		lineAt[p] = l
	}
	last := -1e9
	for k, p := range pos {
		if l := lineAt[p]; l > 0 && xs[k]-last >= 34 {
			t.Ticks = append(t.Ticks, objTick{X: xs[k], Text: fmt.Sprint(l)})
			last = xs[k]
		}
	}
	for _, p := range pos {
		if l, ok := crashAt[p]; ok {
			c := objCrash{X: xOf(p), Y1: 14, Y2: t.Height - objTLBottom, TextX: xOf(p) + 3, Line: l, Label: "crash"}
			t.Crashes = append(t.Crashes, c)
		}
	}

	// The explanation's parts, by operation.
	witness, order, leftOut := map[int]bool{}, map[int]int{}, map[int]bool{}
	failing := -1
	if x != nil && x.expl != nil {
		for _, r := range x.expl.Ops {
			witness[r.Index] = true
		}
		at := x.PrefixLen - len(x.expl.Prefix) + 1
		for k, r := range x.expl.Prefix {
			order[r.Index] = at + k
			leftOut[r.Index] = r.LeftOut
		}
		failing = x.expl.Failing.Index
	}
	laneOf := func(p int64) int { k, _ := slices.BinarySearch(procs, p); return k }
	for _, i := range shown {
		op := &h.Ops[i]
		b := objBar{Index: i, Line: op.Line, Class: "op", Order: order[i], LeftOut: leftOut[i]}
		half := min(col*0.3, 8)
		b.X = xOf(op.Call) - half
		switch {
		case op.Status == model.CutOff && op.Crash >= 0:
			b.End, b.Cut, b.Crash = xOf(h.Crashes[op.Crash].Pos), true, true
		case op.Status == model.CutOff:
			b.End, b.Cut = end, true
		default:
			b.End = xOf(op.Return) + half
			b.Unknown = op.Status == model.Unknown
		}
		b.W = max(b.End-b.X, 6)
		b.Y = laneTop + float64(laneOf(op.Proc))*objTLLane + 5
		b.CapY1, b.CapY2 = b.Y-2, b.Y+objTLBar+2
		b.MarkX, b.MarkY = b.End+2, b.Y+objTLBar-2
		b.LabelY = b.Y + objTLBar + 11
		if s := fmt.Sprint(b.Order); b.Order > 0 && float64(len(s))*objCharW+6 <= b.W {
			b.OrderText, b.OrdX, b.OrdY = s, b.X+3, b.Y+objTLBar-3
		}
		switch {
		case b.Cut:
			b.Class += " cut"
		case b.Unknown:
			b.Class += " unknown"
		}
		if witness[i] {
			b.Class += " hl"
		}
		if i == failing {
			b.Class += " fail"
		}
		if b.Order > 0 {
			b.Class += " pre"
		}
		if b.LeftOut {
			b.Class += " left"
		}
		ref := lin.Ref(h, i)
		desc := ref.Op
		if op.Object != obj {
			// An operation of another object that the explanation names.
			b.Class += " other"
			desc = h.Objects[op.Object].Name + ": " + desc
		}
		b.Title = fmt.Sprintf("%s, process %d: %s", ref.At(), op.Proc, desc)
		if op.Status == model.CutOff {
			if op.Crash >= 0 {
				b.Title += fmt.Sprintf(", cut off by the crash at %s", crashAtText(h.Crashes[op.Crash]))
			} else {
				b.Title += ", cut off by the end of the history"
			}
		}
		if witness[i] {
			b.Title += "; in the witness"
		}
		if i == failing {
			b.Title += "; could not take effect after the longest order"
		}
		if b.Order > 0 {
			b.Title += fmt.Sprintf("; %d in the longest order", b.Order)
			if b.LeftOut {
				b.Title += " (left out)"
			}
		}
		b.Label = desc
		if op.Line > 0 {
			b.Label = fmt.Sprintf("L%d %s", op.Line, desc)
		}
		t.Bars = append(t.Bars, b)
	}
	// A label runs under its bar up to the next bar of its lane.
	for k := range t.Bars {
		b := &t.Bars[k]
		room := t.Width - b.X
		for _, c := range t.Bars {
			if c.Y == b.Y && c.X > b.X {
				room = min(room, c.X-b.X)
			}
		}
		b.Label = fit(b.Label, int((room-3)/objCharW))
	}
	return t
}

func crashAtText(c model.Crash) string {
	if c.Line > 0 {
		return fmt.Sprintf("line %d", c.Line)
	}
	return fmt.Sprintf("event %d", c.Pos)
}
