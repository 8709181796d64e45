//go:build !race

package cli

// raceEnabled: the tests run under the race detector, about ten times slower.
const raceEnabled = false
