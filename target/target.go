package target

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/pmlin/pmlin/pmem"
)

// Limits the harness keeps.
const (
	// MaxK is the largest number of words of one operation.
	MaxK = 64
	// ValueBits bounds the values the workload writes: every value, and
	// every data word's initial value 0, is below 1<<ValueBits, so a target
	// may keep flags in the top 64-ValueBits bits of a region word (the
	// PMwCAS keeps three).
	ValueBits = 43
)

// Word is one word of a multi-word CAS: at data address Addr, replace Old
// by New.
type Word struct {
	Addr, Old, New uint64
}

// Ops are the operations the workload invokes, from worker ids 0 ..
// Config.Workers-1, concurrently (one goroutine per worker id at a time).
// An error wrapping pmem.ErrCrashed means the region crashed during the
// operation; any other error is a failure of the primitive, reported as a
// "corrupt" anomaly that ends the run.
type Ops interface {
	// CAS replaces, for every w in words, the value at w.Addr by w.New if
	// every address holds its w.Old, atomically; it reports whether it
	// did, and if not an address whose value differed from the expected
	// one. The addresses are distinct and below Config.Words, 1 <=
	// len(words) <= Config.MaxK, and the slice is only valid during the
	// call.
	CAS(worker int, words []Word) (ok bool, failedAddr uint64, err error)
	// Read reads the values at addrs into out[:len(addrs)] as one atomic
	// snapshot. The addresses are distinct and below Config.Words; the
	// workload's reads have at most Config.MaxK of them, but a run ends
	// with a read of every word, as worker 0 once the others are done:
	// len(addrs) = Config.Words, which may exceed MaxK (out has room).
	Read(worker int, addrs []uint64, out []uint64) error
}

// Swapper is an Instance that also has a multi-word unconditional swap
// (MwSwap, the OPODIS paper's second codebase). It is optional: the
// harness gives swaps a share of the workload (pmlin run and fuzz
// --swaps) only on instances that implement it.
type Swapper interface {
	// Swap writes, for every w in words, w.New at w.Addr, atomically, and
	// sets old[i] to the value it replaced at words[i].Addr (w.Old is not
	// used). The rules of CAS hold for the addresses, the new values
	// (each new to its word) and the errors; old has room for len(words)
	// values and, like words, is only valid during the call.
	Swap(worker int, words []Word, old []uint64) error
}

// FailReporter is an Instance whose failed CAS can also report the
// values it read (the OPODIS paper, Section 5.2: such a failure is judged
// like a read). It is optional: the harness asks for the values (pmlin run
// and fuzz --fail-values) only of instances that implement it.
type FailReporter interface {
	// CASReport is CAS; when it fails, it also sets read[i] to the value
	// of words[i].Addr at one moment inside the call, for every i, as one
	// atomic snapshot (what Read would have returned then), in which the
	// value at failedAddr differs from its expected one. read has room
	// for len(words) values and is only valid during the call; on success
	// it is not used.
	CASReport(worker int, words []Word, read []uint64) (ok bool, failedAddr uint64, err error)
}

// Decoder is an Instance whose data words, once Recover has returned, may
// hold an encoding of their value rather than the value itself: a design
// that cleans lazily (a descriptor pointer, a dirty or owner mark left for
// the next operation to resolve) need not clean eagerly in Recover to be
// tested. It is optional: without it, the harness reads DataOffset(a)
// as the value.
type Decoder interface {
	// Decode returns the value of data word a that recovery left, as the
	// next operation would see it, by loads alone: it runs as the given
	// worker (the harness passes 0) after Recover, and a Decode that
	// changes a word of the region is a finding (it would repair what it
	// should only read).
	Decode(worker int, a uint64) (uint64, error)
}

// Instance is a primitive living on a region: its operations, its
// recovery, and where its data words are. It may also implement Swapper,
// FailReporter and Decoder.
type Instance interface {
	Ops
	// Recover repairs the region after a crash image replaced its
	// contents (pmem.Region.Crash), or after Open. It runs alone, as the
	// given worker (the harness passes 0), with no operation in progress,
	// and must forget the volatile state that operations cut off by the
	// crash left in the instance. It can itself be crashed (an access
	// error wrapping pmem.ErrCrashed); the harness then builds a new
	// image and calls it again, so running it again must decide every
	// word the same way. It returns one line on what it did, for the
	// history's comment after the crash ("" for none). Any other error is
	// a finding: the region holds a state that Recover cannot repair.
	Recover(worker int) (note string, err error)
	// DataOffset is the region word that holds data word a (0 <= a <
	// Config.Words) once Recover has returned: the harness reads it there
	// directly, without an operation that would help or clean what
	// recovery left, to record exactly what recovery produced. (A Decoder
	// is read through Decode instead.)
	DataOffset(a uint64) uint64
}

// Config is what the harness asks of an instance.
type Config struct {
	// Words is the number of data words: addresses 0 .. Words-1.
	Words uint64
	// Workers bounds the worker ids of operations: 0 .. Workers-1. It is
	// the run's --threads: one worker per thread, and Recover and the
	// final read run as worker 0 (per-worker state, such as a share of a
	// descriptor pool, is sized by it).
	Workers int
	// MaxK is the largest number of words of a CAS, a swap or a read of
	// the workload (1 .. MaxK): the run's --k. Only the final read of
	// every word is larger (Ops.Read).
	MaxK int
	// Mutant is "" (the correct code) or the name of one of the target's
	// Mutants.
	Mutant string
	// Params holds a value for each of the target's Params (its default
	// unless the user set it), and nothing else.
	Params map[string]string
	// Keys, for a data-structure target (Target.Model set) of a model with
	// keys or members (map, set), is the number of keys the workload uses:
	// 0 .. Keys-1. Other targets get 0.
	Keys uint64
	// Ops, for a data-structure target, bounds the number of operations a
	// run applies, across all its crashes (the recovery's and the final
	// read-backs excluded): a structure that never reclaims memory sizes
	// its pool of nodes by it. Other targets get 0.
	Ops int
}

// Int returns the value of the integer parameter name, which must lie in
// lo .. hi; its error names the flag that sets it.
func (c Config) Int(name string, lo, hi int) (int, error) {
	s, ok := c.Params[name]
	if !ok {
		return 0, fmt.Errorf("--%s is not set", name)
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("--%s %q: not an integer", name, s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("--%s %d: out of range (%d..%d)", name, v, lo, hi)
	}
	return v, nil
}

// Mutant is a planted variant of a target: a bug that pmlin should find.
type Mutant struct {
	Name        string
	Description string
}

// Param is a knob of a target (a geometry, a layout), set by the flag
// --Name of pmlin run and fuzz.
type Param struct {
	Name    string
	Default string
	Usage   string
	// Fuzz, if not empty, are values that pmlin fuzz draws this parameter
	// from, run by run, from each run's seed (each value equally likely;
	// list one twice to make it likelier), in the share of runs whose
	// shape it varies, unless the user set the parameter: a layout knob
	// (where data words fall on cache lines), a pool size. Every value
	// must be one that Size accepts with any workload shape.
	Fuzz []string
}

// Target is a persistent primitive that the harness can build, crash,
// recover and check. See the package documentation for what the harness
// needs of it.
type Target struct {
	// Name selects it (--target NAME): lower-case letters, digits and
	// dashes, starting with a letter.
	Name string
	// Description is one line for pmlin targets.
	Description string
	// Mutants are its planted variants, if any (--mutant NAME).
	Mutants []Mutant
	// Params are its knobs, if any: each is a flag of pmlin run and fuzz.
	Params []Param
	// Blocking declares that an operation may wait for another worker to
	// take steps (a lock), so that the target is not lock-free by design:
	// the harness never stalls one of its workers to check that the others
	// still finish (see the package documentation, "Progress"). A
	// lock-free target leaves it false.
	Blocking bool
	// Size returns the number of region words an instance with this
	// configuration needs, or why the configuration cannot run. The
	// harness calls it before anything else, also to check a
	// configuration.
	Size func(c Config) (words uint64, err error)
	// New formats a new instance on r, a region of Size(c) words that all
	// hold 0, and returns it ready for operations, its data words all 0.
	// Everything it writes must be durable (flushed and fenced) when it
	// returns: a crash may come at the next access.
	New func(r *pmem.Region, c Config) (Instance, error)
	// Open attaches to the instance that New made on r and operations
	// changed, as a new process does after a restart: it reads and checks
	// what New wrote and returns the instance, not yet recovered (the
	// harness calls Recover next). It should not repair anything. An
	// error says that the region cannot be opened, and is a finding: the
	// region holds only what the target wrote.
	Open func(r *pmem.Region, c Config) (Instance, error)

	// Model, if not empty, makes the target a data structure: an object of
	// this built-in version 2 model ("queue", "map", ...; params as in an
	// object declaration, "queue cap=8"), whose instances are Objects made
	// by NewObject and OpenObject, which replace New and Open (leave those
	// nil). The harness draws the workload from the model's operations.
	Model string
	// Mix, for a data-structure target, weighs the operations of its model
	// that the workload draws ("put": 4, "get": 4, "remove": 1): one that
	// is absent is never drawn, so a structure that lacks an operation of
	// its model leaves it out. Nil is the harness's mix for the model.
	Mix map[string]int
	// NewObject is New for a data-structure target: the object it returns
	// is empty (the model's initial state) and durable.
	NewObject func(r *pmem.Region, c Config) (Object, error)
	// OpenObject is Open for a data-structure target.
	OpenObject func(r *pmem.Region, c Config) (Object, error)
}

// nameOK reports whether s is a name: lower-case letters, digits and
// dashes, starting with a letter. (By hand: the harness checks its target
// before every run.)
func nameOK(s string) bool {
	for i, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '-')) {
			return false
		}
	}
	return s != ""
}

// Check reports a target that cannot be used: a bad or missing name, a
// missing function, repeated mutant or parameter names.
func (t *Target) Check() error {
	switch {
	case t == nil:
		return errors.New("target: nil target")
	case !nameOK(t.Name):
		return fmt.Errorf("target: name %q: lower-case letters, digits and dashes, starting with a letter", t.Name)
	case t.Size == nil:
		return fmt.Errorf("target %s: Size must be set", t.Name)
	case t.Model != "" && (t.NewObject == nil || t.OpenObject == nil || t.New != nil || t.Open != nil):
		return fmt.Errorf("target %s: a data-structure target (Model %q) sets NewObject and OpenObject, not New and Open", t.Name, t.Model)
	case t.Model == "" && (t.New == nil || t.Open == nil || t.NewObject != nil || t.OpenObject != nil):
		return fmt.Errorf("target %s: New and Open must both be set (NewObject and OpenObject are for data-structure targets, with Model)", t.Name)
	}
	if t.Model != "" {
		if _, err := t.ObjectModel(); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, m := range t.Mutants {
		if !nameOK(m.Name) || seen[m.Name] {
			return fmt.Errorf("target %s: mutant name %q is malformed or repeated", t.Name, m.Name)
		}
		seen[m.Name] = true
	}
	clear(seen)
	for _, p := range t.Params {
		if !nameOK(p.Name) || seen[p.Name] {
			return fmt.Errorf("target %s: parameter name %q is malformed or repeated", t.Name, p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}
