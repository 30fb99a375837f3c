package s3server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
)

func TestStartServesOnLoopbackAndStops(t *testing.T) {
	s := s3server.Start(t)

	if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
		t.Fatalf("endpoint %q is not on loopback", s.Endpoint())
	}
	env := strings.Join(s.Env(), "\n")
	for _, want := range []string{
		"AWS_ENDPOINT=" + s.Endpoint(), "AWS_ENDPOINT_URL=" + s.Endpoint(), "AWS_ALLOW_HTTP=true",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=" + s.AccessKey(), "AWS_SECRET_ACCESS_KEY=" + s.SecretKey(),
	} {
		if !strings.Contains(env, want) {
			t.Errorf("Env() lacks %s", want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.CreateBucket(ctx, "plain", false); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(ctx, "versioned", true); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(ctx, "versioned", true); err != nil {
		t.Fatalf("creating an existing bucket again: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "data", "plain")); err != nil {
		t.Errorf("bucket directory: %v", err)
	}

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory left after Stop: %v", err)
	}
	client := &http.Client{Timeout: time.Second}
	if resp, err := client.Get(s.Endpoint()); err == nil {
		resp.Body.Close()
		t.Fatal("gateway still answers after Stop")
	}
}

// Every port the gateway opens must be the loopback S3 port: nothing else
// (admin API, WebUI) may listen, on any address.
func TestListensOnlyOnItsPort(t *testing.T) {
	s := s3server.Start(t)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(s.Endpoint(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	pid := gatewayPID(t, s)
	ports := listeningPorts(t, pid)
	if len(ports) != 1 || ports[0] != "127.0.0.1:"+port {
		t.Fatalf("versitygw listens on %v, want only 127.0.0.1:%s", ports, port)
	}
}

func TestKeepsGivenDir(t *testing.T) {
	dir := t.TempDir()
	s, err := s3server.Launch(context.Background(), s3server.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(context.Background(), "kept", false); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"data/kept", "versions", "versitygw.log"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("after Stop: %v", err)
		}
	}
}

func TestMissingBinaryNamesMakeTools(t *testing.T) {
	t.Setenv("ROCKLAKE_VERSITYGW", filepath.Join(t.TempDir(), "no-such-versitygw"))
	_, err := s3server.Launch(context.Background(), s3server.Options{})
	if err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("Start with a missing binary: %v, want an error naming `make tools`", err)
	}
}

// gatewayPID finds the versitygw serving s by its --port argument.
func gatewayPID(t *testing.T, s *s3server.Server) string {
	t.Helper()
	arg := "\x00" + strings.TrimPrefix(s.Endpoint(), "http://") + "\x00"
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.Contains(string(cmdline), arg) {
			return filepath.Base(d)
		}
	}
	t.Fatalf("no process with argument %q", arg)
	return ""
}

// listeningPorts lists the addresses of the TCP sockets pid listens on, from
// its socket descriptors matched against /proc/net/tcp{,6}.
func listeningPorts(t *testing.T, pid string) []string {
	t.Helper()
	fds, err := filepath.Glob("/proc/" + pid + "/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			addrs = append(addrs, decodeProcAddr(t, f[1]))
		}
	}
	return addrs
}

// decodeProcAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func decodeProcAddr(t *testing.T, s string) string {
	t.Helper()
	hexIP, hexPort, _ := strings.Cut(s, ":")
	var port int
	for _, c := range hexPort {
		port = port*16 + strings.IndexRune("0123456789ABCDEF", c)
	}
	ip := make(net.IP, len(hexIP)/2)
	for i := range ip {
		var b int
		for _, c := range hexIP[2*i : 2*i+2] {
			b = b*16 + strings.IndexRune("0123456789ABCDEF", c)
		}
		ip[i] = byte(b)
	}
	// The kernel prints each 32-bit word in host (little-endian) order.
	for w := 0; w+4 <= len(ip); w += 4 {
		ip[w], ip[w+1], ip[w+2], ip[w+3] = ip[w+3], ip[w+2], ip[w+1], ip[w]
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port))
}
