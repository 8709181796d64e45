package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/analyzer"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/report"
)

func checkCommand(e env) *cobra.Command {
	var (
		modeName string
		asJSON   bool
		useExact bool
		cpuProf  string
	)
	cmd := &cobra.Command{
		Use:   "check [flags] FILE|-",
		Short: "Decide whether a recorded history is linearizable",
		Long: `check reads a history (shared/history-format.md: text v1 or its JSON Lines
twin, detected automatically; - is standard input) and decides whether it is
linearizable. Exit status: 0 linearizable, 1 not linearizable, 2 malformed input,
an input that breaks an assumption of the method, or a usage error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := history.ParseMode(modeName)
			if err != nil {
				return &exitError{exitInput, err}
			}
			if cpuProf != "" {
				stop, err := startCPUProfile(cpuProf)
				if err != nil {
					return &exitError{exitInput, err}
				}
				defer stop()
			}
			if useExact {
				return runExact(cmd.Context(), e, args[0], mode, asJSON)
			}
			return runCheck(cmd.Context(), e, args[0], mode, asJSON)
		},
	}
	cmd.Flags().StringVar(&modeName, "mode", "strict", "completion rule for operations cut off by a crash: strict, recoverable or durable")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of text")
	cmd.Flags().StringVar(&cpuProf, "cpuprofile", "", "write a CPU profile of the check to this file (for go tool pprof)")
	cmd.Flags().BoolVar(&useExact, "exact", false, "decide by exhaustive search instead (small histories only; needs neither assumption of the method)")
	return cmd
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

func runCheck(ctx context.Context, e env, path string, mode history.Mode, asJSON bool) error {
	in, name, size, closeIn, err := openInput(e, path)
	if err != nil {
		return &exitError{exitInput, err}
	}
	defer closeIn()
	var bar *progressbar.ProgressBar
	if e.stderrTTY && size > 64<<20 {
		bar = progressbar.DefaultBytes(size, "reading "+name)
		pr := progressbar.NewReader(in, bar)
		in = &pr
	}
	r := history.NewReader(in, name, history.Options{})
	opts := analyzer.Options{Mode: mode, SizeHint: size}
	if bar != nil {
		// After the read, say what the remaining seconds are spent on.
		opts.Phase = func(phase string) {
			bar.Finish()
			bar.Clear()
			fmt.Fprintf(e.stderr, "\r%s: %s...\033[K", name, phase)
		}
	}
	res, err := analyzer.Check(ctx, r, opts)
	if bar != nil {
		bar.Finish()
		bar.Clear()
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		return classify(err)
	}
	if asJSON {
		err = report.JSON(e.stdout, res)
	} else {
		err = report.Text(e.stdout, name, res)
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	if !res.Linearizable {
		return &exitError{exitViolated, nil}
	}
	return nil
}

// startCPUProfile starts profiling into path, refusing to overwrite a file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// classify maps analysis errors to exit statuses: every input problem is 2.
func classify(err error) error {
	var he *history.Error
	var ae *analyzer.AssumptionError
	var ue *analyzer.UndecidedError
	switch {
	case errors.As(err, &he), errors.As(err, &ae), errors.As(err, &ue):
		return &exitError{exitInput, err}
	case errors.Is(err, context.Canceled):
		return &exitError{exitInput, fmt.Errorf("interrupted")}
	}
	return &exitError{exitInput, err}
}
