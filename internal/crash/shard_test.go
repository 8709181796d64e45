package crash

import (
	"context"
	"slices"
	"testing"

	"github.com/pmlin/pmlin/pmem"
)

// planned is what identifies a run of a campaign: its index and what it
// runs.
type planned struct {
	i       int64
	seed    uint64
	crashAt int64
	policy  string
	flags   string // everything else, what the mix drew included
}

// plan lists the runs a campaign's generator hands out, in order.
func plan(t *testing.T, fc FuzzConfig) []planned {
	t.Helper()
	g := &generator{fc: fc, c: fc.Run}
	var out []planned
	for {
		i, rc, _, ok, err := g.next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, planned{i, rc.Driver.Seed, rc.CrashAt, PolicyNames(rc.Policies), rc.Flags()})
	}
}

// TestShardsPartitionTheCampaign: with --runs M, the runs of shards 0..N-1
// are, between them, exactly the single campaign's M runs (same index,
// seed, crash point and policy), each in one shard only; each shard's runs
// are the indexes i with i mod N = I. Random and systematic campaigns.
func TestShardsPartitionTheCampaign(t *testing.T) {
	systematic := config(2, 3, 2, 0)
	systematic.Ops, systematic.Policies = 4, []pmem.Policy{pmem.PolicyMin, pmem.PolicyRandom}
	for _, tc := range []struct {
		name string
		fc   FuzzConfig
	}{
		{"random", FuzzConfig{Run: pmwcasRun(), Seed: 7, MaxRuns: 103, Mix: DefaultMix()}},
		{"systematic", FuzzConfig{Run: systematic, Seed: 3, MaxRuns: 157, Systematic: true}},
	} {
		whole := plan(t, tc.fc)
		if int64(len(whole)) != tc.fc.MaxRuns {
			t.Fatalf("%s: the campaign plans %d runs, not %d", tc.name, len(whole), tc.fc.MaxRuns)
		}
		if tc.name == "systematic" && whole[0].seed == whole[len(whole)-1].seed {
			t.Fatalf("the systematic campaign should span several seeds: %v", whole)
		}
		for _, n := range []int64{1, 2, 5, 8, 200} {
			var union []planned
			for s := range n {
				fc := tc.fc
				fc.Shard, fc.Shards = s, n
				part := plan(t, fc)
				for _, p := range part {
					if p.i%n != s {
						t.Fatalf("%s: shard %d/%d runs index %d", tc.name, s, n, p.i)
					}
				}
				union = append(union, part...)
			}
			slices.SortFunc(union, func(a, b planned) int { return int(a.i - b.i) })
			if !slices.Equal(union, whole) {
				t.Fatalf("%s, %d shards: the union of the shards' runs differs from the campaign's:\n%v\n%v", tc.name, n, union, whole)
			}
		}
	}
}

// TestShardSummariesAddUp runs a campaign and its three shards: their
// totals add up to the campaign's.
func TestShardSummariesAddUp(t *testing.T) {
	run := pmwcasRun()
	run.Ops = 100
	fc := FuzzConfig{Run: run, Seed: 11, MaxRuns: 10, Jobs: 2, Mix: DefaultMix()}
	whole, f, err := Fuzz(context.Background(), fc)
	if err != nil || f != nil {
		t.Fatal(err, f)
	}
	var sum FuzzStats
	for s := range int64(3) {
		fc.Shard, fc.Shards = s, 3
		st, f, err := Fuzz(context.Background(), fc)
		if err != nil || f != nil {
			t.Fatal(err, f)
		}
		if want := (10 - s + 2) / 3; st.Runs != want {
			t.Fatalf("shard %d/3 made %d runs, want %d", s, st.Runs, want)
		}
		sum.Runs += st.Runs
		sum.Operations += st.Operations
		sum.Crashes += st.Crashes
		sum.Accesses += st.Accesses
		sum.Mix.Shaped += st.Mix.Shaped
		sum.Mix.Stalls += st.Mix.Stalls
		sum.Mix.RecoveryCrashes += st.Mix.RecoveryCrashes
	}
	// Accesses depend on each run's seed: they add up only if the shards
	// ran the campaign's very runs.
	if sum.Runs != whole.Runs || sum.Operations != whole.Operations || sum.Crashes != whole.Crashes || sum.Accesses != whole.Accesses ||
		sum.Mix.Shaped != whole.Mix.Shaped || sum.Mix.Stalls != whole.Mix.Stalls || sum.Mix.RecoveryCrashes != whole.Mix.RecoveryCrashes {
		t.Fatalf("shards %+v, campaign %+v", sum, whole)
	}
}

func TestShardRejected(t *testing.T) {
	for _, s := range [][2]int64{{1, 1}, {-1, 2}, {2, 2}, {0, -1}} {
		_, _, err := Fuzz(context.Background(), FuzzConfig{Run: pmwcasRun(), MaxRuns: 1, Shard: s[0], Shards: s[1]})
		if err == nil {
			t.Errorf("shard %d/%d accepted", s[0], s[1])
		}
	}
}
