package analyzer

import (
	"fmt"
	"strconv"
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
	// Crashes names the crashes at lines (one or more): "the crash at
	// line 12", "the crashes at lines 12 and 20".
	Crashes(lines ...int64) string
}

// lineNamer names events by their line: the sentences of pmlin check.
type lineNamer struct{}

func (lineNamer) Op(line int64) string       { return "line " + strconv.FormatInt(line, 10) }
func (lineNamer) Returned(line int64) string { return "at line " + strconv.FormatInt(line, 10) }

func (lineNamer) Crashes(lines ...int64) string {
	if len(lines) == 1 {
		return fmt.Sprintf("the crash at line %d", lines[0])
	}
	s := make([]string, len(lines))
	for k, l := range lines {
		s[k] = strconv.FormatInt(l, 10)
	}
	return "the crashes at lines " + andList(s)
}

// namerOr is names, or the line namer when it is nil.
func namerOr(names Namer) Namer {
	if names == nil {
		return lineNamer{}
	}
	return names
}
