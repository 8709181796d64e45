package b

type alias = int

type Alias = alias
