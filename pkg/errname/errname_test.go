package errname_test

import (
	"errors"
	"fmt"
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
