package main

import (
	"net"
	"sync"
	"testing"
)

// An endpoint that accepts connections and never answers, one that refuses
// them, and no credentials at all: each is one clear error naming the cause
// and the endpoint, within the command's --timeout, not a hang.
func TestUnreachableStoresFailClearly(t *testing.T) {
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		hung.Close()
		<-accepting
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + refusing.Addr().String()
	refusing.Close()

	creds := func() {
		t.Setenv("AWS_ACCESS_KEY_ID", "test")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
		t.Setenv("AWS_REGION", "us-east-1")
	}
	creds()
	t.Setenv("AWS_ENDPOINT_URL", "http://"+hung.Addr().String())
	cli(t, "status", "--pointer", "s3://b/CURRENT", "--timeout", "2s").want(t, exitError, "timed out", hung.Addr().String())
	cli(t, "init-pointer", "--pointer", "s3://b/CURRENT", "--catalog", "s3://b/c", "--timeout", "2s").want(t, exitError, "timed out")

	t.Setenv("AWS_ENDPOINT_URL", refused)
	cli(t, "status", "--pointer", "s3://b/CURRENT").want(t, exitError, "connection refused by "+refused)

	// No credentials from any source.
	t.Setenv("AWS_ENDPOINT_URL", refused)
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cli(t, "status", "--pointer", "s3://b/CURRENT", "--timeout", "20s").want(t, exitError, "no AWS credentials")
	cli(t, "status", "--pointer", "s3://b/CURRENT", "--timeout", "x").want(t, exitUsage, "--timeout")
}
