package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Front is the Lambda Invoke API in front of the emulators: it serves
// POST /2015-03-31/functions/{name or ARN}/invocations for every function,
// as Lambda does, queues each call for a free emulator of that function
// (an emulator takes one call at a time), and answers as the service does
// where the emulator does not: a function error carries
// X-Amz-Function-Error (the emulator sets none), a crashed sandbox is a
// function error named Lambda.Unknown, and the emulator is started again
// for the next call.
type Front struct {
	srv   *httptest.Server
	pools map[string]*pool
	// client reaches the emulators; no timeout beyond the function's.
	client *http.Client

	mu    sync.Mutex
	calls []Call
	// hook, when set, is called as a call is handed to an emulator.
	hook func(c Call, e *emulator)
}

// Call is one invocation as the front saw it.
type Call struct {
	Function string
	Step     string
	Input    json.RawMessage
	Emulator int
	Error    string // the function error's name, if any
	Crashed  bool
	Took     time.Duration
}

type pool struct {
	fn   string
	all  []*emulator
	free chan *emulator
}

func newFront(t *testing.T) *Front {
	f := &Front{pools: map[string]*pool{}, client: &http.Client{Timeout: (lambdaTimeout + 30) * time.Second}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve)) // 127.0.0.1
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the Lambda endpoint, http://127.0.0.1:PORT.
func (f *Front) URL() string { return f.srv.URL }

// Calls returns the calls so far.
func (f *Front) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// SetHook sets (nil: clears) the hook.
func (f *Front) SetHook(h func(Call, *emulator)) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

func serviceError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "Service", "message": msg})
}

func (f *Front) serve(w http.ResponseWriter, r *http.Request) {
	const prefix, suffix = "/2015-03-31/functions/", "/invocations"
	path := r.URL.EscapedPath()
	if r.Method != http.MethodPost || !strings.HasPrefix(path, prefix) || !strings.HasSuffix(path, suffix) {
		serviceError(w, http.StatusNotFound, "ResourceNotFoundException", "no such route "+r.Method+" "+path)
		return
	}
	name, err := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, prefix), suffix))
	if err != nil {
		serviceError(w, http.StatusBadRequest, "InvalidParameterValueException", err.Error())
		return
	}
	if parts := strings.Split(name, ":"); len(parts) >= 7 && parts[0] == "arn" {
		name = parts[6]
	}
	p, ok := f.pools[name]
	if !ok {
		serviceError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
		return
	}
	if t := r.Header.Get("X-Amz-Invocation-Type"); t != "" && t != "RequestResponse" {
		serviceError(w, http.StatusBadRequest, "InvalidParameterValueException", "only RequestResponse is emulated, not "+t)
		return
	}
	payload, err := io.ReadAll(r.Body)
	if err != nil {
		serviceError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	var req struct {
		Step  string          `json:"step"`
		Input json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(payload, &req)
	call := Call{Function: p.fn, Step: req.Step, Input: req.Input}

	var e *emulator
	select { // queued until an emulator of this function is free
	case e = <-p.free:
	case <-r.Context().Done():
		return
	}
	defer func() { p.free <- e }()
	call.Emulator = e.index
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		hook(call, e)
	}
	start := time.Now()
	body, status, err := e.invoke(context.WithoutCancel(r.Context()), f.client, payload)
	call.Took = time.Since(start)
	switch {
	case err != nil && strings.Contains(err.Error(), errCrashed.Error()):
		call.Crashed, call.Error = true, "Lambda.Unknown"
		e.mu.Lock()
		e.crashes++
		e.killLocked() // whatever is left of the sandbox; the next call starts a new one
		e.mu.Unlock()
		body = mustJSON(map[string]string{"errorType": "Lambda.Unknown", "errorMessage": fmt.Sprintf("%s: %v", functionName(p.fn), err)})
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
	case err != nil:
		f.record(call)
		serviceError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	case status != http.StatusOK:
		call.Error = fmt.Sprintf("HTTP %d", status)
		f.record(call)
		serviceError(w, http.StatusBadGateway, "ServiceException", fmt.Sprintf("emulator answered %d: %s", status, body))
		return
	default:
		if name, ok := functionErrorName(body); ok {
			call.Error = name
			if strings.TrimSpace(string(body)) == "" {
				body = mustJSON(map[string]string{"errorType": "Lambda.Unknown", "errorMessage": "the function returned no payload"})
			}
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
		}
	}
	f.record(call)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func (f *Front) record(c Call) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// functionErrorName says whether a payload is a function error as the Go
// runtime writes it ({"errorType", "errorMessage"[, "stackTrace"]}) or empty
// (a crash), and its name.
func functionErrorName(payload []byte) (string, bool) {
	if strings.TrimSpace(string(payload)) == "" {
		return "Lambda.Unknown", true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil {
		return "", false
	}
	if _, ok := m["errorMessage"]; !ok {
		return "", false
	}
	var typ string
	if json.Unmarshal(m["errorType"], &typ) != nil || typ == "" {
		return "", false
	}
	for k := range m {
		switch k {
		case "errorType", "errorMessage", "stackTrace", "trace":
		default:
			return "", false
		}
	}
	return typ, true
}
