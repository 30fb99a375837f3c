package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// Every named error the packages declare (errname.All: those linked into
// this test) answers to its name through ErrorName, wrapped or not, and its
// message says it after its package: "<package>: <Name>...". Which errors
// there are, and that each is declared as pkg/errname says, is
// internal/lint's TestNamedErrorsAreDeclared; the names themselves are
// docs/errors.md, which cmd/rocklake-migrate's TestErrorsDoc holds.
func TestErrorNames(t *testing.T) {
	all := errname.All()
	pkgs := map[string]bool{}
	for _, e := range all {
		pkgs[e.Package()] = true
		for _, err := range []error{e, fmt.Errorf("freeze: %w", e)} {
			if got := runstate.ErrorName(err); got != e.ErrorName() || !errors.Is(err, e) {
				t.Errorf("ErrorName(%v) = %s, want %s", err, got, e.ErrorName())
			}
		}
		if msg := e.Error(); !strings.HasPrefix(msg, e.Package()+": "+e.ErrorName()) {
			t.Errorf("%q does not name %s after its package", msg, e.ErrorName())
		}
	}
	for _, p := range []string{"format", "ndjson", "shard", "catalog", "migration", "slatedb", "blob", "awsconfig", "claim", "inplace", "pointer", "workflow", "lock", "operator", "presence"} {
		if !pkgs[p] {
			t.Errorf("no named error of package %s", p)
		}
	}
	for _, err := range []error{nil, errors.New("boom"), blob.ErrNotFound, slatedb.ErrNoDatabase, &slatedb.Error{Code: slatedb.CodeInternal, Op: "get", Msg: "panic"}, fmt.Errorf("x: %w", context.Canceled)} {
		if got := runstate.ErrorName(err); got != runstate.NameStepFailed {
			t.Errorf("ErrorName(%v) = %s, want StepFailed", err, got)
		}
	}
}

// The errors that carry details answer to their package's sentinel: its
// name, its retryability, errors.Is, and a message naming it after the
// package.
func TestDetailedErrorsAnswerToTheirSentinel(t *testing.T) {
	for _, c := range []struct {
		err      error
		sentinel *errname.Error
	}{
		{&format.FormatVersionMismatch{Found: 1, Expected: 2}, format.ErrVersionMismatch},
		{&format.FormatVersionMismatch{Missing: true, Expected: 2}, format.ErrVersionMismatch},
		{&ndjson.LineError{Line: 3, Err: format.ErrChecksum}, ndjson.ErrBadLine},
		{&migration.UnknownTagsError{Counts: map[format.Tag]uint64{0xF0: 1}}, migration.ErrUnknownTags},
		{&migration.FieldCollisionError{Table: "t", Number: 9, Field: "f", To: format.V2}, migration.ErrFieldCollision},
		{&migration.NoTargetFormError{Table: "t", To: format.V1, Cause: errors.New("no form")}, migration.ErrNoTargetForm},
		{&slatedb.Error{Code: slatedb.CodeFenced, Op: "put", Msg: "fenced"}, slatedb.ErrFenced},
		{&slatedb.Error{Code: slatedb.CodeUnavailable, Op: "scan", Msg: "the response stalled"}, slatedb.ErrUnavailable},
		{&slatedb.Error{Code: slatedb.CodeUnavailable, Op: "scan", Msg: "no response within ROCKLAKE_S3_READ_TIMEOUT"}, slatedb.ErrSilent},
		{&awsconfig.NoCredentialsError{Tried: "env", Err: errors.New("none")}, awsconfig.ErrNoCredentials},
		{&pointer.Error{Kind: pointer.ErrPointerConflict, Op: "flip", URL: "s3://b/p"}, pointer.ErrPointerConflict},
		{shard.ErrTargetInsideCatalog, catalog.ErrTargetNotEmpty},
		{shard.ErrTargetNotEmpty, catalog.ErrTargetNotEmpty},
		{blob.ErrNoCredentials, awsconfig.ErrNoCredentials},
	} {
		for _, err := range []error{c.err, fmt.Errorf("freeze: %w", c.err)} {
			if got := runstate.ErrorName(err); got != c.sentinel.ErrorName() || !errors.Is(err, c.sentinel) || errname.Retryable(err) != c.sentinel.Retryable() {
				t.Errorf("%v: named %s (retryable %v), want %s (%v)", err, got, errname.Retryable(err), c.sentinel.ErrorName(), c.sentinel.Retryable())
			}
		}
		if errors.Is(c.err, format.ErrVersionMismatch) {
			continue // RockLake's own message: "FormatVersionMismatch (SQLSTATE 0A000): ..."
		}
		if msg := c.err.Error(); !strings.HasPrefix(msg, c.sentinel.Package()+": ") || !strings.Contains(msg, ": "+c.sentinel.ErrorName()) {
			t.Errorf("%q does not name %s after its package", msg, c.sentinel.ErrorName())
		}
	}
}

// Where a failure follows another, the error put first names the whole,
// and says whether it is retried: Abort's waits stay Transient with what
// made them wait inside, and an in-place undo that kept the catalog names
// that, whatever failed before.
func TestErrorNameOutermostWins(t *testing.T) {
	for _, c := range []struct {
		err       error
		name      string
		retryable bool
	}{
		{fmt.Errorf("%w: cannot read the pointer: %w", workflow.ErrAbortUndecided, pointer.ErrBadPointer), "Transient", true},
		{fmt.Errorf("%w; freeing the lock failed: %w", fmt.Errorf("%w: 3 objects", runstate.ErrTargetStillWritten), blob.ErrAccessDenied), "Transient", true},
		{fmt.Errorf("%w; workflow: in place: %w; both kept", inplace.ErrCatalogMoved, pointer.ErrPointerConflict), "InPlaceCatalogMoved", false},
		{fmt.Errorf("%w: workflow: in place: %w; nothing was restored", inplace.ErrUndoUndecided, blob.ErrUnreachable), "InPlaceUndoUndecided", false},
		{fmt.Errorf("%w: the way back: %w", operator.ErrRestoreRefused, pointer.ErrPointerMissing), "RestoreRefused", false},
		// An unnamed error passes its cause's name on.
		{fmt.Errorf("history: write: %w", blob.ErrUnreachable), "Transient", true},
		{errors.Join(errors.New("first"), shard.ErrMismatch), "VerifyMismatch", false},
		{fmt.Errorf("%w; closing failed too: %w", &slatedb.Error{Code: slatedb.CodeInternal, Op: "scan", Msg: "panic"}, blob.ErrUnreachable), "Transient", true},
		// A silent endpoint's attempts were its retries.
		{fmt.Errorf("check: %w", blob.ErrSilent), "S3Unreachable", false},
	} {
		if got := runstate.ErrorName(c.err); got != c.name || errname.Retryable(c.err) != c.retryable {
			t.Errorf("ErrorName(%v) = %s (retryable %v), want %s (%v)", c.err, got, errname.Retryable(c.err), c.name, c.retryable)
		}
	}
}

// Every error name the definitions' Retry and Catch match (other than
// Step Functions' own States.*, and the Lambda and Step Functions
// integrations' Lambda.* and StepFunctions.*) is one some error carries.
func TestDefinitionsMatchNamedErrors(t *testing.T) {
	made := map[string]bool{}
	for _, e := range errname.All() {
		made[e.ErrorName()] = true
	}
	matched := 0
	for file, def := range statemachine.Definitions {
		var v any
		if err := json.Unmarshal(def, &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, name := range errorEquals(v) {
			if strings.HasPrefix(name, "States.") || strings.HasPrefix(name, "Lambda.") || strings.HasPrefix(name, "StepFunctions.") {
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
