#include "textflag.h"

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
