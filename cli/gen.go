package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/internal/atomicfile"
	"github.com/pmlin/pmlin/internal/histgen"
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
			if cfg.Ops < 1 || cfg.Procs < 1 || cfg.Words < 1 || cfg.K < 1 || readFrac < 0 || readFrac > 1 {
				return &exitError{exitInput, fmt.Errorf("--ops, --procs, --words and --k must be positive and --reads in [0,1]")}
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
	f.IntVar(&cfg.Ops, "ops", 1_000_000, "operations")
	f.IntVar(&cfg.Procs, "procs", 8, "processes")
	f.IntVar(&cfg.Words, "words", 1000, "address space (addresses 0..words-1)")
	f.IntVar(&cfg.K, "k", 3, "words per operation: 1..k, or exactly k with --fixed-k")
	f.BoolVar(&fixedK, "fixed-k", false, "every operation has exactly k words")
	f.Float64Var(&readFrac, "reads", 0.5, "fraction of operations that are reads")
	f.IntVar(&cfg.CrashEvery, "crash-every", 0, "a crash after every N invocations (0: none)")
	f.BoolVar(&pending, "pending", false, "end with the operations then in progress pending")
	f.StringVar(&plant, "plant", "", "plant one violation: stale-read, torn-read or lost-write")
	f.IntVar(&cfg.ViolationAt, "plant-at", 0, "plant it at the first operation that can carry it from this index on")
	f.Uint64Var(&seed, "seed", 1, "random seed")
	f.StringVarP(&out, "output", "o", "", "write to this file instead of standard output (never overwritten without --force)")
	f.BoolVar(&force, "force", false, "overwrite --output if it exists")
	return cmd
}
