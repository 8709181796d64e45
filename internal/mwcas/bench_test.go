package mwcas

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/pmlin/pmlin/pmem"
)

// Benchmarks: one op of BenchmarkCAS is a k-word read followed by a k-word
// MwCAS of the same words to fresh values (the read supplies the expected
// values); one op of BenchmarkRead a k-word read. Addresses are uniform over
// 1024 words. b.N ops are split among g goroutines; ops/s is reported. The
// mutex baseline does the same on a plain array under one lock.

const benchWords = 1024

type benchTarget interface {
	read(worker int, addrs, out []uint64) error
	cas(worker int, ws []Word) (bool, error)
}

type pmwcasTarget struct{ m *PMwCAS }

func (p pmwcasTarget) read(w int, addrs, out []uint64) error { return p.m.Read(w, addrs, out) }
func (p pmwcasTarget) cas(w int, ws []Word) (bool, error) {
	ok, _, err := p.m.CAS(w, ws)
	return ok, err
}

// mutexMwCAS is the baseline: a k-word CAS and read under one mutex, on
// volatile memory.
type mutexMwCAS struct {
	mu    sync.Mutex
	words []uint64
}

func (x *mutexMwCAS) read(_ int, addrs, out []uint64) error {
	x.mu.Lock()
	for i, a := range addrs {
		out[i] = x.words[a]
	}
	x.mu.Unlock()
	return nil
}

func (x *mutexMwCAS) cas(_ int, ws []Word) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, w := range ws {
		if x.words[w.Addr] != w.Old {
			return false, nil
		}
	}
	for _, w := range ws {
		x.words[w.Addr] = w.New
	}
	return true, nil
}

func benchPMwCAS(b *testing.B, emulate bool) benchTarget {
	c := Config{Words: benchWords, MaxWorkers: 8, DescriptorsPerWorker: 16}
	n, err := RegionWords(c)
	if err != nil {
		b.Fatal(err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: emulate})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	m, err := New(r, c)
	if err != nil {
		b.Fatal(err)
	}
	return pmwcasTarget{m}
}

func runBench(b *testing.B, t benchTarget, k, g int, update bool) {
	var wg sync.WaitGroup
	per := b.N / g
	b.ResetTimer()
	start := time.Now()
	for id := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(id), 99))
			addrs := make([]uint64, k)
			vals := make([]uint64, k)
			ws := make([]Word, k)
			tag := uint64(id) << 40
			for range per {
				for i := range addrs {
				again:
					addrs[i] = rng.Uint64N(benchWords)
					for _, a := range addrs[:i] {
						if a == addrs[i] {
							goto again
						}
					}
				}
				if err := t.read(id, addrs, vals); err != nil {
					b.Error(err)
					return
				}
				if !update {
					continue
				}
				for i := range ws {
					tag++
					ws[i] = Word{addrs[i], vals[i], tag}
				}
				if _, err := t.cas(id, ws); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*g)/time.Since(start).Seconds(), "ops/s")
}

func BenchmarkCAS(b *testing.B) {
	for _, emulate := range []bool{false, true} {
		for _, k := range []int{1, 2, 4} {
			for _, g := range []int{1, 2, 4, 8} {
				b.Run(fmt.Sprintf("emu=%v/k=%d/g=%d", emulate, k, g), func(b *testing.B) {
					runBench(b, benchPMwCAS(b, emulate), k, g, true)
				})
			}
		}
	}
}

func BenchmarkRead(b *testing.B) {
	for _, emulate := range []bool{false, true} {
		for _, k := range []int{1, 2, 4} {
			for _, g := range []int{1, 2, 4, 8} {
				b.Run(fmt.Sprintf("emu=%v/k=%d/g=%d", emulate, k, g), func(b *testing.B) {
					runBench(b, benchPMwCAS(b, emulate), k, g, false)
				})
			}
		}
	}
}

func BenchmarkMutexCAS(b *testing.B) {
	for _, k := range []int{1, 2, 4} {
		for _, g := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("k=%d/g=%d", k, g), func(b *testing.B) {
				runBench(b, &mutexMwCAS{words: make([]uint64, benchWords)}, k, g, true)
			})
		}
	}
}

func BenchmarkMutexRead(b *testing.B) {
	for _, k := range []int{1, 2, 4} {
		for _, g := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("k=%d/g=%d", k, g), func(b *testing.B) {
				runBench(b, &mutexMwCAS{words: make([]uint64, benchWords)}, k, g, false)
			})
		}
	}
}
