//go:build !amd64

package record

const tscInstructions = false

func tscOrdered() uint64                 { panic("driver: no TSC on this architecture") }
func tscSkewed(uint64) uint64            { panic("driver: no TSC on this architecture") }
func cpuHasInvariantTSC() (bool, string) { return false, "not an x86-64 CPU" }
