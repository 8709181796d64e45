package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pmlin/pmlin/analyzer"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/model"
)

// sniffVersion tells the version of the history in (history.Version) and
// returns the reader to read it from: in itself for a regular file, whose
// first bytes are read in place (a version 1 history then goes on exactly
// as before), else a buffered reader over it.
func sniffVersion(in io.Reader) (io.Reader, int) {
	if f, ok := in.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			head := make([]byte, sniffSize)
			n, _ := f.ReadAt(head, 0)
			return in, history.Version(bufio.NewReaderSize(bytes.NewReader(head[:n]), sniffSize))
		}
	}
	br := bufio.NewReaderSize(in, sniffSize)
	return br, history.Version(br)
}

// runCheckV2 decides a version 2 history (docs/history-format.md, "Version
// 2") with the exact checker for any model, object by object, and prints
// its verdict: each object's, and the explanation of each object that no
// order explains.
func runCheckV2(ctx context.Context, e env, in io.Reader, name string, o checkOptions) error {
	if o.outs.any() {
		return &exitError{exitInput, fmt.Errorf("%s: --report, --dot and --shrink are for version 1 histories: the verdict of a version 2 history holds its explanation", name)}
	}
	h, err := history.ReadV2(in, name)
	if err != nil {
		return &exitError{exitInput, err}
	}
	if len(h.Ops) == 0 {
		return &exitError{exitInput, noOperation(name)}
	}
	if err := validateV2(h, model.Builtin); err != nil {
		return &exitError{exitInput, err}
	}
	opt := lin.Options{Mode: o.mode, MaxStates: int64(o.budget.states)}
	if o.maxMemory > 0 {
		// The memos are most of what a search holds; the rest (the
		// history, the models' states) gets the other half.
		opt.MaxMemory = o.maxMemory / 2
	}
	if e.stderrTTY {
		opt.Progress = func(p lin.Progress) {
			fmt.Fprintf(e.stderr, "\rpmlin check: %s: %d states, %d of %d searches done ", name, p.States, p.PartsDone, p.Parts)
		}
	}
	cctx := ctx
	if o.budget.time > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, o.budget.time)
		defer cancel()
	}
	res, err := lin.Check(cctx, h, opt)
	if opt.Progress != nil {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return &exitError{exitInput, &analyzer.UndecidedError{File: name, Line: h.Ops[0].Line,
			Msg: fmt.Sprintf("the search ran past its budget of %v (--budget)", o.budget.time)}}
	case err != nil:
		return &exitError{exitInput, err}
	case res.Verdict == lin.Undecided:
		for _, or := range res.Objects {
			if or.Verdict == lin.Undecided {
				return &exitError{exitInput, &analyzer.UndecidedError{File: name, Line: objectLine(h, or.Object),
					Msg: or.Reason + " (--budget, --max-memory)"}}
			}
		}
	}
	v := newV2Verdict(h, name, res)
	if o.asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false) // "deq -> 5", not "deq -\u003e 5"
		if err := enc.Encode(v); err != nil {
			return &exitError{exitInput, err}
		}
	} else if err := v.text(e.stdout); err != nil {
		return &exitError{exitInput, err}
	}
	if !v.Linearizable {
		return &exitError{exitViolated, nil}
	}
	return nil
}

// validateV2 makes each object's model and validates each operation
// against it, as the checker does, so that an error names its line in the
// manner of the reader's (a *history.Error, kind malformed).
func validateV2(h *model.History, models func(string) model.Maker) error {
	ms := make([]*model.Model, len(h.Objects))
	for i, o := range h.Objects {
		fail := func(format string, args ...any) error {
			return &history.Error{File: h.Name, Line: objectLine(h, i), Err: history.ErrIllFormed,
				Msg: fmt.Sprintf("object %s: ", o.Name) + fmt.Sprintf(format, args...)}
		}
		mk := models(o.Model)
		if mk == nil {
			return fail("unknown model %q (docs/history-format.md lists the built-in models)", o.Model)
		}
		m, err := mk(o.Params)
		if err != nil {
			return fail("%v", err)
		}
		ms[i] = m
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if err := ms[op.Object].Validate(op); err != nil {
			// Results its model does not allow are the response's
			// fault: the operation without them is valid.
			line, unanswered := op.Line, *op
			unanswered.Status, unanswered.Results = model.CutOff, nil
			if op.Status == model.Returned && ms[op.Object].Validate(&unanswered) == nil {
				line = op.RetLine
			}
			return &history.Error{File: h.Name, Line: line, Err: history.ErrIllFormed,
				Msg: fmt.Sprintf("process %d: %v", op.Proc, err)}
		}
	}
	return nil
}

// objectLine is the line to blame for object i: its declaration, or
// (brought in by version 1 lines) its first operation's.
func objectLine(h *model.History, i int) int64 {
	if l := h.Objects[i].Line; l > 0 {
		return l
	}
	for k := range h.Ops {
		if h.Ops[k].Object == i {
			return h.Ops[k].Line
		}
	}
	return 0
}

// v2Verdict is pmlin check's verdict on a version 2 history, in JSON as
// docs/cli-contract.md states it: the fields of a version 1 verdict that
// mean something here, and the objects.
type v2Verdict struct {
	File         string         `json:"file"`
	Linearizable bool           `json:"linearizable"`
	Mode         history.Mode   `json:"mode"`
	Operations   int            `json:"operations"`
	Engine       string         `json:"engine"`
	Version      int            `json:"version"`
	Processes    int            `json:"processes"`
	Crashes      int            `json:"crashes"`
	States       int64          `json:"states"`
	Objects      []v2ObjectJSON `json:"objects"`
	Anomalies    []v2Anomaly    `json:"anomalies"`
}

// v2ObjectJSON is one object's verdict.
type v2ObjectJSON struct {
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
}

// v2Anomaly is an object whose operations no order explains.
type v2Anomaly struct {
	Kind   string `json:"kind"` // "nonlinearizable"
	Object string `json:"object"`
	Model  string `json:"model"`
	// Ops are the lines of the invocations of a set of the object's
	// operations that no order explains (minimal when Minimal).
	Ops     []int64  `json:"ops"`
	Minimal bool     `json:"minimal"`
	Words   []uint64 `json:"words"` // a words object's addresses among Ops; empty otherwise
	// Explanation is the sentence; Failing the line of the operation that
	// could not take effect; State the model's state before it, after
	// the longest order found (Prefix, its last operations, of
	// PrefixLen).
	Explanation string     `json:"explanation"`
	Failing     int64      `json:"failing"`
	State       string     `json:"state"`
	PrefixLen   int        `json:"prefix_len"`
	Prefix      []v2OpJSON `json:"prefix"`
	Witness     []v2OpJSON `json:"witness"`
	expl        *lin.Explanation
}

// v2OpJSON is one operation in an explanation.
type v2OpJSON struct {
	Line    int64  `json:"line"`
	Proc    int64  `json:"proc"`
	Op      string `json:"op"`
	LeftOut bool   `json:"left_out,omitempty"`
}

func opsJSON(refs []lin.OpRef) []v2OpJSON {
	out := make([]v2OpJSON, len(refs))
	for i, r := range refs {
		out[i] = v2OpJSON{Line: r.Line, Proc: r.Proc, Op: r.Op, LeftOut: r.LeftOut}
	}
	return out
}

func newV2Verdict(h *model.History, name string, res *lin.Result) *v2Verdict {
	procs := map[int64]bool{}
	for i := range h.Ops {
		procs[h.Ops[i].Proc] = true
	}
	v := &v2Verdict{File: name, Linearizable: res.Verdict == lin.Linearizable, Mode: res.Mode,
		Operations: len(h.Ops), Engine: "exact", Version: 2, Processes: len(procs), Crashes: len(h.Crashes),
		States: res.States, Objects: []v2ObjectJSON{}, Anomalies: []v2Anomaly{}}
	for _, or := range res.Objects {
		v.Objects = append(v.Objects, v2ObjectJSON{Name: or.Name, Model: or.Model, Line: h.Objects[or.Object].Line,
			Operations: or.Ops, Linearizable: or.Verdict == lin.Linearizable, Verdict: or.Verdict.String(),
			Reason: or.Reason, Partitions: or.Parts})
		x := or.Explanation
		if or.Verdict != lin.Violation || x == nil {
			continue
		}
		a := v2Anomaly{Kind: "nonlinearizable", Object: or.Name, Model: or.Model, Minimal: x.Minimal, Words: []uint64{},
			Explanation: x.Sentence, Failing: x.Failing.Line, State: x.State, PrefixLen: x.PrefixLen,
			Prefix: opsJSON(x.Prefix), Witness: opsJSON(x.Ops), expl: x}
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

// text writes the verdict for a person: the verdict, a line per object,
// then each violation's explanation.
func (v *v2Verdict) text(w io.Writer) error {
	var b strings.Builder
	verdict := "LINEARIZABLE"
	if !v.Linearizable {
		verdict = "NOT LINEARIZABLE"
	}
	fmt.Fprintf(&b, "%s: %s (%s mode, exact search)\n", v.File, verdict, v.Mode)
	fmt.Fprintf(&b, "  operations %d, processes %d, crashes %d, objects %d, states searched %d\n",
		v.Operations, v.Processes, v.Crashes, len(v.Objects), v.States)
	for _, o := range v.Objects {
		what := map[string]string{"linearizable": "linearizable", "violation": "NOT LINEARIZABLE", "undecided": "undecided"}[o.Verdict]
		if o.Reason != "" {
			what += " (" + o.Reason + ")"
		}
		fmt.Fprintf(&b, "  object %s (%s): %s, %d operations\n", o.Name, o.Model, what, o.Operations)
	}
	for i, a := range v.Anomalies {
		at := "operations at lines"
		if len(a.Ops) == 1 {
			at = "operation at line"
		}
		fmt.Fprintf(&b, "\nanomaly %d: nonlinearizable, object %s, %s %s\n", i+1, a.Object, at, joinLines(a.Ops))
		for _, l := range strings.Split(strings.TrimRight(a.expl.Text(), "\n"), "\n") {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
