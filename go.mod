module github.com/loom-go/loom

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
)
