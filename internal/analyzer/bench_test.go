package analyzer_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

var benchSizes = flag.String("bench.sizes", "100k,1M", "history sizes for BenchmarkCheck: any of 100k,1M,10M")

// benchHistory returns the path of a generated linearizable history, made
// once and cached in the temporary directory (10M operations take a while).
func benchHistory(b *testing.B, ops, procs int) string {
	b.Helper()
	cfg := histgen.LargeConfig{Ops: ops, Procs: procs, Words: 1000, K: 3, ReadFraction: 0.5}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("pmlin-bench-%d-%d-w%d-k%d.hist", ops, procs, cfg.Words, cfg.K))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := histgen.WriteLarge(w, cfg, 1); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkCheck measures the whole check (read + build + check) of
// generated linearizable histories, per operation. Run it with
// GOMAXPROCS=1 for the one-core figure:
//
//	GOMAXPROCS=1 go test ./analyzer/ -run '^$' -bench Check -benchmem -bench.sizes 100k,1M,10M
func BenchmarkCheck(b *testing.B) {
	sizes := map[string]int{"100k": 100_000, "1M": 1_000_000, "10M": 10_000_000}
	for _, name := range []string{"100k", "1M", "10M"} {
		if !contains(*benchSizes, name) {
			continue
		}
		for _, procs := range []int{8, 32} {
			n := sizes[name]
			b.Run(fmt.Sprintf("ops=%s/procs=%d", name, procs), func(b *testing.B) {
				path := benchHistory(b, n, procs)
				st, _ := os.Stat(path)
				b.SetBytes(st.Size())
				var peak uint64
				b.ResetTimer()
				for b.Loop() {
					f, err := os.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					res, err := analyzer.Check(context.Background(), history.NewReader(f, path, history.Options{}), analyzer.Options{SizeHint: st.Size()})
					f.Close()
					if err != nil || !res.Linearizable {
						b.Fatalf("err %v, linearizable %v", err, res != nil && res.Linearizable)
					}
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapSys)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
				b.ReportMetric(float64(peak)/float64(n), "heap-B/op")
				if hwm := peakRSS(); hwm > 0 {
					// What the system charges (the B/op that counts): the
					// process's peak resident memory, which the reserved
					// and untouched capacity in HeapSys is not part of.
					b.ReportMetric(float64(hwm)/float64(n), "rss-B/op")
				}
			})
		}
	}
}

// peakRSS is the process's peak resident memory so far (VmHWM), 0 where
// /proc/self/status does not tell. The benchmark's history is generated in
// O(words) memory, so the peak is the check's (and the test binary's, a
// few MB).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func contains(list, item string) bool {
	for len(list) > 0 {
		i := 0
		for i < len(list) && list[i] != ',' {
			i++
		}
		if list[:i] == item {
			return true
		}
		if i == len(list) {
			break
		}
		list = list[i+1:]
	}
	return false
}
