package a

// Counted (15): types Embedded, T, G, I; F; methods T.M, G.N; fields
// T.Field, T.Embedded, T.Inner, T.Inner.Deep; I.Do; C; V1, V2.
func F()         {}
func f()         {}
func (T) M()     {}
func (T) m()     {}
func (u) M()     {}
func (*G[P]) N() {}

type Embedded struct{}

type T struct {
	Field  int
	hidden int
	Embedded
	*u
	Inner struct {
		Deep int
		deep int
	}
}

type u struct{ X int }

type I interface {
	Do()
	do()
}

type G[P any] struct{}

const C, c = 1, 2

var (
	V1, V2 = 1, 2
	v3     = 3
)
