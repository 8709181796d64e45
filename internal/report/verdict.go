package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
)

// Verdict is a verdict as pmlin prints it in JSON, however it was reached:
// the object of docs/cli-contract.md for pmlin check --json (by the graph
// method or, with --exact, by search), for pmlin run --json and for a
// fuzz finding. One type, so that they print one way; what does not apply
// to a verdict is left out of its JSON.
type Verdict struct {
	// File is the history checked (pmlin check), absent for a run's.
	File         string       `json:"file,omitempty"`
	Linearizable bool         `json:"linearizable"`
	Mode         history.Mode `json:"mode"`
	// Operations is the number of operations of the history checked.
	Operations int64 `json:"operations"`
	// Engine is the method that answered: "graph" (package analyzer) or
	// "exact" (package exact's search: asked for, or deciding a small
	// history the graph method left undecided, GraphUndecided then
	// saying why); none when nothing did (an undecided run).
	Engine         string `json:"engine,omitempty"`
	GraphUndecided string `json:"graph_undecided,omitempty"`
	// Undecided says why the analyzer could not decide a run's history
	// (its *analyzer.AssumptionError or *analyzer.UndecidedError); the
	// verdict then has no figures and Linearizable is false.
	Undecided string `json:"undecided,omitempty"`
	// Stats are the graph method's figures (nil for the exact search and
	// when undecided).
	*analyzer.Stats
	// Search are the exact search's figures (nil for the graph method).
	*Search
	// Anomalies are, for a run, its own (stuck, corrupt, blocked) first,
	// then the analyzer's: the kinds of docs/cli-contract.md with the same
	// fields.
	Anomalies []analyzer.Anomaly `json:"anomalies"`
	// Omitted counts the analyzer's anomalies left out of the list.
	Omitted int64 `json:"omitted,omitempty"`
	// Hints say what the anomalies tell about the recorder rather than
	// the primitive (analyzer.RecorderHint), when they tell something.
	Hints []string `json:"hints,omitempty"`
	// Run is the run that recorded the history (pmlin run and fuzz: its
	// crash.Result), nil for a history checked from a file.
	Run any `json:"run,omitempty"`
	// Error is, for a recording cut short (history.Reader.Cut), the error
	// object of pmlin check --json that says so: the verdict is then of
	// what the file holds.
	Error any `json:"error,omitempty"`
}

// Search are the figures of the exact checker (package exact).
type Search struct {
	// Exact is always true: it tells the exact search's verdicts apart.
	Exact      bool `json:"exact"`
	States     int  `json:"states"`
	Components int  `json:"components"`
	// Order is a linearization (operations by invocation line), when one
	// exists; Failing the operations of a component that has none, and
	// Witness a few of them that cannot be ordered on their own
	// (shrink.ExactWitness).
	Order   []int64 `json:"order,omitempty"`
	Failing []int64 `json:"failing,omitempty"`
	Witness []int64 `json:"witness,omitempty"`
}

// The engines of Verdict.Engine.
const (
	EngineGraph = "graph"
	EngineExact = "exact"
)

// NewVerdict is the verdict of the graph method (package analyzer).
func NewVerdict(r *analyzer.Result) *Verdict {
	st := r.Stats
	return &Verdict{Linearizable: r.Linearizable, Mode: r.Mode, Operations: r.Operations, Engine: EngineGraph, Stats: &st,
		Anomalies: r.Anomalies, Omitted: r.Omitted}
}

// ExactVerdict is the verdict of the exact search on h (package exact),
// its operations named by their invocation lines; witness are the indexes
// of the operations of the witness (nil: none was sought).
func ExactVerdict(h *history.History, mode history.Mode, r exact.Result, witness []int) *Verdict {
	lines := func(ids []int) []int64 {
		if len(ids) == 0 {
			return nil
		}
		out := make([]int64, len(ids))
		for k, id := range ids {
			out[k] = h.Ops[id].Line
		}
		return out
	}
	return &Verdict{Linearizable: r.Linearizable, Mode: mode, Operations: int64(len(h.Ops)), Engine: EngineExact,
		Search: &Search{Exact: true, States: r.States, Components: r.Components, Order: lines(r.Order), Failing: lines(r.Failing),
			Witness: lines(witness)}}
}

// ExactText writes the exact search's verdict v (ExactVerdict) for a
// person, as pmlin check prints it: the verdict, why the graph method left
// it undecided (v.GraphUndecided) when that is how the exact search came
// to decide it, the search's figures, and a linearization or a witness.
func ExactText(w io.Writer, name string, v *Verdict) error {
	var b strings.Builder
	verdict := "LINEARIZABLE"
	if !v.Linearizable {
		verdict = "NOT LINEARIZABLE"
	}
	fmt.Fprintf(&b, "%s: %s (%s mode, exact search)\n", name, verdict, v.Mode)
	if v.GraphUndecided != "" {
		fmt.Fprintf(&b, "  decided by the exact search: the graph method left it undecided (%s)\n", v.GraphUndecided)
	}
	fmt.Fprintf(&b, "  operations %d, components %d, states explored %d\n", v.Operations, v.Components, v.States)
	if v.Linearizable {
		fmt.Fprintf(&b, "  a linearization (invocation lines): %s\n", joinLines(v.Order))
	} else {
		fmt.Fprintf(&b, "  no linearization: the %d operations at lines %s cannot be ordered (a witness cut down from the %d operations of a component with no linearization)\n",
			len(v.Witness), joinLines(v.Witness), len(v.Failing))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func joinLines(ls []int64) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = strconv.FormatInt(l, 10)
	}
	return strings.Join(s, " ")
}

// RunVerdict is the verdict on a recorded run: the run's own anomalies
// first, then the analyzer's result res on the run's history, or, when
// the analyzer could not decide, its error undecided (res is then nil, and
// operations, the run's count of operations, stands for the history's).
// run is the run's own record, printed as "run".
func RunVerdict(mode history.Mode, operations int64, own []analyzer.Anomaly, res *analyzer.Result, undecided error, run any) *Verdict {
	v := &Verdict{Mode: mode, Operations: operations}
	if res != nil {
		v = NewVerdict(res)
	}
	if undecided != nil {
		v.Undecided = undecided.Error()
	}
	v.Anomalies = append(append([]analyzer.Anomaly{}, own...), v.Anomalies...)
	// The analyzer's roots are indexes in its own list: shift them past
	// the run's anomalies (on copies: res keeps its own).
	for k := len(own); k < len(v.Anomalies); k++ {
		if r := v.Anomalies[k].Root; r != nil {
			shifted := *r + len(own)
			v.Anomalies[k].Root = &shifted
		}
	}
	v.Run = run
	return v
}

// MarshalJSON writes the verdict with "anomalies" always a list, never
// null, without modifying v.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict // the fields, without this method
	p := plain(v)
	if p.Anomalies == nil {
		p.Anomalies = []analyzer.Anomaly{}
	}
	return json.Marshal(p)
}

// JSON writes the verdict as one JSON object and a newline.
func JSON(w io.Writer, v *Verdict) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
