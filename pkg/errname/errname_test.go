package errname_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

func TestOf(t *testing.T) {
	a := errname.New("pkga", "Alpha", "first thing")
	b := errname.New("pkgb", "Beta", "")
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("plain"), ""},
		{a, "Alpha"},
		{fmt.Errorf("op: %w", b), "Beta"},
		{fmt.Errorf("%w: %w", a, b), "Alpha"},
		{fmt.Errorf("%w; then %w", fmt.Errorf("x: %w", errors.New("plain")), b), "Beta"},
		{errors.Join(fmt.Errorf("%w", b), a), "Beta"},
	} {
		if got := errname.Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A message reads "<package>: <Name>: <what happened>"; sentinels of one
// name stay apart under errors.Is.
func TestError(t *testing.T) {
	a := errname.New("pkga", "Corrupt", "bad header")
	b := errname.New("pkga", "Corrupt", "")
	if a.Error() != "pkga: Corrupt: bad header" || b.Error() != "pkga: Corrupt" {
		t.Fatalf("messages %q, %q", a, b)
	}
	if errors.Is(fmt.Errorf("x: %w", a), b) || !errors.Is(fmt.Errorf("x: %w", a), a) {
		t.Fatal("errors.Is must tell two sentinels of one name apart")
	}
}

// Retryability is the deciding error's: a retryable error stays retryable
// wrapped, a Kind of it is not, and neither is a chain that another named
// error decided.
func TestRetryable(t *testing.T) {
	flaky := errname.NewRetryable("pkga", errname.Transient, "try again")
	silent := errname.Kind(flaky, "pkga", errname.Unreachable, "no answer")
	fatal := errname.New("pkga", "Fatal", "")
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("plain"), false},
		{flaky, true},
		{fmt.Errorf("op: %w", flaky), true},
		{fmt.Errorf("%w: %w", flaky, fatal), true},
		{fmt.Errorf("%w: %w", fatal, flaky), false},
		{fmt.Errorf("x: %w", errors.New("plain")), false},
		{silent, false},
		{fatal, false},
	} {
		if got := errname.Retryable(c.err); got != c.want {
			t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if !errors.Is(silent, flaky) || errname.Of(silent) != errname.Unreachable {
		t.Fatal("a Kind answers to its parent under its own name")
	}
}

// All holds every error made, with where it was declared.
func TestAll(t *testing.T) {
	a := errname.New("pkga", "Declared", "")
	var found bool
	for _, e := range errname.All() {
		if e == a {
			file, line := e.Declared()
			found = strings.HasSuffix(file, "errname_test.go") && line > 0 && e.Package() == "pkga" && e.Text() == ""
		}
	}
	if !found {
		t.Fatal("New's error is not in All with its declaration")
	}
}
