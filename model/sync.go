package model

// The synchronisation objects of version 2 (docs/history-format.md, "The
// models"): exchanger and channel, specified by synchronisation
// linearisation (Lawrence and Lowe, "Synchronisation: specification and
// testing", Sections 2.1 and 2.4). Both are stateless: their one state is
// "", and Step only lets a timeout (a result of fail) take effect alone.
// Which operations pair is Model.Sync's to say.

// unary is the Step of a stateless synchronisation object: an operation
// that returned fail timed out, a synchronisation of its own that changes
// nothing; any other needs a partner, and an optional one may time out
// too.
func unary(s any, op *Op) []any {
	if op.Status != Returned || op.Results[0].Sym == Fail {
		return states(s)
	}
	return nil
}

// gave says whether op, if it returned, returned v: an optional
// operation's results are any.
func gave(op *Op, v Value) bool {
	return op.Status != Returned || op.Results[0] == v
}

// timedOut says whether op returned fail: it synchronised with nobody.
func timedOut(op *Op) bool {
	return op.Status == Returned && op.Results[0].Sym == Fail
}

// exchanger: exchange V returns the value of the exchange it paired with,
// which got V (the paper's Exchanger and TimeoutExchanger, a homogeneous
// binary synchronisation), or fail when it timed out.
func makeExchanger(ps []Param) (*Model, error) {
	if err := params("exchanger", ps, nil); err != nil {
		return nil, err
	}
	return &Model{
		Init:     func() []any { return states("") },
		Step:     unary,
		Key:      strKey,
		Validate: validator("exchanger", map[string]sig{"exchange": {"n", one(true, Fail)}}),
		Describe: func(any) string { return "exchanger (stateless)" },
		Sync: func(a, b *Op) bool {
			return !timedOut(a) && !timedOut(b) && gave(a, b.Args[0]) && gave(b, a.Args[0])
		},
	}, nil
}

// channel: a synchronous channel, send V pairing with a recv that returns
// V (the paper's SyncChan, a heterogeneous binary synchronisation), each
// returning fail instead when it timed out (its TimeoutChannel).
func makeChannel(ps []Param) (*Model, error) {
	if err := params("channel", ps, nil); err != nil {
		return nil, err
	}
	return &Model{
		Init: func() []any { return states("") },
		Step: unary,
		Key:  strKey,
		Validate: validator("channel", map[string]sig{
			"send": {"n", one(false, OK, Fail)},
			"recv": {"", one(true, Fail)},
		}),
		Describe: func(any) string { return "channel (stateless)" },
		Sync: func(a, b *Op) bool {
			if a.Name == "recv" {
				a, b = b, a
			}
			return a.Name == "send" && b.Name == "recv" && !timedOut(a) && !timedOut(b) && gave(b, a.Args[0])
		},
	}, nil
}
