package asl

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Machine is a loaded, validated state machine definition. It is immutable
// and may be run any number of times, concurrently.
type Machine struct {
	comment   string
	timeout   time.Duration
	root      *scope
	resources []string
}

// Comment returns the definition's top-level Comment.
func (m *Machine) Comment() string { return m.comment }

// Resources lists, in document order and without repeats, the resources
// the machine's Task states call, as a TaskRunner will see them: the
// Resource field (without a .waitForTaskToken suffix), or for
// "arn:aws:states:::lambda:invoke" the static FunctionName parameter (a
// FunctionName given by a path is not listed).
// A caller can check before running that its runner knows each of them.
func (m *Machine) Resources() []string { return slices.Clone(m.resources) }

type scope struct {
	startAt string
	states  map[string]*state
	order   []string
}

// optPath is an optional path field: absent, null, or a path.
type optPath struct {
	set, null bool
	p         *jpath
}

type retrier struct {
	errs        []string
	interval    float64 // seconds
	maxAttempts int
	backoff     float64
	maxDelay    float64 // seconds; 0: none
	fullJitter  bool
}

type catcher struct {
	errs       []string
	next       string
	resultPath optPath
}

type state struct {
	name, typ, at string
	valid         bool // a supported type; false states only resolve transitions

	next string
	end  bool

	inputPath, outputPath, resultPath optPath
	parameters, resultSelector        *tmpl

	// Pass
	result    any
	hasResult bool

	// Task
	resource     string
	lambdaInvoke bool
	callback     bool // .waitForTaskToken: resource is the base, without the suffix
	timeout      time.Duration
	heartbeat    time.Duration

	// Task and Map
	retry []retrier
	catch []catcher

	// Choice
	choices []*rule
	def     string

	// Fail
	failError, failCause       string
	failErrorDyn, failCauseDyn *tmpl

	// Map
	itemsPath    *jpath
	itemSelector *tmpl
	maxConc      int
	maxConcPath  *jpath
	// A Distributed Map's tolerated failures (compileTolerance).
	tolerates                    bool
	tolCount                     *int64
	tolPercent                   *float64
	tolCountPath, tolPercentPath *jpath
	processor                    *scope
	distributed                  bool

	// Wait
	waitSeconds       int64
	waitTimestamp     time.Time
	waitSecondsPath   *jpath
	waitTimestampPath *jpath
}

const (
	lambdaInvokeResource = "arn:aws:states:::lambda:invoke"
	waitForTaskToken     = ".waitForTaskToken"
	maxIntField          = 99999999
	maxStateNameLen      = 80
)

var stateFields = map[string][]string{
	"Task":    {"Type", "Comment", "InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Next", "End", "Resource", "TimeoutSeconds", "HeartbeatSeconds", "Retry", "Catch"},
	"Pass":    {"Type", "Comment", "InputPath", "OutputPath", "Parameters", "ResultPath", "Result", "Next", "End"},
	"Choice":  {"Type", "Comment", "InputPath", "OutputPath", "Choices", "Default"},
	"Succeed": {"Type", "Comment", "InputPath", "OutputPath"},
	"Fail":    {"Type", "Comment", "Error", "Cause", "ErrorPath", "CausePath"},
	"Map":     {"Type", "Comment", "InputPath", "OutputPath", "ItemsPath", "ItemSelector", "MaxConcurrency", "MaxConcurrencyPath", "ItemProcessor", "ToleratedFailureCount", "ToleratedFailureCountPath", "ToleratedFailurePercentage", "ToleratedFailurePercentagePath", "Label", "ResultSelector", "ResultPath", "Retry", "Catch", "Next", "End"},
	"Wait":    {"Type", "Comment", "InputPath", "OutputPath", "Seconds", "Timestamp", "SecondsPath", "TimestampPath", "Next", "End"},
}

// fieldHints explain fields of the language that this interpreter rejects.
var fieldHints = map[string]string{
	"Iterator":             "the legacy Map field; use ItemProcessor",
	"ItemReader":           "not supported by this interpreter",
	"ItemBatcher":          "not supported by this interpreter",
	"ResultWriter":         "not supported by this interpreter",
	"TimeoutSecondsPath":   "not supported by this interpreter",
	"HeartbeatSecondsPath": "not supported by this interpreter",
	"Credentials":          "not supported by this interpreter",
	"QueryLanguage":        "per-state QueryLanguage is not supported (JSONPath only)",
	"Assign":               "variables are not supported by this interpreter",
	"Arguments":            "a JSONata field; only JSONPath is supported",
	"Output":               "a JSONata field; only JSONPath is supported",
	"Items":                "a JSONata field; only JSONPath is supported",
	"Branches":             "Parallel states are not supported",
}

type loader struct {
	probs     []Problem
	names     map[string]string // state name → where it is defined
	resources []string
	nested    int // depth of Map ItemProcessors around the state being compiled
}

func (l *loader) problem(at, msg string) { l.probs = append(l.probs, Problem{at, msg}) }

func (l *loader) wantString(n *node, at string) (string, bool) {
	if n.kind != 's' {
		l.problem(at, fmt.Sprintf("must be a string, not %s", n.kindName()))
		return "", false
	}
	return n.str, true
}

func (l *loader) wantInt(n *node, at string, lo, hi int64) (int64, bool) {
	if n.kind != 'n' {
		l.problem(at, fmt.Sprintf("must be an integer, not %s", n.kindName()))
		return 0, false
	}
	i, ok := numInt(n.num)
	if !ok || i < lo || i > hi {
		l.problem(at, fmt.Sprintf("must be an integer from %d to %d, not %s", lo, hi, n.num))
		return 0, false
	}
	return i, true
}

func (l *loader) wantBool(n *node, at string) (bool, bool) {
	if n.kind != 'b' {
		l.problem(at, fmt.Sprintf("must be a boolean, not %s", n.kindName()))
		return false, false
	}
	return n.b, true
}

// optPathField reads an InputPath/OutputPath/ResultPath-like field.
// reference: a ResultPath, which cannot address the context object.
func (l *loader) optPathField(n *node, at string, reference bool) optPath {
	if n == nil {
		return optPath{}
	}
	if n.kind == 'z' {
		return optPath{set: true, null: true}
	}
	s, ok := l.wantString(n, at)
	if !ok {
		return optPath{}
	}
	p, err := parsePath(s)
	if err != nil {
		l.problem(at, err.Error())
		return optPath{}
	}
	if reference && p.context {
		l.problem(at, "a ResultPath cannot address the context object ($$)")
		return optPath{}
	}
	return optPath{set: true, p: p}
}

// Load parses and validates a state machine definition (JSONPath query
// language). Every problem found is reported, each at its JSON path, in a
// *DefinitionError.
func Load(definition []byte) (*Machine, error) {
	root, err := parseDefinition(definition)
	if err != nil {
		return nil, err
	}
	if root.kind != 'o' {
		return nil, &DefinitionError{Problems: []Problem{{"$", fmt.Sprintf("a state machine definition is a JSON object, not %s", root.kindName())}}}
	}
	l := &loader{names: map[string]string{}}
	m := &Machine{}
	for i, k := range root.keys {
		v := root.vals[i]
		at := "$" + fieldSeg(k)
		switch k {
		case "Comment":
			m.comment, _ = l.wantString(v, at)
		case "StartAt", "States":
		case "TimeoutSeconds":
			if s, ok := l.wantInt(v, at, 1, maxIntField); ok {
				m.timeout = time.Duration(s) * time.Second
			}
		case "QueryLanguage":
			if s, ok := l.wantString(v, at); ok {
				switch s {
				case "JSONPath":
				case "JSONata":
					l.problem(at, "QueryLanguage \"JSONata\" is not supported (JSONPath only)")
				default:
					l.problem(at, fmt.Sprintf("unknown QueryLanguage %q", s))
				}
			}
		case "Version":
			l.problem(at, `unsupported field "Version"`)
		default:
			l.problem(at, fmt.Sprintf("unsupported field %q", k))
		}
	}
	m.root = l.compileScope(root, "$")
	if len(l.probs) > 0 {
		return nil, &DefinitionError{Problems: l.probs}
	}
	m.resources = l.resources
	return m, nil
}

// compileScope compiles StartAt and States of the top level or of an
// ItemProcessor, then checks transitions and reachability within it.
func (l *loader) compileScope(n *node, at string) *scope {
	sc := &scope{states: map[string]*state{}}
	if s := n.get("StartAt"); s == nil {
		l.problem(at, "missing StartAt")
	} else if v, ok := l.wantString(s, at+".StartAt"); ok {
		sc.startAt = v
	}
	statesNode := n.get("States")
	if statesNode == nil {
		l.problem(at, "missing States")
		return sc
	}
	if statesNode.kind != 'o' || len(statesNode.keys) == 0 {
		l.problem(at+".States", "must be a non-empty object of states")
		return sc
	}
	for i, name := range statesNode.keys {
		sat := at + ".States" + fieldSeg(name)
		if prev, dup := l.names[name]; dup {
			l.problem(sat, fmt.Sprintf("duplicate state name %q (also at %s); state names are unique in the whole machine", name, prev))
		} else {
			l.names[name] = sat
		}
		if name == "" || len(name) > maxStateNameLen {
			l.problem(sat, fmt.Sprintf("a state name has 1 to %d characters", maxStateNameLen))
		}
		st := l.compileState(name, statesNode.vals[i], sat)
		sc.states[name] = st
		sc.order = append(sc.order, name)
	}

	if sc.startAt != "" && sc.states[sc.startAt] == nil {
		l.problem(at+".StartAt", fmt.Sprintf("no state named %q%s", sc.startAt, l.elsewhere(sc.startAt)))
	}
	for _, name := range sc.order {
		st := sc.states[name]
		for _, t := range st.targets() {
			if sc.states[t.name] == nil {
				l.problem(t.at, fmt.Sprintf("no state named %q%s", t.name, l.elsewhere(t.name)))
			}
		}
	}
	// Reachability from StartAt.
	seen := map[string]bool{}
	queue := []string{sc.startAt}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		st := sc.states[name]
		if st == nil || seen[name] {
			continue
		}
		seen[name] = true
		for _, t := range st.targets() {
			queue = append(queue, t.name)
		}
	}
	if sc.startAt != "" && sc.states[sc.startAt] != nil {
		for _, name := range sc.order {
			if !seen[name] {
				l.problem(sc.states[name].at, fmt.Sprintf("state %q is not reachable from StartAt %q", name, sc.startAt))
			}
		}
	}
	return sc
}

func (l *loader) elsewhere(name string) string {
	if at, ok := l.names[name]; ok {
		return fmt.Sprintf(" in this scope (%s is in another scope; a state can only transition within its own)", at)
	}
	return ""
}

type target struct{ name, at string }

func (st *state) targets() []target {
	var ts []target
	if st.next != "" {
		ts = append(ts, target{st.next, st.at + ".Next"})
	}
	for _, r := range st.choices {
		if r.next != "" {
			ts = append(ts, target{r.next, r.at + ".Next"})
		}
	}
	if st.def != "" {
		ts = append(ts, target{st.def, st.at + ".Default"})
	}
	for i, c := range st.catch {
		if c.next != "" {
			ts = append(ts, target{c.next, fmt.Sprintf("%s.Catch[%d].Next", st.at, i)})
		}
	}
	return ts
}

func (l *loader) compileState(name string, n *node, at string) *state {
	st := &state{name: name, at: at}
	if n.kind != 'o' {
		l.problem(at, fmt.Sprintf("a state is an object, not %s", n.kindName()))
		return st
	}
	tn := n.get("Type")
	if tn == nil {
		l.problem(at, "missing Type")
		return st
	}
	typ, ok := l.wantString(tn, at+".Type")
	if !ok {
		return st
	}
	st.typ = typ
	fields, ok := stateFields[typ]
	if !ok {
		switch typ {
		case "Parallel":
			l.problem(at+".Type", `unsupported state type "Parallel"`)
		default:
			l.problem(at+".Type", fmt.Sprintf("unknown state type %q", typ))
		}
		// Still read transitions, so that states it leads to are not
		// also reported as missing or unreachable.
		if nx := n.get("Next"); nx != nil && nx.kind == 's' {
			st.next = nx.str
		}
		return st
	}
	st.valid = true
	for _, k := range n.keys {
		if slices.Contains(fields, k) {
			continue
		}
		msg := fmt.Sprintf("unsupported field %q", k)
		switch {
		case typ == "Map" && k == "Parameters":
			msg += " (the legacy Map field; use ItemSelector)"
		case fieldHints[k] != "":
			msg += " (" + fieldHints[k] + ")"
		case isASLField(k):
			msg += fmt.Sprintf(" (not allowed in a %s state)", typ)
		}
		l.problem(at+fieldSeg(k), msg)
	}
	get := func(k string) (*node, string) { return n.get(k), at + "." + k }

	if v, vat := get("Comment"); v != nil {
		l.wantString(v, vat)
	}
	if v, vat := get("InputPath"); v != nil {
		st.inputPath = l.optPathField(v, vat, false)
	}
	if v, vat := get("OutputPath"); v != nil {
		st.outputPath = l.optPathField(v, vat, false)
	}
	if v, vat := get("ResultPath"); v != nil && slices.Contains(fields, "ResultPath") {
		st.resultPath = l.optPathField(v, vat, true)
	}
	if v, vat := get("Parameters"); v != nil && slices.Contains(fields, "Parameters") {
		st.parameters = l.compileTemplate(v, vat)
	}
	if v, vat := get("ResultSelector"); v != nil && slices.Contains(fields, "ResultSelector") {
		st.resultSelector = l.compileTemplate(v, vat)
	}
	if slices.Contains(fields, "End") {
		l.transition(n, at, st)
	}
	if slices.Contains(fields, "Retry") {
		if v, vat := get("Retry"); v != nil {
			st.retry = l.compileRetry(v, vat)
		}
		if v, vat := get("Catch"); v != nil {
			st.catch = l.compileCatch(v, vat)
		}
	}

	switch typ {
	case "Task":
		l.compileTask(n, at, st)
	case "Pass":
		if v := n.get("Result"); v != nil {
			st.result, st.hasResult = v.value(), true
		}
	case "Choice":
		l.compileChoice(n, at, st)
	case "Fail":
		l.compileFail(n, at, st)
	case "Map":
		l.compileMap(n, at, st)
	case "Wait":
		l.compileWait(n, at, st)
	}
	return st
}

func isASLField(k string) bool {
	for _, fs := range stateFields {
		if slices.Contains(fs, k) {
			return true
		}
	}
	return false
}

// transition reads Next and End: exactly one of a Next or "End": true.
func (l *loader) transition(n *node, at string, st *state) {
	next, end := n.get("Next"), n.get("End")
	if end != nil {
		if b, ok := l.wantBool(end, at+".End"); ok {
			st.end = b
			if !b {
				l.problem(at+".End", `"End" is only ever true; leave it out and give Next`)
			}
		}
	}
	if next != nil {
		if s, ok := l.wantString(next, at+".Next"); ok {
			st.next = s
		}
	}
	switch {
	case next != nil && st.end:
		l.problem(at, `a state has either "Next" or "End": true, not both`)
	case next == nil && end == nil:
		l.problem(at, `the state has neither "Next" nor "End": true`)
	}
}

func (l *loader) errorEquals(n *node, at string) []string {
	if n == nil {
		return nil
	}
	if n.kind != 'a' || len(n.vals) == 0 {
		l.problem(at, "ErrorEquals is a non-empty array of error names")
		return nil
	}
	var errs []string
	for i, v := range n.vals {
		eat := fmt.Sprintf("%s[%d]", at, i)
		s, ok := l.wantString(v, eat)
		if !ok {
			continue
		}
		if strings.HasPrefix(s, "States.") && !knownStatesErrors[s] {
			l.problem(eat, fmt.Sprintf("unknown error name %q (names starting with \"States.\" are reserved)", s))
		}
		if s == ErrAll && len(n.vals) > 1 {
			l.problem(eat, `"States.ALL" must appear alone in ErrorEquals`)
		}
		errs = append(errs, s)
	}
	return errs
}

// compileHandlers compiles Retry or Catch (field): an array of objects,
// each a what ("retrier", "catcher"). newHandler makes one, its ErrorEquals
// (which compileHandlers reads) and the reader of its other fields, false
// for a field it does not take. Each must hold the required fields, and
// one matching States.ALL must be the last.
func compileHandlers[T any](l *loader, n *node, at, field, what string, required []string, newHandler func() (*T, *[]string, func(k string, v *node, kat string) bool)) []T {
	if n.kind != 'a' {
		l.problem(at, fmt.Sprintf("%s is an array of %ss, not %s", field, what, n.kindName()))
		return nil
	}
	var hs []T
	for i, hn := range n.vals {
		hat := fmt.Sprintf("%s[%d]", at, i)
		if hn.kind != 'o' {
			l.problem(hat, fmt.Sprintf("a %s is an object, not %s", what, hn.kindName()))
			continue
		}
		h, errs, read := newHandler()
		for j, k := range hn.keys {
			v, kat := hn.vals[j], hat+fieldSeg(k)
			if k == "ErrorEquals" {
				*errs = l.errorEquals(v, kat)
			} else if !read(k, v, kat) {
				l.problem(kat, fmt.Sprintf("unsupported field %q", k))
			}
		}
		for _, f := range required {
			if hn.get(f) == nil {
				l.problem(hat, "missing "+f)
			}
		}
		if slices.Contains(*errs, ErrAll) && i != len(n.vals)-1 {
			l.problem(hat, fmt.Sprintf(`a %s matching "States.ALL" must be the last one`, what))
		}
		hs = append(hs, *h)
	}
	return hs
}

func (l *loader) compileRetry(n *node, at string) []retrier {
	return compileHandlers(l, n, at, "Retry", "retrier", []string{"ErrorEquals"}, func() (*retrier, *[]string, func(string, *node, string) bool) {
		r := &retrier{interval: 1, maxAttempts: 3, backoff: 2}
		return r, &r.errs, func(k string, v *node, kat string) bool {
			switch k {
			case "IntervalSeconds":
				if s, ok := l.wantInt(v, kat, 1, maxIntField); ok {
					r.interval = float64(s)
				}
			case "MaxAttempts":
				if s, ok := l.wantInt(v, kat, 0, maxIntField); ok {
					r.maxAttempts = int(s)
				}
			case "BackoffRate":
				if v.kind != 'n' {
					l.problem(kat, fmt.Sprintf("must be a number, not %s", v.kindName()))
				} else if q, ok := numRat(v.num); !ok {
					l.problem(kat, "must be a number")
				} else if f, _ := q.Float64(); f < 1 || math.IsInf(f, 0) {
					l.problem(kat, fmt.Sprintf("must be a number of at least 1.0, not %s", v.num))
				} else {
					r.backoff = f
				}
			case "MaxDelaySeconds":
				if s, ok := l.wantInt(v, kat, 1, 31622400); ok {
					r.maxDelay = float64(s)
				}
			case "JitterStrategy":
				if s, ok := l.wantString(v, kat); ok {
					switch s {
					case "FULL":
						r.fullJitter = true
					case "NONE":
					default:
						l.problem(kat, fmt.Sprintf(`JitterStrategy is "FULL" or "NONE", not %q`, s))
					}
				}
			default:
				return false
			}
			return true
		}
	})
}

func (l *loader) compileCatch(n *node, at string) []catcher {
	return compileHandlers(l, n, at, "Catch", "catcher", []string{"ErrorEquals", "Next"}, func() (*catcher, *[]string, func(string, *node, string) bool) {
		c := &catcher{}
		return c, &c.errs, func(k string, v *node, kat string) bool {
			switch k {
			case "Next":
				c.next, _ = l.wantString(v, kat)
			case "ResultPath":
				c.resultPath = l.optPathField(v, kat, true)
			default:
				return false
			}
			return true
		}
	})
}

func (l *loader) compileTask(n *node, at string, st *state) {
	rn := n.get("Resource")
	if rn == nil {
		l.problem(at, "missing Resource")
	} else if s, ok := l.wantString(rn, at+".Resource"); ok {
		base, callback := strings.CutSuffix(s, waitForTaskToken)
		st.callback = callback
		if callback {
			l.checkCallback(n, at)
		}
		switch {
		case base == "":
			l.problem(at+".Resource", "must not be empty")
		case base == lambdaInvokeResource:
			st.lambdaInvoke = true
			l.checkLambdaInvoke(n.get("Parameters"), at)
		default:
			l.addResource(base)
		}
		st.resource = base
	}
	var timeout int64
	if v := n.get("TimeoutSeconds"); v != nil {
		if s, ok := l.wantInt(v, at+".TimeoutSeconds", 1, maxIntField); ok {
			timeout = s
			st.timeout = time.Duration(s) * time.Second
		}
	}
	if v := n.get("HeartbeatSeconds"); v != nil {
		if s, ok := l.wantInt(v, at+".HeartbeatSeconds", 1, maxIntField); ok {
			if timeout > 0 && s >= timeout {
				l.problem(at+".HeartbeatSeconds", "must be smaller than TimeoutSeconds")
			}
			st.heartbeat = time.Duration(s) * time.Second
		}
	}
}

// checkCallback checks a callback task (.waitForTaskToken): it suspends the
// whole execution, so it must stand at the top level, and its Parameters
// must pass $$.Task.Token on, or nothing could ever complete it.
func (l *loader) checkCallback(n *node, at string) {
	if l.nested > 0 {
		l.problem(at+".Resource", "the callback pattern (.waitForTaskToken) is supported only at the top level, not in a Map's ItemProcessor: a suspended execution resumes there")
	}
	if p := n.get("Parameters"); p == nil || !mentionsTaskToken(p) {
		l.problem(at+".Parameters", "a callback task (.waitForTaskToken) must pass $$.Task.Token in its Parameters, or nothing can complete it")
	}
}

// mentionsTaskToken reports whether a Parameters template refers to
// $$.Task.Token, in a path or an intrinsic function's text.
func mentionsTaskToken(n *node) bool {
	switch n.kind {
	case 'o':
		for i, k := range n.keys {
			v := n.vals[i]
			if strings.HasSuffix(k, ".$") && v.kind == 's' && strings.Contains(v.str, "$$.Task.Token") {
				return true
			}
			if mentionsTaskToken(v) {
				return true
			}
		}
	case 'a':
		for _, v := range n.vals {
			if mentionsTaskToken(v) {
				return true
			}
		}
	}
	return false
}

func (l *loader) addResource(s string) {
	if !slices.Contains(l.resources, s) {
		l.resources = append(l.resources, s)
	}
}

// checkLambdaInvoke checks the Parameters of the optimized Lambda
// integration: FunctionName and Payload, nothing else.
func (l *loader) checkLambdaInvoke(p *node, at string) {
	if p == nil || p.kind != 'o' {
		l.problem(at, fmt.Sprintf("%s needs Parameters with a FunctionName", lambdaInvokeResource))
		return
	}
	hasName := false
	for i, k := range p.keys {
		kat := at + ".Parameters" + fieldSeg(k)
		switch k {
		case "FunctionName":
			hasName = true
			if s, ok := l.wantString(p.vals[i], kat); ok {
				l.addResource(s)
			}
		case "FunctionName.$":
			hasName = true
		case "Payload", "Payload.$":
		default:
			l.problem(kat, fmt.Sprintf("unsupported field %q (this interpreter takes FunctionName and Payload for %s)", k, lambdaInvokeResource))
		}
	}
	if !hasName {
		l.problem(at+".Parameters", "missing FunctionName")
	}
}

func (l *loader) compileChoice(n *node, at string, st *state) {
	cn := n.get("Choices")
	if cn == nil {
		l.problem(at, "missing Choices")
	} else if cn.kind != 'a' || len(cn.vals) == 0 {
		l.problem(at+".Choices", "must be a non-empty array of choice rules")
	} else {
		for i, rn := range cn.vals {
			if r := l.compileRule(rn, fmt.Sprintf("%s.Choices[%d]", at, i), true); r != nil {
				st.choices = append(st.choices, r)
			}
		}
	}
	if v := n.get("Default"); v != nil {
		st.def, _ = l.wantString(v, at+".Default")
	}
}

func (l *loader) compileFail(n *node, at string, st *state) {
	pair := func(static, dyn string, s *string, d **tmpl) {
		sv, dv := n.get(static), n.get(dyn)
		if sv != nil && dv != nil {
			l.problem(at, fmt.Sprintf("%s and %s are mutually exclusive", static, dyn))
		}
		if sv != nil {
			*s, _ = l.wantString(sv, at+"."+static)
		}
		if dv != nil {
			*d = l.compileDynamic(dv, at+"."+dyn)
		}
	}
	pair("Error", "ErrorPath", &st.failError, &st.failErrorDyn)
	pair("Cause", "CausePath", &st.failCause, &st.failCauseDyn)
}

func (l *loader) compileMap(n *node, at string, st *state) {
	if v := n.get("ItemsPath"); v != nil {
		if s, ok := l.wantString(v, at+".ItemsPath"); ok {
			p, err := parsePath(s)
			if err != nil {
				l.problem(at+".ItemsPath", err.Error())
			} else {
				st.itemsPath = p
			}
		}
	}
	if v := n.get("ItemSelector"); v != nil {
		st.itemSelector = l.compileTemplate(v, at+".ItemSelector")
	}
	if v := n.get("MaxConcurrency"); v != nil {
		if s, ok := l.wantInt(v, at+".MaxConcurrency", 0, maxIntField); ok {
			st.maxConc = int(s)
		}
	}
	st.maxConcPath = l.optPath(n, "MaxConcurrencyPath", at)
	if st.maxConcPath != nil && n.get("MaxConcurrency") != nil {
		l.problem(at, "MaxConcurrency and MaxConcurrencyPath exclude each other")
	}
	l.compileTolerance(n, at, st)
	if v := n.get("Label"); v != nil {
		l.wantString(v, at+".Label")
	}
	pn := n.get("ItemProcessor")
	pat := at + ".ItemProcessor"
	if pn == nil {
		l.problem(at, "missing ItemProcessor")
		st.processor = &scope{states: map[string]*state{}}
		return
	}
	if pn.kind != 'o' {
		l.problem(pat, fmt.Sprintf("must be an object, not %s", pn.kindName()))
		st.processor = &scope{states: map[string]*state{}}
		return
	}
	for _, k := range pn.keys {
		switch k {
		case "ProcessorConfig", "StartAt", "States":
		default:
			l.problem(pat+fieldSeg(k), fmt.Sprintf("unsupported field %q", k))
		}
	}
	if cfg := pn.get("ProcessorConfig"); cfg != nil {
		l.processorConfig(cfg, pat+".ProcessorConfig", st)
	}
	if st.tolerates && !st.distributed {
		l.problem(at, `tolerated failures are a Distributed Map's: its ItemProcessor's ProcessorConfig needs Mode "DISTRIBUTED"`)
	}
	l.nested++
	st.processor = l.compileScope(pn, pat)
	l.nested--
}

// optPath compiles the reference path in field k of n, if there.
func (l *loader) optPath(n *node, k, at string) *jpath {
	v := n.get(k)
	if v == nil {
		return nil
	}
	str, ok := l.wantString(v, at+"."+k)
	if !ok {
		return nil
	}
	p, err := parsePath(str)
	if err != nil {
		l.problem(at+"."+k, err.Error())
		return nil
	}
	return p
}

// compileTolerance reads a Distributed Map's tolerated failures: a count
// or a percentage of the items, each given or read from the input. Past
// them the Map fails with States.ExceedToleratedFailureThreshold; without
// them, one failed item does.
func (l *loader) compileTolerance(n *node, at string, st *state) {
	if v := n.get("ToleratedFailureCount"); v != nil {
		if c, ok := l.wantInt(v, at+".ToleratedFailureCount", 0, maxIntField); ok {
			st.tolCount = &c
		}
	}
	if v := n.get("ToleratedFailurePercentage"); v != nil {
		if v.kind != 'n' {
			l.problem(at+".ToleratedFailurePercentage", fmt.Sprintf("must be a number, not %s", v.kindName()))
		} else if f, err := v.num.Float64(); err != nil || f < 0 || f > 100 {
			l.problem(at+".ToleratedFailurePercentage", "must be a number from 0 to 100")
		} else {
			st.tolPercent = &f
		}
	}
	st.tolCountPath = l.optPath(n, "ToleratedFailureCountPath", at)
	st.tolPercentPath = l.optPath(n, "ToleratedFailurePercentagePath", at)
	if st.tolCount != nil && st.tolCountPath != nil || st.tolPercent != nil && st.tolPercentPath != nil {
		l.problem(at, "a tolerated failure field and its Path exclude each other")
	}
	st.tolerates = st.tolCount != nil || st.tolPercent != nil || st.tolCountPath != nil || st.tolPercentPath != nil
}

func (l *loader) processorConfig(cfg *node, at string, st *state) {
	if cfg.kind != 'o' {
		l.problem(at, fmt.Sprintf("must be an object, not %s", cfg.kindName()))
		return
	}
	mode := "INLINE"
	for i, k := range cfg.keys {
		v, kat := cfg.vals[i], at+fieldSeg(k)
		switch k {
		case "Mode":
			if s, ok := l.wantString(v, kat); ok {
				switch s {
				case "INLINE", "DISTRIBUTED":
					mode = s
				default:
					l.problem(kat, fmt.Sprintf(`Mode is "INLINE" or "DISTRIBUTED", not %q`, s))
				}
			}
		case "ExecutionType":
			if s, ok := l.wantString(v, kat); ok && s != "STANDARD" && s != "EXPRESS" {
				l.problem(kat, fmt.Sprintf(`ExecutionType is "STANDARD" or "EXPRESS", not %q`, s))
			}
		default:
			l.problem(kat, fmt.Sprintf("unsupported field %q", k))
		}
	}
	st.distributed = mode == "DISTRIBUTED"
	hasType := cfg.get("ExecutionType") != nil
	if st.distributed && !hasType {
		l.problem(at, `Mode "DISTRIBUTED" needs an ExecutionType ("STANDARD" or "EXPRESS")`)
	}
	if !st.distributed && hasType {
		l.problem(at+".ExecutionType", `ExecutionType is only given with Mode "DISTRIBUTED"`)
	}
}

func (l *loader) compileWait(n *node, at string, st *state) {
	var given []string
	for _, k := range []string{"Seconds", "Timestamp", "SecondsPath", "TimestampPath"} {
		v := n.get(k)
		if v == nil {
			continue
		}
		given = append(given, k)
		kat := at + "." + k
		switch k {
		case "Seconds":
			st.waitSeconds, _ = l.wantInt(v, kat, 0, maxIntField)
		case "Timestamp":
			if s, ok := l.wantString(v, kat); ok {
				t, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					l.problem(kat, fmt.Sprintf("not an RFC 3339 timestamp: %q", s))
				}
				st.waitTimestamp = t
			}
		case "SecondsPath", "TimestampPath":
			if s, ok := l.wantString(v, kat); ok {
				p, err := parsePath(s)
				if err != nil {
					l.problem(kat, err.Error())
				} else if k == "SecondsPath" {
					st.waitSecondsPath = p
				} else {
					st.waitTimestampPath = p
				}
			}
		}
	}
	if len(given) != 1 {
		l.problem(at, fmt.Sprintf("a Wait state has exactly one of Seconds, Timestamp, SecondsPath, TimestampPath (has %d)", len(given)))
	}
}
