package model

import "testing"

func TestValueRoundTrip(t *testing.T) {
	for _, s := range []string{"0", "4095", "0x1000", "0xffffffffffffffff", "nil", "ok", "fail", "empty", "true", "false"} {
		v, err := ParseValue(s)
		if err != nil {
			t.Fatalf("ParseValue(%q): %v", s, err)
		}
		if got := v.String(); got != s {
			t.Errorf("ParseValue(%q).String() = %q", s, got)
		}
	}
	if v, err := ParseValue("4096"); err != nil || v != Number(0x1000) {
		t.Errorf("ParseValue(4096) = %v, %v", v, err)
	}
	for _, s := range []string{"", "0x", "-1", "NIL", "18446744073709551616", "1.5", "0xg"} {
		if _, err := ParseValue(s); err == nil {
			t.Errorf("ParseValue(%q) accepted", s)
		}
	}
}
