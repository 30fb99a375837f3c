// Package proto holds the protobuf definitions of RockLake's catalog formats
// (rocklake/v1, rocklake/v2) and regenerates their Go code: the generated
// .pb.go files are committed next to the .proto files, and
// `go generate ./proto/...` rewrites them (protoc from Debian's
// protobuf-compiler, protoc-gen-go from go.mod's tool directive).
package proto

//go:generate ./generate.sh
