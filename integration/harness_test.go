package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/proc"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/internal/testenv/snsserver"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

const (
	staging      = "s3://staging/migrations"
	readyTimeout = 30 * time.Second
	logTail      = 16 << 10
	// lambdaTimeout is the functions' timeout (AWS_LAMBDA_FUNCTION_TIMEOUT),
	// the largest TimeoutSeconds of the definition.
	lambdaTimeout = 900
)

// poolSizes is how many emulators (Lambda sandboxes) each function gets:
// the Map's ExportTransformShard runs two at a time, the rest one.
var poolSizes = map[string]int{"check": 1, "export": 2, "import": 1, "inplace": 1}

// functionName is the deployed name of a function; its ARN ends in it.
func functionName(fn string) string { return "rocklake-" + fn }

func functionARN(fn string) string {
	return "arn:aws:lambda:us-east-1:000000000000:function:" + functionName(fn)
}

// stateMachineARN is the ARN of the state machine deployed from
// statemachine/<name>.asl.json, as the CDK app names it.
func stateMachineARN(name string) string {
	return "arn:aws:states:us-east-1:000000000000:stateMachine:rocklake-" + name
}

// substitutions fill the definition's placeholders as the CDK app would:
// function ARNs, the topic, the Region and the state machines a definition
// runs as child executions.
func substitutions(topic string) map[string]string {
	return map[string]string{
		"CheckFunctionArn": functionARN("check"), "ExportFunctionArn": functionARN("export"),
		"ImportFunctionArn": functionARN("import"), "InPlaceFunctionArn": functionARN("inplace"),
		"TopicArn": topic, "Region": "us-east-1",
		"MigrationStateMachineArn": stateMachineARN("migration"), "RollbackStateMachineArn": stateMachineARN("rollback"),
	}
}

// Harness is the running local stack.
type Harness struct {
	S3    *s3server.Server
	SNS   *snsserver.Server
	Store *blob.Store
	Front *Front
	// Topic receives the migration outcomes.
	Topic string
	root  string
}

// findRIE finds aws-lambda-rie: $ROCKLAKE_LAMBDA_RIE, the tool cache, PATH.
func findRIE() (string, error) {
	return proc.FindTool("aws-lambda-rie", "ROCKLAKE_LAMBDA_RIE", "scripts/install-lambda-rie.sh")
}

// findBootstraps returns dist/<fn>/bootstrap for every function.
func findBootstraps(root string) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for fn := range workflow.Functions {
		p := filepath.Join(root, "dist", fn, "bootstrap")
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, p)
			continue
		}
		out[fn] = p
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("function binaries missing: %s: run `make build`", strings.Join(missing, ", "))
	}
	return out, nil
}

// startHarness starts the whole stack for t and stops it when t ends. A
// missing tool or binary fails the test, naming the make target.
func startHarness(t *testing.T) *Harness { return startHarnessWith(t, nil) }

// startHarnessWith starts the stack; s3Front, when set, gives the S3
// endpoint the Lambda sandboxes use in place of versitygw's (a fault proxy);
// sandboxEnv adds to each sandbox's environment.
func startHarnessWith(t *testing.T, s3Front func(endpoint string) string, sandboxEnv ...string) *Harness {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rie, err := findRIE()
	if err != nil {
		t.Fatal(err)
	}
	bins, err := findBootstraps(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := &Harness{root: root}
	h.S3 = s3server.Start(t)
	s3server.SetEnv(t, h.S3)
	for _, b := range []string{"rocklake", "staging"} {
		if err := h.S3.CreateBucket(ctx, b, true); err != nil {
			t.Fatal(err)
		}
	}
	h.SNS = snsserver.Start(t)
	h.SNS.SetEnv(t)
	h.Topic = h.SNS.CreateTopic(t, "rocklake-migrate")
	if h.Store, err = blob.New(ctx); err != nil {
		t.Fatal(err)
	}
	// Each sandbox's environment, as the CDK app configures the functions.
	env := []string{
		"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir(),
		"ROCKLAKE_STAGING=" + staging,
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", lambdaTimeout),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024",
		"AWS_ENDPOINT_URL_SNS=" + h.SNS.Endpoint(),
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
	// As infra sizes the inplace function, and tells the check function
	// (Check holds in_place_max_bytes to it); later entries win.
	fnEnv := map[string][]string{
		"check":   {"ROCKLAKE_INPLACE_MEMORY_MB=2048"},
		"inplace": {"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=2048"},
	}
	env = append(env, h.S3.Env()...)
	if s3Front != nil {
		ep := s3Front(h.S3.Endpoint())
		env = append(env, "AWS_ENDPOINT="+ep, "AWS_ENDPOINT_URL="+ep) // later entries win
	}
	env = append(env, sandboxEnv...)
	h.Front = newFront(t)
	logDir := t.TempDir()
	for fn, n := range poolSizes {
		p := &pool{fn: fn, free: make(chan *emulator, n)}
		for i := 0; i < n; i++ {
			e := &emulator{fn: fn, index: i, rie: rie, bootstrap: bins[fn],
				env: append(append(append([]string{}, env...), fnEnv[fn]...), "AWS_LAMBDA_FUNCTION_NAME="+functionName(fn)),
				log: filepath.Join(logDir, fmt.Sprintf("%s-%d.log", fn, i))}
			if err := e.start(); err != nil {
				t.Fatal(err)
			}
			p.all = append(p.all, e)
			p.free <- e
		}
		h.Front.pools[functionName(fn)] = p
	}
	t.Cleanup(func() {
		for _, p := range h.Front.pools {
			for _, e := range p.all {
				if t.Failed() {
					t.Logf("%s[%d] log (tail):\n%s", e.fn, e.index, e.logs())
				}
				e.stop()
			}
		}
	})
	return h
}

// emulator is one aws-lambda-rie process running one function's bootstrap:
// one Lambda sandbox, one call at a time.
type emulator struct {
	fn        string
	index     int
	rie       string
	bootstrap string
	env       []string
	log       string

	mu      sync.Mutex
	proc    *proc.Process // nil until started, and after a crash
	starts  int
	crashes int
}

// start starts the emulator on fresh loopback ports and waits until it
// accepts connections. The bootstrap itself starts on the first call.
func (e *emulator) start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.startLocked()
}

func (e *emulator) startLocked() error {
	e.starts++
	p, err := proc.Start(context.Background(), proc.Spec{
		Name: fmt.Sprintf("aws-lambda-rie for %s[%d]", e.fn, e.index),
		Path: e.rie,
		Args: func(addr string) ([]string, error) {
			api, err := proc.FreeAddr()
			if err != nil {
				return nil, err
			}
			if err := appendLine(e.log, fmt.Sprintf("--- start %d: rie %s, runtime api %s", e.starts, addr, api)); err != nil {
				return nil, err
			}
			return []string{"--runtime-interface-emulator-address", addr, "--runtime-api-address", api, e.bootstrap}, nil
		},
		Env:          e.env,
		Dir:          filepath.Dir(e.bootstrap),
		LogFile:      e.log,
		LogTail:      logTail,
		ReadyTimeout: readyTimeout,
	})
	if err != nil {
		return err
	}
	e.proc = p
	return nil
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

func (e *emulator) running() bool {
	if e.proc == nil {
		return false
	}
	select {
	case <-e.proc.Done():
		return false
	default:
		return true
	}
}

// crash kills the emulator's process group (the emulator and the function's
// process) at once, as a sandbox crash would; the next call starts it again.
func (e *emulator) crash() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.killLocked()
}

// killLocked is crash with e.mu held.
func (e *emulator) killLocked() {
	if e.proc != nil {
		e.proc.Kill()
	}
}

// stop ends the process group: SIGTERM, then SIGKILL after a grace period.
func (e *emulator) stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running() {
		_ = e.proc.Stop() // the sandbox's end is not what the test checks
	}
}

func (e *emulator) logs() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proc == nil {
		return "(never started)"
	}
	return e.proc.Logs()
}

// invoke sends one call to the emulator (the caller holds it) and returns
// the function's payload. A transport failure (the emulator died) is
// errCrashed.
func (e *emulator) invoke(ctx context.Context, client *http.Client, payload []byte) ([]byte, int, error) {
	e.mu.Lock()
	if !e.running() {
		if err := e.startLocked(); err != nil {
			e.mu.Unlock()
			return nil, 0, err
		}
	}
	addr := e.proc.Addr()
	e.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/2015-03-31/functions/function/invocations", strings.NewReader(string(payload)))
	if err != nil {
		return nil, 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errCrashed, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errCrashed, err)
	}
	return body, resp.StatusCode, nil
}

var errCrashed = errors.New("the sandbox died during the call")
