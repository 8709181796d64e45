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
