package testenv

import (
	"testing"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		env                     string
		explicit, n, long, want int
	}{
		{"", 0, 400, 4000, 400},
		{"0", 0, 400, 4000, 400},
		{"false", 0, 400, 4000, 400},
		{"1", 0, 400, 4000, 4000},
		{"1", 7, 400, 4000, 7},
		{"", 7, 400, 4000, 7},
	} {
		t.Setenv(LongEnv, c.env)
		want := c.want
		if testing.Short() && c.explicit == 0 {
			want = max(want/10, 1)
		}
		if got := Count(c.explicit, c.n, c.long); got != want {
			t.Errorf("%s=%q: Count(%d, %d, %d) = %d, want %d", LongEnv, c.env, c.explicit, c.n, c.long, got, want)
		}
	}
}
