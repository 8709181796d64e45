package crash

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/pmlin/pmlin/history"
)

// pinned are the SHA-256 sums of the histories (and the verdicts) that
// fuzz's runs recorded before the deterministic scheduler's hand-off and
// the fuzz path were made faster (issue 15; computed at c16a877 and at
// fuzz-blind 09d8bd2, the text path only; mix/9, a stalled run, since
// the mix's lone share (Mix.Lone) gives it two threads). A run is its seed: whatever
// the harness does to go faster, a seed must replay the same history, byte
// for byte, and reach the same verdict. The runs are those of a campaign
// with the default mix (shapes, stalls, recoveries under fire and sweeps
// all occur among them), of the lock-based target, of swaps and failures
// that report values, and of planted bugs that are caught. The late-write
// policy (issue 16, the mix's late share) changed the pins of the runs that
// take it, mix/2, 5, 7, 8, 10 and 11, and the pmwcas target's descriptors
// parameter, now drawn by shapes (first of its parameters), that of the
// shaped run mix/6; the other runs replay as before. The late-write
// policy's ABA holds, stale CAS and solo runs (branch pct, second pass)
// changed the pins of the late runs again, and only theirs. The late crash
// (branch s20-undo: Mix.LateCrash, every late run by default) changed the
// pins of the late runs, mix/2, 5, 7, 8, 10 and 11, and only theirs; late/2
// and late/8 are mix/2 and 8 without it (Config.LateCrash 0), pinned with
// the sums they had before: the late-write policy itself replays as before.
// Phase 2 of mwcas persisting its own write (branch s20-lcbug: a bug the
// late crash found) changed every run of the pmwcas target, and only
// those (the lock-based target's replay as before); read-single-collect
// moved from seed 5, which that schedule no longer catches, to seed 4.
var pinned = map[string]string{
	"late/2":                        "c882085b426dd73b98cec2b2d94b1a9bcd0d8ba6e8cc2e923b0242bf34dcf5ef",
	"late/8":                        "0b8757b0d53140bd434eeaac75bf14990a07b03e407a7151c67243ec45f92ebf",
	"lockmwcas/0":                   "f962b518cbfeaca4205164f3ead346d669a9ed83d6ca1308905938d6bb008fc3",
	"lockmwcas/1":                   "995644ac7e6902e0d3c6cfd9222ecc9163e38117306ff339b630401e2bcd19e0",
	"lockmwcas/2":                   "b7999c4d66e41dc9e9df13b7e71135633f0689a33e0a7b328297f95fc679d51f",
	"lockmwcas/data-unflushed":      "540397a9a5949de8f9fafdd193caf0fe1cd8cfc2da6c17b0b0c3bf763c130014",
	"lockmwcas/swaps/1":             "50c6eb2d49d6a7395db8f6116ffedf9ad934227542a9cf489ccee0a9a7e5d057",
	"lockmwcas/swaps/3":             "d0e8f440cb2d5c5ba003a592f22975f8391f7070896aa9839b50133763e78d61",
	"mix/0":                         "dce724a602aaaf94ab862dfb11903146f1c7eb2a44c73b6b042b9205a29039d5",
	"mix/1":                         "43c6c6735283c57d5b547de6c8f1001543bc62c03c0dbb91ce1596fc82774603",
	"mix/10":                        "6ac1ac2cd22d3e625dd1c89e1fa0ba84cf8321507130f3b3440f202086ddf83d",
	"mix/11":                        "b98fb6747791c29c54ff9e0bfb9d6314da453e620d8ed030bd6706f148eda305",
	"mix/2":                         "a01f7a882d3ee78b8df6720b087057311022a380e741e821448270d9e8b8c9eb",
	"mix/3":                         "9ececf059c2339802d32a53b93fad2a35424b1af78f17ff43b992e6f6dd14126",
	"mix/4":                         "64130b6bfbba29226dfcb3fc0339b8d50456ead710f61f6adad52772cdb0be09",
	"mix/5":                         "3af8dd82c10ca5f5af6b3a46cb38e825ac21cee79a06972fefd3630f3e9f8c33",
	"mix/6":                         "129806f23cb663bcb3ca908b1defbac680cde342d3fbd86f3516581c89bc450b",
	"mix/7":                         "fa7b2dbf60d161edd8bd2c427998d43ea243ddcc8b0746acd9d49d438731e04d",
	"mix/8":                         "ade726d63961cd7b563a63dcb05cc80697cd286697f18da9ff506a1c439c486a",
	"mix/9":                         "1971a9722bef1a0ab7fef4fc7747978a89af3f86dcca70623e0a4c91b57f571d",
	"pmwcas/dirty-spurious-failure": "3056cf3093fd695198b7c44f3134adc7bdfffe8b610ac0f4d2b14d25240be7b1",
	"pmwcas/read-single-collect":    "3b6e8149b0e36677e2d02dd26380f7b0e9b09c553b9ffe32c635234259854320",
	"pmwcas/recovery-wrong-way":     "3811f083835149ed114d01921340b491f67fdca6127805494bfa0885831e9d5c",
	"pmwcas/swaps/0":                "3442f47528ac137453dc60e8d855074eebbb174d5830289fda351824f01aee98",
	"pmwcas/swaps/2":                "b33ad6dac2cf49b40ee27bf662eaaad00bb20ccf67b4a13a4c68ac1911fccc0d",
}

// pinnedRuns are the runs whose histories are pinned, by name.
func pinnedRuns(t *testing.T) map[string]Config {
	runs := map[string]Config{}
	fc := FuzzConfig{Run: pmwcasRun(), Seed: 1, MaxRuns: 12, Mix: DefaultMix()}
	g := &generator{fc: fc, c: fc.Run}
	for {
		i, rc, _, ok, err := g.next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		runs[fmt.Sprintf("mix/%d", i)] = rc
		if i == 2 || i == 8 {
			rc.LateCrash = 0
			runs[fmt.Sprintf("late/%d", i)] = rc
		}
	}
	for i := range 3 {
		c := pmwcasRun()
		c.Target = testTargets[1]
		c.Driver.Seed = RunSeed(7, int64(i))
		runs[fmt.Sprintf("lockmwcas/%d", i)] = c
	}
	for i := range 4 {
		c := pmwcasRun()
		c.Target = testTargets[i%2]
		c.Driver.Swaps, c.Driver.FailValues = 0.3, i < 2
		c.Driver.Seed = RunSeed(9, int64(i))
		runs[fmt.Sprintf("%s/swaps/%d", c.Target.Name, i)] = c
	}
	for _, m := range []struct {
		target int
		mutant string
		seed   uint64
	}{{0, "recovery-wrong-way", 2}, {0, "dirty-spurious-failure", 3}, {0, "read-single-collect", 4}, {1, "data-unflushed", 4}} {
		c := pmwcasRun()
		c.Target, c.Mutant = testTargets[m.target], m.mutant
		c.Driver.Seed = m.seed
		c.Stall = 1
		runs[c.Target.Name+"/"+m.mutant] = c
	}
	return runs
}

// digest is the sum of a run's history and of what was found in it,
// recorded as text and parsed back (Check), or, recorded, kept in memory
// and read from there (checkRecording with sc, as fuzz does, sc's region
// and recording left by earlier runs; the text is then what the recording
// writes). sc nil: recorded as text.
func digest(t *testing.T, c Config, sc *scratch) string {
	var buf bytes.Buffer
	var v *Verdict
	var err error
	if sc != nil {
		sc.rec.Comment("left by an earlier run: Reset drops it")
		v, err = checkRecording(context.Background(), c, history.Strict, sc)
		if err == nil {
			_, err = sc.rec.WriteTo(&buf)
		}
	} else {
		v, err = Check(context.Background(), c, history.Strict, &buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	h.Write(buf.Bytes())
	fmt.Fprintf(h, "\n%d %d %d %d %d\n", v.Run.Operations, v.Run.Crashes, v.Run.RecoveryCrashes, v.Run.Stalls, v.Run.Accesses)
	for _, a := range v.Anomalies {
		fmt.Fprintf(h, "%s %v %v %s\n", a.Kind, a.Ops, a.Words, a.Explanation)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestHistoriesPinned(t *testing.T) {
	// One scratch for every run, as a fuzz job: each run's region is the
	// last one's renewed (pmem.Region.Renew), of another size often.
	var sc scratch
	defer sc.close()
	for name, c := range pinnedRuns(t) {
		for _, s := range []*scratch{nil, &sc} {
			recorded := s != nil
			got := digest(t, c, s)
			if want, ok := pinned[name]; !ok {
				t.Errorf("%q: %q, not pinned", name, got)
			} else if got != want {
				t.Errorf("%s (%s, in memory: %v): the history or its verdict changed: sum %s, pinned %s", name, c.Flags(), recorded, got, want)
			}
		}
	}
}
