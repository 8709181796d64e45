package pmem

import "github.com/pmlin/pmlin/internal/cpuid"

const hwFlushSupported = true

// flushKind is the best write-back instruction of this CPU: 2 CLWB,
// 1 CLFLUSHOPT, 0 CLFLUSH (every x86-64 has CLFLUSH).
var flushKind = detectFlush()

func detectFlush() int {
	// CPUID leaf 7, sub-leaf 0: EBX bit 24 is CLWB, bit 23 CLFLUSHOPT.
	_, ebx, _, _ := cpuid.CPUID(7, 0)
	switch {
	case ebx&(1<<24) != 0:
		return 2
	case ebx&(1<<23) != 0:
		return 1
	}
	return 0
}

func clwb(p *uint64)
func clflushopt(p *uint64)
func clflush(p *uint64)
func sfence()

func hwFlush(p *uint64) {
	switch flushKind {
	case 2:
		clwb(p)
	case 1:
		clflushopt(p)
	default:
		clflush(p)
	}
}

func hwFence() { sfence() }
