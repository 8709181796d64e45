// Package report renders an analyzer verdict for people and programs.
//
//   - Text: the verdict, counts, then each anomaly: its title (with the
//     crashes of its evidence, and a shrunk history's original lines), its
//     summary, its evidence first (the crash story), then its minimal
//     witness: for a cycle, a shortest cycle, each edge with its reason in
//     a sentence; for the other kinds, the reads-from edges the summary
//     names; for stale observations, how many versions behind they were
//     (analyzer.Staleness). The sentences are the analyzer's: one
//     renderer, from the edges' and the evidence's data. Only root
//     anomalies are shown (analyzer.Anomaly.Root), each followed by the
//     count, by kind, of the anomalies it implies.
//   - JSON: the object of docs/cli-contract.md, with each anomaly's
//     edges and staleness: one type, Verdict, for the graph method, the
//     exact search and recorded runs.
//   - DOT: the anomalies' neighbourhoods of the precedence multigraph
//     (analyzer.Neighbourhood), through gonum's DOT encoder, edges labelled
//     by kind, word and value, the witness's edges in bold, crashes as red
//     octagons joined to what they cut off and to the reads after them.
//   - HTML: one self-contained file (no network loads): per root anomaly
//     (the anomalies it implies folded under it), its
//     evidence and witness, a timeline with a lane per process, operations
//     as bars from invocation to response with their values under them,
//     crash lines, the anomaly's operations highlighted, and beside it the
//     precedence subgraph: values under the vertices, crashes as vertices,
//     edge labels placed clear of each other and of the vertices (graph.go);
//     hovering shows an operation's lines and values.
//   - For a version 2 history (objects of any model, internal/lin):
//     ObjectsVerdict's text, JSON and HTML (objhtml.go, html/template):
//     a section per object with its explanation (the sentence, the
//     witness, the longest order replayed and the state after it) and a
//     timeline of its operations, the witness highlighted; objects of
//     more than TimelineMax operations are drawn around their
//     explanation, or summed up when linearizable, as are the objects
//     with no violation past DrawnMax operations drawn.
//
// DOT and HTML (of version 1) show neighbourhoods, never a whole
// history, so their size does not grow with the history's: the analyzer
// keeps no values, and Collect re-reads just the lines shown
// (history.Extract).
package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
)

// Text writes a verdict a person can read, its titles naming operations
// and crashes by names (nil: by their lines, as the sentences of an
// analysis of a file do).
func Text(w io.Writer, name string, r *analyzer.Result, names analyzer.Namer) error {
	if names == nil {
		names = analyzer.LineNamer{}
	}
	var b strings.Builder
	verdict := "LINEARIZABLE"
	if !r.Linearizable {
		verdict = "NOT LINEARIZABLE"
	}
	fmt.Fprintf(&b, "%s: %s (%s mode)\n", name, verdict, r.Mode)
	fmt.Fprintf(&b, "  operations %d, processes %d, words %d, crashes %d\n", r.Operations, r.Processes, r.Words, r.Crashes)
	if r.Dropped+r.Completed > 0 {
		fmt.Fprintf(&b, "  cut-off operations: %d completed as successes, %d dropped\n", r.Completed, r.Dropped)
	}
	fmt.Fprintf(&b, "  graph: %d vertices, %d edges (happens-before %d, reads-from %d, auxiliary %d, recovery %d)\n",
		r.Vertices, r.Edges.Total(), r.Edges.HappensBefore, r.Edges.ReadsFrom, r.Edges.Auxiliary, r.Edges.Recovery)
	implied := impliedBy(r.Anomalies)
	for k, a := range r.Anomalies {
		if a.Root != nil {
			continue // counted under its root
		}
		fmt.Fprintf(&b, "\nanomaly %d: %s\n", k+1, anomalyTitle(a, names))
		// Evidence first: what the history shows, then the edges that
		// prove the anomaly.
		if a.Kind != analyzer.Cycle || len(a.Edges) == 0 {
			fmt.Fprintf(&b, "  %s\n", summaryOf(a))
		}
		for _, ev := range a.Evidence {
			fmt.Fprintf(&b, "  evidence: %s\n", ev.Reason)
		}
		if a.Kind == analyzer.Cycle && len(a.Edges) > 0 {
			fmt.Fprintf(&b, "  %s:\n", summaryOf(a))
		}
		for _, e := range a.Edges {
			fmt.Fprintf(&b, "  - [%s] %s\n", e.Kind, e.Reason)
		}
		for _, s := range a.Staleness {
			fmt.Fprintf(&b, "  staleness: %s\n", s.Reason)
		}
		if deps := implied[k]; len(deps) > 0 {
			fmt.Fprintf(&b, "  %s\n", impliedLine(r.Anomalies, deps))
		}
	}
	if r.Omitted > 0 {
		fmt.Fprintf(&b, "\n(%d more anomalies not listed)\n", r.Omitted)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// impliedBy lists, for each root anomaly (by index), the indexes of the
// anomalies it implies (analyzer.Anomaly.Root).
func impliedBy(as []analyzer.Anomaly) map[int][]int {
	out := map[int][]int{}
	for k, a := range as {
		if a.Root != nil {
			out[*a.Root] = append(out[*a.Root], k)
		}
	}
	return out
}

// impliedLine says how many anomalies a root implies, of which kinds (in
// the order they first come), and their numbers: "and 24 anomalies it
// implies (4 fork, 20 unreachable-write: anomalies 2-25)".
func impliedLine(as []analyzer.Anomaly, deps []int) string {
	var kinds []analyzer.Kind
	count := map[analyzer.Kind]int{}
	for _, k := range deps {
		if count[as[k].Kind] == 0 {
			kinds = append(kinds, as[k].Kind)
		}
		count[as[k].Kind]++
	}
	parts := make([]string, len(kinds))
	for i, kd := range kinds {
		parts[i] = fmt.Sprintf("%d %s", count[kd], kd)
	}
	nums := make([]int64, len(deps))
	for i, k := range deps {
		nums[i] = int64(k + 1)
	}
	return fmt.Sprintf("and %s it implies (%s: %s %s)", plural(len(deps), "1 anomaly", fmt.Sprintf("%d anomalies", len(deps))),
		strings.Join(parts, ", "), plural(len(deps), "anomaly", "anomalies"), ranges(nums))
}

// ranges writes sorted numbers with runs shortened: "2-5, 9".
func ranges(xs []int64) string {
	var s []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j > i {
			s = append(s, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		} else {
			s = append(s, fmt.Sprint(xs[i]))
		}
		i = j + 1
	}
	return strings.Join(s, ", ")
}

// anomalyTitle names an anomaly: its kind, operations (and the lines
// they had in the original history, for a shrunk one), addresses and
// crashes.
func anomalyTitle(a analyzer.Anomaly, names analyzer.Namer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s", a.Kind, names.OpList(a.Ops))
	if len(a.OriginalOps) > 0 {
		fmt.Fprintf(&b, " (%s %s of the original)", plural(len(a.OriginalOps), "line", "lines"), joinInts(a.OriginalOps))
	}
	if len(a.Words) > 0 {
		fmt.Fprintf(&b, ", %s %s", plural(len(a.Words), "address", "addresses"), joinU(a.Words))
	}
	if len(a.Crashes) > 0 {
		fmt.Fprintf(&b, ", %s", names.CrashList(a.Crashes))
	}
	return b.String()
}

// summaryOf is an anomaly's first sentence; the run's own anomalies
// (stuck, corrupt) have only an explanation.
func summaryOf(a analyzer.Anomaly) string {
	if a.Summary != "" {
		return a.Summary
	}
	return a.Explanation
}

func joinInts(xs []int64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func joinU(xs []uint64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
