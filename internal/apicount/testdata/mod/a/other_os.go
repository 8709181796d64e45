//go:build plan9

package a

func Plan9Only() {}
