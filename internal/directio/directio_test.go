package directio

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestWrite writes sizes around the alignment and the buffer in pieces of
// every size, and reads back the same bytes, on the temporary directory
// and (where there is one) on a tmpfs, which refuses direct I/O.
func TestWrite(t *testing.T) {
	dirs := testDirs(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dir := range dirs {
		for _, size := range []int{0, 1, align - 1, align, align + 1, bufSize - 1, bufSize, bufSize + 5*align + 7, 3*bufSize + 1} {
			want := randomBytes(rng, size)
			path := filepath.Join(dir, "f")
			f, err := Create(path, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			for p := want; len(p) > 0; {
				n := min(len(p), 1+rng.IntN(3*align))
				if rng.IntN(50) == 0 {
					n = min(len(p), 2*bufSize)
				}
				if m, err := f.Write(p[:n]); m != n || err != nil {
					t.Fatalf("write: %d, %v", m, err)
				}
				p = p[n:]
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s, %d bytes: read back %d bytes (%v), direct %v", dir, size, len(got), err, f.Direct())
			}
			if _, err := f.Write([]byte{1}); err == nil {
				t.Fatal("a write after Close")
			}
		}
	}
	if _, err := CreateExcl(filepath.Join(dirs[0], "f"), 0o644); !os.IsExist(err) {
		t.Fatalf("CreateExcl of an existing file: %v", err)
	}
}

// TestWriteBigPieces writes pieces of bigCopy bytes and more that do not
// fit the room left in the buffer (the buffer's whole blocks go early, the
// rest is carried over: handOffAligned) between small ones, and reads back
// the same bytes, with direct I/O and without.
func TestWriteBigPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dir := range testDirs(t) {
		path := filepath.Join(dir, "f")
		f, err := Create(path, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		for i := range 24 {
			n := 1 + rng.IntN(3*align)
			if i%2 == 1 {
				n = bigCopy + rng.IntN(3*align)
			}
			if i == 13 {
				n = bufSize - align // fits a buffer with the rest of a block, just
			}
			p := randomBytes(rng, n)
			if m, err := f.Write(p); m != n || err != nil {
				t.Fatalf("write: %d, %v", m, err)
			}
			want = append(want, p...)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: read back %d bytes of %d (%v), direct %v", dir, len(got), len(want), err, f.Direct())
		}
	}
}

// TestDrain: once Drain returns, the full buffers handed over are in the
// file (and the one filling is not yet); the file then goes on and reads
// back as written.
func TestDrain(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, dir := range testDirs(t) {
		path := filepath.Join(dir, "f")
		f, err := Create(path, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Drain(); err != nil {
			t.Fatalf("Drain of a new file: %v", err)
		}
		want := randomBytes(rng, 5*bufSize+100)
		off := 0
		for _, end := range []int{2*bufSize + 100, len(want)} {
			if _, err := f.Write(want[off:end]); err != nil {
				t.Fatal(err)
			}
			off = end
			if err := f.Drain(); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if full := int64(end / bufSize * bufSize); st.Size() != full {
				t.Fatalf("%s: %d bytes in the file after Drain, want %d (the full buffers)", dir, st.Size(), full)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: read back %d bytes (%v), want %d", dir, len(got), err, len(want))
		}
	}
}

// randomBytes is n bytes drawn from rng, eight per draw (a draw per byte
// was half of this package's test time under the race detector).
func randomBytes(rng *rand.Rand, n int) []byte {
	p := make([]byte, n+7)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(p[i:], rng.Uint64())
	}
	return p[:n:n]
}

// testDirs is the test's temporary directory and, where there is one, a
// directory on a tmpfs (which refuses direct I/O).
func testDirs(t *testing.T) []string {
	dirs := []string{t.TempDir()}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "directio"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// TestWriteError checks that an error of the writing goroutine comes back
// (from a later Write or from Close), not lost.
func TestWriteError(t *testing.T) {
	f, err := Create(filepath.Join(t.TempDir(), "f"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.f.Close() // every write of the file fails from now on
	var werr error
	for range 4 {
		if _, werr = f.Write(make([]byte, bufSize)); werr != nil {
			break
		}
	}
	if cerr := f.Close(); werr == nil && cerr == nil {
		t.Fatal("writes to a closed descriptor reported no error")
	}
}

// TestRing writes through an io_uring (where the kernel has one) at
// offsets out of order, in pieces larger than a write may take, with a
// short write's rest, and reads back the same bytes; a write to a closed
// descriptor comes back as an error.
func TestRing(t *testing.T) {
	if n := unsafe.Sizeof(uringParams{}); n != 120 {
		t.Fatalf("io_uring_params has %d bytes, not 120", n)
	}
	r, err := newRing()
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	defer r.close()
	path := filepath.Join(t.TempDir(), "f")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	want := randomBytes(rand.New(rand.NewPCG(3, 4)), 3*align+100)
	fd := int(fh.Fd())
	for _, piece := range [][2]int{{2 * align, len(want)}, {0, align}, {align, 2 * align}} {
		if err := r.write(fd, want[piece[0]:piece[1]], int64(piece[0])); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(want))
	}
	if err := r.write(-1, want, 0); err == nil {
		t.Fatal("a write to descriptor -1 succeeded")
	}
	// The ring goes on after an error.
	if err := r.write(fd, want[:10], 0); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkWriteBesideWork measures what writing a file costs goroutines
// that compute beside it: one busy goroutine per P runs fixed units of
// work while the file is written, whole buffers back to back, through
// io_uring (ring) or plain system calls (plain); in the -yield sides the
// busy goroutines yield after each unit, as the driver's workers switch
// goroutines often (the write's ns/op is then what a switch-free wake of
// the writer costs). The metric is the busy
// goroutines' units per second of wall time: a write that keeps its P in
// the system call leaves one busy goroutine without one until the
// runtime's monitor takes the P back (up to 10-20 ms). Compare the two
// sides interleaved (-count) on a loaded machine.
func BenchmarkWriteBesideWork(b *testing.B) {
	for _, side := range []string{"ring", "plain", "ring-yield", "plain-yield"} {
		yield := strings.HasSuffix(side, "-yield")
		b.Run(side, func(b *testing.B) {
			if strings.HasPrefix(side, "ring") {
				if r, err := newRing(); err != nil {
					b.Skipf("no io_uring: %v", err)
				} else {
					r.close()
				}
			}
			f, err := Create(filepath.Join(b.TempDir(), "f"), 0o644)
			if err != nil {
				b.Fatal(err)
			}
			f.noRing = strings.HasPrefix(side, "plain")
			var stop atomic.Bool
			var units atomic.Int64
			var wg sync.WaitGroup
			for range runtime.GOMAXPROCS(0) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					x := uint64(1)
					for !stop.Load() {
						for range 20000 {
							x = x*6364136223846793005 + 1442695040888963407
						}
						units.Add(1)
						if yield {
							runtime.Gosched()
						}
					}
					sink.Add(x)
				}()
			}
			buf := make([]byte, bufSize)
			start := time.Now()
			b.ResetTimer()
			for range b.N {
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			el := time.Since(start)
			stop.Store(true)
			wg.Wait()
			b.ReportMetric(float64(units.Load())/el.Seconds(), "units/s")
		})
	}
}

var sink atomic.Uint64

// BenchmarkWriteCPU writes 64 MiB a round, in pieces of 1 MiB as the
// recorder's dumper (internal/record) does, with buffers on huge pages where the kernel gives
// them (huge) and on the heap (heap), and reports the process's CPU time
// per MiB, user and system (the writes: pinning the buffers' pages and
// the disk's requests, one per so many segments of contiguous memory).
// Compare the sides interleaved (-count).
func BenchmarkWriteCPU(b *testing.B) {
	for _, side := range []string{"huge", "heap"} {
		b.Run(side, func(b *testing.B) {
			f, err := Create(filepath.Join(b.TempDir(), "f"), 0o644)
			if err != nil {
				b.Fatal(err)
			}
			f.noHuge = side == "heap"
			piece := make([]byte, 1<<20)
			var ru0, ru1 unix.Rusage
			unix.Getrusage(unix.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			for range b.N {
				for range 64 {
					if _, err := f.Write(piece); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			unix.Getrusage(unix.RUSAGE_SELF, &ru1)
			mib := float64(64 * b.N)
			b.ReportMetric(float64(ru1.Utime.Nano()-ru0.Utime.Nano())/mib, "user-ns/MiB")
			b.ReportMetric(float64(ru1.Stime.Nano()-ru0.Stime.Nano())/mib, "sys-ns/MiB")
		})
	}
}
