package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// The failure limit is kept by the items themselves, not by the Map's
// tolerated failures: a Map Run past its tolerance stops the child
// executions still running on AWS, and a migration stopped there runs no
// Abort (its source fenced, its lock held). So an item whose run failed
// counts itself (CountFailure), and each item asks before it starts
// (MayStart): past the limit it starts nothing, and those running end as
// they would.

// failures is the count's object.
type failures struct {
	Failures int `json:"failures"`
}

// MayStart reports whether fleet run id (its records beside source) may
// start another pointer's run: fewer than maxFailures failed so far (0:
// no limit).
func MayStart(ctx context.Context, store *blob.Store, source, id string, maxFailures int) (bool, error) {
	if maxFailures <= 0 {
		return true, nil
	}
	n, _, err := readFailures(ctx, store, source, id)
	if err != nil {
		return false, err // fail closed: start nothing it cannot count
	}
	return n < maxFailures, nil
}

// CountFailure adds one to fleet run id's failed pointers, with a
// conditional write (concurrent items each count once), and returns the
// count.
func CountFailure(ctx context.Context, store *blob.Store, source, id string) (int, error) {
	url := layout.FleetFailures(source, id)
	for range 20 {
		n, etag, err := readFailures(ctx, store, source, id)
		if err != nil {
			return 0, err
		}
		body := fmt.Appendf(nil, `{"failures":%d}`, n+1)
		if etag == "" {
			_, err = store.PutIfAbsent(ctx, url, body)
		} else {
			_, err = store.PutIfMatch(ctx, url, body, etag)
		}
		switch {
		case err == nil:
			return n + 1, nil
		case !errors.Is(err, blob.ErrPreconditionFailed):
			return 0, fmt.Errorf("fleet: count a failure in %s: %w", url, err)
		}
	}
	return 0, fmt.Errorf("fleet: count a failure in %s: 20 other writers came first", url)
}

// readFailures is the count and its version ("" when there is none yet).
func readFailures(ctx context.Context, store *blob.Store, source, id string) (int, string, error) {
	url := layout.FleetFailures(source, id)
	b, info, err := store.Get(ctx, url)
	if errors.Is(err, blob.ErrNotFound) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("fleet: read the failures of %s: %w", url, err)
	}
	var f failures
	if err := json.Unmarshal(b, &f); err != nil {
		return 0, "", fmt.Errorf("fleet: read the failures of %s: %w", url, err)
	}
	return f.Failures, info.ETag, nil
}
