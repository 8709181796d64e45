package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pmlin/pmlin/internal/history"
)

// opValues writes an operation's values compactly, for the drawings: a
// read's "3=0x5 4=0x7", a cas's "3:0x5→0x9" (and "fail@3" when it
// failed, then "read 3=0x7 4=0x8" when the failure reports values), a
// swap's "3:0x5→0x9" (the value it replaced, "?" if it was cut off, and
// its new value), the words in focus (the anomaly's) first; "" when the
// input could not be re-read.
func opValues(op *history.Op, focus []uint64) string {
	if op == nil {
		return ""
	}
	idx := make([]int, len(op.Addrs))
	for k := range idx {
		idx[k] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		fa, fb := slices.Contains(focus, op.Addrs[a]), slices.Contains(focus, op.Addrs[b])
		switch {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		}
		return 0
	})
	var parts []string
	if op.Status == history.Failed {
		parts = append(parts, fmt.Sprintf("fail@%d", op.FailAddr))
	}
	value := func(vs []uint64, k int) string {
		if vs == nil {
			return "?"
		}
		return history.FormatValue(vs[k])
	}
	for _, k := range idx {
		a := op.Addrs[k]
		switch op.Kind {
		case history.CAS:
			parts = append(parts, fmt.Sprintf("%d:%s→%s", a, history.FormatValue(op.Expected[k]), history.FormatValue(op.New[k])))
		case history.Swap:
			parts = append(parts, fmt.Sprintf("%d:%s→%s", a, value(op.Values, k), history.FormatValue(op.New[k])))
		default:
			parts = append(parts, fmt.Sprintf("%d=%s", a, value(op.Values, k)))
		}
	}
	if op.Kind == history.CAS && op.Values != nil {
		for n, k := range idx {
			prefix := ""
			if n == 0 {
				prefix = "read "
			}
			parts = append(parts, fmt.Sprintf("%s%d=%s", prefix, op.Addrs[k], history.FormatValue(op.Values[k])))
		}
	}
	return strings.Join(parts, " ")
}

// fit cuts s to n characters, marking the cut with an ellipsis.
func fit(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return ""
	}
	return string(r[:n-1]) + "…"
}
