package crash

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/merge"
	"github.com/pmlin/pmlin/internal/shellword"
)

// The protocol of pmlin fuzz --exec between pmlin and the program it
// crash-fuzzes: the environment of each start of the program
// (recorders/README.md, "The protocol of pmlin fuzz --exec", says it for
// the program's author). This is its one home in Go; pmlin.h and
// pmlin_recorder.py read EnvLogDir and EnvReadyFD by these names, and a
// test of package recorders holds them and the README to it.
const (
	// EnvRole is the program's role in this start: RoleRun or RoleRecover.
	EnvRole = "PMLIN_ROLE"
	// RoleRun: open the logs (EnvLogDir), recover the state, read it back
	// (recorded), start the workload, say ReadyLine on EnvReadyFD, and run
	// until killed (or done: then exit 0).
	RoleRun = "run"
	// RoleRecover: open the logs, recover the state, read it back
	// (recorded), and exit 0. The last start of every run.
	RoleRecover = "recover"
	// EnvLogDir is the run's log directory: pmlin_open_logs(rec, NULL, 0)
	// and Recorder.open_logs() put each start's generation of logs there.
	EnvLogDir = "PMLIN_LOG_DIR"
	// EnvStateDir is a directory of the program's own, empty when the run
	// begins and kept across its starts: where its persistent state (the
	// file it maps) belongs.
	EnvStateDir = "PMLIN_STATE_DIR"
	// EnvSeed seeds the program's own random choices: a decimal 64-bit
	// number drawn from the run's seed, another at each start.
	EnvSeed = "PMLIN_SEED"
	// EnvReadyFD is the number of the file descriptor on which a start of
	// role run writes ReadyLine once its recovery is done and its threads
	// run: the kill is timed from then on.
	EnvReadyFD = "PMLIN_READY_FD"
	// ReadyLine is the line (with a newline) a start writes when ready.
	ReadyLine = "ready"
	// readyFD is EnvReadyFD's value: the first descriptor after standard
	// error (exec.Cmd.ExtraFiles[0]).
	readyFD = 3
)

// Defaults of pmlin fuzz --exec.
const (
	// DefaultKillWithin bounds the delay of a kill after the program said
	// it was ready: a few milliseconds of a running workload.
	DefaultKillWithin = 5 * time.Millisecond
	// DefaultExecTimeout bounds a start's time to get ready, and a
	// recovering start's whole run.
	DefaultExecTimeout = DefaultRoundTimeout
)

// Exec is a program crash-fuzzed by process kills (pmlin fuzz --exec): a
// program in any language that records itself into logs that survive a
// kill (pmlin.h, pmlin_recorder.py) and follows the protocol above. A run
// of it is Kills starts of role RoleRun, each killed with SIGKILL a delay
// drawn from the run's seed after it says it is ready (unless it ends
// first), then one start of role RoleRecover; the logs are then gathered
// (merge.Gather) into one history, a crash line after each killed start.
//
// The crash model is a process crash: everything the program wrote to
// its file mappings survives the kill (it is in the page cache), as it
// does for pmlin's own kill modes. A power failure, which loses what was
// not flushed, is not modelled.
type Exec struct {
	// Command is the program and its arguments, split into words as sh
	// does (SplitCommand) and run directly: nothing is expanded.
	Command string
	// Kills is the number of killed starts of a run (at least 1).
	Kills int
	// KillWithin bounds the delay of a kill after the start said it was
	// ready; each delay is drawn uniformly from [0, KillWithin].
	KillWithin time.Duration
	// Timeout bounds a start's time to get ready, and a recovering start's
	// whole run: a start still going then is killed and reported stuck.
	Timeout time.Duration
	// Dir is where a run's directory is made ("": the temporary
	// directory).
	Dir string
}

// Check reports an Exec that cannot run.
func (x Exec) Check() error {
	argv, err := shellword.Split(x.Command)
	switch {
	case err != nil:
		return err
	case len(argv) == 0:
		return errors.New("--exec: no program")
	case x.Kills < 1:
		return fmt.Errorf("--crashes %d: a run of --exec kills its program at least once", x.Kills)
	case x.KillWithin < 0:
		return fmt.Errorf("--kill-within %v: not negative", x.KillWithin)
	case x.Timeout <= 0:
		return fmt.Errorf("--exec-timeout %v: must be positive", x.Timeout)
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return fmt.Errorf("--exec %q: %w", x.Command, err)
	}
	return nil
}

// Args renders x as the flags of pmlin run and fuzz that give it, for a
// run of the given seed.
func (x Exec) Args(seed uint64) []string {
	args := []string{"--exec", x.Command, "--seed", strconv.FormatUint(seed, 10), "--crashes", strconv.Itoa(x.Kills),
		"--kill-within", x.KillWithin.String()}
	if x.Timeout != DefaultExecTimeout {
		args = append(args, "--exec-timeout", x.Timeout.String())
	}
	return args
}

// Replays says how far a replay of a run reproduces its history.
func (x Exec) Replays() string {
	return "the replay kills the program at the same delays after it says it is ready, and gives it the same PMLIN_SEED; " +
		"the interleaving of its threads, and where in it each kill lands, are the machine's: a replay may not reproduce the finding"
}

// Name is a short name of the program for file names: its file name, or
// for an interpreter's command (python3 -B script.py) the script's (the
// first argument after the interpreter's flags, if it is a path), without
// its extension, in letters, digits, '.', '_' and '-'.
func (x Exec) Name() string {
	argv, _ := shellword.Split(x.Command)
	if len(argv) == 0 {
		return "exec"
	}
	name := filepath.Base(argv[0])
	i := 1
	for i < len(argv) && strings.HasPrefix(argv[i], "-") {
		i++
	}
	if i < len(argv) && strings.ContainsAny(argv[i], "./") {
		name = strings.TrimSuffix(filepath.Base(argv[i]), filepath.Ext(argv[i]))
	}
	name = strings.Map(func(r rune) rune {
		if r < 128 && (r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, name)
	if name == "" || name == "." || name == ".." {
		return "exec"
	}
	return name
}

// ExecKill is one kill of a run: its delay after the start said it was
// ready, drawn from the run's seed, and what came of it.
type ExecKill struct {
	Drawn time.Duration
	// Sent is when the kill was sent, after the start said it was ready
	// (0 if it was not sent).
	Sent time.Duration
	// Landed: the kill ended the start (not the start itself, first).
	Landed bool
}

// String says what the kill was and did, for comments and replay
// scripts.
func (k ExecKill) String() string {
	switch {
	case k.Landed:
		return fmt.Sprintf("killed %s after it said it was ready (drawn: %s)", ms(k.Sent), ms(k.Drawn))
	case k.Sent > 0:
		return fmt.Sprintf("ended by itself as its kill was sent, %s after it said it was ready (drawn: %s)", ms(k.Sent), ms(k.Drawn))
	}
	return fmt.Sprintf("ended by itself before its kill (drawn: %s after it said it was ready)", ms(k.Drawn))
}

// ExecOutcome is what a run of an Exec did.
type ExecOutcome struct {
	// Run counts it. Operations are those of the gathered history, the
	// program's reads after each recovery included; Crashes the kills
	// that ended a start; Anomalies the starts found stuck or corrupt.
	// Reads, CASes and Swaps count the history's invocations.
	Run *Result
	// History is the gathered history, pmlin's comments in front; when
	// the logs did not gather (Gathered false), the comments alone.
	History  []byte
	Gathered bool
	// Undecided is why the logs did not gather when that is no fault of
	// the program's (a clock too coarse to order its steps honestly,
	// history.ErrCoarseClock): not a violation, as for the analyzer.
	Undecided error
	// Kills are the run's kills, in order.
	Kills []ExecKill
}

// Decide checks the run's history in the given mode and adds the run's
// own anomalies: a history of version 1 with the analyzer, one of
// version 2 (the program declared objects) with the exact checker.
func (o *ExecOutcome) Decide(ctx context.Context, mode history.Mode) (*Verdict, error) {
	if !o.Gathered {
		return &Verdict{Run: o.Run, Mode: mode, Undecided: o.Undecided, Anomalies: append([]analyzer.Anomaly{}, o.Run.Anomalies...)}, nil
	}
	if isV2(o.History) {
		return decideV2(ctx, o.Run, o.History, mode)
	}
	return Decide(ctx, o.Run, o.History, mode)
}

// plan draws a run's kill delays and each start's PMLIN_SEED from its
// seed, each from a stream of its own.
func (x Exec) plan(seed uint64) (delays []time.Duration, seeds []uint64) {
	kill := rand.New(rand.NewPCG(seed, 0x6b111))
	prog := rand.New(rand.NewPCG(seed, 0x5eed5))
	for range x.Kills {
		delays = append(delays, time.Duration(kill.Int64N(int64(x.KillWithin)+1)))
	}
	for range x.Kills + 1 {
		seeds = append(seeds, prog.Uint64())
	}
	return delays, seeds
}

// RunExec runs the program of x once, with the given seed: Kills starts
// killed, a recovering start, the logs gathered. An error is pmlin's, or
// a program that does not follow the protocol (it cannot be started, it
// ends without saying it is ready, it leaves no log); what the program
// does wrong otherwise (it fails, crashes by itself, is not ready in time,
// leaves logs that do not gather) is an anomaly of the run.
func RunExec(ctx context.Context, x Exec, seed uint64) (*ExecOutcome, error) {
	if err := x.Check(); err != nil {
		return nil, err
	}
	argv, _ := shellword.Split(x.Command)
	parent := x.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	removeDeadKillDirs(parent)
	dir, lock, err := makeKillDir(parent)
	if err != nil {
		return nil, err
	}
	defer func() { os.RemoveAll(dir); lock.Close() }()
	logs, state := filepath.Join(dir, "logs"), filepath.Join(dir, "state")
	for _, d := range []string{logs, state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	delays, seeds := x.plan(seed)
	res := &Result{Seed: seed, Anomalies: []analyzer.Anomaly{}}
	out := &ExecOutcome{Run: res}
	var notes []string
	for i := range x.Kills + 1 {
		role, delay := RoleRun, time.Duration(-1)
		if i < x.Kills {
			delay = delays[i]
		} else {
			role = RoleRecover
		}
		env := []string{EnvRole + "=" + role, EnvLogDir + "=" + logs, EnvStateDir + "=" + state,
			EnvSeed + "=" + strconv.FormatUint(seeds[i], 10), EnvReadyFD + "=" + strconv.Itoa(readyFD)}
		s, err := start(ctx, argv, env, role, delay, x.Timeout)
		if err != nil {
			return nil, err
		}
		if s.canceled {
			res.Canceled = true
			return out, nil
		}
		var k ExecKill
		if role == RoleRun {
			k = ExecKill{Drawn: delay, Sent: s.sent, Landed: s.killedByUs()}
			out.Kills = append(out.Kills, k)
			if k.Landed {
				res.Crashes++
			}
		}
		note, a, err := s.judge(i+1, role, k, x)
		if err != nil {
			return nil, err
		}
		notes = append(notes, note)
		if a != nil {
			res.Anomalies = append(res.Anomalies, *a)
			break // the run stops at its first anomaly, as a Go target's
		}
	}
	if err := out.gather(logs, x, seed, notes); err != nil {
		return nil, err
	}
	return out, nil
}

// gather gathers the run's logs into its history, pmlin's comments
// (the command, the crash model, each start's fate) in front.
func (out *ExecOutcome) gather(logs string, x Exec, seed uint64, notes []string) error {
	res := out.Run
	var head bytes.Buffer
	hw := history.NewWriter(&head)
	comment := func(text string) { hw.Comment(commentText(text)) }
	comment("pmlin run " + shellword.Join(x.Args(seed)))
	comment(fmt.Sprintf("%d process kills (SIGKILL), each a delay drawn from the seed after the program said it was ready; "+
		"process crashes only: what the program wrote to its file mappings survives a kill", x.Kills))
	comment(x.Replays())
	for _, n := range notes {
		comment(n)
	}
	files, _ := filepath.Glob(filepath.Join(logs, "gen-*.pmlog"))
	if len(files) == 0 && len(res.Anomalies) == 0 {
		return fmt.Errorf("--exec %q left no log in $%s: a program under pmlin fuzz --exec records into logs there "+
			"(pmlin_open_logs(rec, NULL, 0) in pmlin.h, Recorder.open_logs() in pmlin_recorder.py; recorders/README.md)", x.Command, EnvLogDir)
	}
	m, err := merge.Gather(logs)
	if err != nil {
		comment("the logs did not gather: " + err.Error())
		if err := hw.Flush(); err != nil {
			return err
		}
		out.History = head.Bytes()
		switch {
		case errors.Is(err, history.ErrCoarseClock):
			out.Undecided = err
		case len(res.Anomalies) == 0:
			res.Anomalies = append(res.Anomalies, analyzer.Anomaly{Kind: Corrupt, Ops: []int64{}, Words: []uint64{},
				Explanation: fmt.Sprintf("the logs the program recorded do not gather: %v", err)})
		}
		return nil
	}
	if err := hw.Flush(); err != nil {
		return err
	}
	if _, err := m.WriteTo(&head); err != nil {
		return err
	}
	out.History, out.Gathered = head.Bytes(), true
	st := m.Stats()
	res.Operations = st.Ops
	res.Reads, res.CASes, res.Swaps, res.Returned = countSteps(out.History)
	res.Lines = int64(bytes.Count(out.History, []byte{'\n'}))
	return nil
}

// countSteps counts a history's invocations of reads, cas and swaps, and
// its responses.
func countSteps(hist []byte) (reads, cas, swaps, returned int64) {
	for line := range bytes.Lines(hist) {
		f := bytes.Fields(line)
		switch {
		case len(f) >= 2 && string(f[1]) == "ret":
			returned++
		case len(f) < 3 || string(f[1]) != "inv":
		case string(f[2]) == "read":
			reads++
		case string(f[2]) == "cas":
			cas++
		case string(f[2]) == "swap":
			swaps++
		}
	}
	return reads, cas, swaps, returned
}

// commentText makes text a comment's (docs/history-format.md: one line
// of valid UTF-8 without NUL bytes): a program's words and messages may
// hold anything.
func commentText(text string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == 0 {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(text, "\uFFFD"))
}

// startResult is how one start of the program went.
type startResult struct {
	ready    bool          // it said it was ready
	readyIn  time.Duration // after its start
	killed   bool          // pmlin sent its kill (after the delay)
	sent     time.Duration // when, after ready
	timedOut bool          // pmlin killed it at the timeout
	canceled bool          // the context ended it
	state    *os.ProcessState
	stderr   string
}

// killedByUs reports whether pmlin's kill ended the start.
func (s *startResult) killedByUs() bool {
	ws, ok := s.state.Sys().(syscall.WaitStatus)
	return s.killed && ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// status says how the start ended: "exit status 3", "killed by signal
// segmentation fault".
func (s *startResult) status() string {
	if ws, ok := s.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d", s.state.ExitCode())
}

// exitedZero reports whether the start ended by itself with status 0.
func (s *startResult) exitedZero() bool {
	ws, ok := s.state.Sys().(syscall.WaitStatus)
	return ok && ws.Exited() && ws.ExitStatus() == 0
}

// judge says what start n of the given role did, for the history's
// comments, and whether it is an anomaly (stuck, corrupt). An error is a
// program that does not follow the protocol.
func (s *startResult) judge(n int, role string, k ExecKill, x Exec) (string, *analyzer.Anomaly, error) {
	what := fmt.Sprintf("start %d (%s=%s)", n, EnvRole, role)
	said := func() string { return childError(s.stderr) }
	anomaly := func(kind analyzer.Kind, format string, args ...any) *analyzer.Anomaly {
		return &analyzer.Anomaly{Kind: kind, Ops: []int64{}, Words: []uint64{}, Explanation: fmt.Sprintf(format, args...)}
	}
	if role == RoleRecover {
		switch {
		case s.timedOut:
			return what + ": stuck", anomaly(Stuck, "%s, which recovers and reads the state back, did not end within %v (--exec-timeout); it said: %s", what, x.Timeout, said()), nil
		case s.exitedZero():
			return what + ": ended", nil, nil
		}
		return what + ": " + s.status(), anomaly(Corrupt, "%s, which recovers and reads the state back, failed (%s): %s", what, s.status(), said()), nil
	}
	switch {
	case !s.ready && s.timedOut:
		return what + ": not ready in time", anomaly(Stuck, "%s did not say it was ready (a line %q on descriptor $%s) within %v (--exec-timeout): stuck in its recovery? It said: %s",
			what, ReadyLine, EnvReadyFD, x.Timeout, said()), nil
	case !s.ready && s.exitedZero():
		return "", nil, fmt.Errorf("--exec %q: %s ended (exit status 0) without saying it was ready: a program under pmlin fuzz --exec writes the line %q to the descriptor $%s "+
			"once it has recovered and its threads run (pmlin_ready() in pmlin.h, ready() in pmlin_recorder.py; recorders/README.md)", x.Command, what, ReadyLine, EnvReadyFD)
	case !s.ready:
		return what + ": " + s.status() + " before it was ready", anomaly(Corrupt, "%s failed before it was ready (%s): %s", what, s.status(), said()), nil
	case s.killedByUs(), s.exitedZero():
		return fmt.Sprintf("%s: ready %s after it started, %s", what, ms(s.readyIn), k), nil, nil
	}
	return what + ": " + s.status(), anomaly(Corrupt, "%s failed by itself after it was ready (%s): %s", what, s.status(), said()), nil
}

// ms renders a duration in milliseconds, to the microsecond.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

// start runs one start of the program: with env added to pmlin's own
// environment, the ready pipe as descriptor readyFD, in a process group
// of its own. A start of role run is killed (the whole group, SIGKILL)
// kill after it says it is ready, unless it ends first; one not ready
// within timeout, or of role recover not ended within it, is killed and
// reported. When it has ended, whatever it left running in its group is
// killed and waited for, so that the next start never overlaps it.
func start(ctx context.Context, argv, env []string, role string, kill, timeout time.Duration) (*startResult, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...) // the last value of a name wins
	cmd.ExtraFiles = []*os.File{w}
	var stdout, stderr tail
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A process of the group may hold the output open a little after the
	// group is killed: Wait waits for the output that long at most.
	cmd.WaitDelay = time.Second
	begun := time.Now()
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("--exec: %w", err)
	}
	w.Close()
	pid := cmd.Process.Pid
	killGroup := func() { syscall.Kill(-pid, syscall.SIGKILL) }
	// ready is closed when the start says it is ready, at saidAt (set
	// before the close); read is closed when the pipe is read to its end.
	ready, read := make(chan struct{}), make(chan struct{})
	var saidAt time.Time
	go func() {
		defer close(read)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == ReadyLine {
				saidAt = time.Now()
				close(ready)
				io.Copy(io.Discard, r)
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s := &startResult{}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	readyC, timeoutC, ctxDone := (<-chan struct{})(ready), timer.C, ctx.Done()
	if role != RoleRun {
		readyC = nil // it only has to end
	}
	var killC <-chan time.Time
	var readyAt time.Time
	var werr error
wait:
	for {
		select {
		case werr = <-exited:
			break wait
		case <-readyC:
			readyAt = time.Now()
			s.ready, s.readyIn, readyC, timeoutC = true, readyAt.Sub(begun), nil, nil
			kt := time.NewTimer(kill)
			defer kt.Stop()
			killC = kt.C
		case <-killC:
			killGroup()
			s.killed, s.sent, killC = true, time.Since(readyAt), nil
		case <-timeoutC:
			killGroup()
			s.timedOut, timeoutC = true, nil
		case <-ctxDone:
			killGroup()
			s.canceled, ctxDone = true, nil
		}
	}
	killGroup()
	if err := groupGone(pid); err != nil {
		return nil, err
	}
	// A start that says it is ready and ends at once (it crashes by
	// itself) may end before the loop above saw the line: the group gone,
	// the pipe ends (unless a process that left the group holds it: then
	// not waited for long), and the line counts.
	if role == RoleRun && !s.ready {
		select {
		case <-read:
		case <-time.After(time.Second):
		}
		select {
		case <-ready:
			s.ready, s.readyIn = true, saidAt.Sub(begun)
		default:
		}
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return nil, fmt.Errorf("--exec: waiting for %s: %w", argv[0], werr)
	}
	s.state, s.stderr = cmd.ProcessState, stderr.String()
	if s.stderr == "" {
		s.stderr = stdout.String()
	}
	return s, nil
}

// groupGone waits until no process of the group pgid is left alive (they
// were killed), at most 10 s.
func groupGone(pgid int) error {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if !groupAlive(pgid) {
			return nil
		}
	}
	return fmt.Errorf("--exec: the processes of group %d were killed and are still there after 10 s", pgid)
}

// groupAlive reports whether a process of group pgid is alive. A zombie is
// not: it has exited, and its memory with it; only its parent's wait is
// missing, which for the orphaned children of a killed program is
// PID 1's, and PID 1 may reap them late (in a container, a second later).
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true // no way to tell a zombie: wait for the reaper
	}
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		i := bytes.LastIndexByte(b, ')') // after the command, which may hold anything
		if err != nil || i < 0 {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// tail keeps the last tailBytes written to it: what a program said last.
type tail struct{ b []byte }

const tailBytes = 8 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailBytes {
		t.b = append(t.b[:0], t.b[len(t.b)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	if len(t.b) > tailBytes {
		return string(t.b[len(t.b)-tailBytes:])
	}
	return string(t.b)
}
