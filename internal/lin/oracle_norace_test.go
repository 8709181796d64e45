//go:build !race

package lin_test

// raceEnabled: the tests run under the race detector, which slows the
// checker about tenfold.
const raceEnabled = false
