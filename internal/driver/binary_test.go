package driver

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/internal/wire"
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
	rec := record.NewBinaryRecorder(history.NewBinaryWriter(&buf))
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
	rec := record.NewRecorder(history.NewWriter(&tb))
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
func clockedDriver(t *testing.T, c Config, clock record.ClockSource, binary bool) (*Driver, *record.Recorder, *bytes.Buffer) {
	t.Helper()
	r, m := setup(t, c, "")
	buf := new(bytes.Buffer)
	rec := record.NewRecorder(history.NewWriter(buf))
	if binary {
		rec = record.NewBinaryRecorder(history.NewBinaryWriter(buf))
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

// TestOneWorkerCounts: one free worker stamps with a count (record.ClockAuto),
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
	for _, clock := range []record.ClockSource{record.ClockAuto, record.ClockMonotonic} {
		for _, binary := range []bool{true, false} {
			d, rec, buf := clockedDriver(t, c, clock, binary)
			if want := map[record.ClockSource]record.ClockSource{record.ClockAuto: record.ClockCount}[clock]; want != 0 && d.Clock() != want {
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
