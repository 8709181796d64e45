package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/internal/history"
)

// sniffSize is how much of an input is looked at for its version
// (history.Version): leading comments longer than this make a version 2
// history read as version 1, which then refuses its header.
const sniffSize = 64 << 10

// convertCommand converts a history between the syntaxes the Reader reads
// (text, JSON Lines, binary) and those pmlin writes (text, binary).
func convertCommand(e env) *cobra.Command {
	var (
		out, to string
		force   bool
	)
	cmd := &cobra.Command{
		Use:   "convert [flags] FILE|-",
		Short: "Convert a history between the text, JSON Lines and binary syntaxes",
		Long: `convert reads a history in any syntax pmlin reads (text, JSON Lines, or the
binary history that pmlin run --format binary records) and writes it as text
(--to text, the default) or as a binary history (--to binary). Every
operation keeps its line, so reports of the converted file name the same
operations: the header, init lines, comments and blank lines are kept where
they were (a comment at the end of an event line is not). A binary history
converted to text is the text pmlin would have recorded, byte for byte.

A version 2 history (objects of any data type) converts between text and
JSON Lines (--to jsonl), line for line; the binary history is version 1
only.

The history goes to -o FILE (never overwritten without --force; never the
input) or standard output (binary only if it is not a terminal). Exit status:
0 converted; 2 the input is malformed (the message names the line, or for a
binary history the byte offset) or a usage error (nothing is kept).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConvert(cmd.Context(), e, args[0], to, out, force)
		},
	}
	cmd.Flags().StringVar(&to, "to", "text", "the syntax to write: text, jsonl (a version 2 history) or binary (a version 1 history)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of standard output (never overwritten without --force)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite --output if it exists")
	return cmd
}

func runConvert(ctx context.Context, e env, in, to, out string, force bool) error {
	if to != "text" && to != "binary" && to != "jsonl" {
		return &exitError{exitInput, fmt.Errorf("--to %q: text or binary (a version 1 history), text, jsonl or binary (a version 2 history)", to)}
	}
	toFile := out != "" && out != "-"
	if toFile && in != "-" && sameFile(in, out) {
		return &exitError{exitInput, fmt.Errorf("-o %s is the input: it would be overwritten", out)}
	}
	if f, ok := e.stdout.(*os.File); ok && !toFile && to == "binary" && isTerminal(f) {
		return &exitError{exitInput, errors.New("a binary history is not for a terminal: write it to a file (-o FILE) or a pipe")}
	}
	var src io.Reader = e.stdin
	name := "<stdin>"
	if in != "-" {
		f, err := os.Open(in)
		if err != nil {
			return &exitError{exitInput, err}
		}
		defer f.Close()
		src, name = f, in
	}
	br := bufio.NewReaderSize(src, sniffSize)
	src = br
	v2 := history.Version(br) == 2
	switch {
	case !v2 && to == "jsonl":
		return &exitError{exitInput, fmt.Errorf("%s: --to jsonl writes version 2 histories; a version 1 history converts to text or binary", name)}
	}
	var st history.ConvertStats
	write := func(w io.Writer) error {
		if v2 {
			syntax := history.Text
			switch to {
			case "jsonl":
				syntax = history.JSONL
			case "binary":
				syntax = history.Binary
			}
			var err error
			st, err = history.ConvertV2(w, src, name, syntax)
			return err
		}
		var dst history.EventWriter = history.NewWriter(w)
		if to == "binary" {
			dst = history.NewBinaryWriter(w)
		}
		var err error
		st, err = history.Convert(ctx, dst, src, name, history.Options{})
		return err
	}
	dest := "standard output"
	var err error
	if toFile {
		err, dest = createOutput(ctx, out, force, write), out
	} else {
		err = write(e.stdout)
	}
	if err != nil {
		return &exitError{exitInput, err}
	}
	fmt.Fprintf(e.stderr, "pmlin convert: %d events, %d lines, %s -> %s (%s)\n", st.Events, st.Lines, st.From, to, dest)
	return nil
}
