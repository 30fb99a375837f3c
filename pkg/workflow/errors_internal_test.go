package workflow

import (
	"fmt"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// A store that did not answer, on either side, is Transient: the
// definition's Retry tries the step again with backoff.
func TestUnansweredStoreIsTransient(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("pointer: read s3://b/CURRENT: %w: http://127.0.0.1:9 did not answer", blob.ErrUnreachable),
		&slatedb.Error{Code: slatedb.CodeUnavailable, Op: "scan", Msg: "the response stalled"},
	} {
		if got := ErrorName(err); got != NameTransient {
			t.Errorf("ErrorName(%v) = %s, want %s", err, got, NameTransient)
		}
	}
}
