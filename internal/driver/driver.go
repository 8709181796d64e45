package driver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/internal/wire"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Driver runs a workload on a target's operations and records its history.
// Its segments run one after another; between them the caller may crash
// the region, recover the target and record what recovery left (package
// crash): the driver writes the operations' invocations and responses,
// never a crash line.
type Driver struct {
	cfg    Config
	target target.Ops
	region *pmem.Region
	rec    *record.Recorder
	procs  []*proc
	logs   *record.Logs
	ws     []wstate
	pids   []int32
	tags   []Tag // each worker's goroutine, for the watchdogs

	// swapper and reporter are the target's optional operations, when the
	// workload uses them (Config.Swaps, Config.FailValues).
	swapper  target.Swapper
	reporter target.FailReporter

	// obj, ow and oprocs are an object workload's (NewObject): the object,
	// the workload and its processes, in place of target and procs.
	obj    target.Object
	ow     *ObjectWorkload
	oprocs []*objProc

	// segment state
	aborted     atomic.Bool
	crashAt     int64 // 0: no crash
	crashWorker int   // free: the worker whose crashAt-th access crashes
	crashAction func()
	stallAt     int64 // deterministic: CrashPoint.Stall
	stallBound  int64 // deterministic: Config.StallBound
	lateCrash   bool  // deterministic: CrashPoint.Late
	// sites, if not nil (CountSites), counts the sites of the run's
	// accesses (rare.go); rare: the segment crashes at a new one
	// (CrashPoint.Rare, from the run's second segment), rareHit: it did.
	sites         *sites
	rare, rareHit bool
	silent        int   // the worker a watchdog found silent (-1: none)
	segAccesses   int64 // deterministic: accesses of the segment
	base          time.Time
	clk           record.Clock // free: the timestamps' source
	// stampFrom is where a segment's timestamps start (0; a test's
	// injected clock starts them near wire.MaxStamp).
	stampFrom int64
	// checkStamps: the segment's clock might pass wire.MaxStamp, and
	// the workers check each stamp (see stampOverflow).
	checkStamps bool
	// alwaysStamp: an unrecorded worker reads the clock as a recording
	// one does (a benchmark's: what the timestamps alone cost).
	alwaysStamp bool
	opTimed     opWatch // record.ClockCount: when opElapsed first timed the operation
	det         *detSched
	// turns are the deterministic scheduler's worker coroutines and
	// hand-off state (handoff.go), kept between segments if keep is set
	// (KeepWorkers), else closed at the end of each.
	turns *turns
	keep  bool

	mu       sync.Mutex
	stuck    *Stuck
	opErr    *OpError
	blocked  *Blocked
	stampErr error // a timestamp too large for the logs (stampOverflow)
	stops    int   // segments run
	// broken, once set, refuses every further segment: a worker of an
	// earlier one never returned (see Blocked).
	broken error
}

// New returns a driver of the target's operations ops, on the region r
// where the target keeps its shared state (the driver installs its access
// hook there during segments), writing to rec. The region may be nil only
// under the free scheduler, for a target that makes no region accesses
// (benchmarks of the logging alone): the deterministic scheduler
// interleaves the workers at region accesses and has nothing to interleave
// without them.
//
// rec may be nil under the free scheduler: the driver then runs the same
// workload unrecorded (no log, no timestamps but those the stuck watch
// needs with a region), the baseline of the recording's cost (pmlin bench
// logging); its segments count the operations (record.MergeStats) and write
// nothing.
func New(c Config, ops target.Ops, r *pmem.Region, rec *record.Recorder) (*Driver, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if r == nil && c.Sched == Deterministic {
		return nil, errors.New("driver: the deterministic scheduler needs the target's region: it switches workers only at region accesses, so without them the operations would run one after another, whole, with no interleaving")
	}
	if rec == nil && c.Sched == Deterministic {
		return nil, errors.New("driver: the deterministic scheduler records: it needs a recorder")
	}
	clk, err := record.NewClock(record.ClockAuto, c.Threads)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: c, target: ops, region: r, rec: rec, clk: clk, stallBound: c.StallBound()}
	if err := d.optional(); err != nil {
		return nil, err
	}
	d.tags = make([]Tag, c.Threads)
	for i := range d.tags {
		d.tags[i] = NewTag(fmt.Sprintf("driver %p worker %d", d, i))
	}
	d.procs = make([]*proc, c.Threads)
	d.ws = make([]wstate, c.Threads)
	d.pids = make([]int32, c.Threads)
	for i := range c.Threads {
		d.procs[i] = newProc(int32(i), c, c.Seed)
		d.pids[i] = int32(i)
	}
	// The deterministic scheduler's text recordings (fuzzing: tiny
	// segments, one worker at a time) merge at the end of the segment.
	d.logs = record.NewLogs(rec, d.pids, c.K, c.Sched == Free)
	return d, nil
}

// NewObject returns a driver of an object workload w (a data-structure
// target's, workload_model.go) on the object obj, which keeps its shared
// state on r, writing to rec, which must record w (record.Recorder.SetObject; nil
// only as New allows). The workload's operations replace the reads, cas
// and swaps of c, whose Reads, Swaps and FailValues are not used (Swaps
// and FailValues must be off); K and Words only size the logs' checks.
func NewObject(c Config, w *ObjectWorkload, obj target.Object, r *pmem.Region, rec *record.Recorder) (*Driver, error) {
	if w == nil || obj == nil {
		return nil, errors.New("driver: an object workload needs its workload and its object")
	}
	if c.Swaps > 0 || c.FailValues {
		return nil, errors.New("driver: an object workload has no swaps or failures that report values")
	}
	if rec != nil && rec.Object() != record.Object(w) {
		return nil, errors.New("driver: the recorder of an object workload must record it (Recorder.SetObject)")
	}
	d, err := New(c, nil, r, rec)
	if err != nil {
		return nil, err
	}
	d.obj, d.ow = obj, w
	d.oprocs = make([]*objProc, c.Threads)
	for i := range d.oprocs {
		d.oprocs[i] = newObjProc(int32(i), w, c.Seed)
	}
	return d, nil
}

// RebindObject is Rebind for a driver of an object workload.
func (d *Driver) RebindObject(obj target.Object, r *pmem.Region) {
	d.obj, d.region = obj, r
}

// SetObjectTagBase is SetTagBase for a driver of an object workload.
func (d *Driver) SetObjectTagBase(base uint64) {
	for _, p := range d.oprocs {
		p.ctr = max(p.ctr, base)
	}
}

// ErrUnsupported says that the workload asks for an operation the target
// does not have (a swap, a failure that reports values).
var ErrUnsupported = errors.New("the target does not support it")

// optional finds the optional operations the workload uses.
func (d *Driver) optional() error {
	var ok bool
	if d.cfg.Swaps > 0 {
		if d.swapper, ok = d.target.(target.Swapper); !ok {
			return fmt.Errorf("driver: swaps (--swaps %v): %w (its instance is no target.Swapper)", d.cfg.Swaps, ErrUnsupported)
		}
	}
	if d.cfg.FailValues {
		if d.reporter, ok = d.target.(target.FailReporter); !ok {
			return fmt.Errorf("driver: failures that report values (--fail-values): %w (its instance is no target.FailReporter)", ErrUnsupported)
		}
	}
	return nil
}

// Config is the driver's configuration.
func (d *Driver) Config() Config { return d.cfg }

// Rebind makes the next segments run on ops and the region r instead: the
// target opened again on a region reopened after a crash, as a new process
// would (package crash). The workload goes on where it was, with the
// optional operations of ops (an error if ops lacks one it uses).
func (d *Driver) Rebind(ops target.Ops, r *pmem.Region) error {
	d.target, d.region = ops, r
	return d.optional()
}

// SetClock chooses where the free scheduler's timestamps come from
// (default record.ClockAuto). It fails for record.ClockTSC where the TSC cannot order
// steps across cores (record.TSCUsable), and for record.ClockCount with more than one
// worker.
func (d *Driver) SetClock(s record.ClockSource) error {
	clk, err := record.NewClock(s, d.cfg.Threads)
	if err != nil {
		return err
	}
	d.clk = clk
	return nil
}

// Clock is the source of the free scheduler's timestamps in use.
func (d *Driver) Clock() record.ClockSource { return d.clk.Source() }

// SetTagBase makes every process's next tag counter start after base (a
// process that goes on after another process used its id, as in the
// process-kill mode).
func (d *Driver) SetTagBase(base uint64) {
	for _, p := range d.procs {
		p.ctr = max(p.ctr, base)
	}
}

// UseSharedLogs makes the workers log into mem, a shared mapping laid out
// by record.LayoutSharedLogs, instead of memory of their own. A worker whose log
// is full stops.
func (d *Driver) UseSharedLogs(mem []uint64) error { return d.logs.Share(mem) }

// CrashPoint says where a segment crashes the region.
type CrashPoint struct {
	// Access is the number of the access that crashes (1-based; 0: no
	// crash). Deterministic scheduler: counted over all workers. Free
	// scheduler: counted over the accesses of Worker only.
	Access int64
	Worker int
	// Action, if not nil, is called at the crash point instead (on the
	// worker's goroutine, before the access): the process-kill mode kills
	// its own process there. If it returns, the region crashes as usual.
	Action func()
	// Stall, if positive, is the progress check (deterministic scheduler
	// only; see stall.go): from the segment's Stall-th access (counted
	// over all workers) on, the first worker to make an access right after
	// one of its writes within an operation, while another worker is live,
	// is stopped there.
	Stall int64
	// Late (deterministic scheduler, Config.Late on, a region) crashes
	// the segment at the end of the first window in which a late write was
	// changed and the change is not yet durable (latecrash.go), instead
	// of at Access (which should then be 0: the earlier of the two wins).
	Late bool
	// Rare (deterministic scheduler, CountSites called) crashes the
	// segment also right before the first flush or fence, drawn with
	// probability rareCrashP, whose site the run has not met before
	// (rare.go), if this is not the run's first segment: the earlier of
	// that and Access wins.
	Rare bool
}

// Stuck describes an operation that made no progress.
type Stuck struct {
	Proc int32
	// Line is the line of the operation's invocation.
	Line  int64
	Kind  history.OpKind
	Addrs []uint64
	// Op is an object workload's operation as the history writes it
	// ("enq 0x100001"), in place of Kind and Addrs ("" for the others).
	Op string
	// Accesses the operation made without returning, and the last one.
	Accesses int64
	LastKind pmem.AccessKind
	LastOff  uint64
	Elapsed  time.Duration
	// Stalled, if set, is the worker the progress check had stopped: the
	// operation waited for it.
	Stalled *Stall
	// Quiet, if positive, is how long the operation ran without a region
	// access (the watchdog's finding: it spins outside the region), and
	// Where the function and line it was found at.
	Quiet  time.Duration
	Where  string
	worker int
}

func (s *Stuck) String() string {
	op := fmt.Sprintf("process %d's %s (line %d)", s.Proc, opName(s.Kind, s.Addrs, s.Op), s.Line)
	switch {
	case s.Quiet > 0:
		return fmt.Sprintf("%s ran for %v without a region access (%s), after %d accesses: it loops outside the region, where no scheduler can run the other workers and no crash can stop it; a wait must be a loop of region accesses",
			op, s.Quiet.Round(time.Millisecond), s.Where, s.Accesses)
	case s.Stalled != nil:
		return fmt.Sprintf("%s made %d region accesses without returning, and no operation of another live process returned meanwhile, while %s; its last access was a %s of region word %d: it waits for the stopped process instead of finishing on its own (helping), so the target is not lock-free. A target that blocks by design declares it (target.Target.Blocking), and a wait that is part of a lock-free design (memory reclamation) calls pmem.Worker.Wait once per round of its loop",
			op, s.Accesses, s.Stalled, s.LastKind, s.LastOff)
	}
	return fmt.Sprintf("%s made %d region accesses without returning, while the scheduler kept running it; its last access was a %s of region word %d",
		op, s.Accesses, s.LastKind, s.LastOff)
}

// OpError is an operation that returned an error other than a crash (for
// a PMwCAS: a region state that no run of the correct code produces); it
// stops the segment.
type OpError struct {
	Proc int32
	Line int64 // the line of its invocation
	Kind history.OpKind
	Op   string // an object workload's operation (see Stuck.Op)
	Err  error
	w    int
}

func (e *OpError) Error() string {
	op := e.Kind.String()
	if e.Op != "" {
		op = e.Op
	}
	return fmt.Sprintf("process %d's %s (line %d) failed: %v", e.Proc, op, e.Line, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// Blocked describes a worker that stopped, under the deterministic
// scheduler, somewhere other than a region access: it held the turn for
// Config.StuckAfter without handing it on at a region access or invoking
// an operation, so it waits in Go (a mutex, a channel, a sleep) for
// something only another worker can do, and the other workers wait for the
// turn. The driver abandons its
// goroutine (it cannot be unblocked) and every later segment.
type Blocked struct {
	Proc int32
	// Line is the line of the invocation of its operation.
	Line  int64
	Kind  history.OpKind
	Addrs []uint64
	Op    string // an object workload's operation (see Stuck.Op)
	// Quiet is how long the turn stayed with it, and Where what it was
	// found waiting in (the watchdog's Spot).
	Quiet  time.Duration
	Where  string
	worker int
}

// BlockedAdvice says what to do about a Blocked worker.
const BlockedAdvice = "the deterministic scheduler runs one worker at a time and switches only at region accesses, so a worker that waits in Go (a sync.Mutex, a channel, a WaitGroup, a sleep) for another one waits forever: make every wait a loop of region accesses (for instance a lock word taken with a region CAS), or run it under the free scheduler (--sched free)"

func (b *Blocked) String() string {
	return fmt.Sprintf("process %d's %s (line %d) held the deterministic scheduler's turn for %v without handing it on or invoking an operation: it blocked outside region accesses (%s); %s",
		b.Proc, opName(b.Kind, b.Addrs, b.Op), b.Line, b.Quiet.Round(time.Millisecond), b.Where, BlockedAdvice)
}

// SegmentResult is what a segment did.
type SegmentResult struct {
	record.MergeStats
	// Accesses made by the workload in the segment.
	Accesses int64
	// Crashed: the region crashed (at the crash point); the operations in
	// progress were cut off and the region waits for Region.Crash.
	Crashed bool
	// Stuck, Failed or Blocked, if set, stopped the segment.
	Stuck   *Stuck
	Failed  *OpError
	Blocked *Blocked
	// Stall is where the progress check stopped a worker (nil: it did
	// not, CrashPoint.Stall being 0 or past the segment's end).
	Stall *Stall
	// Holds counts the workers the late-write policy held (Config.Late).
	Holds int64
	// LateCrash is where a late crash fell (CrashPoint.Late; nil: none
	// did).
	LateCrash *LateCrash
	// RareCrash: the segment crashed at a site the run had not met
	// (CrashPoint.Rare).
	RareCrash bool
	// Left is, per worker, the operations of its quota not invoked.
	Left []int
	// Full: some worker stopped because its (shared) log was full.
	Full bool
	// Work is the time the workers ran; Merge the time the merge of
	// their logs into the history took.
	Work, Merge time.Duration
}

// stopping reports whether the segment is already stopped by a stuck,
// failed or blocked operation (d.mu held).
func (d *Driver) stopping() bool { return d.stuck != nil || d.opErr != nil || d.blocked != nil }

func (d *Driver) setStuck(w int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.stopping() {
		ws := &d.ws[w]
		kind, addrs, op := d.curOp(w)
		d.stuck = &Stuck{Proc: d.pids[w], Kind: kind, Addrs: addrs, Op: op,
			Accesses: ws.opAcc, LastKind: ws.lastKind, LastOff: ws.lastOff, worker: w}
		if d.det == nil {
			d.stuck.Elapsed = d.opElapsed(ws)
		} else if s := d.det; s.stalled >= 0 {
			st := *s.stall
			d.stuck.Stalled = &st
		} else if s.holding() {
			st := *s.late.held[0].st
			d.stuck.Stalled = &st
		}
	}
	d.abort()
}

// stampsBounded reports whether a segment of quota operations cannot take
// a timestamp above wire.MaxStamp: the deterministic scheduler's
// logical clock and a count take two stamps an operation at most, from
// stampFrom on. (The clocks of time are checked stamp by stamp.)
func (d *Driver) stampsBounded(quota []int) bool {
	if d.cfg.Sched == Free && !d.clk.Counts() {
		return false
	}
	n := int64(0)
	for _, q := range quota {
		n += int64(q)
	}
	return d.stampFrom+2*n <= wire.MaxStamp
}

// stampOverflow stops the segment: worker w took timestamp ts, above
// wire.MaxStamp, the most a log record holds (its head word keeps 52
// bits of it). Segment returns the error; the operation stamped stays
// pending in the history, as one a stopped segment cuts off.
//
// No clock gets there in practice: each segment restarts it, and 2^52 is
// 17 days of a 3 GHz TSC, 52 days of nanoseconds, 4.5e15 steps of a
// count or of the deterministic scheduler's logical clock. But a record
// must never hold a timestamp cut to its low bits (the merge would put
// its steps out of order), so each stamp is checked (one comparison),
// but in a segment that cannot get there (stampsBounded).
func (d *Driver) stampOverflow(w int, ts int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stampErr == nil {
		src := "the deterministic scheduler's logical clock"
		if d.det == nil {
			src = "clock " + d.clk.Source().String()
		}
		d.stampErr = fmt.Errorf("driver: process %d took log timestamp %d (%s) %v into the segment: a log record holds timestamps up to 2^52-1, counted from the start of the segment (each segment restarts the clock); the segment was stopped there",
			d.pids[w], uint64(ts), src, time.Since(d.base).Round(time.Millisecond))
	}
	d.abort()
}

func (d *Driver) setOpErr(w int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.stopping() {
		kind, _, op := d.curOp(w)
		d.opErr = &OpError{Proc: d.pids[w], Kind: kind, Op: op, Err: err, w: w}
	}
	d.abort()
}

// setBlocked is the deterministic scheduler's watchdog finding worker w,
// which holds the turn, blocked. It runs on the watchdog's goroutine: what
// it reads of worker w was published by w's last heartbeat.
func (d *Driver) setBlocked(w int, quiet time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.stopping() {
		kind, addrs, op := d.curOp(w)
		d.blocked = &Blocked{Proc: d.pids[w], Kind: kind, Addrs: addrs, Op: op, Quiet: quiet, worker: w}
	}
	d.abort()
}

// abort stops the segment: every region access fails with errAborted from
// now on, and under the deterministic scheduler every worker waiting for
// the turn is run to its end by a rescue of its own, so that they all
// return without waiting for each other (the worker holding the turn may
// never hand it on: see turns).
func (d *Driver) abort() {
	if d.aborted.Swap(true) {
		return
	}
	if s := d.det; s != nil {
		go s.rescue(s.epoch)
	}
}

// KeepWorkers makes the deterministic scheduler keep its workers'
// coroutines from one segment to the next, idle in between, instead of
// making them anew for each (see turns); Close ends them, and Recycle
// hands them on to the next driver. Without it they end with each
// segment.
func (d *Driver) KeepWorkers() { d.keep = true }

// Close ends the workers' coroutines a driver keeps (KeepWorkers) once its
// last segment is over; a driver that abandoned a worker ended them
// already. It may be called more than once, and the driver used again.
func (d *Driver) Close() {
	if d.turns != nil && d.broken == nil {
		d.turns.close()
	}
}

// Segment runs quota[w] operations on each worker w, or fewer if the
// region crashes at cp, an operation is stuck, fails or blocks, or ctx is
// done; then it merges the workers' logs into the history. After a crash
// (SegmentResult.Crashed) the operations in progress are left pending: the
// caller writes the crash line (record.Recorder.Crash), builds the crash image
// (pmem.Region.Crash) and recovers the target before the next segment. It
// returns an error if the history cannot be written or the logs do not
// decode, if an earlier segment abandoned a worker (see Blocked), or if
// under the deterministic scheduler the operations made no region access.
func (d *Driver) Segment(ctx context.Context, quota []int, cp CrashPoint) (SegmentResult, error) {
	if len(quota) != d.cfg.Threads {
		return SegmentResult{}, fmt.Errorf("driver: %d quotas for %d workers", len(quota), d.cfg.Threads)
	}
	if d.broken != nil {
		return SegmentResult{}, d.broken
	}
	d.stops++
	d.aborted.Store(false)
	d.stuck, d.opErr, d.blocked, d.stampErr = nil, nil, nil, nil
	d.crashAt, d.crashWorker, d.crashAction, d.stallAt, d.silent = cp.Access, cp.Worker, cp.Action, cp.Stall, -1
	d.lateCrash = cp.Late
	d.rare, d.rareHit = cp.Rare && d.sites != nil && d.stops > 1, false
	d.segAccesses = 0
	d.base = time.Now()
	d.clk.Start(d.base, d.stampFrom)
	d.opTimed = opWatch{}
	segSeed := d.cfg.Seed ^ uint64(d.stops)*0x9e3779b97f4a7c15
	for i := range d.ws {
		d.ws[i] = wstate{}
		if d.cfg.Sched == Free && d.cfg.Yield > 0 {
			d.ws[i].yield = rand.New(rand.NewPCG(segSeed, uint64(i)+1))
		}
	}
	left := append([]int(nil), quota...)
	d.checkStamps = d.rec != nil && !d.stampsBounded(quota)
	live := make([]bool, len(left))
	n := 0
	for i, q := range left {
		live[i] = q > 0
		n += min(q, 1)
	}
	d.logs.Start(live, d.cfg.Sched == Free && n >= runtime.GOMAXPROCS(0))
	full := make([]bool, d.cfg.Threads)
	var abandoned []bool
	if d.cfg.Sched == Deterministic {
		abandoned = d.runDeterministic(ctx, segSeed, left, full)
	} else {
		abandoned = d.runFree(ctx, left, full)
	}
	res := SegmentResult{Left: left, Work: time.Since(d.base)}
	for i := range d.ws {
		if abandoned != nil && abandoned[i] {
			// Its counters after its last heartbeat are its own.
			d.broken = fmt.Errorf("driver: process %d never returned from its operation after the segment stopped: its goroutine is abandoned, and so is this driver", d.pids[i])
			continue
		}
		res.Accesses += d.ws[i].accesses
		res.Full = res.Full || full[i]
	}
	if t := d.turns; t != nil && d.cfg.Sched == Deterministic {
		switch {
		case d.broken != nil:
			// The closer may stay parked for good (see turns).
			go t.close()
			d.turns = nil
		case !d.keep:
			t.close()
		}
	}
	if d.region != nil && d.broken == nil {
		// An abandoned worker keeps the hook, whose every access fails:
		// it never touches the region again, whoever uses it next.
		d.region.SetHook(nil)
	}
	if d.region != nil {
		res.Crashed = d.region.Crashing()
	}
	mstart := time.Now()
	ms, err := d.logs.Finish(d.det != nil)
	res.MergeStats = ms
	res.Merge = time.Since(mstart)
	if err != nil {
		return res, err
	}
	if d.stampErr != nil {
		return res, d.stampErr
	}
	if d.stuck != nil {
		d.stuck.Line = ms.LastInv[d.stuck.worker]
		if st := d.stuck.Stalled; st != nil {
			st.Line = ms.LastInv[st.worker] // still in its operation
		}
		res.Stuck = d.stuck
	}
	if d.det != nil {
		res.Stall = d.det.stall
		if l := d.det.late; l != nil {
			res.Holds = l.holds
		}
		if lc := d.det.lc; lc != nil && res.Crashed {
			res.LateCrash = lc.at
		}
		res.RareCrash = d.rareHit && res.Crashed
	}
	if d.opErr != nil {
		d.opErr.Line = ms.LastInv[d.opErr.w]
		res.Failed = d.opErr
	}
	if d.blocked != nil {
		d.blocked.Line = ms.LastInv[d.blocked.worker]
		res.Blocked = d.blocked
	}
	// (Not when the segment was stopped: canceled right after the first
	// invocation, it made no access either.)
	if d.det != nil && res.Accesses == 0 && ms.Invoked > 0 && !res.Crashed && !d.aborted.Load() {
		return res, fmt.Errorf("driver: %d operations made no region access: the deterministic scheduler switches workers only at region accesses, so they ran one after another, whole, with no interleaving, and no crash could fall inside one; every access of the target to shared state must go through the workers of the region the driver was given (pmem.Worker)", ms.Invoked)
	}
	return res, nil
}

// stopWorker is what worker w does when it stops working in a segment:
// with a dumper, it hands its last chunk over.
func (d *Driver) stopWorker(w int) {
	if d.logs.Dumps() && !d.claimed(w) {
		d.logs.Stop(w)
	}
}

// runDeterministic works the segment with one worker at a time, the next
// chosen by the scheduler's seeded choices: each worker a coroutine that
// hands the turn directly to the next (handoff.go). It returns, if it had to abandon
// some, which workers' goroutines never returned (see wait).
func (d *Driver) runDeterministic(ctx context.Context, segSeed uint64, left []int, full []bool) []bool {
	n := d.cfg.Threads
	s := &detSched{d: d, dr: newDraws(segSeed, 0x5ced), stickAt: belowBound(d.cfg.stick()), stallAt: d.stallAt, stalled: -1, clock: d.stampFrom}
	if d.cfg.Late > 0 {
		s.late = newLate(segSeed, d.cfg.Late, d.region)
		if d.lateCrash && d.region != nil {
			s.lc = newLateCrash(n)
		}
	}
	s.startSlow()
	d.det = s
	for i := range n {
		if left[i] > 0 {
			s.live = append(s.live, i)
		}
	}
	if len(s.live) == 0 {
		return nil
	}
	s.workers = slices.Clone(s.live) // s.live is theirs once they run
	s.crew = newCrew(n, s.workers)
	if d.turns == nil {
		d.turns = &turns{}
	}
	s.turns = d.turns
	s.epoch = s.start(n, func(w int) {
		defer d.catch(w)
		d.tags[w].Set()
		if d.aborted.Load() {
			return // run by an abort before its first turn
		}
		s.took()
		d.work(ctx, w, &left[w], &full[w])
		d.stopWorker(w)
		s.finish(w)
	})
	if d.region != nil {
		d.region.SetHook(s)
	}
	go s.conduct(s.pick(-1), s.epoch)
	return s.wait(ctx, s.workers)
}

// runFree works the segment with every worker on a goroutine of its own.
// It returns, if it had to abandon some, which workers' goroutines never
// returned (see waitFree).
func (d *Driver) runFree(ctx context.Context, left []int, full []bool) []bool {
	d.det = nil
	if d.region != nil {
		d.region.SetHook(freeHook{d})
	}
	var workers []int
	for w := range d.cfg.Threads {
		if left[w] > 0 {
			workers = append(workers, w)
		}
	}
	if len(workers) == 0 {
		return nil
	}
	c := newCrew(d.cfg.Threads, workers)
	for _, w := range workers {
		go func() {
			defer c.exit(w)
			defer d.catch(w)
			d.tags[w].Set()
			d.work(ctx, w, &left[w], &full[w])
			d.stopWorker(w)
		}()
	}
	return d.waitFree(ctx, c, workers)
}

// opElapsed is the time since the invocation of a worker's current
// operation (free scheduler). The worker keeps the invocation's raw
// timestamp: the stuck watch converts it, once in a thousand accesses,
// rather than every operation.
//
// A count (record.ClockCount) is no time: the operation is timed from the first
// call for it instead (by the one worker's own goroutine, as every call
// is while the segment runs), which the stuck watch makes after
// StuckAccesses accesses of it (a few milliseconds), so a stuck operation
// is found that much later.
func (d *Driver) opElapsed(ws *wstate) time.Duration {
	now := time.Since(d.base)
	if d.clk.Counts() {
		w := &d.opTimed
		if !w.ok || w.op != ws.opStart {
			*w = opWatch{op: ws.opStart, from: now, ok: true}
		}
		return now - w.from
	}
	return now - d.clk.Nanos(ws.opStart)
}

// opWatch is when opElapsed first timed a worker's operation (a count's
// timestamp op, unique in the segment).
type opWatch struct {
	op   int64
	from time.Duration
	ok   bool
}

// now is a log timestamp.
func (d *Driver) now() int64 {
	if d.det != nil {
		d.det.clock++
		return d.det.clock
	}
	return d.clk.Now()
}

// point is a scheduling point outside region accesses (operation
// boundaries). It reports whether the worker yielded.
func (d *Driver) point(w int) bool {
	if s := d.det; s != nil {
		s.notWaiting(w)
		s.yield(w)
		return true
	}
	if ws := &d.ws[w]; ws.yield != nil && ws.yield.Float64() < d.cfg.Yield {
		runtime.Gosched()
		return true
	}
	return false
}

// stopped tells a worker to stop between operations. ctx is watched
// through its Done channel: a non-blocking receive does not lock, where
// ctx.Err() would take a lock shared by every worker, once per operation.
func (d *Driver) stopped(done <-chan struct{}) bool {
	if d.aborted.Load() || (d.region != nil && d.region.Crashing()) {
		return true
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// work runs worker w's operations until its quota is used or the segment
// stops.
func (d *Driver) work(ctx context.Context, w int, left *int, full *bool) {
	p := d.procs[w]
	l := d.logs.Log(w)
	ws := &d.ws[w]
	k := d.cfg.K
	done := ctx.Done()
	// A worker alone (one worker: a count, or a clock of time) stamps an
	// operation's response and its next invocation with one read, right
	// after the operation returns: the clock is read once per operation,
	// not twice (a read that orders it with the accesses before and after
	// costs as much as the monotonic clock, about 30 ns here). The stamp
	// is after every access of the operation that returned and before
	// every access of the next one; the next operation's recorded interval
	// starts a little early (by the worker's bookkeeping between the two),
	// which may hide an order but never invents one. A yield in between
	// takes a fresh stamp.
	//
	// Beside other workers it does not: two workers whose shared stamps
	// are equal would each respond and invoke again at one timestamp, and
	// which of them read the clock first is lost, so no order of their
	// lines is honest and the merge refuses them (recorders/README.md,
	// rule 4). The monotonic clock gave such a pair in 3 of 10 segments of
	// 200,000 operations of 4 workers on 2 cores. So there every
	// invocation takes a fresh stamp, later than the worker's last
	// response's: a worker is then never one that responds and invokes
	// again at one timestamp, and every tie has an honest order. (Not
	// recording, the stamps only time operations for the stuck watch.)
	share := d.cfg.Threads == 1 || d.rec == nil
	shared := d.stampFrom // a count's stamps start after it; the last response's
	haveShared, responded := false, false
	// Unrecorded (no recorder), a worker logs nothing and reads the clock
	// only for the stuck watch, which needs a region.
	rec := d.rec != nil
	stamps := rec || d.region != nil || d.alwaysStamp
	check := d.checkStamps
	// The free scheduler's TSC is read inline (clock.tick), once per
	// operation, or its one worker counts (record.ClockCount: ts counts the
	// stamps: a response one after its invocation, a fresh stamp one
	// after the last); opw is the words of an operation's records.
	tsc := stamps && d.det == nil && d.clk.TSC()
	count := stamps && d.det == nil && d.clk.Counts()
	var ts int64
	opw := record.OpWords(k)
	// An object workload (a data-structure target) draws and logs the
	// operations of its model instead (workload_model.go).
	obj := d.obj != nil
	var q *objProc
	if obj {
		opw, q = record.ObjectOpWords, d.oprocs[w]
	}
	for *left > 0 {
		if d.point(w) {
			haveShared = false
		}
		if d.stopped(done) {
			return
		}
		if !l.Room(opw) {
			*full = true
			return
		}
		var o *op
		var oo *objOp
		var err error
		if obj {
			oo, err = q.next()
		} else {
			o, err = p.next()
		}
		if err != nil {
			d.setOpErr(w, err)
			return
		}
		*left--
		// Invocation: logged before the operation's first access.
		if haveShared {
			ts = shared
		} else if count {
			ts = shared + 1
		} else if tsc {
			ts = d.clk.Tick()
		} else if stamps {
			ts = d.now()
		}
		for stamps && !haveShared && responded && ts <= shared && !count {
			// The clock has not moved since the response: a later read
			// (a clock of time does move).
			if tsc {
				ts = d.clk.Tick()
			} else {
				ts = d.now()
			}
		}
		if check && uint64(ts) > wire.MaxStamp {
			d.stampOverflow(w, ts)
			return
		}
		switch {
		case rec && obj:
			l.InvokeOp(ts, oo.code, oo.args[:oo.nargs])
		case rec && o.kind == history.Read:
			l.InvokeRead(k, ts, o.addrs)
		case rec && o.kind == history.Swap:
			l.InvokeSwap(k, ts, o.addrs, o.new)
		case rec:
			l.InvokeCAS(k, ts, o.addrs, o.exp, o.new)
		case obj:
			l.Count(record.InvOp)
		default:
			l.Count(invKind(o))
		}
		if obj {
			l.Tag(q.ctr)
		} else if o.kind != history.Read {
			l.Tag(p.ctr) // the largest tag in the log
		}
		ws.opAcc, ws.inOp, ws.opStart, ws.nLoaded = 0, true, ts, 0
		ws.site = siteStart // (counted only while the driver counts sites)
		d.invoked(w)
		switch {
		case obj:
			oo.res, err = d.obj.Do(w, d.ow.Ops[oo.code], oo.args[:oo.nargs], oo.res[:0])
			if err == nil {
				err = record.CheckResults(oo.res)
			}
		case o.kind == history.Read:
			err = d.target.Read(w, o.addrs, o.vals)
		case o.kind == history.Swap:
			err = d.swapper.Swap(w, p.casWords(o), o.vals)
		case o.report:
			o.ok, o.fail, err = d.reporter.CASReport(w, p.casWords(o), o.vals)
		default:
			o.ok, o.fail, err = d.target.CAS(w, p.casWords(o))
		}
		if d.det == nil || !d.aborted.Load() {
			// Once a deterministic segment is aborted, the rescue runs the
			// parked workers beside the one that held the turn (see turns):
			// a worker back from an aborted operation no longer writes
			// what the scheduler's code reads of other workers (holdAt,
			// the stall's rules). The race detector caught this write
			// against holdAt's read in a few runs of a thousand of
			// TestReopenFindsUnpersistedNew. The next segment starts from
			// a clean state anyway.
			ws.inOp = false
			if s := d.det; s != nil && (s.stalled >= 0 || s.holding()) {
				s.returned(w)
			}
		}
		if !d.back(w) {
			return // abandoned: the log is the watchdog's
		}
		if err != nil {
			if !obj {
				p.interrupted()
			}
			if !errors.Is(err, pmem.ErrCrashed) && !errors.Is(err, errAborted) {
				d.setOpErr(w, err)
			}
			return
		}
		d.point(w)
		if d.aborted.Load() {
			// A stopped segment logs no more responses: under the
			// deterministic scheduler nobody holds the turn any more, so
			// the timestamps would race (the operation stays pending).
			p.interrupted()
			return
		}
		// Response: logged after the operation's last access.
		rts := ts + 1 // count
		if tsc {
			rts = d.clk.Tick()
		} else if stamps && !count {
			rts = d.now()
		}
		if check && uint64(rts) > wire.MaxStamp {
			if !obj {
				p.interrupted()
			}
			d.stampOverflow(w, rts)
			return
		}
		shared, haveShared, responded = rts, d.det == nil && share, true
		switch {
		case rec && obj:
			l.ReturnOp(rts, oo.res)
		case rec && o.kind != history.CAS: // a read's values, or those a swap replaced
			l.ReturnValues(k, rts, o.vals)
		case rec && o.ok:
			l.ReturnOK(k, rts)
		case rec && o.report:
			l.ReturnFailValues(k, rts, o.fail, o.vals)
		case rec:
			l.ReturnFail(k, rts, o.fail)
		default:
			l.Count(wire.RecRetOK) // counted as responses, whatever the kind
		}
		if obj {
			q.done(oo)
		} else {
			p.done(o)
		}
	}
}

// invKind is the kind of o's invocation record.
func invKind(o *op) int {
	switch o.kind {
	case history.Read:
		return wire.RecInvRead
	case history.Swap:
		return wire.RecInvSwap
	}
	return wire.RecInvCAS
}

// Recycle hands d the log chunks of old, a driver whose run is over (no
// segment under way, none of its workers abandoned), to fill again
// (record.Logs.Recycle). old must not be used afterwards.
//
// A driver that keeps its workers (KeepWorkers) takes old's worker
// coroutines too (and makes more if it has more workers); any other
// driver closes them.
func (d *Driver) Recycle(old *Driver) {
	if old != nil && old.turns != nil && old.broken == nil {
		if d.keep && d.turns == nil {
			d.turns, old.turns = old.turns, nil
		} else {
			old.Close()
		}
	}
	if old == nil || old.broken != nil {
		return
	}
	d.logs.Recycle(old.logs)
}
