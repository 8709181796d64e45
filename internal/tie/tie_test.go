package tie

import "testing"

// TestWatch: a clash is a second stream that responds and invokes again
// at the timestamp of the first; the same stream again, another
// timestamp, or a step that is not such a response is none.
func TestWatch(t *testing.T) {
	var w watch
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
		c, clash := w.place(s.proc, s.h, int64(i))
		if clash != s.clash {
			t.Fatalf("step %d: clash %v, want %v", i, clash, s.clash)
		}
		if clash && (c.Stream != 2 || c.At != 4) {
			t.Fatalf("step %d: clash with %+v, want stream 2 at 4", i, c)
		}
	}
}
