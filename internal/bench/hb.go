package bench

import (
	"context"
	"io"
	"math"
	"time"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/reduce"
)

// never is lo of an operation that never responds (cut off by a crash or
// by the end): reduce.Ranges and reduce.AllPairs take any lo >= n so.
const never = math.MaxInt32

// measureHB streams a history, computing for every operation (numbered in
// invocation order) lo, the number of invocations before its response;
// then builds the happens-before edges from lo, reduced (reduce.Ranges:
// ReduceHB) or all pairs (reduce.AllPairs), and checks them for a cycle by
// an iterative DFS. The three phases are timed apart.
func measureHB(ctx context.Context, r io.Reader, name string, naive bool) (*hbOut, error) {
	out := &hbOut{}
	start := time.Now()
	hr := history.NewReader(r, name, history.Options{})
	var (
		lo   []int32
		pend []int32 // process index -> its pending operation
		inv  int32
	)
	for i := 0; ; i++ {
		if i&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ev, err := hr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch ev.Kind {
		case history.Invoke:
			for int(ev.ProcIndex) >= len(pend) {
				pend = append(pend, -1)
			}
			pend[ev.ProcIndex] = int32(len(lo))
			lo = append(lo, never)
			inv++
		case history.Return:
			lo[pend[ev.ProcIndex]] = inv
		}
	}
	out.Ops = int64(len(lo))
	t1 := time.Now()
	out.SecondsParse = t1.Sub(start).Seconds()
	if naive {
		off, succ := reduce.AllPairs(lo)
		t2 := time.Now()
		out.SecondsBuild = t2.Sub(t1).Seconds()
		out.Edges = int64(len(succ))
		out.Visited, out.Cyclic = dfsCSR(off, succ)
		out.SecondsDFS = time.Since(t2).Seconds()
	} else {
		hi := reduce.Ranges(lo, nil)
		t2 := time.Now()
		out.SecondsBuild = t2.Sub(t1).Seconds()
		out.Edges = reduce.Count(lo, hi)
		out.Visited, out.Cyclic = dfsRanges(lo, hi)
		out.SecondsDFS = time.Since(t2).Seconds()
	}
	out.Seconds = time.Since(start).Seconds()
	for _, l := range lo {
		if l < inv {
			out.EdgesAll += int64(inv - l)
		}
	}
	return out, nil
}

// dfsRanges is a cycle check over the graph whose successors of v are the
// ids lo[v] <= w < hi[v]: an iterative DFS with three colours. It returns
// the edges it examined (all of them) and whether it met a back edge.
func dfsRanges(lo, hi []int32) (visited int64, cyclic bool) {
	n := int32(len(lo))
	color := make([]uint8, n)
	type frame struct{ v, next int32 }
	var stack []frame
	for s := range n {
		if color[s] != 0 {
			continue
		}
		color[s] = 1
		stack = append(stack, frame{s, lo[s]})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next < hi[f.v] {
				w := f.next
				f.next++
				visited++
				switch color[w] {
				case 0:
					color[w] = 1
					stack = append(stack, frame{w, lo[w]})
				case 1:
					cyclic = true
				}
				continue
			}
			color[f.v] = 2
			stack = stack[:len(stack)-1]
		}
	}
	return visited, cyclic
}

// dfsCSR is the same cycle check over a compressed adjacency: the
// successors of v are succ[off[v]:off[v+1]].
func dfsCSR(off []int64, succ []int32) (visited int64, cyclic bool) {
	n := int32(len(off) - 1)
	color := make([]uint8, n)
	type frame struct {
		v    int32
		next int64
	}
	var stack []frame
	for s := range n {
		if color[s] != 0 {
			continue
		}
		color[s] = 1
		stack = append(stack, frame{s, off[s]})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next < off[f.v+1] {
				w := succ[f.next]
				f.next++
				visited++
				switch color[w] {
				case 0:
					color[w] = 1
					stack = append(stack, frame{w, off[w]})
				case 1:
					cyclic = true
				}
				continue
			}
			color[f.v] = 2
			stack = stack[:len(stack)-1]
		}
	}
	return visited, cyclic
}
