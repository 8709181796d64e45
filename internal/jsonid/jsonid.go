// Package jsonid is pmlin's one rule for 64-bit identifiers in JSON (a
// campaign's or a run's seed): they are written as JSON strings holding
// the decimal number, and read from such a string or from a JSON number.
//
// A JSON number above 2^53 is rounded by every reader whose numbers are
// doubles: jq (before 1.7), JavaScript, Python's json with
// parse_int=float, most spreadsheets. A seed so rounded replays another
// run, so docs/cli-contract.md makes identifiers strings. Reading numbers
// too keeps the JSON that pmlin wrote before (and older pmlin binaries'
// output) readable.
package jsonid

import (
	"bytes"
	"fmt"
	"strconv"
)

// Uint64 is a 64-bit identifier: "18446744073709551557" in JSON.
type Uint64 uint64

// MarshalJSON writes the decimal number as a JSON string.
func (u Uint64) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 22)
	b = append(b, '"')
	b = strconv.AppendUint(b, uint64(u), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a JSON string holding a decimal number, or a JSON
// number (an unsigned integer, read from its digits: exact up to
// 2^64-1). null leaves u unchanged, as encoding/json does for numbers.
func (u *Uint64) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := b
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		s = b[1 : len(b)-1]
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not a 64-bit identifier (an unsigned decimal integer, as a JSON string or number)", b)
	}
	*u = Uint64(v)
	return nil
}
