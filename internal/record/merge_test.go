package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/wire"
	"github.com/pmlin/pmlin/model"
	"github.com/pmlin/pmlin/target"
)

// toText converts a binary history to text, as pmlin convert does.
func toText(t testing.TB, bin []byte) string {
	t.Helper()
	var out bytes.Buffer
	if _, err := history.Convert(context.Background(), history.NewWriter(&out), bytes.NewReader(bin), "<binary>", history.Options{}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// hd is a log record's head word.
func hd(kind, k int, ts uint64) uint64 { return wire.StreamHead(kind, k, ts) }

// randomLogs makes n logs of reads of k=1 (process i reads address i) of
// up to ops operations each, the last one pending one time in pending,
// with many equal timestamps (the first from 0 to start-1).
func randomLogs(rng *rand.Rand, n, ops, pending, start int) ([][]uint64, []int32) {
	logs := make([][]uint64, n)
	procs := make([]int32, n)
	for i := range logs {
		procs[i] = int32(i)
		ts := uint64(rng.IntN(max(start, 1)))
		for range rng.IntN(ops) {
			ts += uint64(rng.IntN(2))
			logs[i] = append(logs[i], hd(recInvRead, 1, ts), uint64(i))
			if rng.IntN(pending) == 0 {
				break // pending
			}
			ts += uint64(rng.IntN(2))
			logs[i] = append(logs[i], hd(recRetRead, 1, ts), 0)
		}
	}
	return logs, procs
}

// mergeText merges whole logs of k=1 into text. The error is the merge's
// refusal of a tie (history.ErrCoarseClock): randomLogs's clock is coarse.
func mergeText(t *testing.T, logs [][]uint64, procs []int32) (*bytes.Buffer, MergeStats, error) {
	t.Helper()
	var buf bytes.Buffer
	rec := NewRecorder(history.NewWriter(&buf))
	st, err := rec.MergeLogs(logs, procs, 1)
	if errors.Is(err, history.ErrCoarseClock) {
		return nil, st, err
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	return &buf, st, nil
}

// TestLastInvLines checks the lines lastInvLines computes against the text
// merge, on random logs with many equal timestamps, whole and with the
// chunks before the last invocations let go.
func TestLastInvLines(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rw := recWords(recInvRead, 1) // every record's words (randomLogs)
	refused := 0
	for trial := range 300 {
		n := 1 + rng.IntN(4)
		logs, procs := randomLogs(rng, n, 12, 5, 0)
		buf, want, err := mergeText(t, logs, procs)
		if err != nil {
			// The binary recording writes the logs unmerged: its reader
			// refuses them as the text merge does.
			var bb bytes.Buffer
			rec := NewBinaryRecorder(history.NewBinaryWriter(&bb))
			if _, err := rec.MergeLogs(logs, procs, 1); err != nil {
				t.Fatal(err)
			}
			rec.Flush()
			if _, rerr := history.ReadAll(bytes.NewReader(bb.Bytes()), "bin"); !errors.Is(rerr, history.ErrCoarseClock) {
				t.Fatalf("trial %d: the text merge refused the logs (%v), the binary history reads with %v", trial, err, rerr)
			}
			refused++
			continue
		}
		chunked := make([][][]uint64, n)
		for i, l := range logs {
			chunked[i] = [][]uint64{l}
		}
		found := make([]invStamp, n)
		for i, l := range logs {
			found[i].ts, found[i].ok = lastInvTS([][]uint64{l})
		}
		if got := lastInvLines(0, chunked, nil, make([]int64, n), found); fmt.Sprint(got) != fmt.Sprint(want.LastInv) {
			t.Fatalf("trial %d: %v, the merge says %v\n%v\n%s", trial, got, want.LastInv, logs, buf.String())
		}
		// Let go of each log's records below the least last invocation.
		low := ^uint64(0)
		for _, l := range logs {
			if ts, ok := lastInvTS([][]uint64{l}); ok {
				low = min(low, ts)
			}
		}
		recycled := make([]int64, n)
		for i, l := range logs {
			pos := 0
			for pos < len(l) && recTS(l[pos]) < low {
				pos += rw
				recycled[i]++
			}
			chunked[i] = [][]uint64{l[pos:]}
		}
		if got := lastInvLines(0, chunked, nil, recycled, found); fmt.Sprint(got) != fmt.Sprint(want.LastInv) {
			t.Fatalf("trial %d, recycled %v: %v, the merge says %v\n%v", trial, recycled, got, want.LastInv, logs)
		}
		// With the last invocations' timestamps given, as the dumper
		// gives them (here read off the records).
		last := make([]invStamp, n)
		for i, l := range logs {
			for pos := 0; pos < len(l); pos += rw {
				if recKind(l[pos]) == recInvRead {
					last[i] = invStamp{ts: recTS(l[pos]), ok: true}
				}
			}
		}
		if got := lastInvLines(0, chunked, nil, recycled, last); fmt.Sprint(got) != fmt.Sprint(want.LastInv) {
			t.Fatalf("trial %d, recycled %v, stamps given: %v, the merge says %v\n%v", trial, recycled, got, want.LastInv, logs)
		}
		// Cut into chunks of random sizes, with what the dumper knows of
		// each (lastInvLines counts a chunk below a threshold unwalked).
		sums := make([][]chunkSum, n)
		for i := range chunked {
			rest := chunked[i][0]
			chunked[i] = nil
			for len(rest) > 0 {
				m := rw * (1 + rng.IntN(8))
				if rng.IntN(4) == 0 {
					m = 0 // an empty chunk
				}
				m = min(m, len(rest))
				c := rest[:m]
				sum := chunkSum{events: int64(m / rw)}
				if m > 0 {
					sum.lastTS = recTS(c[m-rw])
				}
				// Marks at some records (the driver marks invocations;
				// a jump to any record is as good).
				for r := range m / rw {
					if rng.IntN(3) == 0 {
						sum.marks = append(sum.marks, chunkMark{ts: recTS(c[rw*r]), pos: rw * r, recs: int64(r)})
					}
				}
				chunked[i], sums[i] = append(chunked[i], c), append(sums[i], sum)
				rest = rest[m:]
			}
		}
		if got := lastInvLines(0, chunked, sums, recycled, last); fmt.Sprint(got) != fmt.Sprint(want.LastInv) {
			t.Fatalf("trial %d, chunks %v: %v, the merge says %v\n%v", trial, chunked, got, want.LastInv, logs)
		}
		// And the binary recorder's MergeLogs says the same.
		var bb bytes.Buffer
		rec := NewBinaryRecorder(history.NewBinaryWriter(&bb))
		got, err := rec.MergeLogs(logs, procs, 1)
		if err != nil {
			t.Fatal(err)
		}
		rec.Flush()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("trial %d: binary %+v, text %+v", trial, got, want)
		}
		if txt := toText(t, bb.Bytes()); txt != buf.String() {
			t.Fatalf("trial %d: binary as text\n%s\ntext\n%s", trial, txt, buf.String())
		}
	}
	if refused == 0 || refused > 150 {
		t.Fatalf("%d of 300 trials refused by the tie rule: the test should see both", refused)
	}
}

// testOp is an operation of TestRecordSizes.
type testOp struct {
	kind                  history.OpKind
	addrs, exp, new, vals []uint64
	ok, report            bool
	fail                  uint64
}

// logOp logs o's invocation at ts and its response at ts+1, as the
// driver's workers do.
func logOp(l *Log, o *testOp, k int, ts int64) {
	switch o.kind {
	case history.Read:
		l.InvokeRead(k, ts, o.addrs)
	case history.Swap:
		l.InvokeSwap(k, ts, o.addrs, o.new)
	default:
		l.InvokeCAS(k, ts, o.addrs, o.exp, o.new)
	}
	switch {
	case o.kind != history.CAS:
		l.ReturnValues(k, ts+1, o.vals)
	case o.ok:
		l.ReturnOK(k, ts+1)
	case o.report:
		l.ReturnFailValues(k, ts+1, o.fail, o.vals)
	default:
		l.ReturnFail(k, ts+1, o.fail)
	}
}

// TestRecordSizes checks the records Log.Invoke* and Log.Return* write
// (their sizes are their own arithmetic) against recWords and the
// validator, and their payloads against the operations; and, written out
// here, each record's size and head word (kind in bits 0-3, k in bits
// 4-11, the timestamp from bit 12 on), up to the largest k and timestamp.
func TestRecordSizes(t *testing.T) {
	const poison = 0xdeadbeefdeadbeef
	for _, k := range []int{1, 2, 3, 4, target.MaxK} {
		// The records are stored unchecked (recPut): the words past them
		// must stay as they were.
		l := Log{buf: make([]uint64, 2*firstChunkWords)}
		for i := range l.buf {
			l.buf[i] = poison
		}
		want := 0
		mk := func(base uint64) []uint64 {
			s := make([]uint64, k)
			for i := range s {
				s[i] = base + uint64(i)
			}
			return s
		}
		ops := []testOp{
			{kind: history.Read, addrs: mk(10), vals: mk(20)},
			{kind: history.Swap, addrs: mk(10), new: mk(30), vals: mk(20)},
			{kind: history.CAS, addrs: mk(10), exp: mk(40), new: mk(30), ok: true},
			{kind: history.CAS, addrs: mk(10), exp: mk(40), new: mk(30), fail: 10 + uint64(k) - 1},
			{kind: history.CAS, addrs: mk(10), exp: mk(40), new: mk(30), fail: 10, report: true, vals: mk(20)},
		}
		// The stamps end at the largest a record holds.
		ts0 := uint64(wire.MaxStamp - 2*len(ops) + 1)
		for i := range ops {
			o := &ops[i]
			logOp(&l, o, k, int64(ts0)+int64(2*i))
			want += recWords(map[history.OpKind]int{history.Read: recInvRead, history.Swap: recInvSwap, history.CAS: recInvCAS}[o.kind], k)
		}
		want += recWords(recRetRead, k)*2 + recWords(recRetOK, k) + recWords(recRetFail, k) + recWords(recRetFailValues, k)
		if l.n != want {
			t.Fatalf("k=%d: %d words, want %d", k, l.n, want)
		}
		// One head word per record: read 1+k, its values 1+k; swap 1+2k,
		// values 1+k; cas 1+3k, ok 1; cas, fail 2; cas, fail with values
		// 2+k. 12+15k words for the five operations (version 1: 22+15k).
		recs := []struct{ kind, words int }{
			{1, 1 + k}, {3, 1 + k}, {6, 1 + 2*k}, {3, 1 + k}, {2, 1 + 3*k}, {4, 1}, {2, 1 + 3*k}, {5, 2}, {2, 1 + 3*k}, {7, 2 + k},
		}
		if l.n != 12+15*k {
			t.Fatalf("k=%d: %d words, want %d", k, l.n, 12+15*k)
		}
		pos := 0
		for i, r := range recs {
			ts := ts0 + uint64(i)
			if h := l.buf[pos]; h != uint64(r.kind)|uint64(k)<<4|ts<<12 {
				t.Fatalf("k=%d: record %d (at word %d) has head %#x, want kind %d, k %d, timestamp %d", k, i, pos, h, r.kind, k, ts)
			}
			pos += r.words
		}
		if ts0+9 != wire.MaxStamp || pos != l.n {
			t.Fatalf("k=%d: the records end at word %d of %d, last stamp %d", k, pos, l.n, ts0+9)
		}
		for i, w := range l.buf[l.n:] {
			if w != poison {
				t.Fatalf("k=%d: word %d past the records was written", k, l.n+i)
			}
		}
		var v validator
		if err := v.check(l.buf[:l.n], k); err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		var buf bytes.Buffer
		rc := NewRecorder(history.NewWriter(&buf))
		rc.Header()
		if _, err := rc.MergeLogs([][]uint64{l.buf[:l.n]}, []int32{0}, k); err != nil {
			t.Fatal(err)
		}
		if err := rc.Flush(); err != nil {
			t.Fatal(err)
		}
		h, err := history.ReadAll(&buf, "logged")
		if err != nil {
			t.Fatalf("k=%d: %v\n%s", k, err, buf.String())
		}
		if len(h.Ops) != len(ops) {
			t.Fatalf("k=%d: %d ops", k, len(h.Ops))
		}
		for i, o := range h.Ops {
			w := ops[i]
			if o.Kind != w.kind || !slices.Equal(o.Addrs, w.addrs) || (w.kind == history.CAS && !slices.Equal(o.Expected, w.exp)) ||
				(w.kind != history.Read && !slices.Equal(o.New, w.new)) {
				t.Errorf("k=%d op %d: %+v, logged %+v", k, i, w, o)
			}
		}
	}
}

// TestStreamedTextMerge feeds random logs, cut into chunks at random
// records and handed over in a random interleaving (some workers
// abandoned with their last records still in their logs), to a text
// recording's dumper, which merges while chunks come: the text and the
// statistics must be those of a merge of the whole logs.
func TestStreamedTextMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	refused := 0
	for trial := range 300 {
		n := 1 + rng.IntN(4)
		logs, procs := randomLogs(rng, n, 30, 8, 3)
		want, wst, werr := mergeText(t, logs, procs)

		var got bytes.Buffer
		rec := NewRecorder(history.NewWriter(&got))
		dp := newDumper(rec, n, 1)
		live := make([]bool, n)
		for i := range live {
			live[i] = true
		}
		dp.start(procs, live, false)
		wl := make([]Log, n)
		rw := recWords(recInvRead, 1) // every record's words (randomLogs)
		pos := make([]int, n)         // records handed over so far
		var lastTS []uint64 = make([]uint64, n)
		abandoned := make([]bool, n)
		for i := range abandoned {
			abandoned[i] = rng.IntN(4) == 0
		}
		for open := n; open > 0; {
			i := rng.IntN(n)
			recs := len(logs[i]) / rw
			if pos[i] > recs {
				continue // done
			}
			take := min(recs-pos[i], rng.IntN(4))
			last := pos[i]+take == recs && rng.IntN(2) == 0
			if last && abandoned[i] {
				// Its last records stay in its log: finish takes them.
				wl[i].buf, wl[i].n = logs[i][rw*pos[i]:], len(logs[i])-rw*pos[i]
				wl[i].lastTS = lastTS[i]
				if wl[i].n > 0 {
					wl[i].lastTS = recTS(logs[i][len(logs[i])-rw])
				}
				pos[i], open = recs+1, open-1
				continue
			}
			words := logs[i][rw*pos[i] : rw*(pos[i]+take)]
			if take > 0 {
				lastTS[i] = recTS(words[len(words)-rw])
			}
			dp.put(dumpChunk{w: i, words: words, lastTS: lastTS[i], last: last})
			pos[i] += take
			if last {
				pos[i], open = recs+1, open-1
			}
		}
		st, err := dp.finish(wl)
		if werr != nil || err != nil {
			// Refused, at the same line, or merged.
			if fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Fatalf("trial %d: streamed: %v; whole: %v", trial, err, werr)
			}
			refused++
			continue
		}
		rec.Flush()
		if got.String() != want.String() {
			t.Fatalf("trial %d: streamed\n%s\nwhole\n%s\nlogs %v", trial, got.String(), want.String(), logs)
		}
		if fmt.Sprint(st) != fmt.Sprint(wst) {
			t.Fatalf("trial %d: streamed %+v, whole %+v", trial, st, wst)
		}
	}
	if refused == 0 || refused > 200 {
		t.Fatalf("%d of 300 trials refused by the tie rule: the test should see both", refused)
	}
}

// lastInvTS is the timestamp of the last invocation in chunks.
func lastInvTS(chunks [][]uint64) (uint64, bool) {
	var ts uint64
	ok := false
	for _, c := range chunks {
		for pos := 0; pos < len(c); pos += recWords(recKind(c[pos]), recK(c[pos])) {
			if wire.IsInvocation(recKind(c[pos])) {
				ts, ok = recTS(c[pos]), true
			}
		}
	}
	return ts, ok
}

// TestRecordPayloadTooLong: a payload longer than k words would be stored
// past its record, unchecked: it panics instead, before any store.
func TestRecordPayloadTooLong(t *testing.T) {
	l := Log{buf: make([]uint64, firstChunkWords)}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
		if l.n != 0 || l.buf[0] != 0 {
			t.Fatal("a record was stored")
		}
	}()
	l.InvokeRead(2, 1, []uint64{1, 2, 3})
}

// TestDumperReusesLatestChunk: the dumper hands out the chunk let go of
// last (the one the caches likely still hold), keeps at most its bound,
// and makes a fresh chunk when it has none.
func TestDumperReusesLatestChunk(t *testing.T) {
	dp := newDumper(NewBinaryRecorder(history.NewBinaryWriter(io.Discard)), 1, 1)
	a, b := make([]uint64, dumpChunkWords), make([]uint64, dumpChunkWords)
	dp.reuse(a[:10])
	dp.reuse(b[:20])
	dp.reuse(make([]uint64, 5)) // too small to be a chunk: dropped
	if c := dp.chunk(); &c[0] != &b[0] || len(c) != dumpChunkWords {
		t.Fatal("the first chunk handed out is not the one let go of last, whole")
	}
	if c := dp.chunk(); &c[0] != &a[0] {
		t.Fatal("the second chunk handed out is not the one let go of first")
	}
	if c := dp.chunk(); len(c) != dumpChunkWords || &c[0] == &a[0] || &c[0] == &b[0] {
		t.Fatal("with none let go of, the chunk is not a fresh one")
	}
	for range dp.maxFree + 3 {
		dp.reuse(make([]uint64, dumpChunkWords))
	}
	if len(dp.free) != dp.maxFree {
		t.Fatalf("%d chunks kept, want at most %d", len(dp.free), dp.maxFree)
	}
}

// TestMergeCoarseClock: a response whose process invokes again at its
// timestamp goes before another process's response of that timestamp (the
// record after it in the next chunk, here); two processes that each
// respond and invoke again at one timestamp are an error of the merge.
func TestMergeCoarseClock(t *testing.T) {
	// Process 1 reads over [5, 10] and [10, 20]; process 0 writes over
	// [10, 10]: listed first, its response would come first by log index.
	l0 := [][]uint64{{hd(recInvCAS, 1, 10), 7, 0, 0x100000001, hd(recRetOK, 1, 10)}}
	l1 := [][]uint64{{hd(recInvRead, 1, 5), 7, hd(recRetRead, 1, 10), 0}, {hd(recInvRead, 1, 10), 7, hd(recRetRead, 1, 20), 0}}
	var buf bytes.Buffer
	rec := NewRecorder(history.NewWriter(&buf))
	if _, err := rec.mergeChunks([][][]uint64{l0, l1}, []int32{0, 1}, 1, 0); err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	want := "1 inv read 7\n0 inv cas 7:0:0x100000001\n1 ret 0\n1 inv read 7\n0 ret ok\n1 ret 0\n"
	if buf.String() != want {
		t.Fatalf("got\n%swant\n%s", buf.String(), want)
	}
	// Both respond and invoke again at 10.
	l0 = [][]uint64{{hd(recInvCAS, 1, 10), 7, 0, 0x100000001, hd(recRetOK, 1, 10), hd(recInvRead, 1, 10), 7, hd(recRetRead, 1, 10), 0x100000001}}
	l1 = [][]uint64{{hd(recInvRead, 1, 10), 7, hd(recRetRead, 1, 10), 0}, {hd(recInvRead, 1, 10), 7, hd(recRetRead, 1, 10), 0}}
	_, err := NewRecorder(history.NewWriter(io.Discard)).mergeChunks([][][]uint64{l0, l1}, []int32{0, 1}, 1, 0)
	if !errors.Is(err, history.ErrCoarseClock) || !strings.Contains(err.Error(), "line 5 of the history: process 1 responds and invokes its next operation at timestamp 10, as process 0 does (its response at line 3)") {
		t.Fatalf("got %v", err)
	}
}

func TestMergeOrder(t *testing.T) {
	// Process 0: inv at 5, ret at 10. Process 1: inv at 10, ret at 12.
	// Process 2: inv at 1, ret at 10. On the tie at 10 both invocations
	// and responses are possible in real time; the merge puts process 1's
	// invocation first, so no order is claimed that may not hold.
	l0 := []uint64{hd(recInvRead, 1, 5), 7, hd(recRetRead, 1, 10), 0}
	l1 := []uint64{hd(recInvCAS, 1, 10), 7, 0, 0x200000001, hd(recRetOK, 1, 12)}
	l2 := []uint64{hd(recInvRead, 1, 1), 7, hd(recRetRead, 1, 10), 0}
	var buf bytes.Buffer
	rec := NewRecorder(history.NewWriter(&buf))
	ms, err := rec.MergeLogs([][]uint64{l0, l1, l2}, []int32{0, 1, 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	want := "2 inv read 7\n0 inv read 7\n1 inv cas 7:0:0x200000001\n0 ret 0\n2 ret 0\n1 ret ok\n"
	if buf.String() != want {
		t.Fatalf("got\n%swant\n%s", buf.String(), want)
	}
	if ms.Invoked != 3 || ms.Returned != 3 || ms.LastInv[1] != 3 || ms.MaxTag[1] != 1 {
		t.Fatalf("%+v", ms)
	}
	// Swaps and failures that report values: the swap's tag counts.
	buf.Reset()
	rec = NewRecorder(history.NewWriter(&buf))
	l0 = []uint64{hd(recInvSwap, 2, 1), 7, 0x100000005, 8, 0x100000006, hd(recRetRead, 2, 3), 0, 0x200000001}
	l1 = []uint64{hd(recInvCAS, 2, 2), 7, 0, 0x200000009, 8, 0, 0x20000000a, hd(recRetFailValues, 2, 4), 7, 0x100000005, 0}
	if ms, err = rec.MergeLogs([][]uint64{l0, l1}, []int32{0, 1}, 2); err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	want = "0 inv swap 7:0x100000005 8:0x100000006\n1 inv cas 7:0:0x200000009 8:0:0x20000000a\n0 ret 0 0x200000001\n1 ret fail 7 0x100000005 0\n"
	if buf.String() != want {
		t.Fatalf("got\n%swant\n%s", buf.String(), want)
	}
	if ms.Swaps != 1 || ms.CASes != 1 || ms.MaxTag[0] != 6 || ms.MaxTag[1] != 10 {
		t.Fatalf("%+v", ms)
	}
	// A damaged log is refused.
	for _, bad := range [][]uint64{
		{hd(recInvRead, 1, 5)},                                      // cut short
		{hd(recRetOK, 1, 5)},                                        // response first
		{hd(recInvRead, 1, 5), 1, hd(recInvRead, 1, 6), 2},          // two invocations
		{hd(recInvRead, 1, 5), 1, hd(recRetRead, 1, 4), 0},          // back in time
		{hd(recInvSwap, 1, 5), 1, 9, hd(recRetOK, 1, 6)},            // a swap returns ok
		{hd(recInvRead, 1, 5), 1, hd(recRetFailValues, 1, 6), 1, 0}, // a read fails
		{hd(15, 1, 5), 5},                                           // an unknown kind
		{hd(recInvRead, 0, 5)},                                      // k 0
		{hd(recInvRead, 2, 5), 1, 2},                                // k over the driver's
	} {
		if _, err := NewRecorder(history.NewWriter(&buf)).MergeLogs([][]uint64{bad}, []int32{0}, 1); err == nil {
			t.Fatalf("log %v accepted", bad)
		}
	}
}

// TestObjectLogK: shared logs laid out for k = ObjectLogK hold an object
// operation's records wherever a k-word operation's fit.
func TestObjectLogK(t *testing.T) {
	if w := recWords(recInvOp, MaxArgs) + recWords(recRetOp, MaxResults); w != objOpWords {
		t.Fatalf("an object operation's records take %d words, objOpWords says %d", w, objOpWords)
	}
	if opWords(ObjectLogK) < objOpWords {
		t.Fatalf("opWords(%d) = %d < %d, an object operation's records", ObjectLogK, opWords(ObjectLogK), objOpWords)
	}
}

// TestObjectRecordsValidated: a damaged object record (an operation
// index beyond the workload's, a symbol the format has not) is refused
// by the merge, not written.
func TestObjectRecordsValidated(t *testing.T) {
	w := testObject{"q", []string{"enq", "deq"}}
	for _, log := range [][]uint64{
		{hd(recInvOp, 0, 1), 7},                           // operation 7 of 2
		{hd(recInvOp, 1, 1), 0, 99, 5},                    // symbol 99
		{hd(recInvOp, 0, 1), 1, hd(recRetOp, 1, 2), 3, 4}, // a symbol with a number
		{hd(recRetOp, 1, 1), 0, 5},                        // a response first
	} {
		var buf bytes.Buffer
		rec := NewRecorder(history.NewWriter(&buf))
		rec.SetObject(w)
		if _, err := rec.MergeLogs([][]uint64{log}, []int32{0}, 1); err == nil {
			t.Errorf("log %v merged: %q", log, buf.String())
		}
	}
	var buf bytes.Buffer
	rec := NewRecorder(history.NewWriter(&buf))
	rec.SetObject(w)
	ok := []uint64{hd(recInvOp, 1, 1), 0, 0, 7, hd(recRetOp, 1, 2), uint64(model.OK), 0}
	if _, err := rec.MergeLogs([][]uint64{ok}, []int32{2}, 1); err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	if buf.String() != "2 inv q enq 7\n2 ret ok\n" {
		t.Errorf("merged %q", buf.String())
	}
}

// testObject is an object workload's description (Object).
type testObject struct {
	name string
	ops  []string
}

func (o testObject) Declaration() string { return "object " + o.name + " queue" }
func (o testObject) Name() string        { return o.name }
func (o testObject) Op(i int) string     { return o.ops[i] }
func (o testObject) NumOps() int         { return len(o.ops) }
