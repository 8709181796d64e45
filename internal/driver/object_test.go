package driver

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/pmem"
	"github.com/pmlin/pmlin/target"
)

// TestObjectWorkload: the draws keep to the workload: the mix's
// operations only, unique tags below 1<<target.ValueBits and never 0,
// keys below Keys; and a workload that cannot be is refused.
func TestObjectWorkload(t *testing.T) {
	w, err := NewObjectWorkload("m", "map", map[string]int{"put": 2, "get": 1}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(w.Ops, ",") != "put,get" || w.Declaration() != "object m map" {
		t.Fatalf("ops %v, declaration %q", w.Ops, w.Declaration())
	}
	seen := map[uint64]bool{}
	count := map[string]int{}
	for id := range int32(3) {
		p := newObjProc(id, w, 9)
		for range 300 {
			o, err := p.next()
			if err != nil {
				t.Fatal(err)
			}
			name := w.Ops[o.code]
			count[name]++
			if o.args[0].N >= 5 {
				t.Fatalf("key %v", o.args[0])
			}
			if name == "put" {
				v := o.args[1].N
				if v == 0 || v >= 1<<target.ValueBits || seen[v] || v>>32 != uint64(id)+1 {
					t.Fatalf("put value %#x: zero, too large, repeated or not process %d's", v, id)
				}
				seen[v] = true
			}
		}
	}
	if count["put"] < 2*count["get"]*3/4 || count["get"] == 0 {
		t.Errorf("draws %v for weights put 2, get 1", count)
	}
	if d, _ := NewObjectWorkload("q", "queue cap=8", nil, 0); d == nil || strings.Join(d.Ops, ",") != "enq,deq" || d.Declaration() != "object q queue cap=8" {
		t.Errorf("queue workload %+v", d)
	}
	for _, bad := range []struct {
		spec string
		mix  map[string]int
		keys uint64
	}{
		{"mutex", nil, 0},                      // no state to read back
		{"queue", map[string]int{"pop": 1}, 0}, // not a queue's
		{"queue", map[string]int{"enq": -1}, 0},
		{"queue", map[string]int{"enq": 0}, 0}, // nothing to draw
		{"set", nil, 0},                        // no keys
		{"set", nil, MaxKeys + 1},
	} {
		if _, err := NewObjectWorkload("o", bad.spec, bad.mix, bad.keys); err == nil {
			t.Errorf("%s %v keys %d: accepted", bad.spec, bad.mix, bad.keys)
		}
	}
}

// casCounter is a counter of model counter on region word 0, each
// operation one CAS loop, persisted.
type casCounter struct{ r *pmem.Region }

func (c casCounter) Do(w int, name string, args, res []model.Value) ([]model.Value, error) {
	s := pmem.Steps{W: c.r.Worker(w)}
	for s.Err == nil {
		old := s.Load(0)
		if name == "get" {
			return append(res, model.Number(old)), s.Err
		}
		if !s.CAS(0, old, old+args[0].N) {
			continue
		}
		s.Persist(0)
		if name == "add" {
			return append(res, model.Sym(model.OK)), s.Err
		}
		return append(res, model.Number(old)), s.Err
	}
	return res, s.Err
}

func (c casCounter) Recover(int) (string, error) { return "", nil }

func (c casCounter) State(w int, res []model.Value) ([]model.Value, error) {
	v, err := c.r.Worker(w).Load(0)
	return append(res, model.Number(v)), err
}

// TestObjectRecording: a driver of an object workload records a version
// 2 history that reads back with every operation, under both schedulers,
// and the state as the model's read.
func TestObjectRecording(t *testing.T) {
	for _, sched := range []Sched{Deterministic, Free} {
		w, err := NewObjectWorkload("c", "counter", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pmem.NewMemory(8, pmem.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		rec := record.NewRecorder(history.NewWriter(&buf))
		if err := rec.SetObject(w); err != nil {
			t.Fatal(err)
		}
		c := DefaultConfig()
		c.Sched, c.Threads = sched, 3
		d, err := NewObject(c, w, casCounter{r}, r, rec)
		if err != nil {
			t.Fatal(err)
		}
		rec.Header()
		res, err := d.Segment(context.Background(), []int{40, 40, 40}, CrashPoint{})
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		st, _ := casCounter{r}.State(0, nil)
		if _, err := RecordState(rec, 3, st); err != nil {
			t.Fatal(err)
		}
		rec.End() // nothing in version 2
		if err := rec.Flush(); err != nil {
			t.Fatal(err)
		}
		h, err := history.ReadV2(bytes.NewReader(buf.Bytes()), "rec")
		if err != nil {
			t.Fatalf("%v: %v\n%s", sched, err, buf.String())
		}
		if res.Invoked != 120 || res.Returned != 120 || len(h.Ops) != 121 || h.Objects[0].Model != "counter" {
			t.Fatalf("%v: invoked %d returned %d, %d operations read back", sched, res.Invoked, res.Returned, len(h.Ops))
		}
		last := h.Ops[len(h.Ops)-1]
		if last.Proc != 3 || last.Name != "get" || last.Results[0] != st[0] {
			t.Errorf("%v: the state is recorded as %+v", sched, last)
		}
		r.Close()
	}
}

// TestObjectState: each model's state form becomes its reads, and a form
// that is not the model's is refused.
func TestObjectState(t *testing.T) {
	n := model.Number
	for _, c := range []struct {
		spec string
		keys uint64
		st   []model.Value
		want string // the lines written, or the error's text
	}{
		{"queue", 0, []model.Value{n(5), n(6)}, "4 inv o contents\n4 ret 5 6\n"},
		{"stack", 0, nil, "4 inv o contents\n4 ret empty\n"},
		{"map", 3, []model.Value{n(0), n(9), n(2), n(8)}, "4 inv o get 0\n4 ret 9\n4 inv o get 1\n4 ret nil\n4 inv o get 2\n4 ret 8\n"},
		{"set", 2, []model.Value{n(1)}, "4 inv o contains 0\n4 ret false\n4 inv o contains 1\n4 ret true\n"},
		{"register", 0, []model.Value{model.Sym(model.Nil)}, "4 inv o read\n4 ret nil\n"},
		{"counter", 0, []model.Value{n(3)}, "4 inv o get\n4 ret 3\n"},
		{"map", 3, []model.Value{n(2), n(9), n(0), n(8)}, "not ascending"},
		{"map", 3, []model.Value{n(0)}, "not key, value pairs"},
		{"map", 3, []model.Value{n(3), n(1)}, "none of the workload's keys"},
		{"queue", 0, []model.Value{model.Sym(model.Empty)}, "is not a number"},
		{"counter", 0, []model.Value{n(1), n(2)}, "not one"},
	} {
		w, err := NewObjectWorkload("o", c.spec, nil, c.keys)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		rec := record.NewRecorder(history.NewWriter(&buf))
		rec.SetObject(w)
		_, err = RecordState(rec, 4, c.st)
		rec.Flush()
		if got := buf.String(); err == nil && got != c.want || err != nil && (!strings.Contains(err.Error(), c.want) || got != "") {
			t.Errorf("%s %v: wrote %q, error %v; want %q", c.spec, c.st, got, err, c.want)
		}
	}
}
