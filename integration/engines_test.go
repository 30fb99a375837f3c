package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/rocklake/rocklake-migrate/internal/testenv/proc"
	"github.com/rocklake/rocklake-migrate/internal/testenv/snsserver"
	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// localStepFunctionsVersion is what scripts/install-local-stepfunctions.sh pins.
const localStepFunctionsVersion = "3.0.0"

// Outcome is how an execution ended, whichever engine ran it.
type Outcome struct {
	Status string // SUCCEEDED or FAILED
	Error  string
	Cause  string
	Output json.RawMessage
}

func (o Outcome) String() string {
	if o.Status == "SUCCEEDED" {
		return "SUCCEEDED"
	}
	return fmt.Sprintf("FAILED %s: %.600s", o.Error, o.Cause)
}

// tasks is the TaskRunner of the pkg/asl runs: Lambda tasks through
// asl.LambdaInvoker to the Invoke API front, sns:publish to moto, and
// startExecution.sync:2 as a child execution of the named state machine's
// definition under pkg/asl with these same tasks.
type tasks struct {
	lambda *asl.LambdaInvoker
	sns    *sns.Client
	// children are the definitions (substituted) of the state machines a
	// child execution may start, by ARN.
	children map[string][]byte
	sleep    func(ctx context.Context, d time.Duration) error
}

func (r *tasks) RunTask(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
	if resource == statemachine.StartExecutionSync {
		return r.startExecutionSync(ctx, input)
	}
	if resource != statemachine.SNSPublish {
		return r.lambda.RunTask(ctx, resource, input)
	}
	var p struct{ TopicArn, Subject, Message string }
	if err := json.Unmarshal(input, &p); err != nil {
		return nil, &asl.TaskError{Name: "SNS.InvalidParameterException", Cause: err.Error()}
	}
	in := &sns.PublishInput{TopicArn: aws.String(p.TopicArn), Message: aws.String(p.Message)}
	if p.Subject != "" {
		in.Subject = aws.String(p.Subject)
	}
	out, err := r.sns.Publish(ctx, in)
	if err != nil {
		return nil, &asl.TaskError{Name: "SNS.SdkClientException", Cause: err.Error(), Err: err}
	}
	return json.Marshal(map[string]string{"MessageId": aws.ToString(out.MessageId)})
}

// startExecutionSync runs a child execution as startExecution.sync:2 does:
// the parent waits; a child that succeeded answers its description with
// its Output as JSON, one that failed fails the task with States.TaskFailed,
// the child's error and cause in the cause.
func (r *tasks) startExecutionSync(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	var p struct {
		StateMachineArn string
		Input           json.RawMessage
	}
	if err := json.Unmarshal(input, &p); err != nil {
		return nil, &asl.TaskError{Name: "StepFunctions.InvalidExecutionInputException", Cause: err.Error()}
	}
	def, ok := r.children[p.StateMachineArn]
	if !ok {
		return nil, &asl.TaskError{Name: "StepFunctions.StateMachineDoesNotExistException", Cause: p.StateMachineArn}
	}
	m, err := asl.Load(def)
	if err != nil {
		return nil, &asl.TaskError{Name: asl.ErrTaskFailed, Cause: err.Error(), Err: err}
	}
	name := newExecutionName()
	desc := map[string]any{
		"ExecutionArn":    strings.Replace(p.StateMachineArn, ":stateMachine:", ":execution:", 1) + ":" + name,
		"StateMachineArn": p.StateMachineArn, "Name": name,
	}
	out, err := asl.Run(ctx, m, p.Input, asl.Options{Tasks: r, Sleep: r.sleep, StateMachineArn: p.StateMachineArn, ExecutionName: name})
	var ee *asl.ExecutionError
	switch {
	case err == nil:
		desc["Status"], desc["Output"] = "SUCCEEDED", out
		return json.Marshal(desc)
	case errors.As(err, &ee):
		desc["Status"], desc["Error"], desc["Cause"] = "FAILED", ee.Name, ee.Cause
		cause, _ := json.Marshal(desc)
		return nil, &asl.TaskError{Name: asl.ErrTaskFailed, Cause: string(cause)}
	default:
		return nil, err // canceled: the parent's run ends
	}
}

func newExecutionName() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// children are the state machines a definition under test may run as
// child executions, substituted as deployed.
func (h *Harness) children(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range []string{"migration", "rollback"} {
		d, err := asl.Substitute(statemachine.Definitions[name], substitutions(h.Topic))
		if err != nil {
			t.Fatal(err)
		}
		out[stateMachineARN(name)] = d
	}
	return out
}

// machineName is the name of the definition def (statemachine.Definitions).
func machineName(def []byte) string {
	for name, d := range statemachine.Definitions {
		if bytes.Equal(d, def) {
			return name
		}
	}
	return "migration"
}

// shortSleep shortens Retry intervals: the suite's faults are not rate limits.
func shortSleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(min(d, 100*time.Millisecond)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Harness) invoker() *asl.LambdaInvoker {
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(h.S3.AccessKey(), h.S3.SecretKey(), ""),
	}
	targets := map[string]asl.LambdaTarget{}
	for fn, n := range poolSizes {
		// Calls beyond the emulators queue in the front as well; bounding
		// them here keeps the invoker's HTTP connections to what is served.
		targets[functionName(fn)] = asl.LambdaTarget{Endpoint: h.Front.URL(), Concurrency: n}
	}
	return &asl.LambdaInvoker{Config: cfg, Endpoint: h.Front.URL(), Targets: targets}
}

// runASL runs a definition (migration or drift) under pkg/asl.
func (h *Harness) runASL(t *testing.T, ctx context.Context, def []byte, input any) Outcome {
	t.Helper()
	d, err := asl.Substitute(def, substitutions(h.Topic))
	if err != nil {
		t.Fatal(err)
	}
	m, err := asl.Load(d)
	if err != nil {
		t.Fatalf("load definition: %v", err)
	}
	raw, _ := json.Marshal(input)
	out, err := asl.Run(ctx, m, raw, asl.Options{
		Tasks:           &tasks{lambda: h.invoker(), sns: h.SNS.Client(), children: h.children(t), sleep: shortSleep},
		Sleep:           shortSleep,
		StateMachineArn: stateMachineARN(machineName(def)),
	})
	var ee *asl.ExecutionError
	switch {
	case err == nil:
		return Outcome{Status: "SUCCEEDED", Output: out}
	case errors.As(err, &ee):
		return Outcome{Status: "FAILED", Error: ee.Name, Cause: ee.Cause}
	default:
		t.Fatalf("pkg/asl run: %v", err)
		return Outcome{}
	}
}

func localStepFunctionsModules() (string, error) {
	dir := os.Getenv("ROCKLAKE_LOCAL_STEPFUNCTIONS")
	if dir == "" {
		dir = filepath.Join(proc.CacheDir(), "node", "aws-local-stepfunctions-"+localStepFunctionsVersion, "node_modules")
	}
	if _, err := os.Stat(filepath.Join(dir, "aws-local-stepfunctions", "package.json")); err != nil {
		return "", fmt.Errorf("aws-local-stepfunctions %s is not installed in %s: run `make tools` (scripts/install-local-stepfunctions.sh)", localStepFunctionsVersion, dir)
	}
	return dir, nil
}

// runLocalStepFunctions runs a definition under npm aws-local-stepfunctions
// (node), its Lambda calls going to the same Invoke API front.
func (h *Harness) runLocalStepFunctions(t *testing.T, ctx context.Context, def []byte, input any) Outcome {
	t.Helper()
	modules, err := localStepFunctionsModules()
	if err != nil {
		t.Fatal(err)
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node (Node.js 20) is not on PATH: %v", err)
	}
	d, err := asl.Substitute(def, substitutions(h.Topic))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	defPath, inPath := filepath.Join(dir, "definition.json"), filepath.Join(dir, "input.json")
	raw, _ := json.Marshal(input)
	if err := os.WriteFile(defPath, d, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "run-local-stepfunctions.cjs"))
	// The child executions' definitions, for startExecution.sync:2.
	kids := map[string]string{}
	for arn, d := range h.children(t) {
		p := filepath.Join(dir, strings.TrimPrefix(arn[strings.LastIndex(arn, ":")+1:], "rocklake-")+".json")
		if err := os.WriteFile(p, d, 0o644); err != nil {
			t.Fatal(err)
		}
		kids[arn] = p
	}
	kidsPath := filepath.Join(dir, "children.json")
	if b, _ := json.Marshal(kids); os.WriteFile(kidsPath, b, 0o644) != nil {
		t.Fatal("write children.json")
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"LSF_NODE_MODULES=" + modules,
		"LSF_CHILDREN=" + kidsPath,
		"LSF_STATE_MACHINE=rocklake-" + machineName(def),
		"AWS_ENDPOINT_URL_LAMBDA=" + h.Front.URL(),
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=" + h.S3.AccessKey(), "AWS_SECRET_ACCESS_KEY=" + h.S3.SecretKey(),
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"SNS_ENDPOINT=" + h.SNS.Endpoint(),
	}
	stdout, err := proc.Run(ctx, env, "", nodeBin, script, defPath, inPath)
	if err != nil {
		t.Fatalf("aws-local-stepfunctions: %v", err)
	}
	var o struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Cause  string          `json:"cause"`
		Output json.RawMessage `json:"output"`
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &o); err != nil {
		t.Fatalf("aws-local-stepfunctions printed %q: %v", stdout, err)
	}
	return Outcome{Status: o.Status, Error: o.Error, Cause: o.Cause, Output: o.Output}
}

// fixture is one seeded catalog behind its own pointer.
type fixture struct {
	Pointer string
	Source  string
}

func (h *Harness) seed(t *testing.T, ctx context.Context, name string, rows int, seedN int64) fixture {
	t.Helper()
	f := fixture{Pointer: "s3://rocklake/" + name + "/CURRENT", Source: "s3://rocklake/" + name + "/catalogs/prod"}
	if _, err := seed.Seed(ctx, f.Source, seed.Options{Rows: rows, Seed: seedN}); err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Create(ctx, h.Store, f.Pointer, pointer.Pointer{Catalog: f.Source, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// CatalogState is what the suite compares: the catalog's version, per-table
// counts and digest (pkg/shard's order-independent digest).
type CatalogState struct {
	URL     string
	Version format.Version
	Counts  map[string]uint64
	Digest  string
}

func catalogState(t *testing.T, ctx context.Context, url string, expect format.Version) CatalogState {
	t.Helper()
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: expect})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	defer c.Close()
	d, err := shard.DigestCatalog(ctx, c, nil)
	if err != nil {
		t.Fatalf("digest %s: %v", url, err)
	}
	return CatalogState{URL: url, Version: c.Version(), Counts: d.Counts(), Digest: d.Sum()}
}

// rawDigest hashes every key and value of a SlateDB database in key order,
// whatever its format (it works on a catalog no binary opens).
func rawDigest(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
	if err != nil {
		t.Fatalf("open reader %s: %v", url, err)
	}
	defer r.Close()
	it, err := r.Scan(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	h := sha256.New()
	var n [8]byte
	for it.Next() {
		for _, b := range [][]byte{it.Key(), it.Value()} {
			binary.BigEndian.PutUint64(n[:], uint64(len(b)))
			h.Write(n[:])
			h.Write(b)
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// snapshot is what must not change when a run fails: the pointer's current
// version and the source's content.
type snapshot struct {
	PointerETag string
	Pointer     pointer.Pointer
	Source      string
}

func (h *Harness) snapshot(t *testing.T, ctx context.Context, f fixture) snapshot {
	t.Helper()
	p, ref, err := pointer.Read(ctx, h.Store, f.Pointer)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot{PointerETag: ref.ETag, Pointer: p, Source: rawDigest(t, ctx, f.Source)}
}

func (h *Harness) messages(t *testing.T, topic string) []snsserver.Message {
	t.Helper()
	return h.SNS.Messages(t, topic)
}
