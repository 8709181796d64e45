package analyzer

import (
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/pmlin/pmlin/history"
)

// MemoryError reports a history that needs more memory than the check may
// use (Options.MaxMemory): refused before it was read (Line 0), or stopped
// while it was read, before the memory ran out.
type MemoryError struct {
	File string
	// Line is the line reached when the check stopped (0: none yet).
	Line int64
	// Need is the memory the check would need: an estimate from the input's
	// size before reading, a lower bound once stopped part way.
	Need  int64
	Limit int64
	// Source says where Limit comes from (e.g. "--max-memory").
	Source string
	// Estimated: refused before reading, Need estimated from the size.
	Estimated bool
}

func (e *MemoryError) Error() string {
	need := fmt.Sprintf("more than %s (stopped at line %d)", FormatBytes(e.Need), e.Line)
	switch {
	case e.Estimated:
		need = "about " + FormatBytes(e.Need) + " (estimated from its size)"
	case e.Line == 0:
		need = fmt.Sprintf("more than %s (stopped before its first line)", FormatBytes(e.Need))
	}
	return fmt.Sprintf("%s: too large for the memory available: checking it needs %s, and %s allows %s",
		e.File, need, e.Source, FormatBytes(e.Limit))
}

// FormatBytes writes a memory size in binary units (MiB, GiB).
func FormatBytes(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
}

// EstimateMemory is the memory that checking a history of size bytes in
// format f needs at least, for a refusal before reading it. On pmlin gen
// histories (README, Performance) the peak resident memory is 0.93 bytes
// per byte of text at 10M operations of 1-3 words, about 1.0 with 8 words
// per operation, up to 2 with one word per operation, crashes every
// hundred operations or 64 processes, and more with over a million
// distinct words (each costs about 100 bytes). The JSON Lines twin takes
// 1.6 to 2.4 times the bytes of text, the binary history about 0.9 (it is
// estimated as text). It is the low end: a history it
// refuses would not fit; one it lets through may still be stopped while
// it is read (memoryGuard).
func EstimateMemory(size int64, f history.Format) int64 {
	if f == history.JSONL {
		size = size * 2 / 5
	}
	return size - size/8 + 16<<20
}

// memoryGuard stops a load whose memory, with what the check allocates
// after it, would pass the limit: checked every few tens of thousands of
// events, it stops before the process is much over the limit, instead of
// the kernel killing it when the memory runs out.
type memoryGuard struct {
	limit   int64
	source  string
	samples []metrics.Sample
}

func newMemoryGuard(limit int64, source string) *memoryGuard {
	if limit <= 0 {
		return nil
	}
	return &memoryGuard{limit: limit, source: source, samples: []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}}
}

// inUse is the memory the process holds: its resident set where the
// system tells it (/proc/self/statm: what the kernel counts against a
// limit; the capacity reserved from the size hint and not filled yet is
// not in it), else what the Go runtime holds but what it has returned to
// the system or keeps free for reuse.
func (g *memoryGuard) inUse() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	metrics.Read(g.samples)
	var v [3]int64
	for k, s := range g.samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[k] = int64(s.Value.Uint64())
		}
	}
	return v[0] - v[1] - v[2]
}

// refuse returns a MemoryError, before the input is read, if its size
// says it needs more than the limit (size 0: unknown; g nil: no limit).
func (g *memoryGuard) refuse(name string, size int64, f history.Format) error {
	if g == nil || size <= 0 {
		return nil
	}
	if need := EstimateMemory(size, f); need > g.limit {
		return &MemoryError{File: name, Need: need, Limit: g.limit, Source: g.source, Estimated: true}
	}
	return nil
}

// check returns a MemoryError if the memory in use and what the check
// of h will still allocate exceed the limit (g nil: no limit).
func (g *memoryGuard) check(h *hist, line int64) error {
	if g == nil {
		return nil
	}
	if need := g.inUse() + h.laterMemory(); need > g.limit {
		return &MemoryError{File: h.name, Line: line, Need: need, Limit: g.limit, Source: g.source}
	}
	return nil
}

// laterMemory is what the check allocates after loading h, at least: the
// join's partitioned writers (12 bytes per slot with the scratch aux), the
// evaluation's bitsets (a bit per access, three per operation), the word
// successors (4 bytes per word).
func (h *hist) laterMemory() int64 {
	return 12*int64(len(h.nw)) + int64(len(h.word))/4 + int64(h.n)/2 + 4*int64(len(h.addr))
}
