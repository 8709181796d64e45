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
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	mmap "github.com/edsrzf/mmap-go"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// childSpec is what a child process is told.
type childSpec struct {
	Region string        `json:"region"`
	Log    string        `json:"log"`
	Driver driver.Config `json:"driver"`
	// Target is the name of the target, which the child (the same program)
	// has too, and TargetConfig its configuration.
	Target       string        `json:"target"`
	TargetConfig target.Config `json:"target_config"`
	Ops          []int         `json:"ops"` // per worker
	TagBase      uint64        `json:"tag_base"`
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

// ChildMain is the body of a child process of the process-kill modes: it
// opens the region file named by spec, opens and recovers the target on
// it (found by name among targets: the child is the program that started
// it, with the same targets), runs its segment (free scheduler) logging
// into the shared log file, and reports on out. It returns the process's
// exit status.
func ChildMain(ctx context.Context, spec string, out io.Writer, targets []*target.Target) int {
	var s childSpec
	fail := func(err error) int {
		b, _ := json.Marshal(childReport{Failed: err.Error(), FailedWorker: -1, StuckWorker: -1})
		fmt.Fprintln(out, string(b))
		return 3
	}
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return fail(fmt.Errorf("bad spec: %w", err))
	}
	t, err := FindTarget(targets, s.Target)
	if err != nil {
		return fail(fmt.Errorf("the child process is not the program that started it: %w", err))
	}
	r, err := pmem.Open(s.Region, pmem.Options{})
	if err != nil {
		return fail(err)
	}
	defer r.Close()
	var in target.Instance
	var obj target.Object
	if t.Model != "" {
		obj, err = t.OpenObject(r, s.TargetConfig)
		if err == nil {
			_, err = obj.Recover(0)
		}
	} else {
		in, err = t.Open(r, s.TargetConfig)
		if err == nil {
			_, err = in.Recover(0)
		}
	}
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
	rec := record.NewRecorder(history.NewWriter(io.Discard)) // the logs are the parent's to merge
	var d *driver.Driver
	if obj != nil {
		var w *driver.ObjectWorkload
		w, err = driver.NewObjectWorkload(t.Name, t.Model, t.Mix, s.TargetConfig.Keys)
		if err == nil {
			err = rec.SetObject(w)
		}
		if err == nil {
			d, err = driver.NewObject(dc, w, obj, r, rec)
		}
	} else {
		d, err = driver.New(dc, in, r, rec)
	}
	if err != nil {
		return fail(err)
	}
	if err := d.UseSharedLogs(mem); err != nil {
		return fail(err)
	}
	d.SetTagBase(s.TagBase)
	d.SetObjectTagBase(s.TagBase)
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

// killer runs each segment of a run in a child process on a MAP_SHARED
// region file, logging into a shared file mapping, and kills it with
// SIGKILL: the child itself at a seeded region access (Kill), or the
// parent when the logs reach a random size (KillAsync). The page cache
// survives a kill, so the image is the file as the child left it.
type killer struct {
	c           Config
	rec         *record.Recorder
	rn          rngs
	tc          target.Config
	region, log string
	mem         []uint64
	maxQuota    int // the most any round may be given
	pids        []int32
	round       int
	tagBase     uint64 // the largest tag counter used so far
	cleanup     []func()
	lastSpec    childSpec     // the last segment's child
	lastOut     *childOutcome // and how it ended
	tag         driver.Tag    // the goroutine of guarded calls
}

func newKiller(c Config, rec *record.Recorder) (*killer, error) {
	tc, err := c.targetConfig()
	if err != nil {
		return nil, err
	}
	k := &killer{c: c, rec: rec, rn: newRNGs(c.Driver.Seed), tc: tc}
	k.tag = driver.NewTag(fmt.Sprintf("run %p", k))
	if err := k.makeFiles(); err != nil {
		k.close()
		return nil, err
	}
	k.pids = make([]int32, c.Driver.Threads)
	for i := range k.pids {
		k.pids[i] = int32(i)
	}
	return k, nil
}

// makeFiles makes the region file, with a new instance of the target in
// it, and the shared log file, mapped; close removes them.
func (k *killer) makeFiles() error {
	c := k.c
	dir := c.Child.Dir
	if dir == "" {
		removeDeadKillDirs(os.TempDir())
		d, lock, err := makeKillDir(os.TempDir())
		if err != nil {
			return err
		}
		dir = d
		k.cleanup = append(k.cleanup, func() { os.RemoveAll(dir); lock.Close() })
	}
	if err := k.createRegion(dir); err != nil {
		return err
	}
	threads := c.Driver.Threads
	k.maxQuota = split(c.Ops, threads)[0] + 1
	k.log = filepath.Join(dir, fmt.Sprintf("log-%d", c.Driver.Seed))
	if err := os.WriteFile(k.log, nil, 0o644); err != nil {
		return err
	}
	k.cleanup = append(k.cleanup, func() { os.Remove(k.log) })
	if err := os.Truncate(k.log, int64(record.SharedLogWords(threads, c.logK(), k.maxQuota))*8); err != nil {
		return err
	}
	mem, unmap, err := mapLog(k.log)
	if err != nil {
		return err
	}
	k.mem = mem
	k.cleanup = append(k.cleanup, unmap)
	return nil
}

// A run of the process-kill modes keeps its region and log files in a
// directory of its own, pmlin-kill-*, under the temporary directory, and
// removes it at the end; a run killed itself (SIGKILL, the machine's
// OOM killer) cannot. So the directory holds a lock file, locked
// (flock) for as long as its owner lives: the kernel releases the lock
// when the owner dies, however it dies, and the next run of the
// process-kill modes removes the directories whose lock it can take,
// never those of a live run (another campaign on the same machine). A
// directory without the lock file is left alone: a run is making it
// (below), or an older pmlin made it.
const (
	killDirPattern = "pmlin-kill-*"
	killLock       = "lock"
)

// makeKillDir makes a run's directory under parent, and its lock file,
// locked: the lock lasts until the file is closed, or the process exits.
// The lock file is locked before it gets its name, so no other run can
// take the lock of a directory in use.
func makeKillDir(parent string) (string, *os.File, error) {
	dir, err := os.MkdirTemp(parent, killDirPattern)
	if err != nil {
		return "", nil, err
	}
	f, err := os.CreateTemp(dir, killLock+"-*")
	if err == nil {
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			err = os.Rename(f.Name(), filepath.Join(dir, killLock))
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, f, nil
}

// removeDeadKillDirs removes the run directories under parent whose
// owner is dead (see makeKillDir).
func removeDeadKillDirs(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, killDirPattern))
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, killLock))
		if err != nil {
			continue // no lock file: in the making, or an older pmlin's
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}

// createRegion creates the region file with a new instance of the target
// in it.
func (k *killer) createRegion(dir string) error {
	t := k.c.Target
	n, err := t.Size(k.tc)
	if err != nil {
		return fmt.Errorf("target %s: %w", t.Name, err)
	}
	k.region = filepath.Join(dir, fmt.Sprintf("region-%d.pmem", k.c.Driver.Seed))
	os.Remove(k.region)
	r, err := pmem.Create(k.region, n, pmem.Options{})
	if err != nil {
		return err
	}
	k.cleanup = append(k.cleanup, func() { os.Remove(k.region) })
	if k.c.isObject() {
		_, err = t.NewObject(r, k.tc)
	} else {
		_, err = t.New(r, k.tc)
	}
	if err != nil {
		r.Close()
		return fmt.Errorf("target %s: new: %w", t.Name, err)
	}
	return r.Close()
}

// close removes the files, in the reverse order of their making.
func (k *killer) close() {
	for i := len(k.cleanup) - 1; i >= 0; i-- {
		k.cleanup[i]()
	}
	k.cleanup = nil
}

func (k *killer) segment(ctx context.Context, quota []int, last bool) (segment, error) {
	c, threads, kk := k.c, k.c.Driver.Threads, k.c.logK()
	if err := record.LayoutSharedLogs(k.mem, threads, kk, k.maxQuota); err != nil {
		return segment{}, err
	}
	dc := c.Driver
	dc.Seed = RunSeed(c.Driver.Seed, int64(k.round))
	dc.Sched = driver.Free
	k.round++
	spec := childSpec{Region: k.region, Log: k.log, Driver: dc, Target: c.Target.Name, TargetConfig: k.tc, Ops: quota, TagBase: k.tagBase}
	killAt := int64(-1)
	switch {
	case last:
	case c.CrashMode == KillAsync:
		// When the child has logged a uniformly random share of the
		// words its quota takes.
		total := 0
		for _, q := range quota {
			total += q
		}
		killAt = 1 + k.rn.crash.Int64N(max(1, int64(total*(4+2*kk))))
	default:
		spec.KillWorker = k.rn.crash.IntN(threads)
		spec.KillAccess = 1 + k.rn.crash.Int64N(max(1, int64(quota[spec.KillWorker]*(8+6*kk))))
	}
	specJSON, _ := json.Marshal(spec)
	out, err := runChild(ctx, c.Child, string(specJSON), k.mem, threads, killAt)
	if err != nil {
		return segment{}, err
	}
	logs, err := record.ReadSharedLogs(k.mem, threads)
	if err != nil {
		return segment{}, err
	}
	ms, err := k.rec.MergeLogs(logs, k.pids, kk)
	if err != nil {
		return segment{}, err
	}
	for _, t := range ms.MaxTag {
		k.tagBase = max(k.tagBase, t)
	}
	k.lastSpec, k.lastOut = spec, out
	return segment{MergeStats: ms, crashed: out.killed, anomaly: out.anomaly(ms)}, nil
}

// crash: the image is the region file as the child left it (a round whose
// child finished its quota before its kill point is a clean stop and a
// restart, recorded as a crash all the same).
func (k *killer) crash(segment) (string, error) {
	out, spec := k.lastOut, k.lastSpec
	how := "finished its quota before its kill point"
	switch {
	case out.killed && k.c.CrashMode == KillAsync:
		how = fmt.Sprintf("was killed with SIGKILL by its parent after logging %d words", out.progress)
	case out.killed:
		how = fmt.Sprintf("killed itself with SIGKILL at region access %d of thread %d", spec.KillAccess, spec.KillWorker)
	}
	return "the child process " + how, nil
}

// open opens the region file, and opens and recovers the target on it, as
// the next process would, then calls then (if not nil) on the recovered
// target; the target's code runs guarded (guard.go). An error is the
// run's (the file does not open); a target that does not open, recover or
// do what then does is a finding, in rv.err (rv.kind). The caller closes
// r unless it is nil.
func (k *killer) open(ctx context.Context, then func(*pmem.Region, target.Instance, target.Object) error) (r *pmem.Region, in target.Instance, obj target.Object, rv recovery, err error) {
	h := &callHook{bound: k.c.Driver.StuckAccesses}
	if r, err = pmem.Open(k.region, pmem.Options{Hook: h}); err != nil {
		return nil, nil, nil, rv, err
	}
	h.bound += 16 * int64(r.Words())
	// The stage is atomic and in and said are read only if the call
	// returned: an abandoned call's goroutine may still run.
	stages := [...]string{"open", "recovery", "read"}
	var stage atomic.Int32
	var said string
	var opened target.Instance
	var openedObj target.Object
	// The call reads the region through its own variable: r is a result,
	// which this function sets while an abandoned call may still run.
	reg := r
	rv.err = guarded(ctx, nil, k.tag, h, k.c.Driver.StuckAfter, func() (err error) {
		var recover func(int) (string, error)
		if k.c.isObject() {
			if openedObj, err = k.c.Target.OpenObject(reg, k.tc); err != nil {
				return err
			}
			recover = openedObj.Recover
		} else {
			if opened, err = k.c.Target.Open(reg, k.tc); err != nil {
				return err
			}
			recover = opened.Recover
		}
		stage.Store(1)
		if said, err = recover(0); err != nil || then == nil {
			return err
		}
		stage.Store(2)
		return then(reg, opened, openedObj)
	})
	if h.dead.Load() {
		// The call never returned: its goroutine may touch the region,
		// whose hook fails every access; it is left open.
		r = nil
	} else {
		r.SetHook(nil)
		in, obj, rv.said = opened, openedObj, said
	}
	if rv.err != nil {
		stage := stages[stage.Load()]
		if stuckCall(rv.err) {
			rv.kind = Stuck
		}
		rv.err = fmt.Errorf("%s: %w", stage, rv.err)
		if r != nil {
			r.Close()
		}
		return nil, nil, nil, rv, nil
	}
	return r, in, obj, rv, nil
}

func (k *killer) recover(ctx context.Context) (recovery, error) {
	if k.c.isObject() {
		return k.final(ctx)
	}
	r, in, _, rv, err := k.open(ctx, nil)
	if err != nil || rv.err != nil {
		return rv, err
	}
	rv.addrs, rv.vals, rv.err, err = rawRead(r, in, k.c.Driver.Words)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return rv, err
}

// final reads every word through the target that the last child left,
// opened and recovered as the next process would; a data structure's
// state, as after every recovery.
func (k *killer) final(ctx context.Context) (recovery, error) {
	if k.c.isObject() {
		var st []model.Value
		r, _, _, rv, err := k.open(ctx, func(r *pmem.Region, _ target.Instance, obj target.Object) error {
			var finding, err error
			st, finding, err = readState(r, obj)
			return errors.Join(finding, err)
		})
		if err != nil || rv.err != nil {
			return rv, err
		}
		rv.state = st
		return rv, r.Close()
	}
	addrs := allAddrs(k.c.Driver.Words)
	vals := make([]uint64, len(addrs))
	r, _, _, rv, err := k.open(ctx, func(_ *pmem.Region, in target.Instance, _ target.Object) error { return in.Read(0, addrs, vals) })
	if err != nil || rv.err != nil {
		return rv, err
	}
	rv.addrs, rv.vals = addrs, vals
	return rv, r.Close()
}

// childOutcome is how a child process ended.
type childOutcome struct {
	killed   bool  // by SIGKILL at the kill point
	timedOut bool  // killed at the round timeout
	unready  bool  // it ended before it was ready to run operations
	progress int64 // log words committed when it ended
	code     int
	report   childReport
	stderr   string
}

// anomaly turns a child's stuck or failed report into an anomaly.
func (o *childOutcome) anomaly(ms record.MergeStats) *analyzer.Anomaly {
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
	case o.unready && !o.timedOut:
		return &analyzer.Anomaly{Kind: Corrupt, Ops: []int64{}, Words: []uint64{},
			Explanation: fmt.Sprintf("the child process ended before it was ready to run operations (%s): %s", o.status(), childError(o.stderr))}
	case o.timedOut && o.unready:
		return &analyzer.Anomaly{Kind: Stuck, Ops: []int64{}, Words: []uint64{},
			Explanation: "the child process was not ready to run operations in time: opening or recovering the region did not end"}
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
			Explanation: fmt.Sprintf("the child process ended (%s): %s", o.status(), childError(o.stderr))}
	}
	return nil
}

// status says how the child ended.
func (o *childOutcome) status() string {
	if o.code < 0 {
		return "killed by a signal"
	}
	return fmt.Sprintf("exit status %d", o.code)
}

// childError is what a child process said on standard error, cut to what
// a report needs: a Go panic or fatal error as its message and the
// innermost frame outside the runtime, anything else as its last lines.
func childError(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "panic: ") && !strings.HasPrefix(l, "fatal error: ") {
			continue
		}
		for j := i + 1; j+1 < len(lines); j++ {
			f := lines[j]
			if f == "" || strings.HasPrefix(f, "\t") || strings.HasPrefix(f, "goroutine ") || strings.HasPrefix(f, "runtime.") || strings.HasPrefix(f, "panic(") {
				continue
			}
			loc := strings.TrimSpace(lines[j+1])
			if c := strings.LastIndex(loc, " +0x"); c > 0 {
				loc = loc[:c]
			}
			return fmt.Sprintf("%s (at %s, %s)", l, strings.TrimSuffix(f, "(...)"), loc)
		}
		return l
	}
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	if s := strings.Join(lines, " / "); s != "" {
		return s
	}
	return "it said nothing on standard error"
}

// runChild starts a child, kills it once its logs hold killAt words (never
// if killAt < 0), and waits for it.
func runChild(ctx context.Context, kc ChildOptions, spec string, mem []uint64, threads int, killAt int64) (*childOutcome, error) {
	cmd := kc.Command(spec)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// A process the child started may hold its output open after the
	// child is killed: Wait waits for the output that long at most.
	cmd.WaitDelay = time.Second
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
	// Wait until ready. A child that ends first (it could not open or
	// recover the region, it panicked) or is not ready in time is a
	// finding: its outcome says how it ended.
	var last string
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				o.unready = true
				return o, o.ended(cmd.Wait(), last, &stderr)
			}
			ready = l == childReady
			last = l
		case <-deadline.C:
			kill()
			o.unready, o.timedOut = true, true
			return o, o.ended(cmd.Wait(), last, &stderr)
		case <-ctx.Done():
			kill()
			cmd.Wait()
			return nil, ctx.Err()
		}
	}
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
			if killAt >= 0 && !o.killed && record.SharedLogEvents(mem, threads) >= killAt {
				o.progress = record.SharedLogEvents(mem, threads)
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
		o.progress = record.SharedLogEvents(mem, threads)
	}
	return o, o.ended(werr, last, &stderr)
}

// ended records how the child ended: werr is what cmd.Wait returned, last
// its last line on standard output (its report, if it is JSON). An error
// is one of waiting, not of the child.
func (o *childOutcome) ended(werr error, last string, stderr *bytes.Buffer) error {
	o.stderr = stderr.String()
	var ee *exec.ExitError
	o.killed = false
	if errors.As(werr, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			o.code = -1
			o.killed = st.Signal() == syscall.SIGKILL && !o.timedOut && !o.unready
		} else {
			o.code = ee.ExitCode()
		}
	} else if werr != nil {
		return werr
	}
	if strings.HasPrefix(last, "{") {
		json.Unmarshal([]byte(last), &o.report)
	}
	return nil
}
