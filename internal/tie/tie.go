// Package tie is what every merge by timestamp in pmlin does with steps of
// different processes that share a timestamp: pmlin merge and the Go API's
// Check (package internal/merge), the text recording of internal/record and the
// reader of binary histories. The rule, and why it is the only honest one,
// is stated once, in recorders/README.md ("What a recorder must do", rule
// 4); the C and Python recorders implement the same rule and cite it.
//
// In short: the line order of a history is real time (an operation
// precedes another iff its response comes before the other's invocation).
// Within a tie group (one timestamp) the real order between processes is
// unknown, so a merge may place a response of one process before an
// invocation of another only where that is no claim at all. Merge, the
// k-way merge that every merge calls, orders the heads of the processes so
// that it never does it when some order can avoid it (Head.class), and
// its Place finds the groups where none can: two processes that each
// respond and invoke again at the timestamp.
package tie

import "fmt"

// Head is a process's next step in a merge, as the rule sees it.
type Head struct {
	TS  uint64
	Ret bool
	// Again: a response whose process's next step is an invocation with
	// the same timestamp.
	Again bool
}

// class ranks the heads of one timestamp, least first; Merge takes the
// head of the earliest timestamp, then of the least class, then of the
// stream given first. An invocation goes first (a recorded interval may
// grow, never shrink), then a response whose process invokes again at the
// timestamp: that process's invocation must come before every other
// process's response, which only its own response can precede; then the
// other responses. With at most one process that responds and invokes
// again within a group, no response then comes before another process's
// invocation of the group.
func (h Head) class() uint8 {
	switch {
	case !h.Ret:
		return 0
	case h.Again:
		return 1
	}
	return 2
}

// watch finds the tie group that no order can merge honestly: a merge
// tells place every step it places, in order; the zero value is ready.
type watch struct {
	ts     uint64
	at     int64
	stream int32
	set    bool // stream responded and invoked again at ts
}

// Clash is the other stream of a tie group no order keeps honest, and
// where its response was placed (the caller's numbering: a line, an
// index).
type Clash struct {
	Stream int
	At     int64
}

// place is told that the merge placed step h of stream id, at place at.
// It reports a clash when h is a response whose process invokes again at
// its timestamp and another stream's process did so at that timestamp
// already. Such a group has no honest order: each process's response must
// come before its own invocation, and after the other's invocation, which
// would close a cycle (and with at most one such process, Merge's order
// is honest). A merge places the steps of one timestamp together (its
// streams' timestamps do not decrease), so one stream and timestamp are
// all it remembers; a process's steps are one stream.
func (w *watch) place(id int32, h Head, at int64) (Clash, bool) {
	if !h.Again {
		return Clash{}, false
	}
	if w.set && w.ts == h.TS {
		if w.stream != id {
			return Clash{Stream: int(w.stream), At: w.at}, true
		}
		return Clash{}, false
	}
	w.ts, w.stream, w.at, w.set = h.TS, id, at, true
	return Clash{}, false
}

// Message says why a merge refuses a tie group: process p responds and
// invokes again at timestamp ts, as process q does (at names q's response
// in the caller's terms, "" if it has none to give).
func Message(p int32, ts any, q int32, at string) string {
	if at != "" {
		at = " (" + at + ")"
	}
	return fmt.Sprintf("process %d responds and invokes its next operation at timestamp %v, as process %d does%s: which of their operations came first is unknown, and any order of these steps would invent it: the clock is too coarse for this history; use CLOCK_MONOTONIC or the TSC",
		p, ts, q, at)
}
