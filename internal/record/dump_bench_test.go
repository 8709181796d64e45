package record

import (
	"fmt"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/pmlin/pmlin/internal/directio"
	"github.com/pmlin/pmlin/internal/history"
)

// BenchmarkDumpCopy writes a binary history's stream blocks as the dumper
// does (each a full chunk of the size named, its records stored first as
// a worker would), with direct I/O to a file in the test's temporary
// directory, and reports the process's CPU time per MiB written, user
// (the stores and the copy into the file's buffer) and system (the
// writes). Compare the chunk sizes interleaved (-count).
func BenchmarkDumpCopy(b *testing.B) {
	for _, words := range []int{chunkWords, dumpChunkWords} {
		b.Run(fmt.Sprintf("words=%d", words), func(b *testing.B) {
			f, err := directio.Create(filepath.Join(b.TempDir(), "h.bin"), 0o600)
			if err != nil {
				b.Fatal(err)
			}
			bw := history.NewBinaryWriter(f)
			bw.Header(0, nil)
			bw.BeginSection([]int32{0})
			chunks := make([][]uint64, 8)
			for i := range chunks {
				chunks[i] = make([]uint64, words)
			}
			const perOp = 64 << 20
			var ru0 unix.Rusage
			unix.Getrusage(unix.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			for i := range b.N {
				for j := 0; j < perOp; j += 8 * words {
					c := chunks[(i+j/8/words)%len(chunks)][:words-maxRecord]
					for w := range c {
						c[w] = uint64(w)
					}
					bw.StreamBlock(0, c, false)
				}
			}
			if err := bw.Flush(); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			var ru1 unix.Rusage
			unix.Getrusage(unix.RUSAGE_SELF, &ru1)
			mib := float64(b.N) * perOp / (1 << 20)
			b.ReportMetric(float64(ru1.Utime.Nano()-ru0.Utime.Nano())/mib, "user-ns/MiB")
			b.ReportMetric(float64(ru1.Stime.Nano()-ru0.Stime.Nano())/mib, "sys-ns/MiB")
		})
	}
}
