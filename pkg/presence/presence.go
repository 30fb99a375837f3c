// Package presence holds the records the servers' supervisors keep beside
// a pointer (<pointer>.servers/<id>.json): who follows the pointer, what
// its RockLake has open, and which lock holder's fence it has
// acknowledged, with a heartbeat. The workflow waits on them instead of a
// fixed time: before a fence, for every live supervisor to acknowledge
// (its server is no writer on the source, and it opens nothing there
// until the lock frees); before it removes a read replica, for every live
// one to leave it. With no live supervisor there is no wait; one that
// stopped heartbeating is waited for at most until its record goes stale.
package presence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// Heartbeat is how often a supervisor rewrites its record when nothing
// changed; StaleAfter is how old a record may be and still count as live
// (three heartbeats: one lost PUT, one slow one, and clocks that differ).
const (
	Heartbeat  = 10 * time.Second
	StaleAfter = 3 * Heartbeat
)

// Role says what a supervisor serves.
type Role string

const (
	// Follower: the pointer's server (a writer when it may be one).
	Follower Role = "follower"
	// Reader: a reader (serve --mode reader), serving a copy of the current
	// catalog; it never opens the source.
	Reader Role = "fleet-reader" // the wire name predates fleets of catalogs
)

// Record is one supervisor's presence.
type Record struct {
	ID   string `json:"id"`
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	Role Role   `json:"role"`
	// Catalog and Mode are what its RockLake has open ("" when none runs).
	Catalog string `json:"catalog,omitempty"`
	Mode    string `json:"mode,omitempty"`
	// Acked is the lock holder whose fence this supervisor acknowledged:
	// its server is no writer on that holder's source, and it opens
	// nothing there until the lock frees.
	Acked     string    `json:"acked,omitempty"`
	Heartbeat time.Time `json:"heartbeat"`
	// StaleAfterSeconds: past it since Heartbeat, the supervisor is taken
	// for gone.
	StaleAfterSeconds float64 `json:"stale_after_seconds"`

	// unreadable: the object could not be decoded (fail closed: it is
	// waited for until its object is StaleAfter old).
	unreadable bool
}

// Live reports whether r's supervisor counts as running at now.
func (r Record) Live(now time.Time) bool {
	stale := time.Duration(r.StaleAfterSeconds * float64(time.Second))
	if stale <= 0 {
		stale = StaleAfter
	}
	return now.Sub(r.Heartbeat) < stale
}

func (r Record) String() string {
	s := fmt.Sprintf("%s (%s, pid %d, %s", r.ID, r.Host, r.PID, r.Role)
	if r.unreadable {
		return r.ID + " (an unreadable record)"
	}
	if r.Catalog != "" {
		s += fmt.Sprintf(", %s on %s", r.Mode, r.Catalog)
	}
	return s + fmt.Sprintf(", heartbeat %s)", r.Heartbeat.UTC().Format(time.RFC3339))
}

// Put writes r (its Heartbeat now).
func Put(ctx context.Context, store *blob.Store, pointerURL string, r Record) error {
	if r.ID == "" || strings.ContainsAny(r.ID, "/\\") {
		return fmt.Errorf("presence: bad supervisor id %q", r.ID)
	}
	r.Heartbeat = time.Now().UTC()
	if r.StaleAfterSeconds == 0 {
		r.StaleAfterSeconds = StaleAfter.Seconds()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := store.Put(ctx, layout.Server(pointerURL, r.ID), b); err != nil {
		return fmt.Errorf("presence: write %s: %w", layout.Server(pointerURL, r.ID), err)
	}
	return nil
}

// Remove deletes supervisor id's record (it stopped cleanly).
func Remove(ctx context.Context, store *blob.Store, pointerURL, id string) error {
	err := store.Delete(ctx, layout.Server(pointerURL, id))
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("presence: remove %s: %w", layout.Server(pointerURL, id), err)
	}
	return nil
}

// Live lists the records of the supervisors live at now. A record that
// cannot be decoded counts as live (and acknowledging nothing) until its
// object is StaleAfter old.
func Live(ctx context.Context, store *blob.Store, pointerURL string, now time.Time) ([]Record, error) {
	objs, err := store.List(ctx, layout.Servers(pointerURL))
	if errors.Is(err, blob.ErrNotFound) || errors.Is(err, blob.ErrNoSuchBucket) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("presence: list %s: %w", layout.Servers(pointerURL), err)
	}
	var live []Record
	for _, o := range objs {
		if !strings.HasSuffix(o.URL, ".json") {
			continue
		}
		b, _, err := store.Get(ctx, o.URL)
		if errors.Is(err, blob.ErrNotFound) {
			continue // removed since the list: it stopped
		}
		if err != nil {
			return nil, fmt.Errorf("presence: read %s: %w", o.URL, err)
		}
		var r Record
		if json.Unmarshal(b, &r) != nil || r.ID == "" || r.Heartbeat.IsZero() {
			id := strings.TrimSuffix(o.URL[strings.LastIndex(o.URL, "/")+1:], ".json")
			r = Record{ID: id, Heartbeat: o.LastModified, unreadable: true}
		}
		if r.Live(now) {
			live = append(live, r)
		}
	}
	return live, nil
}

// ErrNotAcknowledged: a live supervisor did not do what the workflow
// waited for within the bound; nothing was fenced or removed.
var ErrNotAcknowledged = errname.New("presence", "ServersNotAcknowledged", "")

// pollEvery is how often Await lists the records.
const pollEvery = 200 * time.Millisecond

// Await waits until no live supervisor's record blocks (blocks(r) false
// for each), at most bound: past it, ErrNotAcknowledged naming the ones
// that still block (what, says the caller). It returns how long it
// waited; with no live supervisor, at once.
func Await(ctx context.Context, store *blob.Store, pointerURL string, bound time.Duration, what string, blocks func(Record) bool) (time.Duration, error) {
	start := time.Now()
	for {
		live, err := Live(ctx, store, pointerURL, time.Now())
		if err != nil {
			return time.Since(start), err
		}
		var waiting []string
		for _, r := range live {
			if r.unreadable || blocks(r) {
				waiting = append(waiting, r.String())
			}
		}
		if len(waiting) == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) >= bound {
			return time.Since(start), fmt.Errorf("%w: after %s, %d live supervisor(s) of %s did not %s: %s", ErrNotAcknowledged,
				time.Since(start).Round(time.Millisecond), len(waiting), pointerURL, what, strings.Join(waiting, "; "))
		}
		t := time.NewTimer(min(pollEvery, bound-time.Since(start)))
		select {
		case <-ctx.Done():
			t.Stop()
			return time.Since(start), fmt.Errorf("presence: waiting for the supervisors of %s to %s: %w", pointerURL, what, context.Cause(ctx))
		case <-t.C:
		}
	}
}
