package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/internal/shrink"
)

// exactBudget is --budget: the states the exact search may explore, or
// the time it may take.
type exactBudget struct {
	states int           // 0: the search's default
	time   time.Duration // 0: none
}

// parseBudget reads --budget: a number of states (5000000) or a duration
// (30s, 2m).
func parseBudget(s string) (exactBudget, error) {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return exactBudget{time: d}, nil
	}
	if n, err := strconv.Atoi(strings.ReplaceAll(s, "_", "")); err == nil && n > 0 {
		return exactBudget{states: n}, nil
	}
	return exactBudget{}, fmt.Errorf("--budget %q: want a number of states (like 5000000) or a duration (like 30s)", s)
}

// exactReadMemory is the memory of reading a history of size bytes whole,
// for the exact search: its operations take about four bytes per byte of
// text, and the garbage of reading them as much again until collected.
func exactReadMemory(size int64) int64 { return 16<<20 + 6*size }

// runExact is pmlin check --exact FILE.
func runExact(ctx context.Context, e env, path string, o checkOptions) error {
	in, name, size, closeIn, err := openInput(e, path)
	if err != nil {
		return &exitError{exitInput, err}
	}
	defer closeIn()
	in, version := sniffVersion(in)
	if version == 2 {
		return runCheckV2(ctx, e, in, name, size, o)
	}
	h, read, err := readWhole(in, name, size, o)
	// A recording cut short is decided as far as it goes (ReadAll), then
	// said to be cut short (exit 2).
	cut := error(nil)
	if errors.Is(err, history.ErrCutShort) {
		cut, err = err, nil
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	if len(h.Ops) == 0 {
		return &exitError{exitInput, noOperation(name)}
	}
	res, err := searchExact(ctx, e, name, h, read, o, false)
	if err != nil {
		return &exitError{exitInput, err}
	}
	return printExact(ctx, e, name, h, o, res, "", cut)
}

// readWhole reads a history whole, within the memory bound: refused before
// it is read when its size says it needs more, stopped when standard
// input, whose size is unknown, turns out to. It returns the bytes read.
func readWhole(in io.Reader, name string, size int64, o checkOptions) (*history.History, int64, error) {
	if o.maxMemory > 0 && size > 0 && exactReadMemory(size) > o.maxMemory {
		return nil, 0, &analyzer.MemoryError{File: name, Need: exactReadMemory(size), Limit: o.maxMemory, Source: o.memorySource, Estimated: true}
	}
	cr := &countingReader{r: in, max: -1}
	if o.maxMemory > 0 {
		cr.max = max(0, (o.maxMemory-exactReadMemory(0))/6)
	}
	h, err := history.ReadAll(cr, name)
	if cr.over {
		return nil, cr.n, &analyzer.MemoryError{File: name, Need: exactReadMemory(cr.n), Limit: o.maxMemory, Source: o.memorySource, AtLeast: true,
			After: "read it whole for the exact search"}
	}
	return h, cr.n, err
}

// countingReader counts the bytes read, failing once they pass max (-1:
// no bound).
type countingReader struct {
	r    io.Reader
	n    int64
	max  int64
	over bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.max >= 0 && c.n > c.max {
		c.over = true
		return n, errors.New("the memory bound ran out")
	}
	return n, err
}

// searchExact runs the exact search on h (read bytes of text) within the
// budget and the memory bound left after reading it, with a progress bar
// on a terminal; fallback: for a history the graph method left undecided
// (exact.Fallback: none when it is too large, tried false).
func searchExact(ctx context.Context, e env, name string, h *history.History, read int64, o checkOptions, fallback bool) (res exact.Result, err error) {
	opts := exact.Options{Mode: o.mode, MaxStates: o.budget.states}
	if o.maxMemory > 0 {
		opts.MaxMemory = max(1, o.maxMemory-exactReadMemory(read))
	}
	search, cancel := ctx, context.CancelFunc(func() {})
	if o.budget.time > 0 {
		search, cancel = context.WithTimeout(ctx, o.budget.time)
	}
	defer cancel()
	if e.stderrTTY {
		bar := exactBar(e, name, opts.MaxStates, fallback)
		opts.Progress = func(states int) { bar.Set(states) }
		defer func() {
			bar.Finish()
			bar.Clear()
		}()
	}
	if fallback {
		var tried bool
		if res, tried, err = exact.Fallback(search, h, opts); !tried {
			return res, errors.New("too large for the exact search without --exact")
		}
	} else {
		res, err = exact.Check(search, h, opts)
	}
	var me *exact.MemoryError
	switch {
	case err == nil:
	case errors.As(err, &me):
		err = &analyzer.MemoryError{File: name, Need: exactReadMemory(read) + me.Need, Limit: o.maxMemory, Source: o.memorySource, AtLeast: true,
			After: "search " + me.Component + " exactly"}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		err = fmt.Errorf("%s: %w: the time budget of %s ran out after %d states (a larger --budget may decide it)", name, exact.ErrTooLarge, o.budget.time, res.States)
	case errors.Is(err, exact.ErrTooLarge):
		err = fmt.Errorf("%s: %w (a larger --budget may decide it; pmlin check without --exact reads far larger histories)", name, err)
	}
	return res, err
}

// exactBar is the exact search's progress bar: the states explored, of the
// state budget (states; 0: the default), or a spinner without one.
func exactBar(e env, name string, states int, fallback bool) *progressbar.ProgressBar {
	switch {
	case states < 0:
		states = -1
	case states == 0 && fallback:
		states = exact.FallbackStates
	case states == 0:
		states = exact.DefaultMaxStates
	}
	what := "exact search of "
	if fallback {
		what = "the graph method left it undecided: exact search of "
	}
	return progressbar.NewOptions(states, progressbar.OptionSetWriter(e.stderr), progressbar.OptionSetDescription(what+name),
		progressbar.OptionShowCount(), progressbar.OptionSetItsString("states"), progressbar.OptionShowIts(),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
}

// decideExactly decides by the exact search a small history that the graph
// method left undecided (ue), read again with reopen (nil: it cannot be):
// decided is false when it is too large or cannot be read again, and ue
// then stands, told that the exact search ran out too when it did. An
// interrupt is decided: nothing more is tried.
func decideExactly(ctx context.Context, e env, name string, ue *analyzer.UndecidedError, reopen history.Source, o checkOptions) (decided bool, err error) {
	if reopen == nil || ue.Operations > exact.FallbackOps {
		return false, nil
	}
	r, done, err := reopen()
	if err != nil {
		return false, nil
	}
	h, err := history.ReadEvents(r)
	done()
	cut := error(nil)
	if errors.Is(err, history.ErrCutShort) {
		cut, err = err, nil
	}
	if err != nil {
		return false, nil
	}
	res, err := searchExact(ctx, e, name, h, 0, o, true)
	switch {
	case ctx.Err() != nil:
		return true, classify(ctx.Err())
	case err != nil:
		ue.Msg += fmt.Sprintf("; the exact search, tried on its %d operations, did not decide it either (%v)", len(h.Ops), strings.TrimPrefix(err.Error(), name+": "))
		return false, nil
	}
	if o.outs.any() {
		fmt.Fprintf(e.stderr, "pmlin: --report, --dot and --shrink need the graph method's analysis, and the exact search decided %s: none written\n", name)
	}
	return true, printExact(ctx, e, name, h, o, res, ue.Msg, cut)
}

// printExact prints the exact search's verdict on h (with --json, one
// object, engine "exact"), with a witness when it is not linearizable;
// graphUndecided, if not "", is why the graph method did not decide it;
// cut, if not nil, says that h is a recording cut short (history.ErrCutShort):
// the verdict is printed, then the error (exit 2).
func printExact(ctx context.Context, e env, name string, h *history.History, o checkOptions, res exact.Result, graphUndecided string, cut error) error {
	var witness []int
	if !res.Linearizable {
		var err error
		if witness, err = shrink.ExactWitness(ctx, h, res.Failing, shrink.WitnessOptions{Mode: o.mode}); err != nil {
			return &exitError{exitInput, err}
		}
	}
	v := report.ExactVerdict(h, o.mode, res, witness)
	v.File, v.GraphUndecided = name, graphUndecided
	if cut != nil {
		v.Error = describe(cut, name, kindMalformed)
	}
	write := report.ExactText
	if o.asJSON {
		write = func(w io.Writer, _ string, v *report.Verdict) error { return report.JSON(w, v) }
	}
	if err := write(e.stdout, name, v); err != nil {
		return &exitError{exitInput, err}
	}
	if cut != nil {
		if !o.asJSON {
			if err := cutNote(e.stdout); err != nil {
				return &exitError{exitInput, err}
			}
		}
		return &exitError{exitInput, afterVerdict{cut}}
	}
	if !res.Linearizable {
		return &exitError{exitViolated, nil}
	}
	return nil
}

func joinLines(ls []int64) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = fmt.Sprint(l)
	}
	return strings.Join(s, " ")
}
