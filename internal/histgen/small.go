package histgen

import (
	"bytes"
	"math/rand/v2"

	"github.com/pmlin/pmlin/internal/history"
)

// SmallConfig describes a small in-memory history for Small and Random.
type SmallConfig struct {
	// Procs is the number of processes (ids 0..Procs-1), 2 to 6 typically.
	Procs int
	// Ops is the total number of operations invoked.
	Ops int
	// Words is the size of the address space: addresses 0..Words-1.
	Words int
	// MaxK bounds the words of one operation (distinct, in random order);
	// each operation touches 1..MaxK words. Capped at Words.
	MaxK int
	// ReadFraction is the probability that an invocation is a read.
	ReadFraction float64
	// Crashes is the exact number of crashes, placed at random steps.
	Crashes int
	// PendingAtEnd lets the history end while operations are pending.
	PendingAtEnd bool
	// Swaps is the probability that an operation that is not a read is a
	// swap rather than a CAS.
	Swaps float64
	// FailValues is the probability that a failed CAS reports the values
	// it read ("ret fail <a> <v1> ... <vk>").
	FailValues float64
	// Mode is the completion rule the history is generated under: it is
	// linearizable in Mode (and in every weaker one). A CAS interrupted by a
	// crash before its linearization point takes no effect (Strict), may
	// take effect after the crash but before the linearization point of its
	// process's next operation, past next operations cut off before theirs
	// (Recoverable), or at any later time (Durable).
	Mode history.Mode
}

// DefaultSmall is a configuration suited to comparing the analyzer with an
// exact checker: a dozen operations on three words.
func DefaultSmall() SmallConfig {
	return SmallConfig{Procs: 3, Ops: 12, Words: 3, MaxK: 2, ReadFraction: 0.5, Crashes: 1, PendingAtEnd: true}
}

// RandomSmallConfig draws a small configuration from seed: 2-6 processes,
// 4-14 operations, 1-5 words, k up to 3, 0-4 crashes, any mode; in two
// thirds of the seeds each, swaps (20-60% of the updates) and failures that
// report values (30-100% of them). Tests use it to sweep the configuration
// space along with the history seed.
func RandomSmallConfig(seed uint64) SmallConfig {
	rng := newRand(seed, 0x5eed_c0f1)
	c := SmallConfig{
		Procs:        2 + rng.IntN(5),
		Ops:          4 + rng.IntN(11),
		Words:        1 + rng.IntN(5),
		ReadFraction: 0.3 + 0.4*rng.Float64(),
		Crashes:      rng.IntN(5),
		PendingAtEnd: rng.IntN(2) == 0,
		Mode:         history.Modes[rng.IntN(len(history.Modes))],
	}
	c.MaxK = 1 + rng.IntN(min(3, c.Words))
	c.Swaps, c.FailValues = drawSwaps(rng)
	return c
}

// drawSwaps draws the Swaps and FailValues of a random configuration: each
// zero in a third of the cases (histories of reads and CAS only stay
// common), after every other field is drawn (so those keep their values
// per seed).
func drawSwaps(rng *rand.Rand) (swaps, failValues float64) {
	if rng.IntN(3) > 0 {
		swaps = 0.2 + 0.4*rng.Float64()
	}
	if rng.IntN(3) > 0 {
		failValues = 0.3 + 0.7*rng.Float64()
	}
	return swaps, failValues
}

// CrashChainConfig draws a tiny, crash-heavy configuration from seed: 2-3
// processes, 3-6 operations, 1-3 words, k up to 2, and 2-4 crashes (mostly 3
// or 4), any mode. So many crashes among so few operations make chains
// common: a process's next operation after a cut-off CAS cut off in turn,
// cut-off CAS after cut-off CAS. Small enough (at most 7 operations before
// a mutation adds some) for a brute force over every total order.
func CrashChainConfig(seed uint64) SmallConfig {
	rng := newRand(seed, 0xc4a1_c4a1)
	c := SmallConfig{
		Procs:        2 + rng.IntN(2),
		Ops:          3 + rng.IntN(4),
		Words:        1 + rng.IntN(3),
		ReadFraction: 0.3 + 0.4*rng.Float64(),
		Crashes:      []int{2, 3, 3, 4, 4}[rng.IntN(5)],
		PendingAtEnd: rng.IntN(2) == 0,
		Mode:         history.Modes[rng.IntN(len(history.Modes))],
	}
	c.MaxK = 1 + rng.IntN(min(2, c.Words))
	c.Swaps, c.FailValues = drawSwaps(rng)
	return c
}

func (c SmallConfig) normalized() SmallConfig {
	c.Procs = max(c.Procs, 1)
	c.Ops = max(c.Ops, 0)
	c.Words = max(c.Words, 1)
	c.MaxK = min(max(c.MaxK, 1), c.Words)
	c.ReadFraction = min(max(c.ReadFraction, 0), 1)
	c.Crashes = max(c.Crashes, 0)
	c.Swaps = min(max(c.Swaps, 0), 1)
	c.FailValues = min(max(c.FailValues, 0), 1)
	return c
}

// newRand returns a PCG-backed generator for seed; stream separates the
// independent uses of one seed.
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x9e3779b97f4a7c15))
}

// tag is the unique value a process writes: its id in the high half, a
// per-process counter in the low half (never 0, the initial value).
func tag(proc int, counter uint64) uint64 { return uint64(proc+1)<<32 | counter }

type simProc struct {
	op      int // pending operation, or -1
	lin     bool
	ok      bool     // outcome of a linearized CAS
	fail    uint64   // blamed address of a failed one
	vals    []uint64 // what a linearized read or failed CAS saw, or a swap replaced
	know    []uint64 // per word: the last value this process read
	has     []bool
	last    []uint64 // addresses of its last completed read
	crashed []uint64 // addresses of its CAS the last crash interrupted
	counter uint64
}

type deferredCAS struct {
	op, proc int
}

type smallSim struct {
	cfg      SmallConfig
	rng      *rand.Rand
	mem      []uint64
	seen     [][]uint64 // per word: values returned by finished reads, swaps and failures, or expected by finished successful CASes
	procs    []simProc
	ops      []history.Op
	crashes  []int
	pos      int
	deferred []deferredCAS
	watch    []uint64 // words of the last crashed CAS that took effect late
}

// Small simulates a linearizable execution under cfg and returns its
// history. Every Op field is set except Line and RetLine (see Reparse).
func Small(cfg SmallConfig, seed uint64) *history.History {
	return small(cfg, newRand(seed, 1))
}

func small(cfg SmallConfig, rng *rand.Rand) *history.History {
	cfg = cfg.normalized()
	s := &smallSim{cfg: cfg, rng: rng, mem: make([]uint64, cfg.Words), seen: make([][]uint64, cfg.Words)}
	s.procs = make([]simProc, cfg.Procs)
	for p := range s.procs {
		s.procs[p] = simProc{op: -1, know: make([]uint64, cfg.Words), has: make([]bool, cfg.Words)}
	}
	invoked, crashesLeft := 0, cfg.Crashes
	cands := make([]int, 0, cfg.Procs)
	for {
		pending := 0
		for p := range s.procs {
			if s.procs[p].op >= 0 {
				pending++
			}
		}
		if invoked == cfg.Ops && crashesLeft == 0 && (pending == 0 || cfg.PendingAtEnd && rng.IntN(4) == 0) {
			break
		}
		remaining := 2*(cfg.Ops-invoked) + pending + 1
		if crashesLeft > 0 && rng.IntN(remaining) < crashesLeft {
			s.crash()
			crashesLeft--
			continue
		}
		s.lateEffects()
		cands = cands[:0]
		for p := range s.procs {
			if s.procs[p].op >= 0 || invoked < cfg.Ops && !s.holdBack(p) {
				cands = append(cands, p)
			}
		}
		if len(cands) == 0 && invoked < cfg.Ops { // all held back
			for p := range s.procs {
				cands = append(cands, p)
			}
		}
		if len(cands) == 0 { // everything done but a crash is still due
			s.crash()
			crashesLeft--
			continue
		}
		p := cands[rng.IntN(len(cands))]
		ps := &s.procs[p]
		switch {
		case ps.op < 0:
			s.invoke(p)
			invoked++
		case !ps.lin:
			s.linearize(p)
		default:
			s.respond(p)
		}
	}
	return &history.History{Ops: s.ops, Crashes: s.crashes, Events: s.pos}
}

// holdBack makes a process whose crashed CAS may still take effect slower to
// invoke its next operation (Recoverable), so that other processes get to
// observe the effect before and after it happens.
func (s *smallSim) holdBack(p int) bool {
	if s.cfg.Mode != history.Recoverable {
		return false
	}
	for _, d := range s.deferred {
		if d.proc == p {
			return s.rng.IntN(3) > 0
		}
	}
	return false
}

// lateEffects lets deferred crashed CASes take effect now, at random.
func (s *smallSim) lateEffects() {
	for i := 0; i < len(s.deferred); {
		if s.rng.IntN(8) == 0 {
			d := s.deferred[i]
			s.deferred = append(s.deferred[:i], s.deferred[i+1:]...)
			if s.apply(d.op) {
				s.watch = s.ops[d.op].Addrs
				i -= s.dropEarlier(d.proc, i)
			}
			continue
		}
		i++
	}
}

// dropEarlier is called when a crashed CAS of process p took effect, with
// i the index in s.deferred where p's CASes crashed after it would begin:
// in Recoverable mode, those crashed before it (still deferred) never take
// effect now, since each must precede p's next operation that stays in the
// history, and this one may be it (a chain of cut-off CASes). It returns
// how many it dropped.
func (s *smallSim) dropEarlier(p, i int) int {
	if s.cfg.Mode != history.Recoverable {
		return 0
	}
	kept := s.deferred[:0]
	for j, d := range s.deferred {
		if j >= i || d.proc != p {
			kept = append(kept, d)
		}
	}
	n := len(s.deferred) - len(kept)
	s.deferred = kept
	return n
}

// matches reports whether every word of a CAS holds its expected value (a
// swap always matches).
func (s *smallSim) matches(id int) bool {
	op := &s.ops[id]
	if op.Kind == history.Swap {
		return true
	}
	for i, a := range op.Addrs {
		if s.mem[a] != op.Expected[i] {
			return false
		}
	}
	return true
}

// apply makes a crashed CAS or swap take effect if its expected values
// still match (if they do not, they never will again: values are unique),
// and reports whether it did.
func (s *smallSim) apply(id int) bool {
	if !s.matches(id) {
		return false
	}
	op := &s.ops[id]
	for i, a := range op.Addrs {
		s.mem[a] = op.New[i]
	}
	return true
}

func (s *smallSim) randomAddrs(k int, from []uint64) []uint64 {
	addrs := make([]uint64, 0, k)
	// Start from a shuffled prefix of from (a previous read's words).
	for _, i := range s.rng.Perm(len(from)) {
		if len(addrs) == k {
			break
		}
		addrs = append(addrs, from[i])
	}
	for len(addrs) < k {
		a := uint64(s.rng.IntN(s.cfg.Words))
		dup := false
		for _, b := range addrs {
			dup = dup || a == b
		}
		if !dup {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

func (s *smallSim) invoke(p int) {
	ps := &s.procs[p]
	k := 1 + s.rng.IntN(s.cfg.MaxK)
	op := history.Op{ID: len(s.ops), Proc: int32(p), Inv: s.pos, Ret: -1, Crash: -1}
	crashed := ps.crashed
	ps.crashed = nil
	if len(crashed) > 0 && s.rng.IntN(2) == 0 {
		// A recovery read: after a crash, a process looks at the words of
		// its interrupted CAS to learn whether it took effect.
		op.Kind = history.Read
		op.Addrs = s.randomAddrs(min(len(crashed), k), crashed)
	} else if s.rng.Float64() < s.cfg.ReadFraction {
		op.Kind = history.Read
		var from []uint64
		switch {
		case len(s.deferred) > 0 && s.rng.IntN(3) > 0:
			// Look at a word of a crashed CAS that may still take effect,
			// or just did, so that its effect is pinned between reads:
			// this is what separates the modes.
			d := s.deferred[s.rng.IntN(len(s.deferred))]
			from = s.ops[d.op].Addrs
		case len(s.watch) > 0 && s.rng.IntN(2) == 0:
			from = s.watch
		}
		op.Addrs = s.randomAddrs(k, from)
	} else if s.cfg.Swaps > 0 && s.rng.Float64() < s.cfg.Swaps {
		op.Kind = history.Swap
		var from []uint64
		if len(ps.last) > 0 && s.rng.IntN(2) == 0 {
			from = ps.last
		}
		op.Addrs = s.randomAddrs(k, from)
		op.New = make([]uint64, k)
		for i := range op.Addrs {
			ps.counter++
			op.New[i] = tag(p, ps.counter)
		}
	} else {
		op.Kind = history.CAS
		var from []uint64
		if len(ps.last) > 0 && s.rng.IntN(5) < 3 {
			from = ps.last
		}
		op.Addrs = s.randomAddrs(k, from)
		op.Expected = make([]uint64, k)
		op.New = make([]uint64, k)
		for i, a := range op.Addrs {
			switch {
			case s.rng.IntN(5) < 4 || len(s.seen[a]) == 0:
				// What this process read last, or the initial value.
				if ps.has[a] {
					op.Expected[i] = ps.know[a]
				}
			default:
				// A value some finished operation justified (Assumption
				// 2), preferring recent ones.
				seen := s.seen[a]
				op.Expected[i] = seen[max(0, len(seen)-1-s.rng.IntN(3))]
			}
			ps.counter++
			op.New[i] = tag(p, ps.counter)
		}
	}
	s.pos++
	ps.op, ps.lin = op.ID, false
	s.ops = append(s.ops, op)
}

func (s *smallSim) linearize(p int) {
	ps := &s.procs[p]
	// Recoverable: a crashed CAS of p takes effect before p's next
	// operation that stays in the history, or never. Deciding at the
	// linearization point of p's next operation lets it outlive an
	// operation cut off before that point (which leaves the history):
	// the chain the recoverable rule must follow.
	for i := 0; i < len(s.deferred); {
		if s.deferred[i].proc == p && s.cfg.Mode == history.Recoverable {
			if s.rng.IntN(2) == 0 && s.apply(s.deferred[i].op) {
				s.watch = s.ops[s.deferred[i].op].Addrs
			}
			s.deferred = append(s.deferred[:i], s.deferred[i+1:]...)
			continue
		}
		i++
	}
	op := &s.ops[ps.op]
	ps.lin = true
	ps.vals = make([]uint64, len(op.Addrs))
	for i, a := range op.Addrs {
		ps.vals[i] = s.mem[a]
	}
	switch op.Kind {
	case history.Read:
		return
	case history.Swap:
		for i, a := range op.Addrs {
			s.mem[a] = op.New[i]
		}
		return
	}
	var differ []uint64
	for i, a := range op.Addrs {
		if s.mem[a] != op.Expected[i] {
			differ = append(differ, a)
		}
	}
	if len(differ) > 0 {
		ps.ok, ps.fail = false, differ[s.rng.IntN(len(differ))]
		return
	}
	ps.ok = true
	for i, a := range op.Addrs {
		s.mem[a] = op.New[i]
	}
}

func (s *smallSim) respond(p int) {
	ps := &s.procs[p]
	op := &s.ops[ps.op]
	op.Ret = s.pos
	s.pos++
	switch {
	case op.Kind == history.Read:
		op.Status, op.Values = history.Returned, ps.vals
		for i, a := range op.Addrs {
			ps.know[a], ps.has[a] = ps.vals[i], true
			s.seen[a] = appendSeen(s.seen[a], ps.vals[i])
		}
		ps.last = op.Addrs
	case op.Kind == history.Swap:
		// The values it replaced justify later CASes (Assumption 2);
		// the process does not learn its own new values from them.
		op.Status, op.Values = history.Returned, ps.vals
		for i, a := range op.Addrs {
			s.seen[a] = appendSeen(s.seen[a], ps.vals[i])
		}
	case ps.ok:
		op.Status = history.Succeeded
		for i, a := range op.Addrs {
			s.seen[a] = appendSeen(s.seen[a], op.Expected[i])
		}
	default:
		op.Status, op.FailAddr = history.Failed, ps.fail
		if s.cfg.FailValues > 0 && s.rng.Float64() < s.cfg.FailValues {
			// It reports what it read: the process retries with it.
			op.Values = ps.vals
			for i, a := range op.Addrs {
				ps.know[a], ps.has[a] = ps.vals[i], true
				s.seen[a] = appendSeen(s.seen[a], ps.vals[i])
			}
		}
	}
	ps.op, ps.vals = -1, nil
}

func appendSeen(seen []uint64, v uint64) []uint64 {
	if n := len(seen); n > 0 && seen[n-1] == v {
		return seen
	}
	return append(seen, v)
}

// crash interrupts every pending operation. A linearized CAS took effect
// (if it matched); one not yet linearized may take effect at the crash, or
// (Recoverable, Durable) be deferred, or never take effect.
func (s *smallSim) crash() {
	idx := len(s.crashes)
	s.crashes = append(s.crashes, s.pos)
	s.pos++
	for p := range s.procs {
		ps := &s.procs[p]
		if ps.op < 0 {
			continue
		}
		op := &s.ops[ps.op]
		op.Crash = idx
		if op.Kind != history.Read {
			ps.crashed = op.Addrs
		}
		if op.Kind != history.Read && !ps.lin {
			switch r := s.rng.IntN(6); {
			case !s.matches(op.ID):
				// It can never take effect: values do not come back.
			case r == 0 || r == 1 && s.cfg.Mode == history.Strict:
				if s.apply(op.ID) {
					s.dropEarlier(p, len(s.deferred))
				}
			case r <= 4 && s.cfg.Mode != history.Strict:
				s.deferred = append(s.deferred, deferredCAS{op: op.ID, proc: p})
			}
		}
		ps.op, ps.vals, ps.lin = -1, nil, false
	}
}

// Text writes h in text format v1 with h.WriteTo.
func Text(h *history.History) []byte {
	var b bytes.Buffer
	h.WriteTo(&b) // a bytes.Buffer does not fail
	return b.Bytes()
}

// Reparse writes h as text and reads it back with history.ReadAll, so that
// Line and RetLine are real line numbers and the reader's checks ran.
func Reparse(h *history.History) (*history.History, error) {
	return history.ReadAll(bytes.NewReader(Text(h)), "histgen")
}
