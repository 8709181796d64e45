//go:build amd64

package cpuid

import "testing"

// TestVendor: leaf 0 names the vendor in EBX, EDX, ECX (12 ASCII letters)
// and the highest standard leaf in EAX, at least 1 on any x86-64.
func TestVendor(t *testing.T) {
	a, b, c, d := CPUID(0, 0)
	var v []byte
	for _, r := range []uint32{b, d, c} {
		v = append(v, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
	}
	for _, ch := range v {
		if ch < ' ' || ch > '~' {
			t.Fatalf("vendor %q is not ASCII", v)
		}
	}
	if a < 1 {
		t.Fatalf("highest leaf %d", a)
	}
	t.Logf("vendor %s, highest leaf %d", v, a)
}
