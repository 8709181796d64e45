package crash

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
)

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCheck is a run of the PMwCAS recorded and checked, as fuzz
// makes them: the default run, and runs with what the mix draws (go test
// -run '^$' -bench Check ./internal/crash). It also reports the CPU time per run,
// which other work on a shared machine disturbs less than the wall time.
func BenchmarkCheck(b *testing.B) {
	shapes := Mix{Shapes: 1}
	for _, bc := range []struct {
		name string
		set  func(*Config)
	}{
		{"default", func(*Config) {}},
		{"shapes", func(c *Config) { shapes.draw(c) }},
		{"mix", func(c *Config) { DefaultMix().draw(c) }},
		{"stall", func(c *Config) { c.Stall = 1 }},
		{"fire", func(c *Config) { c.RecoveryCrash, c.RecoveryCrashes = FireCrash, FireCrashes }},
		{"sweep", func(c *Config) { c.RecoverySweep = true }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var buf bytes.Buffer
			i := int64(0)
			cpu := cpuTime()
			for b.Loop() {
				i++
				c := pmwcasRun()
				c.Driver.Seed = RunSeed(1, i)
				bc.set(&c)
				if _, err := Check(context.Background(), c, history.Strict, &buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkFuzz is a campaign of pmlin fuzz's defaults (the PMwCAS, the
// default mix), b.N runs long: its throughput in crash cycles and
// operations per second of wall time, and the CPU time per run (go test
// -run '^$' -bench Fuzz ./internal/crash). jobs=1 runs one run at a time, which
// other work on a shared machine disturbs least; default runs as many at a
// time as pmlin fuzz does (GOMAXPROCS).
func BenchmarkFuzz(b *testing.B) {
	for _, jobs := range []int{1, 0} {
		name := "jobs=1"
		if jobs == 0 {
			name = "default"
		}
		b.Run(name, func(b *testing.B) {
			fc := FuzzConfig{Run: pmwcasRun(), Seed: 1, MaxRuns: int64(b.N), Jobs: jobs, Mix: DefaultMix()}
			cpu := cpuTime()
			b.ResetTimer()
			st, f, err := Fuzz(context.Background(), fc)
			b.StopTimer()
			if err != nil || f != nil {
				b.Fatal(err, f)
			}
			secs := b.Elapsed().Seconds()
			b.ReportMetric(float64(st.Crashes)/secs, "crashes/s")
			b.ReportMetric(float64(st.Operations)/secs, "ops/s")
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkDecide is the analysis alone of the histories fuzz records, as
// it makes them: 100 runs of the default mix, recorded once, each decided
// from its Recording with the last analysis recycled (go test -run '^$'
// -bench Decide ./internal/crash). It measures the per-run cost of reading a small
// history and analysing it, apart from making the run.
func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	const runs = 100
	scs := make([]*scratch, runs)
	res := make([]*Result, runs)
	for i := range scs {
		c := pmwcasRun()
		c.Driver.Seed = RunSeed(7, int64(i))
		DefaultMix().draw(&c)
		scs[i] = &scratch{}
		defer scs[i].close()
		r, err := runTo(ctx, c, record.NewRecorder(&scs[i].rec), scs[i])
		if err != nil {
			b.Fatal(err)
		}
		res[i] = r
	}
	var done *analyzer.Analysis
	for b.Loop() {
		for i, sc := range scs {
			v, err := decide(ctx, res[i], sc.rec.Reader("<run>", history.Options{}), sc.rec.Size(), history.Strict, done)
			if err != nil {
				b.Fatal(err)
			}
			if v.Violated() {
				b.Fatal("a violation in a correct run")
			}
			done = v.Analysis
		}
	}
}
