// Package levelhash is level hashing (Zuo, Hua and Wu, "Write-Optimized and
// High-Performance Hashing Index Scheme for Persistent Memory", OSDI 2018)
// on a pmem.Region, as a data-structure target of pmlin's harness (model
// map), with the crash bugs that Witcher (Fu et al., SOSP 2021) reported in
// the authors' code planted as mutants.
//
// # Structure
//
// Two levels of buckets: a top level of T buckets and a bottom level of T/2.
// A key has two hash functions; its candidate buckets are the two top
// buckets h1 mod T and h2 mod T and the two bottom buckets h1 mod T/2 and
// h2 mod T/2 (so two top buckets share each bottom bucket). A bucket has
// up to four slots (--slots) of a key and a value, and a token word whose
// bit i says slot i holds an item. The token word sits on one cache line
// with the bucket's lock; the slots on the next line: a token and its
// item are not in one line, the case Witcher's ordering bugs need.
//
// Insert writes the item into a free slot of the less loaded of its two
// top candidates, else of its bottom candidates (the paper's log-free
// insert: the item durable first, then the token, one 8-byte store). If
// all four are full it tries one movement: an item of a candidate bucket
// moves to its alternative bucket in the same level (copy, token set, old
// token cleared), or a bottom item moves up to one of its top candidates
// (the paper's bottom-to-top movement), and the new item takes the slot
// freed. If that fails too, the table is resized in the paper's in-place
// way: a new top level of 2T buckets receives the items of the bottom
// level (a third of the buckets), and the old top level becomes the
// bottom. Delete clears the token bit. Update (the opportunistic log-free
// update) writes the new item into a free slot of the same bucket and then
// flips both token bits in one 8-byte store; without a free slot it stores
// the new value in place, which is one word here and so failure-atomic
// (the paper needs a log for its 15-byte values, this table does not).
//
// # Concurrency
//
// The paper's table is single-threaded. Here every bucket has a lock, a
// region word taken with a region CAS (0 free, worker+1 held); an
// operation locks its key's candidate buckets in address order, checks
// that no resize happened meanwhile, and does its work under them; reads
// lock too. A movement takes the lock of the bucket it moves an item to
// with one CAS and gives that item up if the lock is taken, so nothing
// waits out of order. A resize takes every lock of both levels.
//
// # Resizing and recovery
//
// The levels of every generation are laid out in advance: generation g
// has base<<g buckets. A durable word names the generations of the top
// and the bottom level. A resize clears generation top+1, rehashes the
// bottom's items into it, makes it durable, and only then stores the new
// pair (top+1, top): a crash before that store leaves the table as it was.
// If an item finds both its candidates full in the new level, the resize
// tries the generation after instead (the bottom is then smaller than half
// the top, which only changes how many top buckets share a bottom one).
// The table is sized from Config.Keys: at the last generation, fewer keys
// share a key's top candidates than they have slots, so neither an insert
// nor a rehash there can find them full. A crash in the middle of a
// movement leaves the moved item in both buckets; recovery removes the
// second copy (both hold the same value) and releases every lock.
//
// # Planted bugs
//
// Mutants reimplements seven of the bugs Witcher lists for Level hashing
// (github.com/cosmoss-jigu/witcher, bugs/sosp21-correctness-bugs.md, bugs
// 7 to 23), each from its description.
package levelhash

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/bits"
	"slices"

	"github.com/pmlin/pmlin/internal/targetkit"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

const (
	lineWords   = pmem.LineWords
	bucketWords = 2 * lineWords // the token line, then the slot line
	maxSlots    = lineWords / 2
	sbMagic     = 0x314853484c564c50 // "PLVLHSH1"
	sbVersion   = 1
	// maxWords bounds a table's region: --slots 1 with thousands of keys
	// would need more.
	maxWords = 1 << 23
	// Where the words of a bucket are.
	tokenWord = 0
	lockWord  = 1
	slotWords = lineWords // key of slot i at slotWords+2i, value after it
)

// Target is level hashing as a data-structure target of the map model.
func Target() *target.Target {
	muts := make([]target.Mutant, 0, len(mutants)-1)
	for _, m := range mutants[1:] {
		muts = append(muts, m)
	}
	return &target.Target{
		Name:        "levelhash",
		Description: "level hashing (Zuo, Hua, Wu, OSDI'18): two levels of buckets, log-free writes, resizing, bucket locks of region CAS; Witcher's bugs planted",
		Model:       "map",
		Mutants:     muts,
		Params: []target.Param{
			{Name: "buckets", Default: "2", Fuzz: []string{"2", "2", "4", "8"},
				Usage: "top-level buckets of a new table (a power of two, 2 to 65536); resizes double it"},
			// Not 1 among the fuzz values: with it, the table that never needs
			// a resize outgrows the region cap at 4096 keys.
			// 2 slots thrice as often as 4: buckets fill, so inserts meet full
			// candidates and move items (the planted movement bugs' only
			// window) a little more often (with the mix below, a shaped run
			// of 5 to 32 keys makes 0.60 movements and 0.18 bottom-to-top
			// ones on average, against 0.56 and 0.17 with 2,2,4).
			{Name: "slots", Default: "4", Fuzz: []string{"2", "2", "2", "4"},
				Usage: "slots per bucket (1 to 4; the paper has 4): fewer make movements and resizes frequent"},
		},
		// Insert-heavy, as the paper's workloads: the harness's map mix
		// (put 3, get 3, remove 2, putifabsent 1) keeps a table too empty
		// to move items; with this one a shaped run of 5 to 32 keys moves
		// items about 1.5 times as often (0.56 movements and 0.17
		// bottom-to-top ones per run, against 0.37 and 0.08).
		Mix:      map[string]int{"put": 4, "get": 2, "remove": 1, "putifabsent": 1},
		Blocking: true, // an operation waits for the holder of a bucket lock
		Size: func(c target.Config) (uint64, error) {
			l, err := newLayout(c)
			return l.total, err
		},
		NewObject:  create,
		OpenObject: open,
	}
}

// mutant is a planted bug; 0 is the correct code.
type mutant uint8

const (
	correct mutant = iota
	insertTokenEarly
	updateTokenEarly
	updateTokensSplit
	moveTokenEarly
	b2tTokenEarly
	moveDuplicateKept
	resizeSizeEarly
)

var mutants = [...]target.Mutant{
	correct:           {},
	insertTokenEarly:  {Name: "insert-token-early", Description: "insert stores the token before its key and value are durable: a crash keeps a token over a stale slot (Witcher bugs 7, 8)"},
	updateTokenEarly:  {Name: "update-token-early", Description: "the log-free update flips the tokens before the new item is durable: a crash keeps a stale slot (Witcher bugs 9, 16)"},
	updateTokensSplit: {Name: "update-tokens-split", Description: "the log-free update clears the old token and sets the new one in two stores: a crash between loses the key (Witcher bugs 22, 23)"},
	moveTokenEarly:    {Name: "move-token-early", Description: "a movement to the alternative bucket stores the token before the moved item is durable (Witcher bug 10)"},
	b2tTokenEarly:     {Name: "b2t-token-early", Description: "a bottom-to-top movement stores the token before the moved item is durable (Witcher bugs 12, 13)"},
	moveDuplicateKept: {Name: "move-duplicate-kept", Description: "recovery keeps both copies that a crash in a movement leaves: a later remove deletes one and the other comes back (Witcher bugs 19-21)"},
	resizeSizeEarly:   {Name: "resize-size-early", Description: "a resize makes the new size durable before the new level holds the rehashed items: a crash loses them (Witcher bug 17)"},
}

func parseMutant(name string) (mutant, error) {
	i, err := targetkit.MutantIndex("levelhash", mutants[:], name)
	return mutant(i), err
}

// layout is where everything lives: the superblock line, the line of the
// current generation, then the levels of generations 0 .. maxGen.
type layout struct {
	keys, workers      uint64
	base, slots        uint64 // generation g has base<<g buckets
	maxGen             uint64
	levelOff           []uint64
	genOff, total      uint64
	mut                mutant
	superblockChecksum uint64
}

func newLayout(c target.Config) (layout, error) {
	buckets, err := c.Int("buckets", 2, 1<<16)
	if err != nil {
		return layout{}, err
	}
	if buckets&(buckets-1) != 0 {
		return layout{}, fmt.Errorf("--buckets %d: not a power of two", buckets)
	}
	slots, err := c.Int("slots", 1, maxSlots)
	if err != nil {
		return layout{}, err
	}
	switch {
	case c.Keys == 0 || c.Keys > 1<<16:
		return layout{}, fmt.Errorf("levelhash: %d keys (1..65536)", c.Keys)
	case c.Workers < 1 || c.Workers > 1<<16:
		return layout{}, fmt.Errorf("levelhash: %d workers (1..65536)", c.Workers)
	}
	mut, err := parseMutant(c.Mutant)
	if err != nil {
		return layout{}, err
	}
	l := layout{keys: c.Keys, workers: uint64(c.Workers), base: uint64(buckets) / 2, slots: uint64(slots), mut: mut}
	l.genOff = lineWords
	words := 2 * uint64(lineWords)
	for g := uint64(0); ; g++ {
		l.levelOff = append(l.levelOff, words)
		words += (l.base << g) * bucketWords
		if words > maxWords {
			return layout{}, fmt.Errorf("levelhash: %d keys with --slots %d need a table of more than %d words", c.Keys, slots, maxWords)
		}
		if g >= 1 && l.topNeverFull(g) {
			l.maxGen = g
			break
		}
	}
	l.total = words
	return l, nil
}

// topNeverFull reports whether, with the top level at generation g, fewer
// keys than the slots of a key's top candidate buckets can ever sit in
// them, for every key: an item sits only in its own candidates, so then
// neither an insert nor a resize into generation g ever finds a key's top
// candidates all full.
func (l *layout) topNeverFull(g uint64) bool {
	top := l.buckets(g)
	sharers := make([][]uint32, top)
	var ids [2]uint64
	cands := func(k uint64) []uint64 {
		c := append(ids[:0], hash1(k)%top, hash2(k)%top)
		slices.Sort(c)
		return slices.Compact(c)
	}
	for k := range l.keys {
		for _, id := range cands(k) {
			sharers[id] = append(sharers[id], uint32(k))
		}
	}
	seen := make([]uint64, l.keys)
	for k := range l.keys {
		n := uint64(0)
		cs := cands(k)
		for _, id := range cs {
			for _, o := range sharers[id] {
				if uint64(o) != k && seen[o] != k+1 {
					seen[o] = k + 1
					n++
				}
			}
		}
		if n >= l.slots*uint64(len(cs)) {
			return false
		}
	}
	return true
}

func (l *layout) superblock() [lineWords]uint64 {
	sb := [lineWords]uint64{sbMagic, sbVersion, l.keys, l.base, l.slots, l.maxGen, l.workers}
	h := fnv.New64a()
	for _, v := range sb[:lineWords-1] {
		h.Write(binary.LittleEndian.AppendUint64(nil, v))
	}
	sb[lineWords-1] = h.Sum64()
	return sb
}

// buckets is the number of buckets of generation g.
func (l *layout) buckets(g uint64) uint64 { return l.base << g }

// bucket is the region offset of bucket i of generation g.
func (l *layout) bucket(g, i uint64) uint64 { return l.levelOff[g] + i*bucketWords }

func keyOff(b, i uint64) uint64 { return b + slotWords + 2*i }

// The two hash functions: splitmix64's finalizer of the key with two
// different offsets.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
func hash1(k uint64) uint64 { return mix(k + 0x9e3779b97f4a7c15) }
func hash2(k uint64) uint64 { return mix(k ^ 0xd1b54a32d192ed03 + 0x632be59bd9b4e019) }

// table is level hashing on a region.
type table struct {
	r       *pmem.Region
	l       layout
	ready   bool
	scratch []scratch
	// onStep, if set (by tests), is called as an item starts to move and
	// as a resize starts to publish its new level, with the mutant that
	// plants a bug there: tests crash right after, where those bugs live.
	onStep func(site mutant)
}

// scratch is a worker's: the buckets it holds locked.
type scratch struct {
	locked [4]uint64
	n      int
	_      [64]byte
}

var errCorrupt = errors.New("levelhash: region is corrupt")

func build(r *pmem.Region, c target.Config) (*table, error) {
	l, err := newLayout(c)
	if err != nil {
		return nil, err
	}
	if r.Words() < l.total {
		return nil, fmt.Errorf("levelhash: region of %d words, %d needed", r.Words(), l.total)
	}
	return &table{r: r, l: l, scratch: make([]scratch, c.Workers)}, nil
}

// create formats r (all zero): the current generation, then the
// superblock, magic last, all durable.
func create(r *pmem.Region, c target.Config) (target.Object, error) {
	t, err := build(r, c)
	if err != nil {
		return nil, err
	}
	a := pmem.Steps{W: r.Worker(0)}
	a.Store(t.l.genOff, levels{top: 1, bot: 0}.word())
	a.Persist(t.l.genOff)
	sb := t.l.superblock()
	for i := lineWords - 1; i >= 0; i-- {
		a.Store(uint64(i), sb[i])
	}
	a.Persist(0)
	if a.Err != nil {
		return nil, a.Err
	}
	t.ready = true
	return t, nil
}

// open attaches to the table create made on r; Recover comes next.
func open(r *pmem.Region, c target.Config) (target.Object, error) {
	t, err := build(r, c)
	if err != nil {
		return nil, err
	}
	sb := t.l.superblock()
	if err := targetkit.CheckSuperblock(r, sb[:], "levelhash", errCorrupt); err != nil {
		return nil, err
	}
	return t, nil
}

// levels are the generations of the top and the bottom level, as the
// levels word holds them (top | bottom<<32). A resize makes the top
// level the bottom one and a larger generation, usually the next, the top.
type levels struct{ top, bot uint64 }

func (lv levels) word() uint64 { return lv.top | lv.bot<<32 }

// levels loads the current levels and checks them.
func (t *table) levels(a *pmem.Steps) (levels, error) {
	w := a.Load(t.l.genOff)
	lv := levels{w & (1<<32 - 1), w >> 32}
	if a.Err == nil && (lv.bot >= lv.top || lv.top > t.l.maxGen) {
		return levels{}, fmt.Errorf("%w: levels word %#x: top generation %d, bottom %d (bottom < top <= %d)", errCorrupt, w, lv.top, lv.bot, t.l.maxGen)
	}
	return lv, a.Err
}

// cands are a key's candidate buckets: top first, bottom, then in each
// the first hash's, the second's.
func (t *table) cands(lv levels, k uint64) [4]uint64 {
	h1, h2 := hash1(k), hash2(k)
	top, bot := t.l.buckets(lv.top), t.l.buckets(lv.bot)
	return [4]uint64{t.l.bucket(lv.top, h1%top), t.l.bucket(lv.top, h2%top), t.l.bucket(lv.bot, h1%bot), t.l.bucket(lv.bot, h2%bot)}
}

// lockAll takes the locks of buckets bs, in address order, spinning.
func (t *table) lockAll(a *pmem.Steps, s *scratch, owner uint64, bs [4]uint64) {
	s.locked = bs
	slices.Sort(s.locked[:])
	s.n = len(slices.Compact(s.locked[:]))
	for _, b := range s.locked[:s.n] {
		for a.Err == nil && !a.CAS(b+lockWord, 0, owner) {
			a.Wait()
		}
	}
}

func (t *table) unlockAll(a *pmem.Steps, s *scratch) {
	for i := s.n - 1; i >= 0; i-- {
		a.Store(s.locked[i]+lockWord, 0)
	}
	s.n = 0
}

func (s *scratch) holds(b uint64) bool { return slices.Contains(s.locked[:s.n], b) }

// find looks k up in buckets bs: the bucket, the slot and the value.
func (t *table) find(a *pmem.Steps, bs [4]uint64, k uint64) (b, slot, v uint64, ok bool) {
	for _, b := range bs {
		tok := a.Load(b + tokenWord)
		for i := range t.l.slots {
			if tok&(1<<i) != 0 && a.Load(keyOff(b, i)) == k {
				return b, i, a.Load(keyOff(b, i) + 1), a.Err == nil
			}
		}
	}
	return 0, 0, 0, false
}

// free returns a free slot of the bucket whose token is tok, and the
// number of items it holds.
func (t *table) free(tok uint64) (slot, items uint64, ok bool) {
	items = uint64(bits.OnesCount64(tok & (1<<t.l.slots - 1)))
	slot = uint64(bits.TrailingZeros64(^tok))
	return slot, items, slot < t.l.slots
}

// write makes an item durable in slot i of bucket b, then its token bit
// (the paper's order: the token publishes a durable item). site names the
// mutant that stores the token early at this call; the insert of the new
// item (site insertTokenEarly) is the step that decides its operation.
func (t *table) write(a *pmem.Steps, b, i, k, v uint64, site mutant) {
	a.Store(keyOff(b, i), k)
	a.Store(keyOff(b, i)+1, v)
	tok := a.Load(b+tokenWord) | 1<<i
	early := t.l.mut == site
	if early {
		a.Store(b+tokenWord, tok)
	}
	a.Flush(keyOff(b, i))
	a.Fence()
	if !early {
		if a.Err == nil && site == insertTokenEarly {
			a.W.MarkLinearization()
		}
		a.Store(b+tokenWord, tok)
	}
	a.Flush(b + tokenWord)
	a.Fence()
}

// clear deletes slot i of bucket b: its token bit, durably.
func (t *table) clear(a *pmem.Steps, b, i uint64) {
	a.Store(b+tokenWord, a.Load(b+tokenWord)&^(1<<i))
	a.Flush(b + tokenWord)
	a.Fence()
}

// Do applies a map operation (see the package documentation).
func (t *table) Do(worker int, name string, args []model.Value, res []model.Value) ([]model.Value, error) {
	if !t.ready {
		return res, errors.New("levelhash: Recover must run before operations")
	}
	if worker < 0 || worker >= len(t.scratch) {
		return res, fmt.Errorf("levelhash: worker %d out of range (0..%d)", worker, len(t.scratch)-1)
	}
	want := 1
	switch name {
	case "get", "remove":
	case "put", "putifabsent":
		want = 2
	default:
		return res, fmt.Errorf("levelhash: no operation %q (put, get, remove, putifabsent)", name)
	}
	if len(args) != want || slices.ContainsFunc(args, func(v model.Value) bool { return v.Sym != model.Num }) {
		return res, fmt.Errorf("levelhash: %s takes %d numbers, got %v", name, want, args)
	}
	k := args[0].N
	if k >= t.l.keys {
		return res, fmt.Errorf("levelhash: key %d out of range (0..%d)", k, t.l.keys-1)
	}
	var v uint64
	if want == 2 {
		v = args[1].N
	}
	s, a, owner := &t.scratch[worker], pmem.Steps{W: t.r.Worker(worker)}, uint64(worker)+1
	for {
		lv, err := t.levels(&a)
		if err != nil {
			return res, err
		}
		bs := t.cands(lv, k)
		t.lockAll(&a, s, owner, bs)
		if w := a.Load(t.l.genOff); a.Err != nil || w != lv.word() {
			t.unlockAll(&a, s) // a resize came first
			if a.Err != nil {
				return res, a.Err
			}
			continue
		}
		b, slot, old, found := t.find(&a, bs, k)
		if a.Err != nil {
			return res, a.Err
		}
		prev := model.Sym(model.Nil)
		if found {
			prev = model.Number(old)
		}
		switch {
		case name == "get", name == "putifabsent" && found:
		case name == "remove" && found:
			a.W.MarkLinearization()
			t.clear(&a, b, slot)
		case name == "remove":
		case found: // put over an item
			t.update(&a, b, slot, k, v)
		default: // put, putifabsent of a new key
			if !t.insert(&a, s, owner, lv, bs, k, v) {
				t.unlockAll(&a, s)
				if err := t.resize(&a, owner, lv); err != nil {
					return res, err
				}
				continue
			}
		}
		t.unlockAll(&a, s)
		return append(res[:0], prev), a.Err
	}
}

// update is the log-free update of the item in slot j of bucket b.
func (t *table) update(a *pmem.Steps, b, j, k, v uint64) {
	tok := a.Load(b + tokenWord)
	i, _, ok := t.free(tok)
	if !ok { // no free slot: the value is one word, stored in place
		if a.Err == nil {
			a.W.MarkLinearization()
		}
		a.Store(keyOff(b, j)+1, v)
		a.Flush(keyOff(b, j))
		a.Fence()
		return
	}
	a.Store(keyOff(b, i), k)
	a.Store(keyOff(b, i)+1, v)
	flipped := tok&^(1<<j) | 1<<i
	switch t.l.mut {
	case updateTokenEarly:
		a.Store(b+tokenWord, flipped)
		a.Flush(keyOff(b, i))
		a.Fence()
	case updateTokensSplit:
		a.Flush(keyOff(b, i))
		a.Fence()
		a.Store(b+tokenWord, tok&^(1<<j))
		a.Store(b+tokenWord, flipped)
	default:
		a.Flush(keyOff(b, i))
		a.Fence()
		if a.Err == nil {
			a.W.MarkLinearization()
		}
		a.Store(b+tokenWord, flipped)
	}
	a.Flush(b + tokenWord)
	a.Fence()
}

// insert places a new item (k, v) with levels lv and bs locked, moving one
// item if it must; false if there is no room.
func (t *table) insert(a *pmem.Steps, s *scratch, owner uint64, lv levels, bs [4]uint64, k, v uint64) bool {
	for c := 0; c < 4; c += 2 { // top, then bottom: the less loaded candidate
		best, bestSlot, bestItems := uint64(0), uint64(0), t.l.slots
		for _, b := range bs[c : c+2] {
			if i, n, ok := t.free(a.Load(b + tokenWord)); ok && n < bestItems {
				best, bestSlot, bestItems = b, i, n
			}
		}
		if a.Err != nil {
			return true
		}
		if bestItems < t.l.slots {
			t.write(a, best, bestSlot, k, v, insertTokenEarly)
			return true
		}
	}
	// One movement in the same level (top, then bottom), then B2T.
	for c, gen := range [4]uint64{lv.top, lv.top, lv.bot, lv.bot} {
		if t.moveOut(a, s, owner, bs[c], gen, gen, k, v) {
			return true
		}
	}
	for c := 2; c < 4; c++ {
		if t.moveOut(a, s, owner, bs[c], lv.bot, lv.top, k, v) {
			return true
		}
	}
	return a.Err != nil
}

// moveOut tries to move an item of bucket b (of generation from) to one of
// its candidate buckets of generation to (its alternative bucket when to
// is from, its top candidates when to is the top level), and to put (k,
// v) in the slot it frees. A bucket it is not holding, it locks with one
// CAS, or skips.
func (t *table) moveOut(a *pmem.Steps, s *scratch, owner, b, from, to, k, v uint64) bool {
	bug := moveTokenEarly
	if from != to {
		bug = b2tTokenEarly
	}
	tok := a.Load(b + tokenWord)
	n := t.l.buckets(to)
	for i := range t.l.slots {
		if a.Err != nil {
			return false
		}
		if tok&(1<<i) == 0 {
			continue
		}
		x, xv := a.Load(keyOff(b, i)), a.Load(keyOff(b, i)+1)
		for _, dst := range [2]uint64{t.l.bucket(to, hash1(x)%n), t.l.bucket(to, hash2(x)%n)} {
			if dst == b {
				continue
			}
			mine := s.holds(dst)
			if !mine && !a.CAS(dst+lockWord, 0, owner) {
				continue
			}
			j, _, ok := t.free(a.Load(dst + tokenWord))
			if ok {
				if t.onStep != nil {
					t.onStep(bug)
				}
				t.write(a, dst, j, x, xv, bug)
				t.clear(a, b, i) // a crash before this leaves x twice
				t.write(a, b, i, k, v, insertTokenEarly)
			}
			if !mine {
				a.Store(dst+lockWord, 0)
			}
			if ok || a.Err != nil {
				return a.Err == nil
			}
		}
	}
	return false
}

// resize grows the table (see the package documentation), unless another
// worker resized since levels lv. It rehashes the bottom's items into the
// next generation, or, if one finds no room there, into the one after,
// and so on: the last generation has room for every key (topNeverFull).
func (t *table) resize(a *pmem.Steps, owner uint64, lv levels) error {
	l := &t.l
	lockLevels := func(release bool) {
		for _, gen := range [2]uint64{lv.bot, lv.top} {
			for i := range l.buckets(gen) {
				b := l.bucket(gen, i)
				if release {
					a.Store(b+lockWord, 0)
					continue
				}
				for a.Err == nil && !a.CAS(b+lockWord, 0, owner) {
					a.Wait()
				}
			}
		}
	}
	lockLevels(false)
	defer lockLevels(true)
	if w := a.Load(l.genOff); a.Err != nil || w != lv.word() {
		return a.Err
	}
	for ng := lv.top + 1; ng <= l.maxGen; ng++ {
		next := levels{top: ng, bot: lv.top}
		if l.mut == resizeSizeEarly {
			a.Store(l.genOff, next.word())
			a.Persist(l.genOff)
		}
		placed, err := t.rehash(a, lv.bot, ng)
		if err != nil || !placed {
			if err == nil && ng == l.maxGen {
				err = fmt.Errorf("levelhash: a resize to generation %d found no room for an item, which its sizing rules out", ng)
			}
			if err != nil {
				return err
			}
			continue
		}
		if t.onStep != nil {
			t.onStep(resizeSizeEarly)
		}
		a.Fence()
		a.Store(l.genOff, next.word())
		a.Persist(l.genOff)
		return a.Err
	}
	return fmt.Errorf("levelhash: the table of generation %d is full, which its sizing rules out", lv.top)
}

// rehash clears generation ng (what a resize cut off by a crash left
// there) and copies the items of generation from into it, each into one
// of its two candidate buckets, flushed; false if an item finds both full.
func (t *table) rehash(a *pmem.Steps, from, ng uint64) (bool, error) {
	l := &t.l
	n := l.buckets(ng)
	for i := range n {
		b := l.bucket(ng, i)
		a.Store(b+tokenWord, 0)
		a.Flush(b + tokenWord)
	}
	for i := range l.buckets(from) {
		b := l.bucket(from, i)
		tok := a.Load(b + tokenWord)
		for j := range l.slots {
			if tok&(1<<j) == 0 {
				continue
			}
			x, xv := a.Load(keyOff(b, j)), a.Load(keyOff(b, j)+1)
			placed := false
			for _, dst := range [2]uint64{l.bucket(ng, hash1(x)%n), l.bucket(ng, hash2(x)%n)} {
				dtok := a.Load(dst + tokenWord)
				if k, _, ok := t.free(dtok); ok && !placed {
					a.Store(keyOff(dst, k), x)
					a.Store(keyOff(dst, k)+1, xv)
					a.Store(dst+tokenWord, dtok|1<<k)
					a.Flush(keyOff(dst, k))
					a.Flush(dst + tokenWord)
					placed = true
				}
			}
			if a.Err != nil || !placed {
				return false, a.Err
			}
		}
	}
	return true, nil
}

// Recover releases the locks of the current levels and removes the second
// copy of an item that a movement cut off by a crash left twice.
func (t *table) Recover(worker int) (string, error) {
	if worker < 0 || worker >= len(t.scratch) {
		return "", fmt.Errorf("levelhash: worker %d out of range (0..%d)", worker, len(t.scratch)-1)
	}
	t.ready = false
	a := pmem.Steps{W: t.r.Worker(worker)}
	lv, err := t.levels(&a)
	if err != nil {
		return "", err
	}
	locks, dups := 0, 0
	seen := map[uint64]uint64{}
	for _, gen := range [2]uint64{lv.top, lv.bot} {
		for i := range t.l.buckets(gen) {
			b := t.l.bucket(gen, i)
			if a.Load(b+lockWord) != 0 {
				a.Store(b+lockWord, 0)
				a.Flush(b + lockWord)
				locks++
			}
			tok := a.Load(b + tokenWord)
			for j := range t.l.slots {
				if tok&(1<<j) == 0 {
					continue
				}
				k, v := a.Load(keyOff(b, j)), a.Load(keyOff(b, j)+1)
				if a.Err != nil {
					return "", a.Err
				}
				if k >= t.l.keys {
					return "", fmt.Errorf("%w: bucket at %d slot %d holds key %d (of %d)", errCorrupt, b, j, k, t.l.keys)
				}
				if first, dup := seen[k]; dup && t.l.mut != moveDuplicateKept {
					if first != v {
						return "", fmt.Errorf("%w: key %d holds %d and %d", errCorrupt, k, first, v)
					}
					tok &^= 1 << j
					a.Store(b+tokenWord, tok)
					a.Flush(b + tokenWord)
					dups++
				}
				seen[k] = v
			}
		}
	}
	a.Fence()
	if a.Err != nil {
		return "", a.Err
	}
	t.ready = true
	return fmt.Sprintf("levels of generations %d and %d, %d items, %d copies removed, %d locks released", lv.top, lv.bot, len(seen), dups, locks), nil
}

// State lists the pairs, keys ascending: for each key the value a get
// finds first (its candidates in search order).
func (t *table) State(worker int, res []model.Value) ([]model.Value, error) {
	res = res[:0]
	if worker < 0 || worker >= len(t.scratch) {
		return res, fmt.Errorf("levelhash: worker %d out of range (0..%d)", worker, len(t.scratch)-1)
	}
	a := pmem.Steps{W: t.r.Worker(worker)}
	lv, err := t.levels(&a)
	if err != nil {
		return res, err
	}
	for k := range t.l.keys {
		if _, _, v, ok := t.find(&a, t.cands(lv, k), k); ok {
			res = append(res, model.Number(k), model.Number(v))
		}
		if a.Err != nil {
			return res, a.Err
		}
	}
	return res, nil
}
