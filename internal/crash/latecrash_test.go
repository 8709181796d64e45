package crash

import (
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/driver"
)

// TestLateCrashRuns: a run with --late-crash crashes its segments where a
// late write's change is not yet durable, says so in the history, renders
// the flag in its replay command, and replays byte for byte; the correct
// PMwCAS stays linearizable. The flag needs the late-write policy and
// emulated crashes.
func TestLateCrashRuns(t *testing.T) {
	late := 0
	for i := range int64(6) {
		c := pmwcasRun()
		c.Ops = 300
		c.Driver.Seed = RunSeed(5, i)
		c.Driver.Late, c.LateCrash = 0.05, 1
		if !strings.Contains(c.Flags(), "--late-crash 1") {
			t.Fatalf("the replay flags %q lose --late-crash", c.Flags())
		}
		res, h := mustRun(t, c)
		if _, h2 := mustRun(t, parseArgs(t, c.Args())); h2 != h {
			t.Fatalf("%s: the replay records another history", c.Flags())
		}
		if n := strings.Count(h, "a late crash: region word"); n != res.LateCrashes || len(res.Anomalies) > 0 {
			t.Fatalf("%s: %d late crashes said, %d counted; anomalies %+v", c.Flags(), n, res.LateCrashes, res.Anomalies)
		}
		late += res.LateCrashes
		v, err := Decide(t.Context(), res, []byte(h), 0)
		if err != nil || v.Violated() {
			t.Fatalf("%s: %v %+v", c.Flags(), err, v)
		}
	}
	if late == 0 {
		t.Fatal("no late crash in 6 runs")
	}
	c := pmwcasRun()
	c.LateCrash = 1
	if err := c.Check(); err == nil {
		t.Fatal("--late-crash without --late accepted")
	}
	c.Driver.Late, c.Driver.Sched = 0.02, driver.Free
	if err := c.Check(); err == nil {
		t.Fatal("--late-crash under the free scheduler accepted")
	}
}

// TestRareCrashRuns: a run with --rare-crash crashes some segments at a
// site it had not met, says so in the history, counts them, renders the
// flag in its replay command and replays byte for byte; the correct
// PMwCAS stays linearizable. The flag needs the deterministic scheduler
// and emulated crashes.
func TestRareCrashRuns(t *testing.T) {
	rare := 0
	for i := range int64(8) {
		c := pmwcasRun()
		c.Ops = 300
		c.Driver.Seed = RunSeed(6, i)
		c.RareCrash = true
		if !strings.Contains(c.Flags(), "--rare-crash=true") {
			t.Fatalf("the replay flags %q lose --rare-crash", c.Flags())
		}
		res, h := mustRun(t, c)
		if _, h2 := mustRun(t, parseArgs(t, c.Args())); h2 != h {
			t.Fatalf("%s: the replay records another history", c.Flags())
		}
		if n := strings.Count(h, "at a site the run had not met before"); n != res.RareCrashes || len(res.Anomalies) > 0 {
			t.Fatalf("%s: %d rare crashes said, %d counted; anomalies %+v", c.Flags(), n, res.RareCrashes, res.Anomalies)
		}
		rare += res.RareCrashes
		v, err := Decide(t.Context(), res, []byte(h), 0)
		if err != nil || v.Violated() {
			t.Fatalf("%s: %v %+v", c.Flags(), err, v)
		}
	}
	if rare == 0 {
		t.Fatal("no rare crash in 8 runs")
	}
	// The last segment, which has no crash point, may crash at a rare
	// site too: one more segment then runs what it cut off.
	extra := 0
	for i := range int64(20) {
		c := pmwcasRun()
		c.Ops, c.Crashes, c.RareCrash = 300, 1, true
		c.Driver.Seed = RunSeed(7, i)
		res, h := mustRun(t, c)
		if res.Operations != 300 || res.Crashes > 2 || len(res.Anomalies) > 0 {
			t.Fatalf("%s: %d operations, %d crashes, anomalies %+v", c.Flags(), res.Operations, res.Crashes, res.Anomalies)
		}
		if res.Crashes == 2 {
			if res.RareCrashes == 0 || !strings.Contains(h, "crash 2: ") {
				t.Fatalf("%s: 2 crashes, %d at rare sites", c.Flags(), res.RareCrashes)
			}
			extra++
		}
	}
	if extra == 0 {
		t.Fatal("no last segment crashed at a rare site in 20 runs of one crash")
	}
	c := pmwcasRun()
	c.RareCrash, c.Driver.Sched = true, driver.Free
	if err := c.Check(); err == nil {
		t.Fatal("--rare-crash under the free scheduler accepted")
	}
}
