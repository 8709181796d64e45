// Package lockqueue is a persistent FIFO queue in about a hundred lines,
// written as a pmlin data-structure target: the example of
// docs/your-primitive.md, "Testing your own data structure". Its elements
// sit in an array of slots, each used once (a run's enqueues are bounded
// by target.Config.Ops), between a durable head and a durable tail; an
// operation, under one lock word taken with a region CAS, persists the
// slot it fills before it moves the tail, so a durable tail never covers a
// slot that a crash can lose.
package lockqueue

import (
	"errors"
	"fmt"

	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Region words: the magic and the capacity, the lock, the head and the
// tail (each on a cache line of its own), then the slots.
const (
	magicWord, capWord = 0, 1
	lockWord           = 8
	headWord, tailWord = 16, 24
	slots              = 32
	magic              = 0x4c4f434b51 // "LOCKQ"
)

// Target is the lock-based queue as a pmlin target of model queue, with
// one planted bug.
func Target() *target.Target {
	return &target.Target{
		Name:        "lockqueue",
		Description: "a FIFO queue under one lock whose enq persists the slot it fills before it moves the tail",
		Model:       "queue",
		Mutants: []target.Mutant{
			{Name: "slot-unpersisted", Description: "enq moves the tail without persisting the slot it filled"},
			{Name: "lock-kept", Description: "recovery does not release the lock a crash left taken"},
		},
		Size:       func(c target.Config) (uint64, error) { return slots + uint64(c.Ops), nil },
		NewObject:  New,
		OpenObject: Open,
		Blocking:   true, // one lock: an operation waits for its holder
	}
}

// Queue is the queue on a region.
type Queue struct {
	r      *pmem.Region
	cap    uint64
	mutant string
}

// New formats an all-zero region: the capacity, then the magic, durable.
func New(r *pmem.Region, c target.Config) (target.Object, error) {
	s := pmem.Steps{W: r.Worker(0)}
	s.Store(capWord, uint64(c.Ops))
	s.Persist(capWord)
	s.Store(magicWord, magic)
	s.Persist(magicWord)
	return &Queue{r: r, cap: uint64(c.Ops), mutant: c.Mutant}, s.Err
}

// Open checks what New wrote; Recover comes next.
func Open(r *pmem.Region, c target.Config) (target.Object, error) {
	s := pmem.Steps{W: r.Worker(0)}
	if s.Load(magicWord) != magic || s.Load(capWord) != uint64(c.Ops) {
		return nil, errors.Join(s.Err, errors.New("lockqueue: not a queue of this capacity"))
	}
	return &Queue{r: r, cap: uint64(c.Ops), mutant: c.Mutant}, nil
}

// lock spins with a region CAS: every attempt is a region access, where
// pmlin's deterministic scheduler can run the owner.
func (q *Queue) lock(s *pmem.Steps, worker int) {
	for s.Err == nil && !s.CAS(lockWord, 0, uint64(worker)+1) {
	}
}

// Do applies enq or deq under the lock.
func (q *Queue) Do(worker int, name string, args, res []model.Value) ([]model.Value, error) {
	s := pmem.Steps{W: q.r.Worker(worker)}
	q.lock(&s, worker)
	head, tail := s.Load(headWord), s.Load(tailWord)
	switch {
	case name == "enq" && tail == q.cap:
		s.Store(lockWord, 0)
		return res, errors.Join(s.Err, fmt.Errorf("lockqueue: all %d slots used", q.cap))
	case name == "enq":
		s.Store(slots+tail, args[0].N)
		if q.mutant != "slot-unpersisted" {
			s.Persist(slots + tail) // the element is durable before the tail covers it
		}
		s.Store(tailWord, tail+1)
		s.Persist(tailWord)
		res = append(res, model.Sym(model.OK))
	case head == tail:
		res = append(res, model.Sym(model.Empty))
	default:
		res = append(res, model.Number(s.Load(slots+head)))
		s.Store(headWord, head+1)
		s.Persist(headWord)
	}
	s.Store(lockWord, 0)
	return res, s.Err
}

// Recover releases the lock that a crash may have left taken.
func (q *Queue) Recover(worker int) (string, error) {
	s := pmem.Steps{W: q.r.Worker(worker)}
	if q.mutant != "lock-kept" {
		s.Store(lockWord, 0)
		s.Persist(lockWord)
	}
	head, tail := s.Load(headWord), s.Load(tailWord)
	return fmt.Sprintf("%d elements", tail-head), s.Err
}

// State lists the elements, front first, by loads alone.
func (q *Queue) State(worker int, res []model.Value) ([]model.Value, error) {
	s := pmem.Steps{W: q.r.Worker(worker)}
	for i := s.Load(headWord); i < s.Load(tailWord); i++ {
		res = append(res, model.Number(s.Load(slots+i)))
	}
	return res, s.Err
}
