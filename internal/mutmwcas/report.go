package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/pmlin/pmlin/internal/jsonid"
)

// Verdicts of a mutant, over all its fuzz campaigns and its package tests.
const (
	vFuzz       = "killed by fuzz"
	vTestsOnly  = "killed by tests only"
	vSurvived   = "survived"
	vEquivalent = "equivalent"
	vRefuted    = "killed (equivalence refuted)"
	vNoCompile  = "does not compile"
	vNotRun     = "not run" // the tool failed (see Result.Error): not scored
)

// Result is everything measured about one mutant.
type Result struct {
	Mutant
	Line    int    `json:"line"`
	Verdict string `json:"verdict"`
	Build   string `json:"build_error,omitempty"`
	// BuildSeconds is the wall time of go build ./cmd/pmlin.
	BuildSeconds float64        `json:"build_seconds"`
	Fuzz         []ConfigResult `json:"fuzz,omitempty"`
	Tests        *TestResult    `json:"tests,omitempty"`
	Error        string         `json:"error,omitempty"` // the tool could not run it
}

// fuzzKilled is the earliest kill among the campaigns, if any.
func (r *Result) fuzzKilled() (ConfigResult, bool) {
	var best ConfigResult
	found := false
	for _, c := range r.Fuzz {
		if c.Outcome == outKilled && (!found || c.AfterSeconds < best.AfterSeconds) {
			best, found = c, true
		}
	}
	return best, found
}

func (r *Result) testsKilled() bool { return r.Tests != nil && r.Tests.Outcome != outSurvived }

// classify sets r.Verdict from what was measured.
func (r *Result) classify() {
	_, fuzz := r.fuzzKilled()
	switch {
	case r.Error != "":
		r.Verdict = vNotRun
	case r.Build != "":
		r.Verdict = vNoCompile
	case r.Equivalent != "" && (fuzz || r.testsKilled()):
		r.Verdict = vRefuted
	case r.Equivalent != "":
		r.Verdict = vEquivalent
	case fuzz:
		r.Verdict = vFuzz
	case r.testsKilled():
		r.Verdict = vTestsOnly
	default:
		r.Verdict = vSurvived
	}
}

// Summary is the score of a mutation run.
type Summary struct {
	Mutants     int `json:"mutants"`
	NoCompile   int `json:"not_compiling"`
	Equivalent  int `json:"equivalent"` // argued and not refuted
	NotRun      int `json:"not_run"`    // the tool failed on them
	Scored      int `json:"scored"`     // mutants - not compiling - equivalent
	FuzzKilled  int `json:"fuzz_killed"`
	TestsKilled int `json:"tests_killed"`
	EitherKill  int `json:"either_killed"`
	// Scores are fractions of Scored.
	FuzzScore   float64 `json:"fuzz_score"`
	TestsScore  float64 `json:"tests_score"`
	EitherScore float64 `json:"either_score"`
	// Times to kill by fuzz (seconds into the campaign), the earliest over
	// the configurations, and with the first configuration alone.
	MedianKill        float64        `json:"median_seconds_to_kill"`
	MaxKill           float64        `json:"max_seconds_to_kill"`
	FirstConfig       string         `json:"first_config"`
	FirstConfigKilled int            `json:"first_config_killed"`
	FirstMedianKill   float64        `json:"first_config_median_seconds_to_kill"`
	FirstMaxKill      float64        `json:"first_config_max_seconds_to_kill"`
	KilledByConfig    map[string]int `json:"killed_by_config"`
	// OnlyConfig counts the mutants that one configuration alone killed.
	OnlyConfig   map[string]int `json:"only_config"`
	FuzzTimeouts int            `json:"fuzz_timeouts"` // mutants with a campaign stopped past its budget
	FuzzErrors   int            `json:"fuzz_errors"`   // mutants with a campaign that exited 2
}

func summarize(results []Result, configs []fuzzConfig) Summary {
	s := Summary{Mutants: len(results), KilledByConfig: map[string]int{}, OnlyConfig: map[string]int{}}
	var best, first []float64
	if len(configs) > 0 {
		s.FirstConfig = configs[0].Name
	}
	for i := range results {
		r := &results[i]
		switch r.Verdict {
		case vNoCompile:
			s.NoCompile++
			continue
		case vEquivalent:
			s.Equivalent++
			continue
		case vNotRun:
			s.NotRun++
			continue
		}
		s.Scored++
		var killers []string
		timeout, errored := false, false
		for _, c := range r.Fuzz {
			switch c.Outcome {
			case outKilled:
				s.KilledByConfig[c.Config]++
				killers = append(killers, c.Config)
				if c.Config == s.FirstConfig {
					s.FirstConfigKilled++
					first = append(first, c.AfterSeconds)
				}
			case outTimeout:
				timeout = true
			case outError:
				errored = true
			}
		}
		if len(killers) == 1 && len(configs) > 1 {
			s.OnlyConfig[killers[0]]++
		}
		if b, ok := r.fuzzKilled(); ok {
			s.FuzzKilled++
			best = append(best, b.AfterSeconds)
		} else {
			s.FuzzTimeouts += b2i(timeout)
			s.FuzzErrors += b2i(errored)
		}
		if r.testsKilled() {
			s.TestsKilled++
		}
		if len(killers) > 0 || r.testsKilled() {
			s.EitherKill++
		}
	}
	if s.Scored > 0 {
		s.FuzzScore = float64(s.FuzzKilled) / float64(s.Scored)
		s.TestsScore = float64(s.TestsKilled) / float64(s.Scored)
		s.EitherScore = float64(s.EitherKill) / float64(s.Scored)
	}
	s.MedianKill, s.MaxKill = medianMax(best)
	s.FirstMedianKill, s.FirstMaxKill = medianMax(first)
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// medianMax of xs (0, 0 when empty); the median of an even count is the
// mean of the middle two.
func medianMax(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return round3(med), s[n-1]
}

// Report is the JSON output: how the run was made, the control, every
// mutant, the summary.
type Report struct {
	Command    string        `json:"command"`
	Module     string        `json:"module"`
	Revision   string        `json:"revision,omitempty"`
	Seconds    float64       `json:"seconds_per_config"`
	Seed       jsonid.Uint64 `json:"seed"` // a string; rescore reads older reports' numbers too
	TestLimit  string        `json:"test_timeout,omitempty"`
	Configs    []fuzzConfig  `json:"configs"`
	Control    *Result       `json:"control"`
	Results    []Result      `json:"mutants"`
	Summary    Summary       `json:"summary"`
	Elapsed    float64       `json:"elapsed_seconds"`
	Incomplete string        `json:"incomplete,omitempty"`
	// Rescored says the verdicts were taken again (-rescore) with a later
	// table's equivalence arguments; the measurements are the run's.
	Rescored bool `json:"rescored,omitempty"`
}

// secs renders a time to kill; fuzz reports milliseconds, so 0 is under one.
func secs(x float64) string {
	if x == 0 {
		return "< 0.001 s"
	}
	return fmt.Sprintf("%.3g s", x)
}

func pct(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

// cell renders one campaign for the table.
func cell(c ConfigResult) string {
	switch c.Outcome {
	case outKilled:
		return fmt.Sprintf("**%s** %s", secs(c.AfterSeconds), c.Anomaly)
	case outSurvived:
		return "survived"
	case outTimeout:
		return "timeout"
	}
	return "error"
}

func testsCell(t *TestResult) string {
	switch {
	case t == nil:
		return "not run"
	case t.Outcome == outKilled && len(t.Failed) > 0:
		return "**killed** " + strings.Join(t.Failed, ", ")
	case t.Outcome == outKilled:
		return "**killed**"
	}
	return t.Outcome
}

// writeMarkdown renders the report: how it was made, the summary, the
// survivors, the equivalent mutants with their arguments, and the table.
func writeMarkdown(w io.Writer, rep *Report) {
	s := rep.Summary
	fmt.Fprintf(w, "# Mutation test of mwcas\n\n")
	fmt.Fprintf(w, "Command: `%s`  \nModule: `%s`", rep.Command, rep.Module)
	if rep.Revision != "" {
		fmt.Fprintf(w, " at %s", rep.Revision)
	}
	fmt.Fprintf(w, "  \nBudget: %g s of `pmlin fuzz --seed %d` per mutant and configuration; package tests: ", rep.Seconds, rep.Seed)
	if rep.TestLimit == "" {
		fmt.Fprintf(w, "not run")
	} else {
		fmt.Fprintf(w, "`go test -count=1 -timeout %s ./internal/mwcas`", rep.TestLimit)
	}
	fmt.Fprintf(w, "  \nConfigurations:")
	for _, c := range rep.Configs {
		fmt.Fprintf(w, " %s (`%s`);", c.Name, strings.Join(append([]string{"pmlin fuzz"}, c.Args...), " "))
	}
	fmt.Fprintf(w, "  \nWall time: %.0f s\n\n", rep.Elapsed)
	if rep.Rescored {
		fmt.Fprintf(w, "Verdicts scored again (`-rescore`) with a later table's equivalence arguments; the measurements are the run's.\n\n")
	}
	if rep.Incomplete != "" {
		fmt.Fprintf(w, "**Incomplete run:** %s\n\n", rep.Incomplete)
	}
	if rep.Control != nil {
		fmt.Fprintf(w, "Control (the unmutated code): %s.\n\n", controlText(rep.Control))
	}
	fmt.Fprintf(w, "## Summary\n\n")
	fmt.Fprintf(w, "| | count | score |\n|---|---:|---:|\n")
	fmt.Fprintf(w, "| mutants | %d | |\n| do not compile | %d | |\n| argued equivalent (not refuted) | %d | |\n", s.Mutants, s.NoCompile, s.Equivalent)
	if s.NotRun > 0 {
		fmt.Fprintf(w, "| not run (tool error) | %d | |\n", s.NotRun)
	}
	fmt.Fprintf(w, "| scored | %d | |\n", s.Scored)
	fmt.Fprintf(w, "| killed by fuzz (any configuration) | %d | %s |\n", s.FuzzKilled, pct(s.FuzzScore))
	fmt.Fprintf(w, "| killed by fuzz, %s alone | %d | %s |\n", s.FirstConfig, s.FirstConfigKilled, pct(float64(s.FirstConfigKilled)/float64(max(s.Scored, 1))))
	fmt.Fprintf(w, "| killed by `go test ./internal/mwcas` | %d | %s |\n", s.TestsKilled, pct(s.TestsScore))
	fmt.Fprintf(w, "| killed by either | %d | %s |\n\n", s.EitherKill, pct(s.EitherScore))
	fmt.Fprintf(w, "Time to kill by fuzz (into the campaign): earliest over the configurations, median %s, max %s; %s alone, median %s, max %s.\n\n",
		secs(s.MedianKill), secs(s.MaxKill), s.FirstConfig, secs(s.FirstMedianKill), secs(s.FirstMaxKill))
	fmt.Fprintf(w, "Kills by configuration:")
	for _, c := range rep.Configs {
		fmt.Fprintf(w, " %s %d (alone %d);", c.Name, s.KilledByConfig[c.Name], s.OnlyConfig[c.Name])
	}
	fmt.Fprintf(w, "\nNot killed by fuzz, with a campaign stopped past its budget: %d; with a campaign that exited 2: %d.\n\n", s.FuzzTimeouts, s.FuzzErrors)
	writeLists(w, rep)
	writeTable(w, rep)
}

func controlText(c *Result) string {
	var parts []string
	for _, f := range c.Fuzz {
		parts = append(parts, fmt.Sprintf("%s %s (%d runs)", f.Config, f.Outcome, f.Runs))
	}
	parts = append(parts, "tests "+testsCell(c.Tests))
	if c.Build != "" {
		parts = []string{"does not build: " + c.Build}
	}
	return strings.Join(parts, ", ")
}

// writeLists lists the mutants fuzz did not kill, by kind, and the argued
// equivalent ones.
func writeLists(w io.Writer, rep *Report) {
	byKind := map[string][]*Result{}
	var kinds []string
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Verdict != vSurvived && r.Verdict != vTestsOnly {
			continue
		}
		if byKind[r.Kind] == nil {
			kinds = append(kinds, r.Kind)
		}
		byKind[r.Kind] = append(byKind[r.Kind], r)
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "## Not killed by fuzz\n\n")
	if len(kinds) == 0 {
		fmt.Fprintf(w, "None.\n\n")
	}
	for _, k := range kinds {
		fmt.Fprintf(w, "- %s:", k)
		for _, r := range byKind[k] {
			note := ""
			if r.Verdict == vTestsOnly {
				note = " (tests kill it)"
			}
			for _, c := range r.Fuzz {
				if c.Outcome == outTimeout || c.Outcome == outError {
					note += fmt.Sprintf(" (%s: %s)", c.Config, c.Outcome)
				}
			}
			fmt.Fprintf(w, " `%s`%s;", r.Name, note)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\n## Argued equivalent\n\n")
	for _, r := range rep.Results {
		if r.Equivalent != "" {
			fmt.Fprintf(w, "- `%s` (%s): %s. %s\n", r.Name, r.Verdict, r.Desc, r.Equivalent)
		}
	}
	fmt.Fprintln(w)
}

func writeTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "## All mutants\n\n| mutant | kind | where | what |")
	for _, c := range rep.Configs {
		fmt.Fprintf(w, " %s |", c.Name)
	}
	fmt.Fprintf(w, " tests | verdict |\n|---|---|---|---|")
	for range rep.Configs {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintf(w, "---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(w, "| `%s` | %s | %s:%d | %s |", r.Name, r.Kind, r.File, r.Line, r.Desc)
		for _, c := range rep.Configs {
			text := "not run"
			for _, f := range r.Fuzz {
				if f.Config == c.Name {
					text = cell(f)
				}
			}
			fmt.Fprintf(w, " %s |", text)
		}
		verdict := r.Verdict
		if r.Build != "" {
			verdict += ": " + strings.ReplaceAll(r.Build, "|", "\\|")
		}
		if r.Error != "" {
			verdict += ": " + r.Error
		}
		fmt.Fprintf(w, " %s | %s |\n", testsCell(r.Tests), verdict)
	}
}
