package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/operator"

	"github.com/rocklake/rocklake-migrate/pkg/lock"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/presence"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// named is every error the steps fail with that has a stable name, and the
// name: the contract Retry and Catch, the history, the CLI's JSON and the
// alarms hold the errors to. Several errors share a class name.
var named = []struct {
	err  error
	name string
}{
	{&format.FormatVersionMismatch{Found: 1, Expected: 2}, "FormatVersionMismatch"},
	{format.ErrBadMagic, "CorruptCatalog"},
	{format.ErrEnvelopeVersion, "CorruptCatalog"},
	{format.ErrChecksum, "CorruptCatalog"},
	{format.ErrEnvelopeTruncated, "CorruptCatalog"},
	{format.ErrBadRow, "CorruptCatalog"},
	{ndjson.ErrNoTrailer, "ShardCorrupt"},
	{ndjson.ErrTrailerMismatch, "ShardCorrupt"},
	{ndjson.ErrBadLine, "ShardCorrupt"},
	{&ndjson.LineError{Line: 3, Err: format.ErrChecksum}, "ShardCorrupt"},
	{ndjson.ErrHeader, "ShardCorrupt"},
	{ndjson.ErrCorrupt, "ShardCorrupt"},
	{shard.ErrIncompleteSet, "ShardCorrupt"},
	{shard.ErrMismatch, "VerifyMismatch"},
	{shard.ErrTargetNotEmpty, "TargetNotEmpty"},
	{shard.ErrTargetInsideCatalog, "TargetNotEmpty"},
	{catalog.ErrNoCatalog, "NoCatalog"},
	{migration.ErrUnknownTags, "UnknownTags"},
	{&migration.UnknownTagsError{Counts: map[format.Tag]uint64{0xF0: 1}}, "UnknownTags"},
	{migration.ErrFieldCollision, "UnknownFieldCollision"},
	{&migration.FieldCollisionError{Table: "t", Number: 9, Field: "f", To: format.V2}, "UnknownFieldCollision"},
	{migration.ErrNestedUnknownFields, "NestedUnknownFields"},
	{slatedb.ErrFenced, "Fenced"},
	{&slatedb.Error{Code: slatedb.CodeFenced, Op: "put", Msg: "fenced"}, "Fenced"},
	{slatedb.ErrUnavailable, "Transient"},
	{&slatedb.Error{Code: slatedb.CodeUnavailable, Op: "scan", Msg: "the response stalled"}, "Transient"},
	{blob.ErrUnreachable, "Transient"},
	{blob.ErrNoCredentials, "NoCredentials"},
	{&awsconfig.NoCredentialsError{Tried: "env", Err: errors.New("none")}, "NoCredentials"},
	{blob.ErrAccessDenied, "AccessDenied"},
	{blob.ErrNoSuchBucket, "NoSuchBucket"},
	{claim.ErrTaken, "ClaimTaken"},
	{inplace.ErrTooLarge, "InPlaceTooLarge"},
	{inplace.ErrNoWayBack, "InPlaceNoWayBack"},
	{inplace.ErrWayBackTaken, "InPlaceWayBackTaken"},
	{inplace.ErrOutcomeUnknown, "InPlaceOutcomeUnknown"},
	{inplace.ErrCatalogMoved, "InPlaceCatalogMoved"},
	{inplace.ErrUndoUndecided, "InPlaceUndoUndecided"},
	{pointer.ErrPointerConflict, "PointerConflict"},
	{pointer.ErrPointerMissing, "PointerMissing"},
	{workflow.ErrSourceChanged, "SourceChangedDuringMigration"},
	{workflow.ErrNoTargetVersion, "NoTargetVersion"},
	{workflow.ErrBadExpectedVersion, "BadExpectedVersion"},
	{workflow.ErrStagingUnusable, "StagingUnusable"},
	{workflow.ErrStagingTaken, "StagingTaken"},
	{workflow.ErrBadFreezeGrace, "BadFreezeGrace"},
	{workflow.ErrSourceAtRoot, "SourceAtRoot"},
	{lock.ErrLost, "LockLost"},
	{workflow.ErrBadInput, "BadInput"},
	{lock.ErrInProgress, "MigrationInProgress"},
	{workflow.ErrHistoryUnwritable, "HistoryUnwritable"},
	{workflow.ErrAbortAfterFlip, "AbortAfterFlip"},
	{workflow.ErrDecided, "MigrationDecided"},
	{workflow.ErrNotAtGate, "NotAtGate"},
	{workflow.ErrGateTimedOut, "GateTimedOut"},
	{workflow.ErrRollbackLosesCommits, "RollbackLosesCommits"},
	{workflow.ErrPreviousCatalogChanged, "PreviousCatalogChanged"},
	{migration.ErrNoTargetForm, "NoTargetForm"},
	{workflow.ErrInPlaceNoTime, "InPlaceNoTime"},
	{operator.ErrRestoreRefused, "RestoreRefused"},
	{operator.ErrReleaseRefused, "ReleaseRefused"},
	{operator.ErrCleanupUndecided, "CleanupUndecided"},
	{workflow.ErrInPlaceLimitTooLarge, "InPlaceLimitTooLarge"},
	{presence.ErrNotAcknowledged, "ServersNotAcknowledged"},
	{blob.ErrSilent, "S3Unreachable"},
	{slatedb.ErrSilent, "S3Unreachable"},
	// Abort only waited: the state machine retries it.
	{workflow.ErrAbortUndecided, "Transient"},
	{workflow.ErrTargetStillWritten, "Transient"},
}

// Each error carries its name, wrapped or not, and its message says it
// after its package: "<package>: <Name>...".
func TestErrorNames(t *testing.T) {
	for _, c := range named {
		for _, err := range []error{c.err, fmt.Errorf("freeze: %w", c.err)} {
			if got := workflow.ErrorName(err); got != c.name {
				t.Errorf("ErrorName(%v) = %s, want %s", err, got, c.name)
			}
		}
		if mismatch := new(format.FormatVersionMismatch); errors.As(c.err, &mismatch) {
			continue // RockLake's own message: "FormatVersionMismatch (SQLSTATE 0A000): ..."
		}
		if msg := c.err.Error(); !strings.Contains(msg, ": "+c.name) {
			t.Errorf("%q does not name %s after its package", msg, c.name)
		}
	}
	for _, err := range []error{nil, errors.New("boom"), blob.ErrNotFound, slatedb.ErrNoDatabase, &slatedb.Error{Code: slatedb.CodeInternal, Op: "get", Msg: "panic"}, fmt.Errorf("x: %w", context.Canceled)} {
		if got := workflow.ErrorName(err); got != workflow.NameStepFailed {
			t.Errorf("ErrorName(%v) = %s, want StepFailed", err, got)
		}
	}
}

// Where a failure follows another, the error put first names the whole:
// Abort's waits stay Transient with what made them wait inside, and an
// in-place undo that kept the catalog names that, whatever failed before.
func TestErrorNameOutermostWins(t *testing.T) {
	for _, c := range []struct {
		err  error
		name string
	}{
		{fmt.Errorf("%w: cannot read the pointer: %w", workflow.ErrAbortUndecided, pointer.ErrBadPointer), "Transient"},
		{fmt.Errorf("%w; freeing the lock failed: %w", fmt.Errorf("%w: 3 objects", workflow.ErrTargetStillWritten), blob.ErrAccessDenied), "Transient"},
		{fmt.Errorf("%w; workflow: in place: %w; both kept", inplace.ErrCatalogMoved, pointer.ErrPointerConflict), "InPlaceCatalogMoved"},
		{fmt.Errorf("%w: workflow: in place: %w; nothing was restored", inplace.ErrUndoUndecided, blob.ErrUnreachable), "InPlaceUndoUndecided"},
		{fmt.Errorf("%w: the way back: %w", operator.ErrRestoreRefused, pointer.ErrPointerMissing), "RestoreRefused"},
		// An unnamed error passes its cause's name on.
		{fmt.Errorf("history: write: %w", blob.ErrUnreachable), "Transient"},
		{errors.Join(errors.New("first"), shard.ErrMismatch), "VerifyMismatch"},
		{fmt.Errorf("%w; closing failed too: %w", &slatedb.Error{Code: slatedb.CodeInternal, Op: "scan", Msg: "panic"}, blob.ErrUnreachable), "Transient"},
	} {
		if got := workflow.ErrorName(c.err); got != c.name {
			t.Errorf("ErrorName(%v) = %s, want %s", c.err, got, c.name)
		}
	}
}

// Every error name the definitions' Retry and Catch match (other than
// Step Functions' own States.* and Lambda.*) is one some error carries.
func TestDefinitionsMatchNamedErrors(t *testing.T) {
	made := map[string]bool{}
	for _, c := range named {
		made[workflow.ErrorName(c.err)] = true
	}
	matched := 0
	for file, def := range map[string][]byte{"migration": statemachine.Migration, "rollback": statemachine.Rollback, "drift": statemachine.Drift} {
		var v any
		if err := json.Unmarshal(def, &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, name := range errorEquals(v) {
			if strings.HasPrefix(name, "States.") || strings.HasPrefix(name, "Lambda.") {
				continue
			}
			matched++
			if !made[name] {
				t.Errorf("%s.asl.json matches %s, which no error carries", file, name)
			}
		}
	}
	if matched == 0 {
		t.Fatal("the definitions match no error of the steps: Transient at least is retried")
	}
}

// errorEquals collects every ErrorEquals entry in a definition.
func errorEquals(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "ErrorEquals" {
				for _, n := range x.([]any) {
					out = append(out, n.(string))
				}
				continue
			}
			out = append(out, errorEquals(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, errorEquals(x)...)
		}
	}
	return out
}
