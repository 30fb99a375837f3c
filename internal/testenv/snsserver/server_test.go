package snsserver

import (
	"strings"
	"testing"
)

func TestMissingEmulatorNamesMakeTools(t *testing.T) {
	t.Setenv("ROCKLAKE_MOTO_SERVER", t.TempDir()+"/no-such-moto_server")
	_, err := findBinary()
	if err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("findBinary with a missing emulator: %v", err)
	}
	t.Setenv("ROCKLAKE_MOTO_SERVER", "")
	t.Setenv("ROCKLAKE_CACHE", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err = findBinary()
	if err == nil || !strings.Contains(err.Error(), "make tools") || !strings.Contains(err.Error(), "install-sns-emulator.sh") {
		t.Fatalf("findBinary with no emulator anywhere: %v", err)
	}
}

func TestStartStop(t *testing.T) {
	s := Start(t)
	if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
		t.Fatalf("endpoint %s is not on loopback", s.Endpoint())
	}
	topic := s.CreateTopic(t, "x")
	if msgs := s.Messages(t, topic); len(msgs) != 0 {
		t.Fatalf("new topic has messages: %+v", msgs)
	}
	if err := s.proc.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.proc.Done():
	default:
		t.Fatal("emulator still running after stop")
	}
}
