package crash

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Mix is how a campaign varies its runs beyond their seeds
// (FuzzConfig.Mix). Each run draws from its own seed whether it takes a
// shape of its own (words, k, the target's layout parameters), stops a
// thread in its segments (the progress check) and puts its recoveries
// under fire; one run in MixEvery also uses the target's optional
// operations. What a run drew is in its Config, so its replay command
// carries the values it ran with. A fixed workload misses what only
// another layout shows: with the default 8 words on one cache line, one
// flush persists them all.
type Mix struct {
	// Shapes is the share of runs with a shape drawn from their seed:
	// words and k, and every target parameter that lists Fuzz values.
	Shapes float64
	// Crowd is the share of the runs without a shape of their own that
	// take a crowded one instead (crowd): k >= 3, up to target.MaxK,
	// on k to 2k words, and the target parameters drawn as for a shape
	// (a small descriptor pool among them). What only a third word
	// exposes (a helper late at one word while the operation fails at a
	// later one and rolls the first back, then a reuse of its
	// descriptor) is out of reach of the default k = 2, and a shape has
	// k >= 3 in only 40 % of its runs, among many words.
	Crowd float64
	// Fill is the share of the runs of a data structure whose model is
	// keyed (a map, a set) without a shape of their own that take a filled
	// one (fill): keys from a quarter to three quarters of their
	// operations, so that most inserts add a key and the structure grows
	// as far as the run takes it (a table fills its buckets, moves items
	// and resizes), while removals and updates still find keys present. The
	// default 8 keys never fill level hashing's 12 slots; a shape has 5 to
	// 32 keys in half of its runs.
	Fill float64
	// Stall is the share of runs whose every segment stops a thread
	// (Config.Stall 1): deterministic scheduler, targets that do not
	// declare themselves Blocking.
	Stall float64
	// Lone is the share of the stalled runs that have two threads, the
	// stopped one and a lone live one (unless the threads were set): the
	// live one then runs solo, and nobody else's steps (a read that
	// persists a dirty value, a helper that undoes an RDCSS) can finish
	// the stopped one's work for it. With more threads a waiter is often
	// rescued by them, and a wait for the stopped thread goes unseen.
	Lone float64
	// Fire is the share of runs whose recoveries are crashed often: each
	// run of a recovery with probability FireCrash, up to FireCrashes
	// times, or, in half of them, right after each flush and fence of the
	// recovery in turn (RecoverySweep). Emulated crashes only.
	Fire float64
	// Late is the share of runs that hold writes back under the
	// late-write policy (driver.Config.Late, with probability LateWrite
	// per CAS): a thread is held before a CAS until the others have
	// changed that word, and the target's scheduling points on volatile
	// state (pmem.Worker.Volatile) are switching points. Deterministic
	// scheduler, targets that do not declare themselves Blocking.
	Late float64
	// LateCrash is the share of the Late runs whose every segment
	// crashes where a late write's change is not yet durable
	// (Config.LateCrash 1): emulated crashes.
	LateCrash float64
	// Rare is the share of runs whose segments, from the second on (the
	// last included), also crash at a flush or fence of a path the run has
	// not taken before (Config.RareCrash): deterministic scheduler,
	// emulated crashes; not the runs with late crashes, whose crashes have
	// their own aim.
	Rare float64
	// Optional makes runs MixEvery-1, 2*MixEvery-1, ... of the campaign
	// (0-based) also use the optional operations the target has
	// (ProbeOptional): a MixSwaps share of swaps, and failed cas that
	// report the values they read; not when the template uses either.
	Optional bool
	// Keep names the run flags the user set: the mix draws none of them
	// ("words", "k", a target parameter, "stall", "threads", "recovery-crash",
	// "recovery-crashes", "recovery-sweep"; "swaps" or "fail-values" turn
	// Optional off).
	Keep map[string]bool
}

// Defaults of the mix (DefaultMix) and of the runs under fire.
const (
	DefaultMixShapes = 0.3
	DefaultMixCrowd  = 0.2
	DefaultMixStall  = 0.5
	DefaultMixLone   = 0.5
	DefaultMixFire   = 0.2
	DefaultMixLate   = 0.3
	// DefaultMixLateCrash is a share of the late runs: all of them (the
	// undo mutants of internal/mutmwcas die in 2 to 4 times fewer runs
	// than with half, p2-no-help-rdcss in fewer too).
	DefaultMixLateCrash = 1
	// DefaultMixFill: half of the runs of a map or set without a shape of
	// their own (level hashing's planted movement bugs, which need both a
	// full table and a crash inside a movement, were found by 3 and 2
	// seeds of 6 in 60 s without it and rare crashes). DefaultMixRare:
	// every run but the late-crash ones; a rare-site crash comes before
	// the drawn point only at a new site, and counting the sites costs a
	// run 4 to 7 % of its CPU time. With 1 instead of 0.5, twice the
	// crashes fell inside the bottom-to-top movement whose token is stored
	// early (27 against 13 in 3,000 runs).
	DefaultMixFill = 0.5
	DefaultMixRare = 1
	LateWrite      = 0.02
	FireCrash      = 0.9
	FireCrashes    = 20
)

// DefaultMix is pmlin fuzz's mix.
func DefaultMix() Mix {
	return Mix{Shapes: DefaultMixShapes, Crowd: DefaultMixCrowd, Stall: DefaultMixStall, Lone: DefaultMixLone, Fire: DefaultMixFire, Late: DefaultMixLate, LateCrash: DefaultMixLateCrash, Fill: DefaultMixFill, Rare: DefaultMixRare, Optional: true}
}

// Check reports a mix that cannot be used.
func (m Mix) Check() error {
	for _, x := range []struct {
		name string
		v    float64
	}{{"shapes", m.Shapes}, {"crowd", m.Crowd}, {"stall", m.Stall}, {"lone", m.Lone}, {"fire", m.Fire}, {"late", m.Late}, {"late-crash", m.LateCrash}, {"fill", m.Fill}, {"rare", m.Rare}} {
		if !(x.v >= 0 && x.v <= 1) {
			return fmt.Errorf("mix: %s share %v (a probability)", x.name, x.v)
		}
	}
	return nil
}

// drawn is what a run drew from the mix.
type drawn struct {
	shaped, crowded, filled, stalled, lone, fire, swept, late, lateCrash, rare, optional bool
}

// draw makes run c (whose seed is set) take what the mix draws for it.
func (m Mix) draw(c *Config) drawn {
	rng := rand.New(rand.NewPCG(c.Driver.Seed, 0x313c))
	var d drawn
	// One draw per decision, always made: a decision does not shift the
	// others.
	shape, stall, fire, sweep := rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()
	if shape < m.Shapes && c.isObject() {
		d.shaped = m.objectShape(c, rng)
	} else if shape < m.Shapes {
		d.shaped = m.shape(c, rng)
	} else if c.isObject() {
		// (No crowd: a data structure has no words or k.) A stream of
		// its own, as the crowd's.
		if fill := rand.New(rand.NewPCG(c.Driver.Seed, 0xf111)); fill.Float64() < m.Fill {
			d.filled = m.fill(c, fill)
		}
	} else if crowd := rand.New(rand.NewPCG(c.Driver.Seed, 0xc40d)); crowd.Float64() < m.Crowd {
		// A stream of its own: the runs that do not take it replay as
		// before it existed.
		d.crowded = m.crowd(c, crowd)
	}
	if stall < m.Stall && !m.Keep["stall"] && c.Scheduler() == driver.Deterministic && !c.Target.Blocking {
		c.Stall, d.stalled = 1, true
		// A stream of its own: the draws above and the shape's do not
		// depend on whether this one is made.
		lone := rand.New(rand.NewPCG(c.Driver.Seed, 0x1013e)).Float64()
		if lone < m.Lone && !m.Keep["threads"] && c.Driver.Threads > 2 {
			c.Driver.Threads, d.lone = 2, true
		}
	}
	// Its own stream too: runs that do not take it replay as before.
	late := rand.New(rand.NewPCG(c.Driver.Seed, 0x1a7e5)).Float64()
	if late < m.Late && !m.Keep["late"] && c.Scheduler() == driver.Deterministic && !c.Target.Blocking {
		c.Driver.Late, d.late = LateWrite, true
		// Its own stream again: the late runs that do not take it replay
		// as before it existed.
		lc := rand.New(rand.NewPCG(c.Driver.Seed, 0x1a7ec5)).Float64()
		if lc < m.LateCrash && !m.Keep["late-crash"] && c.CrashMode == Emulated {
			c.LateCrash, d.lateCrash = 1, true
		}
	}
	// Its own stream too.
	rare := rand.New(rand.NewPCG(c.Driver.Seed, 0x5a7e)).Float64()
	if rare < m.Rare && !m.Keep["rare-crash"] && !d.lateCrash && c.Scheduler() == driver.Deterministic && c.CrashMode == Emulated {
		// (Not with late crashes: their segments crash where a late
		// write's change is not yet durable.)
		c.RareCrash, d.rare = true, true
	}
	if fire < m.Fire && c.CrashMode == Emulated && !m.Keep["recovery-crash"] && !m.Keep["recovery-crashes"] && !m.Keep["recovery-sweep"] {
		d.fire = true
		if sweep < 0.5 {
			c.RecoverySweep, d.swept = true, true
		} else {
			c.RecoveryCrash, c.RecoveryCrashes = FireCrash, FireCrashes
		}
	}
	return d
}

// shape draws the words, k and layout parameters of c that the user did
// not set. Most shapes are small (the default costs about as much); some
// put each data word on a line of its own (a layout parameter), cross
// line boundaries with odd counts, or fill descriptors of up to
// target.MaxK words (the harness asks a target for descriptors of k
// words, so every operation fills one).
func (m Mix) shape(c *Config, rng *rand.Rand) bool {
	d := &c.Driver
	changed := false
	if !m.Keep["words"] {
		switch r := rng.Float64(); {
		case r < 0.4:
			d.Words = 1 + rng.Uint64N(8)
		case r < 0.85:
			d.Words = 9 + rng.Uint64N(16)
		default:
			d.Words = 25 + rng.Uint64N(48)
		}
		changed = true
	}
	if !m.Keep["k"] {
		switch r := rng.Float64(); {
		case r < 0.3:
			d.K = 1
		case r < 0.6:
			d.K = 2
		case r < 0.85:
			d.K = 3
		case r < 0.97:
			d.K = 4 + rng.IntN(5)
		default:
			d.K = 9 + rng.IntN(target.MaxK-8)
		}
		d.K = min(d.K, int(min(d.Words, target.MaxK)))
		changed = true
	}
	d.Words = max(d.Words, uint64(d.K)) // a k the user set
	drew := m.params(c, rng)
	return changed || drew
}

// objectShape draws the shape of a data-structure target's run (c) that
// the user did not set: its threads (2 to 5), its operations (half to
// one and a half times DefaultObjectOps: the checker's search must stay
// small) and, for a map or set, its keys (1 to 4: every
// operation meets another on its key; or 5 to 32), and the target's
// parameters as for a shape.
func (m Mix) objectShape(c *Config, rng *rand.Rand) bool {
	changed := false
	if !m.Keep["threads"] {
		c.Driver.Threads, changed = 2+rng.IntN(4), true
	}
	if !m.Keep["ops"] {
		c.Ops, changed = DefaultObjectOps/2+rng.IntN(DefaultObjectOps+1), true
	}
	if !m.Keep["keys"] && driver.KeyedModel(c.objectModel()) {
		if rng.IntN(2) == 0 {
			c.Keys = 1 + rng.Uint64N(4)
		} else {
			c.Keys = 5 + rng.Uint64N(28)
		}
		changed = true
	}
	drew := m.params(c, rng)
	return changed || drew
}

// fill draws a filled shape for c (Mix.Fill), unless its model is not
// keyed or the user set its keys: keys from Ops/4 to 3·Ops/4.
func (m Mix) fill(c *Config, rng *rand.Rand) bool {
	if m.Keep["keys"] || !driver.KeyedModel(c.objectModel()) {
		return false
	}
	c.Keys = uint64(max(1, c.Ops/4+rng.IntN(c.Ops/2+1)))
	return true
}

// crowd draws a crowded shape for c, unless the user set its words or k:
// k is 3 in half of these runs, 4 to 8 in 45 %, up to target.MaxK in 5 %;
// the words k to 2k, so that nearly every operation meets another, fails
// or helps; the target parameters as for a shape (params).
func (m Mix) crowd(c *Config, rng *rand.Rand) bool {
	if m.Keep["words"] || m.Keep["k"] {
		return false
	}
	d := &c.Driver
	switch r := rng.Float64(); {
	case r < 0.5:
		d.K = 3
	case r < 0.95:
		d.K = 4 + rng.IntN(5)
	default:
		d.K = 9 + rng.IntN(target.MaxK-8)
	}
	d.Words = uint64(d.K + rng.IntN(d.K+1))
	m.params(c, rng)
	return true
}

// params draws the target parameters of c that list Fuzz values and that
// the user did not set, and reports whether it drew one.
func (m Mix) params(c *Config, rng *rand.Rand) bool {
	changed := false
	cloned := false
	for _, p := range c.Target.Params {
		if len(p.Fuzz) == 0 || m.Keep[p.Name] {
			continue
		}
		if !cloned {
			c.Params, cloned = maps.Clone(c.Params), true // the template's map is shared
			if c.Params == nil {
				c.Params = map[string]string{}
			}
		}
		c.Params[p.Name] = p.Fuzz[rng.IntN(len(p.Fuzz))]
		changed = true
	}
	return changed
}

// MixStats count what a campaign's runs drew from its mix.
type MixStats struct {
	// Shaped runs took a shape of their own: their words (from WordsMin
	// to WordsMax, OddWords of them odd), k (KMin to KMax, KWords of them
	// k = words) and Params (per parameter, runs per value).
	Shaped             int64                       `json:"shaped"`
	WordsMin, WordsMax uint64                      `json:"-"`
	OddWords           int64                       `json:"odd_words"`
	KMin, KMax         int                         `json:"-"`
	KWords             int64                       `json:"k_words"`
	Params             map[string]map[string]int64 `json:"params,omitempty"`
	// For a data-structure target (Object), a shape is its threads, its
	// operations and, for a map or set, its keys (Mix.objectShape), from
	// their Min to their Max, instead of words and k.
	Object                 bool   `json:"-"`
	ThreadsMin, ThreadsMax int    `json:"-"`
	OpsMin, OpsMax         int    `json:"-"`
	KeysMin, KeysMax       uint64 `json:"-"`
	// Crowded runs took a crowded shape (Mix.Crowd), of k from
	// CrowdKMin to CrowdKMax.
	Crowded              int64 `json:"crowded"`
	CrowdKMin, CrowdKMax int   `json:"-"`
	// Filled runs took a filled shape (Mix.Fill), of keys from
	// FillKeysMin to FillKeysMax.
	Filled                   int64  `json:"filled"`
	FillKeysMin, FillKeysMax uint64 `json:"-"`
	// Rare runs crashed at rare sites too (Mix.Rare); RareCrashes counts
	// the segments that did.
	Rare        int64 `json:"rare"`
	RareCrashes int64 `json:"rare_crashes"`
	// Stalled runs stopped a thread in each segment; Stalls counts the
	// segments in which one was stopped.
	Stalled int64 `json:"stalled"`
	Stalls  int64 `json:"stalls"`
	// Lone stalled runs had two threads: the stopped one and one live.
	Lone int64 `json:"lone"`
	// Late runs held writes back (Mix.Late); Holds counts the threads
	// they held.
	Late  int64 `json:"late"`
	Holds int64 `json:"holds"`
	// LateCrash late runs crashed their segments where a late write's
	// change was not yet durable (Mix.LateCrash); LateCrashes counts the
	// segments that did (the others crashed at their end).
	LateCrash   int64 `json:"late_crash"`
	LateCrashes int64 `json:"late_crashes"`
	// Fire runs crashed their recoveries often, Swept ones at every flush
	// and fence; RecoveryCrashes counts every crash of a recovery in the
	// campaign.
	Fire            int64 `json:"fire"`
	Swept           int64 `json:"swept"`
	RecoveryCrashes int64 `json:"recovery_crashes"`
	// Optional runs also used the target's optional operations, as
	// OptionalOps says ("" if the campaign mixes none in).
	Optional    int64  `json:"optional"`
	OptionalOps string `json:"-"`
}

// clone is s with maps of its own.
func (s MixStats) clone() MixStats {
	if s.Params != nil {
		ps := make(map[string]map[string]int64, len(s.Params))
		for name, vals := range s.Params {
			ps[name] = maps.Clone(vals)
		}
		s.Params = ps
	}
	return s
}

// add counts run c, which drew d and did res.
func (s *MixStats) add(c Config, d drawn, res *Result) {
	s.Stalls += int64(res.Stalls)
	s.RecoveryCrashes += int64(res.RecoveryCrashes)
	s.Holds += res.Holds
	s.LateCrashes += int64(res.LateCrashes)
	s.RareCrashes += int64(res.RareCrashes)
	if d.rare {
		s.Rare++
	}
	if d.filled {
		if s.Filled == 0 || c.Keys < s.FillKeysMin {
			s.FillKeysMin = c.Keys
		}
		s.FillKeysMax = max(s.FillKeysMax, c.Keys)
		s.Filled++
	}
	if d.lateCrash {
		s.LateCrash++
	}
	if d.stalled {
		s.Stalled++
	}
	if d.lone {
		s.Lone++
	}
	if d.fire {
		s.Fire++
	}
	if d.late {
		s.Late++
	}
	if d.swept {
		s.Swept++
	}
	if d.optional {
		s.Optional++
	}
	if d.crowded {
		k := c.Driver.K
		if s.Crowded == 0 || k < s.CrowdKMin {
			s.CrowdKMin = k
		}
		s.CrowdKMax = max(s.CrowdKMax, k)
		s.Crowded++
	}
	if !d.shaped {
		return
	}
	if c.isObject() {
		keys := c.Keys
		if !driver.KeyedModel(c.objectModel()) {
			keys = 0 // none drawn
		}
		if s.Shaped == 0 {
			s.ThreadsMin, s.OpsMin, s.KeysMin = c.Driver.Threads, c.Ops, keys
		}
		s.Object = true
		s.ThreadsMin, s.ThreadsMax = min(s.ThreadsMin, c.Driver.Threads), max(s.ThreadsMax, c.Driver.Threads)
		s.OpsMin, s.OpsMax = min(s.OpsMin, c.Ops), max(s.OpsMax, c.Ops)
		s.KeysMin, s.KeysMax = min(s.KeysMin, keys), max(s.KeysMax, keys)
		s.Shaped++
		return
	}
	w, k := c.Driver.Words, c.Driver.K
	if s.Shaped == 0 || w < s.WordsMin {
		s.WordsMin = w
	}
	if s.Shaped == 0 || k < s.KMin {
		s.KMin = k
	}
	s.WordsMax, s.KMax = max(s.WordsMax, w), max(s.KMax, k)
	s.Shaped++
	if w%2 == 1 {
		s.OddWords++
	}
	if uint64(k) == w {
		s.KWords++
	}
	for _, p := range c.Target.Params {
		if len(p.Fuzz) == 0 {
			continue
		}
		if s.Params == nil {
			s.Params = map[string]map[string]int64{}
		}
		if s.Params[p.Name] == nil {
			s.Params[p.Name] = map[string]int64{}
		}
		v, ok := c.Params[p.Name]
		if !ok {
			v = p.Default
		}
		s.Params[p.Name][v]++
	}
}

// numberOrder orders values as numbers where both are, else as strings.
func numberOrder(a, b string) int {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

// String renders what the runs drew, each share of the runs counted.
func (s MixStats) String(runs int64) string {
	if runs == 0 {
		return "no run"
	}
	pct := func(n, of int64) string { return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(max(of, 1))) }
	var parts []string
	if s.Shaped > 0 && s.Object {
		keys := ""
		if s.KeysMax > 0 {
			keys = fmt.Sprintf(", keys %d-%d", s.KeysMin, s.KeysMax)
		}
		parts = append(parts, fmt.Sprintf("%s with a shape of their own (threads %d-%d, operations %d-%d%s)",
			pct(s.Shaped, runs), s.ThreadsMin, s.ThreadsMax, s.OpsMin, s.OpsMax, keys))
	} else if s.Shaped > 0 {
		shape := fmt.Sprintf("%s with a shape of their own (words %d-%d, %s odd; k %d-%d, k = words in %s",
			pct(s.Shaped, runs), s.WordsMin, s.WordsMax, pct(s.OddWords, s.Shaped), s.KMin, s.KMax, pct(s.KWords, s.Shaped))
		for _, name := range slices.Sorted(maps.Keys(s.Params)) {
			vals := s.Params[name]
			var vs []string
			for _, v := range slices.SortedFunc(maps.Keys(vals), numberOrder) {
				vs = append(vs, v+" "+pct(vals[v], s.Shaped))
			}
			shape += "; " + name + " " + strings.Join(vs, ", ")
		}
		parts = append(parts, shape+")")
	}
	if s.Crowded > 0 {
		parts = append(parts, fmt.Sprintf("%s crowded (k %d-%d on k to 2k words)", pct(s.Crowded, runs), s.CrowdKMin, s.CrowdKMax))
	}
	if s.Filled > 0 {
		parts = append(parts, fmt.Sprintf("%s filled (keys %d-%d: most inserts add a key)", pct(s.Filled, runs), s.FillKeysMin, s.FillKeysMax))
	}
	if s.Stalled > 0 {
		parts = append(parts, fmt.Sprintf("%s with a thread stopped in each segment (progress check: %d stops; %s of these runs with one live thread)",
			pct(s.Stalled, runs), s.Stalls, pct(s.Lone, s.Stalled)))
	}
	if s.Late > 0 {
		late := fmt.Sprintf("%s with late writes (a thread held before a CAS until others changed that word or brought back its expected value, or before a plain store of a word it loaded: %d holds",
			pct(s.Late, runs), s.Holds)
		if s.LateCrash > 0 {
			late += fmt.Sprintf("; %s of these runs crashed each segment where a late write's change was not yet durable, if it came to one: %d such crashes",
				pct(s.LateCrash, s.Late), s.LateCrashes)
		}
		parts = append(parts, late+")")
	}
	if s.Rare > 0 {
		parts = append(parts, fmt.Sprintf("%s with crashes also at paths not taken before (a flush or fence at a new site, from the second segment: %d such crashes)", pct(s.Rare, runs), s.RareCrashes))
	}
	if s.Fire > 0 {
		parts = append(parts, fmt.Sprintf("%s with recoveries under fire (%s of them crashed right after each flush and fence in turn)",
			pct(s.Fire, runs), pct(s.Swept, s.Fire)))
	}
	if s.OptionalOps != "" {
		parts = append(parts, fmt.Sprintf("%s also with %s (--swaps or --fail-values set the workload of every run)", pct(s.Optional, runs), s.OptionalOps))
	}
	if len(parts) == 0 {
		return "every run as given"
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; %d crashes of recoveries in all", s.RecoveryCrashes)
}

// The optional operations in the mix (Mix.Optional): one run in MixEvery
// also exercises the target's optional operations, those its instance has
// (probed once, on a scratch region): a MixSwaps share of swaps, and
// failed cas that report the values they read.
const (
	MixEvery = 4
	MixSwaps = 0.2
)

// Optional says which optional operations of package target a target's
// instance has.
type Optional struct {
	Swap       bool // a target.Swapper: --swaps
	FailValues bool // a target.FailReporter: --fail-values
}

// String lists them as the flags that use them ("" for none).
func (o Optional) String() string {
	switch {
	case o.Swap && o.FailValues:
		return "--swaps, --fail-values"
	case o.Swap:
		return "--swaps"
	case o.FailValues:
		return "--fail-values"
	}
	return ""
}

// ProbeOptional tells which optional operations c's target has, from an
// instance it builds on a scratch region in memory (and discards).
func ProbeOptional(c Config) (Optional, error) {
	if c.isObject() {
		return Optional{}, nil // a data structure's operations are its model's
	}
	tc, err := c.targetConfig()
	if err != nil {
		return Optional{}, err
	}
	n, err := c.Target.Size(tc)
	if err != nil {
		return Optional{}, fmt.Errorf("target %s: %w", c.Target.Name, err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{})
	if err != nil {
		return Optional{}, err
	}
	defer r.Close()
	in, err := c.Target.New(r, tc)
	if err != nil {
		return Optional{}, fmt.Errorf("target %s: a scratch instance (to see which optional operations it has): %w", c.Target.Name, err)
	}
	_, swap := in.(target.Swapper)
	_, report := in.(target.FailReporter)
	return Optional{Swap: swap, FailValues: report}, nil
}

// mixer applies the optional operations of the mix to the runs of a
// campaign.
type mixer struct {
	swaps, report bool
}

// newMixer probes c's target for its optional operations.
func newMixer(c Config) (mixer, error) {
	o, err := ProbeOptional(c)
	if err != nil {
		return mixer{}, err
	}
	return mixer{swaps: o.Swap && c.Driver.Reads < 1, report: o.FailValues}, nil
}

// apply makes run i of the campaign (its configuration rc) one of the mix
// if its turn has come, and says so. The swaps come out of the cas's
// share, or out of the reads' when the cas's is smaller.
func (m mixer) apply(rc *Config, i int64) bool {
	if i%MixEvery != MixEvery-1 || !m.swaps && !m.report {
		return false
	}
	d := &rc.Driver
	if m.swaps {
		d.Swaps = MixSwaps
		d.Reads = min(d.Reads, 1-MixSwaps)
	}
	d.FailValues = m.report
	return true
}

// String says what the runs of the mix also do ("" for nothing).
func (m mixer) String() string {
	switch {
	case m.swaps && m.report:
		return fmt.Sprintf("%g%% swaps and failed cas that report the values they read", 100*MixSwaps)
	case m.swaps:
		return fmt.Sprintf("%g%% swaps", 100*MixSwaps)
	case m.report:
		return "failed cas that report the values they read"
	}
	return ""
}
