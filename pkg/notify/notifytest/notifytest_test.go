package notifytest

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
	e := Start(t)
	if !strings.HasPrefix(e.Endpoint(), "http://127.0.0.1:") {
		t.Fatalf("endpoint %s is not on loopback", e.Endpoint())
	}
	topic := e.CreateTopic(t, "x")
	if msgs := e.Messages(t, topic); len(msgs) != 0 {
		t.Fatalf("new topic has messages: %+v", msgs)
	}
	e.stop()
	select {
	case <-e.exited:
	default:
		t.Fatal("emulator still running after stop")
	}
}
