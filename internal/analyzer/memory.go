package analyzer

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/units"
)

// MemoryError reports a history that needs more memory than the check may
// use (Options.MaxMemory): refused before it was read (Line 0), stopped
// while it was read, or after (before an allocation of the analysis), in
// each case before the memory ran out.
type MemoryError struct {
	File string
	// Line is the line reached when the check stopped (0: none yet).
	Line int64
	// Need is the memory the check would need: from the input's size
	// before reading (Estimated), else from what drives the memory in what
	// was read, projected to the whole input when its size is known; a
	// lower bound when it is not (AtLeast).
	Need  int64
	Limit int64
	// Source says where Limit comes from (e.g. "--max-memory").
	Source string
	// Estimated: refused before reading, Need estimated from the size.
	Estimated bool
	// AtLeast: Need is what the part read needs, or the memory in use
	// when it stopped: the whole needs more (the input's size, which
	// tells how much more, is unknown on standard input).
	AtLeast bool
	// After names the step of the analysis, after reading, that would
	// have passed the limit ("" while reading).
	After string
}

func (e *MemoryError) Error() string {
	var need string
	switch {
	case e.Estimated:
		need = "about " + units.Bytes(e.Need) + " (estimated from its size)"
	case e.After != "":
		need = fmt.Sprintf("more than %s (to %s, once it was read)", units.Bytes(e.Need), e.After)
	case e.AtLeast && e.Line == 0:
		need = fmt.Sprintf("more than %s (stopped before its first line)", units.Bytes(e.Need))
	case e.AtLeast:
		need = fmt.Sprintf("more than %s (stopped at line %d)", units.Bytes(e.Need), e.Line)
	default:
		need = fmt.Sprintf("about %s (projected at line %d from what was read)", units.Bytes(e.Need), e.Line)
	}
	return fmt.Sprintf("%s: too large for the memory available: checking it needs %s, and %s allows %s",
		e.File, need, e.Source, units.Bytes(e.Limit))
}

// estimateMemory is the memory that checking a history of size bytes in
// format f needs at least, for a refusal before reading it. On pmlin gen
// histories (README, Performance) the peak resident memory is 0.93 bytes
// per byte of text at 10M operations of 1-3 words, about 1.0 with 8 words
// per operation, up to 2 with one word per operation, and more with many
// processes, crashes or distinct words (usage.need counts those). The
// JSON Lines twin takes 1.6 to 2.4 times the bytes of text, the binary
// history about 0.9 (it is estimated as text). It is the low end: a
// history it refuses would not fit; one it lets through may still be
// stopped while it is read (memoryGuard).
func estimateMemory(size int64, f history.Format) int64 {
	if f == history.JSONL {
		size = size * 2 / 5
	}
	return size - size/8 + 16<<20
}

// usage counts what drives the memory of a check: the history's
// operations, accesses and slots, its distinct words, processes, cut-off
// operations and crashes, and the lookups left to the join.
type usage struct {
	ops, accesses, slots int64
	words                int64
	mapped               int64 // words beyond the direct table: a map entry each
	direct               int64 // entries of the direct address table
	procs                int64
	cutoffs, crashes     int64
	queries              int64
	// reserved are the operations, accesses and slots the columns were
	// sized for (hist.reserve; none without a size hint: standard input):
	// past them, each growth copies a column, the old copy resident until
	// it is collected.
	reserved [3]int64
}

// Bytes per item of what drives the memory, from the arrays that hold it
// (hist and loader in load.go, the join in resolve.go, the evaluation's
// arrays in evaluate.go, the Reader's table of processes), checked
// against the memory a check takes under a memory cgroup (cli's
// TestCheckUnderMemoryCgroup). A history shape they miss is caught by the
// resident memory (memoryGuard.check).
const (
	// memBase: the runtime, the program, the Reader's buffers and the
	// decoding pipeline's chunks.
	memBase = 24 << 20
	// memOp: line, response gap, process index (16 bits; memOpWide more
	// past 65536 processes), flags, first access, lo.
	memOp     = 4 + 2 + 2 + 1 + 4 + 4
	memOpWide = 2
	// memAccess: word and version, and the slot index (12 bits per
	// access); the evaluation adds two bits.
	memAccess = 8 + 2
	// memSlot: new value and owner while reading; memSlotAux, aux after.
	memSlot    = 8 + 4
	memSlotAux = 4
	// memWord: address and initial value, grown by append (the old copy
	// and the new at a growth); memWordRing: the loader's ring of a word's
	// recent writes, grown by a quarter (the old ring and its copy);
	// memWordEval: the evaluation's path successor.
	memWord     = 2 * (8 + 8)
	memWordRing = 2 * 64
	memWordEval = 4
	// memMapped: an entry of the address map (a word beyond the direct
	// table), with the map's growth; memDirect: the direct table's entry,
	// which grows by doubling.
	memMapped = 40
	memDirect = 4 * 3 / 2
	// memProc: the process's id and its last cut-off operation (hist,
	// loader); memReaderProc: the Reader's state of a process (112 bytes,
	// in a slice grown by append: twice at a growth), the buffers of its
	// pending operation's addresses and expected values, and its entry in
	// the id index.
	memProc       = 4 + 4
	memReaderProc = 2*112 + 32 + 24
	// memCutOff: the record of an operation cut off by a crash; memCrash:
	// a crash's line and position; both grown by append.
	memCutOff = 2 * 20
	memCrash  = 2 * 8
	// memQuery: a lookup left to the join, in the loader's lists (its
	// access, and the value for a deferred one); memJoinQuery and
	// memJoinSlot: the join's partitioned copies of lookups and writes,
	// made while the lists are still held.
	memQuery     = 12
	memJoinQuery = 16
	memJoinSlot  = 8
)

// grow is the bytes of n items of size bytes each in a column sized for
// reserved items, doubled once they outgrow it: at a growth by append the
// old copy and the new are both resident.
func grow(n, reserved, size int64) int64 {
	if n > reserved {
		return 2 * n * size
	}
	return n * size
}

// need is the peak memory of a check of a history with these counts: the
// larger of the peak while reading (every array of the load, with the
// copies made by growths, and the join at the end) and the peak after,
// once the loader's and the Reader's memory is freed.
func (u usage) need() int64 {
	op := int64(memOp)
	if u.procs > 1<<16 {
		op += memOpWide
	}
	load := memBase +
		grow(u.ops, u.reserved[0], op) +
		grow(u.accesses, u.reserved[1], memAccess) +
		grow(u.slots, u.reserved[2], memSlot) +
		u.words*(memWord+memWordRing) + u.mapped*memMapped + u.direct*memDirect +
		u.procs*(memProc+memReaderProc) +
		u.cutoffs*memCutOff + u.crashes*memCrash +
		u.queries*(memQuery+memJoinQuery) + u.slots*memJoinSlot
	after := memBase + u.ops*op + u.ops*3/8 + // the evaluation's bitsets per operation
		u.accesses*memAccess + u.accesses/4 + // and per access
		u.slots*(memSlot+memSlotAux) +
		u.words*(memWord/2+memWordEval) + u.mapped*memMapped + u.direct*memDirect +
		u.procs*memProc + u.cutoffs*memCutOff/2 + u.crashes*memCrash/2
	return max(load, after)
}

// project is u at the end of an input of which the share f (0 < f <= 1)
// was read, given earlier, the counts at an earlier point: what comes in
// proportion to the text (operations, accesses, crashes) scaled up; the
// distinct words and processes as distinct draws (distinct).
func (u usage) project(earlier usage, f float64) usage {
	if f <= 0 || f >= 1 {
		return u
	}
	scale := func(n int64) int64 { return int64(float64(n) / f) }
	p := u
	p.ops, p.accesses, p.slots = scale(u.ops), scale(u.accesses), scale(u.slots)
	p.cutoffs, p.crashes, p.queries = scale(u.cutoffs), scale(u.crashes), scale(u.queries)
	n1, n2, n := float64(earlier.ops), float64(u.ops), float64(p.ops)
	p.words = distinct(n1, float64(earlier.words), n2, float64(u.words), n)
	p.mapped = distinct(n1, float64(earlier.mapped), n2, float64(u.mapped), n)
	p.procs = distinct(n1, float64(earlier.procs), n2, float64(u.procs), n)
	return p
}

// distinct projects to n operations the distinct items (words, processes)
// met: d1 in the first n1 operations, d2 in the first n2 > n1. Items are
// taken to be met at random in a set of unknown size: d(n) = K(1 -
// e^(-λn)), which grows in proportion to n while λn is small (a process
// per operation, a new word every other one) and levels off at K once it
// is large (the words a history keeps touching, the processes it keeps
// meeting). λ is fitted to the two points, by bisection (the ratio
// d(n2)/d(n1) falls from n2/n1 to 1 as λ grows), and d(n) = d2 (1 -
// e^(-λn)) / (1 - e^(-λn2)).
func distinct(n1, d1, n2, d2, n float64) int64 {
	switch {
	case n2 <= n1 || d1 <= 0 || d2 <= d1:
		return int64(d2) // none met lately: no more to come
	case d2/d1 >= n2/n1:
		return int64(d2 * n / n2) // in proportion
	}
	ratio := func(l float64) float64 { return math.Expm1(-l*n2) / math.Expm1(-l*n1) }
	lo, hi := 1e-3/n, 1e3/n1 // ratio(lo) ~ n2/n1, ratio(hi) ~ 1
	for range 60 {
		l := math.Sqrt(lo * hi)
		if ratio(l) > d2/d1 {
			lo = l
		} else {
			hi = l
		}
	}
	return int64(d2 * math.Expm1(-lo*n) / math.Expm1(-lo*n2))
}

// memoryGuard stops a check whose memory would pass the limit, before it
// does: while reading, from the counts of what drives the memory (usage,
// every few thousand events) and the resident memory (every few tens of
// thousands); after reading, before each large allocation.
type memoryGuard struct {
	limit   int64
	source  string
	size    int64 // the input's size (0: unknown)
	samples []metrics.Sample
	// earlier and mid are the counts at two earlier checks, mid's
	// operations about twice earlier's, and the latest's about twice
	// mid's: the rate of new words and processes is taken since earlier
	// (usage.project).
	earlier, mid usage
	// freedAt is the resident memory after the last collection forced to
	// look at it: another is forced only once it grew since.
	freedAt int64
	// resident memory, inUse but in tests (the test process's is not
	// the check's)
	sample func() int64
}

func newMemoryGuard(limit int64, source string, size int64) *memoryGuard {
	if limit <= 0 {
		return nil
	}
	g := &memoryGuard{limit: limit, source: source, size: size, samples: []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}}
	g.sample = g.inUse
	return g
}

// inUse is the memory the process holds: its resident set where the
// system tells it (/proc/self/statm: what the kernel counts against a
// limit; the capacity reserved from the size hint and not filled yet is
// not in it), else what the Go runtime holds but what it has returned to
// the system or keeps free for reuse.
func (g *memoryGuard) inUse() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	metrics.Read(g.samples)
	var v [3]int64
	for k, s := range g.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[k] = int64(s.Value.Uint64())
		}
	}
	return v[0] - v[1] - v[2]
}

// resident is inUse, after a collection that returns what it frees to the
// system when inUse alone passes over: garbage the collector would free
// before the kernel ran out does not count. Unless forced, a collection
// is made once per growth of a sixteenth of the limit at most (near the
// limit, a look every few thousand events would otherwise collect at
// every one).
func (g *memoryGuard) resident(over int64, force bool) int64 {
	use := g.sample()
	if use <= over || !force && g.freedAt > 0 && use < g.freedAt+g.limit/16 {
		return use
	}
	debug.FreeOSMemory()
	use = g.sample()
	g.freedAt = use
	return use
}

// refuse returns a MemoryError, before the input is read, if its size
// says it needs more than the limit (size 0: unknown; g nil: no limit).
func (g *memoryGuard) refuse(name string, f history.Format) error {
	if g == nil || g.size <= 0 {
		return nil
	}
	if need := estimateMemory(g.size, f); need > g.limit {
		return &MemoryError{File: name, Need: need, Limit: g.limit, Source: g.source, Estimated: true}
	}
	return nil
}

// check returns a MemoryError if the history read so far (u, up to line,
// offset bytes into the input) needs more than the limit. With spike (the
// allocations that may come before the next look at it, >= 0) it also
// looks at the resident memory: garbage is freed first when the spike
// would not fit beside it, and the check stops if the memory in use
// passes the limit all the same. The error says what the whole input
// needs, projected from the share read, when its size is known.
func (g *memoryGuard) check(name string, u usage, line, offset, spike int64) error {
	if g == nil {
		return nil
	}
	if u.ops >= 2*g.mid.ops+1024 {
		g.earlier, g.mid = g.mid, u
	}
	need, atLeast := u.need(), false
	stop := need > g.limit
	if !stop && spike >= 0 {
		high := g.limit - g.limit/16
		use := g.resident(g.limit-spike, false)
		if use > high {
			use = g.resident(high, true) // garbage first
		}
		if use > high {
			stop, need, atLeast = true, max(need, use), true
		}
	}
	if !stop {
		return nil
	}
	// What the whole needs, projected from the share read once it is large
	// enough for the counts to tell (stopping on a projection would refuse
	// a history that fits when it overshoots).
	f := float64(offset) / float64(max(g.size, 1))
	if g.size <= 0 || f < 1.0/64 || atLeast {
		return &MemoryError{File: name, Line: line, Need: need, Limit: g.limit, Source: g.source, AtLeast: true}
	}
	earlier := g.mid
	if 2*(u.ops-earlier.ops) < u.ops {
		earlier = g.earlier // too close to tell a rate
	}
	need = max(need, u.project(earlier, f).need())
	return &MemoryError{File: name, Line: line, Need: need, Limit: g.limit, Source: g.source}
}

// makeRoom frees what the collector can before an allocation of bytes
// that the memory in use, garbage included, has no room for beside it:
// the collector runs when the heap nears the limit, but one allocation
// of a large array at that point, before it frees the old copies of the
// arrays grown so far, would pass it, and the kernel would kill the
// process. (Whether the check fits at all, the counts say: check.)
func (g *memoryGuard) makeRoom(bytes int64) {
	if g != nil && bytes >= g.limit/64 {
		g.resident(g.limit-bytes, false)
	}
}

// room returns a MemoryError if allocating bytes more, after the history
// was read (for what, a step of the analysis), would pass the limit: the
// resident memory, after a collection when that is close, plus bytes.
func (g *memoryGuard) room(h *hist, what string, bytes int64) error {
	if g == nil {
		return nil
	}
	if use := g.resident(g.limit-bytes, true); use+bytes > g.limit {
		return &MemoryError{File: h.name, Need: use + bytes, Limit: g.limit, Source: g.source, After: what}
	}
	return nil
}

// spike is the most that l's arrays may allocate at once before the next
// look at the memory: the growth of the columns close to their capacity
// (within an eighth), and of the Reader's table of processes (whose
// capacity it does not tell). The ring of recent writes makes room for
// itself (loader.wordOf).
func (l *loader) spike() int64 {
	h := l.h
	near := func(n, c int, size int64) int64 {
		if c-n > c/8 {
			return 0
		}
		return int64(c) * size * 5 / 4
	}
	ops := near(len(h.line), cap(h.line), memOp)
	accs := near(len(h.word), cap(h.word), memAccess)
	slots := near(len(h.nw), cap(h.nw), memSlot)
	words := near(len(h.addr), cap(h.addr), memWord/2)
	return max(ops, accs, slots, words, int64(len(h.procIDs))*112*5/4)
}

// usage counts what drives the memory in what l loaded so far (the Reader
// keeps a state per process: h has an index for each).
func (l *loader) usage() usage {
	u := l.h.usage()
	u.queries = int64(l.tentative.len() + l.deferred.len() + l.valuedQ.len())
	u.reserved = l.reserved
	return u
}

// usage counts what drives the memory in h, but what only the loader
// knows (the lookups left to the join, the columns' reservation).
func (h *hist) usage() usage {
	return usage{
		ops: int64(h.n), accesses: int64(len(h.word)), slots: int64(len(h.nw)),
		words: int64(len(h.addr)), mapped: int64(len(h.wordID)), direct: int64(len(h.direct)),
		procs:   int64(len(h.procIDs)),
		cutoffs: int64(len(h.crashed)), crashes: int64(len(h.crashLine)),
	}
}
