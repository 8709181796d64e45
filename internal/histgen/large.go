package histgen

import (
	"bytes"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"

	"github.com/pmlin/pmlin/internal/history"
)

// Violation is a kind of violation WriteLarge can plant in an otherwise
// linearizable history. Each is certain: no linearization exists, in any
// mode.
type Violation uint8

const (
	// NoViolation: the history is linearizable (in every mode).
	NoViolation Violation = iota
	// PlantStaleRead: a read returns, for one word, the value that the CAS
	// whose value the word held had overwritten; that CAS finished before
	// the read was invoked.
	PlantStaleRead
	// PlantTornRead: a multi-word read returns, for two words written by one
	// CAS, that CAS's new value at one and its old value at the other.
	// Needs K >= 2 and multi-word CASes.
	PlantTornRead
	// PlantLostWrite: the first read after a crash returns, for one word,
	// the value from before a CAS that finished before the crash, as if its
	// write had not been persisted. Needs CrashEvery > 0.
	PlantLostWrite
)

func (v Violation) String() string {
	switch v {
	case NoViolation:
		return "none"
	case PlantStaleRead:
		return "stale-read"
	case PlantTornRead:
		return "torn-read"
	case PlantLostWrite:
		return "lost-write"
	}
	return fmt.Sprintf("Violation(%d)", uint8(v))
}

// LargeConfig describes a large streamed history.
type LargeConfig struct {
	// Ops is the number of operations invoked (N).
	Ops int
	// Procs is the number of processes (ids 0..Procs-1).
	Procs int
	// Words is the size of the address space: addresses 0..Words-1. The
	// simulation keeps 40 bytes per word.
	Words int
	// K bounds the words of an operation: 1..K each, or exactly K with
	// FixedK. Capped at Words.
	K      int
	FixedK bool
	// ReadFraction is the probability that an invocation is a read.
	ReadFraction float64
	// CrashEvery, if positive, puts a crash after every CrashEvery
	// invocations (not after the last one).
	CrashEvery int
	// PendingAtEnd ends the history as soon as the last operation is
	// invoked, leaving the operations then in progress pending.
	PendingAtEnd bool
	// Violation, if not NoViolation, plants exactly one violation in the
	// first operation that can carry it among those invoked at or after
	// index ViolationAt (0-based, in invocation order).
	Violation   Violation
	ViolationAt int
}

// Planted is the tests' history with one planted violation v: ops
// operations of 8 processes on 500 words, k up to 3, half reads, the
// violation from the middle on, and for a lost write (which needs a crash)
// a crash every 2000 operations.
func Planted(ops int, v Violation, seed uint64) ([]byte, LargeStats, error) {
	var buf bytes.Buffer
	cfg := LargeConfig{Ops: ops, Procs: 8, Words: 500, K: 3, ReadFraction: 0.5, Violation: v, ViolationAt: ops / 2}
	if v == PlantLostWrite {
		cfg.CrashEvery = 2000
	}
	st, err := WriteLarge(&buf, cfg, seed)
	return buf.Bytes(), st, err
}

// LargeStats describes what WriteLarge wrote.
type LargeStats struct {
	Ops, Events, Bytes, Crashes int64
	// ViolationOp is the index (0-based, invocation order) of the operation
	// carrying the planted violation, and ViolationLine the line of its
	// invocation; both -1 without one.
	ViolationOp, ViolationLine int64
}

// fastRand is a PCG called directly (no interface) with Lemire's bounded
// draw: WriteLarge's hot loop makes several draws per operation.
type fastRand struct{ pcg rand.PCG }

func (r *fastRand) intn(n int) int {
	hi, lo := bits.Mul64(r.pcg.Uint64(), uint64(n))
	if lo < uint64(n) {
		thresh := -uint64(n) % uint64(n)
		for lo < thresh {
			hi, lo = bits.Mul64(r.pcg.Uint64(), uint64(n))
		}
	}
	return int(hi)
}

const (
	idle = iota
	invoked
	linearized
)

type largeProc struct {
	state   uint8
	read    bool
	ok      bool
	plant   bool // this operation is the planting candidate
	slot    int  // for a planted stale or lost-write read: the word's index
	fail    uint64
	stale   uint64
	counter uint64
	op      int64 // index of the current operation
	line    int64
	addrs   []uint64
	exp     []uint64
	nw      []uint64
	vals    []uint64
	// The last completed read: its words and values, to build a CAS that
	// expects them (Assumption 2).
	lastAddrs, lastVals []uint64
}

// wordState is what the simulation knows of a word, in one place so that
// touching a word costs one cache miss.
type wordState struct {
	cur, prev uint64 // current and previous value
	lastSeen  uint64 // the last value a finished read returned
	writer    int64  // the operation (index+1; 0: the initial value) that wrote cur
	done      bool   // whether that operation has responded
}

type largeSim struct {
	cfg        LargeConfig
	rng        fastRand
	w          *history.Writer
	procs      []largeProc
	words      []wordState
	perm       []uint64 // for drawing many distinct addresses
	readThresh uint64   // a read iff rng < readThresh
	allReads   bool

	ops, events, crashes int64
	pending              int
	lastDone             int // a word whose writer responded last, or -1
	// Planting.
	planted, planting  bool
	plantOp, plantLine int64
	multi              []uint64 // words of the last successful multi-word CAS
	lostWord           int      // PlantLostWrite: the word chosen at the last crash, or -1
	lostVal            uint64
}

// WriteLarge writes to w a history of cfg.Ops operations, simulated like
// Small's (each operation takes effect atomically at a random point of its
// interval; CASes expect values that finished reads returned; new values are
// unique tags), through a history.Writer, in O(Procs*K + Words) memory. A
// CAS interrupted by a crash before its linearization point takes no
// effect, so without a planted violation the history is linearizable in
// every mode. It generates two to four million operations per second (one
// core; see BenchmarkWriteLarge), mostly formatting text. A process may
// write at most 2^32 values (tags are (process+1)<<32 | counter); beyond,
// WriteLarge reports an error.
func WriteLarge(w io.Writer, cfg LargeConfig, seed uint64) (LargeStats, error) {
	cfg.Procs = max(cfg.Procs, 1)
	cfg.Words = max(cfg.Words, 1)
	cfg.K = min(max(cfg.K, 1), cfg.Words)
	cfg.Ops = max(cfg.Ops, 0)
	s := &largeSim{cfg: cfg, w: history.NewWriter(w), lastDone: -1, lostWord: -1}
	s.rng.pcg.Seed(seed, 0x1a49e_5eed^0x9e3779b97f4a7c15)
	switch rf := cfg.ReadFraction; {
	case rf >= 1:
		s.allReads = true
	case rf > 0:
		s.readThresh = uint64(rf * (1 << 63) * 2)
	}
	s.procs = make([]largeProc, cfg.Procs)
	for p := range s.procs {
		ps := &s.procs[p]
		buf := make([]uint64, 6*cfg.K)
		ps.addrs, ps.exp, ps.nw, ps.vals = buf[:0:cfg.K], buf[cfg.K:cfg.K:2*cfg.K], buf[2*cfg.K:2*cfg.K:3*cfg.K], buf[3*cfg.K:3*cfg.K:4*cfg.K]
		ps.lastAddrs, ps.lastVals = buf[4*cfg.K:4*cfg.K:5*cfg.K], buf[5*cfg.K:5*cfg.K:6*cfg.K]
	}
	s.words = make([]wordState, cfg.Words)
	if 2*cfg.K > cfg.Words {
		s.perm = make([]uint64, cfg.Words)
		for i := range s.perm {
			s.perm[i] = uint64(i)
		}
	}
	if cfg.Violation == PlantLostWrite && cfg.CrashEvery <= 0 {
		return LargeStats{}, fmt.Errorf("histgen: a planted lost write needs CrashEvery > 0")
	}
	if cfg.Violation == PlantTornRead && cfg.K < 2 {
		return LargeStats{}, fmt.Errorf("histgen: a planted torn read needs K >= 2")
	}
	s.w.Header(0, nil)
	n := int64(cfg.Ops)
	sinceCrash := 0
	for {
		if s.ops == n && (cfg.PendingAtEnd && !s.planting || s.pending == 0) {
			break
		}
		if cfg.CrashEvery > 0 && sinceCrash >= cfg.CrashEvery && s.ops < n {
			s.crash()
			sinceCrash = 0
			continue
		}
		p := s.rng.intn(cfg.Procs)
		switch s.procs[p].state {
		case idle:
			if s.ops < n {
				s.invoke(p)
				sinceCrash++
			}
		case invoked:
			s.linearize(p)
		default:
			s.respond(p)
		}
	}
	err := s.w.Flush()
	st := LargeStats{Ops: s.ops, Events: s.events, Bytes: s.w.Written(), Crashes: s.crashes,
		ViolationOp: -1, ViolationLine: -1}
	if s.planted {
		st.ViolationOp, st.ViolationLine = s.plantOp, s.plantLine
	}
	for p := range s.procs {
		if err == nil && s.procs[p].counter >= 1<<32 {
			err = fmt.Errorf("histgen: process %d wrote %d values; tags repeat beyond 2^32 per process (use more processes)", p, s.procs[p].counter)
		}
	}
	if err == nil && cfg.Violation != NoViolation && !s.planted {
		err = fmt.Errorf("histgen: could not plant a %v after operation %d of %d", cfg.Violation, cfg.ViolationAt, cfg.Ops)
	}
	return st, err
}

// randomAddrs fills addrs with k distinct random words.
func (s *largeSim) randomAddrs(addrs []uint64, k int) []uint64 {
	addrs = addrs[:0]
	if s.perm != nil {
		for i := range k {
			j := i + s.rng.intn(len(s.perm)-i)
			s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
			addrs = append(addrs, s.perm[i])
		}
		return addrs
	}
	for len(addrs) < k {
		a := uint64(s.rng.intn(s.cfg.Words))
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

// wantPlant reports whether the operation about to be invoked should try to
// carry the planted violation, preparing its words if so.
func (s *largeSim) wantPlant(ps *largeProc) bool {
	if s.cfg.Violation == NoViolation || s.planted || s.planting || ps.op < int64(s.cfg.ViolationAt) {
		return false
	}
	k := s.cfg.K
	if !s.cfg.FixedK {
		k = 1 + s.rng.intn(s.cfg.K)
	}
	var w int
	switch s.cfg.Violation {
	case PlantStaleRead:
		w = s.lastDone
		if w < 0 || !s.words[w].done {
			return false
		}
		ps.stale = s.words[w].prev
	case PlantLostWrite:
		w = s.lostWord
		if w < 0 {
			return false
		}
		ps.stale = s.lostVal
	case PlantTornRead:
		if len(s.multi) < 2 {
			return false
		}
		ps.addrs = append(ps.addrs[:0], s.multi...)
		ps.read = true
		return true
	}
	ps.addrs = s.randomAddrs(ps.addrs, k)
	ps.slot = s.rng.intn(k)
	for i, a := range ps.addrs {
		if a == uint64(w) {
			ps.slot = i
		}
	}
	ps.addrs[ps.slot] = uint64(w)
	ps.read = true
	return true
}

func (s *largeSim) invoke(p int) {
	ps := &s.procs[p]
	ps.op = s.ops
	s.ops++
	s.pending++
	ps.state = invoked
	ps.line = s.events + 2 // the header is line 1
	s.events++
	ps.plant = s.wantPlant(ps)
	if ps.plant {
		s.planting = true
		s.w.InvokeRead(int32(p), ps.addrs)
		return
	}
	k := s.cfg.K
	if !s.cfg.FixedK {
		k = 1 + s.rng.intn(s.cfg.K)
	}
	ps.read = s.allReads || s.rng.pcg.Uint64() < s.readThresh
	if ps.read {
		ps.addrs = s.randomAddrs(ps.addrs, k)
		s.w.InvokeRead(int32(p), ps.addrs)
		return
	}
	if len(ps.lastAddrs) > 0 && s.rng.intn(4) > 0 {
		// Expect what this process read last, on the same words.
		ps.addrs = append(ps.addrs[:0], ps.lastAddrs...)
		ps.exp = append(ps.exp[:0], ps.lastVals...)
	} else {
		ps.addrs = s.randomAddrs(ps.addrs, k)
		ps.exp = ps.exp[:0]
		for _, a := range ps.addrs {
			ps.exp = append(ps.exp, s.words[a].lastSeen)
		}
	}
	ps.nw = ps.nw[:0]
	for range ps.addrs {
		ps.counter++
		ps.nw = append(ps.nw, tag(p, ps.counter))
	}
	s.w.InvokeCAS(int32(p), ps.addrs, ps.exp, ps.nw)
}

func (s *largeSim) linearize(p int) {
	ps := &s.procs[p]
	ps.state = linearized
	if ps.read {
		ps.vals = ps.vals[:0]
		for _, a := range ps.addrs {
			ps.vals = append(ps.vals, s.words[a].cur)
		}
		if ps.plant && s.cfg.Violation == PlantTornRead {
			s.tear(ps)
		}
		return
	}
	differ := 0
	for i, a := range ps.addrs {
		if s.words[a].cur != ps.exp[i] {
			differ++
		}
	}
	if differ > 0 {
		pick := s.rng.intn(differ)
		for i, a := range ps.addrs {
			if s.words[a].cur != ps.exp[i] {
				if pick == 0 {
					ps.ok, ps.fail = false, a
					break
				}
				pick--
			}
		}
		return
	}
	ps.ok = true
	for i, a := range ps.addrs {
		w := &s.words[a]
		w.prev, w.cur, w.writer, w.done = w.cur, ps.nw[i], ps.op+1, false
	}
	if len(ps.addrs) >= 2 && s.cfg.Violation == PlantTornRead {
		s.multi = append(s.multi[:0], ps.addrs...)
	}
}

// tear makes a planted torn read return, for one of two words whose current
// values one CAS wrote, that CAS's old value.
func (s *largeSim) tear(ps *largeProc) {
	for i, a := range ps.addrs {
		for j := i + 1; j < len(ps.addrs); j++ {
			if wa := &s.words[a]; wa.writer != 0 && wa.writer == s.words[ps.addrs[j]].writer {
				ps.vals[i] = wa.prev
				return
			}
		}
	}
	ps.plant, s.planting = false, false // try again with a later read
}

func (s *largeSim) respond(p int) {
	ps := &s.procs[p]
	ps.state = idle
	s.pending--
	s.events++
	switch {
	case ps.read:
		if ps.plant {
			if s.cfg.Violation != PlantTornRead {
				ps.vals[ps.slot] = ps.stale
			}
			s.planted, s.planting, s.plantOp, s.plantLine = true, false, ps.op, ps.line
		}
		ps.plant = false
		s.w.ReturnRead(int32(p), ps.vals)
		ps.lastAddrs = append(ps.lastAddrs[:0], ps.addrs...)
		ps.lastVals = append(ps.lastVals[:0], ps.vals...)
		for i, a := range ps.addrs {
			s.words[a].lastSeen = ps.vals[i]
		}
	case ps.ok:
		s.w.ReturnOK(int32(p))
		for _, a := range ps.addrs {
			if w := &s.words[a]; w.writer == ps.op+1 {
				w.done = true
				s.lastDone = int(a)
			}
		}
	default:
		s.w.ReturnFail(int32(p), ps.fail)
	}
}

// crash interrupts every pending operation: a CAS not yet linearized takes
// no effect. A planted read interrupted before its response is retried.
func (s *largeSim) crash() {
	s.w.Crash()
	s.events++
	s.crashes++
	for p := range s.procs {
		ps := &s.procs[p]
		if ps.state == idle {
			continue
		}
		if ps.plant {
			ps.plant, s.planting = false, false
		}
		ps.state = idle
	}
	s.pending = 0
	if s.cfg.Violation == PlantLostWrite && !s.planted && s.ops >= int64(s.cfg.ViolationAt) {
		// A word whose current value was written by a CAS that finished
		// before this crash.
		s.lostWord = -1
		start := s.rng.intn(s.cfg.Words)
		for i := range s.cfg.Words {
			if a := (start + i) % s.cfg.Words; s.words[a].done {
				s.lostWord, s.lostVal = a, s.words[a].prev
				break
			}
		}
	}
}
