package pmlintest

import (
	"slices"
	"testing"
	"time"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/lockmwcas"
)

// TestFuzzOptionsArgs: each field of FuzzOptions is its flag of pmlin
// fuzz, a zero field no flag at all (the flag's default), and Flags come
// last, so that they can set what no field does.
func TestFuzzOptionsArgs(t *testing.T) {
	for _, c := range []struct {
		o    FuzzOptions
		want []string
	}{
		{FuzzOptions{}, []string{"fuzz", "--target", "t", "--json"}},
		{FuzzOptions{Duration: 1500 * time.Millisecond, Runs: 7, Mutant: "m", Mode: pmlin.Durable, CrashMode: "kill", Out: "dir", Flags: []string{"--ops", "10"}},
			[]string{"fuzz", "--target", "t", "--json", "--mode", "durable", "--seconds", "1.5", "--runs", "7", "--mutant", "m", "--crash-mode", "kill", "--out", "dir", "--ops", "10"}},
		{FuzzOptions{Duration: 2 * time.Second, Mode: pmlin.Recoverable}, []string{"fuzz", "--target", "t", "--json", "--mode", "recoverable", "--seconds", "2"}},
	} {
		if got := c.o.args("t"); !slices.Equal(got, c.want) {
			t.Errorf("%+v: args %q, want %q", c.o, got, c.want)
		}
	}
}

// TestFuzzOptionsRun: pmlin fuzz takes the flags that the fields make
// (a campaign of one run in recoverable mode, of a correct target).
func TestFuzzOptionsRun(t *testing.T) {
	Fuzz(t, lockmwcas.Target(), FuzzOptions{Duration: 20 * time.Second, Runs: 1, Mode: pmlin.Recoverable, Out: t.TempDir(), Flags: []string{"--ops", "100"}})
}
