package tie

import "testing"

// TestCompare: timestamp, then invocation before response, then a
// response whose process invokes again; 0 leaves it to the caller.
func TestCompare(t *testing.T) {
	inv, ret, again := Head{TS: 5}, Head{TS: 5, Ret: true}, Head{TS: 5, Ret: true, Again: true}
	for _, c := range []struct {
		a, b Head
		want int
	}{
		{Head{TS: 4, Ret: true}, inv, -1},
		{inv, Head{TS: 4, Ret: true}, 1},
		{inv, ret, -1},
		{again, inv, 1},
		{again, ret, -1},
		{ret, again, 1},
		{inv, inv, 0},
		{again, again, 0},
	} {
		if got := Compare(c.a, c.b); got != c.want {
			t.Errorf("Compare(%+v, %+v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestWatch: a clash is a second process that responds and invokes again
// at the timestamp of the first; the same process again, another
// timestamp, or a step that is not such a response is none.
func TestWatch(t *testing.T) {
	var w Watch
	steps := []struct {
		proc  int32
		h     Head
		clash bool
	}{
		{0, Head{TS: 10}, false},
		{0, Head{TS: 10, Ret: true, Again: true}, false}, // process 0 at 10, at 1
		{1, Head{TS: 10, Ret: true}, false},              // a response that does not invoke again
		{0, Head{TS: 10, Ret: true, Again: true}, false}, // process 0 again
		{2, Head{TS: 11, Ret: true, Again: true}, false}, // another timestamp: process 2 at 11, at 4
		{3, Head{TS: 11, Ret: true, Again: true}, true},
	}
	for i, s := range steps {
		c, clash := w.Place(s.proc, s.h, int64(i))
		if clash != s.clash {
			t.Fatalf("step %d: clash %v, want %v", i, clash, s.clash)
		}
		if clash && (c.Proc != 2 || c.At != 4) {
			t.Fatalf("step %d: clash with %+v, want process 2 at 4", i, c)
		}
	}
}
