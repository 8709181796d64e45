package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunBinaryObject: pmlin run --format binary of a data-structure
// target writes a binary history of version 2 whose text form is the
// text the same run writes, and pmlin check reads it with the same
// verdict.
func TestRunBinaryObject(t *testing.T) {
	for _, target := range []string{"dqueue", "levelhash", "pmlist"} {
		t.Run(target, func(t *testing.T) {
			dir := t.TempDir()
			bin, text := filepath.Join(dir, "r.pmlb"), filepath.Join(dir, "r.hist")
			run := []string{"run", "--target", target, "--seed", "3", "--ops", "60"}
			if code, _, errs := pmlin(t, "", append(run, "--format", "binary", "-o", bin)...); code != 0 {
				t.Fatalf("run --format binary: exit %d, %s", code, errs)
			}
			if code, _, errs := pmlin(t, "", append(run, "-o", text)...); code != 0 {
				t.Fatalf("run: exit %d, %s", code, errs)
			}
			want, err := os.ReadFile(text)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(bin)
			if !strings.HasPrefix(string(raw), "\x89PMLINB2") {
				t.Fatalf("%s is not a binary history: %q", bin, raw[:min(len(raw), 16)])
			}
			code, got, errs := pmlin(t, "", "convert", bin)
			if code != 0 || got != string(want) {
				t.Fatalf("convert: exit %d, %s; text form:\n%s\nwant:\n%s", code, errs, got, want)
			}
			c1, out1, _ := pmlin(t, "", "check", "--json", text)
			c2, out2, _ := pmlin(t, "", "check", "--json", bin)
			if c1 != c2 || strings.ReplaceAll(out2, bin, text) != out1 {
				t.Errorf("check of the binary: exit %d\n%s\nof the text: exit %d\n%s", c2, out2, c1, out1)
			}
		})
	}
}
