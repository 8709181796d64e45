package lin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
)

// Synchronisation objects (model.Model.Sync: exchanger, channel) are
// decided by synchronisation linearisation (Lawrence and Lowe,
// "Synchronisation: specification and testing", Section 2.3, Definitions
// 2 and 3): every operation that returned, but for a timeout, takes effect
// together with one partner at a point inside both intervals. Their
// specification objects are stateless, so the order of the
// synchronisations never matters (Section 7.3): a history is
// synchronisation-linearisable exactly when its compatible pairs (windows
// that overlap, results that Sync accepts) hold a matching that covers
// every operation that returned. Section 7.3 matches a bipartite graph
// (a channel), Section 7.4 a general one (an exchanger); here both are
// Edmonds' blossom search (augmenting paths in a general graph), which is
// polynomial where Section 7.4's depth-first search is not.
//
// Optional operations (cut off, or answered "?") may synchronise or not:
// the matching must cover the operations that returned, not them. That
// covering problem is a perfect matching of a doubled graph: the graph,
// a copy of it, and an edge between each optional operation and its own
// copy (an optional operation left unpaired is paired with its copy
// instead). The matching is searched one connected component of the
// compatibility graph at a time.

// EngineSync is ObjectResult.Engine of a synchronisation object.
const EngineSync = "sync"

// Stuck is a failure of synchronisation progressibility (Lawrence and
// Lowe, Section 3, Definitions 7 to 9, as tested in Sections 7.1 and
// 7.3): an operation cut off by the end of the history (pending, not cut
// off by a crash) that should have returned.
type Stuck struct {
	Op      OpRef `json:"op"`
	Partner OpRef `json:"partner"`
	// Synchronised: Partner returned and no pairing explains the
	// operations that returned without Op, so Op synchronised with it
	// and should have returned. Else Partner is pending too, and the two
	// could have synchronised: one of them should have.
	Synchronised bool   `json:"synchronised"`
	Sentence     string `json:"sentence"`
}

// needsTwoStep says whether h in mode has recoverable process order
// through a synchronisation object: an operation cut off by a crash that
// must precede the next operation of its process, one of them on such an
// object. The matching places pairs without any order between them, so
// such a history goes to the two-step form instead (twostep.go).
func needsTwoStep(h *model.History, isSync []bool, mode history.Mode) bool {
	if !mode.ProcessOrder() {
		return false
	}
	all := make([]int, len(h.Ops))
	for i := range all {
		all[i] = i
	}
	for x, chain := range processOrder(h, all, nil) {
		touches := len(chain) > 0 && isSync[h.Ops[x].Object]
		for _, y := range chain {
			touches = touches || isSync[h.Ops[y].Object]
		}
		if touches {
			return true
		}
	}
	return false
}

// syncObjects returns the synchronisation objects of h (their models set
// Model.Sync) with their operations, and whether h needs the two-step
// form (needsTwoStep). compile has made and checked every model and
// operation already.
func syncObjects(h *model.History, opt *Options) ([]group, bool, error) {
	find := opt.Models
	if find == nil {
		find = model.Builtin
	}
	isSync := make([]bool, len(h.Objects))
	var syncs []group
	for k, obj := range h.Objects {
		m, err := find(obj.Model)(obj.Params)
		if err != nil {
			return nil, false, err
		}
		if isSync[k] = m.Sync != nil; isSync[k] {
			syncs = append(syncs, group{obj: k, m: m})
		}
	}
	at := map[int]int{}
	for k, g := range syncs {
		at[g.obj] = k
	}
	for i := range h.Ops {
		if k, ok := at[h.Ops[i].Object]; ok {
			syncs[k].ops = append(syncs[k].ops, i)
		}
	}
	return syncs, needsTwoStep(h, isSync, opt.Mode), nil
}

// checkSync decides one synchronisation object: its operations ops (in
// order of invocation), into or.
func checkSync(ctx context.Context, h *model.History, ops []int, m *model.Model, bounds []int, opt *Options, or *ObjectResult) {
	or.Engine, or.Parts = EngineSync, 1
	s := &syncer{ctx: ctx, h: h, opt: opt, m: m, bounds: bounds, init: m.Init()[0], maxEdges: opt.maxStates()}
	_, failing := s.pairUp(ops, nil)
	if s.stopped != "" {
		or.Verdict, or.Reason = Undecided, fmt.Sprintf("object %s: %s", h.Objects[or.Object].Name, s.stopped)
		return
	}
	if failing < 0 {
		or.Verdict = Linearizable
		or.Stuck = s.stuck(ops)
		return
	}
	or.Verdict = Violation
	or.Explanation = s.explain(ctx, ops, failing, opt)
}

// syncer decides the pairings of one synchronisation object.
type syncer struct {
	ctx    context.Context
	h      *model.History
	opt    *Options // names h's operations (names.go)
	m      *model.Model
	bounds []int
	init   any
	// maxEdges bounds the pairs that fit in one pairing's graph (the
	// state budget, Options.MaxStates, stands for it): beyond, or when
	// ctx ends, pairUp stops and says why in stopped.
	maxEdges int64
	stopped  string
}

// alone says whether op takes effect alone: a timeout.
func (s *syncer) alone(i int) bool {
	op := &s.h.Ops[i]
	return op.Status == model.Returned && s.m.Step(s.init, op) != nil
}

// hi is the end of op i's window: the position before which it takes
// effect.
func (s *syncer) hi(i int) int {
	if b := s.bounds[i]; b != unbounded {
		return b
	}
	return math.MaxInt
}

// fits says whether operations i and j (i invoked first) can synchronise:
// their windows overlap, and the model accepts their results.
func (s *syncer) fits(i, j int) bool {
	return s.h.Ops[j].Call < s.hi(i) && s.m.Sync(&s.h.Ops[i], &s.h.Ops[j])
}

// pairUp finds a pairing of ops (in order of invocation; those in
// exclude left out of the history) that covers every operation that
// returned, timeouts apart: mate maps each paired operation to its
// partner. failing is -1 if there is one, else an operation that returned
// and that no pairing covers along with the others; -2 if it stopped
// (stopped says why).
func (s *syncer) pairUp(ops []int, exclude map[int]bool) (mate map[int]int, failing int) {
	var vs []int // the operations that may pair
	for _, i := range ops {
		if !exclude[i] && !s.alone(i) {
			vs = append(vs, i)
		}
	}
	n := len(vs)
	required := make([]bool, n)
	for v, i := range vs {
		required[v] = s.h.Ops[i].Status == model.Returned
	}
	// The compatibility graph, without edges between two optional
	// operations (no pairing needs one), and its components.
	adj := make([][]int32, n)
	comp := make([]int, n)
	for v := range comp {
		comp[v] = v
	}
	find := func(v int) int {
		for comp[v] != v {
			comp[v] = comp[comp[v]]
			v = comp[v]
		}
		return v
	}
	var tried, edges int64
	for a := range vs {
		for b := a + 1; b < n && s.h.Ops[vs[b]].Call < s.hi(vs[a]); b++ {
			if tried++; tried%(1<<16) == 0 && s.ctx.Err() != nil {
				s.stopped = "cancelled"
				return nil, -2
			}
			if (required[a] || required[b]) && s.fits(vs[a], vs[b]) {
				if edges++; edges > s.maxEdges {
					s.stopped = fmt.Sprintf("more than %d pairs of operations fit, the state budget (it bounds them)", s.maxEdges)
					return nil, -2
				}
				adj[a] = append(adj[a], int32(b))
				adj[b] = append(adj[b], int32(a))
				comp[find(a)] = find(b)
			}
		}
	}
	members := map[int][]int{}
	var roots []int
	for v := range vs {
		r := find(v)
		if members[r] == nil {
			roots = append(roots, r)
		}
		members[r] = append(members[r], v)
	}
	mate = map[int]int{}
	for _, r := range roots {
		cm, fail := cover(members[r], required, adj)
		if fail >= 0 {
			return nil, vs[fail]
		}
		for v, w := range cm {
			mate[vs[v]] = vs[w]
		}
	}
	return mate, -1
}

// cover finds a matching of the component vs of the graph adj that
// covers its required vertices: a perfect matching of the doubled graph
// (the component, its copy, and each optional vertex joined to its copy),
// by Edmonds' blossom search from each vertex left free by a greedy
// start. It returns the matching's pairs within the component (each
// vertex to its partner), or a required vertex that no matching covers
// along with the others. If the doubled graph has a perfect matching, an
// augmenting path exists from any vertex a matching leaves free (the
// perfect matching and the current one differ by a path from it that
// must end at a free vertex), so a failed search is a proof.
func cover(vs []int, required []bool, adj [][]int32) (map[int]int, int) {
	n := len(vs)
	local := make(map[int]int32, n)
	for k, v := range vs {
		local[v] = int32(k)
	}
	g := newBlossom(2 * n)
	for k, v := range vs {
		for _, w := range adj[v] {
			l := local[int(w)]
			g.adj[k] = append(g.adj[k], l)
			g.adj[n+k] = append(g.adj[n+k], int32(n)+l)
		}
		if !required[v] {
			g.adj[k] = append(g.adj[k], int32(n+k))
			g.adj[n+k] = append(g.adj[n+k], int32(k))
		}
	}
	// Greedy start: each required vertex to a free neighbour, mirrored in
	// the copy; each optional vertex left free to its copy.
	for k := range n {
		if g.match[k] >= 0 || !required[vs[k]] {
			continue
		}
		for _, l := range g.adj[k] {
			if l < int32(n) && g.match[l] < 0 {
				g.match[k], g.match[l] = l, int32(k)
				g.match[n+k], g.match[int32(n)+l] = int32(n)+l, int32(n+k)
				break
			}
		}
	}
	for k := range n {
		if g.match[k] < 0 && !required[vs[k]] {
			g.match[k], g.match[n+k] = int32(n+k), int32(k)
		}
	}
	for x := range 2 * n {
		if g.match[x] >= 0 {
			continue
		}
		end := g.findPath(int32(x))
		if end < 0 {
			return nil, vs[x%n]
		}
		g.augment(end)
	}
	out := map[int]int{}
	for k := range n {
		if l := g.match[k]; l < int32(n) {
			out[vs[k]] = vs[l]
		}
	}
	return out, -1
}

// blossom is Edmonds' search for an augmenting path in a general graph,
// with blossoms contracted through base (the formulation of e-maxx's
// "Edmonds' algorithm for maximum matching").
type blossom struct {
	adj             [][]int32
	match, p, base  []int32
	used, inB, mark []bool
	q               []int32
}

func newBlossom(n int) *blossom {
	g := &blossom{adj: make([][]int32, n), match: make([]int32, n), p: make([]int32, n), base: make([]int32, n),
		used: make([]bool, n), inB: make([]bool, n), mark: make([]bool, n)}
	for i := range g.match {
		g.match[i] = -1
	}
	return g
}

// lca is the base of the blossom that the edge a-b closes: the first
// common base on the two alternating paths back to the root.
func (g *blossom) lca(a, b int32) int32 {
	clear(g.mark)
	for {
		a = g.base[a]
		g.mark[a] = true
		if g.match[a] < 0 {
			break
		}
		a = g.p[g.match[a]]
	}
	for {
		b = g.base[b]
		if g.mark[b] {
			return b
		}
		b = g.p[g.match[b]]
	}
}

// markPath marks the blossom's vertices on the path from v to its base b,
// and points their parents across the closing edge.
func (g *blossom) markPath(v, b, child int32) {
	for g.base[v] != b {
		g.inB[g.base[v]], g.inB[g.base[g.match[v]]] = true, true
		g.p[v] = child
		child = g.match[v]
		v = g.p[g.match[v]]
	}
}

// findPath searches an augmenting path from the free vertex root: it
// returns the free vertex at its other end (parents in p), or -1.
func (g *blossom) findPath(root int32) int32 {
	for i := range g.adj {
		g.used[i], g.p[i], g.base[i] = false, -1, int32(i)
	}
	g.used[root] = true
	q := append(g.q[:0], root)
	defer func() { g.q = q[:0] }()
	for h := 0; h < len(q); h++ {
		v := q[h]
		for _, to := range g.adj[v] {
			if g.base[v] == g.base[to] || g.match[v] == to {
				continue
			}
			if to == root || g.match[to] >= 0 && g.p[g.match[to]] >= 0 {
				cur := g.lca(v, to)
				clear(g.inB)
				g.markPath(v, cur, to)
				g.markPath(to, cur, v)
				for i := range g.adj {
					if g.inB[g.base[i]] {
						g.base[i] = cur
						if !g.used[i] {
							g.used[i] = true
							q = append(q, int32(i))
						}
					}
				}
			} else if g.p[to] < 0 {
				g.p[to] = v
				if g.match[to] < 0 {
					return to
				}
				g.used[g.match[to]] = true
				q = append(q, g.match[to])
			}
		}
	}
	return -1
}

// augment flips the matching along the path findPath found to end.
func (g *blossom) augment(end int32) {
	for v := end; v >= 0; {
		pv := g.p[v]
		next := g.match[pv]
		g.match[v], g.match[pv] = pv, v
		v = next
	}
}

// pending says whether op i is pending at the end of the history: cut
// off by the end, not by a crash (nor answered "?").
func (s *syncer) pending(i int) bool {
	op := &s.h.Ops[i]
	return op.Status == model.CutOff && op.Crash < 0
}

// stuck tests synchronisation progressibility: the history must have a
// synchronisation linearisation that leaves every pending operation
// unsynchronised (a synchronised one would have an anticipated return,
// Definition 8) and is maximal: no two pending operations could still
// synchronise (Definition 7; Section 7.3 checks just that for a stateless
// object). A timeout is allowed, never required: the history does not
// say how long an operation waited, so a pending operation without a
// partner is not stuck. It returns the operations that break it, each
// with a partner.
func (s *syncer) stuck(ops []int) []Stuck {
	var pend []int
	for _, i := range ops {
		if s.pending(i) {
			pend = append(pend, i)
		}
	}
	if len(pend) == 0 {
		return nil
	}
	var out []Stuck
	// Pending operations that returned operations needed: leave out as
	// many pending operations as the others allow, one at a time; those
	// left in synchronised (with their partners in the pairing found).
	exclude := map[int]bool{}
	for _, i := range pend {
		exclude[i] = true
	}
	if _, failing := s.pairUp(ops, exclude); failing == -2 {
		return nil // ctx ended: Check answers its error
	} else if failing >= 0 {
		for _, i := range pend {
			delete(exclude, i)
		}
		for _, i := range pend {
			exclude[i] = true
			if _, f := s.pairUp(ops, exclude); f >= 0 {
				delete(exclude, i)
			}
		}
		mate, _ := s.pairUp(ops, exclude)
		for _, i := range pend {
			if w, ok := mate[i]; ok && !exclude[i] {
				st := Stuck{Op: s.opt.ref(s.h, i), Partner: s.opt.ref(s.h, w), Synchronised: true}
				st.Sentence = fmt.Sprintf("%s (%s, process %d) never returned, though it must have synchronised: no pairing gives every operation that returned a partner without pending ones, and the pairing found pairs it with %s (%s)",
					st.Op.Op, st.Op.at(), st.Op.Proc, st.Partner.Op, st.Partner.at())
				out = append(out, st)
			}
		}
	}
	out = append(out, s.pendingPairs(pend)...)
	slices.SortStableFunc(out, func(a, b Stuck) int { return a.Op.Index - b.Op.Index })
	return out
}

// pendingPairs are the pending operations pend that could have
// synchronised with each other, each with the first such partner.
func (s *syncer) pendingPairs(pend []int) []Stuck {
	var out []Stuck
	for _, i := range pend {
		for _, j := range pend {
			if i == j || !s.m.Sync(&s.h.Ops[i], &s.h.Ops[j]) {
				continue
			}
			st := Stuck{Op: s.opt.ref(s.h, i), Partner: s.opt.ref(s.h, j)}
			st.Sentence = fmt.Sprintf("%s (%s, process %d) never returned, while %s (%s, process %d), pending too, could have synchronised with it",
				st.Op.Op, st.Op.at(), st.Op.Proc, st.Partner.Op, st.Partner.at(), st.Partner.Proc)
			out = append(out, st)
			break
		}
	}
	return out
}

// maxShrinkSync bounds the operations a violation's witness is shrunk
// from: each try is a matching of them.
const maxShrinkSync = 300

// explain makes the explanation of a violation: failing is an operation
// that returned and that no pairing covers along with the others.
func (s *syncer) explain(ctx context.Context, ops []int, failing int, opt *Options) *Explanation {
	h := s.h
	obj := &h.Objects[h.Ops[failing].Object]
	x := &Explanation{Object: obj.Name, Model: obj.Model, Failing: s.opt.ref(h, failing), State: describe(s.m, s.init),
		Prefix: []OpRef{}, Sync: true}
	// The operations that fit failing; and, to say why the others do
	// not, those that share a value with it (one's argument the other's
	// result: where its result came from, where its argument went) or fit
	// it, whose windows do not overlap its own, or that overlap it and do
	// not fit.
	shares := func(a, b *model.Op) bool {
		return len(a.Args) > 0 && b.Status == model.Returned && b.Results[0] == a.Args[0]
	}
	var partners, apart, misfit []int
	for _, j := range ops {
		if j == failing || s.alone(j) {
			continue
		}
		a, b := min(failing, j), max(failing, j)
		overlap := h.Ops[b].Call < s.hi(a)
		sync := s.m.Sync(&h.Ops[failing], &h.Ops[j])
		related := sync || shares(&h.Ops[failing], &h.Ops[j]) || shares(&h.Ops[j], &h.Ops[failing])
		switch {
		case overlap && sync:
			partners = append(partners, j)
		case related && !overlap:
			apart = append(apart, j)
		case related:
			misfit = append(misfit, j)
		}
	}
	// The witness: the operations of failing's reach (those linked to it
	// through pairs that fit), shrunk one by one while no pairing covers
	// what returned among them and each operation that returned keeps a
	// partner that fits it, if it had one (else any operation that
	// returned, alone, would do: a witness of nothing).
	wit := s.reach(ops, failing)
	x.Minimal = !opt.NoShrink && len(wit) <= maxShrinkSync
	if x.Minimal {
		for k := 0; k < len(wit) && ctx.Err() == nil; {
			try := slices.Delete(slices.Clone(wit), k, k+1)
			if _, f := s.pairUp(try, nil); f >= 0 && s.keepsPartners(wit, try) {
				wit = try
				continue
			}
			k++
		}
		x.Minimal = ctx.Err() == nil
	}
	for _, i := range wit {
		x.Ops = append(x.Ops, s.opt.ref(h, i))
	}
	refs := func(is []int) string {
		const most = 4
		var b []string
		for k, i := range is {
			if k == most {
				b = append(b, fmt.Sprintf("and %d more", len(is)-most))
				break
			}
			r := s.opt.ref(h, i)
			b = append(b, fmt.Sprintf("%s (%s)", r.Op, r.at()))
		}
		return strings.Join(b, ", ")
	}
	f := x.Failing
	if len(partners) == 0 {
		x.Impossible = true
		x.Sentence = fmt.Sprintf("%s (%s, process %d) could not be paired: no operation whose window overlaps its own fits it as a partner", f.Op, f.at(), f.Proc)
		if len(misfit) > 0 {
			x.Sentence += "; sharing a value with it and overlapping, but not fitting: " + refs(misfit)
		}
		if len(apart) > 0 {
			x.Sentence += "; sharing a value with it or fitting, but not overlapping: " + refs(apart)
		}
		return x
	}
	x.Sentence = fmt.Sprintf("%s (%s, process %d) could not be paired: its possible partners, %s, cannot all be given to it and to the other operations that returned and need them",
		f.Op, f.at(), f.Proc, refs(partners))
	return x
}

// keepsPartners says whether every operation of try that returned and
// has a partner that fits it in from still has one in try.
func (s *syncer) keepsPartners(from, try []int) bool {
	has := func(set []int, i int) bool {
		for _, j := range set {
			if j != i && !s.alone(j) && s.fits(min(i, j), max(i, j)) {
				return true
			}
		}
		return false
	}
	for _, i := range try {
		if s.h.Ops[i].Status == model.Returned && !s.alone(i) && has(from, i) && !has(try, i) {
			return false
		}
	}
	return true
}

// reach is the operations of ops linked to i through pairs that fit.
func (s *syncer) reach(ops []int, i int) []int {
	in := map[int]bool{i: true}
	todo := []int{i}
	for len(todo) > 0 {
		a := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, b := range ops {
			if in[b] || s.alone(b) {
				continue
			}
			lo, hi := min(a, b), max(a, b)
			if s.fits(lo, hi) {
				in[b] = true
				todo = append(todo, b)
			}
		}
	}
	var out []int
	for _, b := range ops {
		if in[b] {
			out = append(out, b)
		}
	}
	return out
}
