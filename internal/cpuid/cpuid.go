// Package cpuid executes the x86 CPUID instruction, for the packages that
// ask the CPU what it has: pmem (its cache write-back instructions) and
// driver (RDTSCP and an invariant TSC for its timestamps).
package cpuid
