package mwcas

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/driver"
	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/record"
	"github.com/pmlin/pmlin/pmem"
)

// stalledSegment runs one segment of the harness's driver on a PMwCAS
// with variant mut, 40 operations per worker, with the progress check
// stopping a worker from access stallAt on.
func stalledSegment(t *testing.T, mut mutant, seed uint64, stallAt int64) (string, driver.SegmentResult) {
	t.Helper()
	c := driver.DefaultConfig()
	c.Threads, c.Words, c.K, c.Seed = 3, 4, 2, seed
	c.StallAccesses = 3000
	mc := Config{Words: c.Words, MaxWorkers: c.Threads, DescriptorsPerWorker: 4, MaxK: c.K}
	n, err := RegionWords(mc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pmem.NewMemory(n, pmem.Options{Emulate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := format(r, mc.withDefaults(), mut)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := record.NewRecorder(history.NewWriter(&buf))
	rec.Header()
	d, err := driver.New(c, AsTarget(m), r, rec)
	if err != nil {
		t.Fatal(err)
	}
	seg, err := d.Segment(context.Background(), []int{40, 40, 40}, driver.CrashPoint{Stall: stallAt})
	if err != nil {
		t.Fatal(err)
	}
	rec.Flush()
	return buf.String(), seg
}

// TestProgressCheck: the harness's progress check (a worker stopped for
// good inside an operation) finds the PMwCAS whose threads wait for a
// descriptor's owner instead of helping it: stuck, naming the stopped
// process and where it stopped, in most segments. The correct PMwCAS
// finishes every operation of the others in every segment. This is the
// blind spot that the mutation test found (internal/mutmwcas: help-skipped
// and the other skipped-helping mutants survived a harness without it).
func TestProgressCheck(t *testing.T) {
	const seeds = 20
	caught := 0
	for seed := range uint64(seeds) {
		stallAt := 1 + int64(seed*97%600)
		if _, seg := stalledSegment(t, mutNone, seed, stallAt); seg.Stuck != nil || seg.Blocked != nil || seg.Failed != nil || seg.Returned != 120 {
			t.Fatalf("correct, seed %d: stuck %v, blocked %v, failed %v, %d returned", seed, seg.Stuck, seg.Blocked, seg.Failed, seg.Returned)
		}
		h, seg := stalledSegment(t, mutHelpSkipped, seed, stallAt)
		s := seg.Stuck
		if s == nil {
			if seg.Blocked != nil || seg.Failed != nil || seg.Returned != 120 {
				t.Fatalf("help-skipped, seed %d: blocked %v, failed %v, %d returned", seed, seg.Blocked, seg.Failed, seg.Returned)
			}
			continue
		}
		caught++
		st, lines := s.Stalled, strings.Split(h, "\n")
		if st == nil || st.Proc == s.Proc || !strings.HasPrefix(lines[st.Line-1], fmt.Sprintf("%d inv ", st.Proc)) {
			t.Fatalf("help-skipped, seed %d: stuck %+v does not name the stopped process (%+v)", seed, s, st)
		}
		if msg := s.String(); !strings.Contains(msg, fmt.Sprintf("process %d was stopped for good inside its", st.Proc)) ||
			!strings.Contains(msg, "not lock-free") {
			t.Fatalf("help-skipped, seed %d: %s", seed, msg)
		}
	}
	// A stop that falls where the stopped worker has no descriptor
	// installed (filling it, in phase 2, in a read) blocks nobody: about
	// two in five stops fall inside one here.
	if caught < seeds/5 {
		t.Fatalf("help-skipped caught in %d of %d segments", caught, seeds)
	}
	t.Logf("help-skipped caught in %d of %d segments", caught, seeds)
}
