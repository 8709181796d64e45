package analyzer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/histgen"
	"github.com/pmlin/pmlin/internal/history"
)

// TestMaxMemory: a bound below what a history needs refuses it before
// reading when its size tells (the size hint), stops it while reading when
// it does not (no hint: the process's memory already passes 1 MiB), and a
// bound well above lets the same history through to its verdict.
func TestMaxMemory(t *testing.T) {
	text, _, err := histgen.Planted(50_000, histgen.NoViolation, 3)
	if err != nil {
		t.Fatal(err)
	}
	check := func(opts analyzer.Options) (*analyzer.Result, error) {
		return analyzer.Check(context.Background(), history.NewReader(bytes.NewReader(text), "m.hist", history.Options{}), opts)
	}
	size := int64(len(text))
	_, err = check(analyzer.Options{SizeHint: size, MaxMemory: size / 2, MemorySource: "the test"})
	var me *analyzer.MemoryError
	if !errors.As(err, &me) || !me.Estimated || me.Line != 0 || me.Need != analyzer.EstimateMemory(size, history.Text) || me.Limit != size/2 {
		t.Fatalf("bound below the estimate: %v (%+v)", err, me)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "m.hist: too large for the memory available") || !strings.Contains(msg, "the test allows") {
		t.Errorf("message: %s", msg)
	}
	if j, x := analyzer.EstimateMemory(1<<30, history.JSONL), analyzer.EstimateMemory(1<<30, history.Text); j >= x/2 {
		t.Errorf("a GiB of JSON Lines is estimated at %d, of text at %d: JSON Lines takes twice the bytes", j, x)
	}
	_, err = check(analyzer.Options{MaxMemory: 1 << 20})
	if !errors.As(err, &me) || me.Estimated || me.Need <= 1<<20 || me.Source != "Options.MaxMemory" {
		t.Fatalf("no size hint, bound of 1 MiB: %v (%+v)", err, me)
	}
	// A bound a little above the memory in use now: stopped part way.
	big, st, err := histgen.Planted(400_000, histgen.NoViolation, 4)
	if err != nil {
		t.Fatal(err)
	}
	// Sampled after returning what can be returned, so resident memory
	// can only grow from here (else a later scavenge could make room).
	debug.FreeOSMemory()
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	pages, _ := strconv.ParseInt(strings.Fields(string(statm))[1], 10, 64)
	_, err = analyzer.Check(context.Background(), history.NewReader(bytes.NewReader(big), "b.hist", history.Options{}),
		analyzer.Options{MaxMemory: pages*int64(os.Getpagesize()) + 4<<20})
	// Where it stops depends on when resident memory is sampled (every 64k
	// events, and once after the last line): under the race detector or a
	// busy machine it may be the last check. What matters is that it is
	// stopped with the line reached, not killed.
	if !errors.As(err, &me) || me.Line <= 1 || me.Line > st.Events+1 || !strings.Contains(err.Error(), "(stopped at line") {
		t.Fatalf("bound 4 MiB above the memory in use: %v (%+v)", err, me)
	}
	res, err := check(analyzer.Options{SizeHint: size, MaxMemory: 1 << 40})
	if err != nil || !res.Linearizable {
		t.Fatalf("bound of 1 TiB: %v, %+v", err, res)
	}
}
