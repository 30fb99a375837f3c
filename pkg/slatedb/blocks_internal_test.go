package slatedb

import (
	"errors"
	"testing"
)

// A truncated or overlong native profile is an error, never a short one.
func TestDecodeBlocksRefusesBadBuffers(t *testing.T) {
	good := make([]byte, 40)
	good[36] = 1 // one block
	good = append(good, 1, 0, 0, 0, 'k')
	good = append(good, make([]byte, 32)...)
	if b, err := decodeBlocks(good); err != nil || len(b.Blocks) != 1 || string(b.Blocks[0].Start) != "k" {
		t.Fatalf("good buffer: %+v, %v", b, err)
	}
	if _, err := decodeBlocks(good[:len(good)-1]); !errors.Is(err, errShortProfile) {
		t.Errorf("truncated: %v", err)
	}
	if _, err := decodeBlocks(append(good, 0)); err == nil {
		t.Error("a trailing byte was taken")
	}
}
