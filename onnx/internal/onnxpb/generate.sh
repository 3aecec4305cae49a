#!/bin/sh
# onnx/internal/onnxpb/generate.sh: regenerates onnx.pb.go, the Go types of
# ONNX's protobuf schema, from the onnx-ml.proto of Debian's python3-onnx
# (the schema models are written with: onnx.proto plus the ML types, same
# field numbers). Run by `go generate ./onnx/...` or `make onnx-proto`.
#
# The schema's package is renamed from onnx to loom.onnx: the wire format
# does not carry it, and a program that links loom beside another ONNX
# package would otherwise register the same message names twice, which
# google.golang.org/protobuf refuses at start-up.
set -e
cd "$(dirname "$0")"
PROTO=${ONNX_PROTO:-/usr/lib/python3/dist-packages/onnx/onnx-ml.proto}
need=
command -v protoc >/dev/null 2>&1 || need="$need protobuf-compiler"
[ -f "$PROTO" ] || need="$need python3-onnx"
if [ -n "$need" ]; then
	echo "installing$need to regenerate the ONNX types" >&2
	sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq && $sudo apt-get install -y -qq $need >/dev/null
fi
GOBIN=$(go env GOPATH)/bin
go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^package onnx;/package loom.onnx;/' "$PROTO" > "$tmp/onnx.proto"
protoc --plugin=protoc-gen-go="$GOBIN/protoc-gen-go" -I "$tmp" --go_out=. \
	--go_opt=paths=source_relative \
	--go_opt=Monnx.proto=github.com/loom-go/loom/onnx/internal/onnxpb \
	"$tmp/onnx.proto"
echo "onnx.pb.go from $PROTO ($(protoc --version))" >&2
