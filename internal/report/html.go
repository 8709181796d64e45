package report

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
)

// HTML writes one self-contained HTML file (inline CSS, SVG and script; no
// network loads) reporting d: the verdict and counts, then per anomaly its
// witness in sentences, a timeline of its neighbourhood (a lane per
// process, operations as bars from invocation to response, crash lines,
// the anomaly's operations highlighted, omitted stretches of the history
// marked) and beside it the precedence subgraph with labelled edges.
// Hovering over an operation shows its lines and values and highlights it
// in both drawings. A linearizable history gets a short report: the
// verdict and a timeline of its first operations.
//
// After drawing, the page's script records on <body> how many
// highlighted elements it has (data-highlighted) and how many of them
// have a size on screen (data-highlighted-drawn), how many values of
// operations are drawn with a size (data-values-drawn), how many crash
// vertices the graphs have (data-crashes-drawn), how many edge labels
// the graphs have (data-labels), how many times a label or a vertex's
// values overlaps another or a vertex (data-label-overlaps), how many
// times an edge runs through one that is not its own label
// (data-label-crossings) of how many texts (data-texts), how many timelines scroll sideways
// (data-scrolled), by how many pixels the page is wider than the window
// (data-page-overflow), how many values of key reads are out of their
// timeline's view after it scrolled to the anomaly (data-key-hidden), and
// data-render="ok"; script errors are recorded in data-errors. Tests read
// these from the DOM of a headless browser.
func HTML(w io.Writer, d *Data) error {
	var b strings.Builder
	r := d.Result
	verdict, vclass := "LINEARIZABLE", "ok"
	if !r.Linearizable {
		verdict, vclass = "NOT LINEARIZABLE", "bad"
	}
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pmlin: %s: %s</title>
<script>window.__pmlinErrors=[];window.addEventListener("error",function(e){window.__pmlinErrors.push(String(e.message));if(document.body)document.body.setAttribute("data-errors",window.__pmlinErrors.join(" | "));});</script>
<style>%s</style></head>
<body>
`, esc(d.Name), verdict, css)
	fmt.Fprintf(&b, "<header><h1>%s: <span class=\"%s\">%s</span></h1>\n", esc(d.Name), vclass, verdict)
	fmt.Fprintf(&b, "<p>%s mode &middot; %d operations &middot; %d processes &middot; %d words &middot; %d crashes", r.Mode, r.Operations, r.Processes, r.Words, r.Crashes)
	if r.Dropped+r.Completed > 0 {
		fmt.Fprintf(&b, " &middot; cut-off operations: %d completed as successes, %d dropped", r.Completed, r.Dropped)
	}
	fmt.Fprintf(&b, "</p>\n<p>graph: %d vertices, %d edges (happens-before %d, reads-from %d, auxiliary %d, recovery %d)</p>\n",
		r.Vertices, r.Edges.Total(), r.Edges.HappensBefore, r.Edges.ReadsFrom, r.Edges.Auxiliary, r.Edges.Recovery)
	b.WriteString(legend)
	b.WriteString("</header>\n")

	shown := map[int64]analyzer.OpInfo{}
	remember := func(ops []analyzer.OpInfo) {
		for _, o := range ops {
			shown[o.Line] = o
		}
	}
	if r.Linearizable || len(r.Anomalies) == 0 {
		fmt.Fprintf(&b, "<section class=\"anomaly\"><h2>No anomaly</h2><p>Every order constraint of the precedence graph is consistent: the history is linearizable in %s mode. The timeline shows its first %d operations.</p>\n", r.Mode, len(d.Sample))
		b.WriteString("<div class=\"panels\"><div class=\"panel tl\"><h3>Timeline</h3>")
		timeline(&b, d, d.Sample, nil, nil, nil, nil, nil)
		b.WriteString("</div></div></section>\n")
		remember(d.Sample)
	}
	implied := impliedBy(r.Anomalies)
	drawn := map[int]bool{}
	for _, nb := range d.Neighbourhoods {
		anomalySection(&b, d, nb, implied[nb.Index])
		remember(nb.Timeline)
		remember(nb.Nodes)
		drawn[nb.Index] = true
	}
	var rest []int // the roots not drawn
	for k, a := range r.Anomalies {
		if a.Root == nil && !drawn[k] {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 || r.Omitted > 0 {
		b.WriteString("<section class=\"anomaly\"><h2>More anomalies</h2><ol class=\"more\">")
		for _, k := range rest {
			a := r.Anomalies[k]
			fmt.Fprintf(&b, "<li value=\"%d\"><b>%s</b>: %s", k+1, esc(anomalyTitle(a, analyzer.LineNamer{})), esc(a.Explanation))
			if deps := implied[k]; len(deps) > 0 {
				fmt.Fprintf(&b, " <i>%s</i>", esc(impliedLine(r.Anomalies, deps)))
			}
			b.WriteString("</li>")
		}
		b.WriteString("</ol>")
		if r.Omitted > 0 {
			fmt.Fprintf(&b, "<p>%d more anomalies not listed.</p>", r.Omitted)
		}
		b.WriteString("</section>\n")
	}

	// Operation data for the hover box.
	type opJSON struct {
		Desc   string `json:"d"`
		Inv    string `json:"i,omitempty"`
		Ret    string `json:"r,omitempty"`
		Status string `json:"s"`
		Ret1   int64  `json:"rl,omitempty"`
		Crash  int64  `json:"cl,omitempty"`
		Done   bool   `json:"c,omitempty"`
	}
	ops := map[int64]opJSON{}
	for l, o := range shown {
		j := opJSON{Desc: o.Desc, Status: o.Status, Ret1: o.RetLine, Crash: o.CrashLine, Done: o.Completed}
		if op := d.Ops[l]; op != nil {
			j.Inv, j.Ret = op.Lines()
		}
		ops[l] = j
	}
	js, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	b.WriteString("<div id=\"tip\" role=\"tooltip\"></div>\n<script type=\"application/json\" id=\"pmlin-ops\">")
	b.Write(js)
	b.WriteString("</script>\n<script>")
	b.WriteString(script)
	b.WriteString("</script>\n</body></html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// anomalySection writes one anomaly: what is broken, the evidence (the
// crash story first), the witness's edges, the timeline of its
// neighbourhood and the precedence subgraph.
func anomalySection(b *strings.Builder, d *Data, nb *analyzer.Neighbourhood, deps []int) {
	a := nb.Anomaly
	fmt.Fprintf(b, "<section class=\"anomaly\" id=\"anomaly-%d\"><h2>Anomaly %d: %s</h2>\n", nb.Index+1, nb.Index+1, esc(anomalyTitle(a, analyzer.LineNamer{})))
	if a.Kind != analyzer.Cycle || len(a.Edges) == 0 {
		fmt.Fprintf(b, "<p>%s</p>\n", esc(summaryOf(a)))
	}
	if len(a.Evidence) > 0 {
		b.WriteString("<ul class=\"evidence\">")
		for _, ev := range a.Evidence {
			badge := "evidence"
			if ev.Crash != 0 {
				badge = fmt.Sprintf("crash %d", ev.Crash)
			}
			fmt.Fprintf(b, "<li class=\"ev ev-%s\"><span class=\"badge%s\">%s</span> %s</li>", ev.Kind,
				map[bool]string{true: " crash"}[ev.Crash != 0], esc(badge), esc(ev.Reason))
		}
		b.WriteString("</ul>\n")
	}
	if a.Kind == analyzer.Cycle && len(a.Edges) > 0 {
		fmt.Fprintf(b, "<p>%s:</p>\n", esc(summaryOf(a)))
	}
	if len(a.Edges) > 0 {
		b.WriteString("<ol class=\"witness\">")
		for _, e := range a.Edges {
			fmt.Fprintf(b, "<li><span class=\"kind k-%s\">%s</span> %s</li>", e.Kind, esc(edgeLabel(e)), esc(e.Reason))
		}
		b.WriteString("</ol>\n")
	}
	for _, s := range a.Staleness {
		fmt.Fprintf(b, "<p class=\"stale\"><b>Staleness %d.</b> %s</p>\n", s.Behind, esc(s.Reason))
	}
	if len(deps) > 0 {
		// Those it implies, counted and folded: one cause, read once.
		fmt.Fprintf(b, "<details class=\"implied\"><summary>%s</summary><ol>", esc(impliedLine(d.Result.Anomalies, deps)))
		for _, k := range deps {
			a := d.Result.Anomalies[k]
			fmt.Fprintf(b, "<li value=\"%d\"><b>%s</b>: %s</li>", k+1, esc(anomalyTitle(a, analyzer.LineNamer{})), esc(summaryOf(a)))
		}
		b.WriteString("</ol></details>\n")
	}
	b.WriteString("<div class=\"panels\"><div class=\"panel tl\"><h3>Timeline</h3>")
	core := map[int64]bool{}
	for _, l := range nb.Core {
		core[l] = true
	}
	var crashes []int64
	key := maps.Clone(core) // and the reads that show what recovery left
	for _, c := range nb.Crashes {
		crashes = append(crashes, c.Line)
		for _, l := range c.Reads {
			key[l] = true
		}
	}
	timeline(b, d, nb.Timeline, core, key, nb.Edges, crashes, a.Words)
	b.WriteString("</div><div class=\"panel gr\"><h3>Precedence subgraph</h3>")
	subgraph(b, d, nb, core)
	b.WriteString("</div></div></section>\n")
}

func esc(s string) string { return html.EscapeString(s) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Timeline geometry.
const (
	tlLeft   = 10.0
	tlTop    = 30.0 // axis
	tlCol    = 16.0 // one event line, at least
	tlColMax = 110.0
	tlGap    = 16.0 // omitted lines
	tlLane   = 40.0
	tlBar    = 16.0
	tlBottom = 10.0
	// tlWidth is the widest a timeline is drawn before it scrolls: in a
	// window 1000 px wide the page leaves it about 875 px.
	tlWidth = 840.0
)

// timeline draws ops (invocation order) as bars in lanes, one per
// process. The horizontal axis is the order of the lines shown: each
// invocation, response and crash line gets a column, and a stretch of
// lines not shown gets a narrow marked gap, so that an anomaly spread over
// a million lines fits on a screen.
func timeline(b *strings.Builder, d *Data, ops []analyzer.OpInfo, core, key map[int64]bool, edges []analyzer.NeighbourEdge, story []int64, focus []uint64) {
	if len(ops) == 0 {
		b.WriteString("<p>(no operations)</p>")
		return
	}
	ticks, crashes := timelineTicks(d, ops, story)
	l := layoutTimeline(ticks, ops, tlWidth)
	if over := l.tail(d, ops, key, focus) - tlWidth; over > 0 && l.col > tlCol {
		// The last values need room: narrower columns give it.
		l = layoutTimeline(ticks, ops, tlWidth-over)
	}
	l.width = max(l.width, l.tail(d, ops, key, focus))
	// Lane labels stay in view: they are drawn apart from the scrolled part.
	fmt.Fprintf(b, "<div class=\"tlwrap\"><svg class=\"lanes\" xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"%.0f\">", l.height)
	for k, p := range l.procs {
		y := tlTop + float64(k)*tlLane
		fmt.Fprintf(b, "<text class=\"pl\" x=\"4\" y=\"%.0f\">p%d</text>", y+tlLane/2+4, p)
	}
	fmt.Fprintf(b, "</svg><div class=\"scroll\"><svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">", l.width, l.height, l.width, l.height)
	for k := range l.procs {
		y := tlTop + float64(k)*tlLane
		fmt.Fprintf(b, "<rect class=\"lane\" x=\"0\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/>", y, l.width, tlLane)
	}
	// Axis: line numbers where they fit.
	lastX := -100.0
	for k, t := range l.ticks {
		if l.xs[k]-lastX >= 46 {
			fmt.Fprintf(b, "<text class=\"ax\" x=\"%.0f\" y=\"12\">%d</text>", l.xs[k], t)
			lastX = l.xs[k]
		}
	}
	for _, g := range l.gaps {
		n := g.to - g.from + 1
		cls, more := "gap", ""
		if k := len(d.crashesIn(g.from, g.to)); k > 0 {
			cls, more = "gap crashed", fmt.Sprintf(", among them %d %s", k, plural(k, "crash", "crashes"))
		}
		fmt.Fprintf(b, "<g class=\"%s\"><title>%d %s not shown (lines %d-%d%s)</title><rect x=\"%.1f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\"/><line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/></g>",
			cls, n, plural(int(n), "line", "lines"), g.from, g.to, more, g.x-tlGap/2+2, tlTop, tlGap-4, l.height-tlTop-tlBottom, g.x, tlTop, g.x, l.height-tlBottom)
	}
	for _, c := range crashes {
		cx := l.xOf(c)
		cls := "crash"
		if slices.Contains(story, c) {
			cls += " story"
		}
		fmt.Fprintf(b, "<g class=\"%s\" data-crash=\"%d\"><title>crash at line %d</title><line x1=\"%.1f\" y1=\"16\" x2=\"%.1f\" y2=\"%.0f\"/><text x=\"%.1f\" y=\"26\">crash %d</text></g>", cls, c, c, cx, cx, l.height-tlBottom, cx+3, c)
	}
	// Bars, then the witness's edges, then the values over both (with a
	// halo): an edge may pass under a value, never hide it.
	var vals strings.Builder
	bars, texts := l.bars(b, &vals, d, ops, core, key, focus)
	timelineEdges(b, edges, bars, texts)
	b.WriteString(vals.String())
	b.WriteString(markers)
	b.WriteString("</svg></div></div>")
}

// timelineTicks are the lines that get a column: the invocations,
// responses and crashes of ops, and the crash lines drawn: those that cut
// off an operation shown, and those inside a densely shown stretch (the
// others are counted in their gap).
func timelineTicks(d *Data, ops []analyzer.OpInfo, story []int64) (ticks, crashes []int64) {
	var lo, hi int64 = math.MaxInt64, 0
	for _, o := range ops {
		if o.Line == 0 {
			continue
		}
		ticks = append(ticks, o.Line)
		lo, hi = min(lo, o.Line), max(hi, o.Line)
		if o.RetLine > 0 {
			ticks = append(ticks, o.RetLine)
			hi = max(hi, o.RetLine)
		}
		if o.CrashLine > 0 {
			ticks = append(ticks, o.CrashLine)
			hi = max(hi, o.CrashLine)
		}
	}
	slices.Sort(ticks)
	ticks = slices.Compact(ticks)
	for _, c := range d.crashesIn(lo, hi) {
		k, _ := slices.BinarySearch(ticks, c)
		if k > 0 && k < len(ticks) && ticks[k]-ticks[k-1] <= 64 {
			crashes = append(crashes, c)
		}
	}
	for _, o := range ops {
		if o.CrashLine > 0 && !slices.Contains(crashes, o.CrashLine) {
			crashes = append(crashes, o.CrashLine)
		}
	}
	for _, c := range story {
		if !slices.Contains(crashes, c) {
			crashes = append(crashes, c)
		}
	}
	slices.Sort(crashes)
	ticks = append(ticks, crashes...)
	slices.Sort(ticks)
	return slices.Compact(ticks), crashes
}

// tlLayout places a timeline: the x of each tick, with gaps where lines
// are not shown, and a lane per process.
type tlLayout struct {
	ticks         []int64
	xs            []float64
	gaps          []tlGapPos
	end           float64 // pending at the end of the history
	col           float64 // a column's width
	width, height float64
	procs         []int32
}

type tlGapPos struct {
	x        float64
	from, to int64
}

func layoutTimeline(ticks []int64, ops []analyzer.OpInfo, budget float64) *tlLayout {
	l := &tlLayout{ticks: ticks, xs: make([]float64, len(ticks))}
	gaps := 0
	for k := 1; k < len(ticks); k++ {
		if ticks[k] > ticks[k-1]+1 {
			gaps++
		}
	}
	// The columns share tlWidth (the drawing is tlLeft + (n+1.5) columns
	// + the gaps wide): few events get wide columns, so that bars have
	// room for a label; many get tlCol and the drawing scrolls.
	col := min(tlColMax, max(tlCol, (budget-tlLeft-float64(gaps)*tlGap)/(float64(len(ticks))+1.5)))
	l.col = col
	x := tlLeft + col/2
	for k, t := range ticks {
		if k > 0 {
			x += col
			if t > ticks[k-1]+1 {
				l.gaps = append(l.gaps, tlGapPos{x - col/2 + tlGap/2, ticks[k-1] + 1, t - 1})
				x += tlGap
			}
		}
		l.xs[k] = x
	}
	l.end = x + col
	for _, o := range ops {
		if o.Line != 0 && !slices.Contains(l.procs, o.Proc) {
			l.procs = append(l.procs, o.Proc)
		}
	}
	slices.Sort(l.procs)
	l.width = l.end + col
	l.height = tlTop + float64(len(l.procs))*tlLane + tlBottom
	return l
}

// valueW is the width of a bar's values, 9px monospace; tlValueLine the
// distance of their lines.
const (
	valueW      = 5.5
	tlValueLine = 9
)

// valueLines splits the values of a key operation in two lines when they
// are long (more than 40 characters; used when they do not fit on one):
// two lines fit under its bar, above the next lane's bars, and a timeline
// that scrolls can show them whole beside the anomaly's operations.
func valueLines(s string) []string {
	if len([]rune(s)) <= 40 {
		return []string{s}
	}
	best := -1
	for k, r := range s {
		if r == ' ' && (best < 0 || abs(k-len(s)/2) < abs(best-len(s)/2)) {
			best = k
		}
	}
	if best < 0 {
		return []string{s}
	}
	return []string{s[:best], s[best+1:]}
}

// tail is how wide the drawing must be for the values of the last bar of
// each lane to be written: in full for the key operations (the anomaly's
// and the reads after its crashes), the others within tlWidth.
func (l *tlLayout) tail(d *Data, ops []analyzer.OpInfo, key map[int64]bool, focus []uint64) float64 {
	last := map[int32]analyzer.OpInfo{}
	for _, o := range ops {
		if o.Line != 0 && o.Line > last[o.Proc].Line {
			last[o.Proc] = o
		}
	}
	w := l.width
	for _, o := range last {
		txt := opValues(d.Ops[o.Line], focus)
		if key[o.Line] {
			txt = slices.MaxFunc(valueLines(txt), func(a, b string) int { return len(a) - len(b) })
		}
		need := l.xOf(o.Line) - 5 + 4 + valueW*float64(len([]rune(txt)))
		if !key[o.Line] {
			need = min(need, max(l.width, tlWidth))
		}
		w = max(w, need)
	}
	return w
}

func (l *tlLayout) xOf(line int64) float64 {
	k, _ := slices.BinarySearch(l.ticks, line)
	return l.xs[min(k, len(l.xs)-1)]
}

func (l *tlLayout) lane(p int32) int {
	k, _ := slices.BinarySearch(l.procs, p)
	return k
}

// barPos is where an operation's bar was drawn.
type barPos struct{ x1, x2, y float64 }

// bars draws the operations as bars from invocation to response (to the
// crash, or the end, for a cut-off one), each with its values written
// under it (the words in focus first, cut where the next bar of its lane
// starts; written to vals, a layer above the edges), and returns where.
func (l *tlLayout) bars(b, vals *strings.Builder, d *Data, ops []analyzer.OpInfo, core, key map[int64]bool, focus []uint64) (map[int64]barPos, []box) {
	var texts []box
	bars := map[int64]barPos{}
	open := map[int64]bool{}
	for _, o := range ops {
		if o.Line == 0 {
			continue
		}
		x1 := l.xOf(o.Line) - 5
		var x2 float64
		switch {
		case o.RetLine > 0:
			x2 = l.xOf(o.RetLine) + 5
		case o.CrashLine > 0:
			x2, open[o.Line] = l.xOf(o.CrashLine), true
		default:
			x2, open[o.Line] = l.end, true
		}
		y := tlTop + float64(l.lane(o.Proc))*tlLane + 4
		bars[o.Line] = barPos{x1, x2, y}
	}
	for _, o := range ops {
		p, ok := bars[o.Line]
		if !ok {
			continue
		}
		cls := "op " + o.Kind + " s-" + o.Status
		if open[o.Line] {
			cls += " cut"
		}
		if !o.InGraph {
			cls += " out"
		}
		if core[o.Line] {
			cls += " hl"
		}
		fmt.Fprintf(b, "<g class=\"%s\" data-line=\"%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" rx=\"3\"/>", cls, o.Line, p.x1, p.y, max(p.x2-p.x1, 6), tlBar)
		if p.x2-p.x1 > 58 {
			label := fmt.Sprintf("L%d %s", o.Line, o.Kind)
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\">%s</text>", p.x1+4, p.y+tlBar-4, label)
			texts = append(texts, box{p.x1 + 4, p.y + tlBar - 14, p.x1 + 4 + charW*float64(len(label)), p.y + tlBar - 1})
		}
		// The values run from the bar's start to the next bar of the lane.
		room := l.width - p.x1
		for _, q := range bars {
			if q.y == p.y && q.x1 > p.x1 {
				room = min(room, q.x1-p.x1)
			}
		}
		txt := opValues(d.Ops[o.Line], focus)
		if txt == "" {
			b.WriteString("</g>")
			continue
		}
		lines, cls := []string{txt}, "val tv"
		if key[o.Line] {
			cls += " key"
			if valueW*float64(len([]rune(txt)))+4 > room {
				lines = valueLines(txt)
			}
		}
		fmt.Fprintf(vals, "<text class=\"%s\" data-line=\"%d\" x=\"%.1f\" y=\"%.1f\">", cls, o.Line, p.x1+1, p.y+tlBar+10)
		for k, line := range lines {
			line = fit(line, int((room-4)/valueW))
			y := p.y + tlBar + 10 + float64(k*tlValueLine)
			texts = append(texts, box{p.x1 + 1, y - 9, p.x1 + 1 + valueW*float64(len([]rune(line))), y + 2})
			if len(lines) == 1 {
				vals.WriteString(esc(line))
				break
			}
			fmt.Fprintf(vals, "<tspan x=\"%.1f\" dy=\"%d\">%s</tspan>", p.x1+1, min(k, 1)*tlValueLine, esc(line))
		}
		vals.WriteString("</text>")
		b.WriteString("</g>")
	}
	return bars, texts
}

// timelineEdges draws the witness's edges between bars.
//
// An edge of reads-from or auxiliary kind joins the tops of its bars; each
// bends above them as far as makes it cross fewest texts (bar labels and
// values).
func timelineEdges(b *strings.Builder, edges []analyzer.NeighbourEdge, bars map[int64]barPos, texts []box) {
	for _, e := range edges {
		if !e.Witness {
			continue
		}
		f, okf := bars[e.From]
		t, okt := bars[e.To]
		if !okf || !okt {
			continue
		}
		var x1, x2, y1, y2 float64
		if e.Kind == analyzer.HappensBefore || e.Kind == analyzer.Recovery {
			x1, x2, y1, y2 = f.x2, t.x1, f.y+tlBar/2, t.y+tlBar/2
		} else {
			x1, x2, y1, y2 = (f.x1+f.x2)/2, (t.x1+t.x2)/2, f.y, t.y
		}
		var q curve
		least := math.MaxInt
		for _, lift := range []float64{22, 12, 34, 46, 60} {
			c := curve{[2]float64{x1, y1}, [2]float64{(x1 + x2) / 2, min(y1, y2) - lift}, [2]float64{x2, y2}}
			n := 0
			pts := polyline(c)
			for _, t := range texts {
				if crossesAny(t, pts) {
					n++
				}
			}
			if n < least {
				q, least = c, n
			}
		}
		fmt.Fprintf(b, "<path class=\"tle k-%s\" d=\"M%.1f %.1f Q%.1f %.1f %.1f %.1f\" marker-end=\"url(#ah-%s)\"><title>%s</title></path>",
			e.Kind, q.s[0], q.s[1], q.m[0], q.m[1], q.t[0], q.t[1], e.Kind, esc(e.Reason))
	}
}

// markers are the arrowheads, one per edge kind (ids are shared by every
// SVG of the page: identical definitions, so any of them serves).
var markers = func() string {
	var b strings.Builder
	b.WriteString("<defs>")
	for _, k := range []analyzer.EdgeKind{analyzer.HappensBefore, analyzer.ReadsFrom, analyzer.Auxiliary, analyzer.Recovery, "crash"} {
		fmt.Fprintf(&b, "<marker id=\"ah-%s\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0 0L10 5L0 10z\" fill=\"%s\"/></marker>", k, edgeColor(k))
	}
	b.WriteString("</defs>")
	return b.String()
}()

const legend = `<p class="legend"><span class="kind k-hb">hb</span> happens-before (returned before the other was invoked) <span class="kind k-rf">rf</span> reads-from (the other read, expected or replaced a value it wrote) <span class="kind k-aux">aux</span> auxiliary (a read came before the write that replaced its value; a failed cas after a write that replaced its expected value) <span class="kind k-recovery">recovery</span> a cut-off cas or swap took effect before its process's next operation; edges are labelled with their address and value (<code>rf @3=0x5</code>). <span class="badge crash">crash</span> a crash: a red line on the timeline (bold when the anomaly's evidence names it), a red octagon in the graph, joined to the operations it cut off, the reads after it that show what recovery left, and the anomaly's operations after it. Highlighted: the anomaly's operations. Bars run from invocation to response, their values under them (<code>3=0x5</code> a read, <code>3:0x5→0x9</code> a cas, expected→new, or a swap, replaced→new; <code>read 3=0x7</code> what a failed cas reports it read); a bar cut off by a crash or the end has a dashed outline; a grey band folds lines not shown (its line is red if they hold crashes).</p>
`

const css = `
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;padding:16px 24px;color:#1d1d1f;background:#fafafa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:0 0 6px}h3{font-size:13px;margin:0 0 6px;color:#555;text-transform:uppercase;letter-spacing:.04em}
header p{margin:2px 0;color:#444}.ok{color:#137333}.bad{color:#c5221f}
.legend{font-size:12px;color:#555;max-width:1300px}
.anomaly{background:#fff;border:1px solid #ddd;border-radius:6px;padding:12px 16px;margin:14px 0}
.witness{margin:4px 0 8px;padding-left:22px}.witness li{margin:2px 0}
.kind{display:inline-block;min-width:34px;padding:0 5px;border-radius:3px;color:#fff;font:11px/17px monospace;text-align:center}
.kind.k-hb{background:#444}.kind.k-rf{background:#1f6fd1}.kind.k-aux{background:#e07b00}.kind.k-recovery{background:#8a3ccf}
.stale{background:#fff4e0;border-left:3px solid #e07b00;padding:4px 8px;margin:6px 0}
.panels{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}.panel{min-width:0;max-width:100%}.panel.tl{flex:1 1 auto}.panel.gr{flex:0 1 auto;overflow-x:auto}
.tlwrap{display:flex;border:1px solid #e3e3e3;background:#fff}.lanes{flex:0 0 40px;border-right:1px solid #eee}.scroll{overflow-x:auto;flex:1 1 auto}
svg text{font:10px monospace;fill:#333}
.lane{fill:#fff;stroke:#f0f0f0}.pl{font-weight:bold}.ax{fill:#888;text-anchor:middle}
.gap rect{fill:#f3f3f3}.gap line{stroke:#bbb;stroke-dasharray:2 3}.gap.crashed line{stroke:#d93025}
.crash line{stroke:#d93025;stroke-width:2;stroke-dasharray:5 3}.crash text{fill:#d93025;font-weight:bold}
.op rect{stroke:#6b8db5;fill:#dbe8f7}.op.cas rect{stroke:#5f9a6e;fill:#dcefe1}.op.cas.s-fail rect{stroke:#a08850;fill:#f4ecd6}.op.swap rect{stroke:#8a6bb5;fill:#ebe2f5}
.op.cut rect{stroke-dasharray:4 2}.op.out rect{opacity:.45}
.op.hl rect{stroke:#c5221f!important;stroke-width:2.5;fill:#ffd6a5!important}
.op text{pointer-events:none}
.op.hover rect,.node.hover circle{stroke:#000;stroke-width:3}
.tle{fill:none;stroke-width:2;opacity:.8}
.edge{fill:none;stroke-width:1.2;opacity:.45;stroke-dasharray:4 3}.edge.w{stroke-width:2.6;opacity:1;stroke-dasharray:none}
.k-hb.edge,.k-hb.tle{stroke:#444}.k-rf.edge,.k-rf.tle{stroke:#1f6fd1}.k-aux.edge,.k-aux.tle{stroke:#e07b00}.k-recovery.edge,.k-recovery.tle{stroke:#8a3ccf}
.el{text-anchor:middle;paint-order:stroke;stroke:#fff;stroke-width:3px;font-size:10px}.el.w{font-weight:bold}
text.k-hb{fill:#444}text.k-rf{fill:#1f6fd1}text.k-aux{fill:#e07b00}text.k-recovery{fill:#8a3ccf}
.node circle{fill:#eef3f8;stroke:#6b8db5;stroke-width:1.5}.node.hl circle{fill:#ffd6a5;stroke:#c5221f;stroke-width:3}
.node text{text-anchor:middle;font-weight:bold;font-size:10px}.node text.sub{font-weight:normal;font-size:9px;fill:#555}
.more li{margin:3px 0}
.implied{margin:6px 0}.implied summary{cursor:pointer;color:#555}.implied li{margin:3px 0}
.val{font-size:9px;fill:#555;paint-order:stroke;stroke:#fff;stroke-width:3px}.node text.nv{text-anchor:middle;font-size:9px;font-weight:normal}.op.hover~.tv,.tv.hover{fill:#000}
.evidence{list-style:none;padding-left:0;margin:4px 0 8px}.evidence li{margin:3px 0}
.badge{display:inline-block;padding:0 5px;border-radius:3px;background:#555;color:#fff;font:11px/17px monospace}.badge.crash{background:#d93025}
.crash.story line{stroke-width:3.5;stroke-dasharray:none}
.crashnode polygon{fill:#fde0dc;stroke:#d93025;stroke-width:1.5}.crashnode.story polygon{stroke-width:3}
.crashnode text{text-anchor:middle;font-weight:bold;font-size:10px;fill:#d93025}.crashnode text.sub{font-weight:normal;font-size:9px}
.cedge{fill:none;stroke:#d93025;stroke-width:1.4;stroke-dasharray:4 3;opacity:.8}.cedge.after{stroke-dasharray:1 3}
#tip{position:fixed;display:none;pointer-events:none;background:#202124;color:#fff;font:12px/1.4 monospace;padding:6px 8px;border-radius:4px;max-width:640px;white-space:pre-wrap;z-index:10}
`

const script = `(function(){
var ops=JSON.parse(document.getElementById("pmlin-ops").textContent);
var tip=document.getElementById("tip");
function text(line){
  var o=ops[line];
  if(line==="0")return "genesis: the initial state";
  if(!o)return "line "+line;
  var s=o.d+"\n"+"line "+line+": "+(o.i||"(invocation)");
  if(o.r)s+="\nline "+o.rl+": "+o.r;
  else if(o.cl)s+="\ncut off by the crash at line "+o.cl+(o.c?" (completed: it took effect)":"");
  else s+="\n(no response: "+o.s+")"+(o.c?" (completed: it took effect)":"");
  return s;
}
function mark(line,on){
  var els=document.querySelectorAll('[data-line="'+line+'"]');
  for(var i=0;i<els.length;i++)els[i].classList.toggle("hover",on);
}
function move(ev){
  tip.style.left=Math.min(ev.clientX+14,window.innerWidth-660)+"px";
  tip.style.top=(ev.clientY+16)+"px";
}
var els=document.querySelectorAll("[data-line]");
for(var i=0;i<els.length;i++){
  (function(el){
    var line=el.getAttribute("data-line");
    el.addEventListener("mouseenter",function(ev){tip.textContent=text(line);tip.style.display="block";move(ev);mark(line,true);});
    el.addEventListener("mousemove",move);
    el.addEventListener("mouseleave",function(){tip.style.display="none";mark(line,false);});
  })(els[i]);
}
// A timeline wider than its box shows the anomaly's operations and the
// values of the key reads (those after its crashes), from the first.
var scrolls=document.querySelectorAll(".scroll"),scrolled=0,keyHidden=0;
for(var k=0;k<scrolls.length;k++){
  var sc=scrolls[k];
  // All of them if they fit, else the key reads' values (the evidence).
  [".op.hl rect,.tv.key",".tv.key"].some(function(sel){
    var lo=Infinity,hi=-Infinity,ks=sc.querySelectorAll(sel);
    for(var j=0;j<ks.length;j++){var bb=ks[j].getBBox();lo=Math.min(lo,bb.x);hi=Math.max(hi,bb.x+bb.width);}
    if(!ks.length||hi<=sc.clientWidth)return !!ks.length;
    sc.scrollLeft=Math.max(0,Math.min(lo-20,hi-sc.clientWidth+10));
    return hi-lo+30<=sc.clientWidth;
  });
  if(sc.scrollWidth>sc.clientWidth+1)scrolled++;
  var box=sc.getBoundingClientRect(),kv=sc.querySelectorAll(".tv.key");
  for(var j=0;j<kv.length;j++){var kr=kv[j].getBoundingClientRect();if(kr.right>box.right+0.5||kr.left<box.left-0.5)keyHidden++;}
}
function overlap(a,b){return a.left<b.right-0.5&&b.left<a.right-0.5&&a.top<b.bottom-0.5&&b.top<a.bottom-0.5;}
function inside(x,y,r){return x>r.left+0.5&&x<r.right-0.5&&y>r.top+0.5&&y<r.bottom-0.5;}
// Texts of the graphs: no edge label or values over another, or over a
// vertex; no edge through a text (but an edge's own label).
var graphs=document.querySelectorAll("svg.graph"),labels=0,texts=0,overlaps=0,crossings=0;
for(var g=0;g<graphs.length;g++){
  var ls=graphs[g].querySelectorAll(".el,.nv"),vs=graphs[g].querySelectorAll(".node circle,.crashnode polygon"),ps=graphs[g].querySelectorAll("path.edge,path.cedge");
  labels+=graphs[g].querySelectorAll(".el").length;texts+=ls.length;
  var rs=[];for(var x=0;x<ls.length;x++)rs.push(ls[x].getBoundingClientRect());
  var pts=[];
  for(var p=0;p<ps.length;p++){
    var len=ps[p].getTotalLength(),m=ps[p].getScreenCTM(),q=[];
    for(var u=0;u<=len;u+=2){var pt=ps[p].getPointAtLength(u);q.push([m.a*pt.x+m.c*pt.y+m.e,m.b*pt.x+m.d*pt.y+m.f]);}
    pts.push(q);
  }
  for(var x=0;x<ls.length;x++){
    for(var y=x+1;y<ls.length;y++)if(overlap(rs[x],rs[y]))overlaps++;
    for(var v=0;v<vs.length;v++)if(overlap(rs[x],vs[v].getBoundingClientRect()))overlaps++;
    var own=ls[x].getAttribute("data-edge");
    for(var p=0;p<ps.length;p++){
      if(own!==null&&ps[p].getAttribute("data-edge")===own)continue;
      for(var u=0;u<pts[p].length;u++)if(inside(pts[p][u][0],pts[p][u][1],rs[x])){crossings++;break;}
    }
  }
}
document.body.setAttribute("data-scrolled",String(scrolled));
document.body.setAttribute("data-page-overflow",String(Math.max(0,document.documentElement.scrollWidth-document.documentElement.clientWidth)));
document.body.setAttribute("data-key-hidden",String(keyHidden));
document.body.setAttribute("data-label-crossings",String(crossings));
document.body.setAttribute("data-texts",String(texts));
var vals=document.querySelectorAll(".val"),shown=0;
for(var v=0;v<vals.length;v++){var vr=vals[v].getBoundingClientRect();if(vr.width>0&&vr.height>0)shown++;}
document.body.setAttribute("data-values-drawn",String(shown));
document.body.setAttribute("data-crashes-drawn",String(document.querySelectorAll(".crashnode").length));
document.body.setAttribute("data-labels",String(labels));
document.body.setAttribute("data-label-overlaps",String(overlaps));
var hl=document.querySelectorAll(".hl"),drawn=0;
for(var j=0;j<hl.length;j++){var r=hl[j].getBoundingClientRect();if(r.width>0&&r.height>0)drawn++;}
document.body.setAttribute("data-highlighted",String(hl.length));
document.body.setAttribute("data-highlighted-drawn",String(drawn));
document.body.setAttribute("data-render","ok");
})();`
