// Package testenv holds what the repository's tests take from, or give
// to, their environment: the size of the long random campaigns (the
// differential tests against the exact checker, brute force and
// Porcupine; the many-seed equivalence tests), and the environment of the
// child processes that tests start.
//
// A campaign runs at its default size under `go test ./...` and in CI, a
// size that still finds the known bugs of its kind, and at its long size
// when the environment variable PMLIN_LONG is set to 1. A size given
// explicitly (a test flag such as -diff.seeds) is kept.
package testenv

import (
	"os"
	"testing"
)

// LongEnv is the environment variable that asks for the long campaigns.
const LongEnv = "PMLIN_LONG"

// Long reports whether the environment asks for the long campaigns:
// LongEnv set to anything but "", "0" or "false".
func Long() bool {
	v := os.Getenv(LongEnv)
	return v != "" && v != "0" && v != "false"
}

// Count is the size of a campaign: explicit if positive (a flag the user
// gave), else long under Long, else n; a default size is cut to a tenth
// (at least 1) under -short.
func Count(explicit, n, long int) int {
	if explicit > 0 {
		return explicit
	}
	if Long() {
		n = long
	}
	if testing.Short() {
		n = max(n/10, 1)
	}
	return n
}

// ChildGORACE is the value of GORACE for a child process that may be
// built with -race (a test binary started again): the race detector
// otherwise sleeps a second when a process exits, and each run of the
// process-kill modes waits for children that end normally.
func ChildGORACE() string {
	return os.Getenv("GORACE") + " atexit_sleep_ms=0"
}
