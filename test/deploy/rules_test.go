package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/cmdline"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealthpolicy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/markdown"
)

// metricsDoc lists every metric the controller exports, generated from the
// code by `make docs`.
const metricsDoc = "docs/reference/metrics.md"

// runbooks holds a section for each alert, which its runbook_url leads to.
const runbooks = "docs/runbooks.md"

// alertPrefix starts the name of every alert, so that the controller's
// alerts sort and silence together.
const alertPrefix = "NodeLifecycle"

// severities are the values an alert's severity label may take.
var severities = []string{"warning", "critical"}

// foreignMetrics are the metrics the alerts use that the controller does
// not define itself, so that docs/reference/metrics.md does not list them,
// and why each is there to use.
var foreignMetrics = map[string]string{
	"up": "Prometheus's own, for each target it scrapes: 1 when the last scrape succeeded",
	"leader_election_master_status": "controller-runtime's metrics of client-go's leader election, on the controller's " +
		"registry: 1 on the replica that holds the Lease named by the label name, 0 on the others",
	"controller_runtime_reconcile_errors_total": "controller-runtime's, for each controller by the name its builder " +
		"is given (Named), counted when Reconcile returns an error",
}

// controllerNames are the names the controllers are built under
// (builder.Named), which controller-runtime's metrics carry in the label
// controller.
var controllerNames = []string{nodehealth.ControllerName, podeviction.ControllerName, nodehealthpolicy.ControllerName}

// prometheusRule is the part of the Prometheus operator's PrometheusRule
// (monitoring.coreos.com/v1) that config/prometheus uses. Decoded strictly,
// a field it does not have, such as a misspelled one, fails the test: the
// operator's CRD would drop it, or refuse the object.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace,omitempty"`
		Labels    map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`
}

// ruleGroup is a group of spec.groups.
type ruleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []rule `json:"rules"`
}

// rule is an alerting rule of a group.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func TestPrometheusRuleAlerts(t *testing.T) {
	objs := render(t, "config/prometheus")
	pr := decodeRule(t, one(t, objs, "PrometheusRule"))
	if pr.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("PrometheusRule is %s, want monitoring.coreos.com/v1", pr.APIVersion)
	}
	// Labeled as the ServiceMonitor is, so that a Prometheus that selects
	// the one by label selects the other too.
	mon := one(t, objs, "ServiceMonitor")
	for k, v := range mon.GetLabels() {
		if pr.Metadata.Labels[k] != v {
			t.Errorf("PrometheusRule has label %s=%q, want the ServiceMonitor's %q", k, pr.Metadata.Labels[k], v)
		}
	}

	job := scrapeJob(t, mon)
	known := documentedMetrics(t)
	anchors := headingAnchors(t, filepath.Join(repoRoot, runbooks))
	base := runbookBase(t)

	var alerts []string
	for _, g := range pr.Spec.Groups {
		if len(g.Rules) == 0 {
			t.Errorf("Group %q has no rules", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("Group %q has a rule that is not an alert (expr %q)", g.Name, r.Expr)
				continue
			}
			t.Run(r.Alert, func(t *testing.T) {
				checkAlert(t, r, job, known, anchors, base)
			})
			if slices.Contains(alerts, r.Alert) {
				t.Errorf("Alert %s is defined twice", r.Alert)
			}
			alerts = append(alerts, r.Alert)
		}
	}
	if len(alerts) == 0 {
		t.Fatal("The PrometheusRule has no alerts")
	}
	// Every alert's section in the runbooks is an alert's: none left over
	// from one renamed or removed.
	for _, a := range anchors {
		if strings.HasPrefix(a, strings.ToLower(alertPrefix)) &&
			!slices.ContainsFunc(alerts, func(name string) bool { return strings.ToLower(name) == a }) {
			t.Errorf("%s has a section #%s for no alert of the PrometheusRule", runbooks, a)
		}
	}
}

// checkAlert checks one alert: its labels and annotations, its runbook, and
// every selector of its expression.
func checkAlert(t *testing.T, r rule, job string, known map[string]string, anchors []string, base string) {
	if !strings.HasPrefix(r.Alert, alertPrefix) {
		t.Errorf("The alert's name does not start with %s", alertPrefix)
	}
	if !slices.Contains(severities, r.Labels["severity"]) {
		t.Errorf("severity is %q, want one of %q", r.Labels["severity"], severities)
	}
	if d, err := model.ParseDuration(r.For); err != nil || d <= 0 {
		t.Errorf("for is %q (%v): want a duration, so that the alert does not fire on one evaluation", r.For, err)
	}
	for _, a := range []string{"summary", "description", "runbook_url"} {
		if strings.TrimSpace(r.Annotations[a]) == "" {
			t.Errorf("No annotation %s", a)
		}
	}
	for name, text := range r.Annotations {
		if err := parseAlertTemplate(text); err != nil {
			t.Errorf("Annotation %s is not a template Prometheus can expand: %v", name, err)
		}
	}
	if url := r.Annotations["runbook_url"]; url != "" {
		anchor, ok := strings.CutPrefix(url, base)
		switch {
		case !ok:
			t.Errorf("runbook_url %s does not lead into %s (%s...)", url, runbooks, base)
		case !slices.Contains(anchors, anchor):
			t.Errorf("runbook_url %s: %s has no heading with the anchor #%s", url, runbooks, anchor)
		}
	}

	selectors, err := promqlSelectors(r.Expr)
	if err != nil {
		t.Fatalf("expr %q: %v", r.Expr, err)
	}
	if len(selectors) == 0 {
		t.Fatalf("expr %q selects no series", r.Expr)
	}
	for _, s := range selectors {
		if _, ok := foreignMetrics[s.Metric]; !ok && !isDocumented(known, s.Metric) {
			t.Errorf("%s is neither in %s nor among the metrics others export", s.Metric, metricsDoc)
		}
		// Other jobs export up and controller-runtime's metrics too: every
		// selector names the controller's job.
		if m, ok := s.matcher("job"); !ok || m.Op != "=" || m.Value != job {
			t.Errorf("%s does not select job=%q, the job of the ServiceMonitor's targets", s, job)
		}
		if m, ok := s.matcher("controller"); ok {
			if !matchesAny(t, m, controllerNames) {
				t.Errorf("%s: no controller is named %s%q; their names are %q", s, m.Op, m.Value, controllerNames)
			}
		}
		if s.Metric == "leader_election_master_status" {
			// The Lease a replica takes, and the one it takes in a dry run.
			leases := []string{cmdline.DefaultLeaderElectionID, controllers.DryRunLeaseName(cmdline.DefaultLeaderElectionID)}
			m, ok := s.matcher("name")
			if !ok {
				t.Errorf("%s does not select the Lease by its name", s)
			}
			for _, lease := range leases {
				if ok && !matchesAny(t, m, []string{lease}) {
					t.Errorf("%s does not select the Lease %s", s, lease)
				}
			}
		}
	}
}

// decodeRule decodes obj into a prometheusRule, refusing unknown fields.
func decodeRule(t *testing.T, obj *unstructured.Unstructured) prometheusRule {
	t.Helper()
	j, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	var pr prometheusRule
	if err := yaml.UnmarshalStrict(j, &pr); err != nil {
		t.Fatalf("%s: %v", describe(obj), err)
	}
	return pr
}

// scrapeJob returns the job label of the ServiceMonitor's targets: the
// Prometheus operator's default, the name of the Service it scrapes, since
// it sets neither spec.jobLabel nor a relabeling of job. The Service is the
// installer's metrics Service, with its name as config/default prefixes it.
func scrapeJob(t *testing.T, mon *unstructured.Unstructured) string {
	t.Helper()
	if l, ok, _ := unstructured.NestedString(mon.Object, "spec", "jobLabel"); ok {
		t.Fatalf("The ServiceMonitor sets jobLabel %q: the alerts' job is the Service's name", l)
	}
	endpoints, _, _ := unstructured.NestedSlice(mon.Object, "spec", "endpoints")
	for _, e := range endpoints {
		relabelings, _, _ := unstructured.NestedSlice(e.(map[string]any), "relabelings")
		for _, r := range relabelings {
			if target, _ := r.(map[string]any)["targetLabel"].(string); target == "job" {
				t.Fatal("The ServiceMonitor relabels job: the alerts' job is the Service's name")
			}
		}
	}
	return one(t, render(t, "config/default"), "Service").GetName()
}

// documentedMetrics returns the metrics of docs/reference/metrics.md, by
// name, with their types.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, metricsDoc))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \\| ([a-z]+) \\|")
	known := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			known[m[1]] = m[2]
		}
	}
	if len(known) == 0 {
		t.Fatalf("%s lists no metric", metricsDoc)
	}
	return known
}

// isDocumented reports whether name is a metric of known, or one of the
// series a histogram or summary of known is exposed as.
func isDocumented(known map[string]string, name string) bool {
	if _, ok := known[name]; ok {
		return true
	}
	for suffix, types := range map[string][]string{
		"_bucket": {"histogram"},
		"_count":  {"histogram", "summary"},
		"_sum":    {"histogram", "summary"},
	} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(types, known[base]) {
			return true
		}
	}
	return false
}

// matchesAny reports whether the matcher m, of the operator = or =~,
// matches one of values. Other operators fail t: the alerts have no use
// for them on these labels.
func matchesAny(t *testing.T, m labelMatcher, values []string) bool {
	t.Helper()
	switch m.Op {
	case "=":
		return slices.Contains(values, m.Value)
	case "=~":
		// Prometheus anchors label regexps at both ends.
		re, err := regexp.Compile("^(?:" + m.Value + ")$")
		if err != nil {
			t.Errorf("Matcher %s: %v", m, err)
			return false
		}
		return slices.ContainsFunc(values, re.MatchString)
	default:
		t.Errorf("Matcher %s: want = or =~", m)
		return false
	}
}

// runbookBase is where the alerts' runbook_url must lead: docs/runbooks.md
// on the main branch of the module's repository, up to the anchor.
func runbookBase(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if module, ok := strings.CutPrefix(line, "module "); ok {
			return "https://" + strings.TrimSpace(module) + "/blob/main/" + runbooks + "#"
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// headingAnchors returns the anchors GitHub gives the headings of the
// Markdown file at path: lower case, without punctuation but hyphens and
// underscores, spaces turned to hyphens. Headings in code blocks are not
// headings.
func headingAnchors(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	var anchors []string
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil && !fenced {
			anchors = append(anchors, markdown.Slug(m[1]))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return anchors
}

// parseAlertTemplate parses an annotation as Prometheus does before it
// expands it: with $labels, $externalLabels, $externalURL and $value
// defined, and its template functions. Only their names matter here.
func parseAlertTemplate(text string) error {
	const defs = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	stub := func(any) string { return "" }
	funcs := template.FuncMap{}
	for _, name := range []string{
		"humanize", "humanize1024", "humanizeDuration", "humanizePercentage", "humanizeTimestamp",
		"title", "toUpper", "toLower", "stripPort", "stripDomain", "safeHtml", "first", "label", "value",
		"query", "strvalue", "args", "externalURL", "pathPrefix", "tableLink", "graphLink", "sortByLabel",
		"match", "reReplaceAll", "parseDuration", "toTime",
	} {
		funcs[name] = stub
	}
	_, err := template.New("annotation").Funcs(funcs).Parse(defs + text)
	return err
}

// A selector is a series selector of a PromQL expression: a metric name and
// its label matchers.
type selector struct {
	Metric   string
	Matchers []labelMatcher
}

// labelMatcher is a label matcher of a selector.
type labelMatcher struct {
	Label, Op, Value string
}

func (m labelMatcher) String() string { return m.Label + m.Op + strconv.Quote(m.Value) }

func (s selector) String() string {
	var ms []string
	for _, m := range s.Matchers {
		ms = append(ms, m.String())
	}
	return s.Metric + "{" + strings.Join(ms, ", ") + "}"
}

// matcher returns the selector's matcher of label.
func (s selector) matcher(label string) (labelMatcher, bool) {
	for _, m := range s.Matchers {
		if m.Label == label {
			return m, true
		}
	}
	return labelMatcher{}, false
}

// promqlAggregations are PromQL's aggregation operators, which may be
// followed by by or without before their parenthesis.
var promqlAggregations = []string{
	"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
	"bottomk", "topk", "quantile", "limitk", "limit_ratio",
}

// promqlFunctions are PromQL's functions; the alerts use few, but a name
// misspelled is an error, not a metric.
var promqlFunctions = []string{
	"abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
	"avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
	"count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg", "delta",
	"deriv", "double_exponential_smoothing", "end", "exp", "floor", "histogram_avg", "histogram_count",
	"histogram_fraction", "histogram_quantile", "histogram_stddev", "histogram_stdvar", "histogram_sum",
	"holt_winters", "hour", "idelta", "increase", "info", "irate", "label_join", "label_replace",
	"last_over_time", "ln", "log10", "log2", "mad_over_time", "max_over_time", "min_over_time", "minute",
	"month", "pi", "predict_linear", "present_over_time", "quantile_over_time", "rad", "rate", "resets",
	"round", "scalar", "sgn", "sin", "sinh", "sort", "sort_by_label", "sort_by_label_desc", "sort_desc",
	"sqrt", "start", "stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh", "time",
	"timestamp", "vector", "year",
}

// promqlKeywords are PromQL's words that are neither functions nor metric
// names: binary operators, modifiers and number literals.
var promqlKeywords = []string{"and", "or", "unless", "atan2", "bool", "offset", "inf", "nan"}

// promqlLabelLists are the words followed by a parenthesized list of label
// names (optional after group_left and group_right).
var promqlLabelLists = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// promqlSelectors returns the series selectors of a PromQL expression, in
// order. It is a tokenizer, not a parser: it skips strings, comments,
// numbers and durations, range and subquery brackets, and the label lists
// of by, without, on, ignoring, group_left and group_right; it takes an
// identifier followed by ( for a function or an aggregation, which must be
// one of PromQL's, and any other identifier that is not a keyword for a
// metric name, with the matchers in the braces that follow it. Braces
// without a name before them must name one with __name__. It fails on
// unbalanced parentheses and on what it cannot read.
func promqlSelectors(expr string) ([]selector, error) {
	var out []selector
	depth := 0
	i := 0
	for i < len(expr) {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			_, n, err := promqlString(expr[i:])
			if err != nil {
				return nil, err
			}
			i += n
		case isDigit(c) || c == '.' && i+1 < len(expr) && isDigit(expr[i+1]):
			// A number or a duration: 1, 0.9, 1e-3, 0x1f, 5m, 1h30m.
			start := i
			hex := strings.HasPrefix(strings.ToLower(expr[i:]), "0x")
			for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == '.' ||
				!hex && i > start && (expr[i] == '+' || expr[i] == '-') && (expr[i-1] == 'e' || expr[i-1] == 'E')) {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdentChar(expr[i]) {
				i++
			}
			word := expr[start:i]
			lower := strings.ToLower(word)
			next := skipSpace(expr, i)
			switch {
			case slices.Contains(promqlLabelLists, lower):
				if next < len(expr) && expr[next] == '(' {
					end := strings.IndexByte(expr[next:], ')')
					if end < 0 {
						return nil, fmt.Errorf("unterminated label list after %s", word)
					}
					for l := range strings.SplitSeq(expr[next+1:next+end], ",") {
						if l = strings.TrimSpace(l); l != "" && !isLabelName(l) {
							return nil, fmt.Errorf("%q in the label list after %s is not a label name", l, word)
						}
					}
					i = next + end + 1
				} else if lower != "group_left" && lower != "group_right" {
					return nil, fmt.Errorf("%s without a label list", word)
				}
			case slices.Contains(promqlAggregations, lower):
				// Its parenthesis, or by or without, comes next.
			case slices.Contains(promqlKeywords, lower):
				// An operator may come before a parenthesis: a or (b).
			case next < len(expr) && expr[next] == '(':
				if !slices.Contains(promqlFunctions, word) {
					return nil, fmt.Errorf("%s( is no PromQL function or aggregation", word)
				}
			default:
				s := selector{Metric: word}
				if next < len(expr) && expr[next] == '{' {
					ms, n, err := promqlMatchers(expr[next:])
					if err != nil {
						return nil, fmt.Errorf("%s: %w", word, err)
					}
					s.Matchers = ms
					i = next + n
				}
				out = append(out, s)
			}
		case c == '{':
			ms, n, err := promqlMatchers(expr[i:])
			if err != nil {
				return nil, err
			}
			s := selector{Matchers: ms}
			for _, m := range ms {
				if m.Label == model.MetricNameLabel && m.Op == "=" {
					s.Metric = m.Value
				}
			}
			if s.Metric == "" {
				return nil, fmt.Errorf("selector %s names no metric", expr[i:i+n])
			}
			out = append(out, s)
			i += n
		case c == '[':
			// A range or subquery: durations and a colon.
			end := strings.IndexByte(expr[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unterminated [ at %d", i)
			}
			i += end + 1
		case c == '(':
			depth++
			i++
		case c == ')':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("unbalanced ) at %d", i)
			}
			i++
		case c == '}' || c == ']':
			return nil, fmt.Errorf("unbalanced %c at %d", c, i)
		case strings.IndexByte("+-*/%^=!<>,@:", c) >= 0:
			i++
		default:
			return nil, fmt.Errorf("unexpected %q at %d", c, i)
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%d unclosed (", depth)
	}
	return out, nil
}

// promqlMatchers reads the label matchers in braces at the start of s and
// returns them with the length read.
func promqlMatchers(s string) ([]labelMatcher, int, error) {
	var ms []labelMatcher
	i := skipSpace(s, 1)
	for {
		if i >= len(s) {
			return nil, 0, fmt.Errorf("unterminated {")
		}
		if s[i] == '}' {
			return ms, i + 1, nil
		}
		start := i
		for i < len(s) && isIdentChar(s[i]) {
			i++
		}
		m := labelMatcher{Label: s[start:i]}
		if !isLabelName(m.Label) {
			return nil, 0, fmt.Errorf("no label name at %q", s[start:])
		}
		i = skipSpace(s, i)
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(s[i:], op) {
				m.Op = op
				break
			}
		}
		if m.Op == "" {
			return nil, 0, fmt.Errorf("no matcher operator after label %s", m.Label)
		}
		i = skipSpace(s, i+len(m.Op))
		v, n, err := promqlString(s[i:])
		if err != nil {
			return nil, 0, fmt.Errorf("label %s: %w", m.Label, err)
		}
		m.Value = v
		ms = append(ms, m)
		i = skipSpace(s, i+n)
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		}
	}
}

// promqlString reads the string literal at the start of s ("...", '...'
// or `...`) and returns its value and the length read.
func promqlString(s string) (string, int, error) {
	if s == "" || strings.IndexByte("\"'`", s[0]) < 0 {
		return "", 0, fmt.Errorf("want a string at %q", s)
	}
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`':
			i++
		case s[i] == q:
			lit := s[:i+1]
			if q == '\'' {
				// As a Go string: the quotes swapped, escapes kept.
				inner := strings.ReplaceAll(strings.ReplaceAll(lit[1:i], `\'`, `'`), `"`, `\"`)
				lit = `"` + inner + `"`
			}
			v, err := strconv.Unquote(lit)
			if err != nil {
				return "", 0, fmt.Errorf("string %s: %w", s[:i+1], err)
			}
			return v, i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("unterminated string %s", s)
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

// isLabelName reports whether s is a label name in the classic character
// set (a metric name without colons).
func isLabelName(s string) bool {
	return s != "" && !isDigit(s[0]) && !strings.ContainsFunc(s, func(r rune) bool {
		return r > 0x7f || !isIdentChar(byte(r)) || r == ':'
	})
}

func TestRulePromQLSelectors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{{
		expr: `up`,
		want: []string{`up{}`},
	}, {
		expr: `sum by (namespace, job) (rate(foo_total{job="j", controller=~"a|b"}[5m])) > 0`,
		want: []string{`foo_total{job="j", controller=~"a|b"}`},
	}, {
		expr: "absent(up{job=\"j\"} == 1)\nor\nmax without (instance) (recorded:bar)",
		want: []string{`up{job="j"}`, `recorded:bar{}`},
	}, {
		expr: `a unless on (namespace, job) group_left (pod) b offset -5m`,
		want: []string{`a{}`, `b{}`},
	}, {
		expr: `x * on() group_right y`,
		want: []string{`x{}`, `y{}`},
	}, {
		expr: "max(a) == 0\nor\n(\n  up == 1 unless(b)\n)",
		want: []string{`a{}`, `up{}`, `b{}`},
	}, {
		expr: `histogram_quantile(0.9, sum by (le) (rate(h_bucket{le!="+Inf"}[15m:1m]))) > 1e-3`,
		want: []string{`h_bucket{le!="+Inf"}`},
	}, {
		expr: `label_replace(m, "dst", "$1", "src", "(by|on) rate(x)")`,
		want: []string{`m{}`},
	}, {
		expr: "# rate(in_a_comment[5m])\nx > bool 0x1F",
		want: []string{`x{}`},
	}, {
		expr: `{__name__="n", job='q\'s', env!~` + "`a\\d`" + `}`,
		want: []string{`n{__name__="n", job="q's", env!~"a\\d"}`},
	}, {
		expr: `SUM BY (job) (y) AND count(z @ end()) > Inf`,
		want: []string{`y{}`, `z{}`},
	}, {
		expr: `max_over_time(g{a = "1" , b="2",}[5m])`,
		want: []string{`g{a="1", b="2"}`},
	}} {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := promqlSelectors(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			var gs []string
			for _, s := range got {
				gs = append(gs, s.String())
			}
			if !slices.Equal(gs, tc.want) {
				t.Errorf("Selectors %q, want %q", gs, tc.want)
			}
		})
	}

	for _, expr := range []string{
		`rat(foo[5m])`,           // no such function
		`foo{job="x"`,            // unterminated braces
		`sum(foo`,                // unclosed parenthesis
		`foo)`,                   // unbalanced parenthesis
		`foo{job=x}`,             // a value that is not a string
		`foo{job~"x"}`,           // no operator
		`{job="x"}`,              // no metric name
		`sum by job (foo)`,       // a label list without parentheses
		`foo{job="x"}[5m`,        // unterminated range
		`foo{job="unterminated}`, // unterminated string
	} {
		if got, err := promqlSelectors(expr); err == nil {
			t.Errorf("promqlSelectors(%q) = %v, want an error", expr, got)
		}
	}
}
