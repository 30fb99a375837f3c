package catalog

import (
	"bytes"
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// PutRaw writes value under key (raw repair: the CLI's kv put) as the
// catalog's writer, which fences a running RockLake writer, in one batch,
// leaving compaction to RockLake's writer (Passive). The value must be what
// the catalog's format stores under key (CheckValue), checked through the
// writer before the write.
func PutRaw(ctx context.Context, url string, opts Options, key, value []byte) error {
	var b slatedb.Batch
	b.Put(key, value)
	return writeRaw(ctx, url, opts, &b, func(v format.Version) error { return CheckValue(v, key, value) })
}

// DeleteRaw deletes key (raw repair: the CLI's kv delete) as PutRaw writes;
// never the catalog-format-version key (ErrVersionKeyDelete).
func DeleteRaw(ctx context.Context, url string, opts Options, key []byte) error {
	if bytes.Equal(key, format.FormatVersionKey()) {
		return fmt.Errorf("%w: %s", ErrVersionKeyDelete, url)
	}
	var b slatedb.Batch
	b.Delete(key)
	return writeRaw(ctx, url, opts, &b, nil)
}

// writeRaw writes b as the catalog's writer once check, if any, accepts the
// catalog's format.
func writeRaw(ctx context.Context, url string, opts Options, b *slatedb.Batch, check func(format.Version) error) error {
	opts.Store.Passive = true // one write: leave compaction to RockLake's writer
	w, err := OpenWriter(ctx, url, opts)
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(w.Version()); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Write(ctx, b); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// CheckValue checks value against key in format v: the envelope, the row
// type or counter encoding its shape has. The catalog-format-version key
// takes only a format version value; keys of unknown tags and of no known
// shape take any bytes; with the version check skipped (v 0) only the
// version key itself is checked.
func CheckValue(v format.Version, key, value []byte) error {
	if bytes.Equal(key, format.FormatVersionKey()) {
		if _, err := format.DecodeFormatVersion(value); err != nil {
			return fmt.Errorf("%w: %x is not a catalog-format-version value (01 'SDKV' and a big-endian u32): %w", ErrInvalidValue, value, err)
		}
		return nil
	}
	if !format.Supported(v) {
		return nil
	}
	k, err := format.DecodeKey(v, key)
	if err != nil {
		return fmt.Errorf("%w: key %x is not a %s key: %w", ErrInvalidValue, key, v, err)
	}
	if _, err := format.DecodeValue(v, k, value); err != nil {
		return fmt.Errorf("%w: %x is not a %s value of %s: %w", ErrInvalidValue, value, v, k.Tag, err)
	}
	return nil
}
