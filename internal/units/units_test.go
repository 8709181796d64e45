package units

import "testing"

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		b    int64
		want string
	}{{512, "0 KiB"}, {4 << 10, "4 KiB"}, {300 << 20, "300 MiB"}, {3 << 29, "1.5 GiB"}} {
		if got := Bytes(c.b); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.b, got, c.want)
		}
	}
}
