package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckUnderMemoryCgroup runs pmlin check (a binary built from this
// tree, without the race detector, whose shadow memory would be counted)
// inside memory cgroups of its own, v1 or v2, on the shapes that drive its
// memory: many distinct words beyond the direct table, many processes,
// standard input of unknown size, and --exact on one large component.
// Under a limit below what each needs it
// must stop with exit 2, kind undecided, saying what it needs, never be
// killed by the kernel; under a limit it fits in, it gives its verdict.
// The shapes are large ones at a quarter, a half and a tenth, under
// limits at which pmlin before this test was killed (each of its runs
// but one of six): a few seconds in all, after the build. It skips,
// saying why, where no memory cgroup can be made.
func TestCheckUnderMemoryCgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds pmlin and runs it under memory cgroups")
	}
	parent, err := testCgroupParent()
	if err != nil {
		t.Skipf("no memory cgroup to make one in: %v", err)
	}
	dir := t.TempDir()
	bin := buildPmlin(t, dir)
	gen := func(name string, args ...string) string {
		p := filepath.Join(dir, name)
		if out, err := exec.Command(bin, append([]string{"gen", "-o", p}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("pmlin gen: %v\n%s", err, out)
		}
		return p
	}
	// 1M one-word operations over 2.5*10^7 addresses: most words distinct,
	// and beyond the direct table (a quarter of 4M over 10^8).
	words := gen("words.hist", "--ops", "1000000", "--k", "1", "--words", "25000000")
	// 500,000 processes of one read each (half of 10^6).
	procs := writeHistory(t, dir, "procs.hist", func(w *bufio.Writer) error {
		w.WriteString("pmlin-history v1\n")
		var b []byte
		for p := range 500_000 {
			b = strconv.AppendInt(b[:0], int64(p), 10)
			w.Write(b)
			w.WriteString(" inv read 1\n")
			w.Write(b)
			w.WriteString(" ret 0\n")
		}
		return nil
	})
	// 1M operations, read from standard input (a tenth of 10M).
	long := gen("long.hist", "--ops", "1000000")
	// 20,000 operations in one component, for --exact (a fifth of 100k).
	wide := gen("wide.hist", "--ops", "20000")
	for _, c := range []struct {
		name, file string
		stdin      bool
		limit      int64
		fits       bool
		exact      bool
	}{
		{"words at 150M", words, false, 150 << 20, false, false},
		{"words at 200M", words, false, 200 << 20, false, false},
		{"words at 400M", words, false, 400 << 20, true, false},
		{"procs at 100M", procs, false, 100 << 20, false, false},
		{"procs at 150M", procs, false, 150 << 20, false, false},
		{"procs at 400M", procs, false, 400 << 20, true, false},
		{"stdin at 60M", long, true, 60 << 20, false, false},
		{"stdin at 100M", long, true, 100 << 20, false, false},
		{"stdin at 300M", long, true, 300 << 20, true, false},
		{"exact at 64M", wide, false, 64 << 20, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cg := parent.child(t, c.limit)
			args := []string{"check", "--json", c.file}
			if c.stdin {
				args[2] = "-"
			}
			if c.exact {
				args = append(args, "--exact")
			}
			code, out, errs, signaled := cg.run(t, bin, c.file, c.stdin, args...)
			if kills := cg.oomKills(); signaled != "" || kills > 0 {
				t.Fatalf("killed (%s; OOM kills %d) under a limit of %s:\n%s", signaled, kills, mib(c.limit), errs)
			}
			if c.fits {
				var v struct {
					Linearizable bool `json:"linearizable"`
				}
				if code != 0 || json.Unmarshal([]byte(out), &v) != nil || !v.Linearizable {
					t.Fatalf("under %s: exit %d, want its verdict (linearizable, exit 0)\n%s%s", mib(c.limit), code, out, errs)
				}
				return
			}
			var e errorJSON
			if code != 2 || json.Unmarshal([]byte(out), &e) != nil || e.Error.Kind != kindUndecided ||
				!strings.Contains(e.Error.Message, "too large for the memory available: checking it needs") ||
				!strings.Contains(e.Error.Message, "the limit of memory cgroup") {
				t.Fatalf("under %s: exit %d, want 2, kind undecided, what it needs and the cgroup's limit\n%s%s", mib(c.limit), code, out, errs)
			}
		})
	}
}

// mib writes a limit for the test's messages.
func mib(b int64) string { return strconv.FormatInt(b>>20, 10) + " MiB" }

// buildPmlin builds command pmlin into dir, without the race detector.
func buildPmlin(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build pmlin with: %v", err)
	}
	bin := filepath.Join(dir, "pmlin")
	cmd := exec.Command(goTool, "build", "-o", bin, "../cmd/pmlin")
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func writeHistory(t *testing.T, dir, name string, fill func(*bufio.Writer) error) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testCgroup is a memory cgroup the test made (or may make children in).
type testCgroup struct {
	cgroupFiles
}

// testCgroupParent is the memory cgroup of the test process, if it can
// hold one the test makes: one whose limit can be written.
func testCgroupParent() (testCgroup, error) {
	cgs := memoryCgroups("/")
	if len(cgs) == 0 {
		return testCgroup{}, errors.New("no memory cgroup (v1 memory controller or v2 memory.max) is visible for this process")
	}
	own := cgs[0]
	probe := filepath.Join(own.dir, fmt.Sprintf("pmlin-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return testCgroup{}, fmt.Errorf("cannot make a cgroup under %s: %w", own.dir, err)
	}
	defer os.Remove(probe)
	if err := os.WriteFile(filepath.Join(probe, own.limit), []byte("100000000"), 0o644); err != nil {
		return testCgroup{}, fmt.Errorf("cannot set the limit of a cgroup under %s (v2: is the memory controller enabled in its cgroup.subtree_control?): %w", own.dir, err)
	}
	return testCgroup{own}, nil
}

// child makes a cgroup under c with the given limit, removed at the end of
// the test.
func (c testCgroup) child(t *testing.T, limit int64) testCgroup {
	t.Helper()
	k := c.cgroupFiles
	k.dir = filepath.Join(c.dir, fmt.Sprintf("pmlin-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(k.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The processes inside have exited; the kernel may take a moment
		// to let go of the cgroup.
		for range 50 {
			if err := os.Remove(k.dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("could not remove cgroup %s", k.dir)
	})
	if err := os.WriteFile(filepath.Join(k.dir, k.limit), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	return testCgroup{k}
}

// run runs bin with args inside c (a shell puts itself in the cgroup, then
// becomes bin), standard input from file when stdin is set. signaled names
// the signal that killed it, if one did.
func (c testCgroup) run(t *testing.T, bin, file string, stdin bool, args ...string) (code int, stdout, stderr, signaled string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(c.dir, "cgroup.procs"), bin}, args...)...)
	if stdin {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			signaled = ws.Signal().String()
		}
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return code, out.String(), errb.String(), signaled
}

// oomKills is the number of processes the kernel killed in c for want of
// memory (v1 memory.oom_control, v2 memory.events; 0 if not told).
func (c testCgroup) oomKills() int {
	for _, f := range []string{"memory.events", "memory.oom_control"} {
		b, err := os.ReadFile(filepath.Join(c.dir, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
	}
	return 0
}
