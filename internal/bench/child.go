package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
	"golang.org/x/sys/unix"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/porcmodel"
)

// Statuses of a measurement.
const (
	StatusOK      = "ok"
	StatusTimeout = "timeout"
	StatusOOM     = "oom"
	StatusError   = "error"
	// StatusSkipped: not run, because a smaller size already timed out or
	// ran out of memory (porcupine, unless Options.NoSkip).
	StatusSkipped = "skipped"
)

// limits bound a child measurement.
type limits struct {
	timeout    time.Duration
	mem        int64 // resident bytes
	gomaxprocs int   // 0: inherit
}

// childRun is how a child measurement went.
type childRun struct {
	Status  string
	Wall    float64 // seconds, the whole process
	PeakRSS int64   // bytes: the child's own VmHWM, or the most seen
	Err     string
}

// asSlack is added to the memory limit for the child's address-space
// limit, a backstop behind the resident-memory watch: the Go runtime
// reserves about 1 GB of address space it never touches.
const asSlack = 2 << 30

// runChild runs ChildMain(args) in a child process under lim and decodes
// the last line of its standard output into out.
func (o *Options) runChild(ctx context.Context, lim limits, out any, args ...string) childRun {
	if o.Child == nil {
		return childRun{Status: StatusError, Err: "no child command (Options.Child)"}
	}
	cmd := o.Child(args)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	if lim.gomaxprocs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(lim.gomaxprocs))
	}
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return childRun{Status: StatusError, Err: err.Error()}
	}
	pid := cmd.Process.Pid
	if lim.mem > 0 {
		as := uint64(lim.mem) + asSlack
		unix.Prlimit(pid, unix.RLIMIT_AS, &unix.Rlimit{Cur: as, Max: as}, nil)
	}
	var (
		mu                sync.Mutex
		overMem, overTime bool
		ctxErr            error
		polled            int64 // the largest resident size seen
		done              = make(chan struct{})
		watcherFinished   = make(chan struct{})
		deadline          <-chan time.Time
	)
	if lim.timeout > 0 {
		t := time.NewTimer(lim.timeout)
		defer t.Stop()
		deadline = t.C
	}
	go func() {
		defer close(watcherFinished)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-deadline:
				mu.Lock()
				overTime = true
				mu.Unlock()
				cmd.Process.Kill()
				return
			case <-ctx.Done():
				mu.Lock()
				ctxErr = ctx.Err()
				mu.Unlock()
				cmd.Process.Kill()
				return
			case <-tick.C:
				rss := residentBytes(pid)
				mu.Lock()
				polled = max(polled, rss)
				mu.Unlock()
				if lim.mem > 0 && rss > lim.mem {
					mu.Lock()
					overMem = true
					mu.Unlock()
					cmd.Process.Kill()
					return
				}
			}
		}
	}()
	werr := cmd.Wait()
	close(done)
	<-watcherFinished
	r := childRun{Wall: time.Since(start).Seconds(), PeakRSS: polled}
	errText := strings.TrimSpace(stderr.String())
	var env childEnvelope
	envErr := json.Unmarshal(lastLine(stdout.Bytes()), &env)
	if envErr == nil {
		r.PeakRSS = max(r.PeakRSS, env.VmHWM)
	}
	switch {
	case ctxErr != nil:
		r.Status, r.Err = StatusError, ctxErr.Error()
	case overMem || (lim.mem > 0 && r.PeakRSS > lim.mem):
		r.Status = StatusOOM
		r.Err = fmt.Sprintf("resident memory above the limit of %s", mib(lim.mem))
	case overTime:
		r.Status = StatusTimeout
		r.Err = fmt.Sprintf("no result within %v: killed", lim.timeout)
	case werr == nil && out == nil:
		r.Status = StatusOK
	case werr == nil:
		r.Status = StatusOK
		if envErr == nil {
			envErr = json.Unmarshal(env.Result, out)
		}
		if envErr != nil {
			r.Status, r.Err = StatusError, fmt.Sprintf("child output: %v", envErr)
		}
	case strings.Contains(errText, "out of memory") || strings.Contains(errText, "cannot allocate memory") ||
		signaled(cmd.ProcessState, syscall.SIGKILL):
		// The runtime could not allocate under the address-space limit,
		// or the kernel's OOM killer struck.
		r.Status, r.Err = StatusOOM, firstLine(errText)
	default:
		r.Status, r.Err = StatusError, fmt.Sprintf("%v: %s", werr, firstLine(errText))
	}
	return r
}

// childEnvelope is the line a child prints: its measurement and its own
// peak resident memory. The peak comes from the child itself (VmHWM)
// because the kernel's rusage of a child is useless here: Go starts a
// child by vfork and exec, and Linux carries the parent's resident
// high-water mark into the child's ru_maxrss.
type childEnvelope struct {
	Result json.RawMessage `json:"result"`
	VmHWM  int64           `json:"vmhwm_bytes"`
}

// residentBytes is the resident memory of process pid (0 if unknown).
func residentBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// selfHWM is this process's peak resident memory (VmHWM).
func selfHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// bestOf runs a measurement reps times, each in a fresh child process (a
// warm heap left by an earlier repetition would flatter whoever allocates
// most), and returns the output and run with the least time as secs
// reports it; the peak RSS is the largest of the runs. A run that is not
// ok, or whose output final reports as final (nil: none), ends the series
// and is what is returned.
func bestOf[T any](ctx context.Context, o *Options, lim limits, reps int, secs func(*T) float64, final func(*T) bool, args ...string) (T, childRun) {
	var (
		best    T
		bestRun childRun
		peak    int64
	)
	for i := range max(reps, 1) {
		var out T
		r := o.runChild(ctx, lim, &out, args...)
		peak = max(peak, r.PeakRSS)
		if r.Status != StatusOK || (final != nil && final(&out)) {
			r.PeakRSS = peak
			return out, r
		}
		if i == 0 || secs(&out) < secs(&best) {
			best, bestRun = out, r
		}
	}
	bestRun.PeakRSS = peak
	return best, bestRun
}

func checkSecs(c *checkOut) float64 { return c.Seconds }
func hbSecs(h *hbOut) float64       { return h.Seconds }

func signaled(ps *os.ProcessState, sig syscall.Signal) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// tailBuffer keeps the first max bytes written (the runtime's fatal error
// comes first; goroutine dumps follow).
type tailBuffer struct {
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	if room := t.max - t.b.Len(); room > 0 {
		t.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return t.b.String() }

// Child outputs.

// checkOut is what `check` measures: the whole analyzer on a prefix.
type checkOut struct {
	Ops          int64               `json:"ops"`
	Processes    int                 `json:"processes"`
	Bytes        int64               `json:"bytes"`
	Edges        analyzer.EdgeCounts `json:"edges"`
	Linearizable bool                `json:"linearizable"`
	Seconds      float64             `json:"seconds"`
	Reps         []float64           `json:"reps"`
}

// hbOut is what `hb` measures: happens-before edges and a cycle check over
// them, with or without ReduceHB.
type hbOut struct {
	Ops   int64 `json:"ops"`
	Bytes int64 `json:"bytes"`
	Edges int64 `json:"edges"`
	// EdgesAll is the number of happens-before pairs, counted from lo
	// without materialising them.
	EdgesAll     int64   `json:"edges_all"`
	Visited      int64   `json:"visited"`
	Cyclic       bool    `json:"cyclic"`
	SecondsParse float64 `json:"seconds_parse"`
	SecondsBuild float64 `json:"seconds_build"`
	SecondsDFS   float64 `json:"seconds_dfs"`
	Seconds      float64 `json:"seconds"`
}

// porcOut is what `porcupine` measures: Porcupine on a whole history.
type porcOut struct {
	Ops        int64   `json:"ops"`
	Partitions int     `json:"partitions"`
	Result     string  `json:"result"` // ok, illegal, unknown (its own timeout)
	Seconds    float64 `json:"seconds"`
}

// ChildMain is the child process of a measurement (the pmlin binary's
// hidden `pmlin bench child` subcommand): it runs one measurement given by args
// and prints its result as one JSON line on stdout. It returns the exit
// status. Measurements:
//
//	check -file F [-bytes N] [-reps R]          pmlin's analyzer on the first N bytes (cut at a line end)
//	hb -file F [-bytes N] [-naive] [-reps R]    happens-before edges (ReduceHB, or all pairs) and a DFS
//	porcupine -file F [-timeout D] [-reps R]    Porcupine with the word-array model, partitioned
func ChildMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "bench child: want check, hb or porcupine")
		return 2
	}
	fs := flag.NewFlagSet("bench child "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("file", "", "history file")
	n := fs.Int64("bytes", 0, "prefix length (0: the whole file)")
	reps := fs.Int("reps", 1, "repetitions (the minimum is reported)")
	naive := fs.Bool("naive", false, "hb: all happens-before pairs instead of ReduceHB")
	timeout := fs.Duration("timeout", 0, "porcupine: its own timeout (0: none)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	var (
		out any
		err error
	)
	switch args[0] {
	case "check":
		out, err = childCheck(ctx, *file, *n, max(*reps, 1))
	case "hb":
		out, err = childHB(ctx, *file, *n, *naive, max(*reps, 1))
	case "porcupine":
		var best *porcOut
		for range max(*reps, 1) {
			var o *porcOut
			if o, err = childPorcupine(*file, *timeout); err != nil {
				break
			}
			if best == nil || o.Seconds < best.Seconds {
				best = o
			}
			if o.Result != "ok" {
				break
			}
		}
		out = best
	default:
		err = fmt.Errorf("unknown measurement %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench child:", err)
		return 1
	}
	res, _ := json.Marshal(out)
	b, _ := json.Marshal(childEnvelope{Result: res, VmHWM: selfHWM()})
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}

// openPrefix opens the first n bytes of path, cut after the last newline
// at or before n (n <= 0 or beyond the end: the whole file).
func openPrefix(path string, n int64) (*os.File, *io.SectionReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	size := st.Size()
	if n > 0 && n < size {
		size, err = prefixEnd(f, n)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	return f, io.NewSectionReader(f, 0, size), nil
}

// prefixEnd is the length of the longest prefix of at most n bytes that
// ends with a newline.
func prefixEnd(f io.ReaderAt, n int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := n; end > 0; {
		start := max(0, end-int64(len(buf)))
		m, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:m], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, fmt.Errorf("no complete line in the first %d bytes", n)
}

func childCheck(ctx context.Context, path string, n int64, reps int) (*checkOut, error) {
	out := &checkOut{}
	for range reps {
		f, sr, err := openPrefix(path, n)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		res, err := analyzer.Check(ctx, history.NewReader(bufio.NewReaderSize(sr, 1<<20), path, history.Options{}),
			analyzer.Options{SizeHint: sr.Size()})
		el := time.Since(start).Seconds()
		f.Close()
		if err != nil {
			return nil, err
		}
		out.Reps = append(out.Reps, el)
		if out.Seconds == 0 || el < out.Seconds {
			out.Seconds = el
		}
		out.Ops, out.Processes, out.Bytes = res.Operations, res.Processes, sr.Size()
		out.Edges, out.Linearizable = res.Edges, res.Linearizable
	}
	return out, nil
}

func childHB(ctx context.Context, path string, n int64, naive bool, reps int) (*hbOut, error) {
	var best *hbOut
	for range reps {
		f, sr, err := openPrefix(path, n)
		if err != nil {
			return nil, err
		}
		o, err := measureHB(ctx, bufio.NewReaderSize(sr, 1<<20), path, naive)
		f.Close()
		if err != nil {
			return nil, err
		}
		o.Bytes = sr.Size()
		if best == nil || o.Seconds < best.Seconds {
			best = o
		}
	}
	return best, nil
}

func childPorcupine(path string, timeout time.Duration) (*porcOut, error) {
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	h, err := history.ReadAll(bufio.NewReaderSize(f, 1<<20), path)
	f.Close()
	if err != nil {
		return nil, err
	}
	ops, ok := porcmodel.Operations(h, history.Strict)
	if !ok {
		return nil, fmt.Errorf("%s: Porcupine cannot express this history's constraints", path)
	}
	res := porcupine.CheckOperationsTimeout(porcmodel.Model(h.InitValue), ops, timeout)
	out := &porcOut{Ops: int64(len(h.Ops)), Seconds: time.Since(start).Seconds()}
	out.Partitions = len(porcmodel.Partition(ops))
	switch res {
	case porcupine.Ok:
		out.Result = "ok"
	case porcupine.Illegal:
		out.Result = "illegal"
	default:
		out.Result = "unknown"
	}
	return out, nil
}
