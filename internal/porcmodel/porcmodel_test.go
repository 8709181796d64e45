package porcmodel

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/pmlin/pmlin/internal/history"
)

func TestModel(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"1 inv cas 10:0:5 11:0:6\n1 ret ok\n2 inv read 10 11\n2 ret 5 6\n", true},
		{"1 inv cas 10:0:5\n1 ret ok\n2 inv read 10\n2 ret 0\n", false},
		{"1 inv cas 10:0:5\n2 inv read 10\n2 ret 0\n1 ret ok\n", true},
		{"1 inv cas 10:0:5\n1 ret fail 10\n", false},
		{"1 inv cas 10:0:5\n2 inv cas 10:0:6\n1 ret ok\n2 ret fail 10\n", true},
		{"1 inv cas 10:0:5\n2 inv read 10\n2 ret 5\n", true}, // pending at the end, observed
		{"1 inv cas 20:0:5\n1 ret ok\n2 inv read 10\n2 ret 0\n", true},
		// Swaps, and failures that report values.
		{"1 inv swap 10:5\n1 ret 0\n2 inv swap 10:6\n2 ret 5\n", true},
		{"1 inv swap 10:5\n1 ret 0\n2 inv swap 10:6\n2 ret 0\n", false}, // both replaced 0: Figure 10's fork
		{"1 inv swap 10:5\n2 inv read 10\n2 ret 5\n", true},             // pending at the end, observed
		{"1 inv swap 10:5\n1 ret 0\n2 inv cas 10:0:6\n2 ret fail 10 5\n", true},
		{"1 inv swap 10:5\n1 ret 0\n2 inv cas 10:0:6\n2 ret fail 10 0\n", false}, // reports its expected value
		{"1 inv cas 10:0:6 11:0:7\n1 ret fail 10 5 0\n", false},                  // nothing wrote 5
	}
	for _, tc := range tests {
		h, err := history.ReadAll(strings.NewReader(tc.text), "t")
		if err != nil {
			t.Fatal(err)
		}
		ops, ok := Operations(h, history.Strict)
		if !ok {
			t.Fatal("crash-free history refused")
		}
		if got := porcupine.CheckOperations(Model(h.InitValue), ops); got != tc.want {
			t.Errorf("%q: porcupine says %v, want %v", tc.text, got, tc.want)
		}
	}
	// A crashed cas whose process goes on: not an interval in
	// Recoverable mode; an interval (to the crash) in Strict mode.
	h, _ := history.ReadAll(strings.NewReader("1 inv cas 10:0:5\ncrash\n1 inv read 10\n1 ret 5\n"), "t")
	if _, ok := Operations(h, history.Recoverable); ok {
		t.Error("a recoverable constraint was accepted as an interval")
	}
	if ops, ok := Operations(h, history.Strict); !ok || !porcupine.CheckOperations(Model(h.InitValue), ops) {
		t.Error("strict: the crashed cas took effect before the crash")
	}
}
