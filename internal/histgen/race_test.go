//go:build race

package histgen

const raceEnabled = true
