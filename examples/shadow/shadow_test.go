package shadow_test

import (
	"testing"

	"github.com/pmlin/pmlin/examples/shadow"
	"github.com/pmlin/pmlin/pmlintest"
)

func TestFuzz(t *testing.T) {
	pmlintest.Fuzz(t, shadow.Target(), "--seconds", "2")
}
