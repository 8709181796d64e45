package apicount

import (
	"flag"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var listNames = flag.Bool("apicount.names", false, "log every public name, not only the count per package")

// ceilings holds each public package of pmlin (path below the module's)
// to at most its number of public names, fields included, and totalCeiling
// the module in all. Lower a ceiling when a package sheds names; raising
// one, or adding a public package, is a decision about the public API, to
// be argued in the commit that does it.
var ceilings = map[string]int{
	"":                   81, // the Go API; the error kinds (ErrMalformed ... ErrUndecided) since the analyzer and history are internal
	"cli":                10,
	"deploy":             0,
	"examples/hazard":    1,
	"examples/lockqueue": 7,
	"examples/shadow":    8,
	"lockmwcas":          1,
	"model":              62,
	"mwcas":              1,
	"pmem":               73,
	"pmlintest":          12,
	"recorders":          0,
	"target":             54, // data-structure targets: Object (Do, Recover, State), Target.Model, Mix, NewObject, OpenObject, ObjectModel, Config.Keys, Config.Ops
}

const totalCeiling = 310

func TestPublicNames(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := Module(root)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "names  without fields  package\n")
	total, totalFields := 0, 0
	for _, p := range pkgs {
		fmt.Fprintf(&b, "%5d  %14d  %s\n", len(p.Names), len(p.Names)-p.Fields, p.Path)
		if *listNames {
			for _, n := range p.Names {
				fmt.Fprintf(&b, "                         %s\n", n)
			}
		}
		total += len(p.Names)
		totalFields += p.Fields
	}
	fmt.Fprintf(&b, "%5d  %14d  in all\n", total, total-totalFields)
	t.Logf("public names per package:\n%s", b.String())
	const mod = "github.com/pmlin/pmlin"
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.Path, mod), "/")
		max, ok := ceilings[rel]
		switch {
		case !ok:
			t.Errorf("%s: a new public package (%d names) has no ceiling: should it be under internal/?", p.Path, len(p.Names))
		case len(p.Names) > max:
			t.Errorf("%s: %d public names, more than its ceiling of %d: %s", p.Path, len(p.Names), max, strings.Join(p.Names, " "))
		}
	}
	if total > totalCeiling {
		t.Errorf("%d public names in all, more than %d", total, totalCeiling)
	}
}

func TestModuleCounts(t *testing.T) {
	pkgs, err := Module("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	fields := 0
	for _, p := range pkgs {
		got[p.Path] = p.Names
		fields += p.Fields
	}
	if fields != 4 {
		t.Errorf("Module(testdata/mod) counted %d fields, want 4 (T.Field, T.Embedded, T.Inner, T.Inner.Deep)", fields)
	}
	want := map[string][]string{
		"example.com/mod/a": {"C", "Embedded", "F", "G", "G.N", "I", "I.Do", "T", "T.Embedded", "T.Field", "T.Inner", "T.Inner.Deep", "T.M", "V1", "V2"},
		"example.com/mod/b": {"Alias"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Module(testdata/mod) =\n%v\nwant\n%v", got, want)
	}
}
