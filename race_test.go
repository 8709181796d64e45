//go:build race

package pmlin_test

// raceEnabled: the tests run under the race detector, about ten times slower.
const raceEnabled = true
