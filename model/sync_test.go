package model

import (
	"strings"
	"testing"
)

func TestSyncModels(t *testing.T) {
	ex, err := Builtin("exchanger")(nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := Builtin("channel")(nil)
	if err != nil {
		t.Fatal(err)
	}
	ret := func(name string, arg, res Value) *Op {
		op := &Op{Name: name, Results: []Value{res}}
		if name != "recv" {
			op.Args = []Value{arg}
		}
		return op
	}
	cut := func(name string, arg Value) *Op {
		op := ret(name, arg, Value{})
		op.Status, op.Results = CutOff, nil
		return op
	}
	n := Number
	cases := []struct {
		m    *Model
		a, b *Op
		want bool
	}{
		{ex, ret("exchange", n(1), n(2)), ret("exchange", n(2), n(1)), true},
		{ex, ret("exchange", n(1), n(2)), ret("exchange", n(2), n(3)), false},
		{ex, ret("exchange", n(1), n(2)), ret("exchange", n(3), n(1)), false},
		{ex, ret("exchange", n(1), n(2)), cut("exchange", n(2)), true},
		{ex, ret("exchange", n(1), n(2)), cut("exchange", n(3)), false},
		{ex, ret("exchange", n(1), Sym(Fail)), cut("exchange", n(3)), false},
		{ch, ret("send", n(5), Sym(OK)), ret("recv", Value{}, n(5)), true},
		{ch, ret("recv", Value{}, n(5)), ret("send", n(5), Sym(OK)), true},
		{ch, ret("send", n(5), Sym(OK)), ret("recv", Value{}, n(6)), false},
		{ch, ret("send", n(5), Sym(OK)), ret("send", n(5), Sym(OK)), false},
		{ch, ret("recv", Value{}, n(5)), ret("recv", Value{}, n(5)), false},
		{ch, ret("send", n(5), Sym(Fail)), cut("recv", Value{}), false},
		{ch, cut("send", n(5)), cut("recv", Value{}), true},
	}
	for i, c := range cases {
		if got := c.m.Sync(c.a, c.b); got != c.want {
			t.Errorf("case %d: %s/%s: Sync %v, want %v", i, c.a.Name, c.b.Name, got, c.want)
		}
	}
	// Only a timeout (or an optional operation) takes effect alone.
	if ex.Step("", ret("exchange", n(1), n(2))) != nil || ex.Step("", ret("exchange", n(1), Sym(Fail))) == nil {
		t.Error("exchanger: a returned exchange takes effect alone, or a timeout does not")
	}
	for _, c := range []struct {
		m   *Model
		op  *Op
		err string
	}{
		{ex, ret("exchange", n(1), Sym(OK)), "exchanger exchange: returns ok, not a number or fail"},
		{ch, ret("send", n(1), n(3)), "channel send: returns 3, not ok or fail"},
		{ch, &Op{Name: "recv", Args: []Value{n(1)}, Results: []Value{n(1)}}, "channel recv takes 0 arguments, not 1"},
		{ch, &Op{Name: "receive", Results: []Value{n(1)}}, `channel has no operation "receive" (it has recv, send)`},
	} {
		if err := c.m.Validate(c.op); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Validate %s: %v, want %q", c.op.Name, err, c.err)
		}
	}
}
