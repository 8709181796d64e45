package analyzer

import (
	"context"
	"io"
	"slices"

	"github.com/pmlin/pmlin/history"
)

// Extract streams a history again and keeps the operations invoked at the
// given lines (the analyzer keeps no values; explanations, reports and
// shrinking re-read the few lines they show), with their full data, as an
// in-memory History whose Ops keep their original Line and RetLine.
//
// Crash lines are kept when keepCrash says so (it may be nil) and always
// when they cut off a kept operation, so the result is well formed:
// written out (History.WriteTo), it is a valid history whose every kept
// operation ends as it did. The initial values are the input's.
// crashLines are the lines of the kept crashes, parallel to h.Crashes.
func Extract(ctx context.Context, r *history.Reader, invLines []int64, keepCrash func(line int64) bool) (h *history.History, crashLines []int64, err error) {
	lines := slices.Clone(invLines)
	slices.Sort(lines)
	lines = slices.Compact(lines)
	h = &history.History{}
	var pending []int // process index -> kept op, or -1
	k := 0
	pos := 0
	for count := 0; ; count++ {
		if count&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		for int(ev.ProcIndex) >= len(pending) {
			pending = append(pending, -1)
		}
		switch ev.Kind {
		case history.Invoke:
			for k < len(lines) && lines[k] < ev.Line {
				k++
			}
			pending[ev.ProcIndex] = -1
			if k < len(lines) && lines[k] == ev.Line {
				op := history.Op{ID: len(h.Ops), Line: ev.Line, Proc: ev.Proc, Kind: ev.Op,
					Addrs: slices.Clone(ev.Addrs), Inv: pos, Ret: -1, Crash: -1}
				if ev.Op == history.CAS {
					op.Expected, op.New = slices.Clone(ev.Expected), slices.Clone(ev.New)
				}
				pending[ev.ProcIndex] = op.ID
				h.Ops = append(h.Ops, op)
				pos++
			}
		case history.Return:
			id := pending[ev.ProcIndex]
			pending[ev.ProcIndex] = -1
			if id < 0 {
				continue
			}
			op := &h.Ops[id]
			op.Ret, op.RetLine = pos, ev.Line
			pos++
			switch {
			case ev.Op == history.Read:
				op.Status, op.Values = history.Returned, slices.Clone(ev.Values)
			case ev.OK:
				op.Status = history.Succeeded
			default:
				op.Status, op.FailAddr = history.Failed, ev.FailAddr
			}
		case history.Crash:
			keep := keepCrash != nil && keepCrash(ev.Line)
			for _, id := range pending {
				if id >= 0 {
					keep = true
				}
			}
			if !keep {
				continue
			}
			for p, id := range pending {
				if id >= 0 {
					h.Ops[id].Crash = len(h.Crashes)
					pending[p] = -1
				}
			}
			h.Crashes = append(h.Crashes, pos)
			crashLines = append(crashLines, ev.Line)
			pos++
		}
	}
	h.Events = pos
	h.InitDefault = r.InitDefault()
	if len(r.InitWords()) > 0 {
		h.Init = make(map[uint64]uint64, len(r.InitWords()))
		for a, v := range r.InitWords() {
			h.Init[a] = v
		}
	}
	return h, crashLines, nil
}
