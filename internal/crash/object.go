package crash

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// Data-structure targets (target.Target.Model set: a queue, a map, ...)
// go through the same round loop as the primitives: their workload is
// drawn from their model (driver.ObjectWorkload), their history is of
// version 2, the read of every word after a recovery and at the end is
// the object's State recorded as operations of the reader process
// (driver.RecordState), and the exact checker (internal/lin)
// decides the history in the run's mode (decideV2), as for a program run
// with --exec.

// isObject reports whether c's target is a data structure.
func (c Config) isObject() bool { return c.Target != nil && c.Target.Model != "" }

// DefaultKeys is the keys of a map or set workload (Config.Keys).
const DefaultKeys = driver.DefaultKeys

// DefaultObjectOps is the operations of a data-structure target's run
// that sets none (pmlin run and fuzz without --ops): the exact checker
// decides its history by search, whose cost grows faster than the
// operations (a lock-based queue's waits for its lock make whole
// stretches of the run concurrent). examples/lockqueue, strict, one job:
// 1,000 operations exceeded the default budget of 5,000,000 states; with
// 200, 498 runs in 60 s, 68 of them undecided at FuzzObjectStates; with
// 100, 720 runs in 15 s, 20 undecided; with 50, 16,461 runs, 2.
const DefaultObjectOps = 100

// The exact checker's bounds on a fuzz run of a data-structure target: a
// run it cannot decide within them is counted undecided (pmlin check of
// the kept history, or of a replay, searches with the default bounds), so
// that one hard history does not hold up a campaign for many seconds.
const (
	FuzzObjectStates = 500_000
	FuzzObjectMemory = 256 << 20
)

// ObjectWorkload is the workload of c's data-structure target.
func (c Config) ObjectWorkload() (*driver.ObjectWorkload, error) {
	w, err := driver.NewObjectWorkload(c.Target.Name, c.Target.Model, c.Target.Mix, c.Keys)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", c.Target.Name, err)
	}
	return w, nil
}

// checkObject reports a configuration a data-structure target cannot run:
// the primitives' operations asked for, or a workload its model has none
// of.
func (c Config) checkObject() error {
	switch {
	case c.Driver.Swaps > 0:
		return fmt.Errorf("target %s is a data structure (model %s): it has no swaps (--swaps)", c.Target.Name, c.Target.Model)
	case c.Driver.FailValues:
		return fmt.Errorf("target %s is a data structure (model %s): it has no failed cas that reports values (--fail-values)", c.Target.Name, c.Target.Model)
	}
	_, err := c.ObjectWorkload()
	return err
}

// readState reads the abstract state of obj that recovery left (or the
// run's end), by its State as worker 0, and checks that State changed no
// word of r (it must only read what recovery left, as a Decode: rawRead).
// finding is the target's fault (State failed, or wrote); err the run's.
func readState(r *pmem.Region, obj target.Object) (st []model.Value, finding, err error) {
	before := r.Snapshot()
	st, err = obj.State(0, nil)
	if err != nil {
		if errors.Is(err, pmem.ErrCrashed) {
			return nil, nil, err
		}
		return nil, fmt.Errorf("the target's State failed: %w", err), nil
	}
	after := r.Snapshot()
	for off := range before {
		if before[off] != after[off] {
			return nil, fmt.Errorf("the target's State changed region word %d (%s to %s): it must only read what recovery left", off, history.FormatValue(before[off]), history.FormatValue(after[off])), nil
		}
	}
	return st, nil, nil
}

// recordRead records what a recovery left, or the end of the run: the
// read of every word, or an object's state. A state not of its model's
// form is a finding (an error whose text is the anomaly's).
func recordRead(rec *record.Recorder, reader int32, rv recovery) error {
	if rec.Object() == nil {
		rec.Read(reader, rv.addrs, rv.vals)
		return nil
	}
	_, err := driver.RecordState(rec, reader, rv.state)
	return err
}

// logK is the k that sizes the process-kill modes' shared logs: the
// workload's, or one whose operations take as much log as a data
// structure's.
func (c Config) logK() int {
	if c.isObject() {
		return record.ObjectLogK
	}
	return c.Driver.K
}

// objectModel is the name of the model of c's data-structure target.
func (c Config) objectModel() string {
	m, _, _ := strings.Cut(strings.TrimSpace(c.Target.Model), " ")
	return m
}
