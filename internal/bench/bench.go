package bench

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pmlin/pmlin/internal/atomicfile"
	"github.com/pmlin/pmlin/target"
)

// Options configure a suite. The zero value of a field means the suite's
// default (documented per field); Child is needed by the suites that
// measure checkers (scale, reducehb, porcupine).
type Options struct {
	// Out is the directory the CSV, PNG and Markdown files go to; "" writes
	// none.
	Out string
	// Progress receives a line per measurement (nil: none).
	Progress io.Writer
	// Child returns the command that runs ChildMain with args in a fresh
	// process (the pmlin binary's hidden "bench child" subcommand).
	Child func(args []string) *exec.Cmd
	// Work is the directory for temporary histories (default
	// os.TempDir()); they are removed at the end unless Keep.
	Work string
	Keep bool
	// Seed seeds the workloads and generated histories (default 1).
	Seed uint64

	// Log is an existing history to take prefixes of (scale, reducehb)
	// instead of recording one.
	Log string
	// Source is how the history of scale and reducehb is made: "driver"
	// (recorded from the PMwCAS under the free scheduler, the default) or
	// "gen" (pmlin gen's simulation).
	Source string
	// MaxBytes is scale's largest prefix (default 256 MiB; the paper goes
	// to 1 GB), HBMaxBytes reducehb's (default 1 MiB).
	MaxBytes   int64
	HBMaxBytes int64
	// Points is the number of prefixes of scale (default 8, evenly spaced).
	Points int
	// Sizes are the operations per history of porcupine (default 1000,
	// 10000, 100000).
	Sizes []int
	// Procs are the processes of porcupine's histories (default 4, 8, 16,
	// 32); scale and reducehb record with the first (default 8).
	Procs []int
	// Threads are the thread counts of logging and mwcas (default 1, 2, 4,
	// 8).
	Threads []int
	// Ks are mwcas's words per operation (default 1, 2, 4); K is the words
	// per operation of the recorded or generated histories and of logging
	// (default 3).
	Ks []int
	K  int
	// Timeout bounds one child measurement (default: porcupine 60 s,
	// others 10 min); MemLimit bounds its resident memory (default 8 GiB).
	Timeout  time.Duration
	MemLimit int64
	// Reps is the repetitions of a measurement, whose minimum is reported
	// (default 3).
	Reps int
	// Duration is the measuring time of one side of a point of logging
	// (default 6 s, in Reps slices) and of one point of mwcas (default
	// 300 ms).
	Duration time.Duration
	// GOMAXPROCS, if positive, is set in the children's environment. The
	// default: 1 for scale and reducehb (the analyzer's one-core figures),
	// unset (every core) for porcupine.
	GOMAXPROCS int
	// NoSkip makes porcupine run Porcupine on sizes above one where it
	// already timed out or ran out of memory (by default they are marked
	// "skipped").
	NoSkip bool
	// Command is the command line that ran the suite, for the reports.
	Command string
	// Emulate selects the persistence emulation of logging's PMwCAS region:
	// "off", "on", or "both" (the default: off first, then on).
	Emulate string
	// Clock is the timestamp source of logging's recorded runs: "auto"
	// (the default), "tsc", "monotonic" or "count" (one thread only;
	// record.ClockSource).
	Clock string
	// Split adds a fourth side to logging: the binary recording with its
	// history dropped instead of written (the workers' timestamps and
	// records and their hand-over, no file), so that the recording's
	// cost is split between the process and the disk.
	Split bool
	// Pmlin returns the command that runs this pmlin binary with args (the
	// fuzz suite measures pmlin fuzz itself, as a user runs it).
	Pmlin func(args []string) *exec.Cmd
	// Baseline is an older pmlin binary the fuzz suite compares with
	// ("": none). FuzzRuns is the runs of one fuzz campaign (default 300).
	Baseline string
	FuzzRuns int
	// Targets are the targets the targets suite measures (pmlin bench
	// passes every target the binary knows).
	Targets []*target.Target
}

func (o *Options) seed() uint64 {
	if o.Seed == 0 {
		return 1
	}
	return o.Seed
}

func (o *Options) work() string {
	if o.Work == "" {
		return os.TempDir()
	}
	return o.Work
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

func (o *Options) k() int {
	if o.K <= 0 {
		return 3
	}
	return o.K
}

func (o *Options) memLimit() int64 {
	if o.MemLimit <= 0 {
		return 8 << 30
	}
	return o.MemLimit
}

func (o *Options) timeout(def time.Duration) time.Duration {
	if o.Timeout <= 0 {
		return def
	}
	return o.Timeout
}

func (o *Options) reps(def int) int {
	if o.Reps <= 0 {
		return def
	}
	return o.Reps
}

func (o *Options) gomaxprocs(def int) int {
	if o.GOMAXPROCS <= 0 {
		return def
	}
	return o.GOMAXPROCS
}

func orString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func orInts(v, def []int) []int {
	if len(v) == 0 {
		return def
	}
	return v
}

// Meta is what every report carries: the suite, the machine, when and how
// long, and the files written.
type Meta struct {
	Suite   string   `json:"suite"`
	Command string   `json:"command,omitempty"`
	Machine Machine  `json:"machine"`
	Started string   `json:"started"`
	Seconds float64  `json:"seconds"`
	Files   []string `json:"files,omitempty"`
}

func (m *Meta) meta() *Meta { return m }

// Report is a suite's result. It marshals to the suite's JSON object.
type Report interface {
	meta() *Meta
	// Table is the points, as printed and written to CSV.
	Table() *Table
	// Plot draws the PNG plots into dir and returns their file names.
	Plot(dir string) ([]string, error)
	// Headlines are the suite's headline figures, one sentence each,
	// including how each target fared.
	Headlines() []string
	// Explain is the Markdown paragraph saying what is measured and how.
	Explain() string
}

// Suites are the suite names, in the order "all" runs them.
var Suites = []string{"scale", "reducehb", "logging", "porcupine", "mwcas", "targets"}

// Describe is a one-line description of each suite.
var Describe = map[string]string{
	"scale":     "analysis time and edges against log size, prefixes of one large log (OPODIS Figure 8)",
	"reducehb":  "happens-before edges and time with and without ReduceHB, up to 1 MB (OPODIS Figure 9)",
	"logging":   "PMwCAS driver throughput with and without recording (OPODIS: about 10 % slowdown)",
	"porcupine": "pmlin beside Porcupine on the same histories, 4 to 32 processes: time and peak memory",
	"mwcas":     "PMwCAS throughput against threads and k, persistence emulation on/off, mutex baseline",
	"targets":   "every target's throughput (primitives and data structures) under the driver, with and without recording",
	"fuzz":      "pmlin fuzz's crash cycles per second and per CPU-second with its true defaults, and CPU time per run at one job, beside an older binary (--baseline); not in all",
}

// Run runs a suite: it measures, writes the table to stdout and, with
// o.Out, the CSV, the plots and a Markdown section there.
func Run(ctx context.Context, suite string, o Options, stdout io.Writer) (Report, error) {
	start := time.Now()
	m0 := ReadMachine()
	var (
		r   Report
		err error
	)
	switch suite {
	case "scale":
		r, err = runScale(ctx, &o)
	case "reducehb":
		r, err = runReduceHB(ctx, &o)
	case "logging":
		r, err = runLogging(ctx, &o)
	case "porcupine":
		r, err = runPorcupine(ctx, &o)
	case "mwcas":
		r, err = runMwCAS(ctx, &o)
	case "targets":
		r, err = runTargets(ctx, &o)
	case "fuzz":
		r, err = runFuzz(ctx, &o)
	default:
		return nil, fmt.Errorf("unknown suite %q (%s)", suite, strings.Join(Suites, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", suite, err)
	}
	m := r.meta()
	m.Suite, m.Command = suite, o.Command
	m.Machine = m0
	m.Machine.LoadEnd = ReadMachine().LoadStart
	m.Started = start.UTC().Format(time.RFC3339)
	m.Seconds = time.Since(start).Seconds()
	t := r.Table()
	if err := t.WriteText(stdout); err != nil {
		return nil, err
	}
	for _, h := range r.Headlines() {
		fmt.Fprintln(stdout, h)
	}
	if o.Out == "" {
		return r, nil
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	csvName := suite + ".csv"
	if err := writeFile(filepath.Join(o.Out, csvName), t.WriteCSV); err != nil {
		return nil, err
	}
	plots, err := r.Plot(o.Out)
	if err != nil {
		return nil, fmt.Errorf("%s: plots: %w", suite, err)
	}
	m.Files = append([]string{csvName}, plots...)
	mdName := suite + ".md"
	m.Files = append(m.Files, mdName)
	if err := writeFile(filepath.Join(o.Out, mdName), func(w io.Writer) error {
		return WriteMarkdown(w, r, 2)
	}); err != nil {
		return nil, err
	}
	for i, f := range m.Files {
		m.Files[i] = filepath.Join(o.Out, f)
	}
	return r, nil
}

// WriteMarkdown writes a report as a Markdown section whose heading has the
// given level, with its plots as images (file names relative to the
// directory of the Markdown file).
func WriteMarkdown(w io.Writer, r Report, level int) error {
	m := r.meta()
	fmt.Fprintf(w, "%s %s\n\n", strings.Repeat("#", level), m.Suite)
	fmt.Fprintf(w, "%s\n\n", r.Explain())
	if m.Command != "" {
		fmt.Fprintf(w, "    %s\n\n", m.Command)
	}
	for _, h := range r.Headlines() {
		fmt.Fprintf(w, "- %s\n", h)
	}
	fmt.Fprintf(w, "\nMeasured %s in %.0f s; load average %s at the start, %s at the end.\n\n",
		m.Started, m.Seconds, m.Machine.LoadStart, m.Machine.LoadEnd)
	if err := r.Table().WriteMarkdown(w); err != nil {
		return err
	}
	for _, f := range m.Files {
		if b := filepath.Base(f); strings.HasSuffix(b, ".png") {
			fmt.Fprintf(w, "\n![%s](%s)\n", strings.TrimSuffix(b, ".png"), b)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// writeFile writes a file of --out, replacing the one a former run wrote,
// whole or not at all (atomicfile).
func writeFile(path string, fill func(io.Writer) error) error {
	return atomicfile.Write(context.Background(), path, 0o644, true, fill)
}

// Table is a suite's points: the same cells are printed, written as CSV
// and as Markdown.
type Table struct {
	Cols []string
	Rows [][]string
}

func (t *Table) add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case string:
			row[i] = v
		case float64:
			row[i] = fmtFloat(v)
		default:
			row[i] = fmt.Sprint(v)
		}
	}
	t.Rows = append(t.Rows, row)
}

// fmtFloat prints a measurement with four significant digits, without an
// exponent for the usual ranges.
func fmtFloat(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case v >= 1e6 || v < -1e6:
		return fmt.Sprintf("%.0f", v)
	case v >= 1000 || v <= -1000:
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.4g", v)
	if strings.Contains(s, "e") {
		s = fmt.Sprintf("%.6f", v)
	}
	return s
}

// WriteText writes the table with aligned columns.
func (t *Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(t.Cols, "\t")+"\t")
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	return tw.Flush()
}

// WriteCSV writes the table as CSV with a header line.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write(t.Cols)
	cw.WriteAll(t.Rows)
	return cw.Error()
}

// WriteMarkdown writes the table in Markdown.
func (t *Table) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "| %s |\n", strings.Join(t.Cols, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat("---:|", len(t.Cols)))
	for _, r := range t.Rows {
		cells := slices.Clone(r)
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	return nil
}

// mib formats a byte count in binary units.
func mib(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%.4g MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.4g KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// verdict words for the targets.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
