package cli

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// A numeric flag of fuzz, gen or bench is a bounded value: it refuses,
// while the command line is parsed and before any work, a value outside
// its range, so that pflag reports `invalid argument "0" for "--jobs"
// flag: ...`, a usage error (exit 2). The ranges of these commands' own
// flags are stated here, with each flag; what depends on two flags (--k
// at most --words) is checked by the command, and the workload flags of
// run and fuzz by crash.Config.Check.
type bounded[T int | int64 | float64 | time.Duration] struct {
	p      *T
	lo, hi T
	// note follows the range in the error: what a value outside it is
	// for, or what to do instead.
	note string
}

// boundedVar defines flag name on fs, with default def (which may lie
// outside [lo, hi]: a default that means "chosen by pmlin", like 0 for
// --jobs, that the user cannot give).
func boundedVar[T int | int64 | float64 | time.Duration](fs *pflag.FlagSet, p *T, name string, def, lo, hi T, note, usage string) {
	*p = def
	fs.Var(&bounded[T]{p: p, lo: lo, hi: hi, note: note}, name, usage)
}

func (b *bounded[T]) String() string {
	if b.p == nil {
		return "0"
	}
	return format(*b.p)
}

// Type is pflag's name of the value, as its own flags of the type say it
// in the usage (--jobs int).
func (b *bounded[T]) Type() string {
	switch any(*new(T)).(type) {
	case float64:
		return "float64"
	case time.Duration:
		return "duration"
	case int64:
		return "int64"
	}
	return "int"
}

func (b *bounded[T]) Set(s string) error {
	var v T
	var err error
	switch p := any(&v).(type) {
	case *time.Duration:
		*p, err = time.ParseDuration(s)
	case *float64:
		*p, err = strconv.ParseFloat(s, 64)
		if math.IsNaN(*p) || math.IsInf(*p, 0) {
			err = strconv.ErrRange
		}
	case *int64:
		*p, err = strconv.ParseInt(s, 0, 64)
	case *int:
		var n int64
		n, err = strconv.ParseInt(s, 0, strconv.IntSize)
		*p = int(n)
	}
	if err != nil {
		what := map[string]string{"float64": "a finite number", "duration": "a duration (like 90s, 10m)"}[b.Type()]
		if what == "" {
			what = "an integer"
		}
		return fmt.Errorf("not %s%s", what, b.rangeText())
	}
	if v < b.lo || v > b.hi {
		return fmt.Errorf("out of range%s", b.rangeText())
	}
	*b.p = v
	return nil
}

// rangeText is " (lo to hi allowed; note)".
func (b *bounded[T]) rangeText() string {
	r := fmt.Sprintf(" (%s to %s allowed", format(b.lo), format(b.hi))
	if b.hi == maxOf[T]() {
		r = fmt.Sprintf(" (at least %s", format(b.lo))
	}
	if b.note != "" {
		r += "; " + b.note
	}
	return r + ")"
}

// maxOf is the largest value of T: no upper bound.
func maxOf[T int | int64 | float64 | time.Duration]() T {
	var v T
	switch p := any(&v).(type) {
	case *float64:
		*p = math.MaxFloat64
	case *time.Duration:
		*p = math.MaxInt64
	case *int64:
		*p = math.MaxInt64
	case *int:
		*p = math.MaxInt
	}
	return v
}

func format[T int | int64 | float64 | time.Duration](v T) string {
	switch x := any(v).(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case time.Duration:
		if x == 0 {
			return "0" // pflag shows no default for "0", as for its own durations
		}
		return x.String()
	}
	return fmt.Sprint(v)
}
