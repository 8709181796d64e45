package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/model"
)

// ObjectsVerdict is a verdict on a version 2 history (objects of any
// model, internal/lin), as pmlin check prints it in JSON
// (docs/cli-contract.md, "Version 2 histories") and the Go API in text: the
// fields of a version 1 verdict that mean something here, and the objects.
type ObjectsVerdict struct {
	File         string          `json:"file"`
	Linearizable bool            `json:"linearizable"`
	Mode         history.Mode    `json:"mode"`
	Operations   int             `json:"operations"`
	Engine       string          `json:"engine"`
	Version      int             `json:"version"`
	Processes    int             `json:"processes"`
	Crashes      int             `json:"crashes"`
	States       int64           `json:"states"`
	Objects      []ObjectVerdict `json:"objects"`
	Anomalies    []ObjectAnomaly `json:"anomalies"`
	// Stuck counts the operations of synchronisation objects that break
	// progressibility (each object's Stuck lists them): a finding like a
	// violation (exit 1), though every object is linearizable.
	Stuck int            `json:"stuck,omitempty"`
	hist  *model.History // for HTML's timelines
}

// ObjectVerdict is one object's verdict.
type ObjectVerdict struct {
	Name         string `json:"name"`
	Model        string `json:"model"`
	Line         int64  `json:"line"` // of its declaration; 0: brought in by version 1 lines
	Operations   int    `json:"operations"`
	Linearizable bool   `json:"linearizable"`
	// Verdict: "linearizable", "violation" or "undecided" (with Reason:
	// beside a violation of another object, an object may stay undecided).
	Verdict    string `json:"verdict"`
	Reason     string `json:"reason,omitempty"`
	Partitions int    `json:"partitions"`
	// Engine answered: "exact" (the search), "queue" (Lowe's
	// queue-oriented algorithm, for queues of unique values), "unique"
	// (the precedence-graph analyzer, for maps and registers of unique
	// values), "sync" (synchronisation objects, by matching), "twostep"
	// (them in recoverable mode with process order, by the search in
	// two-step form) or "mixed" (some keys by one, some by another).
	Engine string `json:"engine"`
	// Stuck: a synchronisation object's operations that never returned
	// though they should have (not progressible), each with its partner.
	Stuck []ObjectStuck `json:"stuck,omitempty"`
}

// ObjectStuck is an operation cut off by the end of the history that
// breaks progressibility (lin.Stuck).
type ObjectStuck struct {
	Op      ObjectOp `json:"op"`
	Partner ObjectOp `json:"partner"`
	// Synchronised: the partner returned, so the operation synchronised
	// with it; else both are pending and could have synchronised.
	Synchronised bool   `json:"synchronised"`
	Explanation  string `json:"explanation"`
}

// ObjectAnomaly is an object whose operations no order explains.
type ObjectAnomaly struct {
	Kind   string `json:"kind"` // "nonlinearizable"
	Object string `json:"object"`
	Model  string `json:"model"`
	// Ops are the lines of the invocations of a set of the object's
	// operations that no order explains (minimal when Minimal).
	Ops []int64 `json:"ops"`
	// OriginalOps are, for a history shrunk from another (its invocations
	// end with "# line N"), the lines Ops had there, parallel to Ops (0:
	// not known); absent otherwise. The caller sets them (SetOrigins).
	OriginalOps []int64  `json:"original_ops,omitempty"`
	Minimal     bool     `json:"minimal"`
	Words       []uint64 `json:"words"` // a words object's addresses among Ops; empty otherwise
	// Explanation is the sentence; Failing the line of the operation that
	// could not take effect; State the model's state before it, after
	// the longest order found (Prefix, its last operations, of
	// PrefixLen).
	Explanation string           `json:"explanation"`
	Failing     int64            `json:"failing"`
	State       string           `json:"state"`
	PrefixLen   int              `json:"prefix_len"`
	Prefix      []ObjectOp       `json:"prefix"`
	Witness     []ObjectOp       `json:"witness"`
	expl        *lin.Explanation // for Text
}

// ObjectOp is one operation in an explanation.
type ObjectOp struct {
	Line    int64  `json:"line"`
	Proc    int64  `json:"proc"`
	Op      string `json:"op"`
	LeftOut bool   `json:"left_out,omitempty"`
}

func objectOps(refs []lin.OpRef) []ObjectOp {
	out := make([]ObjectOp, len(refs))
	for i, r := range refs {
		out[i] = ObjectOp{Line: r.Line, Proc: r.Proc, Op: r.Op, LeftOut: r.LeftOut}
	}
	return out
}

// NewObjectsVerdict is the verdict res of lin.Check on h, the file name.
func NewObjectsVerdict(h *model.History, name string, res *lin.Result) *ObjectsVerdict {
	procs := map[int64]bool{}
	for i := range h.Ops {
		procs[h.Ops[i].Proc] = true
	}
	v := &ObjectsVerdict{File: name, Linearizable: res.Verdict == lin.Linearizable, Mode: res.Mode,
		Operations: len(h.Ops), Version: 2, Processes: len(procs), Crashes: len(h.Crashes),
		States: res.States, Objects: []ObjectVerdict{}, Anomalies: []ObjectAnomaly{}, hist: h}
	// The history's engine: the one that answered for every object with
	// operations; else the exact search's if it answered for some object
	// (all its parts), else "mixed".
	exact := false
	for _, or := range res.Objects {
		switch {
		case or.Ops == 0:
		case or.Engine == lin.EngineExact:
			exact = true
		case v.Engine == "":
			v.Engine = or.Engine
		case v.Engine != or.Engine:
			v.Engine = lin.EngineMixed
		}
	}
	if exact || v.Engine == "" {
		v.Engine = lin.EngineExact
	}
	for _, or := range res.Objects {
		ov := ObjectVerdict{Name: or.Name, Model: or.Model, Line: h.Objects[or.Object].Line,
			Operations: or.Ops, Linearizable: or.Verdict == lin.Linearizable, Verdict: or.Verdict.String(),
			Reason: or.Reason, Partitions: or.Parts, Engine: or.Engine}
		for _, st := range or.Stuck {
			ov.Stuck = append(ov.Stuck, ObjectStuck{Op: objectOps([]lin.OpRef{st.Op})[0], Partner: objectOps([]lin.OpRef{st.Partner})[0],
				Synchronised: st.Synchronised, Explanation: st.Sentence})
		}
		v.Stuck += len(ov.Stuck)
		v.Objects = append(v.Objects, ov)
		x := or.Explanation
		if or.Verdict != lin.Violation || x == nil {
			continue
		}
		a := ObjectAnomaly{Kind: "nonlinearizable", Object: or.Name, Model: or.Model, Minimal: x.Minimal, Words: []uint64{},
			Explanation: x.Sentence, Failing: x.Failing.Line, State: x.State, PrefixLen: x.PrefixLen,
			Prefix: objectOps(x.Prefix), Witness: objectOps(x.Ops), expl: x}
		for _, r := range x.Ops {
			a.Ops = append(a.Ops, r.Line)
			if op := &h.Ops[r.Index]; or.Model == "words" {
				a.Words = appendAddrs(a.Words, op)
			}
		}
		v.Anomalies = append(v.Anomalies, a)
	}
	return v
}

// says is the object's verdict in words, as the text and HTML write it.
func (o ObjectVerdict) says() string {
	s := map[string]string{"linearizable": "linearizable", "violation": "NOT LINEARIZABLE", "undecided": "undecided"}[o.Verdict]
	if len(o.Stuck) > 0 {
		s += fmt.Sprintf(", NOT PROGRESSIBLE (%d stuck)", len(o.Stuck))
	}
	return s
}

// Found says whether the verdict found something: a violation, or an
// operation stuck (exit status 1).
func (v *ObjectsVerdict) Found() bool { return !v.Linearizable || v.Stuck > 0 }

// says is the history's verdict in words.
func (v *ObjectsVerdict) says() string {
	switch {
	case !v.Linearizable:
		return "NOT LINEARIZABLE"
	case v.Stuck > 0:
		return "LINEARIZABLE, NOT PROGRESSIBLE"
	}
	return "LINEARIZABLE"
}

// appendAddrs adds the addresses of a words operation (every stride-th
// argument, model/words.go) not there yet.
func appendAddrs(addrs []uint64, op *model.Op) []uint64 {
	stride := map[string]int{"cas": 3, "swap": 2}[op.Name]
	stride = max(stride, 1)
	for i := 0; i < len(op.Args); i += stride {
		a := op.Args[i].N
		found := false
		for _, b := range addrs {
			found = found || a == b
		}
		if !found {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// engineName says in words which engine answered, for text and HTML.
func (v *ObjectsVerdict) engineName() string { return engineWords(v.Engine) }

func engineWords(engine string) string {
	switch engine {
	case lin.EngineQueue:
		return "queue engine"
	case lin.EngineUnique:
		return "unique-value engine"
	case lin.EngineMixed:
		return "several engines"
	case lin.EngineSync:
		return "synchronisation matching"
	case lin.EngineTwoStep:
		return "two-step search"
	}
	return "exact search"
}

// Text writes the verdict for a person: the verdict, a line per object,
// then each violation's explanation. names names the anomalies' operations
// in their titles, as it did in the explanations (lin.Options.Names); nil:
// by their lines, as pmlin check prints them.
func (v *ObjectsVerdict) Text(w io.Writer, names analyzer.Namer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (%s mode, %s)\n", v.File, v.says(), v.Mode, v.engineName())
	fmt.Fprintf(&b, "  operations %d, processes %d, crashes %d, objects %d, states searched %d\n",
		v.Operations, v.Processes, v.Crashes, len(v.Objects), v.States)
	for _, o := range v.Objects {
		what := o.says()
		if o.Reason != "" {
			what += " (" + o.Reason + ")"
		}
		by := ""
		switch {
		case o.Engine == lin.EngineMixed && v.Engine != o.Engine:
			by = ", by several engines"
		case o.Engine != lin.EngineExact && o.Engine != v.Engine:
			by = ", by the " + engineWords(o.Engine)
		}
		fmt.Fprintf(&b, "  object %s (%s): %s, %d operations%s\n", o.Name, o.Model, what, o.Operations, by)
	}
	for i, a := range v.Anomalies {
		at := "operations at lines"
		if len(a.Ops) == 1 {
			at = "operation at line"
		}
		orig := ""
		if len(a.OriginalOps) > 0 {
			orig = fmt.Sprintf(" (%s %s of the original)", plural(len(a.OriginalOps), "line", "lines"), lines(a.OriginalOps))
		}
		ops := at + " " + lines(a.Ops)
		if names != nil {
			ops = names.OpList(a.Ops)
		}
		fmt.Fprintf(&b, "\nanomaly %d: nonlinearizable, object %s, %s%s\n", i+1, a.Object, ops, orig)
		for _, l := range strings.Split(strings.TrimRight(a.expl.Text(), "\n"), "\n") {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	k := 0
	for _, o := range v.Objects {
		for _, st := range o.Stuck {
			k++
			op, partner := fmt.Sprintf("operation at line %d", st.Op.Line), fmt.Sprintf("partner at line %d", st.Partner.Line)
			if names != nil {
				op, partner = names.Op(st.Op.Line), "partner "+names.Op(st.Partner.Line)
			}
			fmt.Fprintf(&b, "\nstuck %d: object %s, %s, %s\n  %s\n", k, o.Name, op, partner, st.Explanation)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// SetOrigins names, for a history shrunk from another, the line each
// anomaly's operations had there (origin: the original line of a line of
// this history, 0 when unknown; shrink.Origins).
func (v *ObjectsVerdict) SetOrigins(origin func(line int64) int64) {
	for i := range v.Anomalies {
		a := &v.Anomalies[i]
		a.OriginalOps = make([]int64, len(a.Ops))
		known := false
		for k, l := range a.Ops {
			a.OriginalOps[k] = origin(l)
			known = known || a.OriginalOps[k] != 0
		}
		if !known {
			a.OriginalOps = nil
		}
	}
}

// lines writes line numbers separated by spaces.
func lines(ls []int64) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = fmt.Sprint(l)
	}
	return strings.Join(s, " ")
}
