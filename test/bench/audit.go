package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// auditLog counts a contender's API requests from the audit log of the
// kube-apiserver of its run. Each contender has its own user, and the policy
// logs only the users given, so that the fleet's heartbeats and the bench's
// own watches cost nothing and count for no one.
type auditLog struct {
	path string
}

// configure writes the audit policy into dir and points the apiserver at it
// and at the log.
func (a auditLog) configure(env *envtest.Environment, dir string, contenders []contender) error {
	users := make([]string, len(contenders))
	for i, c := range contenders {
		users[i] = strconv.Quote(c.user())
	}
	policy := fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [%s]
- level: None
`, strings.Join(users, ", "))
	policyPath, err := filepath.Abs(filepath.Join(dir, "audit-policy.yaml"))
	if err != nil {
		return fmt.Errorf("audit policy path: %w", err)
	}
	if err := os.WriteFile(policyPath, []byte(policy), 0o644); err != nil {
		return fmt.Errorf("write audit policy: %w", err)
	}
	logPath, err := filepath.Abs(a.path)
	if err != nil {
		return fmt.Errorf("audit log path: %w", err)
	}
	// A log left by an earlier bench would count its requests too.
	if err := os.Remove(logPath); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove the old audit log: %w", err)
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Set("audit-policy-file", policyPath)
	args.Set("audit-log-path", logPath)
	// Zero turns rotation off: the bench reads one file.
	args.Set("audit-log-maxsize", "0")
	return nil
}

// auditEvent is the part of an audit.k8s.io/v1 Event the bench reads.
type auditEvent struct {
	AuditID string `json:"auditID"`
	Verb    string `json:"verb"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// request is one API request, once.
type request struct {
	user, kind string // kind is "verb resource[/subresource]"
	name       string // the object's name, if the request names one
	at         time.Time
}

// read returns every logged request once: a request that streams (a watch)
// is logged when its response starts and again when it ends.
func (a auditLog) read() ([]request, error) {
	f, err := os.Open(a.path)
	if err != nil {
		return nil, fmt.Errorf("open the audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	seen := map[string]bool{}
	var out []request
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for s.Scan() {
		var e auditEvent
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("parse the audit log: %w", err)
		}
		if seen[e.AuditID] {
			continue
		}
		seen[e.AuditID] = true
		kind, name := e.Verb, ""
		if e.ObjectRef != nil {
			kind += " " + e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				kind += "/" + e.ObjectRef.Subresource
			}
			name = e.ObjectRef.Name
		}
		out = append(out, request{user: e.User.Username, kind: kind, name: name, at: e.RequestReceived})
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	return out, nil
}

// requestCount is how many requests one user sent in one window, in all and
// by verb and resource.
type requestCount struct {
	Total  int            `json:"total"`
	ByKind map[string]int `json:"byKind"`
}

// count counts the requests user sent that the apiserver received in
// [from, to).
func count(requests []request, user string, from, to time.Time) requestCount {
	c := requestCount{ByKind: map[string]int{}}
	for _, r := range requests {
		if r.user == user && !r.at.Before(from) && r.at.Before(to) {
			c.Total++
			c.ByKind[r.kind]++
		}
	}
	return c
}

// markSplit counts the requests of markKinds that user sent in [from, to)
// about the nodes given, those up to each node's first status write (its
// mark: the live reads that confirm the silence, and the write) apart from
// those after it (live reads again, before the node's pods are written when
// their turn comes over a second after the mark).
func markSplit(requests []request, user string, from, to time.Time, nodes []string) (atMark, after int) {
	want := map[string]bool{}
	for _, n := range nodes {
		want[n] = true
	}
	marked := map[string]bool{}
	// The log is in the order the apiserver answered, which is near enough
	// the order received; sort each node's by receipt to be sure.
	byNode := map[string][]request{}
	for _, r := range requests {
		if r.user == user && want[r.name] && slices.Contains(markKinds, r.kind) && !r.at.Before(from) && r.at.Before(to) {
			byNode[r.name] = append(byNode[r.name], r)
		}
	}
	for name, rs := range byNode {
		slices.SortStableFunc(rs, func(a, b request) int { return a.at.Compare(b.at) })
		for _, r := range rs {
			if marked[name] {
				after++
				continue
			}
			atMark++
			if strings.HasSuffix(r.kind, "nodes/status") {
				marked[name] = true
			}
		}
	}
	return atMark, after
}
