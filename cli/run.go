package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/atomicfile"
	"github.com/pmlin/pmlin/internal/crash"
	"github.com/pmlin/pmlin/internal/directio"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/internal/report"
)

// runConfig is the configuration run and fuzz start from, before their
// flags (crash.Config.RegisterFlags) change it: the defaults, the first
// target, and e's way to start the child process of the process-kill
// modes.
func runConfig(e env) crash.Config {
	c := crash.DefaultConfig()
	if len(e.targets) > 0 {
		c.Target = e.targets[0]
	}
	c.Child.Command = e.child
	return c
}

// selfCommand starts this executable's hidden internal-worker subcommand:
// the child process of the process-kill modes, with the same targets.
func selfCommand(spec string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, "internal-worker", spec)
}

func internalWorkerCommand(e env) *cobra.Command {
	return &cobra.Command{
		Use:    "internal-worker SPEC",
		Short:  "The child process of the process-kill mode (not for direct use)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := crash.ChildMain(cmd.Context(), args[0], e.stdout, e.targets); code != 0 {
				return &exitError{code, nil}
			}
			return nil
		},
	}
}

func runCommand(e env) *cobra.Command {
	var (
		c        = runConfig(e)
		outPath  string
		check    bool
		asJSON   bool
		modeName string
		format   string
		force    bool
		ex       execFlags
	)
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "Record a history of a target under crashes",
		Long: `run drives a target (--target, see pmlin targets; by default the first) on an
emulated persistent region (or, with --crash-mode kill, a region file worked
by a child process killed with SIGKILL), crashes it at seeded random region
accesses, recovers, and records the history (to -o FILE, default standard
output). With --sched deterministic the same flags and seed record the same
history, byte for byte.

Exit status: 0 recorded (and, with --check, linearizable); 1 an operation got
stuck or blocked, a recovery or operation failed, or (--check) the history
is not linearizable; 2 a usage error, an interrupt, or (--check) a history
the analyzer could not decide (UNDECIDED is not a pass).

The history ends with the line "end", or, when Ctrl-C stopped the run,
"interrupted after N of M operations": pmlin check reports a history cut
short. With -o, the file appears when the history is complete (or
interrupted and saying so).

With --exec "PROGRAM [ARGS]" it runs a program of one's own instead: one run
of pmlin fuzz --exec (killed --crashes times at delays drawn from --seed,
then a recovering start; recorders/README.md), the gathered history written
as above. The replay script of a finding of pmlin fuzz --exec runs it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			x, err := ex.exec(cmd.Flags(), e.targets, c.Crashes, "format")
			if err != nil {
				return &exitError{exitInput, err}
			}
			if x != nil {
				mode, err := history.ParseMode(modeName)
				if err != nil {
					return &exitError{exitInput, err}
				}
				return runExecOnce(cmd.Context(), e, x, c.Driver.Seed, runOut{outPath, force, false}, check || asJSON, asJSON, mode)
			}
			if err := structureFlags(cmd.Flags(), &c); err != nil {
				return &exitError{exitInput, err}
			}
			if err := c.Check(); err != nil { // before -o is created
				return &exitError{exitInput, err}
			}
			mode, err := history.ParseMode(modeName)
			if err != nil {
				return &exitError{exitInput, err}
			}
			if format != "text" && format != "binary" {
				return &exitError{exitInput, fmt.Errorf("--format %q: text or binary", format)}
			}
			return runRun(cmd.Context(), e, c, runOut{outPath, force, format == "binary"}, check || asJSON, asJSON, mode)
		},
	}
	c.RegisterFlags(cmd.Flags(), e.targets)
	cmd.Flags().StringVarP(&outPath, "output", "o", "", "write the history to this file (default standard output); an existing file is kept unless --force")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the -o file if it exists")
	cmd.Flags().BoolVar(&check, "check", false, "also check the history and print the verdict (to standard error when the history goes to standard output)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "check, and print the verdict as one JSON object (its anomalies include the run's own: stuck, corrupt, blocked)")
	cmd.Flags().StringVar(&modeName, "mode", "strict", "completion rule for --check: strict, recoverable or durable")
	cmd.Flags().StringVar(&format, "format", "text", "text, or binary: the workers' logs go to the file as they fill, with no merge (the least recording overhead; pmlin check reads it, pmlin convert turns it into text)")
	ex.register(cmd.Flags())
	return cmd
}

// runOut is where run writes its history: a path ("" or "-": standard
// output), whether an existing file may be replaced, and whether the
// history is binary.
type runOut struct {
	path   string
	force  bool
	binary bool
}

func runRun(ctx context.Context, e env, c crash.Config, out runOut, check, asJSON bool, mode history.Mode) error {
	outPath := out.path
	binary := out.binary
	var w io.Writer = e.stdout
	name := "<stdout>"
	msg := e.stdout // where the summary goes: not into the history
	var buf bytes.Buffer
	var f *atomicfile.File
	if outPath != "" && outPath != "-" {
		// Direct I/O: a history of hundreds of megabytes written through
		// the page cache costs the run a copy and a page for every byte.
		df, err := atomicfile.CreateWith(outPath, 0o644, out.force, func(name string, perm fs.FileMode) (io.WriteCloser, error) {
			return directio.CreateExcl(name, perm)
		})
		if err != nil {
			return &exitError{exitInput, outputError(outPath, err)}
		}
		defer df.Abort() // a run that fails leaves no file
		w, name, f = df, outPath, df
	} else {
		msg = e.stderr
		if sf, ok := e.stdout.(*os.File); ok && binary && isTerminal(sf) {
			return &exitError{exitInput, errors.New("a binary history is not for a terminal: write it to a file (-o FILE) or a pipe")}
		}
	}
	if check {
		w = io.MultiWriter(w, &buf)
	}
	rec := record.NewRecorder(history.NewWriter(w))
	if binary {
		rec = record.NewBinaryRecorder(history.NewBinaryWriter(w))
	}
	res, err := crash.RunTo(ctx, c, rec)
	if err != nil {
		return &exitError{exitInput, err}
	}
	if f != nil {
		// Complete, or interrupted and saying so in its last line
		// (crash.RunTo): either way the file is whole.
		if err := f.Commit(); err != nil {
			return &exitError{exitInput, outputError(outPath, err)}
		}
	}
	acc := ""
	if res.Accesses > 0 { // the process-kill mode's children do not report theirs
		acc = fmt.Sprintf(", %d region accesses", res.Accesses)
	}
	summary := msg
	if asJSON {
		summary = e.stderr // the JSON object is the last line of msg
	}
	swaps := ""
	if res.Swaps > 0 {
		swaps = fmt.Sprintf(", %d swaps", res.Swaps)
	}
	kinds := fmt.Sprintf("%d reads, %d cas%s", res.Reads, res.CASes, swaps)
	if c.Target.Model != "" {
		kinds = "of model " + c.Target.Model
	}
	fmt.Fprintf(summary, "pmlin run: %d operations (%s), %d crashes%s, %d lines -> %s\n",
		res.Operations, kinds, res.Crashes, acc, res.Lines, name)
	if res.Canceled {
		if f != nil {
			return &exitError{exitInput, fmt.Errorf("interrupted: %s keeps the %d operations recorded, and says it was interrupted (pmlin check reports that)", name, res.Operations)}
		}
		return &exitError{exitInput, fmt.Errorf("interrupted")}
	}
	violated := len(res.Anomalies) > 0
	if check {
		v, err := crash.Decide(ctx, res, buf.Bytes(), mode)
		if err != nil {
			return &exitError{exitInput, err}
		}
		return showVerdict(msg, name, v, asJSON)
	} else if len(res.Anomalies) > 0 {
		fmt.Fprintln(msg)
		writeRunAnomalies(msg, res.Anomalies)
	}
	if violated {
		return &exitError{exitViolated, nil}
	}
	return nil
}

// showVerdict writes a run's checked verdict (JSON or text) and returns
// its exit status.
func showVerdict(msg io.Writer, name string, v *crash.Verdict, asJSON bool) error {
	if asJSON {
		fmt.Fprintln(msg, marshalLine(toJSON(v)))
	} else if err := writeVerdict(msg, name, v); err != nil {
		return &exitError{exitInput, err}
	}
	return checkedExit(v)
}

// checkedExit is the exit status of a checked run: 1 when the run or the
// analyzer found anything wrong, 2 when the analyzer could not decide (an
// UNDECIDED history is not a pass), else 0.
func checkedExit(v *crash.Verdict) error {
	switch {
	case v.Violated():
		return &exitError{exitViolated, nil}
	case v.Undecided != nil:
		return &exitError{exitInput, nil}
	}
	return nil
}

// writeRunAnomalies prints the anomalies a run found by itself.
func writeRunAnomalies(w io.Writer, as []analyzer.Anomaly) {
	for _, a := range as {
		fmt.Fprintf(w, "anomaly: %s", a.Kind)
		if len(a.Ops) > 0 {
			fmt.Fprintf(w, ", operation at line %s", joinLines(a.Ops))
		}
		if len(a.Words) > 0 {
			fmt.Fprintf(w, ", addresses %v", a.Words)
		}
		fmt.Fprintf(w, "\n  %s\n", a.Explanation)
	}
}

// writeVerdict prints the analyzer's report and the run's own anomalies.
func writeVerdict(w io.Writer, name string, v *crash.Verdict) error {
	if n := len(v.Run.Anomalies); n > 0 {
		fmt.Fprintf(w, "%s: the run itself found %d anomal%s:\n", name, n, map[bool]string{true: "y", false: "ies"}[n == 1])
		writeRunAnomalies(w, v.Run.Anomalies)
		fmt.Fprintf(w, "\nthe history up to there:\n")
	}
	switch {
	case v.Check != nil:
		if err := report.Text(w, name, v.Check, nil); err != nil {
			return err
		}
	case v.Objects != nil: // a version 2 history: the exact checker's verdict
		ov := *v.Objects
		ov.File = name
		if err := ov.Text(w, nil); err != nil {
			return err
		}
	case v.Undecided == nil: // pmlin fuzz --exec: logs that did not gather
		fmt.Fprintf(w, "%s: NOT CHECKED: the run left no history to check (its anomalies above say why)\n", name)
	default:
		fmt.Fprintf(w, "%s: UNDECIDED (%s mode): %v\n", name, v.Mode, v.Undecided)
	}
	return nil
}

// verdictJSON is the JSON of a run's verdict: report's one shape.
type verdictJSON = report.Verdict

func toJSON(v *crash.Verdict) verdictJSON {
	j := *report.RunVerdict(v.Mode, v.Run.Operations, v.Run.Anomalies, v.Check, v.Undecided, v.Run)
	if o := v.Objects; o != nil {
		// A version 2 history: the exact checker's verdict, its anomalies
		// (one per object not linearizable) after the run's own.
		j.Linearizable = o.Linearizable && len(v.Run.Anomalies) == 0
		j.Engine = "exact"
		j.Anomalies = v.Anomalies
	}
	return j
}

func marshalLine(x any) string {
	b, _ := json.Marshal(x)
	return string(b)
}
