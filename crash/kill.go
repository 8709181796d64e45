package crash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	mmap "github.com/edsrzf/mmap-go"

	"github.com/pmlin/pmlin/analyzer"
	"github.com/pmlin/pmlin/driver"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/pmem"
)

// KillConfig configures the process-kill mode: each segment of a run is
// worked by a child process on a MAP_SHARED region file, and killed with
// SIGKILL at a random point of its progress.
type KillConfig struct {
	// Command returns the command that runs ChildMain with the given spec
	// in a new process: pmlin re-executes itself with a hidden subcommand,
	// tests re-execute the test binary.
	Command func(spec string) *exec.Cmd
	// Dir holds the region and log files; "" means a temporary directory,
	// removed after the run.
	Dir string
	// RoundTimeout bounds one child process (default DefaultRoundTimeout);
	// a child still running then is killed and reported stuck.
	RoundTimeout time.Duration
	// Async: the parent kills the child when its logs reach a random
	// size, at whatever point its threads are then (the kill lands between
	// operations more often than not: a child runs a few thousand
	// operations in a millisecond). Otherwise the child kills itself with
	// SIGKILL at a seeded random region access of a seeded thread, so the
	// kill lands inside an operation, and the other threads stop wherever
	// they are.
	Async bool
}

// childSpec is what a child process is told.
type childSpec struct {
	Region  string        `json:"region"`
	Log     string        `json:"log"`
	Driver  driver.Config `json:"driver"`
	MwCAS   mwcas.Config  `json:"mwcas"`
	Ops     []int         `json:"ops"` // per worker
	TagBase uint64        `json:"tag_base"`
	// KillWorker's KillAccess-th region access kills the process (0: no).
	KillWorker int   `json:"kill_worker"`
	KillAccess int64 `json:"kill_access"`
}

// childReport is the child's last line on standard output.
type childReport struct {
	StuckWorker  int    `json:"stuck_worker"`
	Stuck        string `json:"stuck,omitempty"`
	FailedWorker int    `json:"failed_worker"`
	Failed       string `json:"failed,omitempty"`
}

// childReady is the line a child prints when it starts its operations.
const childReady = "ready"

// ChildMain is the body of a child process of the process-kill mode: it
// opens the region file named by spec, recovers it, runs its segment
// (free scheduler) logging into the shared log file, and reports on out.
// It returns the process's exit status.
func ChildMain(ctx context.Context, spec string, out io.Writer) int {
	var s childSpec
	fail := func(err error) int {
		b, _ := json.Marshal(childReport{Failed: err.Error(), FailedWorker: -1, StuckWorker: -1})
		fmt.Fprintln(out, string(b))
		return 3
	}
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return fail(fmt.Errorf("bad spec: %w", err))
	}
	r, err := pmem.Open(s.Region, pmem.Options{})
	if err != nil {
		return fail(err)
	}
	defer r.Close()
	m, _, err := mwcas.Recover(r, s.MwCAS)
	if err != nil {
		return fail(err)
	}
	mem, unmap, err := mapLog(s.Log)
	if err != nil {
		return fail(err)
	}
	defer unmap()
	dc := s.Driver
	dc.Sched = driver.Free
	d, err := driver.New(dc, m, r, driver.NewRecorder(history.NewWriter(io.Discard)))
	if err != nil {
		return fail(err)
	}
	if err := d.UseSharedLogs(mem); err != nil {
		return fail(err)
	}
	d.SetTagBase(s.TagBase)
	if len(s.Ops) != dc.Threads {
		return fail(fmt.Errorf("bad spec: %d quotas for %d threads", len(s.Ops), dc.Threads))
	}
	cp := driver.CrashPoint{Access: s.KillAccess, Worker: s.KillWorker, Action: func() {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		for {
			time.Sleep(time.Second)
		}
	}}
	fmt.Fprintln(out, childReady)
	seg, err := d.Segment(ctx, s.Ops, cp)
	if err != nil {
		return fail(err)
	}
	rep := childReport{StuckWorker: -1, FailedWorker: -1}
	if seg.Stuck != nil {
		rep.Stuck = seg.Stuck.String()
		rep.StuckWorker = int(seg.Stuck.Proc)
	}
	if seg.Failed != nil {
		rep.Failed = seg.Failed.Err.Error()
		rep.FailedWorker = int(seg.Failed.Proc)
	}
	b, _ := json.Marshal(rep)
	fmt.Fprintln(out, string(b))
	if rep.Stuck != "" || rep.Failed != "" {
		return 4
	}
	return 0
}

// mapLog maps a shared log file.
func mapLog(path string) ([]uint64, func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	mm, err := mmap.Map(f, mmap.RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	if len(mm)%8 != 0 || len(mm) == 0 {
		mm.Unmap()
		return nil, nil, fmt.Errorf("%s: %d bytes is not a log", path, len(mm))
	}
	mem := unsafe.Slice((*uint64)(unsafe.Pointer(&mm[0])), len(mm)/8)
	return mem, func() { mm.Unmap() }, nil
}

// runKill is Run in the process-kill mode.
func runKill(ctx context.Context, c Config, w io.Writer) (res *Result, err error) {
	kc := c.Kill
	if kc.Command == nil {
		return nil, errors.New("crash: process-kill mode without a command to start a child")
	}
	dir := kc.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "pmlin-kill-*"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	mc := c.mwcasConfig()
	n, err := mwcas.RegionWords(mc)
	if err != nil {
		return nil, err
	}
	regionPath := filepath.Join(dir, fmt.Sprintf("region-%d.pmem", c.Driver.Seed))
	os.Remove(regionPath)
	r, err := pmem.Create(regionPath, n, pmem.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := mwcas.New(r, mc); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	defer os.Remove(regionPath)

	threads, k := c.Driver.Threads, c.Driver.K
	rem := split(c.Ops, threads)
	maxQuota := rem[0] + 1 // the most any round may be given
	logPath := filepath.Join(dir, fmt.Sprintf("log-%d", c.Driver.Seed))
	logWords := driver.SharedLogWords(threads, k, maxQuota)
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		return nil, err
	}
	defer os.Remove(logPath)
	if err := os.Truncate(logPath, int64(logWords)*8); err != nil {
		return nil, err
	}
	mem, unmap, err := mapLog(logPath)
	if err != nil {
		return nil, err
	}
	defer unmap()

	rec := driver.NewRecorder(history.NewWriter(w))
	rec.Header()
	rec.Comment("pmlin run " + c.Flags())
	rec.Comment("process-kill mode: the kills depend on timing, so this history does not replay byte for byte")
	res = &Result{Seed: c.Driver.Seed}
	rn := newRNGs(c.Driver.Seed)
	pids := make([]int32, threads)
	for i := range pids {
		pids[i] = int32(i)
	}
	reader := int32(threads)
	var tagBase uint64
	for round := 0; round <= c.Crashes; round++ {
		last := round == c.Crashes
		quota := make([]int, threads)
		total := 0
		for i := range rem {
			quota[i] = ceilDiv(rem[i], c.Crashes+1-round)
			total += quota[i]
		}
		if err := driver.LayoutSharedLogs(mem, threads, k, maxQuota); err != nil {
			return res, err
		}
		dc := c.Driver
		dc.Seed = RunSeed(c.Driver.Seed, int64(round))
		dc.Sched = driver.Free
		spec := childSpec{Region: regionPath, Log: logPath, Driver: dc, MwCAS: mc, Ops: quota, TagBase: tagBase}
		killAt := int64(-1)
		switch {
		case last:
		case kc.Async:
			// When the child has logged a uniformly random share of the
			// words its quota takes.
			killAt = 1 + rn.crash.Int64N(max(1, int64(total*(4+2*k))))
		default:
			spec.KillWorker = rn.crash.IntN(threads)
			spec.KillAccess = 1 + rn.crash.Int64N(max(1, int64(quota[spec.KillWorker]*(8+6*k))))
		}
		specJSON, _ := json.Marshal(spec)
		out, err := runChild(ctx, kc, string(specJSON), mem, threads, killAt)
		if err != nil {
			return res, err
		}
		logs, err := driver.ReadSharedLogs(mem, threads)
		if err != nil {
			return res, err
		}
		ms, err := rec.MergeLogs(logs, pids, k)
		if err != nil {
			return res, err
		}
		res.add(ms)
		for i := range rem {
			rem[i] = max(0, rem[i]-int(ms.InvokedBy[i]))
		}
		for _, t := range ms.MaxTag {
			tagBase = max(tagBase, t)
		}
		if a := out.anomaly(ms); a != nil {
			res.Anomalies = append(res.Anomalies, *a)
			break
		}
		if ctx.Err() != nil {
			res.Canceled = true
			break
		}
		// Every round but the last ends with a crash: the kill, or, if the
		// child finished its quota before its kill point, a clean stop and
		// a restart, recorded as a crash all the same.
		var crashLine int64
		if out.killed || !last {
			crashLine = rec.Crash()
			res.Crashes++
			how := "finished its quota before its kill point"
			switch {
			case out.killed && kc.Async:
				how = fmt.Sprintf("was killed with SIGKILL by its parent after logging %d words", out.progress)
			case out.killed:
				how = fmt.Sprintf("killed itself with SIGKILL at region access %d of thread %d", spec.KillAccess, spec.KillWorker)
			}
			rec.Comment(fmt.Sprintf("crash %d: the child process %s", res.Crashes, how))
		}
		r, err := pmem.Open(regionPath, pmem.Options{})
		if err != nil {
			return res, err
		}
		_, stats, rerr := mwcas.Recover(r, mc)
		if rerr != nil {
			r.Close()
			res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: Corrupt, Ops: []int64{}, Words: []uint64{},
				Explanation: fmt.Sprintf("recovery after the crash at line %d failed: %v", crashLine, rerr)})
			break
		}
		if crashLine > 0 {
			rec.Comment(fmt.Sprintf("recovery: %d words rolled forward, %d rolled back, %d RDCSS undone, %d dirty bits cleared, %d descriptors freed",
				stats.RolledForward, stats.RolledBack, stats.RDCSSUndone, stats.DirtyCleared, stats.Descriptors))
		}
		addrs, vals, err := rawRead(r, c.Driver.Words)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return res, err
		}
		rec.Read(reader, addrs, vals)
		if last {
			break
		}
	}
	res.Lines = rec.Lines()
	return res, rec.Flush()
}

// childOutcome is how a child process ended.
type childOutcome struct {
	killed   bool  // by SIGKILL at the kill point
	timedOut bool  // killed at the round timeout
	progress int64 // log words committed when it ended
	code     int
	report   childReport
	stderr   string
}

// anomaly turns a child's stuck or failed report into an anomaly.
func (o *childOutcome) anomaly(ms driver.MergeStats) *analyzer.Anomaly {
	line := func(w int) []int64 {
		if w >= 0 && w < len(ms.LastInv) && ms.LastInv[w] > 0 {
			return []int64{ms.LastInv[w]}
		}
		return []int64{}
	}
	switch {
	case o.report.Stuck != "":
		return &analyzer.Anomaly{Kind: Stuck, Ops: line(o.report.StuckWorker), Words: []uint64{}, Explanation: "in the child process: " + o.report.Stuck}
	case o.report.Failed != "":
		return &analyzer.Anomaly{Kind: Corrupt, Ops: line(o.report.FailedWorker), Words: []uint64{}, Explanation: "in the child process: " + o.report.Failed}
	case o.timedOut:
		var ops []int64
		for w, p := range ms.Pending {
			if p {
				ops = append(ops, ms.LastInv[w])
			}
		}
		return &analyzer.Anomaly{Kind: Stuck, Ops: append([]int64{}, ops...), Words: []uint64{},
			Explanation: "the child process did not finish its segment in time; its pending operations made no progress"}
	case !o.killed && o.code != 0:
		return &analyzer.Anomaly{Kind: Corrupt, Ops: []int64{}, Words: []uint64{},
			Explanation: fmt.Sprintf("the child process exited with status %d: %s", o.code, strings.TrimSpace(o.stderr))}
	}
	return nil
}

// runChild starts a child, kills it once its logs hold killAt words (never
// if killAt < 0), and waits for it.
func runChild(ctx context.Context, kc *KillConfig, spec string, mem []uint64, threads int, killAt int64) (*childOutcome, error) {
	cmd := kc.Command(spec)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("crash: start the child process: %w", err)
	}
	o := &childOutcome{}
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	exited := make(chan error, 1)
	kill := func() { cmd.Process.Signal(syscall.SIGKILL) }
	deadline := time.NewTimer(kc.RoundTimeout)
	defer deadline.Stop()
	// Wait until ready.
	ready := false
	for !ready {
		select {
		case l, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				return nil, fmt.Errorf("crash: the child process ended before it was ready (%v): %s", err, strings.TrimSpace(stderr.String()))
			}
			ready = l == childReady
		case <-deadline.C:
			kill()
			cmd.Wait()
			return nil, fmt.Errorf("crash: the child process was not ready within %v", kc.RoundTimeout)
		case <-ctx.Done():
			kill()
			cmd.Wait()
			return nil, ctx.Err()
		}
	}
	var last string
	go func() {
		for l := range lines {
			last = l
		}
		exited <- cmd.Wait()
	}()
	tick := time.NewTicker(100 * time.Microsecond)
	defer tick.Stop()
	var werr error
	ctxDone := ctx.Done()
wait:
	for {
		select {
		case werr = <-exited:
			break wait
		case <-tick.C:
			if killAt >= 0 && !o.killed && driver.SharedLogEvents(mem, threads) >= killAt {
				o.progress = driver.SharedLogEvents(mem, threads)
				kill()
				o.killed = true
			}
		case <-deadline.C:
			kill()
			o.timedOut = true
		case <-ctxDone:
			kill()
			ctxDone = nil
		}
	}
	if o.progress == 0 {
		o.progress = driver.SharedLogEvents(mem, threads)
	}
	o.stderr = stderr.String()
	var ee *exec.ExitError
	o.killed = false
	if errors.As(werr, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			o.code = -1
			o.killed = st.Signal() == syscall.SIGKILL && !o.timedOut
		} else {
			o.code = ee.ExitCode()
		}
	} else if werr != nil {
		return nil, werr
	}
	if last != "" && strings.HasPrefix(last, "{") {
		json.Unmarshal([]byte(last), &o.report)
	}
	return o, nil
}
