package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/histgen"
)

// TestCheckMaxMemory: pmlin check --max-memory refuses a history that
// needs more, with exit 2 and a memory error naming what it would need
// (before reading a file, while reading standard input), and checks it
// under a bound that allows it.
func TestCheckMaxMemory(t *testing.T) {
	text, _, err := histgen.Planted(30_000, histgen.NoViolation, 5)
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "big.hist", string(text))
	for _, in := range []struct{ arg, stdin, need string }{
		{path, "", "estimated from its size"},
		{"-", string(text), "(stopped "},
	} {
		code, out, errs := pmlin(t, in.stdin, "check", "--max-memory", "1M", in.arg)
		if code != 2 || !strings.Contains(errs, "too large for the memory available: checking it needs") ||
			!strings.Contains(errs, in.need) || !strings.Contains(errs, "--max-memory allows 1 MiB") {
			t.Fatalf("%s: exit %d\n%s\n%s", in.arg, code, out, errs)
		}
		code, out, _ = pmlin(t, in.stdin, "check", "--json", "--max-memory", "1M", in.arg)
		if e := errorObject(t, out); code != 2 || e.Kind != "undecided" {
			t.Fatalf("%s --json: exit %d, %+v", in.arg, code, e)
		}
		code, out, errs = pmlin(t, in.stdin, "check", "--max-memory", "64G", in.arg)
		if code != 0 || !strings.Contains(out, "LINEARIZABLE") {
			t.Fatalf("%s under 64G: exit %d\n%s\n%s", in.arg, code, out, errs)
		}
	}
	if code, _, errs := pmlin(t, "", "check", "--max-memory", "lots", path); code != 2 || !strings.Contains(errs, "--max-memory") {
		t.Fatalf("--max-memory lots: exit %d, %s", code, errs)
	}
}

// TestMemoryBound reads the bound from a fake system: MemAvailable, and
// the room under the limits of cgroup v2 and v1 memory cgroups, the
// process's own and its parents', page cache counted as room.
func TestMemoryBound(t *testing.T) {
	root := t.TempDir()
	put := func(name, text string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, src := memoryBound(0, root); b != 0 || src != "" {
		t.Fatalf("nothing known: %d %q", b, src)
	}
	put("proc/meminfo", "MemTotal:       24684092 kB\nMemFree:  1 kB\nMemAvailable:    8388608 kB\n")
	if b, src := memoryBound(0, root); b != 8<<30 || !strings.Contains(src, "MemAvailable") {
		t.Fatalf("meminfo: %d %q", b, src)
	}
	if b, src := memoryBound(300<<20, root); b != 300<<20 || src != "--max-memory" {
		t.Fatalf("flag: %d %q", b, src)
	}
	put("proc/self/cgroup", "4:memory:/jobs/one\n0::/svc/a\n")
	put("sys/fs/cgroup/svc/a/memory.max", "max\n")
	put("sys/fs/cgroup/svc/memory.max", "1073741824\n")
	put("sys/fs/cgroup/svc/memory.current", "536870912\n")
	put("sys/fs/cgroup/svc/memory.stat", "anon 1\nfile 104857600\n")
	if b, src := memoryBound(0, root); b != 512<<20+100<<20 || !strings.HasSuffix(src, filepath.Join("sys/fs/cgroup/svc")) {
		t.Fatalf("cgroup v2 parent: %d %q", b, src)
	}
	put("sys/fs/cgroup/memory/jobs/one/memory.limit_in_bytes", "314572800\n")
	put("sys/fs/cgroup/memory/jobs/one/memory.usage_in_bytes", "10485760\n")
	put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n")
	if b, src := memoryBound(0, root); b != 290<<20 || !strings.HasSuffix(src, filepath.Join("memory/jobs/one")) {
		t.Fatalf("cgroup v1: %d %q", b, src)
	}
}
