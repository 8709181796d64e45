package shadow_test

import (
	"os"
	"testing"

	"github.com/pmlin/pmlin/examples/shadow"
	"github.com/pmlin/pmlin/pmlintest"
)

// TestMain lets this test binary be the child process of --crash-mode kill.
func TestMain(m *testing.M) { os.Exit(pmlintest.Main(m, shadow.Target())) }

func TestFuzz(t *testing.T) {
	pmlintest.Fuzz(t, shadow.Target(), "--seconds", "2")
}

func TestFuzzProcessKills(t *testing.T) {
	pmlintest.Fuzz(t, shadow.Target(), "--seconds", "2", "--crash-mode", "kill")
}
