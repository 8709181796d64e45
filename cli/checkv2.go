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
	"time"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/objcheck"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/internal/shrink"
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

// errV2Outputs is the usage error of --dot with a version 2 history, known
// only once the file is open.
var errV2Outputs = errors.New("--dot is for version 1 histories: the verdict of a version 2 history holds its explanation (--report draws it)")

// v2ReadMemory is the low end of what a version 2 history of size bytes
// holds once read (history.ReadV2), for a refusal before reading it: on
// 200,000 operations, 1.5 bytes per byte of JSON Lines and 6 per byte of
// text stay live. The JSON Lines figure, so that only what cannot fit is
// refused; the searches' memos are bounded apart (half of the bound).
func v2ReadMemory(size int64) int64 { return size * 3 / 2 }

// runCheckV2 decides a version 2 history (docs/history-format.md, "Version
// 2") with the exact checker for any model, object by object, and prints
// its verdict: each object's, and the explanation of each object that no
// order explains.
func runCheckV2(ctx context.Context, e env, in io.Reader, name string, size int64, o checkOptions) error {
	if o.outs.dot != "" {
		return &exitError{exitInput, fmt.Errorf("%s: %w", name, errV2Outputs)}
	}
	if need := v2ReadMemory(size); o.maxMemory > 0 && need > o.maxMemory {
		return &exitError{exitInput, &analyzer.MemoryError{File: name, Need: need, Limit: o.maxMemory, Source: o.memorySource, Estimated: true}}
	}
	// A shrunk history names its operations' original lines: so do its
	// anomalies.
	in, origin := shrink.Origins(in)
	h, err := history.ReadV2(in, name)
	if err != nil {
		return &exitError{exitInput, err}
	}
	if len(h.Ops) == 0 {
		return &exitError{exitInput, noOperation(name)}
	}
	if err := objcheck.Validate(h, e.models); err != nil {
		var oe *objcheck.Error
		errors.As(err, &oe)
		return &exitError{exitInput, &history.Error{File: name, Line: oe.Line, Err: history.ErrIllFormed, Msg: oe.Msg}}
	}
	opt := lin.Options{Mode: o.mode, MaxStates: int64(o.budget.states), Models: e.models}
	if o.maxMemory > 0 {
		// The memos are most of what a search holds; the rest (the
		// history, the models' states) gets the other half.
		opt.MaxMemory = o.maxMemory / 2
	}
	if e.stderrTTY {
		opt.ProgressEvery = 200 * time.Millisecond // as often as the exact search's bar
		if e.progressEvery > 0 {
			opt.ProgressEvery = e.progressEvery
		}
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
				return &exitError{exitInput, &analyzer.UndecidedError{File: name, Line: objcheck.ObjectLine(h, or.Object),
					Msg: or.Reason + " (--budget, --max-memory)"}}
			}
		}
	}
	v := report.NewObjectsVerdict(h, name, res)
	if origin != nil {
		v.SetOrigins(origin)
	}
	if o.asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false) // "deq -> 5", not "deq -\u003e 5"
		if err := enc.Encode(v); err != nil {
			return &exitError{exitInput, err}
		}
	} else if err := v.Text(e.stdout, nil); err != nil {
		return &exitError{exitInput, err}
	}
	if o.outs.html != "" {
		if err := createOutput(ctx, o.outs.html, o.outs.force, v.HTML); err != nil {
			return &exitError{exitInput, afterVerdict{err}}
		}
		fmt.Fprintf(e.stderr, "pmlin: wrote the report %s (%s)\n", o.outs.html, fileSize(o.outs.html))
	}
	switch {
	case o.outs.shrink == "":
	case res.Verdict != lin.Violation && v.Stuck > 0:
		fmt.Fprintf(e.stderr, "pmlin: nothing to shrink: every object is linearizable, and stuck operations are not shrunk (no %s written)\n", o.outs.shrink)
	case res.Verdict != lin.Violation:
		fmt.Fprintf(e.stderr, "pmlin: nothing to shrink: the history is linearizable (no %s written)\n", o.outs.shrink)
	default:
		// (A time budget is the check's: each re-check gets the
		// default budget of states.)
		so := shrinkV2Options{mode: o.mode, models: e.models, maxStates: int64(o.budget.states), path: o.outs.shrink, force: o.outs.force}
		if err := shrinkV2(ctx, e, h, name, so); err != nil {
			return err
		}
	}
	if v.Found() {
		return &exitError{exitViolated, nil}
	}
	return nil
}

// shrinkV2Options say how to shrink a version 2 history and where to write
// the result.
type shrinkV2Options struct {
	mode      history.Mode
	models    func(string) model.Maker
	maxStates int64 // each re-check's budget of states (0: the checker's default)
	path      string
	force     bool
	by        string // the command, for the file's first comment
}

// errShrinkOutput wraps the failure to write the shrunk history, which,
// unlike a failure to shrink, is the command's error.
type errShrinkOutput struct{ error }

// writeShrunkV2 shrinks a version 2 history h (named name) that is not
// linearizable (package shrink, Objects) and writes the result to o.path.
func writeShrunkV2(ctx context.Context, h *model.History, name string, o shrinkV2Options) (shrink.ObjectStats, error) {
	out, st, err := shrink.Objects(ctx, h, shrink.ObjectOptions{Mode: o.mode, Models: o.models, MaxStates: o.maxStates})
	if err != nil {
		return st, err
	}
	comment := []string{
		fmt.Sprintf("Shrunk by %s from %s (%s, %s) to %s and %s:", o.by, name, count(st.Original, "operation"), count(st.OriginalCrashes, "crash"), count(st.Final, "operation"), count(st.Crashes, "crash")),
		fmt.Sprintf("object %s is not linearizable in %s mode. Each invocation and crash names its line there.", st.Object, o.mode),
		fmt.Sprintf("pmlin check --mode %s FILE -> NOT LINEARIZABLE (exit 1)", o.mode),
	}
	if st.After > 0 {
		comment = append(comment, fmt.Sprintf("Its first operation came after the crash of line %d there (and what recovery left).", st.After))
	}
	if err := createOutput(ctx, o.path, o.force, func(w io.Writer) error { return shrink.WriteObjects(w, out, comment) }); err != nil {
		return st, errShrinkOutput{err}
	}
	return st, nil
}

// shrinkV2 is --shrink for a version 2 history that is not linearizable:
// as for version 1 (writeOutputs), the verdict stands whatever happens
// here, so a failure to shrink is printed, not returned; only an
// interrupt or a file that cannot be written is an error.
func shrinkV2(ctx context.Context, e env, h *model.History, name string, o shrinkV2Options) error {
	o.by = "pmlin check --shrink"
	st, err := writeShrunkV2(ctx, h, name, o)
	var we errShrinkOutput
	switch {
	case ctx.Err() != nil:
		return &exitError{exitInput, fmt.Errorf("interrupted")}
	case errors.As(err, &we):
		return &exitError{exitInput, afterVerdict{we.error}}
	case err != nil:
		fmt.Fprintf(e.stderr, "pmlin: --shrink: %v (no %s written)\n", err, o.path)
		return nil
	}
	fmt.Fprintf(e.stderr, "pmlin: shrunk %d operations to %d (%s): %s\n", st.Original, st.Final, shrunkHow(st), o.path)
	return nil
}

// count says n things: "1 crash", "2 crashes", "0 operations".
func count(n int, thing string) string {
	switch {
	case n == 1:
		return "1 " + thing
	case strings.HasSuffix(thing, "sh"):
		return fmt.Sprintf("%d %ses", n, thing)
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// shrunkHow says how far a version 2 shrinking went, for its line on
// standard error and fuzz's list of kept files.
func shrunkHow(st shrink.ObjectStats) string {
	minimal := "1-minimal"
	switch {
	case st.Minimal:
	case st.Undecided > 0:
		minimal = fmt.Sprintf("not proven 1-minimal: %d re-checks were undecided within the budget", st.Undecided)
	default:
		minimal = "not proven 1-minimal: the re-check budget ran out"
	}
	return fmt.Sprintf("object %s, %s, %d lines; %s; %d re-checks in %.2fs", st.Object, count(st.Crashes, "crash"), st.Lines, minimal, st.Checks, st.Seconds)
}
