package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// Kind is what sort of run a record is of.
type Kind string

const (
	KindMigrate  Kind = "migrate"
	KindDryRun   Kind = "dry-run"
	KindRollback Kind = "rollback"
	KindCleanup  Kind = "cleanup"
	KindAbort    Kind = "abort"
	// KindRestore: a catalog restored in place from an in-place
	// migration's way back (operator.Restore).
	KindRestore Kind = "restore"
)

// Outcome is how a run ended, or InProgress while it runs.
type Outcome string

const (
	InProgress  Outcome = "in-progress"
	Succeeded   Outcome = "succeeded"
	Failed      Outcome = "failed"
	Aborted     Outcome = "aborted"
	DryRunOK    Outcome = "dry-run-ok"
	NothingToDo Outcome = "nothing-to-do"
)

// Record is one run. Times are UTC.
type Record struct {
	ID string `json:"id"`
	// Kind and Trigger: what ran and who started it ("cli:<user>",
	// "release:<event>", "console").
	Kind    Kind   `json:"kind"`
	Trigger string `json:"trigger"`
	Pointer string `json:"pointer"`
	// From and To: the catalogs (and their formats) the run went between;
	// for a rollback, From is the catalog the pointer named before it.
	Source  string         `json:"source,omitempty"`
	Target  string         `json:"target,omitempty"`
	From    format.Version `json:"from,omitempty"`
	To      format.Version `json:"to,omitempty"`
	Start   time.Time      `json:"start"`
	End     time.Time      `json:"end,omitzero"`
	Outcome Outcome        `json:"outcome"`
	// State is the last state the run reached (the failed one, if it failed).
	State     string `json:"state,omitempty"`
	ErrorName string `json:"error_name,omitempty"`
	Error     string `json:"error,omitempty"`
	Shards    int    `json:"shards,omitempty"`
	// Rows are the records the run moved; Bytes the shard bytes it wrote
	// in the target format.
	Rows  uint64 `json:"rows,omitempty"`
	Bytes int64  `json:"bytes,omitempty"`
	// StateSeconds is the time spent per state; a Map's items are summed.
	StateSeconds     map[string]float64 `json:"state_seconds,omitempty"`
	PointerVersionID string             `json:"pointer_version_id,omitempty"`
	// Notes say what else happened (a cleanup that failed, a warning).
	Notes []string `json:"notes,omitempty"`
	// Online: what an online run's catch-up did, and its write freeze.
	Online *Online `json:"online,omitempty"`
}

// Online is what an online run's catch-up rounds did, and how long writes
// were frozen.
type Online struct {
	Rounds []Round `json:"rounds"`
	// FreezeSeconds is the write freeze: from the fence to the pointer's
	// write.
	FreezeSeconds float64 `json:"freeze_seconds"`
	// Offline: the run was asked online and migrated offline, for this
	// reason (its freeze then runs from the fence before the copy).
	Offline string `json:"offline,omitempty"`
	// Backlog: RockLake's WAL backlog the fence replayed, fetched ahead
	// of the freeze.
	Backlog *Backlog `json:"backlog,omitempty"`
}

// Backlog is the WAL a fencing writer replays as it opens (the old
// writer's WAL since its memtable last reached L0), fetched ahead: its WAL
// SSTs, their bytes, and the fetch's time, before the freeze.
type Backlog struct {
	WALSSTs      int     `json:"wal_ssts"`
	Bytes        int64   `json:"bytes"`
	FetchSeconds float64 `json:"fetch_seconds"`
}

// Round is one catch-up round: the source keys it carried, how it found
// them (the candidates read) (sst-diff, or merge-scan with why) and its time; Last after the
// fence.
type Round struct {
	Round int `json:"round"`
	Keys  int `json:"keys"`
	// Candidates: the keys the SST diff read in both views to find them
	// (0 for the merge scan).
	Candidates int     `json:"candidates,omitempty"`
	Method     string  `json:"method"`
	Reason     string  `json:"reason,omitempty"`
	Seconds    float64 `json:"seconds"`
	Last       bool    `json:"last,omitempty"`
}

// Done reports whether the run has ended.
func (r Record) Done() bool { return r.Outcome != InProgress }

// Duration is how long the run took, or has run until now.
func (r Record) Duration(now time.Time) time.Duration {
	if r.End.IsZero() {
		return now.Sub(r.Start)
	}
	return r.End.Sub(r.Start)
}

var (
	// ErrBadRecord: a record without an id, kind, pointer or start, or with
	// an id that cannot be part of an object key.
	ErrBadRecord = errors.New("history: bad record")
	// ErrRecordExists: another run's record holds the key (never overwritten).
	ErrRecordExists = errors.New("history: record exists")
	// ErrNoRecord: no record of that run.
	ErrNoRecord = errors.New("history: no such record")
)

func (r Record) validate() error {
	switch {
	case r.ID == "" || strings.ContainsAny(r.ID, "/\\ ") || strings.HasPrefix(r.ID, "."):
		return fmt.Errorf("%w: id %q", ErrBadRecord, r.ID)
	case r.Kind == "":
		return fmt.Errorf("%w: run %s has no kind", ErrBadRecord, r.ID)
	case r.Pointer == "":
		return fmt.Errorf("%w: run %s has no pointer", ErrBadRecord, r.ID)
	case r.Start.IsZero():
		return fmt.Errorf("%w: run %s has no start time", ErrBadRecord, r.ID)
	case r.Outcome == "":
		return fmt.Errorf("%w: run %s has no outcome", ErrBadRecord, r.ID)
	}
	return nil
}

// Create writes a new record and returns its URL. It never overwrites: a
// record of the same run at the same key (a retried step) is left as it is
// and its URL returned; any other is ErrRecordExists.
func Create(ctx context.Context, store *blob.Store, r Record) (string, error) {
	if err := r.validate(); err != nil {
		return "", err
	}
	r.Start, r.End = r.Start.UTC(), r.End.UTC()
	url := layout.HistoryRecord(r.Pointer, r.Start, r.ID)
	body, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("history: encode %s: %w", url, err)
	}
	_, err = store.PutIfAbsent(ctx, url, body)
	if err == nil {
		return url, nil
	}
	if !errors.Is(err, blob.ErrPreconditionFailed) {
		return "", fmt.Errorf("history: write %s: %w", url, err)
	}
	had, _, rerr := read(ctx, store, url)
	if rerr != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrRecordExists, url, rerr)
	}
	if had.ID != r.ID {
		return "", fmt.Errorf("%w: %s holds run %s", ErrRecordExists, url, had.ID)
	}
	return url, nil
}

func read(ctx context.Context, store *blob.Store, url string) (Record, blob.Info, error) {
	b, info, err := store.Get(ctx, url)
	if errors.Is(err, blob.ErrNotFound) {
		return Record{}, info, fmt.Errorf("%w: %s: %w", ErrNoRecord, url, err)
	}
	if err != nil {
		return Record{}, info, fmt.Errorf("history: read %s: %w", url, err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, info, fmt.Errorf("%w: %s: %w", ErrBadRecord, url, err)
	}
	return r, info, nil
}

// Read reads one record by URL.
func Read(ctx context.Context, store *blob.Store, url string) (Record, error) {
	r, _, err := read(ctx, store, url)
	return r, err
}

// updateAttempts bounds Update's retries when another writer of the same
// record (a retried step racing its first attempt) changed it in between.
const updateAttempts = 5

// Update applies fn to the record at url and writes it back, conditional on
// the version it read, retrying a few times if that version changed. fn
// must not change the run's id, pointer or start.
func Update(ctx context.Context, store *blob.Store, url string, fn func(*Record)) (Record, error) {
	for attempt := 1; ; attempt++ {
		r, info, err := read(ctx, store, url)
		if err != nil {
			return Record{}, err
		}
		id, ptr, start := r.ID, r.Pointer, r.Start
		fn(&r)
		if r.ID != id || r.Pointer != ptr || !r.Start.Equal(start) {
			return Record{}, fmt.Errorf("%w: an update may not change the run's id, pointer or start (%s)", ErrBadRecord, url)
		}
		body, err := json.Marshal(r)
		if err != nil {
			return Record{}, fmt.Errorf("history: encode %s: %w", url, err)
		}
		_, err = store.PutIfMatch(ctx, url, body, info.ETag)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, blob.ErrPreconditionFailed) || attempt == updateAttempts {
			return Record{}, fmt.Errorf("history: update %s: %w", url, err)
		}
	}
}

// Entry is one listed record: its URL and the record, or why it could not
// be read (one damaged record does not hide the others).
type Entry struct {
	URL string `json:"url"`
	Record
	ReadError string `json:"read_error,omitempty"`
}

// List reads the records of the pointer at pointerURL, newest first, at
// most limit of them (limit <= 0: all).
func List(ctx context.Context, store *blob.Store, pointerURL string, limit int) ([]Entry, error) {
	infos, err := store.List(ctx, layout.HistoryDir(pointerURL))
	if err != nil {
		return nil, fmt.Errorf("history: list %s: %w", layout.HistoryDir(pointerURL), err)
	}
	urls := make([]string, 0, len(infos))
	for _, in := range infos {
		if layout.IsRecord(in.URL) {
			urls = append(urls, in.URL)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(urls)))
	if limit > 0 && len(urls) > limit {
		urls = urls[:limit]
	}
	out := make([]Entry, 0, len(urls))
	for _, u := range urls {
		r, _, err := read(ctx, store, u)
		e := Entry{URL: u, Record: r}
		if err != nil {
			e.ReadError = err.Error()
			e.ID = layout.HistoryRunID(u)
		}
		out = append(out, e)
	}
	return out, nil
}

// Find returns the URL and record of run id of the pointer at pointerURL.
func Find(ctx context.Context, store *blob.Store, pointerURL, id string) (string, Record, error) {
	infos, err := store.List(ctx, layout.HistoryDir(pointerURL))
	if err != nil {
		return "", Record{}, fmt.Errorf("history: list %s: %w", layout.HistoryDir(pointerURL), err)
	}
	for i := len(infos) - 1; i >= 0; i-- {
		if layout.HistoryRunID(infos[i].URL) == id {
			r, _, err := read(ctx, store, infos[i].URL)
			return infos[i].URL, r, err
		}
	}
	return "", Record{}, fmt.Errorf("%w: run %s of %s", ErrNoRecord, id, pointerURL)
}
