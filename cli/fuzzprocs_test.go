package cli

import (
	"os"
	"runtime"
	"testing"

	"github.com/pmlin/pmlin/internal/crash"
	"github.com/pmlin/pmlin/internal/driver"
)

// TestFuzzProcs: a deterministic campaign on emulated regions with fewer
// jobs than processors runs on as many processors as jobs, and gets them
// back afterwards; the free scheduler, a killed child's campaign, the
// default number of jobs and a GOMAXPROCS the user set keep them all.
func TestFuzzProcs(t *testing.T) {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		t.Skip("GOMAXPROCS is set in the environment")
	}
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	det := crash.DefaultConfig()
	det.Driver.Sched = driver.Deterministic
	free := det
	free.Driver.Sched = driver.Free
	kill := det
	kill.CrashMode = crash.Kill
	for _, tc := range []struct {
		name string
		c    crash.Config
		jobs int
		want int
	}{
		{"deterministic, 1 job", det, 1, 1},
		{"deterministic, 3 jobs", det, 3, 3},
		{"deterministic, default jobs", det, 0, 4},
		{"deterministic, more jobs than processors", det, 8, 4},
		{"free scheduler", free, 1, 4},
		{"kill crashes", kill, 1, 4},
	} {
		restore := fuzzProcs(tc.c, tc.jobs)
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("%s: GOMAXPROCS %d, want %d", tc.name, got, tc.want)
		}
		restore()
		if got := runtime.GOMAXPROCS(0); got != 4 {
			t.Errorf("%s: GOMAXPROCS %d after the campaign, want 4 back", tc.name, got)
		}
	}
	t.Setenv("GOMAXPROCS", "4")
	restore := fuzzProcs(det, 1)
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("GOMAXPROCS set by the user: %d processors, want 4", got)
	}
	restore()
}
