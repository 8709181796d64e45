package atomicfile

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// leftovers are the files of dir other than want.
func leftovers(t *testing.T, dir string, want ...string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		keep := false
		for _, w := range want {
			keep = keep || e.Name() == w
		}
		if !keep {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteCommits(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "h.hist")
	if err := Write(context.Background(), p, 0o755, false, func(w io.Writer) error {
		_, err := io.WriteString(w, "pmlin-history v1\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "pmlin-history v1\n" {
		t.Fatalf("%q, %v", b, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("mode %v: the owner cannot execute it", st.Mode())
	}
	if l := leftovers(t, dir, "h.hist"); l != nil {
		t.Fatalf("left %v", l)
	}
}

// TestFailureLeavesNothing: a fill that fails, or an interrupt while it
// writes, leaves neither the file nor a temporary one; a file it would
// have replaced (force) stays as it was.
func TestFailureLeavesNothing(t *testing.T) {
	for _, old := range []bool{false, true} {
		dir := t.TempDir()
		p := filepath.Join(dir, "out.hist")
		if old {
			os.WriteFile(p, []byte("old\n"), 0o644)
		}
		boom := errors.New("boom")
		err := Write(context.Background(), p, 0o644, true, func(w io.Writer) error {
			io.WriteString(w, strings.Repeat("x", 1<<20)) // past the buffer: on disk
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		err = Write(ctx, p, 0o644, true, func(w io.Writer) error {
			for i := 0; ; i++ {
				if i == 10 {
					cancel() // Ctrl-C
				}
				if _, err := io.WriteString(w, strings.Repeat("y", 1<<16)); err != nil {
					return err
				}
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted: err %v", err)
		}
		b, err := os.ReadFile(p)
		switch {
		case old && string(b) != "old\n":
			t.Fatalf("the old file became %d bytes", len(b))
		case !old && !errors.Is(err, fs.ErrNotExist):
			t.Fatalf("a failed write left %d bytes", len(b))
		}
		if l := leftovers(t, dir, "out.hist"); l != nil {
			t.Fatalf("left %v", l)
		}
	}
}

// TestNoForceNeverReplaces: without force an existing file is refused up
// front, and of writers that race for one name exactly one wins, whole.
func TestNoForceNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("mine"), 0o644)
	if _, err := Create(p, 0o644, false); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("err %v", err)
	}
	os.Remove(p)
	const n = 8
	files := make([]*File, n)
	for i := range files {
		f, err := Create(p, 0o644, false) // all before any commits
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(strings.Repeat(string(rune('a'+i)), 1000)))
		files[i] = f
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, f := range files {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f.Commit() }()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, fs.ErrExist):
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(p)
	if won != 1 || len(b) != 1000 || strings.Count(string(b), string(b[:1])) != 1000 {
		t.Fatalf("%d won; the file: %.20q (%d bytes)", won, b, len(b))
	}
	if l := leftovers(t, dir, "f"); l != nil {
		t.Fatalf("left %v", l)
	}
}

// TestSpecialFiles: a symbolic link keeps pointing at the new file; a
// device is written in place (never renamed over).
func TestSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
	os.WriteFile(target, []byte("old"), 0o644)
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	if err := Write(context.Background(), link, 0o644, true, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Fatalf("target %q", b)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
	if err := Write(context.Background(), os.DevNull, 0o644, true, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode().IsRegular() {
		t.Fatalf("%s: %v %v", os.DevNull, st.Mode(), err)
	}
}

// TestKilledWriterLeavesNoFile: a process killed with SIGKILL while it
// writes leaves its temporary file, never a partial file under the name.
func TestKilledWriterLeavesNoFile(t *testing.T) {
	if p := os.Getenv("ATOMICFILE_TEST_WRITE"); p != "" {
		f, err := Create(p, 0o644, false)
		if err != nil {
			os.Exit(3)
		}
		w := bufio.NewWriter(f)
		w.WriteString("started\n")
		w.Flush()
		for {
			w.WriteString("pmlin-history v1\n")
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "run.hist")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriterLeavesNoFile$")
	cmd.Env = append(os.Environ(), "ATOMICFILE_TEST_WRITE="+p)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		l := leftovers(t, dir)
		if len(l) == 1 {
			if st, err := os.Stat(filepath.Join(dir, l[0])); err == nil && st.Size() > 1<<20 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the writer wrote nothing: %v", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists after the writer was killed (%v)", p, err)
	}
	l := leftovers(t, dir)
	if len(l) != 1 || !strings.HasPrefix(l[0], "run.hist.partial-") {
		t.Fatalf("left %v", l)
	}
}

// failingFile fails every write as a full disk does, naming its file.
type failingFile struct{ name string }

func (f failingFile) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: f.name, Err: errors.New("no space left on device")}
}
func (f failingFile) Close() error { os.Remove(f.name); return nil }

// TestErrorsNameTheFile: an error of the temporary file names the file
// asked for (the temporary one is gone).
func TestErrorsNameTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.hist")
	f, err := CreateWith(p, 0o644, false, func(name string, perm fs.FileMode) (io.WriteCloser, error) {
		os.WriteFile(name, nil, perm)
		return failingFile{name}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if _, err := f.Write([]byte("x")); err == nil || err.Error() != "write "+p+": no space left on device" {
		t.Fatalf("%v", err)
	}
}
