// Package rocklakev1 holds the protobuf messages of RockLake catalog format
// 1, generated from the .proto files beside this one (see package proto for
// how to regenerate). pkg/format maps tags to these messages.
package rocklakev1
