package crash

import (
	"strings"
	"testing"

	"github.com/pmlin/pmlin/target"
)

func TestMutantsAndParams(t *testing.T) {
	tg := &target.Target{
		Name:    "sample",
		Mutants: []target.Mutant{{Name: "bug-one", Description: "one"}},
		Params:  []target.Param{{Name: "size", Default: "3", Usage: "a size"}},
	}
	if checkMutant(tg, "") != nil || checkMutant(tg, "bug-one") != nil {
		t.Fatal("known mutant refused")
	}
	if err := checkMutant(tg, "bug-two"); err == nil || !strings.Contains(err.Error(), "known: bug-one") {
		t.Fatal(err)
	}
	ps, err := resolveParams(tg, nil)
	if err != nil || len(ps) != 1 || ps["size"] != "3" {
		t.Fatal(ps, err)
	}
	ps, err = resolveParams(tg, map[string]string{"size": "70"})
	if err != nil || ps["size"] != "70" {
		t.Fatal(ps, err)
	}
	if _, err := resolveParams(tg, map[string]string{"stripes": "2"}); err == nil || !strings.Contains(err.Error(), "--stripes is not a parameter of target sample (its parameters: --size)") {
		t.Fatal(err)
	}
	if _, err := FindTarget([]*target.Target{tg}, "other"); err == nil || !strings.Contains(err.Error(), "known: sample") {
		t.Fatal(err)
	}
	if got, err := FindTarget([]*target.Target{tg}, "sample"); got != tg || err != nil {
		t.Fatal(got, err)
	}
}
