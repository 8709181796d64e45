package analyzer

import "fmt"

// ObservedBeforeWritten is a reads-from edge that contradicts real time:
// operation Reader (a read, or a successful cas expecting the value)
// observed at Word the value operation Writer wrote, yet Reader returned
// before Writer was invoked (a happens-before edge Reader -> Writer).
// Operations are named by the line of their invocation.
//
// No primitive, however broken, returns a value before anyone writes it:
// values are unique (Assumption 1), so Reader cannot have seen an older
// copy. Such a pair, the shortest cycle there is, says that the history's
// order is not the real-time order of the steps: the recorder used a
// per-thread clock, merged its logs wrongly, or did not merge them at all
// (docs: recorders/README.md, "What a recorder must do").
type ObservedBeforeWritten struct {
	Reader, Writer int64
	Word           uint64
}

// ObservationsBeforeWrites lists the pairs of the result's witnesses in
// which an operation observed a value before its writer was invoked: a
// reads-from edge and a happens-before edge between the same two
// operations, in opposite directions, in one anomaly.
func ObservationsBeforeWrites(r *Result) []ObservedBeforeWritten {
	var out []ObservedBeforeWritten
	for _, a := range r.Anomalies {
		for _, rf := range a.Edges {
			if rf.Kind != ReadsFrom || rf.From == 0 {
				continue
			}
			for _, hb := range a.Edges {
				if hb.Kind == HappensBefore && hb.From == rf.To && hb.To == rf.From {
					out = append(out, ObservedBeforeWritten{Reader: rf.To, Writer: rf.From, Word: rf.Word})
					break
				}
			}
		}
	}
	return out
}

// RecorderHint says in sentences what the pairs mean for the recorder,
// or "" when there are none, naming operations by names (nil: by their
// lines). concatenated tells that the history looks like per-thread logs
// put one after the other (history.LooksConcatenated).
func RecorderHint(names Namer, pairs []ObservedBeforeWritten, concatenated bool) string {
	if len(pairs) == 0 {
		return ""
	}
	p := pairs[0]
	more := ""
	if len(pairs) > 1 {
		more = fmt.Sprintf(" (and %d more such pairs)", len(pairs)-1)
	}
	names = namerOr(names)
	op, order := names.Op, names.Order()
	s := fmt.Sprintf("%s observed at address %d the value that %s wrote, but %s was invoked only after %s had returned%s: no primitive returns a value before it is written, so %s is not the real-time order. ",
		op(p.Reader), p.Word, op(p.Writer), op(p.Writer), op(p.Reader), more, order.Name)
	if concatenated {
		s += order.Blocks + " "
	}
	return s + order.Fix + " (recorders/README.md, \"What a recorder must do\")."
}
