package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/atomicfile"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
	"github.com/pmlin/pmlin/internal/shrink"
)

func checkCommand(e env) *cobra.Command {
	var (
		modeName  string
		o         checkOptions
		cpuProf   string
		maxMemory string
		budget    string
	)
	cmd := &cobra.Command{
		Use:   "check [flags] FILE|- ...",
		Short: "Decide whether recorded histories are linearizable",
		Long: `check reads histories (text v1 or its JSON Lines twin, detected
automatically; - is standard input; the format is docs/history-format.md in
the pmlin repository) and decides whether each is linearizable. A version 2
history (header "pmlin-history v2": objects of any data type) is decided
object by object by the exact search for any model, in the same modes. Exit status:
0 linearizable, 1 not linearizable, 2 malformed input, an input that breaks an
assumption of the method, a history with no operation (a recorder's mistake,
not a pass), an undecided history, one that needs more memory than the check
may use (--max-memory, default the memory available: refused up front when
its size tells, else stopped while it is read), or a usage error. With several FILEs,
each gets its verdict (with --json, one JSON object per line) and the exit
status is the worst.

Each anomaly is explained by a minimal witness: for a cycle, a shortest cycle,
each edge with its reason; for a stale read, how many versions behind it was.

  --report FILE.html  a self-contained HTML report: per anomaly, a timeline of
                      its neighbourhood (a lane per process) and the precedence
                      subgraph around it; never the whole history. For a
                      version 2 history: per object, its verdict, explanation
                      and timeline, the witness highlighted
  --dot FILE.dot      the anomalies' neighbourhoods of the precedence graph, as
                      Graphviz DOT, edges labelled by kind and word
  --shrink OUT.hist   a small sub-history that still fails (1-minimal: removing
                      any one operation makes it pass, ill-formed or fail
                      otherwise), for a person to read and a test to keep; of
                      a version 2 history, the first failing object's few
                      operations and the crashes between them

These take one FILE (--dot a version 1 history), and read a
version 1 history a second time for the lines they show: when it cannot be
read twice (standard input, a named pipe, /dev/fd/N), it is first copied to
a temporary file (removed at exit). They never overwrite an
existing file unless --force is given.

A recording cut short (its header promises a closing line it lacks, or that
says it was interrupted) gets the verdict of what the file holds, then
exit 2 with the reason.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("check needs at least one FILE (- is standard input)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := history.ParseMode(modeName)
			if err != nil {
				return &exitError{exitInput, err}
			}
			o.mode = mode
			if err := validateInputs(args, o); err != nil {
				return &exitError{exitInput, err}
			}
			var flagBytes int64
			if maxMemory != "" {
				if flagBytes, err = parseBytes(maxMemory); err != nil {
					return &exitError{exitInput, fmt.Errorf("--max-memory: %w", err)}
				}
			}
			if budget != "" {
				if o.budget, err = parseBudget(budget); err != nil {
					return &exitError{exitInput, err}
				}
			}
			o.maxMemory, o.memorySource = memoryBound(flagBytes, "/")
			if o.maxMemory > 0 {
				// The collector works harder near the bound rather than
				// let garbage take the room the check needs.
				defer debug.SetMemoryLimit(debug.SetMemoryLimit(o.maxMemory))
			}
			if cpuProf != "" {
				stop, err := startCPUProfile(cpuProf)
				if err != nil {
					return &exitError{exitInput, err}
				}
				defer stop()
			}
			return runChecks(cmd.Context(), e, args, o)
		},
	}
	cmd.Flags().StringVar(&modeName, "mode", "strict", "completion rule for operations cut off by a crash: strict, recoverable or durable")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object per FILE instead of text")
	cmd.Flags().StringVar(&cpuProf, "cpuprofile", "", "write a CPU profile of the check to this file (for go tool pprof)")
	cmd.Flags().StringVar(&maxMemory, "max-memory", "", "bound the check's memory (like 300M, 2G; binary units): a history that needs more is refused, before it is read when its size tells, with exit 2 (default: the memory available, from /proc/meminfo and the memory cgroup's limit)")
	cmd.Flags().BoolVar(&o.exact, "exact", false, "decide by exhaustive search instead (small histories only; needs neither assumption of the method)")
	cmd.Flags().StringVar(&budget, "budget", "", fmt.Sprintf("the exact search's budget, a number of states (like 5000000) or a duration (like 30s): past it the history is undecided, exit 2 (default: %d states with --exact, %d for the histories of up to %d operations the graph method leaves undecided)",
		exact.DefaultMaxStates, exact.FallbackStates, exact.FallbackOps))
	cmd.Flags().StringVar(&o.outs.html, "report", "", "also write a self-contained HTML report to this file (one FILE only)")
	cmd.Flags().StringVar(&o.outs.dot, "dot", "", "also write the anomalies' neighbourhoods of the precedence graph as Graphviz DOT to this file (one FILE only)")
	cmd.Flags().StringVar(&o.outs.shrink, "shrink", "", "also write a small sub-history that still fails to this file (one FILE only)")
	cmd.Flags().BoolVar(&o.outs.force, "force", false, "overwrite existing --report, --dot and --shrink files")
	return cmd
}

// checkOptions are pmlin check's flags, but the profile.
type checkOptions struct {
	mode   history.Mode
	asJSON bool
	exact  bool
	// budget is the exact search's (--budget).
	budget exactBudget
	// maxMemory bounds the check's memory (memoryBound), from where
	// memorySource says; 0: no bound known.
	maxMemory    int64
	memorySource string
	outs         outputs
}

// validateInputs refuses, before any work, what cannot be done with the
// inputs and flags given.
func validateInputs(paths []string, o checkOptions) error {
	if n := len(paths); n > 1 && o.outs.any() {
		return fmt.Errorf("--report, --dot and --shrink take one FILE, and %d were given: check the others on their own", n)
	}
	if o.exact && o.outs.any() {
		return errors.New("--report, --dot and --shrink need the graph method: leave out --exact")
	}
	stdin := 0
	for _, p := range paths {
		if p == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return errors.New("- (standard input) can be read once only")
	}
	return o.outs.validate(paths[0])
}

// runChecks checks each history in turn: each gets its verdict or its
// error, and the exit status is the worst. An interrupt stops them all.
func runChecks(ctx context.Context, e env, paths []string, o checkOptions) error {
	worst := exitOK
	var counts [3]int
	checked := 0
	for i, p := range paths {
		if i > 0 && !o.asJSON {
			fmt.Fprintln(e.stdout)
		}
		var err error
		if o.exact {
			err = runExact(ctx, e, p, o)
		} else {
			err = runCheck(ctx, e, p, o)
		}
		code, cause := exitOK, error(nil)
		var ee *exitError
		if errors.As(err, &ee) {
			code, cause = ee.code, ee.err
		}
		if cause != nil {
			reportCheckError(e, o.asJSON, p, cause)
		}
		counts[code]++
		checked++
		worst = max(worst, code)
		if ctx.Err() != nil {
			break
		}
	}
	if len(paths) > 1 && !o.asJSON {
		fmt.Fprintf(e.stdout, "\n%s\n", tally(len(paths), checked, counts, worst))
	}
	if worst == exitOK {
		return nil
	}
	return &exitError{worst, nil}
}

// tally is the last line of a check of several files: what became of
// each, and the exit status the command returns, which is the worst of
// theirs (an interrupt stops the files after the one it cut short).
func tally(files, checked int, counts [3]int, code int) string {
	s := fmt.Sprintf("pmlin check: %d files: %d linearizable, %d not linearizable, %d with an error",
		files, counts[exitOK], counts[exitViolated], counts[exitInput])
	if n := files - checked; n > 0 {
		s += fmt.Sprintf(", %d not checked (interrupted)", n)
	}
	return s + fmt.Sprintf("; exit status %d", code)
}

// openInput opens FILE or standard input, with its size when known.
func openInput(e env, path string) (io.Reader, string, int64, func(), error) {
	if path == "-" {
		return e.stdin, "<stdin>", 0, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", 0, nil, err
	}
	var size int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return f, path, size, func() { f.Close() }, nil
}

func runCheck(ctx context.Context, e env, path string, o checkOptions) error {
	mode, asJSON, outs := o.mode, o.asJSON, o.outs
	in, name, size, closeIn, err := openInput(e, path)
	if err != nil {
		return &exitError{exitInput, err}
	}
	defer closeIn()
	in, version := sniffVersion(in)
	if version == 2 {
		return runCheckV2(ctx, e, in, name, size, o)
	}
	// The outputs re-read the input: keep a copy of one that cannot be
	// read again (standard input, a named pipe, a process substitution
	// such as /dev/fd/63, whose reopening waits for a writer that never
	// comes or reads what is left of the pipe: nothing).
	reread := rereadable(path, in)
	reopen := func() (io.ReadCloser, error) { return os.Open(path) }
	if !reread && outs.any() {
		tmp, err := os.CreateTemp("", "pmlin-stdin-*.hist")
		if err != nil {
			return &exitError{exitInput, err}
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		in = io.TeeReader(in, tmp)
		reopen = func() (io.ReadCloser, error) { return os.Open(tmp.Name()) }
	}
	// Without outputs, such an input is kept in memory up to a bound, so
	// the recorder hints can look at the history's shape again.
	var kept *cappedBuffer
	maxMemory := o.maxMemory
	if !reread && !outs.any() {
		kept = &cappedBuffer{max: stdinHintBytes}
		if maxMemory > 0 {
			// The copy takes its share of the bound, twice its size (a
			// buffer grown by doubling), and the check the rest.
			kept.max = int(min(stdinHintBytes, maxMemory/16))
			maxMemory -= 2 * int64(kept.max)
		}
		in = io.TeeReader(in, kept)
	}
	var bar *progressbar.ProgressBar
	if e.stderrTTY && size > 64<<20 {
		bar = progressbar.DefaultBytes(size, "reading "+name)
		pr := progressbar.NewReader(in, bar)
		in = &pr
	}
	// A shrunk history names its operations' original lines: so do its
	// anomalies.
	in, origin := shrink.Origins(in)
	// A recording cut short is decided as far as it goes, then said to be
	// cut short (exit 2).
	r := history.NewReader(in, name, history.Options{Prefix: true})
	a, err := analyzer.Analyze(ctx, r, analyzer.Options{Mode: mode, SizeHint: size, Origin: origin,
		MaxMemory: maxMemory, MemorySource: o.memorySource})
	if bar != nil {
		bar.Finish()
		bar.Clear()
	}
	if me := (*analyzer.MemoryError)(nil); errors.As(err, &me) && maxMemory < o.maxMemory {
		// Said of the whole bound, the copy included.
		me.Need += o.maxMemory - maxMemory
		me.Limit = o.maxMemory
	}
	// The input again, if it can be read again: a file, standard input's
	// copy (for the outputs, or for the hints and the exact search while
	// small).
	var again history.Source
	switch {
	case reread || outs.any():
		again = textSource(reopen, name)
	case !kept.over:
		again = textSource(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(kept.buf.Bytes())), nil }, name)
	}
	if ue := (*analyzer.UndecidedError)(nil); errors.As(err, &ue) {
		if decided, err := decideExactly(ctx, e, name, ue, again, o); decided {
			return err
		}
	}
	if err != nil {
		return classify(err)
	}
	res := a.Result
	if res.Operations == 0 {
		return &exitError{exitInput, noOperation(name)}
	}
	cut := r.Cut()
	hint := recorderHint(res, name, again)
	if asJSON {
		v := report.NewVerdict(res)
		v.File = name
		if hint != "" {
			v.Hints = []string{hint}
		}
		if cut != nil {
			v.Error = describe(cut, name, kindMalformed)
		}
		err = report.JSON(e.stdout, v)
	} else {
		err = report.Text(e.stdout, name, res, nil)
		if err == nil && hint != "" {
			_, err = fmt.Fprintf(e.stdout, "\nhint: %s\n", hint)
		}
		if err == nil && cut != nil {
			err = cutNote(e.stdout)
		}
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	if err := writeOutputs(ctx, e, a, name, reopen, outs); err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.err != nil {
			return &exitError{ee.code, afterVerdict{ee.err}}
		}
		return err
	}
	if cut != nil {
		return &exitError{exitInput, afterVerdict{cut}}
	}
	if !res.Linearizable {
		return &exitError{exitViolated, nil}
	}
	return nil
}

// textSource is the events of the input that open opens again from its
// start. A recording cut short was judged as far as it goes: so is it read
// again (Prefix).
func textSource(open func() (io.ReadCloser, error), name string) history.Source {
	return history.TextSource(open, name, history.Options{Prefix: true})
}

// rereadable reports whether the input opened as in (openInput) can be
// opened and read again from its start: a regular file, named, not
// standard input.
func rereadable(path string, in io.Reader) bool {
	f, ok := in.(*os.File)
	if path == "-" || !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular()
}

// cutNote follows the verdict of a recording cut short (history.Reader.Cut),
// whose error is told after it: the verdict is true of what the file
// holds, and not of the recording that was meant.
func cutNote(w io.Writer) error {
	_, err := fmt.Fprintln(w, "  (of a recording cut short: this verdict is of what the file holds, not of the whole run; exit 2)")
	return err
}

// stdinHintBytes bounds the copy of standard input kept for the recorder
// hints: a history recorded by hand is far smaller, and a larger stream is
// not held in memory for a hint.
const stdinHintBytes = 64 << 20

// cappedBuffer keeps what is written to it up to max bytes; past that it
// drops everything and says so (over), without failing the writer.
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if !c.over && c.buf.Len()+len(p) <= c.max {
		c.buf.Write(p)
	} else if !c.over {
		c.over = true
		c.buf = bytes.Buffer{}
	}
	return len(p), nil
}

// recorderHint is what the verdict tells about the recorder, if anything
// (analyzer.RecorderHint); the history's shape is looked at, in a second
// pass, only when there is something to say and the input can be read
// again (a file, or standard input copied for --report and the like).
func recorderHint(res *analyzer.Result, name string, reopen history.Source) string {
	pairs := analyzer.ObservationsBeforeWrites(res)
	if len(pairs) == 0 {
		return ""
	}
	concatenated := false
	if reopen != nil {
		if r, done, err := reopen(); err == nil {
			concatenated, _ = history.LooksConcatenated(r)
			done()
		}
	}
	return analyzer.RecorderHint(nil, pairs, concatenated)
}

// outputs are the files check writes besides its verdict.
type outputs struct {
	html, dot, shrink string
	force             bool
}

func (o outputs) any() bool { return o.html != "" || o.dot != "" || o.shrink != "" }

// validate refuses, before any work, outputs that would overwrite a file
// (without --force), the input, or each other.
func (o outputs) validate(input string) error {
	seen := map[string]string{}
	for _, f := range []struct{ flag, path string }{{"--report", o.html}, {"--dot", o.dot}, {"--shrink", o.shrink}} {
		if f.path == "" {
			continue
		}
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return err
		}
		if prev, ok := seen[abs]; ok {
			return fmt.Errorf("%s and %s name the same file %s", prev, f.flag, f.path)
		}
		seen[abs] = f.flag
		if in, err := filepath.Abs(input); err == nil && input != "-" && in == abs {
			return fmt.Errorf("%s %s would overwrite the input", f.flag, f.path)
		}
		if _, err := os.Stat(f.path); err == nil && !o.force {
			return existsError(f.flag + " " + f.path)
		}
	}
	return nil
}

// writeOutputs writes the HTML report, the DOT graph and the shrunk
// history asked for, each reported on standard error.
func writeOutputs(ctx context.Context, e env, a *analyzer.Analysis, name string, reopen func() (io.ReadCloser, error), o outputs) error {
	if o.html != "" || o.dot != "" {
		d, err := report.Collect(ctx, a, name, textSource(reopen, name), report.Options{})
		if err != nil {
			return &exitError{exitInput, err}
		}
		if o.html != "" {
			if err := createOutput(ctx, o.html, o.force, func(w io.Writer) error { return report.HTML(w, d) }); err != nil {
				return &exitError{exitInput, err}
			}
			fmt.Fprintf(e.stderr, "pmlin: wrote the report %s (%s)\n", o.html, fileSize(o.html))
		}
		if o.dot != "" {
			if err := createOutput(ctx, o.dot, o.force, func(w io.Writer) error { return report.DOT(w, d) }); err != nil {
				return &exitError{exitInput, err}
			}
			fmt.Fprintf(e.stderr, "pmlin: wrote the graph %s (%s)\n", o.dot, fileSize(o.dot))
		}
	}
	if o.shrink == "" {
		return nil
	}
	if a.Result.Linearizable {
		fmt.Fprintf(e.stderr, "pmlin: nothing to shrink: the history is linearizable (no %s written)\n", o.shrink)
		return nil
	}
	h, st, err := shrink.Anomaly(ctx, a, name, reopen, shrink.Options{Confirm: true})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return &exitError{exitInput, fmt.Errorf("interrupted")}
		}
		// The verdict stands; only the shrinking failed.
		fmt.Fprintf(e.stderr, "pmlin: --shrink: %v (no %s written)\n", err, o.shrink)
		return nil
	}
	an := a.Result.Anomalies[0]
	comment := []string{
		fmt.Sprintf("Shrunk by pmlin check --shrink from %s (%d operations) to %d operations:", name, st.Original, st.Final),
		fmt.Sprintf("its anomaly 1 (%s, lines %s), in %s mode. Each invocation names its line there.", an.Kind, joinLines(an.Ops), a.Result.Mode),
		fmt.Sprintf("pmlin check --mode %s FILE -> NOT LINEARIZABLE (exit 1)", a.Result.Mode),
	}
	if err := createOutput(ctx, o.shrink, o.force, func(w io.Writer) error { return shrink.Write(w, h, comment) }); err != nil {
		return &exitError{exitInput, err}
	}
	minimal := "1-minimal"
	if !st.Minimal {
		minimal = "not proven 1-minimal: the check budget ran out"
	}
	exact := ""
	if st.Exact != "" {
		exact = ", exact checker " + st.Exact
	}
	if st.Whole {
		minimal += ", from the whole history: the operations around the anomaly do not fail on their own"
	}
	fmt.Fprintf(e.stderr, "pmlin: shrunk %d operations to %d (%d lines; %s; %d re-checks in %.2fs%s): %s\n",
		st.Original, st.Final, st.Lines, minimal, st.Checks, st.Seconds, exact, o.shrink)
	return nil
}

// existsError refuses to replace what (a path, or a flag and its path).
func existsError(what string) error {
	return fmt.Errorf("%s: the file exists (use --force to overwrite it)", what)
}

// createOutput writes path with write (atomicfile: under a temporary
// name, renamed when complete; removed on failure or interrupt), refusing
// to replace a file unless force.
func createOutput(ctx context.Context, path string, force bool, write func(io.Writer) error) error {
	return outputError(path, atomicfile.Write(ctx, path, 0o644, force, write))
}

// outputError says that an output would replace an existing file (see
// existsError), or is err as it is.
func outputError(path string, err error) error {
	if errors.Is(err, fs.ErrExist) {
		return existsError(path)
	}
	return err
}

func fileSize(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	switch n := st.Size(); {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// startCPUProfile starts profiling into path, refusing to overwrite a
// file. The profile is complete, and gets its name, when profiling stops
// (the returned function), however the command ends.
func startCPUProfile(path string) (func(), error) {
	f, err := atomicfile.Create(path, 0o644, false)
	if err != nil {
		return nil, outputError(path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Abort()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Commit() }, nil
}

// classify maps an analysis error to its exit status. Every failure is 2:
// malformed input (*history.Error), a broken assumption
// (*analyzer.AssumptionError), an undecided history
// (*analyzer.UndecidedError) and I/O errors alike; the message is the
// error's own, which names the file and line. An interrupt is said as such.
func classify(err error) error {
	if errors.Is(err, context.Canceled) {
		return &exitError{exitInput, fmt.Errorf("interrupted")}
	}
	return &exitError{exitInput, err}
}
