package cli

import (
	"encoding/binary"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// logFile writes a log file of the recorders (recorders/README.md, "The
// file format") with one thread whose records are events (kind, n,
// timestamp, payload...), committed; torn: the last one begun and not.
func logFile(t *testing.T, path string, gen uint64, closed, torn bool, events ...[]uint64) {
	t.Helper()
	const page = 512
	words := make([]uint64, 3*page)
	nonce := uint64(77)
	copy(words, []uint64{0x31474C4E494C4D50, 1, 0x0102030405060708, gen, 1, nonce, page, page, page, 99})
	check := func(seed uint64, off int, w []uint64) uint64 {
		h := seed + uint64(off)*0xA0761D6478BD642F
		for i, x := range w {
			h ^= bits.RotateLeft64(x, 7*i&63)
		}
		return ((h ^ h>>32) * 0xD6E8FEB86659FD93) >> 33
	}
	put := func(log, base, pos int, w []uint64, commit bool) int {
		copy(words[base+pos:], w)
		if commit {
			words[base+pos] |= check(nonce+uint64(log)*0xD6E8FEB86659FD93, pos, w)<<32 | 1<<63
		}
		return pos + len(w)
	}
	if closed {
		put(0, page, 0, []uint64{21, 1 << 40}, true)
	}
	pos := 0
	for i, e := range events {
		pos = put(1, 2*page, pos, append([]uint64{e[0] | e[1]<<8}, e[2:]...), !torn || i < len(events)-1)
	}
	b := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGatherCommand(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	os.Mkdir(logs, 0o755)
	// Generation 1: a read, a cas torn by the kill; generation 2 reads
	// after recovery and closes.
	logFile(t, filepath.Join(logs, "gen-000001.pmlog"), 1, false, true, []uint64{1, 1, 10, 5}, []uint64{4, 1, 20, 0}, []uint64{2, 1, 30, 5, 0, 0x100000001})
	logFile(t, filepath.Join(logs, "gen-000002.pmlog"), 2, true, false, []uint64{1, 1, 100, 5}, []uint64{4, 1, 110, 0})
	out := filepath.Join(dir, "h.hist")
	existing := writeFile(t, "existing.hist", "keep me\n")
	want := "pmlin-history v1\n0 inv read 5\n0 ret 0\ncrash\n0 inv read 5\n0 ret 0\n"
	for _, c := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string // substrings, besides comments for stdout
	}{
		{"to standard output", []string{"gather", logs}, 0, want, "thread 0: a torn record cut (a cas invocation, 5 words at byte offset 8240)"},
		{"to a file", []string{"gather", "-o", out, logs}, 0, "", "2 generations (1 followed by a crash line), 1 torn record cut, 1 process, 2 operations, 1 crash"},
		{"never over an existing file", []string{"gather", "-o", existing, logs}, 2, "", "the file exists (use --force to overwrite it)"},
		{"never over a log", []string{"gather", "--force", "-o", filepath.Join(logs, "gen-000001.pmlog"), logs}, 2, "", "is one of the logs"},
		{"a directory without logs", []string{"gather", dir}, 2, "", dir + ": no log files (gen-NNNNNN.pmlog) in this directory"},
		{"a missing path", []string{"gather", filepath.Join(dir, "nope")}, 2, "", "no such file"},
		{"not a log", []string{"gather", existing}, 2, "", existing + ": not a pmlin log file"},
		{"no argument", []string{"gather"}, 2, "", "requires at least 1 arg"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := pmlin(t, "", c.args...)
			if code != c.code || !strings.Contains(withoutHashLines(stdout), c.stdout) || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("exit %d, stdout\n%s\nstderr\n%s\nwant exit %d, %q, %q", code, stdout, stderr, c.code, c.stdout, c.stderr)
			}
		})
	}
	if b, err := os.ReadFile(out); err != nil || withoutHashLines(string(b)) != want {
		t.Fatalf("%v\n%s", err, b)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me\n" {
		t.Fatal("an existing file was changed")
	}
}

func withoutHashLines(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}
