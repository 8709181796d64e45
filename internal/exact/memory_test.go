package exact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestMaxMemory: the search checks its memory before it allocates: a
// component whose compiled constraints alone pass the bound is refused
// before any state is explored, one whose memo of states outgrows it is
// stopped part way, and a bound that covers both lets the search decide.
// Progress is told every 1024 states, in states over all components.
func TestMaxMemory(t *testing.T) {
	// 3,000 reads of one word: one component, whose two bitsets per
	// operation over the component take some 2.2 MiB.
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "%d inv read 1\n%d ret 0\n", i%4, i%4)
	}
	wide := parse(t, b.String())
	_, err := Check(context.Background(), wide, Options{MaxMemory: 1 << 20})
	var me *MemoryError
	if !errors.As(err, &me) || !errors.Is(err, ErrTooLarge) || me.States != 0 || me.Need < 2<<20 || me.Limit != 1<<20 ||
		!strings.Contains(me.Component, "3000 operations") {
		t.Fatalf("compiled past the bound: %v (%+v)", err, me)
	}
	if res, err := Check(context.Background(), wide, Options{MaxMemory: 64 << 20}); err != nil || !res.Linearizable {
		t.Fatalf("within 64 MiB: %+v, %v", res, err)
	}
	h := parse(t, subsetHistory(12)) // needs more than 4096 states
	var told []int
	res, err := Check(context.Background(), h, Options{MaxStates: -1, Progress: func(n int) { told = append(told, n) }})
	if err != nil || len(told) != res.States/1024 || told[0] != 1024 {
		t.Fatalf("progress: %v after %d states, told %v", err, res.States, told)
	}
	// The memo of those states is some hundreds of KiB.
	_, err = Check(context.Background(), h, Options{MaxStates: -1, MaxMemory: 64 << 10})
	if !errors.As(err, &me) || me.States == 0 || me.States >= res.States {
		t.Fatalf("memo past the bound: %v (%+v), %d states in all", err, me, res.States)
	}
}
