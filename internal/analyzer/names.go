package analyzer

import (
	"fmt"
	"strconv"
	"strings"
)

// Namer names a history's events in the sentences the analyzer renders
// (explanations, hints, errors). The analyzer knows an event by its line,
// the number history.Reader gives it (for a Recording, the line its text
// would have); a Namer says how the reader of the sentences knows it: by
// that line for a file (the default), by the caller's index for the Go API,
// whose caller never sees a text.
type Namer interface {
	// Op names the operation invoked at line: "line 7".
	Op(line int64) string
	// Returned says when the operation whose response is at line
	// returned, completing "returned ...": "at line 9".
	Returned(line int64) string
	// Crashes names the crashes at lines (one or more) in a sentence:
	// "the crash at line 12", "the crashes at lines 12 and 20".
	Crashes(lines ...int64) string
	// OpList and CrashList list operations (by the lines of their
	// invocations) and crashes in a title: "operations at lines 2, 3",
	// "crash at line 5".
	OpList(lines []int64) string
	CrashList(lines []int64) string
	// Order says, in the source's terms, what orders the history's steps
	// and how its recorder fixes a wrong order (RecorderHint).
	Order() Order
}

// Order is what a history's source calls the order of its steps, for the
// recorder hint: the CLI reads lines a merge wrote, the Go API takes
// timestamps.
type Order struct {
	// Name is the order: "the line order of this history".
	Name string
	// Blocks is the sentence said when, between crashes, each process's
	// steps form one block: what that shape means and its fix.
	Blocks string
	// Fix is the hint's last sentence: what to check.
	Fix string
}

// LineNamer names events by their line: the sentences of pmlin check.
type LineNamer struct{}

// Order: a history file's lines, written by pmlin merge or a recorder.
func (LineNamer) Order() Order {
	return Order{
		Name:   "the line order of this history",
		Blocks: "The history looks like per-thread logs concatenated, not merged (between crashes, each process's steps form one block): merge them by timestamp (pmlin merge).",
		Fix:    "Check your merge or clock: one global clock for every thread, and steps merged by timestamp, each thread's own order kept",
	}
}

func (LineNamer) Op(line int64) string       { return "line " + strconv.FormatInt(line, 10) }
func (LineNamer) Returned(line int64) string { return "at line " + strconv.FormatInt(line, 10) }

func (LineNamer) Crashes(lines ...int64) string {
	if len(lines) == 1 {
		return fmt.Sprintf("the crash at line %d", lines[0])
	}
	return "the crashes at lines " + andList(numbers(lines))
}

func (LineNamer) OpList(lines []int64) string {
	return titleList(lines, "operation at line ", "operations at lines ")
}

func (LineNamer) CrashList(lines []int64) string {
	return titleList(lines, "crash at line ", "crashes at lines ")
}

// titleList is a title's list of xs, after one or many.
func titleList(xs []int64, one, many string) string {
	if len(xs) == 1 {
		return one + strconv.FormatInt(xs[0], 10)
	}
	return many + strings.Join(numbers(xs), ", ")
}

func numbers(xs []int64) []string {
	s := make([]string, len(xs))
	for k, x := range xs {
		s[k] = strconv.FormatInt(x, 10)
	}
	return s
}

// namerOr is names, or the line namer when it is nil.
func namerOr(names Namer) Namer {
	if names == nil {
		return LineNamer{}
	}
	return names
}
