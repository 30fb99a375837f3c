package slatedb

import "encoding/binary"

// Batch collects puts and deletes that a Writer applies atomically, in one
// native call whatever their number. The zero value is an empty batch.
type Batch struct {
	buf []byte
	n   int
}

// Put sets key to value. The batch copies both.
func (b *Batch) Put(key, value []byte) {
	b.buf = append(b.buf, 0)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(key)))
	b.buf = append(b.buf, key...)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(value)))
	b.buf = append(b.buf, value...)
	b.n++
}

// Delete removes key.
func (b *Batch) Delete(key []byte) {
	b.buf = append(b.buf, 1)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(key)))
	b.buf = append(b.buf, key...)
	b.n++
}

// Len is the number of operations in the batch.
func (b *Batch) Len() int { return b.n }

// Size is the batch's encoded size in bytes.
func (b *Batch) Size() int { return len(b.buf) }

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() { b.buf, b.n = b.buf[:0], 0 }

// Append adds o's operations after b's, in order (o is left as it is): a
// caller can collect deletes and puts apart and still apply them in one
// batch, deletes first, since the last operation on a key wins.
func (b *Batch) Append(o *Batch) {
	b.buf = append(b.buf, o.buf...)
	b.n += o.n
}

// Puts calls fn with the key and value of each put in the batch, in order
// (deletes are skipped). The slices alias the batch: valid until it changes.
func (b *Batch) Puts(fn func(key, value []byte)) {
	buf := b.buf
	for len(buf) > 0 {
		op := buf[0]
		klen := int(binary.LittleEndian.Uint32(buf[1:]))
		key := buf[5 : 5+klen]
		buf = buf[5+klen:]
		if op != 0 {
			continue
		}
		vlen := int(binary.LittleEndian.Uint32(buf))
		fn(key, buf[4:4+vlen])
		buf = buf[4+vlen:]
	}
}
