package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// pmlinModule is the module path of pmlin, named among the dependencies
// of a pmlin of one's own (cli.Main in another module).
const pmlinModule = "github.com/pmlin/pmlin"

// versionText says which build this is, from what the Go toolchain
// recorded in the binary (debug.ReadBuildInfo): the main module's path and
// version ("(devel)" for a build from a checkout, the tag for go install
// MODULE@VERSION), pmlin's version when the main module is another (a
// pmlin of one's own), the VCS revision, its commit time and whether the
// tree had uncommitted changes (recorded by go build in a checkout, not by
// go run or go test), then the Go version and platform. ok is
// ReadBuildInfo's.
func versionText(prog string, bi *debug.BuildInfo, ok bool) string {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if !ok || bi == nil {
		return fmt.Sprintf("%s: version unknown (the binary carries no build information), %s %s", prog, runtime.Version(), platform)
	}
	parts := []string{fmt.Sprintf("%s %s", prog, orUnknown(bi.Main.Version))}
	if bi.Main.Path != "" {
		parts[0] += " (module " + bi.Main.Path + ")"
	}
	if bi.Main.Path != pmlinModule {
		for _, d := range bi.Deps {
			if d.Path == pmlinModule {
				parts = append(parts, "pmlin "+orUnknown(d.Version))
			}
		}
	}
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if rev := vcs["vcs.revision"]; rev != "" {
		r := "revision " + rev
		var notes []string
		if t := vcs["vcs.time"]; t != "" {
			notes = append(notes, t)
		}
		if vcs["vcs.modified"] == "true" {
			notes = append(notes, "with uncommitted changes")
		}
		if len(notes) > 0 {
			r += " (" + strings.Join(notes, ", ") + ")"
		}
		parts = append(parts, r)
	}
	goVersion := bi.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	parts = append(parts, goVersion+" "+platform)
	return strings.Join(parts, ", ")
}

func orUnknown(v string) string {
	if v == "" {
		return "(unknown version)"
	}
	return v
}

// buildVersion is versionText of this binary.
func buildVersion(prog string) string {
	bi, ok := debug.ReadBuildInfo()
	return versionText(prog, bi, ok)
}

// versionCommand is pmlin version: what pmlin --version prints.
func versionCommand(e env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this pmlin (as --version does)",
		Long: `version prints the module version of this binary, the VCS revision it was
built from (with its time, and whether the tree had uncommitted changes) when
the build recorded one, and the Go version and platform, on one line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(e.stdout, buildVersion(e.prog))
			return nil
		},
	}
}
