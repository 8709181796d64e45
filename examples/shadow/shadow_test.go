package shadow_test

import (
	"os"
	"testing"
	"time"

	"github.com/pmlin/pmlin/examples/shadow"
	"github.com/pmlin/pmlin/pmlintest"
)

// TestMain lets this test binary be the child process of --crash-mode kill.
func TestMain(m *testing.M) { os.Exit(pmlintest.Main(m, shadow.Target())) }

func TestFuzz(t *testing.T) {
	pmlintest.Fuzz(t, shadow.Target(), pmlintest.FuzzOptions{Duration: 2 * time.Second})
}

func TestFuzzProcessKills(t *testing.T) {
	pmlintest.Fuzz(t, shadow.Target(), pmlintest.FuzzOptions{Duration: 2 * time.Second, CrashMode: "kill"})
}
