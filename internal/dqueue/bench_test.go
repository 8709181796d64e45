package dqueue

import (
	"sync/atomic"
	"testing"

	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
)

// BenchmarkDo measures the queue's throughput without recording: pairs
// of enq and deq on GOMAXPROCS workers of their own, with the persistence
// emulation off (plain atomics, as on DRAM) and on (per-line store logs).
// b.N operations each, so the pools hold b.N nodes.
func BenchmarkDo(b *testing.B) {
	for _, emu := range []bool{false, true} {
		name := map[bool]string{false: "emulation-off", true: "emulation-on"}[emu]
		b.Run(name, func(b *testing.B) {
			const workers = 64
			c := config("", "8", workers, 2*b.N+workers)
			n, err := Target().Size(c)
			if err != nil {
				b.Fatal(err)
			}
			r, err := pmem.NewMemory(n, pmem.Options{Emulate: emu})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			q, err := create(r, c)
			if err != nil {
				b.Fatal(err)
			}
			var ids atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := int(ids.Add(1) - 1)
				if w >= workers {
					b.Error("more goroutines than workers")
					return
				}
				res := make([]model.Value, 0, 2)
				args := []model.Value{{}}
				for i := uint64(0); pb.Next(); i++ {
					var err error
					if i%2 == 0 {
						args[0] = model.Number(uint64(w)<<32 | i)
						res, err = q.Do(w, "enq", args, res)
					} else {
						res, err = q.Do(w, "deq", nil, res)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
