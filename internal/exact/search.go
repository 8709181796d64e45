package exact

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/pmlin/pmlin/internal/history"
)

// kind is what linearizing an op means to the search.
type kind uint8

const (
	kRead        kind = iota // completed read: values must match
	kOK                      // completed successful cas: expected must match, writes
	kFail                    // completed failed cas: the blamed word must differ
	kPending                 // pending cas: optional; if taken, as a success
	kSwap                    // returned swap: the values it replaced must match, writes
	kPendingSwap             // pending swap: optional; if taken, writes whatever was there
	kFailValues              // failed cas that reports values: they must match, and the blamed word differ
)

// optional reports whether k is an op that may be dropped: one cut off.
func (k kind) optional() bool { return k == kPending || k == kPendingSwap }

// noMatch stands for a value that no word of the component can ever hold
// (not its initial value, not written by any cas): it never matches.
const noMatch = ^uint32(0)

// cop is an op compiled for one component: words are local indexes, values
// are indexes into the word's domain.
type cop struct {
	id       int
	inv, ret int
	kind     kind
	words    []int32
	want     []uint32 // read, swap, valued failure: values returned; cas: expected values
	news     []uint32 // cas, swap: new values
	failWord int32    // kFail, kFailValues: the blamed word
	failWant uint32   // kFail, kFailValues: its expected value
	pred     []uint64 // bitset of the local ops that must precede this one
	undo     []uint32 // kPendingSwap: the values it replaced, while linearized
}

// search is the depth-first search over the states of one component.
type search struct {
	ctx    context.Context
	ops    []cop    // in invocation order
	nw     int      // words of the bitsets over ops
	mem    []uint32 // each word's value, as an index into its domain
	key    []uint64 // the state: done, then mem packed by fields
	done   []uint64 // linearized or dropped: key[:nw]
	pend   []uint64 // the pending cas and swap ops
	byRet  []int32  // completed ops by response position
	left   int      // completed ops not yet done
	ndone  int
	path   []int32  // linearized ops, in order
	drops  []uint64 // per depth: scratch bitset of drop candidates
	fields []field  // where each word's value sits in key (width 0: nowhere)
	seen   stateSet
	states int
	budget int
	// maxMemory bounds compiled plus the memo (0: no bound); compiled is
	// the memory of the compiled component.
	maxMemory, compiled int64
	// progress is Options.Progress; before, the states of the components
	// searched before this one.
	progress func(int)
	before   int
	size     string // the component, for the error message
	// hopeless is set when a completed op wants a value its word never
	// holds: no search is needed.
	hopeless bool
}

// field places one word's value (a domain index) in the key.
type field struct {
	shift uint // bit offset in key, past the done bitset
	width uint
}

// newSearch compiles the component ids of h (op IDs in invocation order),
// of which before states were explored in the components before it.
func newSearch(ctx context.Context, h *history.History, opts Options, ids []int, budget, before int) (*search, error) {
	s := &search{ctx: ctx, budget: budget, maxMemory: max(opts.MaxMemory, 0), progress: opts.Progress, before: before}
	n := len(ids)
	s.nw = (n + 63) / 64
	d := newDomains(h, ids)
	s.size = fmt.Sprintf("a component of %d operations on %d words (first at line %d)",
		n, len(d.values), h.Ops[ids[0]].Line)
	// Each operation's compiled form and its words, and two bitsets over
	// the component per operation (its predecessors, and the drops at
	// its depth): they grow as the square of n.
	words := 0
	for _, id := range ids {
		words += len(h.Ops[id].Addrs)
	}
	s.compiled = int64(n)*int64(unsafe.Sizeof(cop{})) + 16*int64(words) + 2*8*int64(n+1)*int64(s.nw)
	if err := s.fits(s.compiled); err != nil {
		return nil, err
	}
	s.mem = make([]uint32, len(d.values)) // every word starts at index 0, its initial value
	s.pack(d)
	s.compileOps(h, ids, d)
	if err := s.constrain(h, opts.Mode); err != nil {
		return nil, err
	}
	return s, nil
}

// fits returns a *MemoryError if need bytes pass the memory bound.
func (s *search) fits(need int64) error {
	if s.maxMemory > 0 && need > s.maxMemory {
		return &MemoryError{Component: s.size, Need: need, Limit: s.maxMemory, States: s.states}
	}
	return nil
}

// domains are a component's words and, per word, the values it can hold:
// its initial value and every value a cas that may succeed, or a swap,
// writes.
type domains struct {
	word   map[uint64]int32    // address -> local word index
	values []map[uint64]uint32 // per word: value -> index in its domain (initial 0)
}

func newDomains(h *history.History, ids []int) *domains {
	d := &domains{word: map[uint64]int32{}}
	for _, id := range ids {
		op := &h.Ops[id]
		for k, a := range op.Addrs {
			w, ok := d.word[a]
			if !ok {
				w = int32(len(d.values))
				d.word[a] = w
				d.values = append(d.values, map[uint64]uint32{h.InitValue(a): 0})
			}
			if op.Kind != history.Read && op.Status != history.Failed {
				dv := d.values[w]
				if _, ok := dv[op.New[k]]; !ok {
					dv[op.New[k]] = uint32(len(dv))
				}
			}
		}
	}
	return d
}

// value is v's index in word w's domain, or noMatch.
func (d *domains) value(w int32, v uint64) uint32 {
	if x, ok := d.values[w][v]; ok {
		return x
	}
	return noMatch
}

// pack places the memory in whole uint64s after the done bitset, no field
// straddling two. The key is kept up to date as the search moves, so that
// a state costs no packing.
func (s *search) pack(d *domains) {
	s.fields = make([]field, len(d.values))
	nkey, used := s.nw, uint(64)
	for w, dv := range d.values {
		width := uint(bits.Len32(uint32(len(dv) - 1)))
		if width == 0 {
			continue
		}
		if used+width > 64 {
			nkey, used = nkey+1, 0
		}
		s.fields[w] = field{uint(64*(nkey-1)) + used, width}
		used += width
	}
	s.key = make([]uint64, nkey)
	s.done = s.key[:s.nw]
	s.seen = newStateSet(len(s.key))
}

// compileOps turns the component's operations into cops.
func (s *search) compileOps(h *history.History, ids []int, d *domains) {
	n := len(ids)
	slab := make([]uint64, n*s.nw)
	s.ops = make([]cop, n)
	s.pend = make([]uint64, s.nw)
	s.drops = make([]uint64, (n+1)*s.nw)
	for i, id := range ids {
		op := &h.Ops[id]
		c := &s.ops[i]
		c.id, c.inv, c.ret = id, op.Inv, op.Ret
		c.pred = slab[i*s.nw : (i+1)*s.nw]
		c.words = make([]int32, len(op.Addrs))
		for k, a := range op.Addrs {
			c.words[k] = d.word[a]
		}
		switch {
		case op.Kind == history.Swap:
			c.kind = kSwap
			if op.Status == history.Pending {
				c.kind = kPendingSwap
				s.pend[i/64] |= 1 << (i % 64)
				c.undo = make([]uint32, len(op.Addrs))
			} else {
				c.want = s.wanted(c.words, op.Values, d)
			}
			c.news = make([]uint32, len(op.Addrs))
			for k := range op.Addrs {
				c.news[k] = d.value(c.words[k], op.New[k])
			}
		case op.Kind == history.Read:
			c.kind = kRead
			c.want = s.wanted(c.words, op.Values, d)
		case op.Status == history.Failed:
			c.kind = kFail
			k := indexOf(op.Addrs, op.FailAddr)
			c.failWord, c.failWant = c.words[k], d.value(c.words[k], op.Expected[k])
			if op.Values != nil {
				c.kind = kFailValues
				c.want = s.wanted(c.words, op.Values, d)
				// It reports its expected value where it failed: no
				// memory agrees with both.
				s.hopeless = s.hopeless || c.want[k] == c.failWant
			}
		default:
			c.kind = kOK
			if op.Status == history.Pending {
				c.kind = kPending
				s.pend[i/64] |= 1 << (i % 64)
			}
			c.want = make([]uint32, len(op.Addrs))
			c.news = make([]uint32, len(op.Addrs))
			for k := range op.Addrs {
				c.want[k] = d.value(c.words[k], op.Expected[k])
				c.news[k] = d.value(c.words[k], op.New[k])
				s.hopeless = s.hopeless || c.kind == kOK && c.want[k] == noMatch
			}
		}
		if !c.kind.optional() {
			s.byRet = append(s.byRet, int32(i))
			s.left++
		}
	}
	sortByRet(s.byRet, s.ops)
}

// wanted compiles the values an op returned at its words; a value no word
// of the component ever holds makes the search hopeless.
func (s *search) wanted(words []int32, values []uint64, d *domains) []uint32 {
	want := make([]uint32, len(words))
	for k, w := range words {
		want[k] = d.value(w, values[k])
		s.hopeless = s.hopeless || want[k] == noMatch
	}
	return want
}

// constrain sets the order constraints inside the component. Those that
// cross components are implied by locality (see the package doc). An
// operation a must precede b when it is released before b is invoked: a
// completed a at its response (real time), a cas or swap cut off by a
// crash, in strict mode, at the crash; and in recoverable mode (the rules
// are history.Mode's: CrashBounds, ProcessOrder), when a is
// a cas or swap its process's crash cut off, invoked before b by the same
// process (recoverable linearizability keeps each process's order across
// its crashes: for every later operation, not only the next one, since
// when the next is itself cut off and dropped the constraint holds for
// the one after it). The operations are taken in invocation order, the released
// ones gathered in one bitset as they are passed: time in the square of
// the component's size over 64, not its square (a component of 100,000
// operations took minutes). It stops when ctx is done.
func (s *search) constrain(h *history.History, mode history.Mode) error {
	n := len(s.ops)
	release := make([]int, n)
	order := make([]int32, n)
	for i := range s.ops {
		a, op := &s.ops[i], &h.Ops[s.ops[i].id]
		switch {
		case !a.kind.optional():
			release[i] = a.ret
		case mode.CrashBounds() && op.Crash >= 0:
			release[i] = h.Crashes[op.Crash]
		default:
			release[i] = math.MaxInt
		}
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return cmp.Compare(release[x], release[y]) })
	released := make([]uint64, s.nw)
	cutOff := map[int32][]int32{} // recoverable: each process's cut-off cas and swaps so far
	k := 0
	for j := range s.ops {
		if j%256 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		b := &s.ops[j]
		for ; k < n && release[order[k]] < b.inv; k++ {
			i := order[k]
			released[i/64] |= 1 << (i % 64)
		}
		copy(b.pred, released)
		if mode.ProcessOrder() {
			op := &h.Ops[b.id]
			for _, i := range cutOff[op.Proc] {
				b.pred[i/64] |= 1 << (i % 64)
			}
			if crashedWriter(op) {
				cutOff[op.Proc] = append(cutOff[op.Proc], int32(j))
			}
		}
	}
	return nil
}

func indexOf(addrs []uint64, a uint64) int {
	for k, x := range addrs {
		if x == a {
			return k
		}
	}
	panic("exact: blamed address not in the op") // checkInput rules it out
}

func sortByRet(idx []int32, ops []cop) {
	// Insertion sort: responses are nearly in invocation order already.
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && ops[idx[j]].ret < ops[idx[j-1]].ret; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

// run searches the component for a linearization.
func (s *search) run() (bool, error) {
	if err := s.ctx.Err(); err != nil {
		return false, err // dfs polls only every 1024 states
	}
	if s.hopeless {
		return false, nil
	}
	return s.dfs()
}

// order is the component's linearization after a successful run.
func (s *search) order() []int {
	out := make([]int, len(s.path))
	for i, l := range s.path {
		out[i] = s.ops[l].id
	}
	return out
}

func (s *search) isDone(i int) bool { return s.done[i/64]&(1<<(i%64)) != 0 }

// ready reports whether every op that must precede op i is done.
func (s *search) ready(i int) bool {
	for w, p := range s.ops[i].pred {
		if p&^s.done[w] != 0 {
			return false
		}
	}
	return true
}

// matches reports whether every word of c holds its wanted value.
func (s *search) matches(c *cop) bool {
	for k, w := range c.words {
		if s.mem[w] != c.want[k] {
			return false
		}
	}
	return true
}

func (s *search) mark(i int) {
	s.done[i/64] |= 1 << (i % 64)
	s.ndone++
	if !s.ops[i].kind.optional() {
		s.left--
	}
}

func (s *search) unmark(i int) {
	s.done[i/64] &^= 1 << (i % 64)
	s.ndone--
	if !s.ops[i].kind.optional() {
		s.left++
	}
}

// linearize takes op i (ready and consistent) and explores from there.
func (s *search) linearize(i int) (bool, error) {
	c := &s.ops[i]
	s.mark(i)
	s.path = append(s.path, int32(i))
	if c.undo != nil {
		for k, w := range c.words {
			c.undo[k] = s.mem[w]
		}
	}
	if c.news != nil {
		for k, w := range c.words {
			s.setMem(w, c.news[k])
		}
	}
	ok, err := s.dfs()
	if ok || err != nil {
		return ok, err // keep the path: it is the answer
	}
	if c.news != nil {
		back := c.want // it matched when taken
		if c.undo != nil {
			back = c.undo
		}
		for k, w := range c.words {
			s.setMem(w, back[k])
		}
	}
	s.path = s.path[:len(s.path)-1]
	s.unmark(i)
	return false, nil
}

// dfs explores the current state. It returns true, leaving the answer in
// s.path, if the state can be completed into a linearization.
func (s *search) dfs() (bool, error) {
	if s.left == 0 {
		return true, nil // pending cas and swaps not taken are dropped
	}
	if s.maxMemory > 0 {
		if err := s.fits(s.compiled + s.seen.bytes() + s.seen.growth()); err != nil {
			return false, err
		}
	}
	if !s.seen.insert(s.key) {
		return false, nil
	}
	s.states++
	if s.states > s.budget {
		return false, fmt.Errorf("%w: the state budget ran out in %s", ErrTooLarge, s.size)
	}
	if s.states%1024 == 0 {
		if err := s.ctx.Err(); err != nil {
			return false, err
		}
		if s.progress != nil {
			s.progress(s.before + s.states)
		}
	}

	// Only ops invoked before the earliest response still to come can be
	// ready: that op must precede every later invocation.
	horizon := s.ops[s.firstUndoneByRet()].ret

	// An effect-free op that is ready and agrees with memory is taken
	// without alternatives (see the package doc).
	for i := range s.ops {
		c := &s.ops[i]
		if c.inv > horizon {
			break
		}
		if s.isDone(i) || !s.ready(i) {
			continue
		}
		switch c.kind {
		case kRead:
			if s.matches(c) {
				return s.linearize(i)
			}
		case kFail:
			if s.mem[c.failWord] != c.failWant {
				return s.linearize(i)
			}
		case kFailValues:
			if s.mem[c.failWord] != c.failWant && s.matches(c) {
				return s.linearize(i)
			}
		}
	}

	// Otherwise branch: on every ready cas that can succeed now and every
	// ready swap (a cut-off one always can), then on dropping a pending
	// cas or swap that blocks an op otherwise ready.
	drops := s.drops[s.ndone*s.nw : (s.ndone+1)*s.nw]
	clear(drops)
	for i := range s.ops {
		c := &s.ops[i]
		if c.inv > horizon {
			break
		}
		if s.isDone(i) {
			continue
		}
		missing, onlyPending := false, true
		for w, p := range c.pred {
			m := p &^ s.done[w]
			missing = missing || m != 0
			onlyPending = onlyPending && m&^s.pend[w] == 0
		}
		if missing {
			if onlyPending {
				for w, p := range c.pred {
					drops[w] |= p &^ s.done[w]
				}
			}
			continue
		}
		if ((c.kind == kOK || c.kind == kPending || c.kind == kSwap) && s.matches(c)) || c.kind == kPendingSwap {
			if ok, err := s.linearize(i); ok || err != nil {
				return ok, err
			}
		}
	}
	for w, d := range drops {
		for d != 0 {
			i := w*64 + bits.TrailingZeros64(d)
			d &= d - 1
			s.mark(i)
			ok, err := s.dfs()
			if ok || err != nil {
				return ok, err
			}
			s.unmark(i)
		}
	}
	return false, nil
}

// firstUndoneByRet is the completed op not yet done with the earliest
// response. There is one: dfs returns before when none is left.
func (s *search) firstUndoneByRet() int {
	for _, i := range s.byRet {
		if !s.isDone(int(i)) {
			return int(i)
		}
	}
	panic("exact: no completed op left")
}

// setMem sets word w to value v, in mem and in the key.
func (s *search) setMem(w int32, v uint32) {
	s.mem[w] = v
	if f := s.fields[w]; f.width > 0 {
		i, sh := f.shift/64, f.shift%64
		s.key[i] = s.key[i]&^((1<<f.width-1)<<sh) | uint64(v)<<sh
	}
}

// stateSet is a hash set of fixed-length keys, stored flat in one arena:
// no allocation per state, and no pointers for the garbage collector. Each
// slot of the open-addressing table holds the key's index and 32 bits of its
// hash, so that a probe touches the arena (a cache miss) only when the hash
// bits agree.
type stateSet struct {
	stride int
	arena  []uint64
	table  []uint64 // 0: empty; otherwise hash<<32 | (1 + index of the key)
	count  int
}

func newStateSet(stride int) stateSet {
	return stateSet{stride: stride, table: make([]uint64, 1024)}
}

func hashKey(k []uint64) uint64 {
	h := uint64(len(k))
	for _, w := range k {
		h ^= w
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	h ^= h >> 29
	h *= 0x94d049bb133111eb
	return h ^ h>>32
}

// insert adds key and reports whether it was new.
func (s *stateSet) insert(key []uint64) bool {
	if 2*(s.count+1) > len(s.table) {
		s.grow()
	}
	h := hashKey(key)
	tag := h &^ (1<<32 - 1)
	mask := uint64(len(s.table) - 1)
	for j := h & mask; ; j = (j + 1) & mask {
		e := s.table[j]
		if e == 0 {
			s.table[j] = tag | uint64(s.count+1)
			s.arena = append(s.arena, key...)
			s.count++
			return true
		}
		if e&^(1<<32-1) == tag && s.equal(int(e&(1<<32-1))-1, key) {
			return false
		}
	}
}

// bytes is the memory of the set: its arena and its table.
func (s *stateSet) bytes() int64 { return 8 * int64(cap(s.arena)+len(s.table)) }

// growth is what the next insert may allocate besides: a table twice as
// large, when it is half full, or a larger arena (by a quarter at least,
// as append grows a large slice), when the arena is full; the old ones
// stay until they are collected.
func (s *stateSet) growth() int64 {
	var g int64
	if 2*(s.count+1) > len(s.table) {
		g += 16 * int64(len(s.table))
	}
	if len(s.arena)+s.stride > cap(s.arena) {
		g += 8 * int64(cap(s.arena)+cap(s.arena)/4+s.stride)
	}
	return g
}

func (s *stateSet) equal(e int, key []uint64) bool {
	stored := s.arena[e*s.stride : (e+1)*s.stride]
	for i, w := range key {
		if stored[i] != w {
			return false
		}
	}
	return true
}

func (s *stateSet) grow() {
	table := make([]uint64, 2*len(s.table))
	mask := uint64(len(table) - 1)
	for _, e := range s.table {
		if e == 0 {
			continue
		}
		// The stored bits are the top half of the hash; the low bits
		// that pick the slot must be recomputed from the key.
		i := int(e&(1<<32-1)) - 1
		j := hashKey(s.arena[i*s.stride:(i+1)*s.stride]) & mask
		for table[j] != 0 {
			j = (j + 1) & mask
		}
		table[j] = e
	}
	s.table = table
}
