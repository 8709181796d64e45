package lin_test

import (
	"math/rand/v2"
	"testing"

	"github.com/pmlin/pmlin/history"
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
	n := testenv.Count(0, 300, 3000)
	for mi, m := range genModels {
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
		if yes[0] == yes[2] {
			t.Errorf("%s: strict and durable never differ", m)
		}
	}
}

// TestOracleRecoverableReadings counts the histories where the two
// readings of the recoverable window (oracle_brute_test.go) differ, so the
// agreement campaign is known to exercise the difference.
func TestOracleRecoverableReadings(t *testing.T) {
	n := testenv.Count(0, 1000, 5000)
	differ := 0
	for mi, m := range genModels {
		for i := range n {
			h := genSeeded(m, mi, i)
			a, err := bruteForceReading(h, history.Recoverable, recoverOrder)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := bruteForceReading(h, history.Recoverable, recoverDeadline)
			if b && !a {
				t.Fatalf("%s seed (%d, %d): the deadline reading accepts what the order reading refuses\n%s", m, i, mi, renderV2(h))
			}
			if a != b {
				differ++
			}
		}
	}
	t.Logf("the recoverable readings differ on %d of %d histories", differ, n*len(genModels))
	if differ == 0 {
		t.Error("the readings never differ: the generators do not exercise the recoverable window")
	}
}
