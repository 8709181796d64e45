package jsonid

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestWritesStrings: an identifier is a JSON string of its decimal digits,
// above 2^53 too, where a double would round it.
func TestWritesStrings(t *testing.T) {
	for _, v := range []uint64{0, 7, 1<<53 + 1, math.MaxUint64} {
		b, err := json.Marshal(struct {
			Seed Uint64 `json:"seed"`
		}{Uint64(v)})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"seed":"` + strconv.FormatUint(v, 10) + `"}`; string(b) != want {
			t.Fatalf("%d written as %s, want %s", v, b, want)
		}
	}
}

// TestReadsBoth: a string or a number, exact to 2^64-1; anything else is
// an error that quotes the value.
func TestReadsBoth(t *testing.T) {
	for in, want := range map[string]uint64{
		`"18446744073709551615"`: math.MaxUint64,
		`18446744073709551615`:   math.MaxUint64,
		`"9007199254740993"`:     1<<53 + 1,
		`9007199254740993`:       1<<53 + 1,
		`0`:                      0,
	} {
		var s struct{ Seed Uint64 }
		if err := json.Unmarshal([]byte(`{"Seed":`+in+`}`), &s); err != nil || uint64(s.Seed) != want {
			t.Errorf("%s: %d, %v (want %d)", in, s.Seed, err, want)
		}
	}
	for _, in := range []string{`-1`, `"-1"`, `1.5`, `1e3`, `"0x10"`, `"18446744073709551616"`, `true`, `""`} {
		var s struct{ Seed Uint64 }
		err := json.Unmarshal([]byte(`{"Seed":`+in+`}`), &s)
		if err == nil || !strings.Contains(err.Error(), "not a 64-bit identifier") {
			t.Errorf("%s: %v, want an error", in, err)
		}
	}
	s := struct{ Seed Uint64 }{Seed: 5}
	if err := json.Unmarshal([]byte(`{"Seed":null}`), &s); err != nil || s.Seed != 5 {
		t.Errorf("null: %d, %v", s.Seed, err)
	}
}
