package model

import (
	"fmt"
	"strconv"
)

// kqueue: a FIFO queue relaxed by quasi factor K, with the strict
// out-of-order semantics of Round-Up (Zhang, Chattopadhyay and Wang,
// "Round-Up: Runtime Checking Quasi Linearizability of Concurrent Data
// Structures", Section V.A): a deq returns one of the K+1 oldest
// elements, and the oldest is returned by one of the K+1 deqs from when
// it became the oldest (docs/history-format.md, "The models").
//
// The state is a string: one byte, the number of deqs since the oldest
// element became the oldest that returned another one (at most K, so K is
// at most 255), then the elements' encodings in enqueue order. A state is
// its own key.

// maxQuasi is the largest quasi factor: the skip count is one byte.
const maxQuasi = 255

func makeKQueue(ps []Param) (*Model, error) {
	k := -1
	err := params("kqueue", ps, map[string]func(string) error{
		"k": func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > maxQuasi {
				return fmt.Errorf("not a quasi factor (a decimal number from 0 to %d)", maxQuasi)
			}
			k = n
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if k < 0 {
		return nil, fmt.Errorf("model kqueue needs its quasi factor: k=K")
	}
	return &Model{
		Init: func() []any { return states("\x00") },
		Step: func(s any, op *Op) []any { return stepKQueue(k, s.(string), op) },
		Key:  strKey,
		Validate: validator("kqueue", map[string]sig{
			// fail is a bounded queue's answer: here impossible (a
			// violation), not malformed.
			"enq":      {"n", one(false, OK, Fail)},
			"deq":      {"", one(true, Empty)},
			"contents": {"", contentsResult},
		}),
		Describe: func(s any) string {
			q := s.(string)
			if len(q) == 1 {
				return "kqueue empty"
			}
			if k == 0 {
				return "kqueue holding " + list(q[1:], "[]") + " (oldest first)"
			}
			return fmt.Sprintf("kqueue holding %s (oldest first; the oldest skipped %d of at most %d times)", list(q[1:], "[]"), q[0], k)
		},
		// A deq that answers empty changes nothing: it can only do so on
		// the empty queue, whose skip count is 0.
		ReadOnly: func(op *Op) bool {
			return op.Name == "contents" || op.Name == "deq" && op.Results[0].Sym == Empty
		},
		Expect: func(s any, op *Op) []Value {
			q := s.(string)
			switch {
			case op.Name == "contents":
				return listing(q[1:]) // oldest first
			case op.Name == "enq":
				return []Value{Sym(OK)}
			case len(q) == 1:
				return []Value{Sym(Empty)}
			case int(q[0]) >= k:
				return []Value{dec(q, 1)} // the oldest, skipped k times already
			}
			return nil // one of several
		},
	}, nil
}

// stepKQueue is kqueue's step: enq appends; deq removes the element at a
// position i <= k, if i = 0 (the oldest: the skip count restarts) or the
// oldest has been skipped fewer than k times (it grows by one); empty
// exactly when there is no element.
func stepKQueue(k int, q string, op *Op) []any {
	known := op.Status == Returned
	if op.Name == "contents" { // the elements, oldest first; the skip count stays
		if stepContents(q[1:], op) == nil {
			return nil
		}
		return states(q)
	}
	if op.Name == "enq" {
		if known && op.Results[0].Sym != OK {
			return nil
		}
		return states(q + string(enc(nil, op.Args[0])))
	}
	n := (len(q) - 1) / vlen
	if n == 0 {
		if known && op.Results[0].Sym != Empty {
			return nil
		}
		return states(q)
	}
	if known && op.Results[0].Sym == Empty {
		return nil
	}
	skips := int(q[0])
	var next []any
	for i := 0; i <= k && i < n; i++ {
		if i > 0 && skips >= k {
			break
		}
		at := 1 + i*vlen
		if known && dec(q, at) != op.Results[0] {
			continue
		}
		rest := q[1:at] + q[at+vlen:]
		if i == 0 {
			next = append(next, "\x00"+rest)
		} else {
			next = append(next, string([]byte{byte(skips + 1)})+rest)
		}
	}
	return next
}
