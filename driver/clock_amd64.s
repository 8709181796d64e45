#include "textflag.h"

// func tscOrdered() uint64
//
// RDTSCP reads the counter only once every earlier instruction has
// executed and every earlier load is globally visible (so after the last
// access of the operation before it); the LFENCE keeps every later
// instruction from starting before the read (so before the first access
// of the operation after it).
TEXT ·tscOrdered(SB), NOSPLIT, $0-8
	RDTSCP
	LFENCE
	SHLQ $32, DX
	ORQ DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func tscSkewed(skew uint64) uint64
//
// tscOrdered, minus skew on odd-numbered CPUs (RDTSCP's TSC_AUX holds the
// CPU number on Linux): a clock that is wrong across cores, for the test
// that must catch one.
TEXT ·tscSkewed(SB), NOSPLIT, $0-16
	RDTSCP
	LFENCE
	SHLQ $32, DX
	ORQ DX, AX
	ANDQ $1, CX
	JZ even
	SUBQ skew+0(FP), AX
even:
	MOVQ AX, ret+8(FP)
	RET

