package lin_test

// The benchmark against Porcupine: total time and peak
// memory of lin.Check and of Porcupine on Porcupine's own data and on
// generated larger register, map and queue histories, one run each, side
// by side. Each (checker, data set) runs in a child process (this test
// binary again), which reads or generates its histories, checks them, and
// reports the time of the checks and its peak resident memory (VmHWM of
// /proc/self/status: the process's whole footprint, reading included, the
// same for both). It runs only under PMLIN_LONG=1:
//
//	PMLIN_LONG=1 go test -run TestOracleBenchmark -v ./internal/lin/
//
// Porcupine gets models written for speed in its own style (comparable
// states, partitions by key, a hash), not the string models of
// oracle_porc_test.go: the comparison is with Porcupine at its best.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/lin"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

const benchEnv = "PMLIN_ORACLE_BENCH" // "<checker> <data set>" in a child

// benchSets names the data sets, in the table's order.
var benchSets = []string{"etcd", "kv-small", "kv-c50-ok", "kv-c50-bad", "register-gen", "register-unknown-gen", "map-gen", "map-unknown-gen", "queue-gen"}

// benchHistories makes the histories of a data set, and the verdicts
// expected (Porcupine's tests' for its data; nil for generated ones).
func benchHistories(t testing.TB, set string) ([]*model.History, []bool) {
	var hs []*model.History
	var want []bool
	if strings.HasPrefix(set, "etcd") || strings.HasPrefix(set, "kv") {
		for _, d := range porcupineDataSets(t) {
			ok := set == "etcd" && !d.kv || set == "kv-small" && d.kv && !strings.HasPrefix(d.name, "c50") ||
				set == "kv-"+d.name
			if !ok {
				continue
			}
			h, err := readPorcupineData(d)
			if err != nil {
				t.Fatal(err)
			}
			hs, want = append(hs, h), append(want, d.want)
		}
		return hs, want
	}
	// Generated: correct runs (no lies, no crash), large: 1% of the
	// responses `?`, or 10% with 8 processes whose operations are slow to
	// take effect (many overlapping windows: the "-unknown" sets).
	m := strings.TrimSuffix(set, "-gen")
	cfg := genConfig{minOps: 1000, maxOps: 1000, procs: 6, unknown: 0.01, late: 0.05, effect: 0.5, plain: true}
	if m2, ok := strings.CutSuffix(m, "-unknown"); ok {
		m = m2
		cfg.procs, cfg.unknown, cfg.effect = 8, 0.1, 0.2
	}
	cfg.model = m
	for i := range 4 {
		hs = append(hs, genHistory(rand.New(rand.NewPCG(uint64(i), 999)), cfg))
	}
	return hs, nil
}

// benchPorcupine is a fast Porcupine model of the data set's histories
// (one object each): register (state: the value), map (partitioned by
// key; state: the key's value), queue (state: the elements, 8 bytes
// each), kvappend (partitioned by key; state: the chunk numbers, 8 bytes
// each).
// and the conversion of a history for it.
func benchPorcupine(set string) (porcupine.Model, func(*model.History) []porcupine.Operation) {
	type in struct {
		name string
		args []model.Value
	}
	type out struct {
		unknown bool
		res     []model.Value
	}
	want := func(o out, v ...model.Value) bool { return o.unknown || slices.Equal(o.res, v) }
	byKey := func(ops []porcupine.Operation) [][]porcupine.Operation {
		m := map[model.Value][]porcupine.Operation{}
		var keys []model.Value
		for _, op := range ops {
			k := op.Input.(in).args[0]
			if _, ok := m[k]; !ok {
				keys = append(keys, k)
			}
			m[k] = append(m[k], op)
		}
		var p [][]porcupine.Operation
		for _, k := range keys {
			p = append(p, m[k])
		}
		return p
	}
	enc := func(vs []model.Value) string {
		b := make([]byte, 0, 8*len(vs))
		for _, v := range vs {
			b = binary.BigEndian.AppendUint64(b, v.N)
		}
		return string(b)
	}
	hash := func(s any) uint64 {
		switch v := s.(type) {
		case string:
			var h uint64 = 14695981039346656037
			for i := 0; i < len(v); i++ {
				h = (h ^ uint64(v[i])) * 1099511628211
			}
			return h
		case model.Value:
			return v.N*31 + uint64(v.Sym)
		}
		return 0
	}
	m := porcupine.Model{Hash: hash, Equal: func(a, b any) bool { return a == b }}
	switch set {
	case "etcd", "register-gen", "register-unknown-gen":
		init := vNil
		if set != "etcd" {
			init = model.Number(0)
		}
		m.Init = func() any { return init }
		m.Step = func(s, i, o any) (bool, any) {
			cur, op, res := s.(model.Value), i.(in), o.(out)
			switch op.name {
			case "read":
				return want(res, cur), cur
			case "write":
				return true, op.args[0]
			}
			if cur == op.args[0] {
				return want(res, vOK), op.args[1]
			}
			return want(res, vFail), cur
		}
	case "map-gen", "map-unknown-gen":
		m.Partition = byKey
		m.Init = func() any { return vNil }
		m.Step = func(s, i, o any) (bool, any) {
			cur, op, res := s.(model.Value), i.(in), o.(out)
			switch op.name {
			case "get":
				return want(res, cur), cur
			case "put":
				return want(res, cur), op.args[1]
			case "remove":
				return want(res, cur), vNil
			}
			if cur == vNil {
				return want(res, vNil), op.args[1]
			}
			return want(res, cur), cur
		}
	case "queue-gen":
		m.Init = func() any { return "" }
		m.Step = func(s, i, o any) (bool, any) {
			cur, op, res := s.(string), i.(in), o.(out)
			if op.name == "enq" {
				return want(res, vOK), cur + enc(op.args)
			}
			if cur == "" {
				return want(res, vEmpty), cur
			}
			return want(res, model.Number(binary.BigEndian.Uint64([]byte(cur[:8])))), cur[8:]
		}
	default: // kv
		m.Partition = byKey
		m.Init = func() any { return "" }
		m.Step = func(s, i, o any) (bool, any) {
			cur, op, res := s.(string), i.(in), o.(out)
			switch op.name {
			case "get":
				if res.unknown {
					return true, cur
				}
				if len(res.res) == 1 && res.res[0] == vEmpty {
					return cur == "", cur
				}
				return enc(res.res) == cur, cur
			case "put":
				return true, enc(op.args[1:])
			}
			return true, cur + enc(op.args[1:])
		}
	}
	m.DescribeOperation = func(i, o any) string { return fmt.Sprint(i, o) }
	convert := func(h *model.History) []porcupine.Operation {
		ops := make([]porcupine.Operation, len(h.Ops))
		for k := range h.Ops {
			op := &h.Ops[k]
			o, ret := out{unknown: true}, int64(math.MaxInt64)
			if op.Status == model.Returned {
				o, ret = out{res: op.Results}, int64(op.Return)
			}
			ops[k] = porcupine.Operation{ClientId: int(op.Proc), Input: in{op.Name, op.Args}, Call: int64(op.Call), Output: o, Return: ret}
		}
		return ops
	}
	return m, convert
}

// TestOracleBenchChild is the child process of TestOracleBenchmark.
func TestOracleBenchChild(t *testing.T) {
	spec := os.Getenv(benchEnv)
	if spec == "" {
		t.Skip("run by TestOracleBenchmark only")
	}
	checker, set, _ := strings.Cut(spec, " ")
	hs, _ := benchHistories(t, set)
	var verdicts []string
	var elapsed time.Duration
	switch checker {
	case "lin":
		for _, h := range hs {
			start := time.Now()
			res, err := lin.Check(context.Background(), h, lin.Options{Mode: history.Strict, Models: withKvappend})
			elapsed += time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			verdicts = append(verdicts, res.Verdict.String())
		}
	case "porcupine":
		m, convert := benchPorcupine(set)
		for _, h := range hs {
			ops := convert(h)
			start := time.Now()
			ok := porcupine.CheckOperations(m, ops)
			elapsed += time.Since(start)
			verdicts = append(verdicts, map[bool]string{true: "linearizable", false: "violation"}[ok])
		}
	}
	fmt.Printf("BENCH %d %s %s\n", elapsed.Nanoseconds(), vmHWM("/proc/self/status"), strings.Join(verdicts, ","))
}

// vmHWM is the peak resident memory (kB) a /proc status file reports,
// or "?".
func vmHWM(status string) string {
	b, _ := os.ReadFile(status)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			return f[1]
		}
	}
	return "?"
}

// TestOracleBenchmark prints the table (PMLIN_LONG=1 only).
func TestOracleBenchmark(t *testing.T) {
	if !testenv.Long() {
		t.Skipf("the benchmark against Porcupine runs under %s=1", testenv.LongEnv)
	}
	porcupineDataSets(t) // skip without the data
	timeout := 180 * time.Second
	type cell struct {
		time     time.Duration
		hwm      int64 // kB
		verdicts []string
		failed   string
	}
	run := func(checker, set string) cell {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOracleBenchChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), benchEnv+"="+checker+" "+set, "GORACE="+testenv.ChildGORACE())
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(timeout):
			// Its peak memory so far, then stop it.
			kb, _ := strconv.ParseInt(vmHWM(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)), 10, 64)
			cmd.Process.Kill()
			<-done
			return cell{failed: fmt.Sprintf("> %v (peak %d MiB when stopped)", timeout, kb/1024)}
		}
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 4 && f[0] == "BENCH" {
				ns, _ := strconv.ParseInt(f[1], 10, 64)
				kb, _ := strconv.ParseInt(f[2], 10, 64)
				return cell{time: time.Duration(ns), hwm: kb, verdicts: strings.Split(f[3], ",")}
			}
		}
		last := strings.TrimSpace(out.String())
		if i := strings.LastIndex(last, "\n"); i >= 0 {
			last = last[i+1:]
		}
		return cell{failed: fmt.Sprintf("failed (%v: %s)", err, last)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| data set | histories | ops | lin time | lin peak RSS | Porcupine time | Porcupine peak RSS | verdicts |\n|---|---|---|---|---|---|---|---|\n")
	var linTotal, porcTotal time.Duration
	for _, set := range benchSets {
		hs, want := benchHistories(t, set)
		ops := 0
		for _, h := range hs {
			ops += len(h.Ops)
		}
		l, p := run("lin", set), run("porcupine", set)
		show := func(c cell) (string, string) {
			if c.failed != "" {
				return c.failed, "-"
			}
			return c.time.Round(time.Millisecond).String(), fmt.Sprintf("%.0f MiB", float64(c.hwm)/1024)
		}
		lt, lm := show(l)
		pt, pm := show(p)
		agree := "equal"
		for i := range hs {
			var lv, pv string
			if i < len(l.verdicts) {
				lv = l.verdicts[i]
			}
			if i < len(p.verdicts) {
				pv = p.verdicts[i]
			}
			if want != nil {
				w := map[bool]string{true: "linearizable", false: "violation"}[want[i]]
				if lv != w {
					agree = fmt.Sprintf("lin differs from the asserted verdict on history %d (%s, want %s)", i, lv, w)
					t.Errorf("%s: %s", set, agree)
					break
				}
			}
			if l.failed == "" && p.failed == "" && lv != pv {
				agree = fmt.Sprintf("differ on history %d: lin %s, Porcupine %s", i, lv, pv)
				t.Errorf("%s: %s", set, agree)
				break
			}
		}
		if l.failed != "" || p.failed != "" {
			agree = "(one did not finish)"
		} else {
			linTotal += l.time
			porcTotal += p.time
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s |\n", set, len(hs), ops, lt, lm, pt, pm, agree)
	}
	fmt.Fprintf(&b, "| total of the rows both finished | | | %v | | %v | | |\n", linTotal.Round(time.Millisecond), porcTotal.Round(time.Millisecond))
	t.Logf("one run each, %d-s timeout, mode strict:\n%s", int(timeout.Seconds()), b.String())
}
