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
var pinned = map[string]string{
	"late/2":                        "df2ab8609cb808ac09ceaa832224ad989a391aba0e40de7da033d9d79a866948",
	"late/8":                        "a481dd3d42d1f615c16a26a204859c489852998fcf27f6088da3d7193c7c1899",
	"lockmwcas/0":                   "f962b518cbfeaca4205164f3ead346d669a9ed83d6ca1308905938d6bb008fc3",
	"lockmwcas/1":                   "995644ac7e6902e0d3c6cfd9222ecc9163e38117306ff339b630401e2bcd19e0",
	"lockmwcas/2":                   "b7999c4d66e41dc9e9df13b7e71135633f0689a33e0a7b328297f95fc679d51f",
	"lockmwcas/data-unflushed":      "540397a9a5949de8f9fafdd193caf0fe1cd8cfc2da6c17b0b0c3bf763c130014",
	"lockmwcas/swaps/1":             "50c6eb2d49d6a7395db8f6116ffedf9ad934227542a9cf489ccee0a9a7e5d057",
	"lockmwcas/swaps/3":             "d0e8f440cb2d5c5ba003a592f22975f8391f7070896aa9839b50133763e78d61",
	"mix/0":                         "e6a801e842c9e1120f0c53358a6a27b181491a93f855af7f2c840f6a06de90dc",
	"mix/1":                         "171361b7b2f77b7ae03765e22b97f3a7fb070d9d8b4a2cb6967862785f29b0a4",
	"mix/10":                        "d5890451631f5ac4df29ae4637781883f0f85212a4af78a92848782b56099a78",
	"mix/11":                        "3e38d8c5ce279c1b6c82173ba4aa204ff57d83205a4057911a8799a95282f31f",
	"mix/2":                         "a874092ae8b5ff764a9bb6de3ec346cb34e2af91d1f7c4204431687187a27d9b",
	"mix/3":                         "1c5174d4b8ccc880a03bfaaa1c1ed00340f4042bda94d20642e1ad6ae18f1956",
	"mix/4":                         "cc8c26cac2230f713777f12ad6242faae283f6e12281f018cbfd775c126a79d4",
	"mix/5":                         "253a446868a9fd8b39b87954f50cbb61dab24426814029d447a2ac77c42e145f",
	"mix/6":                         "87c74a7d0a79802d15dfd44e0a654f719a72cfffa14e541e00d27b27fe6f1a93",
	"mix/7":                         "423a9a14c503c72fbda48f4bb4fc2fd524f42954be26eebe5129fa1887b0d02a",
	"mix/8":                         "6f7b2ce253780e91ce8ecfe769e8cddee62b588559c7e40afd08a1fee2f21967",
	"mix/9":                         "223bd3f4361f1b27ad3119a80ab71226738a7d8e1f624ea7bec812063953627c",
	"pmwcas/dirty-spurious-failure": "5f65a3d279d89beb2d9934aac5dde852527c4640b4be08acad1c8418e1d10785",
	"pmwcas/read-single-collect":    "5607cb15ddeb95135f843871419da217bd43f5fbda93f1f990cab9586e86fa83",
	"pmwcas/recovery-wrong-way":     "e3efd50e424f92478d3f92d60b26b0277acae4caad5d72361871d841db3d4c44",
	"pmwcas/swaps/0":                "cfc5b8b812192d088c5830302fb42ff80e46de25869cf0d9d4b4c887cee4fac1",
	"pmwcas/swaps/2":                "0689a43d075d46723527ba214e69ae6f05d78a8f8fc70659d38aa30814f9a6cb",
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
	}{{0, "recovery-wrong-way", 2}, {0, "dirty-spurious-failure", 3}, {0, "read-single-collect", 5}, {1, "data-unflushed", 4}} {
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
