package history_test

import (
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// BenchmarkRecording records a history shaped as a fuzz run's (a header,
// a long comment, 4 processes, 1000 operations of every kind, k = 2) and
// reads it back by NextStep, as pmlin fuzz does for every run.
func BenchmarkRecording(b *testing.B) {
	var rc history.Recording
	addrs, vals := []uint64{1, 2}, []uint64{7, 8}
	triples := make([]uint64, 6)
	comment := "pmlin run --target pmwcas --threads 4 --ops 1000 --words 8 --k 2 --reads 0.5 --crashes 6 --policy mix --seed 18215591310788271736"
	for b.Loop() {
		rc.Reset()
		rc.Header(0, nil)
		rc.Comment(comment)
		rc.TextLine([]byte(history.RecordingLine(1000)))
		for i := 0; i < 1000; i += 4 {
			for p := range int32(4) {
				if p%2 == 0 {
					rc.InvokeRead(p, addrs)
					continue
				}
				v := uint64(i+int(p)) << 8
				triples[0], triples[1], triples[2], triples[3], triples[4], triples[5] = 1, v, v+1, 2, v+2, v+3
				rc.InvokeCASTriples(p, triples)
			}
			for p := range int32(4) {
				switch {
				case p%2 == 0:
					rc.ReturnRead(p, vals)
				case i%8 == 0:
					rc.ReturnFail(p, 2)
				default:
					rc.ReturnOK(p)
				}
			}
		}
		rc.TextLine([]byte(history.EndLine))
		r := rc.Reader("bench", history.Options{})
		n := 0
		for {
			if _, err := r.NextStep(); err != nil {
				break
			}
			n++
		}
		if n != 2000 {
			b.Fatalf("%d events", n)
		}
	}
}
