package record

import "github.com/pmlin/pmlin/internal/cpuid"

// tscInstructions: this architecture has RDTSCP, if the CPU
// says so (cpuHasInvariantTSC).
const tscInstructions = true

// tscOrdered reads the TSC after every earlier load and before every
// later memory access (RDTSCP, then a load that depends on the value
// read: see clock_amd64.s). Callers check TSCUsable first.
func tscOrdered() uint64

// tscAnchor is what tscOrdered's ordering load reads (two words: its
// index is the counter's top bit); nothing writes it.
var tscAnchor [2]uint64

func tscSkewed(skew uint64) uint64

// cpuHasInvariantTSC checks CPUID: leaf 0x80000001 EDX bit 27 is RDTSCP,
// leaf 0x80000007 EDX bit 8 the invariant TSC.
func cpuHasInvariantTSC() (bool, string) {
	maxExt, _, _, _ := cpuid.CPUID(0x80000000, 0)
	if maxExt < 0x80000007 {
		return false, "the CPU does not report whether its TSC is invariant"
	}
	if _, _, _, d := cpuid.CPUID(0x80000001, 0); d&(1<<27) == 0 {
		return false, "the CPU has no RDTSCP"
	}
	if _, _, _, d := cpuid.CPUID(0x80000007, 0); d&(1<<8) == 0 {
		return false, "the CPU's TSC is not invariant (its rate may change with power states)"
	}
	return true, ""
}
