package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The files pmlin writes: kept findings never replace each
// other, every output is whole or absent, a recording cut short says so,
// input that cannot be read twice is kept, and a finding's replay script
// runs as printed.

// testExecutable is the test binary, which runs as pmlin with asPmlinEnv
// set (TestMain).
func testExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// pmlinWith is pmlin with the replay script's program rp and context ctx.
func pmlinWith(ctx context.Context, rp replayProgram, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Command{Targets: testTargets, Stdout: &out, Stderr: &errb, replay: rp}.Run(ctx, args)
	return code, out.String(), errb.String()
}

// keptFiles are the files a fuzz campaign's summary lists under "kept:".
func keptFiles(out string) []string {
	_, after, ok := strings.Cut(out, "\nkept:\n")
	if !ok {
		return nil
	}
	var files []string
	for _, l := range strings.Split(after, "\n") {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		files = append(files, strings.Fields(l)[0])
	}
	return files
}

// findingArgs make a campaign that finds a planted bug in its first run.
func findingArgs(dir string, more ...string) []string {
	return append([]string{"fuzz", "--mutant", "dirty-spurious-failure", "--seconds", "60", "--out", dir, "--jobs", "1", "--seed", "1"}, more...)
}

// TestKeptFindingsNeverCollide: two campaigns into one --out, one after
// the other (the same seeds, another mode), or four at once (the same
// flags, four processes), keep every finding: each names its own files under "kept:",
// and every one is there with its own content.
func TestKeptFindingsNeverCollide(t *testing.T) {
	dir := t.TempDir()
	var kept [][]string
	var outs []string
	for _, mode := range []string{"strict", "recoverable"} {
		code, out, errs := pmlin(t, "", findingArgs(dir, "--mode", mode)...)
		if code != 1 {
			t.Fatalf("%s: exit %d\n%s\n%s", mode, code, out, errs)
		}
		kept, outs = append(kept, keptFiles(out)), append(outs, out)
	}
	// At once: processes (a campaign sets process-wide knobs of the
	// runtime, so campaigns in one process do not run side by side).
	var wg sync.WaitGroup
	conc := make([]string, 4)
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(testExecutable(t), findingArgs(dir)...)
			cmd.Env = append(os.Environ(), asPmlinEnv+"=1")
			out, _ := cmd.Output()
			conc[i] = string(out)
		}()
	}
	wg.Wait()
	for _, out := range conc {
		kept, outs = append(kept, keptFiles(out)), append(outs, out)
	}
	seen := map[string]int{}
	for i, files := range kept {
		if len(files) != 6 {
			t.Fatalf("campaign %d kept %v\n%s", i, files, outs[i])
		}
		for _, f := range files {
			if j, dup := seen[f]; dup {
				t.Fatalf("campaigns %d and %d both kept %s", j, i, f)
			}
			seen[f] = i
		}
		// The report is the campaign's own: the second ran in
		// recoverable mode.
		txt, err := os.ReadFile(files[1])
		mode := map[bool]string{true: "recoverable", false: "strict"}[i == 1]
		if err != nil || !strings.Contains(string(txt), "("+mode+" mode)") {
			t.Fatalf("campaign %d: %s: %v\n%s", i, files[1], err, txt)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(seen) {
		t.Fatalf("%d files in --out, %d kept", len(ents), len(seen))
	}
	// The names stay readable: the first is TARGET-MUTANT-run-SEED, the
	// others add -2, -3, ...
	if base := filepath.Base(kept[0][0]); !strings.HasPrefix(base, "pmwcas-dirty-spurious-failure-run-") || strings.Count(base, "-") != 5 {
		t.Fatalf("first name %s", base)
	}
	if base := filepath.Base(kept[1][0]); !strings.HasSuffix(base, "-2.hist") {
		t.Fatalf("second name %s", base)
	}
}

// TestOutputsWholeOrNothing: a gen, convert or merge that fails, or is
// interrupted (Ctrl-C: the context), leaves no file; a process killed
// while it writes leaves no file under the name it was given.
func TestOutputsWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	noFile := func(what, p string) {
		t.Helper()
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %s exists (%v)", what, p, err)
		}
		if left, _ := filepath.Glob(p + ".partial-*"); len(left) > 0 {
			t.Fatalf("%s: left %v", what, left)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C
	gen := filepath.Join(dir, "gen.hist")
	if code, _, errs := pmlinWith(ctx, replayProgram{}, "gen", "--ops", "200000", "-o", gen); code != 2 || !strings.Contains(errs, "interrupted") {
		t.Fatalf("gen interrupted: exit %d: %s", code, errs)
	}
	noFile("gen interrupted", gen)
	bad := writeFile(t, "bad.hist", strings.Repeat("1 inv read 1\n1 ret 0\n", 40000)+"1 ret 0\n")
	conv := filepath.Join(dir, "conv.pmlb")
	if code, _, errs := pmlin(t, "", "convert", "--to", "binary", bad, "-o", conv); code != 2 || !strings.Contains(errs, ":80001:") {
		t.Fatalf("convert: exit %d: %s", code, errs)
	}
	noFile("convert", conv)
	merged := filepath.Join(dir, "merged.hist")
	if code, _, errs := pmlin(t, "", "merge", "-o", merged, writeFile(t, "t1.log", "5 1 inv read 1\n3 1 ret 0\n")); code != 2 || !strings.Contains(errs, "t1.log:2") {
		t.Fatalf("merge: exit %d: %s", code, errs)
	}
	noFile("merge", merged)

	if testing.Short() {
		t.Skip("kills processes")
	}
	for _, args := range [][]string{{"gen", "--ops", "100000000"}, {"run", "--ops", "10000000", "--crashes", "1000"}} {
		p := filepath.Join(dir, args[0]+"-killed.hist")
		cmd := exec.Command(testExecutable(t), append(args, "-o", p)...)
		cmd.Env = append(os.Environ(), asPmlinEnv+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			left, _ := filepath.Glob(p + ".partial-*")
			st, err := os.Stat(strings.Join(left, ""))
			return len(left) == 1 && err == nil && st.Size() > 1<<20 // killed while it writes, past its first buffers
		}, cmd)
		cmd.Process.Kill()
		cmd.Wait()
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s killed: %s exists", args[0], p)
		}
		// What it wrote is there, under the temporary name, and
		// says it was cut short.
		left, _ := filepath.Glob(p + ".partial-*")
		code, _, errs := pmlin(t, "", "check", left[0])
		if args[0] == "run" && (code != 2 || !strings.Contains(errs, "the recording was cut short") && !strings.Contains(errs, "ends without its closing line")) {
			t.Fatalf("check of what the killed run wrote: exit %d: %s", code, errs)
		}
		os.Remove(left[0])
	}
}

// waitFor polls cond until it holds, killing cmd and failing after a
// minute.
func waitFor(t *testing.T, cond func() bool, cmd *exec.Cmd) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("timed out")
		}
	}
}

// TestRecordingCutShortSaysSo: a run interrupted (Ctrl-C) keeps what it
// recorded, ending with the interruption; pmlin check then prints the
// verdict of what the file holds and exits 2, naming the interruption's
// line; so does a history cut in the middle of a line.
func TestRecordingCutShortSaysSo(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.hist")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	code, _, errs := pmlinWith(ctx, replayProgram{}, "run", "--ops", "100000000", "-o", p)
	if code != 2 || !strings.Contains(errs, "interrupted: "+p+" keeps the ") {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(p)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	last := lines[len(lines)-1]
	var n int64
	if _, serr := fmt.Sscanf(last, "interrupted after %d of 100000000 operations", &n); err != nil || serr != nil || n == 0 {
		t.Fatalf("the history ends with %q (%v, %v)", last, err, serr)
	}
	code, out, errs := pmlin(t, "", "check", p)
	want := fmt.Sprintf("%s:%d: the recording was interrupted after %d of 100000000 operations", p, len(lines), n)
	if code != 2 || !strings.Contains(out, p+": LINEARIZABLE") || !strings.Contains(out, "recording cut short") || !strings.Contains(errs, want) {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = pmlin(t, "", "check", "--json", p)
	var v struct {
		Linearizable bool
		Error        checkErrorJSON
	}
	if code != 2 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &v) != nil || !v.Linearizable ||
		v.Error.Kind != kindMalformed || v.Error.Line != int64(len(lines)) || !strings.HasPrefix(v.Error.Message, "the recording was interrupted") {
		t.Fatalf("--json: exit %d\n%s", code, out)
	}
	// The exact search too.
	small := "pmlin-history v1\nrecording 9 operations\n1 inv read 1\n1 ret 0\ninterrupted after 1 of 9 operations\n"
	if code, out, errs := pmlin(t, small, "check", "--exact", "-"); code != 2 || !strings.Contains(out, "LINEARIZABLE") || !strings.Contains(errs, "<stdin>:5: the recording was interrupted after 1 of 9 operations") {
		t.Fatalf("--exact: exit %d\n%s\n%s", code, out, errs)
	}
	// A history written to standard output and cut in the middle of a
	// line (a pipe broken, a recorder killed).
	_, full, _ := pmlin(t, "", "run", "--ops", "300")
	cut := full[:len(full)/2]
	for strings.HasSuffix(cut, "\n") || !strings.Contains(cut[strings.LastIndex(cut, "\n"):], " ") {
		cut = cut[:len(cut)-1]
	}
	line := strings.Count(cut, "\n") + 1
	if code, _, errs := pmlin(t, cut, "check", "-"); code != 2 || !strings.Contains(errs, fmt.Sprintf("<stdin>:%d: the file ends in the middle of this line", line)) {
		t.Fatalf("cut at line %d: exit %d: %s", line, code, errs)
	}
	// Without its last line (cut at a line's end): no closing line.
	cut = full[:strings.LastIndex(full, "\nend\n")+1]
	if code, _, errs := pmlin(t, cut, "check", "-"); code != 2 || !strings.Contains(errs, "the recording ends without its closing line") {
		t.Fatalf("without end: exit %d: %s", code, errs)
	}
	if code, _, errs := pmlin(t, full, "check", "-"); code != 0 {
		t.Fatalf("complete: exit %d: %s", code, errs)
	}
}

// checkWithin runs pmlin check in process, failing the test if it does
// not end within a minute (the original pmlin hung on a named pipe).
func checkWithin(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := pmlinWith(context.Background(), replayProgram{}, args...)
		done <- result{code, out, errs}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(time.Minute):
		t.Fatalf("pmlin %s: still running after a minute", strings.Join(args, " "))
	}
	return 0, "", ""
}

// TestCheckNonSeekableInput: a named pipe or a pipe's /dev/fd/N is read
// once and kept: --report, --dot and --shrink get what a regular file
// gives (never a hang, never a report without values), and so does the
// recorder hint, which reads the history again.
func TestCheckNonSeekableInput(t *testing.T) {
	data, err := os.ReadFile("../examples/dirty-bit.hist")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	outputs := func(in, tag string) (report, dot, shrunk string) {
		t.Helper()
		html, d, s := filepath.Join(dir, tag+".html"), filepath.Join(dir, tag+".dot"), filepath.Join(dir, tag+".shrunk.hist")
		code, out, errs := checkWithin(t, "check", "--report", html, "--dot", d, "--shrink", s, in)
		if code != 1 || !strings.Contains(out, "NOT LINEARIZABLE") {
			t.Fatalf("%s: exit %d\n%s\n%s", tag, code, out, errs)
		}
		var texts [3]string
		for i, p := range []string{html, d, s} {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%s: %v\n%s", tag, err, errs)
			}
			texts[i] = strings.ReplaceAll(string(b), in, "INPUT")
		}
		return texts[0], texts[1], texts[2]
	}
	regular := filepath.Join(dir, "regular.hist")
	os.WriteFile(regular, data, 0o644)
	wantHTML, wantDot, wantShrunk := outputs(regular, "regular")

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	feedFIFO := func(data []byte) {
		go func() {
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Write(data)
				f.Close()
			}
		}()
	}
	feedFIFO(data)
	html, dot, shrunk := outputs(fifo, "fifo")
	if html != wantHTML || dot != wantDot || shrunk != wantShrunk {
		t.Fatalf("a named pipe's outputs differ from a file's:\n%s\n%s", shrunk, wantShrunk)
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() { w.Write(data); w.Close() }()
	html, dot, shrunk = outputs(fmt.Sprintf("/dev/fd/%d", r.Fd()), "pipe")
	if html != wantHTML || dot != wantDot || shrunk != wantShrunk {
		t.Fatalf("a pipe's outputs differ from a file's:\n%s\n%s", shrunk, wantShrunk)
	}

	// The hint reads the history again (its shape): from memory.
	concatenated := "1 inv read 10\n1 ret 0x200001\n1 inv cas 11:0:0x100001\n1 ret ok\n" +
		"2 inv cas 10:0:0x200001\n2 ret ok\n2 inv read 11\n2 ret 0x100001\n"
	feedFIFO([]byte(concatenated))
	if code, out, _ := checkWithin(t, "check", fifo); code != 1 || !strings.Contains(out, "concatenated") {
		t.Fatalf("hint: exit %d\n%s", code, out)
	}
}

// runReplay runs a finding's replay script as printed, from another
// directory, with env (and the test binary running as pmlin, whatever
// runs it), and returns its exit status and output.
func runReplay(t *testing.T, script string, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(script)
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", asPmlinEnv + "=1", "HOME=" + t.TempDir()}, env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("%s: %v", script, err)
	return 0, ""
}

// TestReplayScriptFindsPmlin: a finding's replay script is executable and
// runs the pmlin it finds first: $PMLIN, the program that wrote it, pmlin
// on the PATH, go run of the module the program was built from; with
// none, it says so (exit 127).
func TestReplayScriptFindsPmlin(t *testing.T) {
	exe := testExecutable(t)
	bin := t.TempDir() // a PATH directory
	onPath := filepath.Join(t.TempDir(), "path")
	os.Mkdir(onPath, 0o755)
	if err := os.Symlink(exe, filepath.Join(onPath, "pmlin")); err != nil {
		t.Skip(err)
	}
	module := t.TempDir()
	os.WriteFile(filepath.Join(module, "go.mod"), []byte("module example.com/mine\n"), 0o644)
	goLog := filepath.Join(t.TempDir(), "go.log")
	// A go command that logs how it was called and runs pmlin in place of
	// the package it was asked to run.
	fakeGo := fmt.Sprintf("#!/bin/sh\necho \"$@\" >> %s\nshift 4\nexec %s \"$@\"\n", shellJoin([]string{goLog}), shellJoin([]string{exe}))
	os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755)
	gone := filepath.Join(t.TempDir(), "gone", "pmlin")
	for _, tc := range []struct {
		name string
		rp   replayProgram
		env  []string
		code int
	}{
		{"$PMLIN", replayProgram{exe: gone}, []string{"PMLIN=" + exe}, 1},
		{"the program that wrote it", replayProgram{exe: exe}, nil, 1},
		{"pmlin on the PATH", replayProgram{exe: gone}, []string{"PATH=" + onPath + ":/usr/bin:/bin"}, 1},
		{"go run", replayProgram{exe: gone, module: module, pkg: "example.com/mine/cmd/pmlin"}, []string{"PATH=" + bin + ":/usr/bin:/bin"}, 1},
		{"none", replayProgram{exe: gone, module: module, pkg: "example.com/mine/cmd/pmlin"}, nil, 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			code, out, errs := pmlinWith(context.Background(), tc.rp, findingArgs(dir)...)
			kept := keptFiles(out)
			if code != 1 || len(kept) < 4 || !strings.Contains(out, "replay (deterministic scheduler: the same history, byte for byte):\n  "+kept[3]+"\n") {
				t.Fatalf("exit %d: %v\n%s\n%s", code, kept, out, errs)
			}
			script := kept[3]
			if st, err := os.Stat(script); err != nil || st.Mode().Perm()&0o111 != 0o111 {
				t.Fatalf("%s: %v, %v", script, st.Mode(), err)
			}
			env := tc.env
			if len(env) > 0 && strings.HasPrefix(env[0], "PATH=") {
				env = append(env[1:], env[0]) // the later PATH wins
			}
			code, out = runReplay(t, script, env...)
			switch {
			case code != tc.code:
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, out)
			case code == 127 && !strings.Contains(out, "pmlin not found: set PMLIN"):
				t.Fatalf("%s", out)
			case code == 1 && !strings.Contains(out, "NOT LINEARIZABLE"):
				t.Fatalf("%s", out)
			}
			if tc.name == "go run" {
				b, _ := os.ReadFile(goLog)
				calls := strings.Split(string(b), "\n")
				goRun := "-C " + module + " run example.com/mine/cmd/pmlin "
				if len(calls) != 3 || !strings.HasPrefix(calls[0], goRun+"run --target pmwcas ") || !strings.HasPrefix(calls[1], goRun+"check --mode strict ") {
					t.Fatalf("go called as %q", calls)
				}
			}
		})
	}
}

// TestFindReplayProgram: a go run build is not the replay's program (it
// is deleted when go run exits); the module is found from the working
// directory by its path.
func TestFindReplayProgram(t *testing.T) {
	for exe, temp := range map[string]bool{"/tmp/go-build1234/b001/exe/pmlin": true, "/home/u/go/bin/pmlin": false, "/usr/local/bin/pmlin": false} {
		if goBuildTemp(exe) != temp {
			t.Errorf("%s: go run build %v", exe, !temp)
		}
	}
	if p := modulePath("../go.mod"); p != "github.com/pmlin/pmlin" {
		t.Fatalf("module %q", p)
	}
}
