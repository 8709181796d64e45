#include "textflag.h"

// func tscOrdered() uint64
//
// RDTSCP reads the counter only once every earlier instruction has
// executed and every earlier load is globally visible (so after the last
// access of the operation before it). Later instructions may start before
// the read; the load at the end keeps every later access from taking
// effect before it without the LFENCE that is usually put there (about
// 8 ns of the 29 here, once per operation of every worker): its address
// is computed from the counter's value (BX = the value >> 63, which is 0
// for the next century of ticks but cannot be known before the read), so
// it cannot execute before the read; and x86-64 keeps loads in order with
// older loads, and stores in order with older loads (TSO: the Intel SDM, vol.
// 3A, "Memory Ordering in P6 and More Recent Processor Families"; the AMD
// APM, vol. 2, "Memory Access Ordering"), so every access after it in program
// order, the operation's first one included, takes effect after the read.
// tscAnchor is never written: the load only orders.
TEXT ·tscOrdered(SB), NOSPLIT, $0-8
	RDTSCP
	SHLQ $32, DX
	ORQ DX, AX
	MOVQ AX, BX
	SHRQ $63, BX
	LEAQ ·tscAnchor(SB), SI
	MOVQ (SI)(BX*8), CX
	MOVQ AX, ret+0(FP)
	RET

// func tscSkewed(skew uint64) uint64
//
// tscOrdered, minus skew on odd-numbered CPUs (RDTSCP's TSC_AUX holds the
// CPU number on Linux): a clock that is wrong across cores, for the test
// that must catch one.
TEXT ·tscSkewed(SB), NOSPLIT, $0-16
	RDTSCP
	SHLQ $32, DX
	ORQ DX, AX
	MOVQ AX, BX
	SHRQ $63, BX
	LEAQ ·tscAnchor(SB), SI
	MOVQ (SI)(BX*8), R8
	ANDQ $1, CX
	JZ even
	SUBQ skew+0(FP), AX
even:
	MOVQ AX, ret+8(FP)
	RET
