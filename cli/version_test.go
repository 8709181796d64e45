package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionText: what the build recorded is said, and nothing it did
// not record.
func TestVersionText(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}, {Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "e9ac0ad69588a79b232e5e34e1f0e2c7c0729422"},
		{Key: "vcs.time", Value: "2026-11-27T20:11:39Z"}, {Key: "vcs.modified", Value: "true"}}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want []string
		not  []string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: pmlinModule, Version: "v1.4.0"}},
			[]string{"pmlin v1.4.0 (module github.com/pmlin/pmlin)", "go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH}, []string{"revision"}},
		{"checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: pmlinModule, Version: "(devel)"}, Settings: vcs},
			[]string{"pmlin (devel)", "revision e9ac0ad69588a79b232e5e34e1f0e2c7c0729422 (2026-11-27T20:11:39Z, with uncommitted changes)"}, nil},
		{"clean checkout", &debug.BuildInfo{Main: debug.Module{Path: pmlinModule, Version: "(devel)"}, Settings: vcs[:4]},
			[]string{"revision e9ac0ad69588a79b232e5e34e1f0e2c7c0729422 (2026-11-27T20:11:39Z)", runtime.Version()}, []string{"uncommitted"}},
		{"own pmlin", &debug.BuildInfo{Main: debug.Module{Path: "example.com/mypmlin", Version: "v0.2.0"},
			Deps: []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.49.0"}, {Path: pmlinModule, Version: "v1.4.0"}}},
			[]string{"mypmlin v0.2.0 (module example.com/mypmlin), pmlin v1.4.0"}, []string{"x/sys"}},
	}
	for _, tc := range tests {
		prog := "pmlin"
		if tc.name == "own pmlin" {
			prog = "mypmlin"
		}
		got := versionText(prog, tc.bi, true)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: %q says %q", tc.name, got, w)
			}
		}
		if strings.Contains(got, "\n") {
			t.Errorf("%s: %q is not one line", tc.name, got)
		}
	}
	if got := versionText("pmlin", nil, false); !strings.Contains(got, "version unknown") {
		t.Errorf("no build info: %q", got)
	}
}

// TestVersionCommand: pmlin --version, -v and pmlin version print the same
// line, this binary's, and exit 0.
func TestVersionCommand(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	want := versionText("pmlin", bi, ok) + "\n"
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		code, out, errs := pmlin(t, "", args...)
		if code != 0 || out != want || errs != "" {
			t.Errorf("pmlin %s: exit %d, %q (want %q), stderr %q", strings.Join(args, " "), code, out, want, errs)
		}
	}
	if code, _, errs := pmlin(t, "", "version", "extra"); code != 2 || errs == "" {
		t.Errorf("pmlin version extra: exit %d, %q", code, errs)
	}
}
