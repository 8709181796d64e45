#include "textflag.h"

// func cpuid(eax, ecx uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eax+0(FP), AX
	MOVL ecx+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func clwb(p *uint64)
TEXT ·clwb(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	CLWB (AX)
	RET

// func clflushopt(p *uint64)
TEXT ·clflushopt(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	CLFLUSHOPT (AX)
	RET

// func clflush(p *uint64)
TEXT ·clflush(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	CLFLUSH (AX)
	RET

// func sfence()
TEXT ·sfence(SB), NOSPLIT, $0-0
	SFENCE
	RET
