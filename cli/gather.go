package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/internal/merge"
)

// gatherCommand turns the log files that the C and Python recorders keep
// in a file mapping (recorders/README.md, "Logs that survive a kill") into
// one history.
func gatherCommand(e env) *cobra.Command {
	var (
		out   string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "gather [flags] DIR|FILE...",
		Short: "Gather the logs a killed program's recorder left into one history",
		Long: `gather reads the log files that the C and Python recorders keep in a file
mapping (pmlin_open_logs, Recorder.open_logs): DIR/gen-NNNNNN.pmlog, one file
per run of the program (a generation), or log files named one by one. It reads
each log up to its last committed record, and cuts a record that a kill left
half written, saying where. It merges each generation's steps by timestamp
(the rules of pmlin merge), and writes the generations one after the other,
with a crash line after every generation that was killed or left an operation
pending: the operations pending at a kill are cut off by it. Each generation
starts with a comment saying what it was and what was cut.

The history goes to -o FILE (never overwritten without --force) or standard
output; a summary and the comments go to standard error. Exit status: 0
gathered, 2 an error (nothing is written): a log the program wrote over, a
misuse the recorder refused, missing or overlapping generations, and anything
pmlin merge refuses, each naming the file and the byte offset of the record.
The guarantees and the file format: recorders/README.md, "Logs that survive a
kill".`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGather(cmd.Context(), e, args, out, force)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the history to this file instead of standard output (never overwritten without --force)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite --output if it exists")
	return cmd
}

func runGather(ctx context.Context, e env, paths []string, out string, force bool) error {
	for _, p := range paths {
		// A log given by name, or one of a directory's (gen-NNNNNN.pmlog).
		inDir := strings.HasSuffix(out, ".pmlog") && sameFile(p, filepath.Dir(out))
		if out != "" && out != "-" && (sameFile(p, out) || inDir) {
			return &exitError{exitInput, fmt.Errorf("-o %s is one of the logs: it would be overwritten", out)}
		}
	}
	m, err := merge.Gather(paths...)
	return writeMerged(ctx, e, "gather", m, err, out, force)
}
