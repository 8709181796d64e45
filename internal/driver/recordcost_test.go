package driver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pmlin/pmlin/internal/directio"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/mwcas"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// BenchmarkSide runs one side of pmlin bench logging at a time (no
// recorder, or a binary history written with direct I/O to a file in the
// test's temporary directory, as pmlin run -o writes it), so that each
// side can be profiled alone (-cpuprofile) and compared in CPU time per
// operation (cpu-ns/op: the process's user and system time, every
// goroutine, over the operations), which a loaded machine changes much
// less than the wall-clock time, and the segments' ends (end-ns/op: what
// the driver does after the workers stop, SegmentResult.Merge). One
// operation of b.N is one operation of the workload, in segments of 100k
// as pmlin bench logging runs them. The other sides split the binary
// side's cost, each adding one part of it to the one before:
//   - stamps: unrecorded, but each worker reads the clock as a recording
//     one does (the timestamps alone);
//   - discard: the binary history recorded into a writer that drops it
//     (the timestamps, the records and their hand-over: no copy, no disk);
//   - copy: into one that copies it into memory and keeps nothing (all
//     but the disk);
//   - quarter: to the direct-I/O file, but only the first quarter of each
//     piece handed to it (the file is no history): what a format of a
//     quarter of the bytes could save of the disk's cost, at most;
//   - pagecache: the binary history written through the page cache (an
//     os.File behind a 1 MiB bufio.Writer) instead of with direct I/O,
//     synced to the disk at the end (in close-ns/op).
//
// busy is the cores' use while the segments run (their CPU time over the
// wall-clock time of every P; the history's last writes and the file's
// closing, after them, are close-ns/op): a side whose cost is cores
// standing idle, not CPU time, shows there. The host's noise moves the
// unrecorded side alone by half between runs minutes apart: compare the
// sides round by round, interleaved, and take medians.
func BenchmarkSide(b *testing.B) {
	for _, side := range []string{"plain", "stamps", "discard", "copy", "quarter", "binary", "pagecache"} {
		for _, threads := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("side=%s/threads=%d", side, threads), func(b *testing.B) {
				benchSide(b, side, threads)
			})
		}
	}
}

func benchSide(b *testing.B, side string, threads int) {
	mc := mwcas.Config{Words: sideWords, MaxWorkers: threads}
	n, err := mwcas.RegionWords(mc)
	if err != nil {
		b.Fatal(err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: os.Getenv("PMLIN_BENCH_EMULATE") != ""})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	m, err := mwcas.New(r, mc)
	if err != nil {
		b.Fatal(err)
	}
	runSide(b, side, threads, mwcas.AsTarget(m), record.ClockAuto)
}

// sideWords is the words of the recording benchmarks' workload.
const sideWords = 1000

// runSide runs the driver's workload (free scheduler, 1000 words, k = 3)
// on ops, b.N operations in segments of 100k, as side says (see
// BenchmarkSide). It reports the process's CPU
// time per operation, the segments' ends, the closing and how busy the
// cores were.
func runSide(b *testing.B, side string, threads int, ops target.Ops, clock record.ClockSource) {
	c := cfg(threads, sideWords, 3, 1)
	c.Sched = Free
	var sink io.Writer // the binary history's, if recorded
	var closers []func() error
	switch side {
	case "plain", "stamps":
	case "discard":
		sink = io.Discard
	case "copy":
		sink = &copySink{buf: make([]byte, 6<<20)}
	case "binary", "quarter":
		f, err := directio.Create(filepath.Join(b.TempDir(), "h.bin"), 0o600)
		if err != nil {
			b.Fatal(err)
		}
		sink, closers = f, append(closers, f.Close)
		if side == "quarter" {
			sink = quarterSink{f}
		}
	case "pagecache":
		f, err := os.Create(filepath.Join(b.TempDir(), "h.bin"))
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		sink, closers = bw, append(closers, bw.Flush, f.Sync, f.Close)
	default:
		b.Fatalf("unknown side %q", side)
	}
	var rec *record.Recorder
	if sink != nil {
		rec = record.NewBinaryRecorder(history.NewBinaryWriter(sink))
		rec.Header()
	}
	d, err := New(c, ops, nil, rec)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.SetClock(clock); err != nil {
		b.Fatal(err)
	}
	d.alwaysStamp = side == "stamps"
	q := make([]int, threads)
	var merge time.Duration // the segments' ends, after their workers
	cpu0 := benchCPU()
	b.ResetTimer()
	start := time.Now()
	for left := b.N; left > 0; {
		per := min(max(1, left/threads), 100_000/threads)
		for i := range q {
			q[i] = per
		}
		left -= per * threads
		res, err := d.Segment(context.Background(), q, CrashPoint{})
		if err != nil {
			b.Fatal(err)
		}
		merge += res.Merge
	}
	segWall, segCPU := time.Since(start), benchCPU()-cpu0
	closeStart := time.Now()
	if rec != nil {
		if err := rec.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	for _, closeFn := range closers {
		if err := closeFn(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(benchCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(merge)/float64(b.N), "end-ns/op")
	b.ReportMetric(float64(time.Since(closeStart))/float64(b.N), "close-ns/op")
	// busy is the cores' use while the segments ran: their CPU time over
	// the wall-clock time of every P (1: no P stood idle).
	b.ReportMetric(float64(segCPU)/float64(segWall)/float64(runtime.GOMAXPROCS(0)), "busy")
}

func benchCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecordPath is what recording costs a free worker per operation
// with the primitive taken out: the driver's workload on a target that
// does nothing (nullOps), unrecorded (plain) and recorded as a binary
// history written with direct I/O to a file in the test's temporary
// directory (binary) or handed to a writer that drops it (discard: no
// copy into the file's buffer, no write), or not recorded but stamped
// (stamps: each operation reads the clock as a recording would), with the
// clock the free scheduler takes at more than one worker (the TSC where usable, else the monotonic clock; one
// worker would count). The difference of the two sides' cpu-ns/op (the
// process's CPU time, every goroutine: workers, dumper, writer, system
// calls) is the recording's cost in absolute terms, free of the PMwCAS's
// contention, which a loaded machine changes far less than the
// overhead's ratio; take the least of several runs (-count).
func BenchmarkRecordPath(b *testing.B) {
	for _, side := range []string{"plain", "stamps", "discard", "binary"} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("side=%s/threads=%d", side, threads), func(b *testing.B) {
				benchRecordPath(b, side, threads)
			})
		}
	}
}

func benchRecordPath(b *testing.B, side string, threads int) {
	clock := record.ClockMonotonic
	if ok, _ := record.TSCUsable(); ok {
		clock = record.ClockTSC
	}
	runSide(b, side, threads, nullOps{}, clock)
}

// nullOps is a target that does nothing: every cas succeeds, every read
// returns zeros (BenchmarkRecordPath: the driver's own cost).
type nullOps struct{}

func (nullOps) CAS(int, []target.Word) (bool, uint64, error) { return true, 0, nil }

func (nullOps) Read(_ int, addrs, out []uint64) error {
	clear(out[:len(addrs)])
	return nil
}

// copySink copies what it is given into a buffer of the size of a
// directio.File's (over and over) and keeps nothing: the copy a history
// written to a file costs, without the disk.
type copySink struct {
	buf []byte
	n   int
}

func (c *copySink) Write(p []byte) (int, error) {
	for q := p; len(q) > 0; {
		if c.n == len(c.buf) {
			c.n = 0
		}
		k := copy(c.buf[c.n:], q)
		c.n += k
		q = q[k:]
	}
	return len(p), nil
}

// quarterSink passes the first quarter of each piece it is given on to w
// and drops the rest (BenchmarkSide's quarter side).
type quarterSink struct{ w io.Writer }

func (q quarterSink) Write(p []byte) (int, error) {
	if _, err := q.w.Write(p[:len(p)/4]); err != nil {
		return 0, err
	}
	return len(p), nil
}
