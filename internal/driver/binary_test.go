package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/wire"
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

// recordBoth records the same segments in text and in binary.
func recordBinary(t testing.TB, c Config, quotas [][]int) (string, []SegmentResult) {
	t.Helper()
	r, m := setup(t, c, "")
	var buf bytes.Buffer
	rec := NewBinaryRecorder(history.NewBinaryWriter(&buf))
	rec.Header()
	d, err := New(c, m, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	var segs []SegmentResult
	for _, q := range quotas {
		seg, err := d.Segment(context.Background(), q, CrashPoint{})
		if err != nil {
			t.Fatal(err)
		}
		segs = append(segs, seg)
		rec.Comment(fmt.Sprint("after a segment of ", seg.Invoked))
	}
	if err := rec.Flush(); err != nil {
		t.Fatal(err)
	}
	if rec.Lines() != int64(strings.Count(toText(t, buf.Bytes()), "\n")) {
		t.Fatalf("the recorder counts %d lines", rec.Lines())
	}
	return buf.String(), segs
}

// TestBinaryRecordingIsTheText: under the deterministic scheduler, a
// binary recording converted to text is the text recording, byte for
// byte, with the same statistics.
func TestBinaryRecordingIsTheText(t *testing.T) {
	plain := cfg(3, 8, 2, 7)
	mixed := cfg(3, 8, 3, 11) // swaps and failures that report values
	mixed.Reads, mixed.Swaps, mixed.FailValues = 0.3, 0.35, true
	for name, c := range map[string]Config{"cas": plain, "swaps": mixed} {
		t.Run(name, func(t *testing.T) { binaryIsText(t, c) })
	}
}

func binaryIsText(t *testing.T, c Config) {
	r, m := setup(t, c, "")
	var tb bytes.Buffer
	rec := NewRecorder(history.NewWriter(&tb))
	rec.Header()
	d, err := New(c, m, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	quotas := [][]int{{300, 200, 0}, {100, 100, 100}}
	var want []SegmentResult
	for _, q := range quotas {
		seg, err := d.Segment(context.Background(), q, CrashPoint{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, seg)
		rec.Comment(fmt.Sprint("after a segment of ", seg.Invoked))
	}
	rec.Flush()
	bin, got := recordBinary(t, c, quotas)
	if txt := toText(t, []byte(bin)); txt != tb.String() {
		t.Fatalf("binary as text:\n%s\ntext:\n%s", txt, tb.String())
	}
	if c.Swaps > 0 && (!strings.Contains(tb.String(), "inv swap") || !regexp.MustCompile(`ret fail \d+ \d+`).MatchString(tb.String())) {
		t.Fatalf("no swap or no failure that reports values recorded:\n%s", tb.String())
	}
	for i := range want {
		if fmt.Sprint(want[i].MergeStats) != fmt.Sprint(got[i].MergeStats) {
			t.Fatalf("segment %d: text %+v, binary %+v", i, want[i].MergeStats, got[i].MergeStats)
		}
	}
}

// TestBinaryFreeRecording records enough under the free scheduler for the
// workers to hand chunks to the dumper while they run, and checks the
// history (read back, linearizable) and the statistics against it.
func TestBinaryFreeRecording(t *testing.T) {
	c := cfg(4, 64, 3, 3)
	c.Sched = Free
	c.Reads, c.Swaps, c.FailValues = 0.4, 0.2, true
	ops := 20_000
	if testing.Short() {
		ops = 5_000
	}
	bin, segs := recordBinary(t, c, [][]int{{ops, ops, ops, ops / 2}, {ops / 4, 0, ops / 4, ops / 4}})
	txt := toText(t, []byte(bin))
	if res := check(t, txt); !res.Linearizable {
		t.Fatalf("correct PMwCAS not linearizable: %+v", res.Anomalies)
	}
	// The statistics, from the text: per segment (between comments), the
	// counts, each process's last invocation's line and largest tag.
	lines := strings.Split(strings.TrimSuffix(txt, "\n"), "\n")
	seg, tally := 0, newTally()
	for i, l := range lines[1:] {
		if strings.HasPrefix(l, "#") {
			tally.compare(t, seg, segs[seg])
			seg, tally = seg+1, newTally()
			continue
		}
		tally.add(t, l, int64(i+2))
	}
	if seg != 2 {
		t.Fatalf("%d segments in the history", seg)
	}
	if !strings.Contains(txt, "inv swap") || !regexp.MustCompile(`ret fail \d+ \d+`).MatchString(txt) {
		t.Fatal("no swap or no failure that reports values recorded")
	}
}

// clockedDriver returns a driver on a fresh region with clock, writing
// its history (binary or text) to the buffer returned.
func clockedDriver(t *testing.T, c Config, clock ClockSource, binary bool) (*Driver, *Recorder, *bytes.Buffer) {
	t.Helper()
	r, m := setup(t, c, "")
	buf := new(bytes.Buffer)
	rec := NewRecorder(history.NewWriter(buf))
	if binary {
		rec = NewBinaryRecorder(history.NewBinaryWriter(buf))
	}
	rec.Header()
	d, err := New(c, m, r, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetClock(clock); err != nil {
		t.Fatal(err)
	}
	return d, rec, buf
}

// TestOneWorkerCounts: one free worker stamps with a count (ClockAuto),
// and its recordings, binary and text, are those it makes with the
// monotonic clock: its steps in the order it took them, the statistics
// the same, the history linearizable.
func TestOneWorkerCounts(t *testing.T) {
	c := cfg(1, 64, 3, 3)
	c.Sched = Free
	c.Reads, c.Swaps, c.FailValues = 0.4, 0.2, true
	ops := 30_000 // more than a dumper's chunk of records
	if testing.Short() {
		ops = 5_000
	}
	var texts []string
	var stats [][]SegmentResult
	for _, clock := range []ClockSource{ClockAuto, ClockMonotonic} {
		for _, binary := range []bool{true, false} {
			d, rec, buf := clockedDriver(t, c, clock, binary)
			if want := map[ClockSource]ClockSource{ClockAuto: ClockCount}[clock]; want != 0 && d.Clock() != want {
				t.Fatalf("one worker's auto clock is %v", d.Clock())
			}
			var segs []SegmentResult
			for _, q := range []int{ops, ops / 3} {
				seg, err := d.Segment(context.Background(), []int{q}, CrashPoint{})
				if err != nil || seg.Stuck != nil || seg.Failed != nil {
					t.Fatalf("%v %+v", err, seg)
				}
				segs = append(segs, seg)
				rec.Comment("segment")
			}
			if err := rec.Flush(); err != nil {
				t.Fatal(err)
			}
			txt := buf.String()
			if binary {
				txt = toText(t, buf.Bytes())
			}
			texts, stats = append(texts, txt), append(stats, segs)
		}
	}
	for i := range texts[1:] {
		if texts[i+1] != texts[0] {
			t.Fatalf("recording %d differs from the first (count, binary)", i+1)
		}
		for s := range stats[0] {
			a, b := stats[0][s], stats[i+1][s]
			if a.Invoked != b.Invoked || a.LastInv[0] != b.LastInv[0] || a.MaxTag[0] != b.MaxTag[0] || a.Pending[0] != b.Pending[0] {
				t.Fatalf("segment %d: recording %d's statistics %+v, the first's %+v", s, i+1, b.MergeStats, a.MergeStats)
			}
		}
	}
	if res := check(t, texts[0]); !res.Linearizable {
		t.Fatalf("correct PMwCAS not linearizable: %+v", res.Anomalies)
	}
}

// tally is what a segment's text says of it, to compare with the
// statistics the recording computed without a merge.
type tally struct {
	invoked, swaps int64
	lastInv        map[int32]int64
	maxTag         map[int32]uint64
}

func newTally() *tally { return &tally{lastInv: map[int32]int64{}, maxTag: map[int32]uint64{}} }

// add counts the event line l, the history's line number line.
func (y *tally) add(t *testing.T, l string, line int64) {
	f := strings.Fields(l)
	if len(f) < 3 || f[1] != "inv" {
		return
	}
	p64, err := strconv.ParseInt(f[0], 10, 32)
	if err != nil {
		t.Fatalf("line %d: %q", line, l)
	}
	p := int32(p64)
	y.lastInv[p], y.invoked = line, y.invoked+1
	if f[2] == "swap" {
		y.swaps++
	}
	for _, w := range f[3:] {
		parts := strings.Split(w, ":")
		v, err := strconv.ParseUint(parts[len(parts)-1], 0, 64)
		if err != nil {
			t.Fatalf("line %d: %q", line, l)
		}
		if len(parts) > 1 && v>>32 == uint64(p)+1 {
			y.maxTag[p] = max(y.maxTag[p], v&MaxTag)
		}
	}
}

func (y *tally) compare(t *testing.T, seg int, s SegmentResult) {
	t.Helper()
	if s.Invoked != y.invoked || s.Swaps != y.swaps {
		t.Fatalf("segment %d: %d invocations and %d swaps counted, %d and %d in the history", seg, s.Invoked, s.Swaps, y.invoked, y.swaps)
	}
	for w, line := range s.LastInv {
		if line != y.lastInv[int32(w)] {
			t.Fatalf("segment %d: process %d's last invocation at line %d, the history has it at %d", seg, w, line, y.lastInv[int32(w)])
		}
		if s.MaxTag[w] < y.maxTag[int32(w)] {
			t.Fatalf("segment %d: process %d's largest tag %d, the history has %d", seg, w, s.MaxTag[w], y.maxTag[int32(w)])
		}
	}
}

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

// TestRecordSizes checks the records logInvocation and logResponse write
// (their sizes are their own arithmetic) against recWords and the
// validator, and their payloads against the operations; and, written out
// here, each record's size and head word (kind in bits 0-3, k in bits
// 4-11, the timestamp from bit 12 on), up to the largest k and timestamp.
func TestRecordSizes(t *testing.T) {
	const poison = 0xdeadbeefdeadbeef
	for _, k := range []int{1, 2, 3, 4, target.MaxK} {
		// The records are stored unchecked (recPut): the words past them
		// must stay as they were.
		l := wlog{buf: make([]uint64, 2*firstChunkWords)}
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
		ops := []op{
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
			l.reserve(opWords(k)) // as the worker does
			logInvocation(&l, o, k, int64(ts0)+int64(2*i))
			logResponse(&l, o, k, int64(ts0)+int64(2*i+1))
			want += recWords(invKind(o), k)
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
		wl := make([]wlog, n)
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
	l := wlog{buf: make([]uint64, firstChunkWords)}
	l.reserve(opWords(2))
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
		if l.n != 0 || l.buf[0] != 0 {
			t.Fatal("a record was stored")
		}
	}()
	logInvocation(&l, &op{kind: history.Read, addrs: []uint64{1, 2, 3}}, 2, 1)
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
