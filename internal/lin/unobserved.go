package lin

import "github.com/pmlin/pmlin/model"

// unobserved drops, from ops (an object's operations, indexes in h.Ops),
// the optional inserts (cut off, or answered "?") of a built-in unbounded
// queue, stack or priority queue whose value no operation of the object
// returned. The history is linearizable exactly when it is without them:
// such an insert, placed, is never removed (a remove would return its
// value) nor listed (contents would), so it stays in the container to the
// end, and every element behind it (a queue's later ones, a stack's
// earlier ones, a priority queue's greater ones) is never removed either
// while it is there; taking it out changes no result of a remove (never
// its value), of contents (never listing it) or of an insert (an
// unbounded container never answers fail), and it only relaxes an empty
// answer. Process order (recoverable mode) only loses a constraint. So a
// linearization with it gives one without it, and one without it is one
// of the history, which may leave an optional operation out.
//
// Left in, such an insert has a window that a crash does not close in
// durable and recoverable mode: the search would try it at every later
// place, each a different state to the end (measured on a lock-based
// queue's fuzz runs, 100 operations, 6 crashes: 101 of 174 durable runs
// exceeded the fuzz budget). A bounded container (cap) is left alone (the
// insert may make a later one fail), and so is kqueue (its index rule
// counts the insert's place).
func unobserved(h *model.History, obj *model.Object, ops []int) []int {
	var add string
	switch obj.Model {
	case "queue":
		add = "enq"
	case "stack":
		add = "push"
	case "pqueue":
		add = "insert"
	default:
		return ops
	}
	if len(obj.Params) != 0 {
		return ops
	}
	seen := map[model.Value]bool{}
	drop := false
	for _, i := range ops {
		op := &h.Ops[i]
		if op.Name == add && op.Status != model.Returned {
			drop = true
		}
		if op.Status == model.Returned && op.Name != add {
			for _, v := range op.Results {
				seen[v] = true
			}
		}
	}
	if !drop {
		return ops
	}
	out := make([]int, 0, len(ops))
	for _, i := range ops {
		op := &h.Ops[i]
		if op.Name == add && op.Status != model.Returned && len(op.Args) == 1 && !seen[op.Args[0]] {
			continue
		}
		out = append(out, i)
	}
	return out
}
