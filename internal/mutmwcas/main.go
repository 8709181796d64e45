// Command mutmwcas is the mutation test of package mwcas: it
// applies single-line source mutants to a private copy of the module, builds
// pmlin from each, runs `pmlin fuzz` on it in several configurations with a
// time budget each, runs `go test ./internal/mwcas`, and reports which mutants were
// killed, by what, and how fast, as Markdown and JSON.
//
// It drives the fuzzer only through its command line (flags, exit status,
// the --json summary of docs/cli-contract.md), so it measures whatever the
// harness behind `pmlin fuzz` does today.
//
//	go run ./internal/mutmwcas                       # every mutant, default budgets
//	go run ./internal/mutmwcas -seconds 60 -test-timeout 5m
//	go run ./internal/mutmwcas -only p1-no-flush,help-skipped -config 'wide=--words 64'
//	go run ./internal/mutmwcas -list
//
// See README.md in this directory for the budgets and the current results.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pmlin/pmlin/internal/jsonid"
)

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command's flags.
type options struct {
	module, out, only, configs string
	rescore                    string
	extra                      []string
	seconds                    float64
	grace, testTimeout         time.Duration
	seed                       uint64
	parallel                   int
	list, noControl, keep      bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("mutmwcas", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.module, "module", "", "root of the pmlin module to mutate (default: found from the working directory)")
	fs.StringVar(&o.out, "out", "mutation-out", "directory for mutation.md and mutation.json")
	fs.StringVar(&o.only, "only", "", "comma-separated mutant names or kinds to run (default: all)")
	fs.StringVar(&o.configs, "configs", "defaults,t3w4k3,durable,kill", "built-in fuzz configurations to run, comma-separated (defaults, t3w4k3, durable, kill; empty: none)")
	fs.Func("config", "an extra fuzz configuration NAME=FLAGS, e.g. 'wide=--words 64' (repeatable)", func(s string) error {
		o.extra = append(o.extra, s)
		return nil
	})
	fs.Float64Var(&o.seconds, "seconds", 4, "pmlin fuzz --seconds per mutant and configuration")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "wall time past the fuzz budget before a campaign is stopped and reported as a timeout")
	fs.DurationVar(&o.testTimeout, "test-timeout", 30*time.Second, "go test -timeout for the package tests of each mutant (0: do not run them)")
	fs.Uint64Var(&o.seed, "seed", 1, "pmlin fuzz --seed")
	fs.IntVar(&o.parallel, "parallel", 1, "mutants at a time (each in its own copy of the module)")
	fs.BoolVar(&o.list, "list", false, "list the mutants and exit")
	fs.BoolVar(&o.noControl, "no-control", false, "skip the control run of the unmutated code")
	fs.BoolVar(&o.keep, "keep", false, "keep the module copies (their paths are printed)")
	fs.StringVar(&o.rescore, "rescore", "", "run nothing: read a mutation.json, take the mutants' kinds, descriptions and equivalence arguments from this build's table, score again and write the report under -out")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.seconds <= 0 || o.parallel < 1 {
		return o, errors.New("-seconds and -parallel must be positive")
	}
	return o, nil
}

// selectConfigs resolves -configs and -config.
func (o options) selectConfigs() ([]fuzzConfig, error) {
	var out []fuzzConfig
	for _, name := range strings.Split(o.configs, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		found := false
		for _, c := range defaultConfigs {
			if c.Name == name {
				out, found = append(out, c), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown configuration %q (built in: defaults, t3w4k3, durable, kill; add others with -config)", name)
		}
	}
	for _, s := range o.extra {
		c, err := parseConfig(s)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// selectMutants resolves -only against names and kinds.
func selectMutants(only string) ([]Mutant, error) {
	if only == "" {
		return mutants, nil
	}
	var out []Mutant
	for _, want := range strings.Split(only, ",") {
		want = strings.TrimSpace(want)
		n := len(out)
		for _, m := range mutants {
			if m.Name == want || m.Kind == want {
				out = append(out, m)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("-only: no mutant or kind named %q (see -list)", want)
		}
	}
	return out, nil
}

func realMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "mutmwcas:", err)
		return 2
	}
	ms, err := selectMutants(o.only)
	if err == nil && o.module == "" {
		o.module, err = findModule()
	}
	if err != nil {
		fmt.Fprintln(stderr, "mutmwcas:", err)
		return 2
	}
	if o.list {
		return listMutants(stdout, stderr, o.module, ms)
	}
	if o.rescore != "" {
		if err := rescore(o.rescore, o.out, stdout); err != nil {
			fmt.Fprintln(stderr, "mutmwcas:", err)
			return 2
		}
		return 0
	}
	configs, err := o.selectConfigs()
	if err != nil {
		fmt.Fprintln(stderr, "mutmwcas:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := campaign(ctx, o, configs, ms, stderr)
	if rep != nil {
		rep.Command = "go run ./internal/mutmwcas " + strings.Join(args, " ")
		if werr := writeReport(o.out, rep, stdout); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "mutmwcas:", err)
		return 2
	}
	return 0
}

// findModule walks up from the working directory to the go.mod of
// github.com/pmlin/pmlin.
func findModule() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/pmlin/pmlin\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the pmlin module: give -module")
		}
		dir = parent
	}
}

// listMutants prints every mutant with the line it changes in the module.
func listMutants(stdout, stderr io.Writer, module string, ms []Mutant) int {
	status := 0
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join(module, m.File))
		line := 0
		if err == nil {
			_, line, err = m.apply(src)
		}
		if err != nil {
			fmt.Fprintln(stderr, "mutmwcas:", err)
			status = 2
		}
		eq := ""
		if m.Equivalent != "" {
			eq = " [argued equivalent]"
		}
		fmt.Fprintf(stdout, "%-30s %-20s %s:%d  %s%s\n", m.Name, m.Kind, m.File, line, m.Desc, eq)
	}
	return status
}

// campaign runs the control and every mutant, o.parallel at a time.
func campaign(ctx context.Context, o options, configs []fuzzConfig, ms []Mutant, log io.Writer) (*Report, error) {
	start := time.Now()
	rn := &runner{seconds: o.seconds, grace: o.grace, testTimeout: o.testTimeout, seed: o.seed, configs: configs}
	rep := &Report{Module: o.module, Revision: revision(ctx, o.module), Seconds: o.seconds, Seed: jsonid.Uint64(o.seed), Configs: configs}
	if o.testTimeout > 0 {
		rep.TestLimit = o.testTimeout.String()
	}
	root, err := os.MkdirTemp("", "mutmwcas-")
	if err != nil {
		return nil, err
	}
	if o.keep {
		fmt.Fprintf(log, "module copies under %s\n", root)
	} else {
		defer os.RemoveAll(root)
	}
	pool := make([]*workspace, min(o.parallel, len(ms)+1))
	for i := range pool {
		if pool[i], err = newWorkspace(o.module, root, o.out); err != nil {
			return nil, err
		}
	}
	defer func() { rep.Elapsed = round3(time.Since(start).Seconds()) }()
	if !o.noControl {
		fmt.Fprintf(log, "control: the unmutated code\n")
		c := rn.mutant(ctx, pool[0], nil)
		rep.Control = &c
		fmt.Fprintf(log, "control: %s\n", controlText(&c))
		if c.Error != "" || c.Build != "" || c.Verdict != vSurvived {
			rep.Incomplete = "the unmutated code does not pass the control: " + controlText(&c)
			return rep, errors.New(rep.Incomplete)
		}
	}
	rep.Results = make([]Result, len(ms))
	var mu sync.Mutex
	done := 0
	jobs := make(chan int)
	var wg sync.WaitGroup
	for _, ws := range pool {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				r := rn.mutant(ctx, ws, &ms[i])
				mu.Lock()
				rep.Results[i] = r
				done++
				fmt.Fprintf(log, "[%d/%d %4.0fs] %s\n", done, len(ms), time.Since(start).Seconds(), progressText(&r))
				mu.Unlock()
			}
		}()
	}
	for i := range ms {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		rep.Incomplete = fmt.Sprintf("interrupted after %d of %d mutants", done, len(ms))
		kept := rep.Results[:0]
		for _, r := range rep.Results {
			if r.Name != "" && r.Error == "" {
				kept = append(kept, r)
			}
		}
		rep.Results = kept
	}
	rep.Summary = summarize(rep.Results, configs)
	return rep, nil
}

// mutant measures one mutant (nil: the unmutated code) in ws.
func (rn *runner) mutant(ctx context.Context, ws *workspace, m *Mutant) Result {
	var r Result
	steps := func() error {
		t0 := time.Now()
		bin, failure, err := rn.build(ctx, ws)
		r.BuildSeconds = round3(time.Since(t0).Seconds())
		if err != nil || failure != "" {
			r.Build = failure
			return err
		}
		for _, c := range rn.configs {
			r.Fuzz = append(r.Fuzz, rn.fuzz(ctx, ws, bin, c))
		}
		r.Tests = rn.test(ctx, ws)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil
	}
	var err error
	if m == nil {
		r.Name = "control"
		err = steps()
	} else {
		r.Mutant = *m
		r.Line, err = ws.with(*m, steps)
	}
	if err != nil {
		r.Error = err.Error()
	}
	r.classify()
	return r
}

func progressText(r *Result) string {
	var parts []string
	for _, c := range r.Fuzz {
		parts = append(parts, c.Config+" "+strings.TrimSpace(strings.ReplaceAll(cell(c), "**", "")))
	}
	if r.Tests != nil {
		parts = append(parts, "tests "+r.Tests.Outcome)
	}
	detail := strings.Join(parts, ", ")
	if r.Build != "" {
		detail = r.Build
	}
	if r.Error != "" {
		detail = r.Error
	}
	return fmt.Sprintf("%s: %s (%s)", r.Name, r.Verdict, detail)
}

// revision names the module's commit, marked when the tree has changes.
func revision(ctx context.Context, module string) string {
	out, _, code, _, err := command(ctx, time.Minute, module, "git", "rev-parse", "--short", "HEAD")
	if err != nil || code != 0 {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	if st, _, code, _, err := command(ctx, time.Minute, module, "git", "status", "--porcelain"); err == nil && code == 0 && len(strings.TrimSpace(string(st))) > 0 {
		rev += " with uncommitted changes"
	}
	return rev
}

// rescore re-reads a report, updates each mutant from the table (an
// equivalence argued after the run, a better description), and scores
// and writes it again. The measurements are kept as they were.
func rescore(path, out string, stdout io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		for _, m := range mutants {
			if m.Name == r.Name {
				r.Kind, r.Desc, r.Equivalent = m.Kind, m.Desc, m.Equivalent
			}
		}
		r.classify()
	}
	rep.Summary = summarize(rep.Results, rep.Configs)
	rep.Rescored = true
	return writeReport(out, &rep, stdout)
}

// writeReport writes mutation.md and mutation.json under dir and prints the
// summary section and the paths.
func writeReport(dir string, rep *Report, stdout io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	writeMarkdown(&md, rep)
	mdPath, jsonPath := filepath.Join(dir, "mutation.md"), filepath.Join(dir, "mutation.json")
	if err := os.WriteFile(mdPath, []byte(md.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonPath, append(js, '\n'), 0o644); err != nil {
		return err
	}
	text := md.String()
	if i := strings.Index(text, "## All mutants"); i >= 0 {
		text = text[:i]
	}
	fmt.Fprintf(stdout, "%s\nwritten: %s, %s\n", text, mdPath, jsonPath)
	return nil
}
