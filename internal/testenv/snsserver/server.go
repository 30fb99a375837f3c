// Package snsserver runs the tests' SNS: moto's server mode (moto_server) on
// a free 127.0.0.1 port, stopped when the test ends, and reads back what was
// published to it. scripts/install-sns-emulator.sh (`make tools`) installs
// it. A missing emulator fails the test rather than skipping it, so that a
// run without SNS cannot pass silently.
package snsserver

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/rocklake/rocklake-migrate/internal/testenv/proc"
)

const (
	// Region, AccessKey and SecretKey are what clients of the emulator use;
	// moto accepts any credentials.
	Region    = "us-east-1"
	AccessKey = "rocklake-local"
	SecretKey = "rocklake-local-secret"

	// moto imports a lot of Python before it serves; a shared 2-core
	// machine may take several seconds.
	readyTimeout = 60 * time.Second
	logTail      = 8 << 10
)

// Server is a running moto_server.
type Server struct {
	endpoint string
	proc     *proc.Process
}

// Message is one message published to a topic, as the emulator recorded it.
type Message struct {
	ID      string
	Subject string
	Body    string
}

// Start starts the emulator and stops it when the test ends. The binary is
// $ROCKLAKE_MOTO_SERVER, else $ROCKLAKE_CACHE/bin/moto_server (default cache
// $HOME/.cache/rocklake-migrate), else moto_server on PATH.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := findBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := proc.Start(t.Context(), proc.Spec{
		Name: "moto_server",
		Path: bin,
		Args: func(addr string) ([]string, error) {
			host, port, err := net.SplitHostPort(addr)
			return []string{"-H", host, "-p", port}, err
		},
		// A minimal environment: no stray AWS_* or MOTO_* setting of the host.
		Env:          []string{"HOME=" + os.Getenv("HOME"), "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(), "PYTHONUNBUFFERED=1"},
		Dir:          dir,
		LogFile:      filepath.Join(dir, "moto_server.log"),
		LogTail:      logTail,
		Ready:        proc.HTTPReady("/moto-api/data.json", func(status int) bool { return status == http.StatusOK }), // moto answers its state API once it has imported its services
		ReadyTimeout: readyTimeout,
	})
	if err != nil {
		t.Fatalf("snsserver: %v", err)
	}
	s := &Server{endpoint: "http://" + p.Addr(), proc: p}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("moto_server log:\n%s", s.Logs())
		}
		// moto may take longer than the grace to shut down on a loaded
		// machine: killed then, which fails nothing. Exiting before the
		// test ended does.
		if err := s.proc.Stop(); err != nil && !errors.Is(err, proc.ErrKilled) {
			t.Errorf("stop moto_server: %v", err)
		}
	})
	return s
}

func findBinary() (string, error) {
	return proc.FindTool("moto_server", "ROCKLAKE_MOTO_SERVER", "scripts/install-sns-emulator.sh")
}

// Endpoint is the emulator's base URL, http://127.0.0.1:PORT.
func (s *Server) Endpoint() string { return s.endpoint }

// Logs is the tail of the emulator's output, for diagnostics.
func (s *Server) Logs() string { return s.proc.Logs() }

// SetEnv points the process's SNS clients at the emulator for the rest of
// the test (so the test must not be parallel): AWS_ENDPOINT_URL_SNS, which
// the AWS SDKs prefer to AWS_ENDPOINT_URL, so that S3 can still point
// elsewhere. Credentials and region are set only if unset.
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	t.Setenv("AWS_ENDPOINT_URL_SNS", s.endpoint)
	for k, v := range map[string]string{"AWS_REGION": Region, "AWS_ACCESS_KEY_ID": AccessKey, "AWS_SECRET_ACCESS_KEY": SecretKey} {
		if os.Getenv(k) == "" {
			t.Setenv(k, v)
		}
	}
}

// Client is an SNS client of the emulator.
func (s *Server) Client() *sns.Client {
	return sns.New(sns.Options{
		BaseEndpoint: aws.String(s.endpoint),
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
}

// CreateTopic creates a topic and returns its ARN.
func (s *Server) CreateTopic(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.Client().CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("snsserver: create topic %s: %v", name, err)
	}
	return aws.ToString(out.TopicArn)
}

// Messages returns the messages published to the topic, oldest first, as
// moto records them (its /moto-api/data.json: each sns Topic's
// sent_notifications, [id, message, subject, attributes, group id]).
func (s *Server) Messages(t testing.TB, topicARN string) []Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint+"/moto-api/data.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("snsserver: read moto state: %v", err)
	}
	defer resp.Body.Close()
	var data struct {
		SNS struct {
			Topic []struct {
				ARN               string              `json:"arn"`
				SentNotifications [][]json.RawMessage `json:"sent_notifications"`
			} `json:"Topic"`
		} `json:"sns"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&data); err != nil {
		t.Fatalf("snsserver: moto state: %v", err)
	}
	for _, topic := range data.SNS.Topic {
		if topic.ARN != topicARN {
			continue
		}
		msgs := []Message{}
		for _, n := range topic.SentNotifications {
			if len(n) < 3 {
				t.Fatalf("snsserver: unexpected moto notification record %s (another moto version?)", n)
			}
			var m Message
			var subject *string
			if json.Unmarshal(n[0], &m.ID) != nil || json.Unmarshal(n[1], &m.Body) != nil || json.Unmarshal(n[2], &subject) != nil {
				t.Fatalf("snsserver: unexpected moto notification record %s (another moto version?)", n)
			}
			if subject != nil {
				m.Subject = *subject
			}
			msgs = append(msgs, m)
		}
		return msgs
	}
	t.Fatalf("snsserver: no topic %s in the emulator", topicARN)
	return nil
}
