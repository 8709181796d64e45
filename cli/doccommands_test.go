package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pmlin/pmlin/internal/shellword"
)

// The documents whose commands TestDocCommands holds to the code. The
// shadowpmlin, hazardpmlin and queuepmlin commands of the guide to a
// target of one's own are run by examples/shadow's TestReadmeGuide,
// examples/hazard's TestGuide and examples/lockqueue's TestGuide.
var commandDocs = []string{"README.md", "docs/fuzz.md", "docs/evidence.md", "docs/your-primitive.md", "internal/mutmwcas/README.md", "recorders/README.md"}

// docCommand is one command a document shows: a line of a code block, or
// an inline code span of the running text.
type docCommand struct {
	doc  string
	line int
	text string
	// block: a line of a code block, to be run as it stands; an inline
	// span may hold PLACEHOLDERS, and only names a command and its flags.
	block bool
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.doc, c.line, c.text) }

// TestDocCommands checks every command the README and the docs show
// against the current command line and tree, so that a document that
// drifts fails here:
//   - a pmlin command (pmlin, ./pmlin, go run ./cmd/pmlin) names a
//     subcommand that exists and flags it has; shown in a code block and
//     not a synopsis (with [optional] parts, | or ...), it parses as it
//     stands (run with --help appended: flags and their values), and the
//     repository files it reads exist;
//   - --target, --mutant and bench suite names exist;
//   - a go test command names a package that exists, -run and -bench
//     patterns that match some of its tests, and test flags it defines;
//   - a go run, go build or go install names a directory of the
//     repository, and a go run of a tool only flags it defines;
//   - every relative link of the documents leads to a file.
//
// The cheap commands also run, in TestDocCommandsRun.
func TestDocCommands(t *testing.T) {
	t.Chdir("..")
	cmds := docCommands(t)
	help := map[string]string{} // subcommand ("": none) -> its -h
	helpOf := func(sub string) string {
		if h, ok := help[sub]; ok {
			return h
		}
		args := []string{"-h"}
		if sub != "" {
			args = []string{sub, "-h"}
		}
		code, out, errs := pmlin(t, "", args...)
		if code != 0 {
			t.Fatalf("pmlin %s -h: exit %d: %s", sub, code, errs)
		}
		help[sub] = out
		return out
	}
	subs := listed(helpOf(""), "Available Commands:", regexp.MustCompile(`^\s+(\S+)\s`))
	flagLine := regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)`)
	mutants := map[string][]string{}
	for _, tg := range testTargets {
		mutants[tg.Name] = []string{}
		for _, m := range tg.Mutants {
			mutants[tg.Name] = append(mutants[tg.Name], m.Name)
		}
	}
	var suites []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+)  `).FindAllStringSubmatch(helpOf("bench"), -1) {
		suites = append(suites, m[1])
	}
	counts := map[string]int{}
	for _, c := range cmds {
		kind, args := commandKind(c.text)
		counts[kind]++
		switch kind {
		case "pmlin":
			if len(args) == 0 || !slices.Contains(subs, args[0]) {
				t.Errorf("%v: no such pmlin command (pmlin -h lists %v)", c, subs)
				continue
			}
			sub := args[0]
			flags := listed(helpOf(sub), "Flags:", flagLine)
			for i, a := range args {
				a = strings.Trim(a, "[]")
				if !strings.HasPrefix(a, "--") {
					continue
				}
				name, _, _ := strings.Cut(a[2:], "=")
				if !slices.Contains(flags, name) {
					t.Errorf("%v: pmlin %s has no flag --%s", c, sub, name)
					continue
				}
				if i+1 == len(args) || !literal(args[i+1]) {
					continue
				}
				switch v := args[i+1]; name {
				case "target":
					if _, ok := mutants[v]; !ok {
						t.Errorf("%v: no target %q", c, v)
					}
				case "mutant":
					tg := "pmwcas"
					if j := slices.Index(args, "--target"); j >= 0 && j+1 < len(args) {
						tg = args[j+1]
					}
					if !slices.Contains(mutants[tg], v) {
						t.Errorf("%v: target %s has no planted bug %q", c, tg, v)
					}
				}
			}
			if sub == "bench" && len(args) > 1 && literal(args[1]) && !slices.Contains(suites, args[1]) {
				t.Errorf("%v: no bench suite %q (pmlin bench -h lists %v)", c, args[1], suites)
			}
			if !c.block || strings.ContainsAny(c.text, "[|") || strings.Contains(c.text, "...") {
				continue // a synopsis
			}
			if code, _, errs := pmlin(t, "", append(slices.Clone(args), "--help")...); code != 0 {
				t.Errorf("%v: does not parse: %s", c, errs)
			}
			checkFiles(t, cmds, c, args[1:])
		case "go test":
			checkGoTest(t, c, args)
		case "go run", "go build", "go install":
			checkGoTool(t, c, kind, args)
		case "other":
			checkFiles(t, cmds, c, args)
		}
	}
	if counts["pmlin"] < 20 || counts["go test"] < 5 {
		t.Fatalf("found %d pmlin and %d go test commands in %v: the extraction broke?", counts["pmlin"], counts["go test"], commandDocs)
	}
	checkLinks(t)
}

// docCommands extracts the commands of commandDocs: each line of a code
// block (fenced, or indented by four spaces after a blank line) and each
// inline code span of the running text that starts like a command, cut at
// a comment (" #"), split at && and |, without a "$ " prompt or leading
// environment assignments.
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	span := regexp.MustCompile("`([^`]+)`")
	var cmds []docCommand
	for _, doc := range commandDocs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		fenced, indented, blank := false, false, true
		for i, line := range strings.Split(string(b), "\n") {
			add := func(text string, block bool) {
				if j := strings.Index(text, " #"); j >= 0 {
					text = text[:j]
				}
				for _, part := range regexp.MustCompile(`&&|\|\s`).Split(text, -1) {
					part = strings.TrimPrefix(strings.TrimSpace(part), "$ ")
					for {
						f := strings.Fields(part)
						if len(f) == 0 || !regexp.MustCompile(`^[A-Z_]+=\S*$`).MatchString(f[0]) {
							break
						}
						part = strings.TrimSpace(strings.TrimPrefix(part, f[0]))
					}
					if k, _ := commandKind(part); k != "" {
						cmds = append(cmds, docCommand{doc, i + 1, part, block})
					}
				}
			}
			switch {
			case strings.HasPrefix(line, "```"):
				fenced = !fenced
			case fenced:
				add(line, true)
			case strings.HasPrefix(line, "    ") && (blank || indented):
				indented = true
				add(strings.TrimSpace(line), true)
			default:
				indented = false
				for _, m := range span.FindAllStringSubmatch(line, -1) {
					add(m[1], false)
				}
			}
			blank = strings.TrimSpace(line) == ""
		}
	}
	return cmds
}

// commandKind tells what kind of command text is, and its arguments: "pmlin"
// (the subcommand first), "go test", "go run", "go build", "go install",
// "other" (a program run on repository files, such as gcc or python3), or
// "" (not a command: a history line, a fragment of prose).
func commandKind(text string) (kind string, args []string) {
	// Split as sh does where the text is one simple command (a quoted
	// --exec "PROGRAM --flag" is one argument); a synopsis with [a|b] or
	// a fragment is split at blanks.
	f, err := shellword.Split(text)
	if err != nil {
		f = strings.Fields(text)
	}
	if len(f) == 0 {
		return "", nil
	}
	if f[0] == "/usr/bin/time" { // timed: the command after time's flags
		for len(f) > 1 && strings.HasPrefix(f[1], "-") {
			f = append(f[:1], f[2:]...)
		}
		f = f[1:]
		if len(f) == 0 {
			return "", nil
		}
	}
	if len(f) < 2 || strings.HasSuffix(f[1], ":") {
		return "", nil // a name in prose, or output ("pmlin fuzz: ...")
	}
	switch {
	case f[0] == "pmlin" || f[0] == "./pmlin":
		return "pmlin", f[1:]
	case len(f) >= 3 && f[0] == "go" && f[1] == "run" && f[2] == "./cmd/pmlin":
		return "pmlin", f[3:]
	case len(f) >= 3 && f[0] == "go" && f[1] == "run" && (strings.Contains(f[2], "shadowpmlin") || strings.Contains(f[2], "hazardpmlin")):
		return "", nil // examples/shadow's TestReadmeGuide and examples/hazard's TestGuide run them
	case len(f) >= 3 && f[0] == "go" && f[1] == "run" && strings.Contains(f[2], "queuepmlin"):
		return "", nil // examples/lockqueue's TestGuide runs them
	case len(f) >= 3 && f[0] == "go" && slices.Contains([]string{"test", "run", "build", "install"}, f[1]):
		return "go " + f[1], f[2:]
	case slices.Contains([]string{"gcc", "g++", "python3", "jq", "dot"}, f[0]):
		return "other", f[1:]
	}
	return "", nil
}

// literal reports whether a shown argument is a value as it stands, not a
// placeholder (NAME, S, FILE.html) or an elision.
func literal(a string) bool {
	return a != "" && !strings.ContainsAny(a, "[]|.") && !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(a)
}

// repoFile matches an argument that names a file of the repository: a
// relative path under one of its directories.
var repoFile = regexp.MustCompile(`^(examples|analyzer|recorders|deploy|docs|bench|internal|history|cmd)/[\w./-]+$`)

// checkFiles fails t for each argument of c that names a repository file
// that does not exist, unless an earlier command of the same document
// writes it (-o FILE).
func checkFiles(t *testing.T, cmds []docCommand, c docCommand, args []string) {
	t.Helper()
	for _, a := range args {
		if !repoFile.MatchString(a) {
			continue
		}
		if _, err := os.Stat(a); err == nil {
			continue
		}
		made := false
		for _, o := range cmds {
			if o.doc == c.doc && o.line < c.line && regexp.MustCompile(`(^|\s)-o\s+`+regexp.QuoteMeta(a)+`(\s|$)`).MatchString(o.text) {
				made = true
			}
		}
		if !made {
			t.Errorf("%v: no file %s in the repository", c, a)
		}
	}
}

// goTestFlags are the flags of go test and of the test binary that every
// package has; a package's own (-diff.seeds) must be defined by its tests.
var goTestFlags = []string{"v", "race", "count", "run", "bench", "benchmem", "benchtime", "short", "timeout", "fuzz", "fuzztime", "cpu", "args", "json"}

// checkGoTest checks a go test command: its packages exist, its -run and
// -bench patterns match tests of theirs, and its other flags are go test's
// or defined by the packages' tests.
func checkGoTest(t *testing.T, c docCommand, args []string) {
	t.Helper()
	var pkgs []string
	var flags [][2]string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, a)
		case strings.HasPrefix(a, "-"):
			name, val, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if !ok && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.HasPrefix(args[i+1], "./") && !slices.Contains([]string{"v", "race", "benchmem", "short", "args", "json"}, name) && !strings.HasPrefix(name, "e2e") && name != "mutants" {
				i++
				val = args[i]
			}
			flags = append(flags, [2]string{name, strings.Trim(val, `'"`)})
		}
	}
	if len(pkgs) == 0 {
		if c.block { // in running text, a flag named in a sentence
			t.Errorf("%v: names no package", c)
		}
		return
	}
	var src strings.Builder // the packages' test sources
	for _, p := range pkgs {
		dir := strings.TrimSuffix(strings.TrimSuffix(p, "..."), "/")
		if dir == "." {
			continue // ./...: every package
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if len(files) == 0 {
			t.Errorf("%v: no tests in %s", c, dir)
		}
		for _, f := range files {
			b, _ := os.ReadFile(f)
			src.Write(b)
		}
	}
	for _, f := range flags {
		name, val := f[0], f[1]
		switch {
		case name == "run" || name == "bench" || name == "fuzz":
			re, err := regexp.Compile(val)
			if err != nil {
				t.Errorf("%v: -%s %q: %v", c, name, val, err)
				continue
			}
			prefix := map[string]string{"run": "Test", "bench": "Benchmark", "fuzz": "Fuzz"}[name]
			matched := false
			for _, m := range regexp.MustCompile(`(?m)^func (`+prefix+`\w*)\(`).FindAllStringSubmatch(src.String(), -1) {
				matched = matched || re.MatchString(m[1])
			}
			if !matched && val != "^$" {
				t.Errorf("%v: -%s %s matches no %s function of %v", c, name, val, prefix, pkgs)
			}
		case slices.Contains(goTestFlags, name):
		case !strings.Contains(src.String(), `"`+name+`"`):
			t.Errorf("%v: no test of %v defines the flag -%s", c, pkgs, name)
		}
	}
}

// checkGoTool checks a go run, go build or go install command: the package
// is a directory of the repository, and for go run of a tool other than
// pmlin, its flags are defined in the tool's source.
func checkGoTool(t *testing.T, c docCommand, kind string, args []string) {
	t.Helper()
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "./") })
	if i < 0 {
		if c.block {
			t.Errorf("%v: names no package", c)
		}
		return
	}
	dir := args[i]
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Errorf("%v: no directory %s", c, dir)
		return
	}
	if kind != "go run" {
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var src strings.Builder
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			b, _ := os.ReadFile(f)
			src.Write(b)
		}
	}
	for _, a := range args[i+1:] {
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && !strings.Contains(src.String(), `"`+name+`"`) {
			t.Errorf("%v: %s defines no flag -%s", c, dir, name)
		}
	}
}

// checkLinks fails t for each relative link of the documents (and of
// docs/README.md) whose file does not exist.
func checkLinks(t *testing.T) {
	t.Helper()
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, doc := range append(slices.Clone(commandDocs), "docs/README.md") {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				if strings.Contains(m[1], "://") {
					continue
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(doc), m[1])); err != nil {
					t.Errorf("%s:%d: the link %s leads nowhere", doc, i+1, m[1])
				}
			}
		}
	}
}

// TestDocGoBlocks: every Go block of the README and the docs is part of the
// file the text before it names (the last `FILE.go` mentioned), so that the
// code a reader copies is code that compiles and whose tests run.
func TestDocGoBlocks(t *testing.T) {
	t.Chdir("..")
	fileRef := regexp.MustCompile("`([\\w./-]+\\.go)`")
	blocks := 0
	for _, doc := range commandDocs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		var file string
		var block []string
		inGo := false
		for i, line := range strings.Split(string(b), "\n") {
			switch {
			case !inGo && line == "```go":
				inGo, block = true, nil
			case inGo && line == "```":
				inGo = false
				blocks++
				if file == "" {
					t.Errorf("%s:%d: a Go block names no file before it", doc, i+1)
					continue
				}
				src, err := os.ReadFile(file)
				if err != nil {
					t.Errorf("%s:%d: %v", doc, i+1, err)
				} else if !strings.Contains(string(src), strings.Join(block, "\n")) {
					t.Errorf("%s:%d: this Go block is not in %s:\n%s", doc, i+1, file, strings.Join(block, "\n"))
				}
			case inGo:
				block = append(block, line)
			default:
				if m := fileRef.FindAllStringSubmatch(line, -1); m != nil {
					file = m[len(m)-1][1]
				}
			}
		}
	}
	if blocks < 5 {
		t.Fatalf("%d Go blocks in %v: the extraction broke?", blocks, commandDocs)
	}
}

// TestDocCommandsRun runs the cheap commands of the README and checks what
// it says of their results: the history example is linearizable, the
// check of examples/dirty-bit.hist prints what the README shows, the
// mutant table lists every planted bug of every target, a planted bug is
// found, and the README's test command is the one .ci/run runs.
func TestDocCommandsRun(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	t.Chdir(root)

	// The two commands after cloning, as .ci/run's comment says.
	for _, want := range []string{"\n    go run ./cmd/pmlin fuzz ", "\n    go test -race ./... "} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md has no line %q", strings.TrimSpace(want))
		}
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^go test -race \./\.\.\.$`).Match(ci) || !strings.Contains(string(ci), "(the README's test command)") {
		t.Error(".ci/run does not run the README's test command, go test -race ./...")
	}

	// The history example of "Check a history" is linearizable.
	i := strings.Index(readme, "\n    pmlin-history v1")
	if i < 0 {
		t.Fatal("README.md has no history example")
	}
	var hist strings.Builder
	for _, line := range strings.Split(readme[i+1:], "\n") {
		if !strings.HasPrefix(line, "    ") {
			break
		}
		hist.WriteString(strings.TrimPrefix(line, "    ") + "\n")
	}
	if code, out, errs := pmlin(t, hist.String(), "check", "-"); code != 0 {
		t.Errorf("README's history example: exit %d, want 0 (linearizable)\n%s%s", code, out, errs)
	}

	// What the README shows of pmlin check examples/dirty-bit.hist is
	// what it prints.
	code, out, _ := pmlin(t, "", "check", "examples/dirty-bit.hist")
	if code != 1 {
		t.Errorf("pmlin check examples/dirty-bit.hist: exit %d, want 1", code)
	}
	if !strings.Contains(readme, indent(out)) {
		t.Errorf("README.md does not show what pmlin check examples/dirty-bit.hist prints:\n%s", out)
	}

	// The mutant table (docs/evidence.md, which the README links to)
	// lists every planted bug of every target, and no other.
	evidence, err := os.ReadFile(filepath.Join(root, "docs", "evidence.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| ([a-z0-9]+) \\|")
	var listedMutants, planted []string
	for _, m := range row.FindAllStringSubmatch(string(evidence), -1) {
		listedMutants = append(listedMutants, m[2]+"/"+m[1])
	}
	for _, tg := range testTargets {
		for _, m := range tg.Mutants {
			planted = append(planted, tg.Name+"/"+m.Name)
		}
	}
	slices.Sort(listedMutants)
	slices.Sort(planted)
	if !slices.Equal(listedMutants, planted) {
		t.Errorf("docs/evidence.md's table of planted bugs lists %v, the targets have %v", listedMutants, planted)
	}

	// A planted bug is found, as the quick start says, and the files it
	// keeps are those the README names.
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, errs := pmlin(t, "", "fuzz", "--mutant", "dirty-spurious-failure")
	if code != 1 || !strings.Contains(out, "VIOLATION") {
		t.Errorf("pmlin fuzz --mutant dirty-spurious-failure: exit %d, want 1 and a violation\n%s%s", code, out, errs)
	}
	for _, ext := range []string{".hist", ".txt", ".json", ".html", ".shrunk.hist", ".replay.sh"} {
		if m, _ := filepath.Glob(filepath.Join(dir, "pmlin-out", "*"+ext)); len(m) == 0 {
			t.Errorf("pmlin fuzz kept no pmlin-out/*%s", ext)
		}
	}

	// The recording example: pmlin run, then pmlin check of what it wrote.
	code, _, errs = pmlin(t, "", "run", "--threads", "3", "--ops", "14", "--words", "3", "--crashes", "1", "--seed", "2", "-o", "small.hist")
	if code != 0 {
		t.Fatalf("pmlin run: exit %d: %s", code, errs)
	}
	if code, out, errs := pmlin(t, "", "check", "small.hist"); code != 0 {
		t.Errorf("pmlin check small.hist: exit %d\n%s%s", code, out, errs)
	}
}

// indent indents every line of text by four spaces, as a Markdown code
// block shows it.
func indent(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "\n")
}
