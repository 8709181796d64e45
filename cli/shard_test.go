package cli

import (
	"fmt"
	"strings"
	"testing"
)

// TestFuzzShardsAddUp: pmlin fuzz --runs M and its N shards: the shards'
// --json summaries add up to the campaign's, and each says which shard it
// is. (crash.TestShardsPartitionTheCampaign checks that the runs are the
// very same.)
func TestFuzzShardsAddUp(t *testing.T) {
	args := []string{"fuzz", "--runs", "7", "--ops", "100", "--json", "--seed", "9", "--out", t.TempDir()}
	summary := func(extra ...string) fuzzJSON {
		t.Helper()
		code, out, errs := pmlin(t, "", append(args, extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", extra, code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var s fuzzJSON
		if err := jsonUnmarshal(lines[len(lines)-1], &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	whole := summary()
	if whole.Shard != "" || whole.Runs != 7 {
		t.Fatalf("%+v", whole)
	}
	var sum fuzzJSON
	for i := range 3 {
		s := summary("--shard", fmt.Sprintf("%d/3", i))
		if s.Shard != fmt.Sprintf("%d/3", i) || s.Seed != whole.Seed {
			t.Fatalf("%+v", s)
		}
		sum.Runs += s.Runs
		sum.Operations += s.Operations
		sum.Crashes += s.Crashes
		sum.Violations += s.Violations
	}
	if sum.Runs != whole.Runs || sum.Operations != whole.Operations || sum.Crashes != whole.Crashes || sum.Violations != 0 {
		t.Fatalf("shards add up to %+v, the campaign is %+v", sum, whole)
	}
	for _, bad := range []string{"3/3", "-1/3", "1", "a/b", "0/0", "1/2/3"} {
		code, _, errs := pmlin(t, "", "fuzz", "--runs", "1", "--shard", bad)
		if code != 2 || !strings.Contains(errs, "expected I/N") {
			t.Errorf("--shard %s: exit %d, %s", bad, code, errs)
		}
	}
}
