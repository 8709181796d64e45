package analyzer_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pmlin/pmlin/analyzer"
	"github.com/pmlin/pmlin/history"
	"github.com/pmlin/pmlin/internal/histgen"
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
//	GOMAXPROCS=1 go test -run '^$' -bench Check -benchmem -bench.sizes 100k,1M,10M ./analyzer/
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
			})
		}
	}
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
