package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/internal/atomicfile"
	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

// genCommand writes large synthetic histories, for measuring the analyzer
// (and other checkers) on inputs of any size without recording a run.
func genCommand(e env) *cobra.Command {
	var (
		cfg      histgen.LargeConfig
		seed     uint64
		out      string
		plant    string
		force    bool
		pending  bool
		fixedK   bool
		readFrac float64
	)
	cmd := &cobra.Command{
		Use:   "gen [flags]",
		Short: "Write a large synthetic history (for benchmarks)",
		Long: `gen simulates processes doing multi-word reads and CAS on a word array, each
operation taking effect at a random point of its interval, and streams the
history (linearizable unless --plant asks for one violation). Memory does not
grow with --ops. The same flags and --seed give the same bytes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch plant {
			case "", "none":
				cfg.Violation = histgen.NoViolation
			case "stale-read":
				cfg.Violation = histgen.PlantStaleRead
			case "torn-read":
				cfg.Violation = histgen.PlantTornRead
			case "lost-write":
				cfg.Violation = histgen.PlantLostWrite
			default:
				return &exitError{exitInput, fmt.Errorf("unknown --plant %q (stale-read, torn-read or lost-write)", plant)}
			}
			// The ranges of each flag are checked as they are parsed
			// (boundedVar); these involve two.
			switch {
			case cfg.K > cfg.Words:
				return &exitError{exitInput, fmt.Errorf("--k %d is more than --words %d: an operation's words are distinct addresses", cfg.K, cfg.Words)}
			case cfg.Procs > cfg.Ops:
				return &exitError{exitInput, fmt.Errorf("--procs %d is more than --ops %d: a process without an operation is not in the history", cfg.Procs, cfg.Ops)}
			}
			cfg.PendingAtEnd, cfg.FixedK, cfg.ReadFraction = pending, fixedK, readFrac
			var st histgen.LargeStats
			write := func(w io.Writer) error {
				bw := bufio.NewWriterSize(w, 1<<20)
				var err error
				if st, err = histgen.WriteLarge(bw, cfg, seed); err == nil {
					err = bw.Flush()
				}
				return err
			}
			var err error
			if out != "" && out != "-" {
				err = createOutput(cmd.Context(), out, force, write)
			} else {
				err = write(atomicfile.CancelWriter(cmd.Context(), e.stdout))
			}
			if errors.Is(err, context.Canceled) {
				return &exitError{exitInput, errors.New("interrupted")}
			}
			if err != nil {
				return &exitError{exitInput, err}
			}
			fmt.Fprintf(e.stderr, "pmlin gen: %d operations, %d events, %d bytes, %d crashes", st.Ops, st.Events, st.Bytes, st.Crashes)
			if st.ViolationLine >= 0 {
				fmt.Fprintf(e.stderr, ", violation planted at line %d", st.ViolationLine)
			}
			fmt.Fprintln(e.stderr)
			return nil
		},
	}
	f := cmd.Flags()
	boundedVar(f, &cfg.Ops, "ops", 1_000_000, 1, math.MaxInt, "", "operations")
	boundedVar(f, &cfg.Procs, "procs", 8, 1, history.MaxProc+1, "process ids are 0 to 2^31-1", "processes (at most --ops)")
	boundedVar(f, &cfg.Words, "words", 1000, 1, driver.MaxWords, "the simulation keeps 40 bytes per word", "address space (addresses 0..words-1)")
	boundedVar(f, &cfg.K, "k", 3, 1, history.DefaultMaxWords, "what pmlin check reads", "words per operation: 1..k, or exactly k with --fixed-k (at most --words)")
	f.BoolVar(&fixedK, "fixed-k", false, "every operation has exactly k words")
	boundedVar(f, &readFrac, "reads", 0.5, 0, 1, "a fraction", "fraction of operations that are reads")
	boundedVar(f, &cfg.CrashEvery, "crash-every", 0, 0, math.MaxInt, "0: none", "a crash after every N invocations (0: none)")
	f.BoolVar(&pending, "pending", false, "end with the operations then in progress pending")
	f.StringVar(&plant, "plant", "", "plant one violation: stale-read, torn-read or lost-write")
	boundedVar(f, &cfg.ViolationAt, "plant-at", 0, 0, math.MaxInt, "an operation's index", "plant it at the first operation that can carry it from this index on")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.StringVarP(&out, "output", "o", "", "write to this file instead of standard output (never overwritten without --force)")
	f.BoolVar(&force, "force", false, "overwrite --output if it exists")
	return cmd
}
