package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// apply returns src with the mutant's anchor replaced, and the 1-based
// number of the line that changed. The anchor must occur exactly once, and
// the replacement must differ from it in exactly one line.
func (m Mutant) apply(src []byte) ([]byte, int, error) {
	if n := bytes.Count(src, []byte(m.Anchor)); n != 1 || m.Anchor == "" {
		return nil, 0, fmt.Errorf("mutant %s: anchor %q occurs %d times in %s, want once", m.Name, m.Anchor, n, m.File)
	}
	from, to := strings.Split(m.Anchor, "\n"), strings.Split(m.Replace, "\n")
	if len(from) != len(to) {
		return nil, 0, fmt.Errorf("mutant %s: the replacement has %d lines, the anchor %d", m.Name, len(to), len(from))
	}
	changed := -1
	for i := range from {
		if from[i] != to[i] {
			if changed >= 0 {
				return nil, 0, fmt.Errorf("mutant %s: changes lines %d and %d of its anchor, want one", m.Name, changed+1, i+1)
			}
			changed = i
		}
	}
	if changed < 0 {
		return nil, 0, fmt.Errorf("mutant %s: the replacement equals the anchor", m.Name)
	}
	at := bytes.Index(src, []byte(m.Anchor))
	line := 1 + bytes.Count(src[:at], []byte("\n")) + changed
	out := make([]byte, 0, len(src)+len(m.Replace)-len(m.Anchor))
	out = append(out, src[:at]...)
	out = append(out, m.Replace...)
	out = append(out, src[at+len(m.Anchor):]...)
	return out, line, nil
}

// A workspace is a private copy of the module in which mutants are applied
// one at a time; the module itself is never written.
type workspace struct {
	dir string
}

// skipDirs are not copied: version control and the outputs of fuzz and of
// this tool.
var skipDirs = map[string]bool{".git": true, "pmlin-out": true, "mutation-out": true}

// newWorkspace copies the module rooted at module into a new directory
// under parent. Directories named in skipDirs, and out (the tool's output
// directory, if inside the module), are left out; only regular files are
// copied.
func newWorkspace(module, parent, out string) (*workspace, error) {
	dir, err := os.MkdirTemp(parent, "module-")
	if err != nil {
		return nil, err
	}
	absOut, _ := filepath.Abs(out)
	err = filepath.WalkDir(module, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(module, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel != "." && (skipDirs[d.Name()] || path == absOut) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, info.Mode().Perm())
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("copying the module: %w", err)
	}
	return &workspace{dir: dir}, nil
}

// with applies m in the workspace, runs fn, and restores the file whatever
// happens. It returns the line that changed.
func (ws *workspace) with(m Mutant, fn func() error) (int, error) {
	path := filepath.Join(ws.dir, m.File)
	orig, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	mutated, line, err := m.apply(orig)
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		return line, err
	}
	runErr := fn()
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		return line, fmt.Errorf("restoring %s: %w", m.File, err)
	}
	return line, runErr
}
