package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/merge"
)

// mergeCommand merges per-thread logs with timestamps into one history
// (package internal/merge has the syntax and the rules).
func mergeCommand(e env) *cobra.Command {
	var (
		out   string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "merge [flags] LOG...",
		Short: "Merge per-thread logs with timestamps into one history",
		Long: `merge reads logs whose lines are "<timestamp> <event>" (an event line of the
history format, or "crash"; timestamps are unsigned integers of one global
clock, any unit) and writes one history in timestamp order. A log may hold one
process (one file per thread) or many (a timestamp column); - is standard input.

Each process keeps its own order. Steps of different processes with the same
timestamp go invocations first (an interval may grow, never shrink), then a
response whose process invokes again at that timestamp, then by process id;
the first line of the output says how many such ties there were. Two
processes that each respond and invoke again at one timestamp are refused:
no order of their lines would be honest, the clock is too coarse
(recorders/README.md, rule 4). Errors name the log and line: a clock going
backwards within a process, a process in two logs, overlapping operations of
one process, a response with nothing pending, a step at the timestamp of a
crash, such a tie, a line without its timestamp or process id, and anything
malformed. A log given twice is refused.

The history goes to -o FILE (never overwritten without --force) or standard
output. Exit status: 0 merged, 2 an error (nothing is written).
Syntax: recorders/README.md, "Logs for pmlin merge".`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMerge(cmd.Context(), e, args, out, force)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the history to this file instead of standard output (never overwritten without --force)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite --output if it exists")
	return cmd
}

func runMerge(ctx context.Context, e env, paths []string, out string, force bool) error {
	var logs []merge.Log
	stdin := false
	var seen []os.FileInfo // the logs opened so far, parallel to logs
	for _, p := range paths {
		if out != "" && out != "-" && sameFile(p, out) {
			return &exitError{exitInput, fmt.Errorf("-o %s is one of the logs: it would be overwritten", out)}
		}
		var fi os.FileInfo
		if p == "-" {
			if stdin {
				return &exitError{exitInput, errors.New("standard input (-) given twice")}
			}
			stdin = true
			if f, ok := e.stdin.(*os.File); ok {
				fi, _ = f.Stat()
			}
			logs = append(logs, merge.Log{Name: "<stdin>", R: e.stdin})
		} else {
			f, err := os.Open(p)
			if err != nil {
				return &exitError{exitInput, err}
			}
			defer f.Close()
			fi, _ = f.Stat()
			logs = append(logs, merge.Log{Name: p, R: f})
		}
		// The same file twice would merge its steps twice: its
		// processes' steps in two logs, its crashes twice.
		for k, o := range seen {
			if fi != nil && o != nil && os.SameFile(fi, o) {
				return &exitError{exitInput, fmt.Errorf("%s and %s are the same file: give each log once", logs[k].Name, logs[len(logs)-1].Name)}
			}
		}
		seen = append(seen, fi)
	}
	m, err := merge.Read(logs)
	return writeMerged(ctx, e, "merge", m, err, out, force)
}

// writeMerged ends pmlin merge and pmlin gather (cmd): it reports err, the
// merge's, or writes the history to out ("" or "-": standard output), then
// the merge's notes and figures on standard error.
func writeMerged(ctx context.Context, e env, cmd string, m *merge.Merged, err error, out string, force bool) error {
	if err != nil {
		var he *history.Error
		if errors.As(err, &he) {
			return &exitError{exitInput, err}
		}
		return &exitError{exitInput, fmt.Errorf("%s: %w", cmd, err)}
	}
	write := func(w io.Writer) error { _, err := m.WriteTo(w); return err }
	dest := "standard output"
	if out == "" || out == "-" {
		err = write(e.stdout)
	} else {
		err, dest = createOutput(ctx, out, force, write), out
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	for _, n := range m.Notes() {
		fmt.Fprintf(e.stderr, "pmlin %s: %s\n", cmd, n)
	}
	fmt.Fprintf(e.stderr, "pmlin %s: %s -> %s\n", cmd, m.Stats(), dest)
	return nil
}

// sameFile reports whether a and b name the same existing file.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
