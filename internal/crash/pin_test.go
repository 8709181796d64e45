package crash

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
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
	"late/2":                        "39694ff0677f17b97b56ceeecdbd0d2e127f16c6c6bd6dee6174c2afe8c7ab78",
	"late/8":                        "3dd320970d234db75057c676665e1ec7314d44dee1511ce44dbb59997730837d",
	"lockmwcas/0":                   "6e456132cc6e3066636f69479f270fad84ad18ae562e6c7cf2be1c0a0897db9a",
	"lockmwcas/1":                   "99c37f8ca982ffb46a582271c50a83eadd49aaa314770834fd9b865b46668508",
	"lockmwcas/2":                   "26ba644f2c73409d35f5da56f7094faa0c5102cb132f9e89c16fcf1e3ef3deb9",
	"lockmwcas/data-unflushed":      "825eba33c64c7058165a16346cd968e436f7d0a5253ee0c970bddc664e11e2cb",
	"lockmwcas/swaps/1":             "50c793f7a6643338c06b209885293b34b1d9a7a194b07deba8208dfce5f44f49",
	"lockmwcas/swaps/3":             "bbfd84f88c486841ed15aafa73cd7931318627f1208de9bef52f08b863b3a21d",
	"mix/0":                         "18f4e0a69b84ececa45103eea8ccec12bf5164c0ec6d9649a151cb1a3100d516",
	"mix/1":                         "34e74057a6d6a59c39c713c33b66e8ca8f9a624f2c8f42e47fb661bbc4df5bfb",
	"mix/10":                        "53df3cd2797202330e07652726fd896b9d42158abcd9c405010eb2848d1e368c",
	"mix/11":                        "4db4680f2f5955fef9723d998c812dc2a8a544ff709b5e62ca028bb1eeacc2d5",
	"mix/2":                         "897a32141943cc2826dce286f256d7fefc8ec8c1c2fe33e107647ce23d5fcc14",
	"mix/3":                         "d8ceb65e7893ed1b2427252ba18fcc0446dfeb8ea8d10cba0c0283b9c9d6964f",
	"mix/4":                         "02beefdaaa3bf19fb12357d49304de6f184e0d3d3f0406a4b038266bbe7751fd",
	"mix/5":                         "74dd9edadf07dff300081ae3999833772deb822b22609e91f813bf39d9bd85aa",
	"mix/6":                         "6b825b85453a67c872578469d48f9fdb7cfc21e9dc8bfc4d6ea929a761e752b1",
	"mix/7":                         "cbc2c4b6e05fb3790f98d7ae631a35199a79aa3d193a57ea186a4e059520abc3",
	"mix/8":                         "a116019127d9e3207a5bbeaedc6483f6b295c299542ded2facc4f2005b22890f",
	"mix/9":                         "aa791ffb0c518508114613ae64daefeba8f491781b314498c9b921b29abba73f",
	"pmwcas/dirty-spurious-failure": "54ca9c4112fd6993fbbaf80f7cfc62ac5125754a91348b9bc77c4120c0786692",
	"pmwcas/read-single-collect":    "8293f321393da760b35ba17df4ec92dd6ec213ee630a3600752b46f914c14440",
	"pmwcas/recovery-wrong-way":     "095eb34aa0f6630f5cb8cb3d84456d66bfa3cb119bc02bc402ca2c91ca3c42d1",
	"pmwcas/swaps/0":                "90a86684e7520818e252590ba9bbe74416d384a89b9f8717d17ae9f5241585b6",
	"pmwcas/swaps/2":                "efc6677faf1a2a5a429f200ca2ba619fc38171f52ccc5b663b07b27928f83036",
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
