package analyzer

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// searcher looks for completions of cut-off operations, and for orders of
// the cut-off swaps, that make the properties hold (Section 5.3 leaves
// both open; without them the method raises false alarms).
//
// Completions. Completing a pending cas or swap nobody observed only adds
// constraints, except that its write can explain a failed cas (it replaced
// the value the failure expected, just before the failure). So a
// completion that helps explains some failure F, at F's blamed word w
// expecting version y: a pending cas that expected y at w, or a pending
// swap on w (placed just after y).
//
// Orders. What a cut-off swap replaced is unknown: it is placed after the
// end of its word's chain of writes (eval.place), and where two completed
// cut-off swaps share a word, the order in which the linearization takes
// them decides which replaced which. Every order of those swaps is tried.
//
// Exhaustive, case by case:
//   - No completed cut-off swap: the graph of a larger completion holds
//     every edge of this one (a completed cas or swap joins a chain at its
//     end), so cycles, forks, dangling and unreachable writes prune, and a
//     solution must explain the first unexplained failure, with one of
//     its candidates.
//   - Completed cut-off swaps: forks, dangling and unreachable writes
//     still prune (placing and completing never undo them), but a cycle
//     may go: completing c can put c between the end of a chain and the
//     swap placed after it, and c, not that swap, then explains the
//     failures that expected that end. Take a linearization L whose
//     completion adds operations R to this one's: remove R from L; every
//     operation left stays legal unless a failure F relied on some c in R
//     replacing its expected value y at w, and then no completed write
//     here has version y (L would replace y twice), so F is unexplained or
//     explained by a cut-off swap here (in the order L gives), and c is a
//     candidate of F. So branching on the candidates of every such failure,
//     in every order tried, is exhaustive.
//
// The search stops when its budget of evaluations runs out, and the
// verdict is then "undecided", never a guess.
type searcher struct {
	e         *eval
	budget    int
	tried     map[string]bool
	undecided error
	evals     int // evaluations run
}

// maxOrdersPerEval bounds the permutations of cut-off swaps visited per
// evaluation of the budget (most of them may induce an order already
// tried).
const maxOrdersPerEval = 64

// evaluate runs one evaluation if the budget allows.
func (s *searcher) evaluate(ctx context.Context, extra []int32) (bool, error) {
	if s.budget <= 0 {
		s.giveUp()
		return false, nil
	}
	s.budget--
	s.evals++
	return s.e.run(ctx, extra)
}

// giveUp records that the search ran out of budget, naming the first
// unexplained failure, or else the first cut-off swap.
func (s *searcher) giveUp() {
	if s.undecided != nil {
		return
	}
	h := s.e.h
	line := int64(0)
	what := "the crashed cas operations that could explain this failure"
	if x := s.e.unexplainFirst(); x != none {
		line = int64(h.line[h.opOf(x)])
	}
	if len(h.pendingSwap) > 0 {
		what = "the operations cut off by crashes (cas and swaps, whose replaced values are unknown)"
		if line == 0 {
			line = int64(h.line[h.pendingSwap[0]])
		}
	}
	s.undecided = &UndecidedError{File: h.name, Line: line, Operations: int64(h.n),
		Msg: "too many ways to complete and order " + what + "; pmlin check --exact decides small histories"}
}

// find evaluates the completions forced by observation plus extra, in
// every order of the cut-off swaps, then extends extra with candidates.
func (s *searcher) find(ctx context.Context, extra []int32) (bool, error) {
	key := setKey(extra)
	if s.tried[key] {
		return false, nil
	}
	s.tried[key] = true
	e, h := s.e, s.e.h
	e.rank = nil
	ok, err := s.evaluate(ctx, extra)
	if err != nil || ok || s.undecided != nil {
		return ok, err
	}
	if len(e.forks) > 0 || len(e.unreach) > 0 || e.danglingCount() > 0 || len(h.contra) > 0 {
		return false, nil
	}
	var cands []int32
	if len(e.unknown) == 0 {
		if e.cyclic || len(e.unexplain) == 0 {
			return false, nil
		}
		cands = s.candidates(extra, nil, e.unexplain[:1])
	} else {
		cands = s.candidates(extra, nil, e.movable())
		if ok, err := s.orders(ctx, extra, &cands); err != nil || ok || s.undecided != nil {
			return ok, err
		}
	}
	for _, c := range cands {
		next := append(slices.Clone(extra), c)
		slices.Sort(next)
		ok, err := s.find(ctx, next)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// orders evaluates extra in every other order of the completed cut-off
// swaps that share a word, adding each evaluation's candidates to cands.
func (s *searcher) orders(ctx context.Context, extra []int32, cands *[]int32) (bool, error) {
	e := s.e
	group := e.ambiguous()
	if len(group) < 2 {
		return false, nil
	}
	seen := map[string]bool{e.orderKey(): true}
	visits := 0
	perm := slices.Clone(group)
	var found bool
	var ferr error
	permute(perm, 0, func() bool {
		visits++
		if visits > maxOrdersPerEval*max(1, s.budget) {
			s.giveUp()
			return true
		}
		e.rank = make(map[int32]int, len(perm))
		for k, op := range perm {
			e.rank[op] = k
		}
		if key := e.orderKey(); seen[key] {
			return false
		} else {
			seen[key] = true
		}
		ok, err := s.evaluate(ctx, extra)
		if err != nil || ok || s.undecided != nil {
			found, ferr = ok, err
			return true
		}
		*cands = s.candidates(extra, *cands, e.movable())
		return false
	})
	return found, ferr
}

// permute calls f with every permutation of p[k:] in place (p[:k] fixed),
// until f returns true.
func permute(p []int32, k int, f func() bool) bool {
	if k >= len(p)-1 {
		return f()
	}
	for i := k; i < len(p); i++ {
		p[k], p[i] = p[i], p[k]
		stop := permute(p, k+1, f)
		p[k], p[i] = p[i], p[k]
		if stop {
			return true
		}
	}
	return false
}

// ambiguous lists the completed cut-off swaps that share a word with
// another one (after an evaluation: e.unknown is sorted by word).
func (e *eval) ambiguous() []int32 {
	h := e.h
	var out []int32
	for k := 0; k < len(e.unknown); {
		j := k
		for j < len(e.unknown) && h.wordOf(e.unknown[j]) == h.wordOf(e.unknown[k]) {
			j++
		}
		if j-k > 1 {
			for _, x := range e.unknown[k:j] {
				out = append(out, h.opOf(x))
			}
		}
		k = j
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// orderKey names the order e.rank puts the completed cut-off swaps in on
// each word they share: two ranks with the same key give the same graph.
func (e *eval) orderKey() string {
	h := e.h
	xs := slices.Clone(e.unknown)
	slices.SortFunc(xs, func(a, b int32) int {
		if d := h.wordOf(a) - h.wordOf(b); d != 0 {
			return int(d)
		}
		return e.rankOf(h.opOf(a)) - e.rankOf(h.opOf(b))
	})
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, "%d:%d,", h.wordOf(x), h.opOf(x))
	}
	return b.String()
}

// movable lists the blamed accesses of the failures a completion could
// explain differently: those unexplained, and those explained by a
// completed cut-off swap (which a completed operation could come before).
func (e *eval) movable() []int32 {
	h := e.h
	out := slices.Clone(e.unexplain)
	for _, i := range h.failedCAS {
		if h.flags[i]&fNoAux != 0 && !e.assumeFail {
			continue
		}
		x := h.blamedAccess(i)
		if src, _ := e.failureSource(i, x); src != none {
			if o := h.opOf(src); h.flags[o]&(fSwap|fReturned) == fSwap {
				out = append(out, x)
			}
		}
	}
	return out
}

// candidates adds to cands (without repeating one) the pending operations
// not completed and not in extra that could explain the failures whose
// blamed accesses are xs: a cas that expected the same version at that
// word, or a swap on that word.
func (s *searcher) candidates(extra, cands []int32, xs []int32) []int32 {
	h := s.e.h
	for _, x := range xs {
		w, y := h.wordOf(x), h.ver[x] // failures that report values are never here
		for _, c := range h.pendingW {
			if h.flags[c]&fCompleted != 0 || slices.Contains(extra, c) || slices.Contains(cands, c) {
				continue
			}
			for z := int32(h.acc[c]); z < int32(h.acc[c+1]); z++ {
				if h.wordOf(z) == w && (h.flags[c]&fSwap != 0 || h.ver[z] == y) {
					cands = append(cands, c)
					break
				}
			}
		}
	}
	return cands
}
