package history

import "testing"

// TestCompletionRules is the table of the completion rules (Mode): what a
// crash does to an operation it cut off, per mode. Each checker takes the
// rules from CrashBounds and ProcessOrder; a change here is a change of
// every checker's verdicts.
func TestCompletionRules(t *testing.T) {
	for _, c := range []struct {
		mode                      Mode
		crashBounds, processOrder bool
	}{
		{Strict, true, false},
		{Recoverable, false, true},
		{Durable, false, false},
	} {
		if got := c.mode.CrashBounds(); got != c.crashBounds {
			t.Errorf("%v: CrashBounds %v, want %v", c.mode, got, c.crashBounds)
		}
		if got := c.mode.ProcessOrder(); got != c.processOrder {
			t.Errorf("%v: ProcessOrder %v, want %v", c.mode, got, c.processOrder)
		}
	}
	if len(Modes) != 3 {
		t.Fatalf("%d modes: the table above must have a row for each", len(Modes))
	}
}
