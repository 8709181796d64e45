package pmlintest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmlin/pmlin"
	"github.com/pmlin/pmlin/pmlintest"
)

// printT stands in for a test's *testing.T in this example: it prints the
// first line of what Check reports and the names of the files it kept.
type printT struct {
	testing.TB
	dir string
}

func (p printT) Helper()             {}
func (p printT) Name() string        { return "TestMyMwCAS" }
func (p printT) ArtifactDir() string { return p.dir }
func (p printT) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Println(strings.SplitN(msg, "\n", 2)[0])
	for _, f := range kept(msg) {
		fmt.Println("kept", filepath.Base(f))
	}
}

// In a test, Check takes the test's t; a failure names the files it kept
// as test artifacts (go test -artifacts keeps them).
func ExampleCheck() {
	dir, _ := os.MkdirTemp("", "pmlintest-example-")
	defer os.RemoveAll(dir)
	t := printT{dir: dir}
	os.Unsetenv(pmlintest.ArtifactsEnv)

	// Two threads of the test's own MwCAS, recorded with timestamps: the
	// read saw one word of the cas and not the other.
	ops := []pmlin.Operation{
		{Process: 1, Kind: pmlin.CAS, Addrs: []uint64{10, 11}, Expected: []uint64{0, 0}, New: []uint64{0x100001, 0x100002},
			Call: 100, Return: 180, Outcome: pmlin.OK},
		{Process: 2, Kind: pmlin.Read, Addrs: []uint64{10, 11}, Call: 150, Return: 200, Outcome: pmlin.Returned,
			Values: []uint64{0x100001, 0}},
	}
	res := pmlintest.Check(t, pmlin.History{Operations: ops}, pmlin.Options{Name: "torn-read"})
	fmt.Println("operations of the anomaly:", res.Anomalies[0].Ops)
	// Output:
	// torn-read: NOT LINEARIZABLE (strict mode)
	// kept torn-read.hist
	// kept torn-read.txt
	// kept torn-read.html
	// operations of the anomaly: [0 1]
}
