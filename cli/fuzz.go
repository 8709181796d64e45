package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/atomicfile"
	"github.com/pmlin/pmlin/internal/crash"
	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/jsonid"
	"github.com/pmlin/pmlin/internal/shellword"
)

// fuzzJSON is the last line of pmlin fuzz --json (docs/cli-contract.md:
// at least runs, operations, crashes, violations, seconds).
type fuzzJSON struct {
	Runs          int64   `json:"runs"`
	Operations    int64   `json:"operations"`
	Crashes       int64   `json:"crashes"`
	Violations    int64   `json:"violations"`
	Undecided     int64   `json:"undecided"`
	Seconds       float64 `json:"seconds"`
	OpsPerSec     float64 `json:"ops_per_sec"`
	CrashesPerSec float64 `json:"crashes_per_sec"`
	// Seed and the finding's seed are strings (jsonid: a double rounds
	// them).
	Seed   jsonid.Uint64 `json:"seed"`
	Target string        `json:"target"`
	Mutant string        `json:"mutant"`
	Mode   string        `json:"mode"`
	// Exec is the program of --exec, as given (absent without it); Target
	// is then a short name of it (crash.Exec.Name).
	Exec string `json:"exec,omitempty"`
	// Mix says what the runs drew from the campaign's mix (the text
	// summary's "mix:" line; absent with --systematic), MixCounts counts
	// it.
	Mix       string          `json:"mix,omitempty"`
	MixCounts *crash.MixStats `json:"mix_counts,omitempty"`
	// Shard is "I/N" for a shard of a campaign (--shard), absent for a
	// whole campaign.
	Shard   string       `json:"shard,omitempty"`
	Finding *findingJSON `json:"finding,omitempty"`
	// Interrupted: the campaign was stopped (Ctrl-C) before its budget;
	// absent otherwise.
	Interrupted bool `json:"interrupted,omitempty"`
}

type findingJSON struct {
	Run          int64         `json:"run"` // 1-based
	Seed         jsonid.Uint64 `json:"seed"`
	AfterSeconds float64       `json:"after_seconds"`
	History      string        `json:"history,omitempty"`
	Report       string        `json:"report,omitempty"`
	Replay       string        `json:"replay"`
	Verdict      verdictJSON   `json:"verdict"`
}

func fuzzCommand(e env) *cobra.Command {
	var (
		c          = runConfig(e)
		mix        = crash.DefaultMix()
		seconds    float64
		modeName   string
		asJSON     bool
		outDir     string
		maxRuns    int64
		jobs       int
		systematic bool
		ignore     []string
		shard      string
		cpuProf    string
		ex         execFlags
	)
	cmd := &cobra.Command{
		Use:   "fuzz [flags]",
		Short: "The main job: run, crash, recover and check, over fresh seeds",
		Long: `fuzz repeats: record a run of a target (--target, see pmlin targets; by
default the first) with crashes, as pmlin run does, each run with a fresh
seed derived from --seed; recover after each crash, and check the history in
memory, until --seconds are spent or a violation is found. A live progress
line goes to standard error.

On a violation it keeps the history, the reports and the replay script under
--out (never replacing a file: a name taken gets -2, -3, ...), prints them,
and exits 1. Exit 0: nothing found; 2: an error.
With --json the last line of standard output is one JSON object with runs,
operations, crashes, violations, seconds (and more).

--shard I/N runs only the campaign's runs i with i mod N = I (same seeds):
N machines running shards 0..N-1 with the same flags run the campaign
between them, and their --json summaries add up (deploy/ in the pmlin
repository runs them as a Kubernetes Indexed Job).

--exec "PROGRAM [ARGS]" crash-tests a program of one's own, in any language,
that records itself with pmlin's recorders (recorders/README.md, "Crash-testing
your C/C++ program"): each run starts it --crashes times and kills it with
SIGKILL a delay drawn from the run's seed after it says it is ready, then
starts it once more to recover and read its state back, gathers its logs and
checks the history. Process crashes only: what it wrote to its file mappings
survives a kill.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := history.ParseMode(modeName)
			if err != nil {
				return &exitError{exitInput, err}
			}
			if seconds <= 0 && maxRuns <= 0 {
				return &exitError{exitInput, fmt.Errorf("--seconds or --runs must be positive")}
			}
			x, err := ex.exec(cmd.Flags(), e.targets, c.Crashes, "systematic")
			if err != nil {
				return &exitError{exitInput, err}
			}
			if x == nil {
				if err := structureFlags(cmd.Flags(), &c); err != nil {
					return &exitError{exitInput, err}
				}
			}
			mix.KeepSet(cmd.Flags())
			fc := crash.FuzzConfig{Run: c, Seed: c.Driver.Seed, Mode: mode, Duration: time.Duration(seconds * float64(time.Second)),
				MaxRuns: maxRuns, Jobs: jobs, Systematic: systematic, Mix: mix, Exec: x}
			if fc.Shard, fc.Shards, err = parseShard(shard); err != nil {
				return &exitError{exitInput, err}
			}
			for _, k := range ignore {
				fc.Ignore = append(fc.Ignore, analyzer.Kind(k))
			}
			if cpuProf != "" {
				stop, err := startCPUProfile(cpuProf)
				if err != nil {
					return &exitError{exitInput, err}
				}
				defer stop()
			}
			defer fuzzGC()()
			defer fuzzMemProfile()()
			defer fuzzProcs(c, jobs)()
			return runFuzz(cmd.Context(), e, fc, outDir, asJSON)
		},
	}
	c.RegisterFlags(cmd.Flags(), e.targets)
	mix.RegisterFlags(cmd.Flags())
	boundedVar(cmd.Flags(), &seconds, "seconds", 30, 0, maxSeconds, "", "time budget in seconds")
	cmd.Flags().StringVar(&modeName, "mode", "strict", "completion rule for operations cut off by a crash: strict, recoverable or durable")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object as the last line of standard output")
	cmd.Flags().StringVar(&outDir, "out", "pmlin-out", "directory where a violating history, its report and the replay command are kept")
	boundedVar(cmd.Flags(), &maxRuns, "runs", 0, 0, math.MaxInt64, "0: no limit", "stop after this many runs (0: no limit)")
	boundedVar(cmd.Flags(), &jobs, "jobs", 0, 1, maxJobs, "leave --jobs out for the default",
		fmt.Sprintf("runs at a time, 1 to %d (default: the number of CPUs with the deterministic scheduler, else 1; 1 with --exec)", maxJobs))
	cmd.Flags().StringSliceVar(&ignore, "ignore", nil, "anomaly kinds that do not count as violations (e.g. corrupt: see what the history alone exposes)")
	cmd.Flags().StringVar(&shard, "shard", "", "run only the I-th of N disjoint slices of the campaign's runs (I/N, 0 <= I < N), so N machines share one campaign")
	cmd.Flags().StringVar(&cpuProf, "cpuprofile", "", "write a CPU profile of the campaign to this file (for go tool pprof)")
	cmd.Flags().BoolVar(&systematic, "systematic", false, "crash each seed's run at every region access in turn, under each policy (small workloads)")
	ex.register(cmd.Flags())
	return cmd
}

// maxJobs bounds --jobs: as many runs at a time as run has threads at
// most (driver.MaxThreads). More than the CPUs only adds memory and
// switching (each job holds a run's region and history); the bound is
// fixed, not the machine's CPUs, so that one command line (a cluster's
// shards, deploy/) is accepted on every machine.
const maxJobs = driver.MaxThreads

// maxSeconds bounds --seconds: the longest time.Duration (about 292
// years); beyond it the budget would overflow.
const maxSeconds = float64(math.MaxInt64 / int64(time.Second))

func runFuzz(ctx context.Context, e env, fc crash.FuzzConfig, outDir string, asJSON bool) error {
	var mu sync.Mutex
	lastPrint := time.Time{}
	progress := func(s crash.FuzzStats) {
		mu.Lock()
		defer mu.Unlock()
		line := progressLine(s)
		switch {
		case e.stderrTTY:
			fmt.Fprintf(e.stderr, "\r\033[K%s", line)
		case time.Since(lastPrint) >= 5*time.Second:
			lastPrint = time.Now()
			fmt.Fprintln(e.stderr, line)
		}
	}
	lastPrint = time.Now()
	fc.Progress = progress
	fc.ProgressEvery = 250 * time.Millisecond
	st, found, err := crash.Fuzz(ctx, fc)
	if e.stderrTTY {
		fmt.Fprintln(e.stderr)
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	c := fc.Run
	secs := st.Elapsed.Seconds()
	out := fuzzJSON{Runs: st.Runs, Operations: st.Operations, Crashes: st.Crashes, Violations: st.Violations, Undecided: st.Undecided,
		Seconds: round3(secs), OpsPerSec: round3(float64(st.Operations) / max(secs, 1e-9)), CrashesPerSec: round3(float64(st.Crashes) / max(secs, 1e-9)),
		Seed: jsonid.Uint64(fc.Seed), Mode: fc.Mode.String()}
	subject := ""
	if x := fc.Exec; x != nil {
		out.Target, out.Exec = x.Name(), x.Command
		subject = "program " + x.Command
	} else {
		out.Target, out.Mutant = c.Target.Name, c.Mutant
		subject = "target " + c.Target.Name
		if c.Mutant != "" {
			subject += " with planted bug " + c.Mutant
		}
	}
	if !fc.Systematic && fc.Exec == nil {
		out.Mix, out.MixCounts = st.Mix.String(st.Runs), &st.Mix
		if fc.Mix.Stall > 0 && c.Target.Blocking {
			out.Mix += fmt.Sprintf("; no thread stopped (progress check): target %s declares that it blocks", c.Target.Name)
		}
	}
	campaign := fmt.Sprintf("seed %d", fc.Seed)
	if fc.Shards > 0 {
		out.Shard = fmt.Sprintf("%d/%d", fc.Shard, fc.Shards)
		campaign += ", shard " + out.Shard
	}
	var text bytes.Buffer
	w := io.Writer(&text)
	// An interrupted campaign did not spend its budget: it is not a pass.
	out.Interrupted = found == nil && ctx.Err() != nil
	switch {
	case out.Interrupted:
		fmt.Fprintf(w, "pmlin fuzz: interrupted after %.1f s, no violation so far (%s, %s mode, %s)\n", secs, subject, fc.Mode, campaign)
	case found == nil:
		fmt.Fprintf(w, "pmlin fuzz: no violation in %.1f s (%s, %s mode, %s)\n", secs, subject, fc.Mode, campaign)
	default:
		fmt.Fprintf(w, "pmlin fuzz: VIOLATION in run %d, found %.2f s into the campaign (%s, %s mode, %s)\n",
			found.Index+1, found.After.Seconds(), subject, fc.Mode, campaign)
	}
	fmt.Fprintf(w, "  %d runs, %d operations, %d crash cycles (recover + check) in %.1f s: %s ops/s, %s crash cycles/s\n",
		st.Runs, st.Operations, st.Crashes, secs, human(out.OpsPerSec), human(out.CrashesPerSec))
	if x := fc.Exec; x != nil {
		fmt.Fprintf(w, "  each run: %d starts of the program, each killed (SIGKILL) a delay drawn in [0, %v] after it said it was ready, then a start that recovers and reads back\n",
			x.Kills, x.KillWithin)
		fmt.Fprintf(w, "  process crashes only: what the program wrote to its file mappings survives a kill (no power failure)\n")
	} else if c.Target.Model != "" {
		fmt.Fprintf(w, "  each run: %d threads, %d %s; %s; %s scheduler\n",
			c.Driver.Threads, c.Ops, objectText(c), crashesText(c, fc.Systematic), c.Scheduler())
	} else {
		fmt.Fprintf(w, "  each run: %d threads, %d operations on %d words, k = %d, %s; %s; %s scheduler\n",
			c.Driver.Threads, c.Ops, c.Driver.Words, c.Driver.K, mixText(c.Driver), crashesText(c, fc.Systematic), c.Scheduler())
	}
	if out.Mix != "" {
		fmt.Fprintf(w, "  mix: %s\n", out.Mix)
	}
	if st.Undecided > 0 {
		if fc.Exec == nil && c.Target.Model != "" {
			fmt.Fprintf(w, "  %d runs the exact checker could not decide within a fuzz run's budget of %d states (pmlin check of a replay searches with --budget; smaller --ops decide more)\n",
				st.Undecided, crash.FuzzObjectStates)
		} else {
			fmt.Fprintf(w, "  %d runs the analyzer could not decide (see pmlin check --exact)\n", st.Undecided)
		}
	}
	if found == nil {
		if fc.Exec != nil {
			fmt.Fprintf(w, "  every history was linearizable (%s), every start of the program got ready in time and ended well or by its kill, every recovery succeeded\n", fc.Mode)
		} else {
			fmt.Fprintf(w, "  every history was linearizable (%s), no operation got stuck or blocked, every recovery succeeded\n", fc.Mode)
		}
		if out.Interrupted {
			fmt.Fprintf(w, "  interrupted before its budget: not a pass (exit 2)\n")
		}
	} else {
		fj, err := keepFinding(ctx, w, found, fc, outDir, e.prog, e.replay)
		if err != nil {
			return &exitError{exitInput, err}
		}
		out.Finding = fj
	}
	if asJSON {
		io.Copy(e.stderr, &text)
		fmt.Fprintln(e.stdout, marshalLine(out))
	} else {
		io.Copy(e.stdout, &text)
	}
	switch {
	case found != nil:
		return &exitError{exitViolated, nil}
	case out.Interrupted:
		return &exitError{exitInput, nil}
	}
	return nil
}

// mixText says what the workload's operations are: "50% reads", and the
// swaps and failures that report values when there are any.
func mixText(d driver.Config) string {
	s := fmt.Sprintf("%g%% reads", 100*d.Reads)
	if d.Swaps > 0 {
		s += fmt.Sprintf(", %g%% swaps", 100*d.Swaps)
	}
	if d.FailValues {
		s += ", failed cas report the values they read"
	}
	return s
}

// parseShard parses --shard I/N; "" is the whole campaign (0, 0).
func parseShard(s string) (shard, shards int64, err error) {
	if s == "" {
		return 0, 0, nil
	}
	i, n, ok := strings.Cut(s, "/")
	shard, err1 := strconv.ParseInt(i, 10, 64)
	shards, err2 := strconv.ParseInt(n, 10, 64)
	if !ok || err1 != nil || err2 != nil || shards < 1 || shard < 0 || shard >= shards {
		return 0, 0, fmt.Errorf("--shard %q: expected I/N with 0 <= I < N, e.g. 0/8 (the first of 8 shards)", s)
	}
	return shard, shards, nil
}

// keepFinding writes the history, the reports and the replay script (of
// program prog) of a finding under dir, named TARGET-[MUTANT-]run-SEED
// or, if that is taken, the first free of its variants (claimBase), and
// describes them on w. They are written even if ctx ends meanwhile: a
// finding is not lost to a late Ctrl-C.
func keepFinding(ctx context.Context, w io.Writer, f *crash.Finding, fc crash.FuzzConfig, dir, prog string, rp replayProgram) (*findingJSON, error) {
	var (
		seed    uint64
		stem    string
		runArgs []string
		replays string
		rs      replaySetting
	)
	if x := f.Exec; x != nil {
		// Named after the program; the replay runs it again in the
		// directory the campaign ran in, where its path and arguments
		// mean what they meant.
		seed, replays = x.Seed, x.Exec.Replays()
		stem = fmt.Sprintf("%s-run-%d", x.Exec.Name(), seed)
		runArgs = append(append([]string{"run"}, x.Exec.Args(seed)...), "--force")
		rs.dir, rs.notes = execReplay(x)
	} else {
		seed, replays = f.Config.Driver.Seed, f.Config.Replays()
		stem = f.Config.Target.Name + "-"
		if f.Config.Mutant != "" {
			stem += f.Config.Mutant + "-"
		}
		stem += fmt.Sprintf("run-%d", seed)
		runArgs = append(append([]string{"run"}, f.Config.Args()...), "--force")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base, err := claimBase(dir, stem)
	if err != nil {
		return nil, err
	}
	histPath, reportPath, jsonPath, replayPath := base+".hist", base+".txt", base+".json", base+".replay.sh"
	var rep bytes.Buffer
	if err := writeVerdict(&rep, histPath, f.Verdict); err != nil {
		os.Remove(histPath)
		return nil, err
	}
	// The replay records into a file of its own (replaced on each replay),
	// so the kept history survives a replay that differs (free scheduler).
	again := base + ".replay.hist"
	checkArgs := []string{"check", "--mode", fc.Mode.String()}
	replay := shellJoin(append(append([]string{prog}, runArgs...), "-o", again)) + " && " + shellJoin(append(append([]string{prog}, checkArgs...), again))
	script := replayScript(rp, prog, replays, runArgs, filepath.Base(again), checkArgs, rs)
	vj := toJSON(f.Verdict)
	files := []struct {
		path string
		data []byte
		perm fs.FileMode
	}{
		{histPath, f.History, 0o644},
		{reportPath, rep.Bytes(), 0o644},
		{jsonPath, []byte(marshalLine(vj) + "\n"), 0o644},
		{replayPath, []byte(script), 0o755},
	}
	keep := context.WithoutCancel(ctx)
	for _, x := range files {
		// Replaces the claim (histPath), and nothing else of ours.
		if err := atomicfile.Write(keep, x.path, x.perm, true, func(w io.Writer) error { _, err := w.Write(x.data); return err }); err != nil {
			if x.path == histPath {
				os.Remove(histPath)
			}
			return nil, err
		}
	}
	extra := explainKept(ctx, f, histPath, base)
	fmt.Fprintf(w, "\n%s", rep.String())
	fmt.Fprintf(w, "\nkept:\n  %s   the history\n  %s   the report\n  %s   the report as JSON\n  %s   the replay script\n",
		histPath, reportPath, jsonPath, replayPath)
	for _, x := range extra {
		fmt.Fprintf(w, "  %s   %s\n", x[0], x[1])
	}
	fmt.Fprintf(w, "replay (%s):\n  %s\nwhich runs:\n  %s\n", replays, replayPath, replay)
	return &findingJSON{Run: f.Index + 1, Seed: jsonid.Uint64(seed), AfterSeconds: round3(f.After.Seconds()), History: histPath, Report: reportPath,
		Replay: replay, Verdict: vj}, nil
}

// keptSuffixes are the names a finding's files get after its base name.
var keptSuffixes = []string{".hist", ".txt", ".json", ".replay.sh", ".replay.hist", ".html", ".shrunk.hist"}

// claimBase reserves a base name in dir for a finding's files: stem, else
// stem-2, stem-3, ..., the first for which no file of keptSuffixes
// exists and whose history (BASE.hist) this process creates, exclusively
// (O_EXCL), as a claim that the history then replaces. So two campaigns
// into one directory, one after the other or at once (even with the same
// seeds), keep both findings.
func claimBase(dir, stem string) (string, error) {
	for n := 1; n <= 10000; n++ {
		base := filepath.Join(dir, stem)
		if n > 1 {
			base += fmt.Sprintf("-%d", n)
		}
		taken := false
		for _, suf := range keptSuffixes {
			if _, err := os.Lstat(base + suf); err == nil {
				taken = true
			}
		}
		if taken {
			continue
		}
		f, err := os.OpenFile(base+".hist", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return base, f.Close()
	}
	return "", fmt.Errorf("%s: no free name for a finding of %s (10000 taken)", dir, stem)
}

// explainKept adds, for a kept history the analyzer found not
// linearizable, the self-contained HTML report and a shrunk history (the
// few operations that still fail): what a person reads first. They come
// from the verdict's analysis and the history in memory, not from the
// file read and analysed again. Anomalies only the run itself saw (stuck,
// corrupt, blocked) have none. Failures here are not the campaign's: they are
// reported in the returned list.
func explainKept(ctx context.Context, f *crash.Finding, histPath, base string) [][2]string {
	if ov := f.Verdict.Objects; ov != nil && !ov.Linearizable {
		// A version 2 history (a data structure's, a program's): the HTML
		// report of the exact checker's verdict, and the history shrunk
		// by package shrink's Objects, as pmlin check --shrink does.
		html := base + ".html"
		named := *ov
		named.File = histPath
		if err := createOutput(context.WithoutCancel(ctx), html, true, named.HTML); err != nil {
			return [][2]string{{html, "not written: " + err.Error()}}
		}
		kept := [][2]string{{html, "the HTML report (timelines of each anomaly's operations, its witness highlighted)"}}
		if len(ov.Anomalies) == 0 {
			return kept // (undecided beside a run's own anomaly: nothing to shrink)
		}
		return append(kept, shrinkKeptV2(ctx, f, histPath, base+".shrunk.hist"))
	}
	a := f.Verdict.Analysis
	if a == nil || a.Result.Linearizable {
		return nil
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.History)), nil }
	o := outputs{html: base + ".html", shrink: base + ".shrunk.hist", force: true}
	var msgs bytes.Buffer
	if err := writeOutputs(ctx, env{stdout: io.Discard, stderr: &msgs}, a, histPath, open, o); err != nil {
		return [][2]string{{o.html, "not written: " + err.Error()}}
	}
	var kept [][2]string
	if _, err := os.Stat(o.html); err == nil {
		kept = append(kept, [2]string{o.html, "the HTML report (timeline and precedence graph)"})
	}
	if _, err := os.Stat(o.shrink); err == nil {
		kept = append(kept, [2]string{o.shrink, "the shrunk history: the few operations that still fail"})
	}
	return kept
}

// shrinkKeptV2 writes the shrunk history of a finding's version 2
// history to path, checked in the campaign's mode with the campaign's
// budget of states per re-check, and says what it wrote, or why not.
func shrinkKeptV2(ctx context.Context, f *crash.Finding, histPath, path string) [2]string {
	h, err := history.ReadV2(bytes.NewReader(f.History), histPath)
	if err != nil {
		return [2]string{path, "not written: " + err.Error()}
	}
	st, err := writeShrunkV2(ctx, h, histPath, shrinkV2Options{mode: f.Verdict.Mode, maxStates: crash.FuzzObjectStates, path: path, force: true, by: "pmlin fuzz"})
	if err != nil {
		return [2]string{path, "not written: " + err.Error()}
	}
	return [2]string{path, fmt.Sprintf("the shrunk history: the few operations that still fail (%d of %d operations; %s)", st.Final, st.Original, shrunkHow(st))}
}

// shellJoin renders args as one sh command line (shellword.Join).
func shellJoin(args []string) string { return shellword.Join(args) }

func crashesText(c crash.Config, systematic bool) string {
	if systematic {
		return fmt.Sprintf("1 crash at each region access in turn (systematic), image policies %s", crash.PolicyNames(c.Policies))
	}
	if c.CrashAt > 0 {
		return fmt.Sprintf("1 crash at access %d, image policies %s", c.CrashAt, crash.PolicyNames(c.Policies))
	}
	if c.CrashMode != crash.Emulated {
		return fmt.Sprintf("%d process kills (SIGKILL; the page cache survives)", c.Crashes)
	}
	return fmt.Sprintf("%d emulated crashes, image policies %s, each image reopened and opened by the target as after a restart", c.Crashes, crash.PolicyNames(c.Policies))
}

func progressLine(s crash.FuzzStats) string {
	secs := max(s.Elapsed.Seconds(), 1e-9)
	return fmt.Sprintf("fuzz %5.1fs  runs %s  ops %s  crashes %s  %s ops/s  %s crashes/s  violations %d",
		s.Elapsed.Seconds(), human(float64(s.Runs)), human(float64(s.Operations)), human(float64(s.Crashes)),
		human(float64(s.Operations)/secs), human(float64(s.Crashes)/secs), s.Violations)
}

// human renders a count with a k or M suffix.
func human(x float64) string {
	switch {
	case x >= 10e6:
		return fmt.Sprintf("%.0fM", x/1e6)
	case x >= 1e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 10e3:
		return fmt.Sprintf("%.0fk", x/1e3)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.0f", x), ".0")
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// fuzzGCPercent is the collector's GOGC during a campaign, unless the
// environment sets GOGC. A campaign's live heap is a few megabytes (one
// run per job, most of it garbage by the next), so at the default of 100
// the collector ran every dozen runs or so and took about a tenth of the
// campaign's CPU time (marking, write barriers, assists). At 400 it runs
// a quarter as often, and the process peaks about 12 MB higher (measured:
// 33 MB resident instead of 21 MB).
const fuzzGCPercent = 400

// fuzzProcs gives a campaign of the deterministic scheduler on emulated
// regions no more Go processors (GOMAXPROCS) than its jobs, unless the
// environment sets GOMAXPROCS, and returns what restores them. Such a run
// uses one thread at a time (its workers are coroutines that hand the turn
// to each other); its other goroutines (the segment's conductor, the
// watchdog, the guarded calls of the target) only take turns with it. An
// idle processor beside it is woken at each of those turns, spins looking
// for work and steals the run's goroutines to another thread: --jobs 1 on
// two cores spent about 15 % more CPU time per run with two processors
// than with one (measured: 3.47 against 2.93 ms, medians of 5 campaigns of
// 300 runs). The free scheduler runs the workers in parallel: it keeps
// every processor.
func fuzzProcs(c crash.Config, jobs int) func() {
	if _, set := os.LookupEnv("GOMAXPROCS"); set || jobs <= 0 || c.Scheduler() != driver.Deterministic || c.CrashMode != crash.Emulated {
		return func() {}
	}
	if jobs >= runtime.GOMAXPROCS(0) {
		return func() {}
	}
	old := runtime.GOMAXPROCS(jobs)
	return func() { runtime.GOMAXPROCS(old) }
}

// fuzzGC sets the collector for a campaign and returns what restores it.
func fuzzGC() func() {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(fuzzGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// fuzzMemProfile turns the runtime's sampling of allocations off for a
// campaign (pmlin writes no heap profile), unless GODEBUG sets a rate
// (memprofilerate), and returns what restores it. A run allocates about
// 180 kB; at the default rate the runtime records a sample, the
// allocating stack unwound, every 512 kB: 0.9 % of a campaign's CPU
// profile.
func fuzzMemProfile() func() {
	if strings.Contains(os.Getenv("GODEBUG"), "memprofilerate") {
		return func() {}
	}
	memProfileOff.Lock()
	defer memProfileOff.Unlock()
	if memProfileOff.campaigns == 0 {
		memProfileOff.old = runtime.MemProfileRate
		runtime.MemProfileRate = 0
	}
	memProfileOff.campaigns++
	return func() {
		memProfileOff.Lock()
		defer memProfileOff.Unlock()
		if memProfileOff.campaigns--; memProfileOff.campaigns == 0 {
			runtime.MemProfileRate = memProfileOff.old
		}
	}
}

// memProfileOff counts the campaigns of this process that turned the
// sampling off, and keeps the rate to restore when the last one ends:
// runtime.MemProfileRate is the process's, and campaigns may run at once
// in one process (cli.Command called from several goroutines, as the
// recorders' tests do), where each restoring its own old rate raced with
// the others and could leave the sampling off.
var memProfileOff struct {
	sync.Mutex
	campaigns, old int
}
