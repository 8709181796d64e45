package analyzer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/testenv"
)

// workersHistory generates a history of a few thousand operations for seed:
// few words (so failures, and cas that a crash cuts off, are common), crashes
// and pending operations at the end in some, a planted violation in some,
// and in some a read's returned value replaced by another value of the
// history (which makes cycles, dangling reads, forks or broken assumptions).
func workersHistory(t *testing.T, seed uint64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x3a11))
	cfg := histgen.LargeConfig{
		Ops: 2000 + rng.IntN(4000), Procs: 2 + rng.IntN(7), Words: 4 + rng.IntN(60),
		K: 1 + rng.IntN(3), ReadFraction: 0.2 + 0.6*rng.Float64(), PendingAtEnd: rng.IntN(2) == 0,
	}
	if rng.IntN(2) == 0 {
		cfg.CrashEvery = 100 + rng.IntN(1000)
	}
	switch rng.IntN(5) {
	case 0:
		cfg.Violation = histgen.PlantStaleRead
	case 1:
		cfg.Violation, cfg.K = histgen.PlantTornRead, max(cfg.K, 2)
	case 2:
		cfg.Violation, cfg.CrashEvery = histgen.PlantLostWrite, 100+rng.IntN(300)
	}
	cfg.ViolationAt = rng.IntN(cfg.Ops / 2)
	var buf bytes.Buffer
	if _, err := histgen.WriteLarge(&buf, cfg, seed); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(buf.Bytes(), []byte("\n"))
	for range rng.IntN(3) {
		// A value returned by a read: the last field of a "ret" line that
		// is neither ok nor a failure; replaced by one found elsewhere.
		for try := 0; try < 100; try++ {
			k := 1 + rng.IntN(len(lines)-1)
			f := bytes.Fields(lines[k])
			if len(f) < 3 || string(f[1]) != "ret" || string(f[2]) == "ok" || string(f[2]) == "fail" {
				continue
			}
			g := bytes.Fields(lines[1+rng.IntN(len(lines)-1)])
			if len(g) < 3 || string(g[1]) != "ret" || string(g[2]) == "ok" || string(g[2]) == "fail" {
				continue
			}
			f[len(f)-1] = g[len(g)-1]
			lines[k] = bytes.Join(f, []byte(" "))
			break
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// outcome is everything a check returns, as comparable text.
func outcome(t *testing.T, text []byte, opts analyzer.Options) string {
	t.Helper()
	res, err := analyzer.Check(context.Background(), history.NewReader(bytes.NewReader(text), "w.hist", history.Options{}), opts)
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestWorkersSameResult checks random histories, linearizable or not, in
// every mode, on the caller's goroutine alone (GOMAXPROCS 1, the default
// workers) and with 2, 3 and 8 workers cutting every phase that splits into
// parts of 64 operations: the results (verdict, statistics, edge counts,
// every anomaly with its explanation) and errors must be the same.
func TestWorkersSameResult(t *testing.T) {
	// 30 histories of a few thousand operations, 90 outcomes (15 of them
	// linearizable) each checked 4 times; PMLIN_LONG=1 runs 120.
	seeds := testenv.Count(0, 30, 120)
	kinds := map[string]int{}
	for s := uint64(1); s <= uint64(seeds); s++ {
		text := workersHistory(t, s)
		for _, mode := range history.Modes {
			prev := runtime.GOMAXPROCS(1)
			want := outcome(t, text, analyzer.Options{Mode: mode})
			runtime.GOMAXPROCS(prev)
			kinds[verdictKind(want)]++
			for _, w := range []int{2, 3, 8} {
				got := outcome(t, text, analyzer.WithPartSize(analyzer.Options{Mode: mode, Workers: w}, 64))
				if got != want {
					t.Fatalf("seed %d, mode %s, %d workers:\n got %s\nwant %s", s, mode, w, got, want)
				}
			}
		}
	}
	t.Logf("outcomes: %v", kinds)
	if kinds["linearizable"] == 0 || kinds["violation"] == 0 {
		t.Errorf("the sample lacks linearizable histories or violations: %v", kinds)
	}
}

// verdictKind classifies an outcome for the sample's balance.
func verdictKind(out string) string {
	var res analyzer.Result
	switch {
	case len(out) > 6 && out[:6] == "error:":
		return "error"
	case json.Unmarshal([]byte(out), &res) != nil:
		return fmt.Sprintf("unparsed %.40s", out)
	case res.Linearizable:
		return "linearizable"
	}
	return "violation"
}

// forksHistory is a linearizable-looking history of n rounds in which
// several successful cas replace the same version of a word (forks), one
// at genesis and others on written versions, their writers far apart
// (in different parts when the phases split into parts of 64 operations),
// and the rest of the history moves every word along a single path.
func forksHistory(n int) []byte {
	var b bytes.Buffer
	b.WriteString("pmlin-history v1\n")
	val := map[int]uint64{}
	tag := uint64(0)
	cas := func(p, w int, expect uint64) {
		tag++
		v := tag<<8 | uint64(p)
		fmt.Fprintf(&b, "%d inv cas %d:%#x:%#x\n%d ret ok\n", p, w, expect, v, p)
		val[w] = v
	}
	var old uint64 // the version of word 2 that two cas replace
	for r := 0; r < n; r++ {
		w := r % 7
		switch {
		case r == 10: // a fork at genesis of word 9: two cas expecting 0
			cas(1, 9, 0)
		case r == n-10:
			cas(2, 9, 0)
		case r == 100: // (word 2)
			old = val[w]
			cas(3, w, old)
		case r == 3*n/4:
			cas(4, 2, old)
		default:
			cas(r%5, w, val[w])
		}
		fmt.Fprintf(&b, "%d inv read %d\n%d ret %#x\n", 6, w, 6, val[w])
	}
	return b.Bytes()
}

// TestForksSameOnWorkers: the forks (each write with the successor it lost
// to, in access order) are the same whatever the workers, successors being
// set in parallel by the least access.
func TestForksSameOnWorkers(t *testing.T) {
	text := forksHistory(3000)
	for _, mode := range history.Modes {
		prev := runtime.GOMAXPROCS(1)
		want := outcome(t, text, analyzer.Options{Mode: mode})
		runtime.GOMAXPROCS(prev)
		if c := strings.Count(want, `"kind":"fork"`); c != 2 {
			t.Fatalf("mode %s: %d forks found, want 2: %.300s", mode, c, want)
		}
		for _, w := range []int{2, 3, 8} {
			got := outcome(t, text, analyzer.WithPartSize(analyzer.Options{Mode: mode, Workers: w}, 64))
			if got != want {
				t.Fatalf("mode %s, %d workers:\n got %s\nwant %s", mode, w, got, want)
			}
		}
	}
}
