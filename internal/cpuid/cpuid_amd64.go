package cpuid

// CPUID returns EAX, EBX, ECX and EDX of CPUID leaf eax, sub-leaf ecx.
func CPUID(eax, ecx uint32) (a, b, c, d uint32)
