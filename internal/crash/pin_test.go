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
// fixed runs of fuzz record. A run is its seed: whatever the harness does
// to go faster, a seed must replay the same history, byte for byte, and
// reach the same verdict. The runs are those of a campaign with the
// default mix (shapes, stalls, late writes and late crashes, recoveries
// under fire and sweeps all occur among them), of the lock-based target,
// of swaps and failures that report values, and of planted bugs that are
// caught; late/2 and late/8 are mix/2 and mix/8 with late writes and
// without late crashes (Config.LateCrash 0). A change that means to alter
// what a run does (a new draw of the mix, a target that takes other steps)
// changes the pins of the runs it touches, and only those: the commit that
// changes a pin says why.
var pinned = map[string]string{
	"late/2":                        "908f13427a5e55fe25b3d387e941fb6409cf3893db5eda79071ed78908e9218d",
	"late/8":                        "aa145203feeb4e70b539dcfa0e049a20415a1eed0c4a3e2573cc2500debd2430",
	"lockmwcas/0":                   "6e456132cc6e3066636f69479f270fad84ad18ae562e6c7cf2be1c0a0897db9a",
	"lockmwcas/1":                   "99c37f8ca982ffb46a582271c50a83eadd49aaa314770834fd9b865b46668508",
	"lockmwcas/2":                   "26ba644f2c73409d35f5da56f7094faa0c5102cb132f9e89c16fcf1e3ef3deb9",
	"lockmwcas/data-unflushed":      "825eba33c64c7058165a16346cd968e436f7d0a5253ee0c970bddc664e11e2cb",
	"lockmwcas/swaps/1":             "50c793f7a6643338c06b209885293b34b1d9a7a194b07deba8208dfce5f44f49",
	"lockmwcas/swaps/3":             "bbfd84f88c486841ed15aafa73cd7931318627f1208de9bef52f08b863b3a21d",
	"mix/0":                         "55a425db1521d957c02bf64c4a4115c02480490a287892ce5e71d4009aabf05e",
	"mix/1":                         "100a0ba5d80485fe9924dc9cecb22dd996747712ce66b5b477963955815495a3",
	"mix/10":                        "4159a304d7acd380d16fdc8b002b85a97a1a1802c2128d1ef7dc13048c6a8a62",
	"mix/11":                        "423eaf52153a630e6f980e4c4a91fb86e432dff9ce69c1b162d3dda1be050684",
	"mix/2":                         "efcc4ed897c96550f98379c9645cc76d0d2949953fb2c955bb69076d56b8e675",
	"mix/3":                         "7f245c26f85f893c07ec8f44a76052fbc0a8b25d709fc0c7af32ebc9f6d206be",
	"mix/4":                         "0d0476bff9d4f9e7152b14d4ee849ddd6d3cebaa993a689d4387baa814513611",
	"mix/5":                         "a968be2294a7b9474802dbaa76c76f720ffd52d423d54362f43588c7f3f19c1f",
	"mix/6":                         "ce8924f29e379e638d55b489e6b4c948ccfd77ede882bae55097462df1888d3a",
	"mix/7":                         "3648fce5dcfbb6b38f6867c3526d600c5dc58243adb8232ac2e72fb013652b85",
	"mix/8":                         "7a3835d1d2eaf77a3d5fd73daf5d367a944dcfb58a1295bf8127b4ef1f714f92",
	"mix/9":                         "f05dca746cc4ca33d573a75169364f729c806803da38c83b6c38e765997672da",
	"pmwcas/dirty-spurious-failure": "54ca9c4112fd6993fbbaf80f7cfc62ac5125754a91348b9bc77c4120c0786692",
	"pmwcas/read-single-collect":    "ff2112f11cfb66551f82796d1ca0a7da039397a6c33ac6729a48183e65533c40",
	"pmwcas/recovery-wrong-way":     "400a4d40152a5f880ab74c193f667db962467623ec7e530a433399b6039dd24f",
	"pmwcas/swaps/0":                "f3e6222e0c8f1f24806c773c502477ef94468b1912b58a76c70ae19d13fa7a8d",
	"pmwcas/swaps/2":                "10bc8469482f2c297edb2109bfb88a18fc12e9ac85cc4bf71312bdba9b38c307",
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
