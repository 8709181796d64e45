package pmlintest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmlin/pmlin"
)

// ArtifactsEnv names the environment variable that, when set to a
// directory, makes Check keep its files there (under a directory named
// after the test) instead of in the test's t.ArtifactDir().
const ArtifactsEnv = "PMLIN_ARTIFACTS"

// Check checks a history recorded by a test (package pmlin: operations
// with timestamps, and crashes) and returns the result. When the history
// is not linearizable, or cannot be judged (a *pmlin.Error, which names
// the operation), it fails t with t.Errorf, so that a test may check
// several histories, and keeps as test artifacts:
//
//	NAME.hist    the history as checked (text format; each invocation line
//	             ends with "# op I", I its index in h.Operations)
//	NAME.txt     the report: each anomaly, its operations and their reasons
//	NAME.html    the self-contained HTML report (timeline and graph; for
//	             a history of objects, each object's timeline)
//
// NAME is opts.Name ("history" by default; -2, -3... when taken), and the
// failure message names every file kept. They go to t.ArtifactDir():
// `go test -artifacts` keeps them under -outputdir (by default the
// package's directory, in _artifacts/); without -artifacts that directory
// is removed after the test, and the message says so. With the
// environment variable PMLIN_ARTIFACTS set to a directory, they go to
// $PMLIN_ARTIFACTS/TEST-NAME/ instead, and stay. A history that passes
// keeps nothing. The result is nil when the history cannot be judged.
func Check(t testing.TB, h pmlin.History, opts pmlin.Options) *pmlin.Result {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "history"
	}
	ctx := context.Background()
	res, err := pmlin.Check(ctx, h, opts)
	if err == nil && res.Linearizable {
		return res
	}
	dir, kept, note := artifactDir(t)
	base := freeBase(dir, opts.Name)
	var files []string
	keep := func(ext, what string, write func(io.Writer) error) {
		var b bytes.Buffer
		if write(&b) != nil {
			return
		}
		if p, werr := writeArtifact(base, ext, b.Bytes()); werr != nil {
			files = append(files, fmt.Sprintf("  (%s not kept: %v)", what, werr))
		} else {
			files = append(files, fmt.Sprintf("  %s   %s", p, what))
		}
	}
	var msg strings.Builder
	if err != nil {
		fmt.Fprintf(&msg, "pmlin: %s cannot be checked: %v\n", opts.Name, err)
		var pe *pmlin.Error
		if errors.As(err, &pe) && !errors.Is(err, context.Canceled) {
			keep(".hist", "the history, as text", func(w io.Writer) error { _, err := h.WriteTo(w); return err })
		}
	} else {
		res.WriteReport(&msg)
		keep(".hist", "the history as checked (an invocation's \"# op I\" is h.Operations[I])", res.WriteHistory)
		keep(".txt", "the report", res.WriteReport)
		keep(".html", "the HTML report", func(w io.Writer) error { return res.WriteHTML(ctx, w) })
	}
	if len(files) > 0 {
		fmt.Fprintf(&msg, "\nkept (%s):\n%s\n", note, strings.Join(files, "\n"))
	}
	if !kept {
		fmt.Fprintf(&msg, "(these files are removed after the test: go test -artifacts keeps them, or set %s=DIR)\n", ArtifactsEnv)
	}
	t.Errorf("%s", msg.String())
	return res
}

// artifactDir is where Check keeps its files, whether they outlive the
// test, and a note saying where that is.
func artifactDir(t testing.TB) (dir string, kept bool, note string) {
	if root := os.Getenv(ArtifactsEnv); root != "" {
		dir = filepath.Join(root, safeName(t.Name()))
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir, true, "in $" + ArtifactsEnv
		}
	}
	f := flag.Lookup("test.artifacts")
	kept = f != nil && f.Value.String() == "true"
	return t.ArtifactDir(), kept, "test artifacts"
}

// safeName turns a test's name (with subtests' slashes) into a directory
// name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// freeBase is dir/NAME, or dir/NAME-2 and so on when a file of that name
// is kept already: a test that checks several histories keeps them all.
func freeBase(dir, name string) string {
	name = safeName(name)
	for n := 1; ; n++ {
		base := filepath.Join(dir, name)
		if n > 1 {
			base = filepath.Join(dir, fmt.Sprintf("%s-%d", name, n))
		}
		taken := false
		for _, ext := range []string{".hist", ".txt", ".html"} {
			if _, err := os.Lstat(base + ext); err == nil {
				taken = true
			}
		}
		if !taken {
			return base
		}
	}
}

// writeArtifact writes data to base+ext, which must not exist.
func writeArtifact(base, ext string, data []byte) (string, error) {
	p := base + ext
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return p, err
}
