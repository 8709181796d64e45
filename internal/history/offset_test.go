package history

import (
	"io"
	"strings"
	"testing"
)

// TestOffset: Offset is the bytes through the line of the last event read,
// whether the Reader decodes its lines itself or in chunks on workers (of
// a few dozen bytes here, so that lines fall in many chunks).
func TestOffset(t *testing.T) {
	lines := []string{"pmlin-history v1", "# a comment", "1 inv read 10 11", "1 ret 0 0x5", "", "2 inv cas 10:0:0x100001\r", "2 ret ok", "crash", "3 inv read 10", "3 ret 0x100001"}
	text := strings.Join(lines, "\n") + "\n"
	for _, workers := range []int{0, 2} {
		r := NewReader(strings.NewReader(text), "t", Options{})
		if workers > 0 {
			stop := r.Parallel(workers)
			defer stop()
			r.par.chunk = 40
		}
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			want := len(strings.Join(lines[:r.lastLine()], "\n")) + 1
			if got := r.Offset(); got != int64(want) && got != int64(want-1) { // a CR counted or not
				t.Errorf("workers %d, line %d: offset %d, want %d", workers, r.lastLine(), got, want)
			}
		}
		if got := r.Offset(); got != int64(len(text)) {
			t.Errorf("workers %d, at the end: offset %d, want %d", workers, got, len(text))
		}
	}
}
