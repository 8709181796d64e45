package pmlin_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/model"
)

// TestCheckSyncObjects: the synchronisation objects through the Go API.
// An exchanger whose exchanges pair off is linearizable; one whose
// exchange got a value nobody overlapping gave is not, the witness that
// exchange; a channel whose send and receive are both pending at the end
// is linearizable with two anomalies of kind "stuck", each naming the
// operation and its partner; recoverable mode through a crashed exchange
// is decided by the two-step search.
func TestCheckSyncObjects(t *testing.T) {
	ex := []model.Object{{Name: "x", Model: "exchanger"}}
	good := pmlin.History{Objects: ex, Operations: []pmlin.Operation{
		qop(1, "exchange", 10, 40, pmlin.Returned, vals(1), vals(2)),
		qop(2, "exchange", 20, 30, pmlin.Returned, vals(2), vals(1)),
		qop(3, "exchange", 50, 60, pmlin.Returned, vals(3), []model.Value{model.Sym(model.Fail)}),
	}}
	res, err := pmlin.Check(context.Background(), good, pmlin.Options{})
	if err != nil || !res.Linearizable || len(res.Anomalies) != 0 {
		t.Fatalf("good: %v %+v", err, res)
	}
	bad := good
	bad.Operations = slices.Clone(good.Operations)
	bad.Operations[2] = qop(3, "exchange", 50, 60, pmlin.Returned, vals(3), vals(1)) // 1's value, after it returned
	res, err = pmlin.Check(context.Background(), bad, pmlin.Options{})
	if err != nil || res.Linearizable || !slices.Equal(res.Witness, []int{2}) || !strings.Contains(res.Anomalies[0].Explanation, "could not be paired") {
		t.Fatalf("bad: %v %+v", err, res)
	}

	ch := pmlin.History{Objects: []model.Object{{Name: "c", Model: "channel"}}, Operations: []pmlin.Operation{
		qop(1, "send", 10, 30, pmlin.Returned, vals(5), okv),
		qop(2, "recv", 20, 40, pmlin.Returned, nil, vals(5)),
		qop(3, "send", 50, 0, pmlin.Pending, vals(6), nil),
		qop(4, "recv", 60, 0, pmlin.Pending, nil, nil),
	}}
	res, err = pmlin.Check(context.Background(), ch, pmlin.Options{})
	if err != nil || !res.Linearizable || len(res.Anomalies) != 2 {
		t.Fatalf("stuck: %v %+v", err, res)
	}
	for k, want := range [][]int{{2, 3}, {3, 2}} {
		if a := res.Anomalies[k]; a.Kind != "stuck" || !slices.Equal(a.Ops, want) {
			t.Errorf("stuck anomaly %d: %+v, want ops %v", k, a, want)
		}
	}

	rec := pmlin.History{Objects: ex, Operations: []pmlin.Operation{
		qop(1, "exchange", 10, 0, pmlin.Pending, vals(1), nil),
		qop(1, "exchange", 30, 50, pmlin.Returned, vals(2), vals(3)),
		qop(2, "exchange", 35, 45, pmlin.Returned, vals(3), vals(2)),
	}, Crashes: []int64{20}}
	if res, err := pmlin.Check(context.Background(), rec, pmlin.Options{Mode: pmlin.Recoverable}); err != nil || !res.Linearizable {
		t.Errorf("recoverable: %v %+v", err, res)
	}
	if res, err := pmlin.Check(context.Background(), rec, pmlin.Options{Mode: pmlin.Durable}); err != nil || !res.Linearizable {
		t.Errorf("durable: %v %+v", err, res)
	}
}
