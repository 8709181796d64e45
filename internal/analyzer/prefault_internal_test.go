package analyzer

import "testing"

// TestPopulateKeepsContents: mapping pages ahead must not change what the
// memory holds, whether written before or not, at any alignment.
func TestPopulateKeepsContents(t *testing.T) {
	s := make([]uint64, 0, 1<<20)
	s = append(s, 1, 2, 3)
	for k := range 5000 {
		s = append(s, uint64(k)*7919)
	}
	var prev int
	spans := ahead(nil, s, &prev) // grew from 0: twice its length ahead
	if len(spans) != 1 || len(spans[0]) != 8*(2*len(s)) {
		t.Fatalf("ahead: %d spans of %d bytes, want 1 of %d", len(spans), len(spans[0]), 8*2*len(s))
	}
	for _, sp := range append(spans, memSpan(nil)) {
		populate(sp)
	}
	// The whole array, including the written part, odd offsets too.
	for _, off := range []int{0, 1, 4093} {
		populate(memSpanOf(s[:cap(s)])[off:])
	}
	for k, v := range s[3:] {
		if v != uint64(k)*7919 {
			t.Fatalf("element %d changed to %d", k+3, v)
		}
	}
	if s[0] != 1 || s[1] != 2 || s[2] != 3 {
		t.Fatalf("first elements changed: %v", s[:3])
	}
	for k, v := range s[len(s):cap(s)] {
		if v != 0 {
			t.Fatalf("capacity element %d is %d, want 0", len(s)+k, v)
		}
	}
	if prev != len(s) {
		t.Fatalf("ahead left prev at %d, want %d", prev, len(s))
	}
	if again := ahead(nil, s, &prev); len(again) != 0 {
		t.Fatalf("ahead of a column that did not grow: %d spans", len(again))
	}
}
