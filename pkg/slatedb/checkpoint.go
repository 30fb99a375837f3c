package slatedb

/*
#include <stdlib.h>
#include "rocklake_slatedb.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unsafe"
)

// Checkpoint is a durable, named-by-id view of a database that garbage
// collection keeps until it expires or is deleted.
type Checkpoint struct {
	ID         string     `json:"id"`
	ManifestID uint64     `json:"manifest_id"`
	CreateTime time.Time  `json:"create_time"`
	ExpireTime *time.Time `json:"expire_time,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// CheckpointOptions describe a checkpoint to create.
type CheckpointOptions struct {
	// Lifetime after which the checkpoint expires; zero: it never does.
	Lifetime time.Duration
	// Name, to find the checkpoint again in a listing.
	Name string
}

type rawCheckpoint struct {
	ID         string  `json:"id"`
	ManifestID uint64  `json:"manifest_id"`
	CreateTime string  `json:"create_time"`
	ExpireTime *string `json:"expire_time"`
	Name       *string `json:"name"`
}

func (r rawCheckpoint) checkpoint() (Checkpoint, error) {
	cp := Checkpoint{ID: r.ID, ManifestID: r.ManifestID}
	if r.CreateTime != "" {
		t, err := time.Parse(time.RFC3339Nano, r.CreateTime)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("slatedb: checkpoint %s create time: %w", r.ID, err)
		}
		cp.CreateTime = t
	}
	if r.ExpireTime != nil {
		t, err := time.Parse(time.RFC3339Nano, *r.ExpireTime)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("slatedb: checkpoint %s expire time: %w", r.ID, err)
		}
		cp.ExpireTime = &t
	}
	if r.Name != nil {
		cp.Name = *r.Name
	}
	return cp, nil
}

func parseCheckpoint(s string) (Checkpoint, error) {
	var r rawCheckpoint
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return Checkpoint{}, fmt.Errorf("slatedb: checkpoint result %q: %w", s, err)
	}
	return r.checkpoint()
}

// CreateCheckpoint creates a detached checkpoint of the state the database's
// manifest records, without opening a writer (so no writer is fenced). That
// is everything a closed writer wrote; a live writer's latest writes may sit
// in its WAL beyond the manifest and are then not in the checkpoint. To
// capture all of a live database, open a Writer (fencing the old one) and use
// Writer.Checkpoint.
func CreateCheckpoint(ctx context.Context, url string, cp CheckpointOptions, opts Options) (Checkpoint, error) {
	if err := useS3(ctx, "create checkpoint", url); err != nil {
		return Checkpoint{}, err
	}
	curl, copts, name := C.CString(url), C.CString(opts.json()), C.CString(cp.Name)
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(copts))
	defer C.free(unsafe.Pointer(name))
	var out *C.char
	err := native(ctx, "create checkpoint", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_checkpoint_create(curl, copts, C.uint64_t(cp.Lifetime.Milliseconds()), name, t, c, &out, e)
	})
	if err != nil {
		return Checkpoint{}, err
	}
	return parseCheckpoint(takeString(out))
}

// ListCheckpoints lists the database's checkpoints.
func ListCheckpoints(ctx context.Context, url string, opts Options) ([]Checkpoint, error) {
	if err := useS3(ctx, "list checkpoints", url); err != nil {
		return nil, err
	}
	curl, copts := C.CString(url), C.CString(opts.json())
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(copts))
	var out *C.char
	err := native(ctx, "list checkpoints", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_checkpoint_list(curl, copts, t, c, &out, e)
	})
	if err != nil {
		return nil, err
	}
	s := takeString(out)
	var raws []rawCheckpoint
	if err := json.Unmarshal([]byte(s), &raws); err != nil {
		return nil, fmt.Errorf("slatedb: checkpoint list %q: %w", s, err)
	}
	cps := make([]Checkpoint, 0, len(raws))
	for _, r := range raws {
		cp, err := r.checkpoint()
		if err != nil {
			return nil, err
		}
		cps = append(cps, cp)
	}
	return cps, nil
}

// DeleteCheckpoint deletes a checkpoint; one that does not exist is
// ErrCheckpointMissing.
func DeleteCheckpoint(ctx context.Context, url, id string, opts Options) error {
	if err := useS3(ctx, "delete checkpoint", url); err != nil {
		return err
	}
	curl, copts, cid := C.CString(url), C.CString(opts.json()), C.CString(id)
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(copts))
	defer C.free(unsafe.Pointer(cid))
	return native(ctx, "delete checkpoint", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_checkpoint_delete(curl, copts, cid, t, c, e)
	})
}

// Copied is what CopyCheckpoint made.
type Copied struct {
	// ManifestID is the checkpoint's manifest, the copy's first.
	ManifestID uint64 `json:"manifest_id"`
	// Objects and Bytes: the SSTs, WAL files and manifest copied.
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
	// CheckpointsDropped: the source's checkpoints, which the copied
	// manifest listed, removed from the copy.
	CheckpointsDropped int `json:"checkpoints_dropped"`
}

// CopyCheckpoint makes a database of its own at dest (an empty place in the
// same bucket or file system as url) holding exactly what checkpoint id of
// the database at url holds: the objects the checkpoint's manifest needs are
// copied by the store (S3 CopyObject, server side), the manifest last, and
// the source's checkpoints are dropped from the copy. Unlike a SlateDB clone
// the copy shares nothing with url, so any reader, RockLake's included,
// opens it. On error, objects may be left under dest: the caller removes
// them (until the manifest lands, nothing there is a database).
func CopyCheckpoint(ctx context.Context, url, id, dest string, opts Options) (Copied, error) {
	return CopyView(ctx, url, View{Checkpoint: id}, dest, opts)
}

// CopyView is CopyCheckpoint of a view: the view's checkpoint and the WAL
// SSTs up to its WALEnd that a live writer wrote past the checkpoint's
// manifest, which the copy replays when opened. A copy of a view of a
// running RockLake holds every commit RockLake had acknowledged when the
// view was taken; taking it fences nothing. A WAL SST of the view no
// longer there is ErrData.
func CopyView(ctx context.Context, url string, v View, dest string, opts Options) (Copied, error) {
	if err := useS3(ctx, "copy checkpoint", url); err != nil {
		return Copied{}, err
	}
	curl, copts, cid, cdest := C.CString(url), C.CString(opts.json()), C.CString(v.Checkpoint), C.CString(dest)
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(copts))
	defer C.free(unsafe.Pointer(cid))
	defer C.free(unsafe.Pointer(cdest))
	var out *C.char
	err := native(ctx, "copy checkpoint", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_checkpoint_copy(curl, copts, cid, C.uint64_t(v.WALEnd), cdest, t, c, &out, e)
	})
	if err != nil {
		return Copied{}, err
	}
	s := takeString(out)
	var r Copied
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return Copied{}, fmt.Errorf("slatedb: copy result %q: %w", s, err)
	}
	return r, nil
}
