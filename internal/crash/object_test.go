package crash

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// casMap is a map of model map, lock-free: key k's value lives in region
// word k as value+1 (0: no value), each operation one CAS loop on it, and
// every write and every read persists the word before returning (a get
// that returned a value a crash can still lose would be a violation).
// Its planted bugs: "put-unpersisted" (put returns before it persists),
// "state-writes" (State clears a word while it reads it), "state-unsorted"
// (State lists its keys in descending order).
type casMap struct {
	r      *pmem.Region
	keys   uint64
	mutant string
	mu     sync.Mutex // "go-mutex": operations wait in Go for each other
}

func casMapTarget() *target.Target {
	build := func(r *pmem.Region, c target.Config) (target.Object, error) {
		return &casMap{r: r, keys: c.Keys, mutant: c.Mutant}, nil
	}
	return &target.Target{Name: "casmap", Model: "map",
		Mutants: []target.Mutant{{Name: "put-unpersisted"}, {Name: "state-writes"}, {Name: "state-unsorted"}, {Name: "go-mutex"}},
		Size:    func(c target.Config) (uint64, error) { return max(c.Keys, 1), nil }, NewObject: build, OpenObject: build}
}

func (m *casMap) Do(w int, name string, args, res []model.Value) ([]model.Value, error) {
	if m.mutant == "go-mutex" {
		m.mu.Lock()
		defer m.mu.Unlock()
	}
	s := pmem.Steps{W: m.r.Worker(w)}
	k := args[0].N
	for s.Err == nil {
		old := s.Load(k)
		nw := old
		switch name {
		case "put":
			nw = args[1].N + 1
		case "remove":
			nw = 0
		case "putifabsent":
			if old == 0 {
				nw = args[1].N + 1
			}
		}
		if nw != old && !s.CAS(k, old, nw) {
			continue
		}
		if name != "put" || m.mutant != "put-unpersisted" {
			s.Persist(k)
		}
		if old == 0 {
			return append(res, model.Sym(model.Nil)), s.Err
		}
		return append(res, model.Number(old-1)), s.Err
	}
	return res, s.Err
}

func (m *casMap) Recover(w int) (string, error) { return "", nil }

func (m *casMap) State(w int, res []model.Value) ([]model.Value, error) {
	s := pmem.Steps{W: m.r.Worker(w)}
	for k := range m.keys {
		if m.mutant == "state-unsorted" {
			k = m.keys - 1 - k
		}
		if v := s.Load(k); v != 0 {
			res = append(res, model.Number(k), model.Number(v-1))
			if m.mutant == "state-writes" {
				s.Store(k, v)
				s.Store(k, 0)
			}
		}
	}
	return res, s.Err
}

func objectConfig(tgt *target.Target, mutant string, seed uint64) Config {
	c := DefaultConfig()
	c.Target, c.Mutant, c.Ops, c.Keys = tgt, mutant, 120, 3
	c.Driver.Seed = seed
	return c
}

// TestObjectMapClean: the correct map is linearizable in every mode over
// some seeds, under both schedulers, and its history reads back its state
// as a get of every key after each recovery.
func TestObjectMapClean(t *testing.T) {
	for _, mode := range []history.Mode{history.Strict, history.Durable} {
		for seed := uint64(1); seed <= 6; seed++ {
			c := objectConfig(casMapTarget(), "", seed)
			if seed%2 == 0 {
				c.Driver.Sched = driver.Free
			}
			var buf bytes.Buffer
			v, err := Check(context.Background(), c, mode, &buf)
			if err != nil {
				t.Fatal(err)
			}
			if v.Violated() || v.Undecided != nil {
				t.Fatalf("seed %d, %v: %v %v\n%s", seed, mode, v.Anomalies, v.Undecided, buf.String())
			}
			if seed == 1 && mode == history.Strict {
				h := buf.String()
				for _, want := range []string{"pmlin-history v2\nobject casmap map\n", "crash\n", "inv casmap get 0\n", "inv casmap get 2\n"} {
					if !strings.Contains(h, want) {
						t.Errorf("the history has no %q:\n%s", want, h)
					}
				}
				if strings.Contains(h, "get 3\n") {
					t.Errorf("the state is read back beyond the keys:\n%s", h)
				}
			}
		}
	}
}

// TestObjectMapPlanted: a put that returns before it persists loses its
// value in a crash: found, as a nonlinearizable history of the map.
func TestObjectMapPlanted(t *testing.T) {
	found := false
	for seed := uint64(1); seed <= 30 && !found; seed++ {
		c := objectConfig(casMapTarget(), "put-unpersisted", seed)
		c.Policies = []pmem.Policy{pmem.PolicyMin}
		var buf bytes.Buffer
		v, err := Check(context.Background(), c, history.Strict, &buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range v.Anomalies {
			if a.Kind == NotLinearizable && strings.Contains(a.Explanation, "object casmap (map)") {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("30 runs of put-unpersisted under the min policy found nothing")
	}
}

// TestObjectStateChecked: a State that writes, or that lists its keys out
// of order, is a finding of the run (corrupt), not a verdict on its
// history.
func TestObjectStateChecked(t *testing.T) {
	for mutant, want := range map[string]string{
		"state-writes":   "the target's State changed region word",
		"state-unsorted": "not ascending",
	} {
		c := objectConfig(casMapTarget(), mutant, 1)
		var buf bytes.Buffer
		res, err := Run(context.Background(), c, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Anomalies) != 1 || res.Anomalies[0].Kind != Corrupt || !strings.Contains(res.Anomalies[0].Explanation, want) {
			t.Errorf("%s: anomalies %v, want one corrupt saying %q", mutant, res.Anomalies, want)
		}
	}
}

// TestObjectReplay: the deterministic scheduler records a data
// structure's history byte for byte again from its flags.
func TestObjectReplay(t *testing.T) {
	c := objectConfig(casMapTarget(), "", 7)
	var a, b bytes.Buffer
	if _, err := Run(context.Background(), c, &a); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), c, &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) || a.Len() == 0 {
		t.Fatal("two runs of one configuration recorded different histories")
	}
	if got, want := c.Flags(), fmt.Sprintf("--target casmap --threads 4 --ops 120 --keys 3 --crashes 6 --policy mix --recovery-crash 0.1 --sched deterministic --seed 7"); got != want {
		t.Errorf("flags %q, want %q", got, want)
	}
}

// TestObjectFuzzMix: a campaign on the lock-free map takes the whole mix
// (shapes of threads, operations and keys; stopped threads; late writes
// and late crashes; recoveries under fire) and finds nothing; the mix's
// summary speaks of a data structure's shapes.
func TestObjectFuzzMix(t *testing.T) {
	c := objectConfig(casMapTarget(), "", 1)
	fc := FuzzConfig{Run: c, Seed: 3, Mode: history.Strict, MaxRuns: 40, Jobs: 1, Mix: DefaultMix()}
	st, found, err := Fuzz(context.Background(), fc)
	if err != nil {
		t.Fatal(err)
	}
	if found != nil {
		t.Fatalf("a violation: %v", found.Verdict.Anomalies)
	}
	m := st.Mix
	if st.Runs != 40 || st.Operations < 40*60 || st.Crashes == 0 || m.Shaped == 0 || m.Stalled == 0 || m.Late == 0 || m.Fire == 0 {
		t.Fatalf("runs %d, mix %+v: some part of the mix never drawn", st.Runs, m)
	}
	if s := m.String(st.Runs); !strings.Contains(s, "threads ") || !strings.Contains(s, "keys ") || strings.Contains(s, "words") {
		t.Errorf("mix summary %q", s)
	}
}

// TestObjectBlocked: a data structure that waits in Go (a sync.Mutex)
// under the deterministic scheduler is reported blocked, the report
// naming its operation as the history writes it.
func TestObjectBlocked(t *testing.T) {
	c := objectConfig(casMapTarget(), "go-mutex", 1)
	c.Driver.StuckAfter = 100 * time.Millisecond
	c.Driver.Stick = 0
	var buf bytes.Buffer
	res, err := Run(context.Background(), c, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Anomalies) != 1 || res.Anomalies[0].Kind != Blocked ||
		!regexp.MustCompile(`process \d's (put|get|remove|putifabsent) \d`).MatchString(res.Anomalies[0].Explanation) {
		t.Fatalf("anomalies %v, want one blocked naming a map operation", res.Anomalies)
	}
}

// TestObjectSystematic: the systematic sweep (a crash at each access in
// turn, under each policy) drives a data structure too: the clean map
// passes it, the map whose put does not persist fails it.
func TestObjectSystematic(t *testing.T) {
	for _, mutant := range []string{"", "put-unpersisted"} {
		c := objectConfig(casMapTarget(), mutant, 1)
		c.Ops, c.Driver.Threads = 6, 2
		fc := FuzzConfig{Run: c, Seed: 1, Mode: history.Strict, MaxRuns: 400, Jobs: 1, Systematic: true}
		st, found, err := Fuzz(context.Background(), fc)
		if err != nil {
			t.Fatal(err)
		}
		if (found != nil) != (mutant != "") || st.Runs == 0 {
			t.Errorf("mutant %q: %d runs, finding %v", mutant, st.Runs, found != nil)
		}
	}
}

// cancelInState is a map whose State cancels the run's context and then
// goes on for a while before it returns its state: the harness abandons
// the call at the cancellation, and must not read the state the
// abandoned call still writes (under -race, a data race otherwise).
type cancelInState struct {
	*casMap
	cancel context.CancelFunc
}

func (m cancelInState) State(w int, res []model.Value) ([]model.Value, error) {
	m.cancel()
	time.Sleep(50 * time.Millisecond)
	return m.casMap.State(w, res)
}

// TestObjectStateAbandoned: a run cancelled during a State call returns
// without waiting for it, and without a data race on the state it reads.
func TestObjectStateAbandoned(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tgt := casMapTarget()
	build := tgt.NewObject
	wrap := func(r *pmem.Region, c target.Config) (target.Object, error) {
		obj, err := build(r, c)
		if err != nil {
			return nil, err
		}
		return cancelInState{obj.(*casMap), cancel}, nil
	}
	tgt.NewObject, tgt.OpenObject = wrap, wrap
	c := objectConfig(tgt, "", 1)
	var buf bytes.Buffer
	res, err := Run(ctx, c, &buf)
	if err != nil || !res.Canceled {
		t.Fatalf("a run cancelled in State: %+v, %v", res, err)
	}
	time.Sleep(100 * time.Millisecond) // the abandoned State ends meanwhile
}
