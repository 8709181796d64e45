package driver

import (
	"fmt"
	"math/rand/v2"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/target"
)

// recentReads is how many of its own reads a process remembers as the
// expected values of later CAS.
const recentReads = 4

// op is one operation of a worker: what it invokes and what it got.
type op struct {
	kind  history.OpKind
	addrs []uint64
	exp   []uint64 // cas
	new   []uint64 // cas, swap
	// vals are the values a read returned, a swap replaced, or a failed
	// cas reported (if report).
	vals   []uint64
	ok     bool   // cas
	fail   uint64 // cas: the blamed address
	report bool   // cas: a failure reports vals (Config.FailValues)
}

// proc is the workload state of one process. It survives crashes: after
// recovery the process goes on with the same id, tag counter and memory of
// the values it read (which stay valid expected values: Assumption 2 asks
// only that they were returned before the CAS is invoked).
type proc struct {
	id     int32
	rng    *rand.Rand
	words  uint64
	k      int
	reads  float64
	swaps  float64
	report bool
	ctr    uint64 // the last tag counter used

	recentAddrs [recentReads][]uint64
	recentVals  [recentReads][]uint64
	nRecent     int
	lastRecent  int // index of the most recent read
	lastWasRead bool

	op   op
	perm []int
	cas  []target.Word // the current cas as target words
}

func newProc(id int32, c Config, seed uint64) *proc {
	p := &proc{id: id, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(id))), words: c.Words, k: c.K, reads: c.Reads,
		swaps: c.Swaps, report: c.FailValues}
	for i := range recentReads {
		p.recentAddrs[i] = make([]uint64, c.K)
		p.recentVals[i] = make([]uint64, c.K)
	}
	p.op.addrs = make([]uint64, c.K)
	p.op.exp = make([]uint64, c.K)
	p.op.new = make([]uint64, c.K)
	p.op.vals = make([]uint64, c.K)
	p.perm = make([]int, c.K)
	p.cas = make([]target.Word, c.K)
	return p
}

// tag returns a fresh value: unique per process and counter, never 0, and
// below 1<<target.ValueBits (at most 1024 processes).
func (p *proc) tag() (uint64, error) {
	if p.ctr >= MaxTag {
		return 0, fmt.Errorf("process %d used up its %d tags", p.id, uint64(MaxTag))
	}
	p.ctr++
	return uint64(p.id+1)<<32 | p.ctr, nil
}

// next chooses the next operation. Without swaps it draws exactly what it
// drew before swaps existed: the same seed, the same history.
func (p *proc) next() (*op, error) {
	o := &p.op
	if p.nRecent == 0 && p.swaps == 0 {
		o.kind = history.Read
		p.randomAddrs(o.addrs)
		return o, nil
	}
	switch u := p.rng.Float64(); {
	case u < p.reads:
		o.kind = history.Read
		p.randomAddrs(o.addrs)
		return o, nil
	case u < p.reads+p.swaps:
		// New values are tags, as a cas's: Assumption 1.
		o.kind = history.Swap
		p.randomAddrs(o.addrs)
		return o, p.tags(o.new)
	case p.nRecent == 0:
		o.kind = history.Read
		p.randomAddrs(o.addrs)
		return o, nil
	}
	src := p.lastRecent
	if !p.lastWasRead || p.rng.IntN(8) == 0 {
		// An older read: its values are likely stale, the CAS likely
		// fails, and the failure path gets exercised.
		src = p.rng.IntN(p.nRecent)
	}
	o.kind, o.report = history.CAS, p.report
	for i := range p.perm {
		p.perm[i] = i
	}
	p.rng.Shuffle(len(p.perm), func(i, j int) { p.perm[i], p.perm[j] = p.perm[j], p.perm[i] })
	for i, j := range p.perm {
		o.addrs[i] = p.recentAddrs[src][j]
		o.exp[i] = p.recentVals[src][j]
	}
	return o, p.tags(o.new)
}

// tags fills vs with fresh tags.
func (p *proc) tags(vs []uint64) error {
	for i := range vs {
		v, err := p.tag()
		if err != nil {
			return err
		}
		vs[i] = v
	}
	return nil
}

// randomAddrs fills a with distinct random addresses, in random order.
func (p *proc) randomAddrs(a []uint64) {
	for i := range a {
	again:
		x := p.rng.Uint64N(p.words)
		for _, y := range a[:i] {
			if x == y {
				goto again
			}
		}
		a[i] = x
	}
}

// done takes note of a returned operation: what a read returned, or a
// failed cas reported, is what the process read (a swap's values were
// replaced by the swap itself: no use to a cas).
func (p *proc) done(o *op) {
	if o.kind != history.Read && !(o.kind == history.CAS && !o.ok && o.report) {
		p.lastWasRead = false
		return
	}
	i := (p.lastRecent + 1) % recentReads
	if p.nRecent == 0 {
		i = 0
	}
	copy(p.recentAddrs[i], o.addrs)
	copy(p.recentVals[i], o.vals)
	p.lastRecent = i
	p.nRecent = min(p.nRecent+1, recentReads)
	p.lastWasRead = true
}

// interrupted takes note of an operation cut off by a crash.
func (p *proc) interrupted() { p.lastWasRead = false }

// casWords returns the operation as target words (a swap's Old is 0).
func (p *proc) casWords(o *op) []target.Word {
	for i := range o.addrs {
		p.cas[i] = target.Word{Addr: o.addrs[i], New: o.new[i]}
		if o.kind == history.CAS {
			p.cas[i].Old = o.exp[i]
		}
	}
	return p.cas
}
