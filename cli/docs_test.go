package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCLIContractDocumentsEveryFlag keeps docs/cli-contract.md true to the
// binary: every command `pmlin -h` lists has a section "## pmlin NAME", every
// flag its `-h` lists appears there (fuzz may rely on run's table of the
// shared workload flags), and a default that -h shows as one token is a
// word of the default column of that flag's row. It reads the help as a user
// sees it, so a new command or flag fails here until it is documented.
func TestCLIContractDocumentsEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../docs/cli-contract.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	section := func(name string) string {
		i := strings.Index(doc, "\n## pmlin "+name+" ")
		if i < 0 {
			i = strings.Index(doc, "\n## pmlin "+name+"\n")
		}
		if i < 0 {
			return ""
		}
		s := doc[i+1:]
		if j := strings.Index(s, "\n## "); j >= 0 {
			s = s[:j]
		}
		return s
	}
	code, out, _ := pmlin(t, "", "-h")
	if code != 0 {
		t.Fatalf("pmlin -h: exit %d", code)
	}
	cmds := listed(out, "Available Commands:", regexp.MustCompile(`^\s+(\S+)\s`))
	if len(cmds) < 6 {
		t.Fatalf("pmlin -h lists %v: expected at least check, run, fuzz, mutants, gen, bench", cmds)
	}
	flagLine := regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)(?: \S+)?\s{2,}(.*)$`)
	defaultOf := regexp.MustCompile(`\(default "?([^)\s;"]+)"?\)`)
	for _, cmd := range cmds {
		if cmd == "help" || cmd == "completion" {
			continue
		}
		sec := section(cmd)
		if sec == "" {
			t.Errorf("docs/cli-contract.md has no section \"## pmlin %s\"", cmd)
			continue
		}
		if cmd == "fuzz" {
			sec += section("run") // the workload flags are in run's table
		}
		_, help, _ := pmlin(t, "", cmd, "-h")
		for _, m := range listedMatches(help, "Flags:", flagLine) {
			name, usage := m[1], m[2]
			if name == "help" {
				continue
			}
			row := flagRow(sec, name)
			if row == nil {
				t.Errorf("pmlin %s --%s is not in the flag tables of docs/cli-contract.md", cmd, name)
				continue
			}
			if d := defaultOf.FindStringSubmatch(usage); d != nil && !hasToken(row[2], d[1]) {
				t.Errorf("pmlin %s --%s: -h says default %s, docs/cli-contract.md says %q", cmd, name, d[1], strings.TrimSpace(row[2]))
			}
		}
	}
}

// flagRow is the first table row of sec whose first cell names --name,
// split into its cells.
func flagRow(sec, name string) []string {
	re := regexp.MustCompile(`--` + regexp.QuoteMeta(name) + `\b`)
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "/"), "|")
		if len(cells) > 3 && re.MatchString(cells[1]) && !strings.Contains(cells[1], "--"+name+"-") {
			return cells
		}
	}
	return nil
}

// hasToken reports whether a table cell holds tok as one of its words.
func hasToken(cell, tok string) bool {
	for _, w := range strings.Fields(cell) {
		if strings.Trim(w, "`:;()") == tok {
			return true
		}
	}
	return false
}

// listed returns the first submatch of re on each line of the block that
// follows heading in a cobra help text.
func listed(help, heading string, re *regexp.Regexp) []string {
	var out []string
	for _, m := range listedMatches(help, heading, re) {
		out = append(out, m[1])
	}
	return out
}

func listedMatches(help, heading string, re *regexp.Regexp) [][]string {
	i := strings.Index(help, heading+"\n")
	if i < 0 {
		return nil
	}
	var out [][]string
	for _, line := range strings.Split(help[i+len(heading)+1:], "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		if m := re.FindStringSubmatch(line); m != nil {
			out = append(out, m)
		}
	}
	return out
}
