module github.com/loom-go/loom

go 1.26.8
