package crash

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestKillDirsOfDeadRunsRemoved: a run of the process-kill mode removes,
// when it starts, the directories that runs killed before they could
// (their owner is dead: their lock is free), and never one of a live run
// or one it cannot tell (no lock file: an older pmlin's); its own is gone
// at its end.
func TestKillDirsOfDeadRunsRemoved(t *testing.T) {
	if os.Getenv(killedRunEnv) != "" {
		// The run to be killed: long, of the process-kill mode.
		c := config(2, 4, 2, 2)
		c.Ops, c.Crashes, c.CrashMode, c.Child.Command = 1_000_000, 2, Kill, testCommand
		if _, err := Run(context.Background(), c, io.Discard); err != nil {
			t.Fatal(err)
		}
		return
	}
	if testing.Short() {
		t.Skip("kills processes")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead, lock, err := makeKillDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dead, "log-1"), make([]byte, 1<<20), 0o644)
	lock.Close() // as the kernel does when its process dies
	live, lock, err := makeKillDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	older, _ := os.MkdirTemp(tmp, killDirPattern)

	// A process killed with SIGKILL in the middle of a run leaves its
	// directory, which the next run removes.
	killed := exec.Command(os.Args[0], "-test.run=^TestKillDirsOfDeadRunsRemoved$")
	killed.Env = append(os.Environ(), killedRunEnv+"=1")
	killed.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // it and its children: one group
	var kout bytes.Buffer
	killed.Stdout, killed.Stderr = &kout, &kout
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	var left string
	for deadline := time.Now().Add(time.Minute); left == ""; time.Sleep(10 * time.Millisecond) {
		dirs, _ := filepath.Glob(filepath.Join(tmp, killDirPattern))
		for _, d := range dirs {
			if d != dead && d != live && d != older {
				if _, err := os.Stat(filepath.Join(d, "log-2")); err == nil { // its seed's
					left = d
				}
			}
		}
		if time.Now().After(deadline) {
			killed.Process.Kill()
			killed.Wait()
			t.Fatalf("the run made no directory:\n%s", kout.String())
		}
	}
	syscall.Kill(-killed.Process.Pid, syscall.SIGKILL) // it and its child
	killed.Wait()
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the killed run's directory: %v", err)
	}

	c := config(2, 4, 2, 2)
	c.Ops, c.Crashes, c.CrashMode, c.Child.Command = 200, 2, Kill, testCommand
	if _, err := Run(context.Background(), c, io.Discard); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{dead: false, left: false, live: true, older: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", dir, err == nil, want)
		}
	}
	if dirs, _ := filepath.Glob(filepath.Join(tmp, killDirPattern)); len(dirs) != 2 {
		t.Errorf("left %v", dirs)
	}
}

// killedRunEnv makes the test binary run TestKillDirsOfDeadRunsRemoved's
// run to be killed.
const killedRunEnv = "PMLIN_CRASH_TEST_KILLED_RUN"
