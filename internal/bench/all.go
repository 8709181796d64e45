package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// AllReport is the result of every suite run in turn.
type AllReport struct {
	Suite   string   `json:"suite"` // "all"
	Command string   `json:"command,omitempty"`
	Machine Machine  `json:"machine"`
	Started string   `json:"started"`
	Seconds float64  `json:"seconds"`
	Reports []Report `json:"reports"`
	// Failed maps the suites that could not run to their error.
	Failed map[string]string `json:"failed,omitempty"`
	Files  []string          `json:"files,omitempty"`
}

// RunAll runs every suite (Suites) with o, printing each table to stdout,
// and with o.Out writes their files and summary.md, which names the
// machine and gathers the headlines and sections. A suite that fails is
// reported in Failed and the others still run.
func RunAll(ctx context.Context, o Options, stdout io.Writer) (*AllReport, error) {
	start := time.Now()
	a := &AllReport{Suite: "all", Command: o.Command, Machine: ReadMachine(), Started: start.UTC().Format(time.RFC3339)}
	for _, s := range Suites {
		fmt.Fprintf(stdout, "== %s: %s\n", s, Describe[s])
		so := o
		so.Command = strings.Replace(o.Command, "pmlin bench all", "pmlin bench "+s, 1)
		r, err := Run(ctx, s, so, stdout)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			if a.Failed == nil {
				a.Failed = map[string]string{}
			}
			a.Failed[s] = err.Error()
			fmt.Fprintf(stdout, "%s failed: %v\n", s, err)
			continue
		}
		a.Reports = append(a.Reports, r)
		a.Files = append(a.Files, r.meta().Files...)
		fmt.Fprintln(stdout)
	}
	a.Machine.LoadEnd = ReadMachine().LoadStart
	a.Seconds = time.Since(start).Seconds()
	if o.Out != "" {
		name := filepath.Join(o.Out, "summary.md")
		if err := writeFile(name, a.writeSummary); err != nil {
			return nil, err
		}
		a.Files = append(a.Files, name)
	}
	return a, nil
}

func (a *AllReport) writeSummary(w io.Writer) error {
	fmt.Fprintf(w, "# pmlin benchmark results\n\n")
	fmt.Fprintf(w, "Machine: %s.\n\n", a.Machine)
	fmt.Fprintf(w, "Measured %s, %.0f s in all; load average %s at the start, %s at the end. ", a.Started, a.Seconds, a.Machine.LoadStart, a.Machine.LoadEnd)
	fmt.Fprintf(w, "Other work may have shared the machine's %d CPUs: ratios measured within one run are the figures to trust, absolute times less so.\n\n", a.Machine.CPUs)
	if a.Command != "" {
		fmt.Fprintf(w, "Reproduce with\n\n    %s\n\n", a.Command)
	}
	fmt.Fprintf(w, "## Headlines\n\n")
	for _, r := range a.Reports {
		for _, h := range r.Headlines() {
			fmt.Fprintf(w, "- %s: %s\n", r.meta().Suite, h)
		}
	}
	for s, e := range a.Failed {
		fmt.Fprintf(w, "- %s: could not run: %s\n", s, e)
	}
	fmt.Fprintln(w)
	for _, r := range a.Reports {
		if err := WriteMarkdown(w, r, 2); err != nil {
			return err
		}
	}
	return nil
}
