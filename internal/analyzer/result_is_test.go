package analyzer

import (
	"errors"
	"fmt"
	"testing"
)

// TestErrorKinds: each error type answers errors.Is for its own kind only,
// also wrapped (package pmlin's callers have only the kinds).
func TestErrorKinds(t *testing.T) {
	var a error = fmt.Errorf("wrapped: %w", &AssumptionError{Assumption: 1})
	var u error = fmt.Errorf("wrapped: %w", &UndecidedError{})
	if !errors.Is(a, ErrAssumption) || errors.Is(a, ErrUndecided) || !errors.Is(u, ErrUndecided) || errors.Is(u, ErrAssumption) {
		t.Fatalf("kinds: %v %v", a, u)
	}
}
