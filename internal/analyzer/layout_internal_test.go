package analyzer

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

// loadText loads a history given as text.
func loadText(t *testing.T, text string) *hist {
	t.Helper()
	h, err := load(context.Background(), history.NewReader(bytes.NewReader([]byte(text)), "t.hist", history.Options{}), 0, splitter{workers: 1, least: minPart}, nil, nil, LineNamer{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFarResponses checks the response lines kept apart from the 16-bit
// gaps: responses more than 65534 lines after their invocation, in an
// order other than their operations'.
func TestFarResponses(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("0 inv read 1\n1 inv read 1\n") // lines 1, 2
	line := 2
	for k := 0; k < 40000; k++ { // 80000 lines of process 2
		fmt.Fprintf(&b, "2 inv read 1\n2 ret 0\n")
		line += 2
	}
	b.WriteString("1 ret 0\n0 ret 0\n3 inv read 1\n3 ret 0\n")
	h := loadText(t, b.String())
	want := map[int32]uint32{0: uint32(line + 2), 1: uint32(line + 1), 2: 4, h.n - 1: uint32(line + 4)}
	for i, l := range want {
		if got := h.retLineOf(i); got != l {
			t.Errorf("op %d: response line %d, want %d", i, got, l)
		}
	}
	if len(h.far) != 2 {
		t.Errorf("%d far responses, want 2", len(h.far))
	}
}

// TestResponseGapBoundary: gaps of 65534 lines are kept as gaps, of
// 65535 apart.
func TestResponseGapBoundary(t *testing.T) {
	for _, gap := range []int{65533, 65534, 65535, 65536} {
		var b bytes.Buffer
		b.WriteString("0 inv read 1\n")
		for k := 1; k < gap; k++ {
			b.WriteString("#\n")
		}
		b.WriteString("0 ret 0\n")
		h := loadText(t, b.String())
		if got := h.retLineOf(0); got != uint32(gap+1) {
			t.Errorf("gap %d: response line %d, want %d", gap, got, gap+1)
		}
		if far := len(h.far) == 1; far != (gap >= gapFar) {
			t.Errorf("gap %d: kept apart %v", gap, far)
		}
	}
}

// TestManyProcesses checks the process column once it outgrows 16 bits.
func TestManyProcesses(t *testing.T) {
	var b bytes.Buffer
	const procs = 70000
	for p := 0; p < procs; p++ {
		fmt.Fprintf(&b, "%d inv read 1\n%d ret 0\n", p*3, p*3)
	}
	h := loadText(t, b.String())
	if h.proc32 == nil || h.proc16 != nil {
		t.Fatal("the process column was not widened")
	}
	for _, i := range []int32{0, 1, 65535, 65536, procs - 1} {
		if got, want := h.procIDs[h.procOf(i)], i*3; got != want {
			t.Errorf("op %d: process %d, want %d", i, got, want)
		}
	}
}

// TestListOpsCounts checks the lists of pending writes and plain failures
// against the flags, and that the counts kept while loading sized them
// exactly (a wrong count would only regrow a list: this catches it).
func TestListOpsCounts(t *testing.T) {
	h := loadText(t, `0 inv cas 1:0:5 2:0:6
1 inv swap 3:7
2 inv read 1
3 inv cas 4:9:1
3 ret fail 4
4 inv cas 5:9:1
4 ret fail 5 0
5 inv swap 6:8
5 ret 0
6 inv cas 7:0:2
6 ret ok
2 ret 5
crash
7 inv swap 8:3
8 inv cas 9:0:4
9 inv read 7
`)
	for _, c := range []struct {
		name      string
		got, want []int32
	}{
		{"pendingW", h.pendingW, []int32{0, 1, 7, 8}},
		{"pendingSwap", h.pendingSwap, []int32{1, 7}},
		{"failedCAS", h.failedCAS, []int32{3}},
	} {
		if !slices.Equal(c.got, c.want) || cap(c.got) != len(c.want) {
			t.Errorf("%s = %v (capacity %d), want %v at its capacity", c.name, c.got, cap(c.got), c.want)
		}
	}
	for i := int32(0); i < h.n; i++ {
		if returned := h.flags[i]&fReturned != 0; returned == (h.lo[i] == h.n) {
			t.Errorf("op %d: returned %v, lo %d (n %d)", i, returned, h.lo[i], h.n)
		}
	}
	if h.lo[9] != h.n {
		t.Errorf("the pending read's lo = %d, want n = %d", h.lo[9], h.n)
	}
}

// TestWriterOpIsOpOf checks writerOp, the owner of a version, against
// opOf's binary search of the operations' access ranges (independent of
// the slots), at every access of a cas or a swap, and that every resolved
// version is such an access.
func TestWriterOpIsOpOf(t *testing.T) {
	h := loadText(t, `0 inv read 1 2
1 inv cas 1:0:5 2:0:6
1 ret ok
0 ret 5 0
2 inv swap 3:7
3 inv cas 3:7:1 4:0:2
3 ret fail 4
2 ret 0
4 inv read 3 1
4 ret 7 5
`)
	byRange := func(x int32) int32 {
		for i := int32(0); i < h.n; i++ {
			if x >= int32(h.acc[i]) && x < int32(h.acc[i+1]) {
				return i
			}
		}
		return none
	}
	slots := 0
	for x := int32(0); x < int32(len(h.word)); x++ {
		if y := h.ver[x]; y >= 0 && !h.slots.has(y) {
			t.Errorf("access %d's version %d has no slot", x, y)
		}
		if h.slots.has(x) {
			slots++
			if got, want := h.writerOp(x), byRange(x); got != want || h.opOf(x) != want {
				t.Errorf("access %d: writerOp %d, opOf %d, want %d", x, got, h.opOf(x), want)
			}
		}
	}
	if slots != 5 {
		t.Errorf("%d accesses with a slot, want 5 (the cas's and the swap's)", slots)
	}
}

// TestRankIndexDense checks a pushed rankIndex's numbers, from its dense
// table while it has at most denseMax ids and from its bits beyond,
// against a count of the members before each id (non-members too: of is
// the members before it), and has against the ids pushed as members.
func TestRankIndexDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var r rankIndex
	var in []bool
	check := func(wantDense bool) {
		t.Helper()
		if (r.dense != nil) != wantDense {
			t.Fatalf("%d ids: dense table kept %v, want %v", len(in), r.dense != nil, wantDense)
		}
		before := int32(0)
		for x, m := range in {
			if got := r.of(int32(x)); got != before {
				t.Fatalf("%d ids: of(%d) = %d, want %d", len(in), x, got, before)
			}
			if r.has(int32(x)) != m {
				t.Fatalf("%d ids: has(%d) = %v, want %v", len(in), x, !m, m)
			}
			if m {
				before++
			}
		}
		if r.n != before {
			t.Fatalf("%d ids: n = %d, want %d", len(in), r.n, before)
		}
	}
	for len(in) < denseMax-3 {
		k, m := 1+rng.IntN(3), rng.IntN(2) == 0
		r.push(int32(len(in)), k, m)
		for range k {
			in = append(in, m)
		}
	}
	check(true)
	for len(in) < denseMax+200 {
		k, m := 1+rng.IntN(3), rng.IntN(2) == 0
		r.push(int32(len(in)), k, m)
		for range k {
			in = append(in, m)
		}
	}
	check(false)
}
