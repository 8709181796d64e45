package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunBinaryConvert: a binary recording converts to the text recording
// of the same flags, byte for byte; check reads the binary history
// directly, with the same verdict; convert keeps the input and refuses
// damaged input with its place.
func TestRunBinaryConvert(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "--threads", "3", "--ops", "300", "--words", "5", "--crashes", "2", "--seed", "7"}
	code, text, errs := pmlin(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	bin := filepath.Join(dir, "h.pmlb")
	if code, _, errs := pmlin(t, "", append(args, "--format", "binary", "-o", bin)...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, back, errs := pmlin(t, "", "convert", bin)
	if code != 0 || back != text || !strings.Contains(errs, "binary -> text") {
		t.Fatalf("exit %d, %s; the binary recording as text differs from the text recording:\n%s", code, errs, back)
	}
	code, out, _ := pmlin(t, "", "check", bin)
	if code != 0 || !strings.Contains(out, "LINEARIZABLE") {
		t.Fatalf("check of the binary history: exit %d\n%s", code, out)
	}
	// Text to binary and back.
	txt := writeFile(t, "h.hist", text)
	bin2 := filepath.Join(dir, "h2.pmlb")
	if code, _, errs := pmlin(t, "", "convert", "--to", "binary", txt, "-o", bin2); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, back, _ := pmlin(t, "", "convert", bin2); code != 0 || back != text {
		t.Fatalf("text to binary to text: exit %d\n%s", code, back)
	}
	// Never the input, never an existing file without --force.
	if code, _, errs := pmlin(t, "", "convert", "--to", "binary", bin2, "-o", bin2, "--force"); code != 2 || !strings.Contains(errs, "is the input") {
		t.Fatalf("convert onto its input: exit %d, %s", code, errs)
	}
	if code, _, errs := pmlin(t, "", "convert", "--to", "binary", txt, "-o", bin2); code != 2 || !strings.Contains(errs, "exists") {
		t.Fatalf("convert onto a file: exit %d, %s", code, errs)
	}
	// A damaged binary history: exit 2, the place named, nothing kept.
	b, _ := os.ReadFile(bin)
	cut := filepath.Join(dir, "cut.pmlb")
	os.WriteFile(cut, b[:len(b)-24], 0o644)
	dst := filepath.Join(dir, "cut.hist")
	if code, _, errs := pmlin(t, "", "convert", cut, "-o", dst); code != 2 || !strings.Contains(errs, "cut.pmlb") || !strings.Contains(errs, "byte offset") {
		t.Fatalf("damaged input: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Fatal("a failed conversion left its output")
	}
	if code, _, errs := pmlin(t, "", "check", cut); code != 2 || !strings.Contains(errs, "cut short") {
		t.Fatalf("check of a damaged binary history: exit %d, %s", code, errs)
	}
	if code, _, errs := pmlin(t, "", "convert", "--to", "json", txt); code != 2 || !strings.Contains(errs, "text or binary") {
		t.Fatalf("--to json: exit %d, %s", code, errs)
	}
}

// TestConvertV2: a version 2 history converts between text and JSON Lines
// line for line (and back to the same text); the binary history and JSON
// Lines output are refused for the version they do not hold; malformed
// input is refused with its line, nothing written.
func TestConvertV2(t *testing.T) {
	src, err := os.ReadFile("../internal/history/testdata/v2/words.hist")
	if err != nil {
		t.Fatal(err)
	}
	in := writeFile(t, "w.hist", string(src))
	code, jsonl, errs := pmlin(t, "", "convert", "--to", "jsonl", in)
	if code != 0 || !strings.Contains(errs, "text -> jsonl") || !strings.Contains(jsonl, "\n"+`{"header":"pmlin-history v2"}`+"\n") {
		t.Fatalf("exit %d, %s\n%s", code, errs, jsonl)
	}
	if n, m := strings.Count(jsonl, "\n"), strings.Count(string(src), "\n"); n != m {
		t.Fatalf("%d lines from %d", n, m)
	}
	// Back to text: the text as pmlin writes it (init 10=0x5 becomes
	// init 10=5), which is also what text converts to.
	_, text, _ := pmlin(t, "", "convert", in)
	code, back, errs := pmlin(t, jsonl, "convert", "-")
	if code != 0 || back != text || len(back) < len(src)-10 {
		t.Fatalf("back to text: exit %d, %s\n%s", code, errs, back)
	}
	// To binary and back: the file's bytes (its lines that hold no
	// event, init 10=0x5 too, are text records as they are).
	bin := filepath.Join(t.TempDir(), "w.pmlb")
	if code, _, errs := pmlin(t, "", "convert", "--to", "binary", "-o", bin, in); code != 0 || !strings.Contains(errs, "text -> binary") {
		t.Fatalf("--to binary: exit %d, %s", code, errs)
	}
	if code, back, errs := pmlin(t, "", "convert", bin); code != 0 || back != string(src) || !strings.Contains(errs, "binary -> text") {
		t.Fatalf("binary back to text: exit %d, %s\n%s", code, errs, back)
	}
	v1 := writeFile(t, "v1.hist", "1 inv read 1\n1 ret 0\n")
	if code, _, errs := pmlin(t, "", "convert", "--to", "jsonl", v1); code != 2 || !strings.Contains(errs, "--to jsonl writes version 2 histories") {
		t.Fatalf("--to jsonl of version 1: exit %d, %s", code, errs)
	}
	bad := writeFile(t, "bad.hist", "pmlin-history v2\nobject q queue\n1 inv r deq\n")
	dst := filepath.Join(t.TempDir(), "out.jsonl")
	if code, _, errs := pmlin(t, "", "convert", "--to", "jsonl", bad, "-o", dst); code != 2 || !strings.Contains(errs, "bad.hist:3:7: object r is not declared") {
		t.Fatalf("malformed: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Fatal("a failed conversion left its output")
	}
}
