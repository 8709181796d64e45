package tie

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// steps parses a stream's steps, "3i 5r 5i": timestamp, then i for an
// invocation or r for a response.
func steps(t *testing.T, s string) []Head {
	var out []Head
	for _, f := range strings.Fields(s) {
		ts, err := strconv.ParseUint(f[:len(f)-1], 10, 64)
		if err != nil {
			t.Fatalf("step %q: %v", f, err)
		}
		out = append(out, Head{TS: ts, Ret: f[len(f)-1] == 'r'})
	}
	return out
}

// merged runs m over streams (their steps), where the streams in late
// wait until Next reports them, and traces it: the stream of each step
// taken, "w<i>" when stream i waited, "clash <i>@<at>" when Place
// refused a step (the merge stops there).
func merged(m *Merge, streams [][]Head, late map[int]bool) string {
	pos := make([]int, len(streams))
	head := func(i int) {
		s := streams[i]
		switch {
		case late[i]:
			m.Wait(i)
		case pos[i] == len(s):
			m.Done(i)
		default:
			h := s[pos[i]]
			h.Again = h.Ret && pos[i]+1 < len(s) && !s[pos[i]+1].Ret && s[pos[i]+1].TS == h.TS
			m.Set(i, h)
		}
	}
	m.Reset(len(streams))
	for i := range streams {
		head(i)
	}
	var trace []string
	for at := int64(0); ; {
		i, h, st := m.Next()
		switch st {
		case End:
			return strings.Join(trace, " ")
		case Wait:
			trace = append(trace, fmt.Sprintf("w%d", i))
			delete(late, i)
			head(i)
			continue
		}
		want := streams[i][pos[i]]
		if h.TS != want.TS || h.Ret != want.Ret {
			return fmt.Sprintf("stream %d: head %+v, its step is %+v", i, h, want)
		}
		if c, clash := m.Place(i, at); clash {
			return strings.Join(append(trace, fmt.Sprintf("clash %d@%d", c.Stream, c.At)), " ")
		}
		trace = append(trace, strconv.Itoa(i))
		pos[i]++
		at++
		head(i)
	}
}

// TestMerge is the merge rule's table: the earlier timestamp first; on a
// tie an invocation before a response, then a response whose process
// invokes again at the timestamp, then the lower stream; a waiting stream
// before any step; two streams that each respond and invoke again at one
// timestamp refused.
func TestMerge(t *testing.T) {
	for _, c := range []struct {
		name    string
		streams []string
		late    []int
		want    string
	}{
		{"no stream", nil, nil, ""},
		{"empty streams", []string{"", "1i 2r", ""}, nil, "1 1"},
		{"timestamps", []string{"1i 3r", "2i 4r"}, nil, "0 1 0 1"},
		{"each stream in its order", []string{"5i 1r", "3i 4r"}, nil, "1 1 0 0"},
		{"invocations first", []string{"4i 5r", "5i 6r"}, nil, "0 1 0 1"},
		{"an invocation before a response that invokes again", []string{"1i 5r 5i", "5i"}, nil, "0 1 0 0"},
		{"invocations first, whatever the stream", []string{"5i 5r", "5i 5r", "5i 5r"}, nil, "0 1 2 0 1 2"},
		{"a response that invokes again before other responses", []string{"1i 5r 7i", "1i 5r 5i 6r"}, nil, "0 1 1 1 0 1 0"},
		{"the lower stream on equal heads", []string{"3i", "3i", "2i"}, nil, "2 0 1"},
		{"five streams (a deeper tree)", []string{"9i", "7i 8r", "1i 2r", "4i", "3i 9r"}, nil, "2 2 4 3 1 1 0 4"},
		{"two that respond and invoke again: refused", []string{"1i 5r 5i", "1i 5r 5i"}, nil, "0 1 0 0 clash 0@2"},
		{"one stream again and again: no clash", []string{"1i 5r 5i 5r 5i"}, nil, "0 0 0 0 0"},
		{"a waiting stream goes first", []string{"1i 2r", "0i 3r"}, []int{1}, "w1 1 0 0 1"},
		{"the lower of two waiting streams", []string{"1i", "2i", "0i"}, []int{2, 1}, "w1 w2 2 0 1"},
	} {
		var streams [][]Head
		for _, s := range c.streams {
			streams = append(streams, steps(t, s))
		}
		late := map[int]bool{}
		for _, i := range c.late {
			late[i] = true
		}
		var m Merge
		if got := merged(&m, streams, late); got != c.want {
			t.Errorf("%s: %v: %q, want %q", c.name, c.streams, got, c.want)
		}
		// Reset forgets the merge before: the same again.
		for _, i := range c.late {
			late[i] = true
		}
		if got := merged(&m, streams, late); got != c.want {
			t.Errorf("%s, merged again: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestMergeIsTheScan: on random streams (few timestamps, many ties), the
// tournament takes the steps a scan of every head does: the earliest
// timestamp, then the least class, then the first stream.
func TestMergeIsTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var m Merge
	for trial := range 2000 {
		streams := make([][]Head, rng.IntN(9))
		for i := range streams {
			ts := uint64(0)
			for range rng.IntN(6) {
				ts += uint64(rng.IntN(2))
				streams[i] = append(streams[i], Head{TS: ts, Ret: len(streams[i])%2 == 1})
			}
		}
		got := merged(&m, streams, map[int]bool{})
		// The scan, with the same Again and clash rule.
		pos := make([]int, len(streams))
		var w watch
		var trace []string
		for at := int64(0); ; at++ {
			best, bh := -1, Head{}
			for i, s := range streams {
				if pos[i] == len(s) {
					continue
				}
				h := s[pos[i]]
				h.Again = h.Ret && pos[i]+1 < len(s) && !s[pos[i]+1].Ret && s[pos[i]+1].TS == h.TS
				if best < 0 || h.TS < bh.TS || h.TS == bh.TS && h.class() < bh.class() {
					best, bh = i, h
				}
			}
			if best < 0 {
				break
			}
			if c, clash := w.place(int32(best), bh, at); clash {
				trace = append(trace, fmt.Sprintf("clash %d@%d", c.Stream, c.At))
				break
			}
			trace = append(trace, strconv.Itoa(best))
			pos[best]++
		}
		if want := strings.Join(trace, " "); got != want {
			t.Fatalf("trial %d: %v: the merge takes %q, the scan %q", trial, streams, got, want)
		}
	}
}

// TestMergeAnyChange: Set, Wait and Done of any stream, the winner's or
// another's (a block that comes for a stream the merge does not wait
// for), in random order: Next is always what a scan of the streams gives:
// the first stream that waits, else the ready head of the earliest
// timestamp, least class, first stream, else End.
func TestMergeAnyChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var m Merge
	for trial := range 300 {
		n := rng.IntN(20)
		m.Reset(n)
		state := make([]Status, n) // Wait: waiting, Step: ready, End: done
		for i := range state {
			state[i] = Wait
		}
		heads := make([]Head, n)
		for change := range 200 {
			if n > 0 {
				i := rng.IntN(n)
				switch rng.IntN(4) {
				case 0:
					state[i] = Wait
					m.Wait(i)
				case 1:
					state[i] = End
					m.Done(i)
				default:
					heads[i] = Head{TS: uint64(rng.IntN(4)), Ret: rng.IntN(2) == 0}
					heads[i].Again = heads[i].Ret && rng.IntN(2) == 0
					state[i] = Step
					m.Set(i, heads[i])
				}
			}
			want, wst := -1, End
			for i, st := range state {
				if st == Wait {
					want, wst = i, Wait
					break
				}
				if st == Step && (want < 0 || heads[i].TS < heads[want].TS || heads[i].TS == heads[want].TS && heads[i].class() < heads[want].class()) {
					want, wst = i, Step
				}
			}
			if i, h, st := m.Next(); i != want || st != wst || st == Step && h != heads[i] {
				t.Fatalf("trial %d, change %d: Next is %d %+v %v, the scan's %d %v", trial, change, i, h, st, want, wst)
			}
		}
	}
}
