package shellword

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"./prog --bug", []string{"./prog", "--bug"}},
		{"  python3\tx.py  --k 3 ", []string{"python3", "x.py", "--k", "3"}},
		{`prog 'a b' "c d" e\ f`, []string{"prog", "a b", "c d", "e f"}},
		{`prog 'it'\''s' "say \"hi\" \$HOME \\ \x"`, []string{"prog", "it's", `say "hi" $HOME \ \x`}},
		{`prog '' "" x''y`, []string{"prog", "", "", "xy"}},
		{"prog a\\\nb", []string{"prog", "ab"}},
		{"prog $HOME ~ *", []string{"prog", "$HOME", "~", "*"}},
		{"", nil},
		{"   ", nil},
	} {
		got, err := Split(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Split(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		// sh splits it the same way (where it would expand nothing).
		if sh, err := exec.LookPath("sh"); err == nil && !strings.ContainsAny(c.in, "$~*") && strings.TrimSpace(c.in) != "" {
			out, err := exec.Command(sh, "-c", `set -- `+c.in+`; for a in "$@"; do printf '[%s]' "$a"; done`).Output()
			var want strings.Builder
			for _, w := range c.want {
				want.WriteString("[" + w + "]")
			}
			if err != nil || string(out) != want.String() {
				t.Errorf("sh splits %q into %s (%v), Split into %q", c.in, out, err, c.want)
			}
		}
	}
	for _, bad := range []string{`prog 'a`, `prog "a`, `prog a\`, `prog "a\"`, "prog\nprog2", "prog; rm x", "prog | tee", "prog > out", "prog &", "prog `x`", "prog $(x)"} {
		if got, err := Split(bad); err == nil {
			t.Errorf("Split(%q) = %q, want an error", bad, got)
		}
	}
}

// TestJoinSplit: Join quotes words so that Split, and sh itself, give
// them back.
func TestJoinSplit(t *testing.T) {
	words := []string{"prog", "", "a b", "it's", `"q"`, "$HOME", "*", "\\", "tab\there", "new\nline", "ok-1.2/x=y"}
	line := Join(words)
	got, err := Split(line)
	if err != nil || !slices.Equal(got, words) {
		t.Fatalf("Split(Join(%q)) = %q, %v (line %s)", words, got, err, line)
	}
	if Join([]string{"./prog", "--k", "3"}) != "./prog --k 3" {
		t.Errorf("Join quotes words that need no quotes: %s", Join([]string{"./prog", "--k", "3"}))
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script := "for a in " + Join(words[1:]) + `; do printf '[%s]' "$a"; done`
	out, err := exec.Command(sh, "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, w := range words[1:] {
		want.WriteString("[" + w + "]")
	}
	if string(out) != want.String() {
		t.Errorf("sh read %q back as %q", words[1:], out)
	}
}
