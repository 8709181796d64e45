package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FuzzPoint is one configuration of the fuzz suite, measured on this
// binary and, with a baseline, on the baseline binary, interleaved.
type FuzzPoint struct {
	Config string `json:"config"`
	// Jobs is the --jobs both binaries are given (0: none, each binary's
	// default, the number of CPUs: what a user runs).
	Jobs int `json:"jobs"`
	// Flags are the fuzz flags of this binary and of the baseline.
	Flags         []string `json:"flags"`
	BaselineFlags []string `json:"baseline_flags,omitempty"`
	Runs          int64    `json:"runs"`
	Crashes       int64    `json:"crashes"`
	// CPUPerRun is the median over the repetitions of the child's CPU
	// time (user and system) per run, in seconds; CrashesPerCPUSecond the
	// crash cycles per second of CPU time at that median.
	CPUPerRun           float64 `json:"cpu_seconds_per_run"`
	CrashesPerCPUSecond float64 `json:"crashes_per_cpu_second"`
	// CrashesPerSecond is the median over the repetitions of the crash
	// cycles per second of the wall clock: the campaign's own time, the
	// seconds of its JSON summary (the child's start and exit, about 70
	// ms here, would weigh a tenth of a 300-run campaign of two jobs).
	CrashesPerSecond float64 `json:"crashes_per_second"`
	// The baseline's figures (0 without one), and Ratio, the crash cycles
	// per CPU-second of this binary over the baseline's: the median of
	// the rounds' ratios.
	BaselineCrashes             int64   `json:"baseline_crashes,omitempty"`
	BaselineCPUPerRun           float64 `json:"baseline_cpu_seconds_per_run,omitempty"`
	BaselineCrashesPerCPUSecond float64 `json:"baseline_crashes_per_cpu_second,omitempty"`
	BaselineCrashesPerSecond    float64 `json:"baseline_crashes_per_second,omitempty"`
	Ratio                       float64 `json:"ratio,omitempty"`
	// RatioMin and RatioMax are the spread of the ratio over the
	// repetitions (each repetition runs both binaries back to back).
	RatioMin float64 `json:"ratio_min,omitempty"`
	RatioMax float64 `json:"ratio_max,omitempty"`
	// WallRatio is the crash cycles per wall-clock second of this binary
	// over the baseline's (the median of the rounds'), WallRatioMin and
	// WallRatioMax its spread over the rounds: the headline measure, which
	// only an idle machine gives undisturbed.
	WallRatio    float64 `json:"wall_ratio,omitempty"`
	WallRatioMin float64 `json:"wall_ratio_min,omitempty"`
	WallRatioMax float64 `json:"wall_ratio_max,omitempty"`
}

// FuzzReport is the fuzz suite's result.
type FuzzReport struct {
	Meta
	Baseline string      `json:"baseline,omitempty"`
	Runs     int         `json:"runs_per_measurement"`
	Reps     int         `json:"reps"`
	Points   []FuzzPoint `json:"points"`
	// TargetMet: with the true defaults (the defaults configuration:
	// default jobs), the crash cycles per second are at least 3 times the
	// baseline's, by the wall clock and per CPU-second; false without a
	// baseline.
	TargetMet bool `json:"target_met"`
}

// fuzzConfig is a configuration of the suite: the flags of this binary
// and of a baseline that predates the flags only this one has (the mix's
// lone share, the optional operations), and the jobs of both (0: their
// default). Each pair runs the same runs.
type fuzzConfig struct {
	name           string
	flags, oldArgs []string
	jobs           int
}

// fuzzConfigs: pmlin fuzz's true defaults on both sides (each binary's own
// mix, as many jobs as CPUs: the headline), then one job at a time (the
// CPU time of a run, which a shared machine disturbs least), with the
// defaults, the same runs on both, and without the mix. The same runs
// need every mix addition since c16a877 off: the lone share, the optional
// operations, the late-write share, and the pmwcas shapes' draw of the
// descriptor pool (set by a flag, it is not drawn, so the draws after it
// fall as before: 716 stops and 1,882 recovery crashes in 200 runs of
// seed 1 on both binaries).
var fuzzConfigs = []fuzzConfig{
	{"defaults", nil, nil, 0},
	{"defaults-1job", nil, nil, 1},
	{"same-mix", []string{"--mix-lone", "0", "--swaps", "0", "--mix-late", "0", "--descriptors", "4"}, nil, 1},
	{"no-mix", []string{"--mix-shapes", "0", "--mix-stall", "0", "--mix-fire", "0", "--mix-late", "0", "--swaps", "0"},
		[]string{"--mix-shapes", "0", "--mix-stall", "0", "--mix-fire", "0"}, 1},
}

// fuzzRun is one fuzz campaign in a child process.
type fuzzRun struct {
	runs, crashes int64
	cpu, wall     float64 // seconds
}

func runFuzz(ctx context.Context, o *Options) (*FuzzReport, error) {
	if o.Pmlin == nil {
		return nil, errors.New("the fuzz suite runs pmlin fuzz: Options.Pmlin is not set")
	}
	if o.Baseline != "" {
		if _, err := os.Stat(o.Baseline); err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
	}
	runs := o.FuzzRuns
	if runs <= 0 {
		runs = 300
	}
	out, err := os.MkdirTemp(o.work(), "pmlin-bench-fuzz-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out) // a violation's files: none expected
	r := &FuzzReport{Baseline: o.Baseline, Runs: runs, Reps: o.reps(3)}
	for _, fc := range fuzzConfigs {
		p, err := o.fuzzPoint(ctx, fc, runs, r.Reps, out)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fc.name, err)
		}
		r.Points = append(r.Points, p)
	}
	d := r.Points[0] // the true defaults
	r.TargetMet = o.Baseline != "" && d.WallRatio >= 3 && d.Ratio >= 3
	return r, nil
}

// fuzzPoint measures one configuration: reps rounds, each running this
// binary, then the baseline, so that both see the same load.
func (o *Options) fuzzPoint(ctx context.Context, fc fuzzConfig, runs, reps int, out string) (FuzzPoint, error) {
	p := FuzzPoint{Config: fc.name, Jobs: fc.jobs, Flags: fc.flags}
	common := []string{"fuzz", "--json", "--runs", strconv.Itoa(runs), "--seconds", "3600",
		"--seed", strconv.FormatUint(o.seed(), 10), "--out", out}
	if fc.jobs > 0 {
		common = append(common, "--jobs", strconv.Itoa(fc.jobs))
	}
	var mine, base []fuzzRun
	var ratios, wall []float64
	for rep := range reps {
		m, err := o.fuzzOnce(ctx, o.Pmlin(append(slices.Clone(common), fc.flags...)))
		if err != nil {
			return p, err
		}
		mine = append(mine, m)
		msg := fmt.Sprintf("fuzz %s %d/%d: %.3f ms CPU per run, %.0f crash cycles/s", fc.name, rep+1, reps, 1e3*m.cpu/float64(m.runs), perWall(m))
		if o.Baseline != "" {
			p.BaselineFlags = fc.oldArgs
			b, err := o.fuzzOnce(ctx, exec.Command(o.Baseline, append(slices.Clone(common), fc.oldArgs...)...))
			if err != nil {
				return p, fmt.Errorf("baseline: %w", err)
			}
			base = append(base, b)
			ratios = append(ratios, perCPU(m)/perCPU(b))
			wall = append(wall, perWall(m)/perWall(b))
			msg += fmt.Sprintf("; baseline %.3f ms, %.0f/s: %.2fx per CPU-second, %.2fx per second",
				1e3*b.cpu/float64(b.runs), perWall(b), ratios[rep], wall[rep])
		}
		o.progress("%s", msg)
	}
	m := medianRun(mine, perCPU)
	p.Runs, p.Crashes = m.runs, m.crashes
	p.CPUPerRun, p.CrashesPerCPUSecond = m.cpu/float64(m.runs), perCPU(m)
	p.CrashesPerSecond = perWall(medianRun(mine, perWall))
	if len(base) > 0 {
		b := medianRun(base, perCPU)
		p.BaselineCrashes = b.crashes
		p.BaselineCPUPerRun, p.BaselineCrashesPerCPUSecond = b.cpu/float64(b.runs), perCPU(b)
		p.BaselineCrashesPerSecond = perWall(medianRun(base, perWall))
		// The ratios are the rounds' own (each round runs both binaries
		// back to back, under about the same load), their median.
		p.Ratio, p.RatioMin, p.RatioMax = median(ratios), slices.Min(ratios), slices.Max(ratios)
		p.WallRatio, p.WallRatioMin, p.WallRatioMax = median(wall), slices.Min(wall), slices.Max(wall)
	}
	return p, nil
}

// perCPU and perWall are a campaign's crash cycles per second of CPU time
// and of the wall clock.
func perCPU(r fuzzRun) float64  { return float64(r.crashes) / r.cpu }
func perWall(r fuzzRun) float64 { return float64(r.crashes) / r.wall }

// medianRun is the run of median rate.
func medianRun(rs []fuzzRun, rate func(fuzzRun) float64) fuzzRun {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b fuzzRun) int { return cmp.Compare(rate(a), rate(b)) })
	return s[len(s)/2]
}

// fuzzOnce runs one campaign and reads its JSON summary and CPU time.
func (o *Options) fuzzOnce(ctx context.Context, cmd *exec.Cmd) (fuzzRun, error) {
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fuzzRun{}, err
	}
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	stop()
	wall := time.Since(start).Seconds()
	if ctx.Err() != nil {
		return fuzzRun{}, ctx.Err()
	}
	if err != nil {
		return fuzzRun{}, fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, lastLine(errs.Bytes()))
	}
	var s struct {
		Runs    int64   `json:"runs"`
		Crashes int64   `json:"crashes"`
		Seconds float64 `json:"seconds"`
	}
	if err := json.Unmarshal(lastLine(out.Bytes()), &s); err != nil || s.Runs == 0 {
		return fuzzRun{}, fmt.Errorf("%s: no JSON summary with runs on its last line (%v)", strings.Join(cmd.Args, " "), err)
	}
	if s.Seconds > 0 {
		wall = s.Seconds // the campaign's, without the process's start and exit
	}
	st := cmd.ProcessState
	return fuzzRun{runs: s.Runs, crashes: s.Crashes, cpu: (st.UserTime() + st.SystemTime()).Seconds(), wall: wall}, nil
}

func (r *FuzzReport) Table() *Table {
	t := &Table{Cols: []string{"config", "jobs", "runs", "crashes", "cpu_ms_per_run", "crashes_per_cpu_s", "crashes_per_s",
		"baseline_cpu_ms_per_run", "baseline_crashes_per_cpu_s", "baseline_crashes_per_s", "ratio", "ratio_min", "ratio_max",
		"wall_ratio", "wall_ratio_min", "wall_ratio_max"}}
	for _, p := range r.Points {
		t.add(p.Config, jobsName(p.Jobs), p.Runs, p.Crashes, 1e3*p.CPUPerRun, p.CrashesPerCPUSecond, p.CrashesPerSecond,
			1e3*p.BaselineCPUPerRun, p.BaselineCrashesPerCPUSecond, p.BaselineCrashesPerSecond, p.Ratio, p.RatioMin, p.RatioMax,
			p.WallRatio, p.WallRatioMin, p.WallRatioMax)
	}
	return t
}

// jobsName is a point's jobs as the table shows them.
func jobsName(jobs int) string {
	if jobs == 0 {
		return "default"
	}
	return strconv.Itoa(jobs)
}

func (r *FuzzReport) Headlines() []string {
	var h []string
	for i, p := range r.Points {
		var s string
		if i == 0 {
			// The true defaults: the headline measure first.
			s = fmt.Sprintf("%s (%s jobs): %.0f crash cycles per second, %.0f per CPU-second (%.2f ms of CPU per run of %d crashes on average)",
				p.Config, jobsName(p.Jobs), p.CrashesPerSecond, p.CrashesPerCPUSecond, 1e3*p.CPUPerRun, p.Crashes/max(p.Runs, 1))
			if p.Ratio > 0 {
				s += fmt.Sprintf(", baseline %.0f and %.0f (%.2f ms): %.2fx per second (%.2f-%.2f over the rounds), %.2fx per CPU-second (%.2f-%.2f)",
					p.BaselineCrashesPerSecond, p.BaselineCrashesPerCPUSecond, 1e3*p.BaselineCPUPerRun,
					p.WallRatio, p.WallRatioMin, p.WallRatioMax, p.Ratio, p.RatioMin, p.RatioMax)
			}
		} else {
			s = fmt.Sprintf("%s (%s job): %.0f crash cycles per CPU-second (%.2f ms of CPU per run of %d crashes on average)",
				p.Config, jobsName(p.Jobs), p.CrashesPerCPUSecond, 1e3*p.CPUPerRun, p.Crashes/max(p.Runs, 1))
			if p.Ratio > 0 {
				s += fmt.Sprintf(", baseline %.0f (%.2f ms): %.2fx (%.2f-%.2f over the rounds)",
					p.BaselineCrashesPerCPUSecond, 1e3*p.BaselineCPUPerRun, p.Ratio, p.RatioMin, p.RatioMax)
			}
		}
		h = append(h, s+".")
	}
	if r.Baseline != "" {
		h = append(h, fmt.Sprintf("Target (with the true defaults at least 3x the baseline's crash cycles per second, by the wall clock and per CPU-second): %s.", met(r.TargetMet)))
	}
	return h
}

func (r *FuzzReport) Explain() string {
	return fmt.Sprintf(`Throughput of pmlin fuzz: campaigns of %d runs (--runs) of the PMwCAS,
each in a child process, whose crash cycles are divided by the campaign's
wall-clock time (the seconds of its JSON summary) and by the child's CPU
time (user and system). defaults runs both binaries as a user does, with
their own defaults: as many jobs as CPUs (the headline: crash cycles per second, which
only an idle machine gives undisturbed, and per CPU-second). The other
configurations run one job at a time (--jobs 1), whose CPU time per run
other work on a shared machine disturbs least: defaults-1job each
binary's own mix (this binary's may draw more kinds of runs); same-mix
turns this binary's later mix additions off (the mix's lone share, the
optional operations, the late writes, the drawn descriptor pool), so
both run the same runs; no-mix runs both without the mix. With
--baseline, an older pmlin binary runs the same campaign right after this
one in every round (%d rounds; medians reported), so both see the same
load.`, r.Runs, r.Reps)
}

func (r *FuzzReport) Plot(string) ([]string, error) { return nil, nil }
