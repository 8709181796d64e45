package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pmlin/pmlin/internal/bench"
	"github.com/pmlin/pmlin/target"
)

// benchFlags are bench's flags: the suite options, and those given as
// text that options parses (sizes with units, lists).
type benchFlags struct {
	o                     bench.Options
	jsonOut, quiet        bool
	maxBytes, hbMaxBytes  string
	memLimit              string
	sizes, procs, threads string
	ks                    string
	timeout, duration     time.Duration
	cpuProfile            string
}

func (b *benchFlags) register(f *pflag.FlagSet) {
	o := &b.o
	f.StringVar(&o.Out, "out", "", "write SUITE.csv, the PNG plots and SUITE.md into this directory")
	f.BoolVar(&b.jsonOut, "json", false, "print one JSON object as the last line of standard output")
	f.BoolVarP(&b.quiet, "quiet", "q", false, "no progress lines on standard error")
	f.StringVar(&b.maxBytes, "max-bytes", "", "largest log prefix: scale (default 256M; the paper: 1G) or, for the reducehb suite, reducehb")
	f.StringVar(&b.hbMaxBytes, "hb-max-bytes", "", "largest log prefix of reducehb (default 1M)")
	boundedVar(f, &o.Points, "points", 0, 1, math.MaxInt, "leave it out for the default", "scale: number of prefixes, evenly spaced (default 8)")
	f.StringVar(&o.Log, "log", "", "scale, reducehb: take the prefixes of this history instead of recording one")
	f.StringVar(&o.Source, "source", "driver", "scale, reducehb: record the log from the PMwCAS (driver) or generate it (gen)")
	f.StringVar(&b.sizes, "sizes", "", "porcupine: operations per history, a list (default 1k,10k,100k)")
	f.StringVar(&b.procs, "procs", "", "porcupine: processes, a list (default 4,8,16,32); scale, reducehb: of the log (default 8)")
	boundedVar(f, &o.K, "k", 0, 1, target.MaxK, "leave it out for the default", "words per operation of the logs, histories and the logging workload (default 3)")
	f.StringVar(&b.threads, "threads", "", "logging, mwcas: thread counts, a list (default 1,2,4,8)")
	f.StringVar(&b.ks, "ks", "", "mwcas: words per MwCAS, a list (default 1,2,4)")
	boundedVar(f, &b.timeout, "timeout", 0, time.Millisecond, math.MaxInt64, "leave it out for the default", "time limit of one measurement in a child process (default: porcupine 60s, others 10m)")
	f.StringVar(&b.memLimit, "mem-limit", "", "resident memory limit of one child process (default 8G)")
	boundedVar(f, &o.Reps, "reps", 0, 1, math.MaxInt, "leave it out for the default", "repetitions of each measurement: the minimum is reported, for logging the rounds of interleaved slices and for fuzz the rounds, whose median is reported (default 3; logging 12)")
	boundedVar(f, &b.duration, "duration", 0, time.Millisecond, math.MaxInt64, "leave it out for the default", "logging: measuring time of each side (unrecorded, binary, text) per point, in --reps slices; mwcas: per point (default 6s and 300ms)")
	boundedVar(f, &o.GOMAXPROCS, "gomaxprocs", 0, 1, math.MaxInt, "leave it out for the default", "GOMAXPROCS of the child processes (default: 1 for scale and reducehb, every core for porcupine)")
	f.BoolVar(&o.NoSkip, "no-skip", false, "porcupine: also run Porcupine on sizes above one where it timed out or ran out of memory")
	f.StringVar(&o.Emulate, "emulate", "", "logging: persistence emulation of the PMwCAS region: off, on or both (default both)")
	f.StringVar(&o.Clock, "clock", "", "logging: timestamps of the recorded runs: auto (at one thread a count of its steps; else the TSC where the kernel's clocksource is the TSC, else the monotonic clock), tsc, monotonic or count (one thread only) (default auto)")
	f.BoolVar(&o.Split, "split", false, "logging: also run the binary recording with its history dropped, not written (timestamps and records, no file): the recording's cost split between the process and the disk")
	f.StringVar(&o.Work, "work", "", "directory for temporary histories (default the system's)")
	f.BoolVar(&o.Keep, "keep", false, "keep the histories recorded or generated")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the workloads and generated histories")
	f.StringVar(&o.Baseline, "baseline", "", "fuzz: an older pmlin binary to compare with, run on the same campaigns interleaved with this one")
	boundedVar(f, &o.FuzzRuns, "runs", 0, 1, math.MaxInt, "leave it out for the default", "fuzz: runs per campaign (default 300)")
	f.StringVar(&b.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the in-process suites: logging, mwcas) to this file; refuses an existing file")
}

// options completes the suite options from the flags given as text.
func (b *benchFlags) options(suite string) (bench.Options, error) {
	o := b.o
	var err error
	parse := func(flag, s string, f func(string) error) {
		if err == nil && s != "" {
			if e := f(s); e != nil {
				err = fmt.Errorf("--%s: %w", flag, e)
			}
		}
	}
	parse("max-bytes", b.maxBytes, func(s string) (e error) {
		var n int64
		n, e = parseBytes(s)
		if suite == "reducehb" {
			o.HBMaxBytes = n
		} else {
			o.MaxBytes = n
		}
		return e
	})
	parse("hb-max-bytes", b.hbMaxBytes, func(s string) (e error) { o.HBMaxBytes, e = parseBytes(s); return })
	parse("mem-limit", b.memLimit, func(s string) (e error) { o.MemLimit, e = parseBytes(s); return })
	parse("sizes", b.sizes, func(s string) (e error) { o.Sizes, e = parseCounts(s); return })
	parse("procs", b.procs, func(s string) (e error) { o.Procs, e = parseCounts(s); return })
	parse("threads", b.threads, func(s string) (e error) { o.Threads, e = parseCounts(s); return })
	parse("ks", b.ks, func(s string) (e error) { o.Ks, e = parseCounts(s); return })
	o.Timeout, o.Duration = b.timeout, b.duration
	return o, err
}

// benchCommand runs the benchmark suites of package bench
// (docs/cli-contract.md: pmlin bench SUITE).
func benchCommand(e env) *cobra.Command {
	var b benchFlags
	var list strings.Builder
	for _, s := range append(slices.Clone(bench.Suites), "fuzz") {
		fmt.Fprintf(&list, "  %-10s %s\n", s, bench.Describe[s])
	}
	cmd := &cobra.Command{
		Use:   "bench SUITE [flags]",
		Short: "Run a benchmark suite: table on stdout, CSV and plots under --out",
		Long: `bench runs a benchmark suite, prints its table and headline figures, and with
--out DIR writes the points as DIR/SUITE.csv, PNG plots and DIR/SUITE.md
(with --json, the last line of standard output is one JSON object). Suites:

` + list.String() + `  all        every suite in turn, and DIR/summary.md

The default sizes run in minutes on two cores; flags make larger runs, for
instance the paper's 1 GB log: pmlin bench scale --max-bytes 1G. Checkers are
measured in child processes (this binary's hidden "bench child") with a time
and a memory limit; a run beyond either is reported as timeout or oom.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cmd, e, args[0], &b)
		},
	}
	b.register(cmd.Flags())
	cmd.AddCommand(benchChildCommand(e))
	return cmd
}

// runBench runs one suite, or all of them, with the options of b.
func runBench(cmd *cobra.Command, e env, suite string, b *benchFlags) error {
	if suite != "all" && bench.Describe[suite] == "" {
		return &exitError{exitInput, fmt.Errorf("unknown suite %q (%s or all)", suite, strings.Join(bench.Suites, ", "))}
	}
	o, err := b.options(suite)
	if err != nil {
		return &exitError{exitInput, err}
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	o.Child = func(args []string) *exec.Cmd {
		return exec.Command(exe, append([]string{"bench", "child"}, args...)...)
	}
	o.Pmlin = func(args []string) *exec.Cmd { return exec.Command(exe, args...) }
	o.Targets = e.targets
	if !b.quiet {
		o.Progress = e.stderr
	}
	o.Command = commandLine(cmd, suite)
	if b.cpuProfile != "" {
		stop, err := startCPUProfile(b.cpuProfile)
		if err != nil {
			return &exitError{exitInput, err}
		}
		defer stop()
	}
	var res any
	if suite == "all" {
		res, err = bench.RunAll(cmd.Context(), o, e.stdout)
	} else {
		res, err = bench.Run(cmd.Context(), suite, o, e.stdout)
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	return printJSON(e.stdout, b.jsonOut, res)
}

// benchChildCommand is the child process of a measurement (not for direct
// use): package bench runs it with a time and a memory limit.
func benchChildCommand(e env) *cobra.Command {
	return &cobra.Command{
		Use:                "child MEASUREMENT [flags]",
		Short:              "One measurement in a child process (used by pmlin bench)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := bench.ChildMain(cmd.Context(), args, e.stdout, e.stderr); code != 0 {
				return &exitError{code, nil}
			}
			return nil
		},
	}
}

// commandLine is the command as a user would type it again.
func commandLine(cmd *cobra.Command, suite string) string {
	parts := []string{"pmlin bench", suite}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == "quiet" {
			return
		}
		if f.Value.Type() == "bool" {
			parts = append(parts, "--"+f.Name)
			return
		}
		parts = append(parts, "--"+f.Name, f.Value.String())
	})
	return strings.Join(parts, " ")
}

func printJSON(w io.Writer, on bool, v any) error {
	if !on {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return &exitError{exitInput, err}
	}
	fmt.Fprintf(w, "%s\n", b)
	return nil
}

// parseBytes reads a size: a number with an optional binary unit, K, M, G
// (or KiB, KB, ...): 1M is 1048576 bytes.
func parseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mul := int64(1)
	switch {
	case strings.HasSuffix(t, "K"):
		mul = 1 << 10
	case strings.HasSuffix(t, "M"):
		mul = 1 << 20
	case strings.HasSuffix(t, "G"):
		mul = 1 << 30
	}
	if mul > 1 {
		t = t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q is not a size (like 64K, 1M, 1G)", s)
	}
	return int64(v * float64(mul)), nil
}

// parseCounts reads a comma-separated list of positive counts, with
// optional decimal suffixes k and M: "1k,10k,100k".
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		t := strings.TrimSpace(f)
		mul := 1.0
		switch {
		case strings.HasSuffix(t, "k") || strings.HasSuffix(t, "K"):
			mul, t = 1e3, t[:len(t)-1]
		case strings.HasSuffix(t, "M"):
			mul, t = 1e6, t[:len(t)-1]
		}
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || v*mul < 1 {
			return nil, fmt.Errorf("%q is not a list of positive counts (like 1k,10k,100k)", s)
		}
		out = append(out, int(v*mul))
	}
	return out, nil
}
