package lin

import (
	"context"

	"github.com/pmlin/pmlin/model"
)

// QueueBranched says whether the queue engine, deciding h's object 0 (all
// of h's operations), had to branch (a conflicting unsuccessful dequeue):
// for the tests, to see that the branching path is exercised.
func QueueBranched(h *model.History) bool {
	p := &part{objs: []int{0}}
	for i := range h.Ops {
		p.ops = append(p.ops, i)
	}
	return decideQueue(context.Background(), h, p, 1<<30).branched
}
