package pmlin_test

import (
	"context"
	"fmt"
	"os"

	"github.com/pmlin/pmlin"
)

// A history recorded with timestamps: process 1 writes two words with one
// cas, process 2 then reads them and sees the first written, the second
// not: a torn read. The result names the operations by their index in
// Operations.
func ExampleCheck() {
	ops := []pmlin.Operation{
		{Process: 1, Kind: pmlin.CAS, Addrs: []uint64{10, 11}, Expected: []uint64{0, 0}, New: []uint64{0x100001, 0x100002},
			Call: 100, Return: 180, Outcome: pmlin.OK},
		{Process: 2, Kind: pmlin.Read, Addrs: []uint64{10, 11}, Call: 150, Return: 200, Outcome: pmlin.Returned,
			Values: []uint64{0x100001, 0}},
		{Process: 1, Kind: pmlin.Read, Addrs: []uint64{11}, Call: 190, Return: 210, Outcome: pmlin.Returned,
			Values: []uint64{0x100002}},
	}
	res, err := pmlin.Check(context.Background(), pmlin.History{Operations: ops}, pmlin.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("linearizable:", res.Linearizable)
	for _, a := range res.Anomalies {
		fmt.Printf("%s: operations %v, addresses %v\n", a.Kind, a.Ops, a.Words)
		for _, e := range a.Edges {
			fmt.Printf("  %d -> %d (%s)\n", e.From, e.To, e.Kind)
		}
	}
	// Output:
	// linearizable: false
	// cycle: operations [0 1], addresses [10 11]
	//   0 -> 1 (rf)
	//   1 -> 0 (aux)
}

// A crash cuts off a cas (Pending) whose value is read later, after a read
// of the old one: it took effect after the crash, which strict
// linearizability forbids and recoverable linearizability allows.
// History.WriteTo shows the history as pmlin check would read it, each
// invocation marked with its index; the explanations name operations by
// that index, and crashes by theirs.
func ExampleHistory_WriteTo() {
	h := pmlin.History{
		Operations: []pmlin.Operation{
			{Process: 1, Kind: pmlin.CAS, Addrs: []uint64{10}, Expected: []uint64{0}, New: []uint64{0x100001}, Call: 1, Outcome: pmlin.Pending},
			{Process: 2, Kind: pmlin.Read, Addrs: []uint64{10}, Call: 5, Return: 6, Outcome: pmlin.Returned, Values: []uint64{0}},
			{Process: 2, Kind: pmlin.Read, Addrs: []uint64{10}, Call: 7, Return: 8, Outcome: pmlin.Returned, Values: []uint64{0x100001}},
		},
		Crashes: []int64{3},
	}
	h.WriteTo(os.Stdout)
	for _, mode := range []pmlin.Mode{pmlin.Strict, pmlin.Recoverable} {
		res, _ := pmlin.Check(context.Background(), h, pmlin.Options{Mode: mode})
		fmt.Printf("%s: linearizable %v\n", mode, res.Linearizable)
		if !res.Linearizable {
			fmt.Println(res.Anomalies[0].Edges[0].Reason)
		}
	}
	// Output:
	// pmlin-history v1
	// 1 inv cas 10:0:0x100001  # op 0
	// crash  # crash 0
	// 2 inv read 10  # op 1
	// 2 ret 0
	// 2 inv read 10  # op 2
	// 2 ret 0x100001
	// strict: linearizable false
	// operation 0 (process 1 cas) was cut off by crash 0 and, as operation 2 observed its value, took effect before it (strict), so before operation 1 (process 2 read) was invoked
	// recoverable: linearizable true
}
