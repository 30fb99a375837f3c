package asl_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

// lambdaServer speaks the Lambda Invoke REST API:
// POST /2015-03-31/functions/{name}/invocations.
type lambdaServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []lambdaRequest
	flaky    atomic.Int32
	inFlight concurrency
}

type lambdaRequest struct {
	name, body, invocationType, auth string
}

func newLambdaServer(t *testing.T) *lambdaServer {
	t.Helper()
	s := &lambdaServer{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Server = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serve)}}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *lambdaServer) serve(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/2015-03-31/functions/")
	name, ok2 := strings.CutSuffix(name, "/invocations")
	if r.Method != http.MethodPost || !ok || !ok2 {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, lambdaRequest{name, string(body), r.Header.Get("X-Amz-Invocation-Type"), r.Header.Get("Authorization")})
	s.mu.Unlock()
	apiError := func(status int, code, msg string) {
		w.Header().Set("X-Amzn-ErrorType", code)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"Type": "User", "message": "`+msg+`"}`)
	}
	functionError := func(payload string) {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		_, _ = io.WriteString(w, payload)
	}
	switch name {
	case "echo", "arn:aws:lambda:us-east-1:123456789012:function:echo":
		_, _ = io.WriteString(w, `{"got": `+string(body)+`}`)
	case "boom":
		functionError(`{"errorType": "ShardCorrupt", "errorMessage": "bad shard 3", "stackTrace": []}`)
	case "crash":
		functionError(`{"errorMessage": "RequestId: 1 Error: Runtime exited with error: exit status 2"}`)
	case "throttle":
		apiError(http.StatusTooManyRequests, "TooManyRequestsException", "Rate Exceeded.")
	case "service":
		apiError(http.StatusInternalServerError, "ServiceException", "internal failure")
	case "missing":
		apiError(http.StatusNotFound, "ResourceNotFoundException", "Function not found")
	case "flaky":
		if s.flaky.Add(1) <= 2 {
			apiError(http.StatusTooManyRequests, "TooManyRequestsException", "Rate Exceeded.")
			return
		}
		_, _ = io.WriteString(w, `"finally"`)
	case "rie-error":
		_, _ = io.WriteString(w, `{"errorType": "FormatVersionMismatch", "errorMessage": "found 1, expected 2"}`)
	case "rie-crash":
	case "slow":
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	case "function": // the Lambda Runtime Interface Emulator's only name
		s.inFlight.enter()
		time.Sleep(5 * time.Millisecond)
		s.inFlight.exit()
		_, _ = io.WriteString(w, body2result(body))
	default:
		apiError(http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
	}
}

func body2result(b []byte) string { return `{"rie": ` + string(b) + `}` }

func (s *lambdaServer) reqs() []lambdaRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]lambdaRequest(nil), s.requests...)
}

func testAWSConfig() aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", "")}
}

func taskErr(t *testing.T, err error) *asl.TaskError {
	t.Helper()
	var te *asl.TaskError
	if !errors.As(err, &te) {
		t.Fatalf("want *TaskError, got %T %v", err, err)
	}
	return te
}

func TestLambdaInvoker(t *testing.T) {
	s := newLambdaServer(t)
	inv := &asl.LambdaInvoker{Config: testAWSConfig(), Endpoint: s.URL}
	ctx := context.Background()

	out, err := inv.RunTask(ctx, "echo", json.RawMessage(`{"a": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, string(out), `{"got": {"a": 1}}`)
	r := s.reqs()[0]
	if r.name != "echo" || r.invocationType != "RequestResponse" || !strings.Contains(r.auth, "AKIDTEST") {
		t.Errorf("request %+v", r)
	}

	// An ARN resource is sent as it is.
	if _, err := inv.RunTask(ctx, "arn:aws:lambda:us-east-1:123456789012:function:echo", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		fn, name, cause string
	}{
		{"boom", "ShardCorrupt", `{"errorType": "ShardCorrupt", "errorMessage": "bad shard 3", "stackTrace": []}`},
		{"crash", "Lambda.Unknown", "Runtime exited"},
		{"throttle", "Lambda.TooManyRequestsException", "Rate Exceeded."},
		{"service", "Lambda.ServiceException", "internal failure"},
		{"missing", "Lambda.ResourceNotFoundException", "Function not found"},
	}
	for _, c := range cases {
		_, err := inv.RunTask(ctx, c.fn, json.RawMessage(`{}`))
		te := taskErr(t, err)
		if te.Name != c.name || !strings.Contains(te.Cause, c.cause) {
			t.Errorf("%s: %s / %q, want %s / %q", c.fn, te.Name, te.Cause, c.name, c.cause)
		}
	}
	// No SDK retries: the definition's Retry is the only policy.
	n := 0
	for _, r := range s.reqs() {
		if r.name == "throttle" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("throttled call sent %d times", n)
	}

	// Without a header, an error payload is a success unless asked otherwise.
	out, err = inv.RunTask(ctx, "rie-error", json.RawMessage(`{}`))
	if err != nil || !strings.Contains(string(out), "FormatVersionMismatch") {
		t.Errorf("strict: %s %v", out, err)
	}
	rie := &asl.LambdaInvoker{Config: testAWSConfig(), Endpoint: s.URL, FunctionErrorWithoutHeader: true}
	te := taskErr(t, func() error { _, err := rie.RunTask(ctx, "rie-error", json.RawMessage(`{}`)); return err }())
	if te.Name != "FormatVersionMismatch" {
		t.Errorf("header-less function error named %s", te.Name)
	}
	te = taskErr(t, func() error { _, err := rie.RunTask(ctx, "rie-crash", json.RawMessage(`{}`)); return err }())
	if te.Name != "Lambda.Unknown" {
		t.Errorf("empty payload named %s", te.Name)
	}
	if out, err := rie.RunTask(ctx, "echo", json.RawMessage(`{"errorType": "x"}`)); err != nil {
		t.Errorf("a payload with more than an error is a result: %s %v", out, err)
	}

	// Cancellation returns the context's error promptly.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = inv.RunTask(cctx, "slow", json.RawMessage(`{}`))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("slow: %v after %v", err, time.Since(start))
	}
}

func TestLambdaInvokerConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	inv := &asl.LambdaInvoker{Config: testAWSConfig(), Endpoint: "http://" + addr}
	_, err = inv.RunTask(context.Background(), "echo", json.RawMessage(`{}`))
	if te := taskErr(t, err); te.Name != "Lambda.SdkClientException" {
		t.Errorf("named %s: %v", te.Name, te)
	}
}

func TestLambdaInvokerTargetsForTheEmulator(t *testing.T) {
	s := newLambdaServer(t)
	inv := &asl.LambdaInvoker{Config: testAWSConfig(), Endpoint: "http://127.0.0.1:1", Targets: map[string]asl.LambdaTarget{
		"check": {Endpoint: s.URL, FunctionName: "function", Concurrency: 1},
	}}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			// By name, and by an ARN naming the same function.
			res := "check"
			if i%2 == 1 {
				res = "arn:aws:lambda:us-east-1:123456789012:function:check"
			}
			out, err := inv.RunTask(context.Background(), res, json.RawMessage(`{"i": 1}`))
			if err != nil || string(out) != `{"rie": {"i": 1}}` {
				t.Errorf("%s: %s %v", res, out, err)
			}
		})
	}
	wg.Wait()
	if m := s.inFlight.max.Load(); m != 1 {
		t.Errorf("%d calls in flight to a Concurrency-1 target", m)
	}
	for _, r := range s.reqs() {
		if r.name != "function" {
			t.Errorf("invoked %q", r.name)
		}
	}
}

func TestLambdaInvokerUnderRetry(t *testing.T) {
	s := newLambdaServer(t)
	def := `{"StartAt": "Call", "States": {
	  "Call": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
	    "Parameters": {"FunctionName": "flaky", "Payload.$": "$"},
	    "Retry": [{"ErrorEquals": ["Lambda.TooManyRequestsException"], "IntervalSeconds": 2, "BackoffRate": 3}],
	    "ResultSelector": {"p.$": "$.Payload"}, "ResultPath": "$.call", "Next": "Boom"},
	  "Boom": {"Type": "Task", "Resource": "boom",
	    "Catch": [{"ErrorEquals": ["ShardCorrupt"], "ResultPath": "$.error", "Next": "Parse"}], "End": true},
	  "Parse": {"Type": "Pass", "Parameters": {"call.$": "$.call.p", "type.$": "$.error.Error", "detail.$": "States.StringToJson($.error.Cause)"}, "End": true}}}`
	inv := &asl.LambdaInvoker{Config: testAWSConfig(), Endpoint: s.URL}
	out, sl, err := run(t, mustLoad(t, def), `{"x": 1}`, inv)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"call": "finally", "type": "ShardCorrupt", "detail": {"errorType": "ShardCorrupt", "errorMessage": "bad shard 3", "stackTrace": []}}`)
	if got := seconds(sl.got()); len(got) != 2 || got[0] != 2 || got[1] != 6 {
		t.Errorf("retry waits %v, want [2 6]", got)
	}
}
