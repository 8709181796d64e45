package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// A fuzzConfig is one way of running pmlin fuzz: a name for the table and
// the flags given after the budget, seed and output flags.
type fuzzConfig struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
}

// defaultConfigs are the built-in configurations: the defaults, a small
// dense shape, the durable mode, and process kills.
var defaultConfigs = []fuzzConfig{
	{"defaults", nil},
	{"t3w4k3", []string{"--threads", "3", "--words", "4", "--k", "3"}},
	{"durable", []string{"--mode", "durable"}},
	{"kill", []string{"--crash-mode", "kill"}},
}

// parseConfig reads NAME=FLAGS (flags separated by spaces).
func parseConfig(s string) (fuzzConfig, error) {
	name, args, ok := strings.Cut(s, "=")
	if !ok || name == "" || strings.ContainsAny(name, " |") {
		return fuzzConfig{}, fmt.Errorf("config %q: want NAME=FLAGS, e.g. wide=--words 64", s)
	}
	return fuzzConfig{Name: name, Args: strings.Fields(args)}, nil
}

// Outcomes of one fuzz campaign or one package test run.
const (
	outKilled   = "killed"   // fuzz exit 1, or a failing go test
	outSurvived = "survived" // fuzz exit 0, or a passing go test
	outTimeout  = "timeout"  // still running past its budget plus grace: stopped by this tool
	outError    = "error"    // fuzz exit 2 (an error, or the process died)
)

// ConfigResult is what one fuzz campaign said about one mutant.
type ConfigResult struct {
	Config  string `json:"config"`
	Outcome string `json:"outcome"`
	// AfterSeconds is when the violation was found, into the campaign
	// (fuzz --json finding.after_seconds).
	AfterSeconds float64 `json:"after_seconds,omitempty"`
	WallSeconds  float64 `json:"wall_seconds"`
	Anomaly      string  `json:"anomaly,omitempty"` // kind of the finding's first anomaly
	Runs         int64   `json:"runs"`
	Message      string  `json:"message,omitempty"`
}

// TestResult is what go test ./internal/mwcas said about one mutant.
type TestResult struct {
	Outcome string   `json:"outcome"`
	Seconds float64  `json:"seconds"`
	Failed  []string `json:"failed,omitempty"` // top-level tests that failed
	Message string   `json:"message,omitempty"`
}

// runner runs the steps of a mutant in a workspace.
type runner struct {
	seconds     float64       // fuzz --seconds per configuration
	grace       time.Duration // wall time past the budget before a campaign is stopped
	testTimeout time.Duration // go test -timeout; 0 skips the package tests
	seed        uint64
	configs     []fuzzConfig
}

// command runs name args in dir, stopping it (and every process it
// started) after limit. It returns standard output, standard error, the
// exit code (-1 if it did not exit), whether the limit stopped it, and an
// error if it could not be started.
func command(ctx context.Context, limit time.Duration, dir, name string, args ...string) (stdout, stderr []byte, code int, timedOut bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	// A process group of its own, so that the children of the kill crash
	// mode die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	timedOut = ctx.Err() == context.DeadlineExceeded
	var exit *exec.ExitError
	switch {
	case err == nil:
		return o.Bytes(), e.Bytes(), 0, false, nil
	case errors.As(err, &exit):
		return o.Bytes(), e.Bytes(), exit.ExitCode(), timedOut, nil
	case timedOut:
		return o.Bytes(), e.Bytes(), -1, true, nil
	}
	return o.Bytes(), e.Bytes(), -1, false, err
}

// build builds pmlin from the workspace; a mutant that does not compile
// gets the compiler's first lines back.
func (rn *runner) build(ctx context.Context, ws *workspace) (bin, failure string, err error) {
	bin = filepath.Join(ws.dir, "pmlin.bin")
	_, stderr, code, timedOut, err := command(ctx, 10*time.Minute, ws.dir, "go", "build", "-o", bin, "./cmd/pmlin")
	switch {
	case err != nil:
		return "", "", err
	case timedOut:
		return "", "", errors.New("go build took more than 10 minutes")
	case code != 0:
		return "", firstLines(string(stderr), 3), nil
	}
	return bin, "", nil
}

// fuzzSummary is the part of pmlin fuzz --json that the tool reads
// (docs/cli-contract.md).
type fuzzSummary struct {
	Runs       int64 `json:"runs"`
	Violations int64 `json:"violations"`
	Finding    *struct {
		AfterSeconds float64 `json:"after_seconds"`
		Verdict      struct {
			Anomalies []struct {
				Kind string `json:"kind"`
			} `json:"anomalies"`
		} `json:"verdict"`
	} `json:"finding"`
}

// fuzz runs one campaign of bin in configuration c and classifies it by
// its exit status and its JSON summary.
func (rn *runner) fuzz(ctx context.Context, ws *workspace, bin string, c fuzzConfig) ConfigResult {
	out := filepath.Join(ws.dir, "fuzz-out", c.Name)
	defer os.RemoveAll(out)
	args := append([]string{"fuzz", "--seconds", fmt.Sprint(rn.seconds), "--seed", fmt.Sprint(rn.seed), "--json", "--out", out}, c.Args...)
	limit := time.Duration(rn.seconds*float64(time.Second)) + rn.grace
	start := time.Now()
	stdout, stderr, code, timedOut, err := command(ctx, limit, ws.dir, bin, args...)
	res := ConfigResult{Config: c.Name, WallSeconds: round3(time.Since(start).Seconds())}
	if err != nil {
		res.Outcome, res.Message = outError, err.Error()
		return res
	}
	if timedOut {
		res.Outcome = outTimeout
		res.Message = fmt.Sprintf("still running %v after a %g s budget", limit.Round(time.Second), rn.seconds)
		return res
	}
	sum, perr := lastJSON(stdout)
	if perr == nil {
		res.Runs = sum.Runs
	}
	switch {
	case code == 1 && perr == nil && sum.Finding != nil:
		res.Outcome, res.AfterSeconds = outKilled, sum.Finding.AfterSeconds
		if a := sum.Finding.Verdict.Anomalies; len(a) > 0 {
			res.Anomaly = a[0].Kind
		}
	case code == 0 && perr == nil && sum.Violations == 0:
		res.Outcome = outSurvived
	default:
		res.Outcome = outError
		res.Message = fmt.Sprintf("exit %d: %s", code, errorLine(string(stderr)))
	}
	return res
}

// lastJSON decodes the last non-empty line of out.
func lastJSON(out []byte) (fuzzSummary, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var s fuzzSummary
	err := json.Unmarshal([]byte(lines[len(lines)-1]), &s)
	return s, err
}

var failLine = regexp.MustCompile(`(?m)^--- FAIL: (\S+)`)

// test runs the package tests of mwcas in the workspace.
func (rn *runner) test(ctx context.Context, ws *workspace) *TestResult {
	if rn.testTimeout <= 0 {
		return nil
	}
	start := time.Now()
	// The outer limit leaves room for compiling the test binary.
	stdout, stderr, code, timedOut, err := command(ctx, rn.testTimeout+2*time.Minute, ws.dir,
		"go", "test", "-count=1", "-timeout", rn.testTimeout.String(), "./internal/mwcas")
	res := &TestResult{Seconds: round3(time.Since(start).Seconds())}
	text := string(stdout) + string(stderr)
	switch {
	case err != nil:
		res.Outcome, res.Message = outError, err.Error()
	case timedOut:
		res.Outcome, res.Message = outTimeout, "go test did not end"
	case code == 0:
		res.Outcome = outSurvived
	default:
		res.Outcome = outKilled
		for _, m := range failLine.FindAllStringSubmatch(text, -1) {
			if !strings.Contains(m[1], "/") {
				res.Failed = append(res.Failed, m[1])
			}
		}
		if strings.Contains(text, "panic: test timed out") {
			res.Message = "test binary timed out (" + rn.testTimeout.String() + ")"
		} else if len(res.Failed) == 0 {
			res.Message = errorLine(text)
		}
	}
	return res
}

// errorLine picks the most telling line of a failed command's output: a
// panic or fatal error, else its last line.
func errorLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return truncate(l, 200)
		}
	}
	return truncate(lines[len(lines)-1], 200)
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return truncate(strings.Join(lines, " / "), 300)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
