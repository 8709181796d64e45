package histgen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// scan counts invocations, crashes and lines of a text history without
// history.Reader, as an independent check.
func scan(t *testing.T, b []byte) (ops, crashes, lines int64) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines++
		l := sc.Text()
		switch {
		case strings.Contains(l, " inv "):
			ops++
		case l == "crash":
			crashes++
		}
	}
	return
}

func TestWriteLargeParses(t *testing.T) {
	t.Parallel()
	cfgs := []LargeConfig{
		{Ops: 20000, Procs: 8, Words: 64, K: 4, ReadFraction: 0.5},
		{Ops: 20000, Procs: 32, Words: 1000, K: 2, FixedK: true, ReadFraction: 0.7, CrashEvery: 1000},
		{Ops: 5000, Procs: 8, Words: 4, K: 4, FixedK: true, ReadFraction: 0.3, CrashEvery: 97, PendingAtEnd: true},
		{Ops: 5000, Procs: 3, Words: 2, K: 1, ReadFraction: 0, CrashEvery: 10},
		{Ops: 5000, Procs: 5, Words: 10, K: 3, ReadFraction: 1},
		{Ops: 20000, Procs: 8, Words: 64, K: 4, ReadFraction: 0.5, CrashEvery: 500, Violation: PlantStaleRead, ViolationAt: 10000},
		{Ops: 20000, Procs: 8, Words: 64, K: 4, ReadFraction: 0.5, Violation: PlantTornRead, ViolationAt: 5000},
		{Ops: 20000, Procs: 32, Words: 64, K: 2, ReadFraction: 0.5, CrashEvery: 1000, Violation: PlantLostWrite, ViolationAt: 15000},
		{Ops: 0, Procs: 2, Words: 1, K: 1},
	}
	for i, cfg := range cfgs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var buf bytes.Buffer
			st, err := WriteLarge(&buf, cfg, uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			ops, crashes, lines := scan(t, buf.Bytes())
			if st.Ops != int64(cfg.Ops) || ops != st.Ops || crashes != st.Crashes || lines != st.Events+1 || st.Bytes != int64(buf.Len()) {
				t.Fatalf("stats %+v; file has %d ops, %d crashes, %d lines, %d bytes", st, ops, crashes, lines, buf.Len())
			}
			if cfg.CrashEvery > 0 && cfg.Ops > 0 && st.Crashes != int64((cfg.Ops-1)/cfg.CrashEvery) {
				t.Errorf("%d crashes, want %d", st.Crashes, (cfg.Ops-1)/cfg.CrashEvery)
			}
			if cfg.Violation != NoViolation {
				if st.ViolationOp < int64(cfg.ViolationAt) || st.ViolationLine < 2 {
					t.Fatalf("violation at op %d line %d", st.ViolationOp, st.ViolationLine)
				}
				line := strings.Split(buf.String(), "\n")[st.ViolationLine-1]
				if !strings.Contains(line, " inv read ") {
					t.Fatalf("violation line %d is %q", st.ViolationLine, line)
				}
			} else if st.ViolationOp != -1 {
				t.Fatalf("violation at op %d without one asked", st.ViolationOp)
			}
			h, err := history.ReadAll(bytes.NewReader(buf.Bytes()), "large")
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(h); err != nil {
				t.Fatal(err)
			}
			if err := CheckAssumptions(h); err != nil {
				t.Fatal(err)
			}
			if int64(len(h.Ops)) != st.Ops || int64(h.Events) != st.Events {
				t.Fatalf("read %d ops, %d events; stats %+v", len(h.Ops), h.Events, st)
			}
			if cfg.Violation != NoViolation && h.Ops[st.ViolationOp].Line != st.ViolationLine {
				t.Fatalf("violation op %d is at line %d, stats say %d", st.ViolationOp, h.Ops[st.ViolationOp].Line, st.ViolationLine)
			}
		})
	}
}

// TestWriteLargeLinearizable runs the reference checker on many tiny
// WriteLarge histories: linearizable in every mode without a planted
// violation, in none with one.
func TestWriteLargeLinearizable(t *testing.T) {
	t.Parallel()
	planted := map[Violation]int{}
	for seed := range seeds(t, 1500) {
		rng := newRand(seed, 3)
		cfg := LargeConfig{
			Ops:          4 + rng.IntN(12),
			Procs:        1 + rng.IntN(5),
			Words:        1 + rng.IntN(4),
			K:            1 + rng.IntN(3),
			FixedK:       rng.IntN(2) == 0,
			ReadFraction: rng.Float64(),
			PendingAtEnd: rng.IntN(2) == 0,
		}
		if rng.IntN(2) == 0 {
			cfg.CrashEvery = 2 + rng.IntN(5)
		}
		if rng.IntN(2) == 0 {
			cfg.Violation = Violation(1 + rng.IntN(3))
			cfg.ViolationAt = rng.IntN(cfg.Ops / 2)
		}
		var buf bytes.Buffer
		st, err := WriteLarge(&buf, cfg, seed)
		if err != nil {
			if cfg.Violation != NoViolation {
				continue // too small to plant it
			}
			t.Fatal(err)
		}
		h, err := history.ReadAll(bytes.NewReader(buf.Bytes()), "large")
		if err != nil {
			t.Fatalf("seed %d %+v: %v\n%s", seed, cfg, err, buf.Bytes())
		}
		if err := CheckAssumptions(h); err != nil {
			t.Fatalf("seed %d %+v: %v\n%s", seed, cfg, err, buf.Bytes())
		}
		planted[cfg.Violation]++
		for _, m := range history.Modes {
			lin, err := RefCheck(h, m)
			if err != nil {
				t.Fatal(err)
			}
			if lin != (cfg.Violation == NoViolation) {
				t.Fatalf("seed %d %+v (stats %+v): linearizable in %v = %v\n%s", seed, cfg, st, m, lin, buf.Bytes())
			}
		}
	}
	t.Logf("checked: %v", planted)
}

func TestWriteLargeDeterministic(t *testing.T) {
	cfg := LargeConfig{Ops: 10000, Procs: 8, Words: 100, K: 3, ReadFraction: 0.5, CrashEvery: 777, Violation: PlantStaleRead, ViolationAt: 5000}
	var a, b, c bytes.Buffer
	if _, err := WriteLarge(&a, cfg, 42); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteLarge(&b, cfg, 42); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteLarge(&c, cfg, 43); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same seed, different bytes")
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("different seeds, same bytes")
	}
}

func TestWriteLargeErrors(t *testing.T) {
	if _, err := WriteLarge(io.Discard, LargeConfig{Ops: 10, Violation: PlantLostWrite}, 1); err == nil {
		t.Error("lost write without crashes: no error")
	}
	if _, err := WriteLarge(io.Discard, LargeConfig{Ops: 10, Words: 4, K: 1, Violation: PlantTornRead}, 1); err == nil {
		t.Error("torn read with K 1: no error")
	}
	if _, err := WriteLarge(io.Discard, LargeConfig{Ops: 10, Words: 4, K: 1, Violation: PlantStaleRead, ViolationAt: 10}, 1); err == nil {
		t.Error("violation after the last op: no error")
	}
	if _, err := WriteLarge(failWriter{}, LargeConfig{Ops: 100000, Procs: 4, Words: 10, K: 2}, 1); err == nil {
		t.Error("write error not reported")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestWriteLargeThroughput checks the ≥ 2M ops/s goal loosely (the race
// detector and shared machines are slow; the benchmark measures it).
func TestWriteLargeThroughput(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("short or race: see BenchmarkWriteLarge")
	}
	res := testing.Benchmark(func(b *testing.B) { benchLarge(b, LargeConfig{Procs: 8, Words: 1 << 16, K: 4, ReadFraction: 0.5}) })
	t.Logf("WriteLarge P=8 K=4: %s", res)
}

func benchLarge(b *testing.B, cfg LargeConfig) {
	cfg.Ops = b.N
	b.ReportAllocs()
	st, err := WriteLarge(io.Discard, cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Bytes / max(int64(b.N), 1))
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkWriteLarge(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  LargeConfig
	}{
		{"P8-K2", LargeConfig{Procs: 8, Words: 1 << 16, K: 2, ReadFraction: 0.5}},
		{"P8-K4-crash", LargeConfig{Procs: 8, Words: 1 << 16, K: 4, ReadFraction: 0.5, CrashEvery: 10000}},
		{"P32-K4", LargeConfig{Procs: 32, Words: 1 << 20, K: 4, ReadFraction: 0.5}},
		{"P32-K8-fixed", LargeConfig{Procs: 32, Words: 1024, K: 8, FixedK: true, ReadFraction: 0.8}},
	} {
		b.Run(bc.name, func(b *testing.B) { benchLarge(b, bc.cfg) })
	}
}
