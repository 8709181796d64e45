package history

import "fmt"

// Mode is the completion rule for operations cut off by a crash (Section 5.3
// of the OPODIS paper; docs/cli-contract.md). Whatever the mode, a pending
// read is dropped, and a pending CAS either took effect (as a success) or
// did not; the modes differ in how late it may take effect:
//
//   - Strict (strict linearizability, Aguilera and Frølund): before the crash
//     that interrupted it, so it precedes every operation invoked after that
//     crash.
//   - Recoverable (recoverable linearizability, Berryhill, Golab and
//     Tripunitara): at any time after its invocation, but linearized before
//     the next operation of its own process that stays in the history (an
//     order constraint between the two operations, not a deadline at that
//     operation's invocation). Process order survives crashes: if the next
//     operation was itself cut off and dropped (a read, or a CAS nobody
//     observed), the constraint passes to the one after it, and so on.
//   - Durable (durable linearizability, Izraelevitz, Mendes and Scott): at any
//     time after its invocation.
//
// An operation still pending at the end of the history is cut off by the
// end, and may take effect at any time after its invocation in every mode.
//
// This is the one statement of the rules: CrashBounds and ProcessOrder
// say them (TestCompletionRules holds their table), and every checker
// (internal/analyzer, internal/exact, internal/lin) takes them from there.
// The oracles the checkers are tested against (internal/histgen's
// RefCheck, the Porcupine model of internal/porcmodel) state them again
// on their own, so that a mistake here is not copied into the check.
type Mode uint8

const (
	Strict Mode = iota
	Recoverable
	Durable
)

// CrashBounds reports whether an operation cut off by a crash must take
// effect, if it does, before that crash (Strict): it then precedes every
// operation invoked after the crash.
func (m Mode) CrashBounds() bool { return m == Strict }

// ProcessOrder reports whether an operation cut off by a crash, if it
// takes effect, must take effect before the next operation of its own
// process that stays in the history, the constraint passing on past the
// ones that are left out (Recoverable). Strict implies this order (the
// next operation is invoked after the crash) and does not report it: a
// checker that bounds by the crash needs no more.
func (m Mode) ProcessOrder() bool { return m == Recoverable }

// Modes lists every mode, in order of strength.
var Modes = []Mode{Strict, Recoverable, Durable}

func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case Recoverable:
		return "recoverable"
	case Durable:
		return "durable"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses "strict", "recoverable" or "durable".
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown mode %q (strict, recoverable or durable)", s)
}

// MarshalText renders the mode's name, so a Mode is "strict",
// "recoverable" or "durable" in JSON and in flags.
func (m Mode) MarshalText() ([]byte, error) {
	if m > Durable {
		return nil, fmt.Errorf("history: unknown mode %d", uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText parses a mode's name (see ParseMode).
func (m *Mode) UnmarshalText(b []byte) error {
	p, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = p
	return nil
}
