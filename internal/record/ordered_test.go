package record

import (
	"bytes"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/wire"
)

// stampedLogs makes logs of procs processes as the deterministic scheduler
// stamps them: one record at a time, by a random process, stamped 1, 2, 3
// and so on, each process alternating invocations (of every kind) and
// responses, with k words. The logs come cut into random chunks.
func stampedLogs(rng *rand.Rand, procs, records, k int) [][][]uint64 {
	logs := make([][]uint64, procs)
	pending := make([]int, procs)
	for t := uint64(1); t <= uint64(records); t++ {
		p := rng.IntN(procs)
		l := logs[p]
		kinds := []int{recInvRead, recInvCAS, recInvSwap}
		switch pending[p] {
		case recInvRead, recInvSwap:
			kinds = []int{recRetRead}
		case recInvCAS:
			kinds = []int{recRetOK, recRetFail, recRetFailValues}
		}
		kind := kinds[rng.IntN(len(kinds))]
		l = append(l, hd(kind, k, t))
		for range recWords(kind, k) - recHeader {
			l = append(l, uint64(rng.IntN(8))|uint64(rng.IntN(3))<<32)
		}
		logs[p] = l
		pending[p] = 0
		if wire.IsInvocation(kind) {
			pending[p] = kind
		}
	}
	chunked := make([][][]uint64, procs)
	for p, l := range logs {
		for pos := 0; pos < len(l); {
			end := pos
			for n := 1 + rng.IntN(4); n > 0 && end < len(l); n-- {
				end += recWords(recKind(l[end]), recK(l[end]))
			}
			chunked[p] = append(chunked[p], l[pos:end])
			pos = end
		}
		if len(l) == 0 && rng.IntN(2) == 0 {
			chunked[p] = append(chunked[p], nil) // an empty chunk
		}
	}
	return chunked
}

// recordsOf counts the records of logs.
func recordsOf(logs [][][]uint64) int {
	n := 0
	for _, l := range logs {
		for _, c := range l {
			for pos := 0; pos < len(c); pos += recWords(recKind(c[pos]), recK(c[pos])) {
				n++
			}
		}
	}
	return n
}

// TestOrderedMergeIsTheMerge checks that the merge of logs stamped by the
// deterministic scheduler's clock (placed by stamp: merger.ordered) writes
// the text, and counts the statistics, of the general merge (run), also
// into a Recording, and that logs stamped otherwise are merged by the
// general merge.
func TestOrderedMergeIsTheMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	// merge merges logs twice on one recorder (the second merge reuses
	// the first's order; the second's statistics count on from the first's
	// lines).
	merge := func(logs [][][]uint64, pids []int32, k int, stamped int) (string, []MergeStats) {
		t.Helper()
		var buf bytes.Buffer
		rc := NewRecorder(history.NewWriter(&buf))
		var sts []MergeStats
		for range 2 {
			st, err := rc.mergeChunks(logs, pids, k, stamped)
			if err != nil {
				t.Fatal(err)
			}
			sts = append(sts, st)
		}
		rc.Flush()
		return buf.String(), sts
	}
	for trial := range 300 {
		procs, k := 1+rng.IntN(5), 1+rng.IntN(3)
		logs := stampedLogs(rng, procs, rng.IntN(60), k)
		pids := make([]int32, procs)
		for i := range pids {
			pids[i] = int32(rng.IntN(3))
		}
		want, wantSt := merge(logs, pids, k, 0)
		got, gotSt := merge(logs, pids, k, recordsOf(logs))
		if got != want {
			t.Fatalf("trial %d: stamped merge\n%s\nwant\n%s", trial, got, want)
		}
		if !reflect.DeepEqual(gotSt, wantSt) {
			t.Fatalf("trial %d: stamped merge's statistics %+v, want %+v", trial, gotSt, wantSt)
		}
		// A Recording takes the invocations' words as the logs hold them
		// (merger.invokeWrite): the text it writes is the Writer's.
		var rec history.Recording
		rc := NewRecorder(&rec)
		for range 2 {
			if _, err := rc.mergeChunks(logs, pids, k, recordsOf(logs)); err != nil {
				t.Fatal(err)
			}
		}
		var text bytes.Buffer
		if _, err := rec.WriteTo(&text); err != nil {
			t.Fatal(err)
		}
		if text.String() != want {
			t.Fatalf("trial %d: merged into a Recording\n%s\nwant\n%s", trial, text.String(), want)
		}
		// And the stamps placed them (not the general merge).
		m := newMerger(NewRecorder(history.NewWriter(io.Discard)), pids, k, nil)
		for i, l := range logs {
			for _, c := range l {
				if err := m.add(i, c); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !m.ordered(recordsOf(logs)) {
			t.Fatalf("trial %d: stamped logs not merged by their stamps", trial)
		}
	}
	// Stamps that are not 1 to N (a gap, a repeat, a repeat and a gap, a
	// zero, the free scheduler's clock): the general merge, the same text.
	for _, logs := range [][][][]uint64{
		{{{hd(recInvRead, 1, 1), 7, hd(recRetRead, 1, 3), 0}}},
		{{{hd(recInvRead, 1, 1), 7}}, {{hd(recInvRead, 1, 1), 8}}},
		{{{hd(recInvRead, 1, 1), 7, hd(recRetRead, 1, 3), 0}}, {{hd(recInvRead, 1, 1), 8}}},
		{{{hd(recInvRead, 1, 0), 7}}},
		{{{hd(recInvRead, 1, 1e9), 7, hd(recRetRead, 1, 2e9), 0}}, {{hd(recInvRead, 1, 1e9+5), 8}}},
	} {
		pids := []int32{0, 1}[:len(logs)]
		var want, got bytes.Buffer
		wantSt, err := NewRecorder(history.NewWriter(&want)).mergeChunks(logs, pids, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		m := newMerger(NewRecorder(history.NewWriter(&got)), pids, 1, nil)
		for i, l := range logs {
			for _, c := range l {
				if err := m.add(i, c); err != nil {
					t.Fatal(err)
				}
			}
		}
		if m.ordered(recordsOf(logs)) {
			t.Fatalf("logs %v merged by their stamps", logs)
		}
		gotSt, err := NewRecorder(history.NewWriter(&got)).mergeChunks(logs, pids, 1, recordsOf(logs))
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || !reflect.DeepEqual(gotSt, wantSt) {
			t.Fatalf("logs %v: got %q %+v, want %q %+v", logs, got.String(), gotSt, want.String(), wantSt)
		}
	}
}
