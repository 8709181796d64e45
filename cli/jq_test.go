package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/crash"
)

// The docs' jq recipes run here, for real, on pmlin's own output. jq is
// looked for on PATH: without it these tests skip, unless CI is set (.ci/run
// installs jq): then they fail.
func jqBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("jq"); err == nil {
		return p
	}
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatal("CI is set and jq is not installed (apt-get install -y jq)")
	}
	t.Skip("no jq installed (apt-get install -y jq); set CI=true to make this a failure")
	return ""
}

// jqRecipe matches a jq command of the docs: jq, its flags, and an
// argument (not "`jq -s` skips", which names a flag in a sentence).
var jqRecipe = regexp.MustCompile("\\bjq( -[a-zA-Z]+)+ +[^`\\s]")

// testedJq are the jq commands of the docs that the tests below run: a
// new one fails TestJqRecipesAreTested until a test runs it.
var testedJq = []string{"jq -s -f deploy/sum.jq", "jq -c '.[]' FILE", "jq -c . FILE"}

// TestJqRecipesAreTested: every jq command in the repository's Markdown is
// one that a test here runs.
func TestJqRecipesAreTested(t *testing.T) {
	found := 0
	filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == "results") || !strings.HasSuffix(p, ".md") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, loc := range jqRecipe.FindAllStringIndex(line, -1) {
				found++
				tested := false
				for _, c := range testedJq {
					tested = tested || strings.HasPrefix(line[loc[0]:], c)
				}
				if !tested {
					t.Errorf("%s:%d: a jq command no test runs: %s", p, i+1, line[loc[0]:])
				}
			}
		}
		return nil
	})
	if found < 4 {
		t.Fatalf("found %d jq commands in the docs: walked the wrong tree?", found)
	}
}

// TestJqDeployRecipes runs the two pipelines of deploy/README.md that add
// up the shards' summaries (from the volume, and from the pods' logs with
// a stand-in kubectl) on the summaries of a real campaign of two shards
// with a planted bug and a seed above 2^53: the seeds of the campaign and
// of every finding come out exact, and the sums right.
func TestJqDeployRecipes(t *testing.T) {
	jqBinary(t)
	readme, err := os.ReadFile("../deploy/README.md")
	if err != nil {
		t.Fatal(err)
	}
	volume := regexp.MustCompile(`(?m)^    (jq -s -f deploy/sum\.jq findings/summaries/\*\.json)`).FindStringSubmatch(string(readme))
	logs := regexp.MustCompile(`(?m)^    (kubectl get pods .*\|)\n +(grep .*)$`).FindStringSubmatch(string(readme))
	if volume == nil || logs == nil {
		t.Fatalf("deploy/README.md has not the two jq pipelines (%v, %v)", volume != nil, logs != nil)
	}
	// The recipes run from the repository's root; here, a copy of what
	// they read.
	root := t.TempDir()
	sums := filepath.Join(root, "findings", "summaries")
	podLogs := filepath.Join(root, "logs")
	for _, d := range []string{sums, podLogs, filepath.Join(root, "deploy"), filepath.Join(root, "bin")} {
		os.MkdirAll(d, 0o755)
	}
	prog, err := os.ReadFile("../deploy/sum.jq")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "deploy", "sum.jq"), prog, 0o644)

	seed := strconv.FormatUint(bigSeed, 10)
	runs := int64(0)
	var findings []string // the findings' seeds, as the shards wrote them
	for i := range 2 {
		code, out, errs := pmlin(t, "", "fuzz", "--mutant", "dirty-spurious-failure", "--seed", seed, "--shard", fmt.Sprintf("%d/2", i),
			"--jobs", "1", "--runs", "40", "--ops", "200", "--json", "--out", filepath.Join(root, fmt.Sprintf("shard-%d", i)))
		if code != 0 && code != 1 {
			t.Fatalf("shard %d: exit %d\n%s", i, code, errs)
		}
		sum := lastObject(t, out)
		n, _ := sum["runs"].(json.Number).Int64()
		runs += n
		if f, ok := sum["finding"].(map[string]any); ok {
			run, _ := f["run"].(json.Number).Int64()
			if want := strconv.FormatUint(crash.RunSeed(bigSeed, run-1), 10); f["seed"] != want {
				t.Fatalf("shard %d: finding seed %#v, want %q", i, f["seed"], want)
			}
			findings = append(findings, f["seed"].(string))
		}
		os.WriteFile(filepath.Join(sums, fmt.Sprintf("shard-%d.json", i)), []byte(out), 0o644)
		// The pod's log: the text, then the summary (the Job's script).
		os.WriteFile(filepath.Join(podLogs, fmt.Sprintf("pmlin-fuzz-%d-x.log", i)), []byte(errs+out), 0o644)
	}
	if len(findings) == 0 {
		t.Fatal("no shard found the planted bug: nothing to test the findings' seeds with")
	}
	// A pod evicted before its end, whose index ran again: its log ends
	// with a progress line.
	os.WriteFile(filepath.Join(podLogs, "pmlin-fuzz-1-evicted.log"), []byte("fuzz   5.0s  runs 12  ops 2.4k\n"), 0o644)
	kubectl := `#!/bin/sh
case "$1" in
get) for f in "$LOGS"/*.log; do b=${f##*/}; echo "pod/${b%.log}"; done ;;
logs) [ "$3" = --tail=1 ] && tail -n 1 "$LOGS/${2#pod/}.log" ;;
*) exit 1 ;;
esac
`
	os.WriteFile(filepath.Join(root, "bin", "kubectl"), []byte(kubectl), 0o755)

	for _, cmd := range []string{volume[1], logs[1] + " " + logs[2]} {
		sh := exec.Command("sh", "-c", cmd)
		sh.Dir = root
		sh.Env = append(os.Environ(), "LOGS="+podLogs, "PATH="+filepath.Join(root, "bin")+":"+os.Getenv("PATH"))
		out, err := sh.Output()
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		dec.UseNumber()
		var got struct {
			Shards   json.Number
			Seeds    []any
			Runs     json.Number
			Findings []struct{ Seed any }
		}
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		if got.Shards != "2" || got.Runs != json.Number(strconv.FormatInt(runs, 10)) || len(got.Seeds) != 1 || got.Seeds[0] != seed {
			t.Errorf("%s: shards %s, runs %s (want %d), seeds %#v (want [%q])\n%s", cmd, got.Shards, got.Runs, runs, got.Seeds, seed, out)
		}
		if len(got.Findings) != len(findings) {
			t.Fatalf("%s: %d findings, want %d\n%s", cmd, len(got.Findings), len(findings), out)
		}
		for i, f := range got.Findings {
			if f.Seed != findings[i] {
				t.Errorf("%s: finding %d's seed came out as %#v, the shard wrote %q", cmd, i, f.Seed, findings[i])
			}
		}
	}
}

// TestJqHistoryRecipes runs the jq commands that pmlin's own messages
// give for a JSON array and for pretty-printed JSON (docs/history-format.md,
// "Errors") on the messages' inputs, and checks the histories they make:
// the same verdict, values above 2^53 included when written as strings,
// and as numbers where jq keeps them (1.7 or later; the docs say that
// jq 1.6 does not).
func TestJqHistoryRecipes(t *testing.T) {
	jqBin := jqBinary(t)
	doc, err := os.ReadFile("../docs/history-format.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := func(v string) []string {
		return []string{`{"header":"pmlin-history v1"}`, `{"p":0,"inv":"cas","words":[[1,0,` + v + `]]}`, `{"p":0,"ret":"ok"}`,
			`{"p":1,"inv":"read","addrs":[1]}`, `{"p":1,"ret":[` + v + `]}`}
	}
	// recipe is the jq command that pmlin's message for input in gives,
	// run on in: pmlin check's verdict on its output, and the output.
	recipe := func(in, hint string) (int, string, string) {
		f := writeFile(t, "in.json", in)
		code, _, errs := pmlin(t, "", "check", f)
		m := regexp.MustCompile(`\(?(jq [^()]*?) FILE`).FindStringSubmatch(errs)
		if code != 2 || m == nil || !strings.Contains(errs, hint) || !strings.Contains(string(doc), m[1]+" FILE") {
			t.Fatalf("pmlin check of %q: exit %d, %q: no jq command of docs/history-format.md", in, code, errs)
		}
		args := strings.Fields(m[1])[1:]
		for i, a := range args {
			args[i] = strings.Trim(a, "'")
		}
		out, err := exec.Command(jqBin, append(args, f)...).Output()
		if err != nil {
			t.Fatalf("%s %s: %v", m[1], f, err)
		}
		code, verdict, errs := pmlin(t, string(out), "check", "-")
		return code, verdict + errs, string(out)
	}
	const big = "9007199254740993" // 2^53 + 1: a double makes it 2^53
	for _, v := range []string{"7", `"` + big + `"`, big} {
		array := "[" + strings.Join(lines(v), ",") + "]\n"
		var pretty strings.Builder
		for _, l := range lines(v) {
			var x any
			dec := json.NewDecoder(strings.NewReader(l))
			dec.UseNumber() // exact, as the recorder wrote it
			dec.Decode(&x)
			b, _ := json.MarshalIndent(x, "", "  ")
			pretty.Write(append(b, '\n'))
		}
		for _, tc := range []struct{ name, in, hint string }{{"JSON array", array, "JSON array"}, {"pretty-printed JSON", pretty.String(), "pretty-printed"}} {
			code, verdict, out := recipe(tc.in, tc.hint)
			kept := !strings.Contains(v, big) || strings.Contains(out, big)
			switch {
			case !kept && !strings.HasPrefix(v, `"`):
				// jq 1.6 rounded the number, as the docs warn.
				if !strings.Contains(string(doc), "jq 1.6 reads numbers as\ndoubles and rounds") {
					t.Errorf("%s, value %s: jq rounded it, and docs/history-format.md does not warn of it:\n%s", tc.name, v, out)
				}
				t.Logf("%s, value %s: this jq rounds numbers above 2^53 (the docs say so)", tc.name, v)
			case !kept:
				t.Errorf("%s, value %s: jq lost the value written as a string:\n%s", tc.name, v, out)
			case code != 0 || !strings.Contains(verdict, "LINEARIZABLE"):
				t.Errorf("%s, value %s: the history jq made: exit %d\n%s\n%s", tc.name, v, code, verdict, out)
			}
		}
	}
}
