package model

import "fmt"

// The word array of version 1 is the model "words". Its operations keep
// version 1's meaning in an Op, with every number the line holds:
//
//	read a1 ... ak            Args a1 ... ak;            Results v1 ... vk
//	cas a1:e1:n1 ... ak:ek:nk Args a1 e1 n1 ... ak ek nk; Results ok | fail a | fail a v1 ... vk
//	swap a1:n1 ... ak:nk      Args a1 n1 ... ak nk;       Results v1 ... vk (the values replaced)
//
// (ok and fail as the symbols OK and Fail, every other value a number). A
// words object's parameters are its initial values: "init=V" for every
// word, "A=V" for word A, as version 1's "init V" and "init A=V" lines
// say them.

// WordsInit reads the parameters of a words object: the initial value of
// every word (0 if not given) and those of particular words.
func WordsInit(params []Param) (def uint64, words map[uint64]uint64, err error) {
	num := func(s, what string) (uint64, error) {
		v, err := ParseValue(s)
		if err != nil || v.Sym != Num {
			return 0, fmt.Errorf("a words object's parameter %s %q is not a number (decimal or 0x hex)", what, s)
		}
		return v.N, nil
	}
	seenDefault := false
	for _, p := range params {
		v, err := num(p.Value, "value")
		if err != nil {
			return 0, nil, err
		}
		if p.Key == "init" {
			if seenDefault {
				return 0, nil, fmt.Errorf("the default initial value is given twice")
			}
			def, seenDefault = v, true
			continue
		}
		a, err := num(p.Key, "(init=V, or ADDRESS=V)")
		if err != nil {
			return 0, nil, err
		}
		if words == nil {
			words = map[uint64]uint64{}
		}
		if _, dup := words[a]; dup {
			return 0, nil, fmt.Errorf("initial value of address %d is given twice", a)
		}
		words[a] = v
	}
	return def, words, nil
}
