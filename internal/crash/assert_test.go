package crash

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// tornTarget is a MwCAS for one worker whose second CAS to pass its comparison makes its first
// new value durable and then fails its own assertion, returning an error
// with the operation torn: a bug that only the state the failed operation
// left shows. Its data words are region words 0 .. Words-1.
func tornTarget() *target.Target {
	build := func(r *pmem.Region, c target.Config) (target.Instance, error) {
		return &tornInstance{r: r}, nil
	}
	return &target.Target{Name: "torn", Size: func(c target.Config) (uint64, error) { return c.Words, nil }, New: build, Open: build}
}

type tornInstance struct {
	r    *pmem.Region
	cass int // CAS calls so far (one worker: no sharing)
}

func (x *tornInstance) CAS(w int, words []target.Word) (bool, uint64, error) {
	s := &pmem.Steps{W: x.r.Worker(w)}
	for _, y := range words {
		if v := s.Load(y.Addr); s.Err == nil && v != y.Old {
			return false, y.Addr, s.Err
		}
	}
	x.cass++
	for i, y := range words {
		s.Store(y.Addr, y.New)
		s.Persist(y.Addr)
		if x.cass == 2 && i == 0 && s.Err == nil {
			return false, 0, errors.New("torn: assertion failed")
		}
	}
	return s.Err == nil, 0, s.Err
}

func (x *tornInstance) Read(w int, addrs, out []uint64) error {
	s := &pmem.Steps{W: x.r.Worker(w)}
	for i, a := range addrs {
		out[i] = s.Load(a)
	}
	return s.Err
}

func (x *tornInstance) Recover(int) (string, error) { return "", nil }
func (x *tornInstance) DataOffset(a uint64) uint64  { return a }

// TestAssertionJudgedByHistory: a run whose operation fails with an error
// of the target's own ends as a crash would, the region recovered and read
// back, so the history shows what the failed operation left (here a torn
// MwCAS: one new value durable, the other not), beside the corrupt
// anomaly, which says the history was judged; with corrupt ignored the
// run is still a violation.
func TestAssertionJudgedByHistory(t *testing.T) {
	c := pmwcasRun()
	c.Target, c.Crashes = tornTarget(), 0
	c.Driver.Threads, c.Driver.Words, c.Driver.K, c.Driver.Reads, c.Ops = 1, 2, 2, 0.5, 40
	var buf bytes.Buffer
	v, err := Check(context.Background(), c, history.Strict, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Anomalies) < 2 || v.Anomalies[0].Kind != Corrupt || !strings.Contains(v.Anomalies[0].Explanation, "the history up to line") {
		t.Fatalf("%+v\n%s", v.Anomalies, buf.String())
	}
	if !v.violates([]analyzer.Kind{Corrupt}) {
		t.Fatalf("with corrupt ignored, the torn cas is not a violation: %+v\n%s", v.Anomalies, buf.String())
	}
	if h := buf.String(); !strings.Contains(h, "where an operation's error stopped the run") {
		t.Fatalf("no crash after the failed operation:\n%s", h)
	}
	t.Logf("%s: %s", v.Anomalies[1].Kind, v.Anomalies[1].Explanation)
}
