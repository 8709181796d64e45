package a

func TestOnly() {}
