package target

import (
	"fmt"
	"strings"

	"github.com/pmlin/pmlin/model"
)

// Object is an instance of a data-structure target (one whose Target.Model
// is set): a persistent object of a version 2 model (docs/history-format.md,
// "The built-in models of version 2"), such as a queue or a map, living on
// a pmem.Region. The harness applies the model's operations to it, crashes
// and recovers it, and reads back what recovery left, exactly as it does
// with an Instance's words; the recorded history is of version 2 and is
// decided by the exact checker (or a fast path) in every mode.
type Object interface {
	// Do applies the operation name of the target's model, with args (in
	// the model's vocabulary: "enq" 0x100001, "put" 7 0x200001), as the
	// given worker, and returns its results, appended to res[:0] (res
	// has room for a few; args and res are only valid during the call).
	// The results are the model's: ok, fail, empty, nil, true, false or
	// numbers. The rules of Ops hold for errors: an error wrapping
	// pmem.ErrCrashed means the region crashed during the operation; any
	// other error is a finding ("corrupt").
	Do(worker int, name string, args []model.Value, res []model.Value) ([]model.Value, error)
	// Recover is Instance.Recover: it repairs the region after a crash
	// image replaced its contents or after OpenObject, alone, as the
	// given worker, and may itself be crashed and called again.
	Recover(worker int) (note string, err error)
	// State returns the abstract state that Recover left, by loads alone
	// (the harness checks that it changes no region word), appended to
	// res[:0], in the form State gives for the target's model:
	//
	//   - queue, kqueue: the elements, front first;
	//   - stack: the elements, top first;
	//   - pqueue: the elements, least first (with repeats);
	//   - set: the members, ascending;
	//   - map: key, value, key, value, ... for every key that has a value,
	//     keys ascending;
	//   - register, counter: the one value.
	//
	// The harness records it as operations of a process of its own after
	// the crash, which the checker judges like any other: an element lost
	// or resurrected by recovery is a violation.
	State(worker int, res []model.Value) ([]model.Value, error)
}

// ObjectModel returns the model a data-structure target declares (Model:
// a built-in model's name, then its parameters as in an object
// declaration), or why it is not one.
func (t *Target) ObjectModel() (*model.Model, error) {
	f := strings.Fields(t.Model)
	if len(f) == 0 {
		return nil, fmt.Errorf("target %s: no model", t.Name)
	}
	mk := model.Builtin(f[0])
	if mk == nil {
		return nil, fmt.Errorf("target %s: unknown model %q", t.Name, f[0])
	}
	ps := make([]model.Param, 0, len(f)-1)
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("target %s: model parameter %q is not key=value", t.Name, kv)
		}
		ps = append(ps, model.Param{Key: k, Value: v})
	}
	m, err := mk(ps)
	if err != nil {
		return nil, fmt.Errorf("target %s: model %s: %w", t.Name, t.Model, err)
	}
	return m, nil
}
