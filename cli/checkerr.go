package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/pmlin/pmlin/internal/analyzer"
	"github.com/pmlin/pmlin/internal/exact"
	"github.com/pmlin/pmlin/internal/history"
)

// The kinds of error of pmlin check --json (docs/cli-contract.md): what
// a script needs to tell apart, all of them exit 2.
const (
	kindMalformed  = "malformed"  // the input is not a well-formed history, or holds no operation
	kindAssumption = "assumption" // it breaks an assumption of the method in a way that matters
	kindUndecided  = "undecided"  // the analyzer did not decide it (search budget, interrupt)
	kindUsage      = "usage"      // the command line is wrong
	kindIO         = "io"         // a file could not be read or written
)

// errorJSON is the object pmlin check --json prints on exit 2.
type errorJSON struct {
	Error checkErrorJSON `json:"error"`
}

type checkErrorJSON struct {
	Kind string `json:"kind"`
	File string `json:"file"`
	// Line is 0 when no line is to blame; Column (when known) the first
	// byte of the token to blame.
	Line    int64  `json:"line"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// noOperation is the error of a history without any operation: an empty
// file, or one of comments, headers and crashes only. It proves nothing,
// and is most often a recorder that did not write or flush its logs.
func noOperation(name string) error {
	return &history.Error{File: name, Err: history.ErrIllFormed,
		Msg: "no operation: the history is empty or holds only comments, headers and crashes, which proves nothing (did the recorder write and flush its logs?)"}
}

// describe sorts an error of pmlin check into the kinds above, with its
// file and line; fallback is the kind of an error of no known type.
func describe(err error, file, fallback string) checkErrorJSON {
	d := checkErrorJSON{Kind: fallback, File: file, Message: err.Error()}
	var he *history.Error
	var ae *analyzer.AssumptionError
	var ue *analyzer.UndecidedError
	var pe *fs.PathError
	var me *analyzer.MemoryError
	switch {
	case errors.As(err, &he):
		d.File, d.Line, d.Column, d.Message = he.File, he.Line, he.Column, he.Msg
		switch {
		case errors.Is(he.Err, history.ErrCoarseClock):
			// A binary history's streams tie in a way no order of lines
			// states honestly: the clock's assumption, not the format's.
			d.Kind = kindAssumption
		case errors.Is(he.Err, history.ErrMalformed):
			d.Kind = kindMalformed
		default:
			d.Kind = kindIO // the reader stopped on an I/O error
		}
	case errors.As(err, &ae):
		d.Kind, d.File, d.Line = kindAssumption, ae.File, ae.Line
		d.Message = fmt.Sprintf("breaks Assumption %d: %s", ae.Assumption, ae.Msg)
	case errors.As(err, &me):
		// The shared contract's kinds are fixed: like --exact's state
		// budget, a memory bound leaves the history undecided.
		d.Kind, d.File, d.Line = kindUndecided, me.File, me.Line
		d.Message = strings.TrimPrefix(d.Message, me.File+": ")
	case errors.As(err, &ue):
		d.Kind, d.File, d.Line, d.Message = kindUndecided, ue.File, ue.Line, ue.Msg
	case errors.Is(err, exact.ErrTooLarge):
		d.Kind = kindUndecided
		d.Message = strings.TrimPrefix(d.Message, file+": ")
	case errors.Is(err, context.Canceled), err.Error() == "interrupted":
		d.Kind, d.Message = kindUndecided, "interrupted"
	case errors.As(err, &pe):
		d.Kind = kindIO
	case errors.Is(err, errV2Outputs):
		d.Kind, d.Message = kindUsage, errV2Outputs.Error()
	}
	return d
}

// afterVerdict is an error that came after the verdict was printed
// (writing --report, --dot or --shrink): with --json, the verdict is the
// history's one object, and the error is told on standard error only.
type afterVerdict struct{ err error }

func (a afterVerdict) Error() string { return a.err.Error() }
func (a afterVerdict) Unwrap() error { return a.err }

// reportCheckError tells of a history that got no verdict: on standard
// error always, and as the error object on standard output with --json.
func reportCheckError(e env, asJSON bool, path string, err error) {
	fmt.Fprintln(e.stderr, "pmlin:", err)
	if _, after := err.(afterVerdict); asJSON && !after {
		name := path
		if path == "-" {
			name = "<stdin>"
		}
		printErrorJSON(e, describe(err, name, kindIO))
	}
}

func printErrorJSON(e env, d checkErrorJSON) {
	b, _ := json.Marshal(errorJSON{Error: d})
	fmt.Fprintf(e.stdout, "%s\n", b)
}

// wantsJSON reports whether the arguments of pmlin check ask for --json,
// read by hand: a usage error may have stopped the flag parser before it.
func wantsJSON(args []string) bool {
	on := false
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" {
			on = true
		} else if v, ok := strings.CutPrefix(a, "--json="); ok {
			on, _ = strconv.ParseBool(v)
		}
	}
	return on
}
