package merge

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

// tstep is a step of a random log: its timestamp and whether it is a
// response.
type tstep struct {
	ts  uint64
	ret bool
}

// randomLogs draws the steps of 2 to 4 processes with a coarse clock: each
// step's timestamp is the one before or one more, so that many steps of
// several processes share one.
func randomLogs(r *rand.Rand) [][]tstep {
	procs := make([][]tstep, 2+r.IntN(3))
	for p := range procs {
		ts := uint64(r.IntN(3))
		for i := range 2 * (1 + r.IntN(4)) {
			if r.IntN(3) == 0 {
				ts++
			}
			procs[p] = append(procs[p], tstep{ts, i%2 == 1})
		}
		if r.IntN(4) == 0 {
			procs[p] = procs[p][:len(procs[p])-1] // the last operation pending
		}
	}
	return procs
}

// honestExists is the definition, by brute force: every group of steps
// with one timestamp has an interleaving of its processes' steps (each
// process's own order kept) in which no response of one process comes
// before an invocation of another. It tries them all, dropping an
// interleaving as soon as it breaks the rule.
func honestExists(procs [][]tstep) bool {
	var stamps []uint64
	for _, st := range procs {
		for _, s := range st {
			stamps = append(stamps, s.ts)
		}
	}
	slices.Sort(stamps)
	for _, ts := range slices.Compact(stamps) {
		var runs [][]bool // per process, its steps at ts: response or not
		for _, st := range procs {
			var run []bool
			for _, s := range st {
				if s.ts == ts {
					run = append(run, s.ret)
				}
			}
			runs = append(runs, run)
		}
		if !interleave(runs, make([]int, len(runs)), -1) {
			return false
		}
	}
	return true
}

// interleave reports whether the runs from pos on have an honest
// interleaving, given that responded is the one process that placed a
// response so far (-1: none; -2: two or more).
func interleave(runs [][]bool, pos []int, responded int) bool {
	done := true
	for p, run := range runs {
		if pos[p] == len(run) {
			continue
		}
		done = false
		ret := run[pos[p]]
		if !ret && responded != -1 && responded != p {
			continue // another process's response before this invocation
		}
		next := responded
		if ret && responded == -1 {
			next = p
		} else if ret && responded != p {
			next = -2
		}
		pos[p]++
		ok := interleave(runs, pos, next)
		pos[p]--
		if ok {
			return true
		}
	}
	return done
}

// logsOf writes the steps as one log per process (reads of word 1).
func logsOf(procs [][]tstep) []Log {
	var in []Log
	for p, st := range procs {
		var b strings.Builder
		for _, s := range st {
			if s.ret {
				fmt.Fprintf(&b, "%d %d ret 0\n", s.ts, p)
			} else {
				fmt.Fprintf(&b, "%d %d inv read 1\n", s.ts, p)
			}
		}
		in = append(in, Log{Name: fmt.Sprintf("p%d", p), R: strings.NewReader(b.String())})
	}
	return in
}

// TestTiesAgainstBruteForce merges thousands of random logs with a coarse
// clock: the merge refuses exactly those whose tie groups have no honest
// order (by brute force), with history.ErrCoarseClock, and merges the
// others honestly, each process in its own order and timestamps never
// decreasing. Where no process responds and invokes again at one
// timestamp, the order is the one of the rule before it had that case:
// (timestamp, invocations first, process id).
func TestTiesAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 1))
	var refused, merged, again int
	for c := range 5000 {
		procs := randomLogs(r)
		want := honestExists(procs)
		m, err := Read(logsOf(procs))
		if !want {
			if !errors.Is(err, history.ErrCoarseClock) || errors.Is(err, history.ErrMalformed) {
				t.Fatalf("case %d %v: no honest order exists, the merge gave %v", c, procs, err)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("case %d %v: an honest order exists, the merge refused: %v", c, procs, err)
		}
		merged++
		got := make([]tstep, len(m.order))
		pid := make([]int32, len(m.order))
		for k, i := range m.order {
			s := &m.steps[i]
			got[k], pid[k] = tstep{s.ts, s.ret}, s.proc
		}
		if msg := dishonest(got, pid, procs); msg != "" {
			t.Fatalf("case %d %v: %s\n%v %v", c, procs, msg, got, pid)
		}
		if hasAgain(procs) {
			again++
		} else if old := oldRule(procs); !slices.Equal(old, pid) {
			t.Fatalf("case %d %v: process order %v, the rule without a response that invokes again gives %v", c, procs, pid, old)
		}
	}
	t.Logf("%d refused, %d merged (%d with a process that responds and invokes again at one timestamp)", refused, merged, again)
	if refused < 500 || merged < 500 || again < 200 {
		t.Fatalf("the random logs do not exercise both sides: %d refused, %d merged, %d with again", refused, merged, again)
	}
}

// dishonest says what is wrong with a merged order (got, the process of
// each step), or "".
func dishonest(got []tstep, pid []int32, procs [][]tstep) string {
	next := make([]int, len(procs))
	responded := map[int32]bool{} // processes with a response at the current timestamp
	for k, s := range got {
		p := pid[k]
		if want := procs[p][next[p]]; want != s {
			return fmt.Sprintf("step %d of process %d is out of its order", next[p], p)
		}
		next[p]++
		if k > 0 && got[k-1].ts > s.ts {
			return fmt.Sprintf("timestamps decrease at step %d", k)
		}
		if k > 0 && got[k-1].ts != s.ts {
			clear(responded)
		}
		if s.ret {
			responded[p] = true
			continue
		}
		for q := range responded {
			if q != p {
				return fmt.Sprintf("at timestamp %d a response of process %d comes before an invocation of process %d", s.ts, q, p)
			}
		}
	}
	return ""
}

// hasAgain reports whether some process responds and invokes again at one
// timestamp.
func hasAgain(procs [][]tstep) bool {
	for _, st := range procs {
		for i := 1; i < len(st); i++ {
			if st[i-1].ret && !st[i].ret && st[i-1].ts == st[i].ts {
				return true
			}
		}
	}
	return false
}

// oldRule merges by (timestamp, invocations first, process id) over the
// heads, and returns the processes of the steps in order.
func oldRule(procs [][]tstep) []int32 {
	pos := make([]int, len(procs))
	var out []int32
	for {
		best := -1
		for p, st := range procs {
			if pos[p] == len(st) {
				continue
			}
			if best < 0 {
				best = p
				continue
			}
			a, b := st[pos[p]], procs[best][pos[best]]
			if a.ts < b.ts || a.ts == b.ts && !a.ret && b.ret {
				best = p
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, int32(best))
		pos[best]++
	}
}

// TestAllEqualTimestamps stamps every step of random histories with one
// timestamp: refused when two processes each respond and invoke again,
// merged otherwise.
func TestAllEqualTimestamps(t *testing.T) {
	refused := 0
	for seed := uint64(1); seed <= 200; seed++ {
		cfg := histgen.RandomSmallConfig(seed)
		cfg.Crashes = 0
		h := histgen.Small(cfg, seed)
		if len(h.Ops) == 0 {
			continue
		}
		in := split(t, histgen.Text(h), func(int) uint64 { return 7 })
		switchers := 0
		for _, l := range in {
			text := l.R.(*strings.Reader)
			b := make([]byte, text.Len())
			text.Read(b)
			text.Seek(0, 0)
			if strings.Contains(string(b), " ret ") && strings.Count(string(b), " inv ") > 1 {
				switchers++
			}
		}
		_, err := Read(in)
		switch {
		case switchers >= 2 && !errors.Is(err, history.ErrCoarseClock):
			t.Fatalf("seed %d: %d processes respond and invoke again at timestamp 7, merged: %v", seed, switchers, err)
		case switchers < 2 && err != nil:
			t.Fatalf("seed %d: %v", seed, err)
		case err != nil:
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no history was refused: the test proves nothing")
	}
}
