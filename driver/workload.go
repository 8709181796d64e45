package driver

import (
	"fmt"
	"math/rand/v2"

	"github.com/pmlin/pmlin/history"
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
	new   []uint64 // cas
	vals  []uint64 // read: the values returned
	ok    bool     // cas
	fail  uint64   // cas: the blamed address
}

// proc is the workload state of one process. It survives crashes: after
// recovery the process goes on with the same id, tag counter and memory of
// the values it read (which stay valid expected values: Assumption 2 asks
// only that they were returned before the CAS is invoked).
type proc struct {
	id    int32
	rng   *rand.Rand
	words uint64
	k     int
	reads float64
	ctr   uint64 // the last tag counter used

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
	p := &proc{id: id, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(id))), words: c.Words, k: c.K, reads: c.Reads}
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

// next chooses the next operation.
func (p *proc) next() (*op, error) {
	o := &p.op
	if p.nRecent == 0 || p.rng.Float64() < p.reads {
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
	o.kind = history.CAS
	for i := range p.perm {
		p.perm[i] = i
	}
	p.rng.Shuffle(len(p.perm), func(i, j int) { p.perm[i], p.perm[j] = p.perm[j], p.perm[i] })
	for i, j := range p.perm {
		o.addrs[i] = p.recentAddrs[src][j]
		o.exp[i] = p.recentVals[src][j]
		v, err := p.tag()
		if err != nil {
			return nil, err
		}
		o.new[i] = v
	}
	return o, nil
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

// done takes note of a returned operation.
func (p *proc) done(o *op) {
	if o.kind != history.Read {
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

// casWords returns the operation as target words.
func (p *proc) casWords(o *op) []target.Word {
	for i := range o.addrs {
		p.cas[i] = target.Word{Addr: o.addrs[i], Old: o.exp[i], New: o.new[i]}
	}
	return p.cas
}
