package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// replayProgram is what a finding's replay script (replayScript) knows of
// the program that wrote it, to run the same program again.
type replayProgram struct {
	// exe is the program's absolute path; "" when unknown, or when it is
	// a temporary build of go run, deleted when go run exits.
	exe string
	// module is the directory of the Go module the program was built
	// from and pkg its main package, for go run; "" when not found.
	module, pkg string
}

// findReplayProgram finds the running program's path and, when the
// working directory is in the module it was built from (as for a user of
// go run ./cmd/pmlin in the repository), that module.
func findReplayProgram() replayProgram {
	var p replayProgram
	if exe, err := os.Executable(); err == nil && !goBuildTemp(exe) {
		if abs, err := filepath.Abs(exe); err == nil {
			p.exe = abs
		}
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path == "" || bi.Path == "" {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if modulePath(filepath.Join(dir, "go.mod")) == bi.Main.Path {
			p.module, p.pkg = dir, bi.Path
			return p
		}
		if filepath.Dir(dir) == dir {
			return p
		}
	}
}

// goBuildTemp reports whether exe is in a temporary directory of the go
// command (go run builds there: $GOTMPDIR or $TMPDIR/go-buildNNN/.../exe).
func goBuildTemp(exe string) bool {
	for _, part := range strings.Split(filepath.ToSlash(exe), "/") {
		if strings.HasPrefix(part, "go-build") {
			return true
		}
	}
	return false
}

// modulePath is the module path a go.mod declares, "" if none.
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// replaySetting is what a replay script of pmlin fuzz --exec adds: the
// directory it runs in ("": any) and comment lines.
type replaySetting struct {
	dir   string
	notes []string
}

// replayScript is a finding's replay script: it runs the replay command
// (run, with -o its history AGAIN beside the script, then check), as
// given by args (after the program), in rs.dir if set, with the first
// program found of:
// $PMLIN if set (a command line, split at blanks: PMLIN='go run
// ./cmd/pmlin' in the repository), the program that wrote the script if
// it is still there, name on the PATH, go run of the module the program
// was built from. It works from any directory: its paths are the
// script's own directory's.
func replayScript(p replayProgram, name, replays string, runArgs []string, again string, checkArgs []string, rs replaySetting) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n")
	fmt.Fprintf(&b, "# Kept by pmlin fuzz: re-records the history of the finding beside this script\n")
	fmt.Fprintf(&b, "# into %s (%s) and checks it.\n", again, replays)
	for _, n := range rs.notes {
		fmt.Fprintf(&b, "# %s\n", n)
	}
	fmt.Fprintf(&b, "# The program it runs: $PMLIN if set (a command, split at blanks, e.g.\n")
	fmt.Fprintf(&b, "# PMLIN='go run ./cmd/pmlin' in the repository); else the program that wrote\n")
	fmt.Fprintf(&b, "# this script if it is still there; else %s on the PATH", name)
	if p.module != "" {
		fmt.Fprintf(&b, "; else go run\n# of the module it was built from")
	}
	fmt.Fprintf(&b, ".\nset -f\n")
	fmt.Fprintf(&b, "here=$(CDPATH= cd -- \"$(dirname -- \"$0\")\" && pwd) || exit 2\n")
	fmt.Fprintf(&b, "if [ -n \"${PMLIN:-}\" ]; then\n\tpmlin() { $PMLIN \"$@\"; }\n")
	if p.exe != "" {
		fmt.Fprintf(&b, "elif [ -x %[1]s ]; then\n\tpmlin() { %[1]s \"$@\"; }\n", shellJoin([]string{p.exe}))
	}
	fmt.Fprintf(&b, "elif command -v %[1]s >/dev/null 2>&1; then\n\tpmlin() { command %[1]s \"$@\"; }\n", shellJoin([]string{name}))
	if p.module != "" {
		fmt.Fprintf(&b, "elif [ -f %[1]s ] && command -v go >/dev/null 2>&1; then\n\tpmlin() { go -C %[2]s run %[3]s \"$@\"; }\n",
			shellJoin([]string{filepath.Join(p.module, "go.mod")}), shellJoin([]string{p.module}), shellJoin([]string{p.pkg}))
	}
	fmt.Fprintf(&b, "else\n\techo \"$0: %s not found: set PMLIN to the pmlin to run (a path, or a command such as 'go run ./cmd/pmlin')\" >&2\n\texit 127\nfi\n", name)
	if rs.dir != "" {
		fmt.Fprintf(&b, "# The directory the campaign ran in: the program's path and arguments are as given there.\n")
		fmt.Fprintf(&b, "cd %s || exit 2\n", shellJoin([]string{rs.dir}))
	}
	againPath := `"$here"/` + shellJoin([]string{again})
	fmt.Fprintf(&b, "pmlin %s -o %s && pmlin %s %s\n", shellJoin(runArgs), againPath, shellJoin(checkArgs), againPath)
	return b.String()
}
