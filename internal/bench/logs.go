package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/mwcas"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
)

// LogInfo describes the history a suite measured.
type LogInfo struct {
	Path   string `json:"path"`
	Source string `json:"source"` // driver, gen or file
	Bytes  int64  `json:"bytes"`
	Ops    int64  `json:"ops,omitempty"`
	Procs  int    `json:"procs,omitempty"`
	Words  int    `json:"words,omitempty"`
	K      int    `json:"k,omitempty"`
	// Seconds it took to record or generate.
	Seconds float64 `json:"seconds,omitempty"`
	temp    bool
}

func (l LogInfo) String() string {
	switch l.Source {
	case "file":
		return fmt.Sprintf("the history %s (%s)", l.Path, mib(l.Bytes))
	case "driver":
		return fmt.Sprintf("a %s history recorded by the driver from the PMwCAS (free scheduler, %d threads, %d words, k=%d, half reads, no crashes): %d operations",
			mib(l.Bytes), l.Procs, l.Words, l.K, l.Ops)
	}
	return fmt.Sprintf("a %s history from pmlin gen (%d processes, %d words, 1..%d words per operation, half reads, linearizable): %d operations",
		mib(l.Bytes), l.Procs, l.Words, l.K, l.Ops)
}

// logWords is the address space of the histories the suites make, as in
// pmlin gen's default and the analyzer's benchmarks.
const logWords = 1000

// sourceLog returns the history scale and reducehb take prefixes of: o.Log,
// or one of at least minBytes recorded by the driver (o.Source "driver" or
// "") or generated (o.Source "gen") with procs processes.
func (o *Options) sourceLog(ctx context.Context, minBytes int64, procs int) (LogInfo, error) {
	if o.Log != "" {
		st, err := os.Stat(o.Log)
		if err != nil {
			return LogInfo{}, err
		}
		return LogInfo{Path: o.Log, Source: "file", Bytes: st.Size()}, nil
	}
	switch o.Source {
	case "", "driver":
		return o.recordLog(ctx, minBytes, procs)
	case "gen":
		return o.genLog(minBytes, 0, procs)
	}
	return LogInfo{}, fmt.Errorf("unknown source %q (driver or gen)", o.Source)
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// recordLog records a crash-free history of at least minBytes from the
// PMwCAS under the driver's free scheduler.
func (o *Options) recordLog(ctx context.Context, minBytes int64, procs int) (LogInfo, error) {
	info := LogInfo{Source: "driver", Procs: procs, Words: logWords, K: o.k(), temp: !o.Keep}
	info.Path = filepath.Join(o.work(), fmt.Sprintf("pmlin-bench-driver-p%d-k%d-%d.hist", procs, info.K, os.Getpid()))
	f, err := os.Create(info.Path)
	if err != nil {
		return info, err
	}
	defer f.Close()
	start := time.Now()
	cw := &countWriter{w: f}
	bw := bufio.NewWriterSize(cw, 1<<20)
	rec := record.NewRecorder(history.NewWriter(bw))
	rec.Header()
	mc := mwcas.Config{Words: logWords, MaxWorkers: procs}
	n, err := mwcas.RegionWords(mc)
	if err != nil {
		return info, err
	}
	r, err := pmem.NewMemory(n, pmem.Options{})
	if err != nil {
		return info, err
	}
	defer r.Close()
	m, err := mwcas.New(r, mc)
	if err != nil {
		return info, err
	}
	dc := driver.DefaultConfig()
	dc.Threads, dc.Words, dc.K, dc.Sched, dc.Seed = procs, logWords, info.K, driver.Free, o.seed()
	d, err := driver.New(dc, mwcas.AsTarget(m), r, rec)
	if err != nil {
		return info, err
	}
	// Segments of 100k operations (the driver keeps a segment's logs in
	// memory), fewer for a small history.
	segment := int(min(max(minBytes/64, 1000), 100_000))
	quota := make([]int, procs)
	for cw.n+int64(bw.Buffered()) < minBytes {
		for i := range quota {
			quota[i] = max(1, segment/procs)
		}
		res, err := d.Segment(ctx, quota, driver.CrashPoint{})
		if err != nil {
			return info, err
		}
		switch {
		case res.Stuck != nil:
			return info, fmt.Errorf("recording: %v", res.Stuck)
		case res.Failed != nil:
			return info, fmt.Errorf("recording: %v", res.Failed)
		case ctx.Err() != nil:
			return info, ctx.Err()
		}
		info.Ops += res.Invoked
	}
	if err := bw.Flush(); err != nil {
		return info, err
	}
	info.Bytes, info.Seconds = cw.n, time.Since(start).Seconds()
	o.progress("recorded %s in %.1f s", info, info.Seconds)
	return info, f.Close()
}

// genLog generates a linearizable history with pmlin gen's simulation:
// ops operations, or, with ops 0, about minBytes.
func (o *Options) genLog(minBytes int64, ops, procs int) (LogInfo, error) {
	info := LogInfo{Source: "gen", Procs: procs, Words: logWords, K: o.k(), temp: !o.Keep}
	cfg := histgen.LargeConfig{Ops: ops, Procs: procs, Words: logWords, K: info.K, ReadFraction: 0.5}
	if ops == 0 {
		// Bytes per operation, from a sample.
		cfg.Ops = 20_000
		cw := &countWriter{w: io.Discard}
		if _, err := histgen.WriteLarge(cw, cfg, o.seed()); err != nil {
			return info, err
		}
		cfg.Ops = int(float64(minBytes)/(float64(cw.n)/20_000)*1.02) + 1000
	}
	info.Path = filepath.Join(o.work(), fmt.Sprintf("pmlin-bench-gen-p%d-k%d-n%d-%d.hist", procs, info.K, cfg.Ops, os.Getpid()))
	f, err := os.Create(info.Path)
	if err != nil {
		return info, err
	}
	defer f.Close()
	start := time.Now()
	bw := bufio.NewWriterSize(f, 1<<20)
	st, err := histgen.WriteLarge(bw, cfg, o.seed())
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return info, err
	}
	info.Bytes, info.Ops, info.Seconds = st.Bytes, st.Ops, time.Since(start).Seconds()
	return info, f.Close()
}

// remove deletes a history the suite made (not the user's).
func (l LogInfo) remove() {
	if l.temp {
		os.Remove(l.Path)
	}
}
