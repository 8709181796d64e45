package lin_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/pmlin/pmlin/internal/history"
	"github.com/pmlin/pmlin/internal/testenv"
	"github.com/pmlin/pmlin/model"
)

// genSeeded is history number i of model m's campaign: the seed pair
// (i, model index) replays it.
func genSeeded(m string, mi, i int) *model.History {
	return genHistory(rand.New(rand.NewPCG(uint64(i), uint64(mi))), genConfigFor(m, i))
}

// TestOracleGeneratorSplit checks that the generators give the brute force
// a fair share of both verdicts in every mode, and that crashes, `?` and
// pending operations all occur: an agreement campaign on histories that
// are all linearizable would prove nothing.
func TestOracleGeneratorSplit(t *testing.T) {
	n := testenv.Count(0, 1000, 5000)
	for mi, m := range bruteModels {
		var yes, crashed, unknown, pending [3]int
		for i := range n {
			h := genSeeded(m, mi, i)
			for _, mode := range history.Modes {
				ok, err := bruteForce(h, mode)
				if err != nil {
					t.Fatalf("%s seed (%d, %d): %v\n%s", m, i, mi, err, renderV2(h))
				}
				if ok {
					yes[mode]++
				}
			}
			for _, op := range h.Ops {
				switch {
				case op.Status == model.Unknown:
					unknown[0]++
				case op.Status == model.CutOff && op.Crash >= 0:
					crashed[0]++
				case op.Status == model.CutOff:
					pending[0]++
				}
			}
		}
		t.Logf("%-8s %d histories: linearizable strict %d, recoverable %d, durable %d; ops cut off by a crash %d, by the end %d, answered ? %d",
			m, n, yes[0], yes[1], yes[2], crashed[0], pending[0], unknown[0])
		for mode, y := range yes {
			if y < n*15/100 || y > n*85/100 {
				t.Errorf("%s, %v: %d of %d histories linearizable, outside 15%%..85%%", m, history.Mode(mode), y, n)
			}
		}
		if crashed[0] == 0 || pending[0] == 0 || unknown[0] == 0 {
			t.Errorf("%s: no crash, no pending or no `?` operation generated", m)
		}
		if yes[0] == yes[2] && !testing.Short() {
			t.Errorf("%s: strict and durable never differ", m)
		}
	}
}

// TestOracleRecoverableReadings counts the histories where the other
// readings of the recoverable window (oracle_brute_test.go) differ from
// the decided one the brute force checks by, so the agreement campaign is
// known to exercise the window; and checks that they nest (recoverNext is
// the strictest, then recoverStays, recoverChain, recoverOrder).
func TestOracleRecoverableReadings(t *testing.T) {
	n := testenv.Count(0, 1000, 5000)
	var differ [nReadings]int
	for mi, m := range bruteModels {
		for i := range n {
			h := genSeeded(m, mi, i)
			var v [nReadings]bool
			for r := range v {
				var err error
				if v[r], err = bruteForceReading(h, history.Recoverable, recoverReading(r)); err != nil {
					t.Fatal(err)
				}
			}
			for r := range v {
				if v[r] != v[recoverOrder] {
					differ[r]++
				}
				// Each reading accepts what the stricter ones accept.
				if r > 0 && v[r-1] && !v[r] {
					t.Fatalf("%s seed (%d, %d): the readings do not nest: %v\n%s", m, i, mi, v, renderV2(h))
				}
			}
		}
	}
	t.Logf("of %d histories, the recoverable verdict of the decided reading (%s) differs from that of %q on %d, %q on %d, %q on %d",
		n*len(bruteModels), readingNames[recoverOrder], readingNames[recoverNext], differ[recoverNext],
		readingNames[recoverStays], differ[recoverStays], readingNames[recoverChain], differ[recoverChain])
	if (differ[recoverNext] == 0 || differ[recoverStays] == 0) && !testing.Short() {
		t.Error("the readings never differ: the generators do not exercise the recoverable window")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
