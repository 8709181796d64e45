package driver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
)

// Finding a goroutine that stopped making region accesses. A watchdog that
// finds a worker (or a recovery) silent for too long wants to know whether
// it spins (it runs Go code that never touches the region: stuck) or waits
// in Go (a mutex, a channel: blocked), and where. Go has no handle on a
// goroutine; a profiler label (runtime/pprof) is the one thing another
// goroutine can find it by, and setting one costs a pointer store. The
// goroutine profile, read only when a watchdog fires, gives each labelled
// goroutine's stack: a goroutine parked by the runtime has runtime.gopark
// on top, a running or runnable one its own code.

// A Tag labels goroutines so that Locate can find them.
type Tag struct {
	ctx   context.Context
	label string
}

// tagKey is the profiler label key of pmlin's tags.
const tagKey = "pmlin-goroutine"

// NewTag returns a tag named name, made unique in the process: a name
// built from a pointer (a run's) can come back once the memory is reused,
// while a goroutine of the old run, abandoned in the target's code, still
// carries it.
func NewTag(name string) Tag {
	label := fmt.Sprintf("%s #%d", name, tagSerial.Add(1))
	return Tag{ctx: pprof.WithLabels(context.Background(), pprof.Labels(tagKey, label)), label: label}
}

// tagSerial numbers the tags of the process: profiler labels belong to
// the process (one goroutine profile), so their uniqueness does too.
var tagSerial atomic.Uint64

// Set labels the calling goroutine with the tag.
func (t Tag) Set() {
	if t.ctx != nil {
		pprof.SetGoroutineLabels(t.ctx)
	}
}

// Untag removes every label of the calling goroutine: for a goroutine
// that goes on to other work, or waits for it, once the work it was
// tagged for is over. Locate would otherwise find it, parked, under a
// tag whose work now runs on another goroutine (one name on two
// goroutines: "the first one" may be the wrong one).
func Untag() { pprof.SetGoroutineLabels(context.Background()) }

// Spot is where a goroutine was found.
type Spot struct {
	// Waiting: parked by the Go runtime (a mutex, a channel, a sleep);
	// else running or runnable (it spins).
	Waiting bool
	// Func, File and Line are its innermost frame outside the Go runtime
	// and the standard library's synchronization (sync, internal/,
	// runtime/, time.Sleep), and Waits the innermost one inside them (what
	// it waits in), if any.
	Func, File string
	Line       int
	Waits      string
}

func (s Spot) String() string {
	where := fmt.Sprintf("at %s, %s:%d", s.Func, s.File, s.Line)
	if s.Func == "" {
		where = "at an unknown place"
	}
	if s.Waiting {
		in := "the Go runtime (a channel, a select, a sleep)"
		if s.Waits != "" {
			in = s.Waits
		}
		return fmt.Sprintf("it waits in %s %s", in, where)
	}
	return "it runs " + where
}

// Locate finds the goroutine labelled with t (the first one, if several
// are) in the goroutine profile. ok is false if none is.
func (t Tag) Locate() (s Spot, ok bool) {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return Spot{}, false
	}
	return parseProfile(buf.Bytes(), t.label)
}

// parseProfile reads a goroutine profile in its debug=1 text form: groups
// of goroutines with the same stack, each "N @ pc pc ..." with optional
// "# labels: {...}" and one "#\tpc\tfunc+off\tfile:line" per frame.
func parseProfile(b []byte, label string) (Spot, bool) {
	want := strconv.Quote(tagKey) + ":" + strconv.Quote(label)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var top string // the first pc of the current group
	found := false
	var s Spot
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if found {
				return s, true
			}
			top = ""
		case !strings.HasPrefix(line, "#"):
			if _, pcs, ok := strings.Cut(line, " @ "); ok {
				top, _, _ = strings.Cut(pcs, " ")
			}
		case strings.HasPrefix(line, "# labels:"):
			if strings.Contains(line, want) {
				found = true
				s.Waiting = parkedPC(top)
			}
		case found && s.Func == "":
			fn, file, ln, ok := parseFrame(line)
			if !ok {
				continue
			}
			if internalFunc(fn) {
				if s.Waits == "" {
					s.Waits = fn
				}
				continue
			}
			s.Func, s.File, s.Line = fn, file, ln
		}
	}
	return s, found
}

// parkedPC reports whether the program counter (hex) is in the runtime's
// parking function.
func parkedPC(hex string) bool {
	pc, err := strconv.ParseUint(strings.TrimPrefix(hex, "0x"), 16, 64)
	if err != nil || pc == 0 {
		return false
	}
	f := runtime.FuncForPC(uintptr(pc) - 1)
	return f != nil && strings.HasPrefix(f.Name(), "runtime.gopark")
}

// parseFrame reads "#\t0x4dc018\tmain.spin+0x78\t/tmp/x/main.go:14".
func parseFrame(line string) (fn, file string, ln int, ok bool) {
	f := strings.Fields(strings.TrimPrefix(line, "#"))
	if len(f) < 3 {
		return "", "", 0, false
	}
	fn, _, _ = strings.Cut(f[1], "+0x")
	path, n, ok := strings.Cut(f[2], ":")
	if !ok {
		return "", "", 0, false
	}
	ln, err := strconv.Atoi(n)
	if err != nil {
		return "", "", 0, false
	}
	return fn, filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path)), ln, true
}

// internalFunc tells frames of the Go runtime and of the standard
// library's waiting (which say what a goroutine waits in, not where).
func internalFunc(fn string) bool {
	for _, p := range []string{"runtime.", "runtime/", "internal/", "sync.", "sync/", "time.Sleep"} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// PanicError is a panic of a target's code that the harness caught: a
// finding ("corrupt"), as an error the target returned would be.
type PanicError struct {
	Value any
	// Where is the innermost frame outside the Go runtime of the goroutine
	// that panicked: "func, dir/file.go:line".
	Where string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v (at %s)", e.Value, e.Where) }

// NewPanicError makes the PanicError of a recovered value v, from the
// stack of the goroutine that panicked (runtime/debug.Stack, called in the
// deferred function that recovered).
func NewPanicError(v any, stack []byte) *PanicError {
	return &PanicError{Value: v, Where: panicSite(stack)}
}

// panicSite reads a goroutine's stack as debug.Stack prints it: after the
// frame of panic itself, the first frame outside the runtime.
func panicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	seen := false
	for i := 0; i+1 < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "panic("):
			seen = true
		case !seen || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "runtime.") || strings.HasPrefix(l, "runtime/"):
		default:
			fn := l
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j]
			}
			loc := strings.TrimSpace(lines[i+1])
			if j := strings.LastIndex(loc, " +0x"); j > 0 {
				loc = loc[:j]
			}
			if path, n, ok := strings.Cut(loc, ":"); ok {
				loc = filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path)) + ":" + n
			}
			return fn + ", " + loc
		}
	}
	return "an unknown place"
}
