package analyzer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/report"
)

// checkBytes runs the analyzer on in, in one mode, and renders the outcome:
// the JSON report, or the error.
func checkBytes(t *testing.T, in []byte, mode history.Mode) (*analyzer.Result, string, error) {
	t.Helper()
	r := history.NewReader(bytes.NewReader(in), "fuzz", history.Options{})
	res, err := analyzer.Check(context.Background(), r, analyzer.Options{Mode: mode})
	if err != nil {
		return nil, "error: " + err.Error(), err
	}
	var buf bytes.Buffer
	if err := report.JSON(&buf, report.NewVerdict(res)); err != nil {
		t.Fatal(err)
	}
	if err := report.Text(&buf, "fuzz", res, nil); err != nil {
		t.Fatal(err)
	}
	return res, buf.String(), nil
}

var checkSeeds = []string{
	"",
	"pmlin-history v1\ninit 0\n1 inv read 10 11\n1 ret 0 0\n1 inv cas 10:0:0x100001 11:0:0x100002\n2 inv read 10\n1 ret ok\n2 ret 0x100001\ncrash\n2 inv read 10 11\n2 ret 0x100001 0x100002\n",
	"1 inv cas 10:0:0x100001\n1 ret ok\n2 inv read 10\n2 ret 0\n",
	"2 inv read 10\n2 ret 0x100001\n1 inv cas 10:0:0x100001\n1 ret ok\n",
	"1 inv read 10\n1 ret 77\n",
	"1 inv cas 10:0:0x100001\n2 inv cas 10:0:0x200001\n1 ret ok\n2 ret ok\n",
	"1 inv cas 10:0:0x100001\n1 ret fail 10\n",
	"1 inv cas 10:0:0x100001 11:0:0x100002\n1 ret ok\n2 inv read 10 11\n2 ret 0x100001 0\n",
	"1 inv cas 10:0:0x100001\ncrash\n2 inv cas 10:0:0x200001\n2 ret fail 10\n",
	"1 inv cas 10:0:0x100001\ncrash\n1 inv read 10\n1 ret 0\n2 inv read 10\n2 ret 0x100001\n",
	"1 inv cas 10:0:0x100001\n2 inv cas 10:0x100001:0x200001\ncrash\n3 inv read 10\n3 ret 0x200001\n",
	"1 inv cas 10:0:0x100001\n1 ret ok\n3 inv cas 10:0x100001:0x300001\n3 ret fail 10\n",
	"1 inv cas 10:0:5\n1 ret ok\n2 inv cas 10:5:0\n2 ret ok\n",
	"1 inv cas 10:5:6\n1 ret ok\n2 inv cas 10:6:5\n2 ret ok\n",
	`{"p":1,"inv":"cas","words":[[10,0,5]]}` + "\n" + `{"p":1,"ret":"fail","addr":10}` + "\n",
	"1 inv swap 10:5\n1 ret 0\n2 inv swap 10:6\n2 ret 0\n",
	"1 inv swap 10:5\n1 ret 5\n",
	"1 inv swap 10:5\ncrash\n2 inv swap 10:6\ncrash\n3 inv read 10\n3 ret 6\n4 inv cas 10:5:7\n4 ret fail 10\n",
	"1 inv cas 10:0:5 11:0:6\n1 ret fail 10 0 0\n",
	"1 inv swap 10:5\n1 ret 0\n2 inv cas 10:0:6 11:0:7\n2 ret fail 10 5 0\n",
	"1 inv swap 10:5\n2 inv cas 10:0:6\n2 ret fail 10 5\n",
}

// FuzzCheck: whatever the bytes, Check must not panic, in any mode, and
// must be deterministic. On top of that, for small histories it decides, a
// verdict must agree with the rewritten history's and with the exact
// checker's.
func FuzzCheck(f *testing.F) {
	for _, s := range checkSeeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob("testdata/*/*.hist")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, mode := range history.Modes {
			res, out1, err1 := checkBytes(t, in, mode)
			_, out2, _ := checkBytes(t, in, mode)
			if out1 != out2 {
				t.Fatalf("mode %v: not deterministic:\n%s\n---\n%s", mode, out1, out2)
			}
			if err1 != nil {
				var he *history.Error
				var ae *analyzer.AssumptionError
				var ue *analyzer.UndecidedError
				if !errors.As(err1, &he) && !errors.As(err1, &ae) && !errors.As(err1, &ue) {
					t.Fatalf("mode %v: error of type %T: %v", mode, err1, err1)
				}
				continue
			}
			if res.Linearizable != (len(res.Anomalies) == 0) || (res.Linearizable && res.Omitted != 0) {
				t.Fatalf("mode %v: linearizable %v with %d anomalies (%d omitted)", mode, res.Linearizable, len(res.Anomalies), res.Omitted)
			}
			if res.Mode != mode || res.Vertices != res.Operations-res.Dropped+1 {
				t.Fatalf("mode %v: inconsistent counts %+v", mode, res)
			}
			for _, a := range res.Anomalies {
				if len(a.Ops) == 0 || a.Explanation == "" {
					t.Fatalf("mode %v: empty anomaly %+v", mode, a)
				}
			}
			h, err := history.ReadAll(bytes.NewReader(in), "fuzz")
			if err != nil {
				t.Fatalf("Check accepts what ReadAll rejects: %v", err)
			}
			// The same history, rewritten by the Writer: same verdict.
			res2, err := analyzer.CheckHistory(context.Background(), h, analyzer.Options{Mode: mode})
			if err != nil {
				t.Fatalf("mode %v: rewritten history: %v", mode, err)
			}
			if res2.Linearizable != res.Linearizable || !slices.Equal(kinds(res), kinds(res2)) {
				t.Fatalf("mode %v: rewriting changes the verdict: %v %v, then %v %v", mode, res.Linearizable, kinds(res), res2.Linearizable, kinds(res2))
			}
			if len(h.Ops) > 14 {
				continue
			}
			want, err := exact.Check(context.Background(), h, exact.Options{Mode: mode, MaxStates: 20000})
			if err != nil {
				continue // too large, or a form the exact checker refuses
			}
			if want.Linearizable != res.Linearizable {
				t.Fatalf("mode %v: analyzer says linearizable=%v %v, the exact checker says %v", mode, res.Linearizable, kinds(res), want.Linearizable)
			}
		}
	})
}

func kinds(r *analyzer.Result) []string {
	var k []string
	for _, a := range r.Anomalies {
		k = append(k, string(a.Kind))
	}
	slices.Sort(k)
	return k
}

// decodeHistory turns arbitrary bytes into a small well-formed history of
// reads, cas (whose failures may report values) and swaps, which write
// unique values (Assumption 1), so that the fuzzer spends
// its time on histories the analyzer decides rather than on syntax errors.
// Values read or expected are drawn from those written to the word (or its
// initial value), so that many histories are linearizable and the others
// fail in varied ways.
func decodeHistory(data []byte) string {
	const procs, words = 3, 3
	var b bytes.Buffer
	written := [words][]uint64{{0}, {0}, {0}}
	type pend struct {
		kind  byte // 0 read, 1 cas, 3 swap
		addrs []int
	}
	var pending [procs]*pend
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		c := data[0]
		data = data[1:]
		return c
	}
	pick := func(w int) uint64 { return written[w][int(next())%len(written[w])] }
	counter := uint64(0)
	for steps := 0; len(data) > 0 && steps < 24; steps++ {
		c := next()
		p := int(c>>4) % procs
		if c&0xf == 0xf {
			b.WriteString("crash\n")
			pending = [procs]*pend{}
			continue
		}
		if pd := pending[p]; pd != nil {
			pending[p] = nil
			out := &b
			values := func() {
				for _, w := range pd.addrs {
					out.WriteString(" " + hex(pick(w)))
				}
			}
			switch {
			case pd.kind != 1:
				out.WriteString(itoa(p) + " ret")
				values()
			case c&1 == 0:
				out.WriteString(itoa(p) + " ret ok")
			default:
				out.WriteString(itoa(p) + " ret fail " + itoa(10+pd.addrs[int(next())%len(pd.addrs)]))
				if c&2 != 0 {
					values()
				}
			}
			b.WriteString("\n")
			continue
		}
		k := 1 + int(next())%words
		start := int(next())
		pd := &pend{kind: c & 3 &^ 2}
		if c&3 == 3 {
			pd.kind = 3
		}
		for i := 0; i < k; i++ {
			pd.addrs = append(pd.addrs, (start+i)%words)
		}
		pending[p] = pd
		switch pd.kind {
		case 0:
			b.WriteString(itoa(p) + " inv read")
			for _, w := range pd.addrs {
				b.WriteString(" " + itoa(10+w))
			}
		default:
			b.WriteString(itoa(p) + " inv " + map[byte]string{1: "cas", 3: "swap"}[pd.kind])
			for _, w := range pd.addrs {
				counter++
				nv := uint64(p+1)<<20 | counter
				if pd.kind == 1 {
					b.WriteString(" " + itoa(10+w) + ":" + hex(pick(w)) + ":" + hex(nv))
				} else {
					b.WriteString(" " + itoa(10+w) + ":" + hex(nv))
				}
				written[w] = append(written[w], nv)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func itoa(i int) string   { return strconv.Itoa(i) }
func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// FuzzCheckStructured: on small histories the analyzer decides, its verdict
// agrees with the exact checker's, in every mode.
func FuzzCheckStructured(f *testing.F) {
	f.Add([]byte{0x01, 0, 0, 0x10, 0, 0, 0x01, 1, 0x11, 0})
	f.Add([]byte{0x01, 1, 0, 0x0f, 0x10, 1, 0, 0x10, 1, 1})
	f.Add([]byte{0x01, 0, 0, 0x11, 0, 0, 0x01, 0, 0x11, 1, 0, 0x20, 0, 0, 0x20, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		text := decodeHistory(data)
		h, err := history.ReadAll(bytes.NewReader([]byte(text)), "s")
		if err != nil {
			t.Fatalf("decoded history rejected: %v\n%s", err, text)
		}
		for _, mode := range history.Modes {
			res, _, err := checkBytes(t, []byte(text), mode)
			if err != nil {
				var he *history.Error
				if errors.As(err, &he) {
					t.Fatalf("mode %v: %v\n%s", mode, err, text)
				}
				continue // an assumption broken, or undecided
			}
			want, err := exact.Check(context.Background(), h, exact.Options{Mode: mode, MaxStates: 50000})
			if err != nil {
				continue
			}
			if want.Linearizable != res.Linearizable {
				t.Fatalf("mode %v: analyzer says linearizable=%v %v, the exact checker says %v\n%s", mode, res.Linearizable, kinds(res), want.Linearizable, text)
			}
		}
	})
}
