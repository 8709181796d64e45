package report

import (
	"testing"

	"github.com/pmlin/pmlin/internal/history"
)

func TestOpValues(t *testing.T) {
	for _, c := range []struct {
		op   history.Op
		want string
	}{
		{history.Op{Kind: history.Read, Addrs: []uint64{3, 4}, Values: []uint64{5, 0x100001}}, "3=5 4=0x100001"},
		{history.Op{Kind: history.Read, Addrs: []uint64{3}}, "3=?"},
		{history.Op{Kind: history.CAS, Addrs: []uint64{3, 4}, Expected: []uint64{5, 6}, New: []uint64{7, 8}, Status: history.Succeeded}, "3:5→7 4:6→8"},
		{history.Op{Kind: history.CAS, Addrs: []uint64{3, 4}, Expected: []uint64{5, 6}, New: []uint64{7, 8}, Status: history.Failed, FailAddr: 4},
			"fail@4 3:5→7 4:6→8"},
		{history.Op{Kind: history.CAS, Addrs: []uint64{3, 4}, Expected: []uint64{5, 6}, New: []uint64{7, 8}, Status: history.Failed, FailAddr: 4, Values: []uint64{5, 9}},
			"fail@4 3:5→7 4:6→8 read 3=5 4=9"},
		{history.Op{Kind: history.Swap, Addrs: []uint64{3, 4}, New: []uint64{7, 8}, Values: []uint64{5, 6}, Status: history.Returned}, "3:5→7 4:6→8"},
		{history.Op{Kind: history.Swap, Addrs: []uint64{3}, New: []uint64{7}}, "3:?→7"},
	} {
		if got := opValues(&c.op, nil); got != c.want {
			t.Errorf("%+v: %q, want %q", c.op, got, c.want)
		}
	}
	focus := history.Op{Kind: history.Swap, Addrs: []uint64{3, 4}, New: []uint64{7, 8}, Values: []uint64{5, 6}}
	if got := opValues(&focus, []uint64{4}); got != "4:6→8 3:5→7" {
		t.Errorf("the word in focus first: %q", got)
	}
}
