package supervise_test

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/supervise"
)

// ask connects to addr and returns the stand-in's greeting: "name catalog
// mode" ("" when the connection failed or closed without one).
func ask(addr string) string {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return strings.TrimSpace(line)
}

// asker connects every 20 ms until stopped and counts the connections
// no server answered.
type asker struct {
	mu     sync.Mutex
	seen   []string
	failed int
	stop   chan struct{}
	done   chan struct{}
}

func startAsker(addr string) *asker {
	a := &asker{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for {
			select {
			case <-a.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			g := ask(addr)
			a.mu.Lock()
			if g == "" {
				a.failed++
			} else if len(a.seen) == 0 || a.seen[len(a.seen)-1] != g {
				a.seen = append(a.seen, g)
			}
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *asker) halt() ([]string, int) {
	close(a.stop)
	<-a.done
	return a.seen, a.failed
}

// copiesBeside lists the reader copies in catalog's directory.
func copiesBeside(t *testing.T, catalog string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(path(catalog)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "reader-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// Behind the front a client connecting every 20 ms through a migration
// (the writer, its drain, a copy of the source, the flip to the new
// catalog's writer) is always answered: by the writer, by the reader on the
// copy, then by the new writer, never by no one; the copy is gone once
// the new writer serves.
func TestFrontHandsConnectionsToTheServerThatServes(t *testing.T) {
	f := newFixture(t)
	bins, log := standins(t, "v1", "v2")
	src, v2 := f.pointed(t), f.catalog(t, "v2-m-1")
	front := freeAddr(t)
	r := f.runWith(t, map[format.Version]string{format.V1: bins["v1"], format.V2: bins["v2"]}, func(o *supervise.Options) { o.Front = front })
	if l := waitLaunch(t, log, 1); l.Mode != "writer" || strings.Count(strings.Join(l.Args, " "), "--bind") != 1 {
		t.Fatalf("first launch %+v, want a writer on a loopback port of its own", l)
	}
	if g := waitAnswer(t, front, "writer"); !strings.HasPrefix(g, "v1 "+path(src)) {
		t.Fatalf("through the front: %q, want the v1 writer on %s", g, path(src))
	}
	a := startAsker(front)
	f.lock(t, "m-1", 10*time.Second)
	if l := waitLaunch(t, log, 2); !copyOf(l, src) {
		t.Fatalf("second launch %+v, want a reader on a copy", l)
	}
	waitAnswer(t, front, "reader")
	f.flip(t, v2, format.V2, "m-1")
	f.unlock(t)
	if l := waitLaunch(t, log, 3); l.Name != "v2" || l.Catalog != path(v2) || l.Mode != "writer" {
		t.Fatalf("third launch %+v, want the v2 writer on %s", l, path(v2))
	}
	waitAnswer(t, front, "v2 "+path(v2)+" writer")
	time.Sleep(200 * time.Millisecond) // the asker's next connections too
	seen, failed := a.halt()
	if failed != 0 {
		t.Fatalf("%d connections through the front went unanswered (answers: %q)", failed, seen)
	}
	if len(seen) != 3 || !strings.HasSuffix(seen[0], "writer") || !strings.HasSuffix(seen[1], "reader") || !strings.HasPrefix(seen[2], "v2 ") {
		t.Fatalf("answers %q, want the writer, the reader on the copy, the v2 writer", seen)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(copiesBeside(t, src)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := copiesBeside(t, src); len(left) > 0 {
		t.Fatalf("copies left once the new writer serves: %v", left)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A reader serves copies, never the catalog itself, each replaced by
// a fresher one once Refresh old (the front answering all along); the
// replaced copies are removed, and the last one when it stops.
func TestReaderRefreshesItsCopy(t *testing.T) {
	f := newFixture(t)
	bins, log := standins(t, "v1")
	src := f.pointed(t)
	front := freeAddr(t)
	r := f.runWith(t, map[format.Version]string{format.V1: bins["v1"]}, func(o *supervise.Options) { o.Front, o.Refresh = front, 400*time.Millisecond }, "--mode", "reader")
	waitAnswer(t, front, "reader")
	a := startAsker(front)
	var served []string
	for n := 1; n <= 3; n++ {
		l := waitLaunch(t, log, n)
		if !copyOf(l, src) || l.Mode != "reader" {
			t.Fatalf("launch %d: %+v, want a reader on a copy of %s", n, l, path(src))
		}
		served = append(served, l.Catalog)
	}
	if served[0] == served[1] || served[1] == served[2] {
		t.Fatalf("refreshes served %v, want a fresh copy each", served)
	}
	if n := len(copiesBeside(t, src)); n > 2 {
		t.Fatalf("%d copies beside the catalog, want at most the serving one and the next", n)
	}
	if _, failed := a.halt(); failed != 0 {
		t.Fatalf("%d connections went unanswered across the refreshes", failed)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if left := copiesBeside(t, src); len(left) > 0 {
		t.Fatalf("copies left after the reader stopped: %v", left)
	}
}

// waitAnswer waits until a connection through addr is answered with a
// greeting containing want.
func waitAnswer(t *testing.T, addr, want string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	g := ""
	for time.Now().Before(deadline) {
		if g = ask(addr); strings.Contains(g, want) {
			return g
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no answer with %q through %s within 20 s (last %q)", want, addr, g)
	return ""
}
