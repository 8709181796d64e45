package history

import (
	"bytes"
	"context"
	"io"
	"maps"
	"slices"
	"strconv"
)

// ConvertStats describe a conversion.
type ConvertStats struct {
	From   Format
	Events int64
	Lines  int64 // lines of the history (of its text form)
}

// Convert reads the history in src (any syntax the Reader reads) and
// writes it to dst event by event, with every line that holds no event
// (header, init lines, comments, blank lines) where it was, so that every
// operation keeps its line (its name in reports). Text lines go across as
// they are; a JSON Lines header or init object becomes the text line of
// the same meaning. A comment at the end of an event line is not kept. It
// flushes dst at the end.
func Convert(ctx context.Context, dst EventWriter, src io.Reader, name string, opts Options) (ConvertStats, error) {
	var st ConvertStats
	var r *Reader
	jh := jsonHeader{written: map[uint64]bool{}}
	opts.Lines = func(line int64, text []byte) {
		if t := bytes.TrimSpace(text); r.Format() == JSONL && len(t) > 0 && t[0] == '{' {
			text = jh.text(r)
		}
		dst.TextLine(text)
	}
	r = NewReader(src, name, opts)
	for {
		if st.Events&0xffff == 0 && ctx.Err() != nil {
			return st, ctx.Err()
		}
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, err
		}
		st.Events++
		writeEvent(dst, ev)
	}
	st.From, st.Lines = r.Format(), r.lastLine()
	return st, dst.Flush()
}

// writeEvent writes one event a Reader returned.
func writeEvent(dst EventWriter, ev *Event) {
	switch {
	case ev.Kind == Crash:
		dst.Crash()
	case ev.Kind == Invoke && ev.Op == Read:
		dst.InvokeRead(ev.Proc, ev.Addrs)
	case ev.Kind == Invoke && ev.Op == CAS:
		dst.InvokeCAS(ev.Proc, ev.Addrs, ev.Expected, ev.New)
	case ev.Kind == Invoke:
		dst.InvokeSwap(ev.Proc, ev.Addrs, ev.New)
	case ev.Op != CAS:
		dst.ReturnRead(ev.Proc, ev.Values)
	case ev.OK:
		dst.ReturnOK(ev.Proc)
	case len(ev.Values) > 0:
		dst.ReturnFailValues(ev.Proc, ev.FailAddr, ev.Values)
	default:
		dst.ReturnFail(ev.Proc, ev.FailAddr)
	}
}

// jsonHeader renders the JSON Lines header, init and recording objects
// as text lines, each one when the Reader has just taken it up: what the object
// changed of the Reader's header.
type jsonHeader struct {
	written     map[uint64]bool // init words rendered
	defaultDone bool
}

func (j *jsonHeader) text(r *Reader) []byte {
	if t := r.closingText(); t != nil {
		return t
	}
	switch {
	case len(r.InitWords()) > len(j.written):
		b := []byte("init")
		for _, a := range slices.Sorted(maps.Keys(r.InitWords())) {
			if !j.written[a] {
				j.written[a] = true
				b = strconv.AppendUint(append(b, ' '), a, 10)
				b = appendValue(append(b, '='), r.InitWords()[a])
			}
		}
		return b
	case r.initDefaultSet && !j.defaultDone:
		j.defaultDone = true
		return appendValue([]byte("init "), r.InitDefault())
	}
	return []byte("pmlin-history v1")
}
