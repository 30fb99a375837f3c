// Package notifytest starts an SNS emulator for a test: moto's server mode
// (moto_server), on a free 127.0.0.1 port, stopped when the test ends, and
// reads back what was published to it. scripts/install-sns-emulator.sh
// (`make tools`) installs it. A missing emulator fails the test rather than
// skipping it, so that a run without SNS cannot pass silently.
package notifytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/rocklake/rocklake-migrate/pkg/localstack"
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
	stopGrace    = 5 * time.Second
	portAttempts = 3
	logTail      = 8 << 10
)

// Emulator is a running moto_server.
type Emulator struct {
	endpoint string
	logPath  string
	cmd      *exec.Cmd
	exited   chan struct{}
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
func Start(t testing.TB) *Emulator {
	t.Helper()
	bin, err := findBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var e *Emulator
	for attempt := 1; ; attempt++ {
		e, err = start(bin, dir)
		if err == nil || !strings.Contains(err.Error(), "in use") || attempt == portAttempts {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("moto_server log:\n%s", e.Logs())
		}
		e.stop()
	})
	return e
}

func findBinary() (string, error) {
	return localstack.FindTool("moto_server", "ROCKLAKE_MOTO_SERVER", "scripts/install-sns-emulator.sh")
}

func start(bin, dir string) (*Emulator, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("notifytest: pick a port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	logPath := filepath.Join(dir, "moto_server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("notifytest: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	// A minimal environment: no stray AWS_* or MOTO_* setting of the host.
	cmd.Env = []string{"HOME=" + os.Getenv("HOME"), "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(), "PYTHONUNBUFFERED=1"}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,            // stop signals the whole group
		Pdeathsig: syscall.SIGKILL, // no orphan if the test binary dies
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("notifytest: start %s: %w", bin, err)
	}
	e := &Emulator{endpoint: "http://127.0.0.1:" + strconv.Itoa(port), logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(e.exited)
	}()
	if err := e.waitReady(); err != nil {
		e.stop()
		logs := e.Logs()
		if strings.Contains(logs, "Address already in use") {
			err = fmt.Errorf("%w (port in use)", err)
		}
		return nil, fmt.Errorf("notifytest: moto_server on %s: %w\nlog:\n%s", e.endpoint, err, logs)
	}
	return e, nil
}

func (e *Emulator) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.endpoint+"/moto-api/data.json", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-e.exited:
			return fmt.Errorf("exited before serving: %v", e.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not answering after %s", readyTimeout)
		case <-tick.C:
		}
	}
}

func (e *Emulator) stop() {
	select {
	case <-e.exited:
		return
	default:
	}
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-e.exited
	}
}

// Endpoint is the emulator's base URL, http://127.0.0.1:PORT.
func (e *Emulator) Endpoint() string { return e.endpoint }

// Logs is the tail of the emulator's output, for diagnostics.
func (e *Emulator) Logs() string {
	f, err := os.Open(e.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > logTail {
		_, _ = f.Seek(-logTail, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// SetEnv points the process's SNS clients at the emulator for the rest of
// the test (so the test must not be parallel): AWS_ENDPOINT_URL_SNS, which
// the AWS SDKs prefer to AWS_ENDPOINT_URL, so that S3 can still point
// elsewhere. Credentials and region are set only if unset.
func (e *Emulator) SetEnv(t testing.TB) {
	t.Helper()
	t.Setenv("AWS_ENDPOINT_URL_SNS", e.endpoint)
	for k, v := range map[string]string{"AWS_REGION": Region, "AWS_ACCESS_KEY_ID": AccessKey, "AWS_SECRET_ACCESS_KEY": SecretKey} {
		if os.Getenv(k) == "" {
			t.Setenv(k, v)
		}
	}
}

// Client is an SNS client of the emulator.
func (e *Emulator) Client() *sns.Client {
	return sns.New(sns.Options{
		BaseEndpoint: aws.String(e.endpoint),
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
}

// CreateTopic creates a topic and returns its ARN.
func (e *Emulator) CreateTopic(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.Client().CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("notifytest: create topic %s: %v", name, err)
	}
	return aws.ToString(out.TopicArn)
}

// Messages returns the messages published to the topic, oldest first, as
// moto records them (its /moto-api/data.json: each sns Topic's
// sent_notifications, [id, message, subject, attributes, group id]).
func (e *Emulator) Messages(t testing.TB, topicARN string) []Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.endpoint+"/moto-api/data.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("notifytest: read moto state: %v", err)
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
		t.Fatalf("notifytest: moto state: %v", err)
	}
	for _, topic := range data.SNS.Topic {
		if topic.ARN != topicARN {
			continue
		}
		msgs := []Message{}
		for _, n := range topic.SentNotifications {
			if len(n) < 3 {
				t.Fatalf("notifytest: unexpected moto notification record %s (another moto version?)", n)
			}
			var m Message
			var subject *string
			if json.Unmarshal(n[0], &m.ID) != nil || json.Unmarshal(n[1], &m.Body) != nil || json.Unmarshal(n[2], &subject) != nil {
				t.Fatalf("notifytest: unexpected moto notification record %s (another moto version?)", n)
			}
			if subject != nil {
				m.Subject = *subject
			}
			msgs = append(msgs, m)
		}
		return msgs
	}
	t.Fatalf("notifytest: no topic %s in the emulator", topicARN)
	return nil
}
