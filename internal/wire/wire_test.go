package wire

import "testing"

// TestStreamHead: the head word's fields at their bounds, and nothing
// spills from one into another.
func TestStreamHead(t *testing.T) {
	for _, c := range []struct {
		kind, k int
		ts      uint64
	}{{1, 1, 0}, {7, MaxStreamK, MaxStamp}, {4, 1, MaxStamp}, {2, MaxStreamK, 0}, {3, 17, 1 << 40}} {
		h := StreamHead(c.kind, c.k, c.ts)
		if StreamKind(h) != c.kind || StreamK(h) != c.k || StreamStamp(h) != c.ts {
			t.Fatalf("%+v: head %#x decodes as %d %d %d", c, h, StreamKind(h), StreamK(h), StreamStamp(h))
		}
	}
}

// TestSerialHead: the same of a serial record's head.
func TestSerialHead(t *testing.T) {
	for _, c := range []struct {
		kind, k int
		proc    int32
	}{{1, 1, 0}, {MaxRecKind, SerialKMask, 1<<31 - 1}, {RecCrash, 0, 0}, {RecRetOK, SerialKMask, 0}, {RecText, 3, 1 << 20}} {
		h := SerialHead(c.kind, c.k, c.proc)
		if SerialKind(h) != c.kind || SerialK(h) != c.k || SerialProc(h) != uint64(c.proc) {
			t.Fatalf("%+v: head %#x decodes as %d %d %d", c, h, SerialKind(h), SerialK(h), SerialProc(h))
		}
	}
}

// TestRecWords: the payload of each kind (docs/history-format.md), at k 5;
// an unknown kind is -1.
func TestRecWords(t *testing.T) {
	want := map[int]int{RecInvRead: 5, RecInvCAS: 15, RecRetValues: 5, RecRetOK: 0, RecRetFail: 1, RecInvSwap: 10,
		RecRetFailValues: 6, RecCrash: 0, RecText: 1, RecInvOp: 5, RecRetOp: 5}
	for kind := -1; kind <= 20; kind++ {
		w, known := want[kind]
		if !known {
			w = -1
		}
		if got := RecWords(kind, 5); got != w {
			t.Errorf("RecWords(%d, 5) = %d, want %d", kind, got, w)
		}
	}
	if got := RecWords(RecText, 17); got != 3 {
		t.Errorf("RecWords(RecText, 17) = %d, want 3", got)
	}
}

// TestOpHead: OpHead's fields decode back, and OpInvWords counts the
// names' bytes in whole words ("enq" of "q": 1 word) beside the values.
func TestOpHead(t *testing.T) {
	h := OpHead(2, 255, 7)
	if OpHeadArgs(h) != 2 || OpHeadObj(h) != 255 || OpHeadOp(h) != 7 {
		t.Errorf("OpHead(2, 255, 7) decodes to %d, %d, %d", OpHeadArgs(h), OpHeadObj(h), OpHeadOp(h))
	}
	if got := OpInvWords(1, 1, 3); got != 4 {
		t.Errorf("OpInvWords(1, 1, 3) = %d, want 4", got)
	}
	if got := OpInvWords(0, 5, 4); got != 3 {
		t.Errorf("OpInvWords(0, 5, 4) = %d, want 3", got)
	}
}
