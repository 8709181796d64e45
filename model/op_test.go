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

// TestValueAppend: Append adds to what b holds, the form String gives;
// a symbol the format lacks is named by its number.
func TestValueAppend(t *testing.T) {
	for _, c := range []struct {
		v    Value
		want string
	}{
		{Number(4095), "x 4095"},
		{Number(4096), "x 0x1000"},
		{Sym(Empty), "x empty"},
		{Value{Sym: 9}, "x symbol(9)"},
	} {
		if got := string(c.v.Append([]byte("x "))); got != c.want {
			t.Errorf("%#v: Append gives %q, want %q", c.v, got, c.want)
		}
		if got := c.v.String(); "x "+got != c.want {
			t.Errorf("%#v: String gives %q, want %q", c.v, got, c.want[2:])
		}
	}
}
