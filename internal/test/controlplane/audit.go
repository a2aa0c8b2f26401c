package controlplane

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// auditPolicy records every write: deletions with the deleted object (the
// response), other writes with their metadata only, reads not at all.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  verbs: [delete, deletecollection]
- level: Metadata
  verbs: [create, update, patch]
- level: None
`

// AuditEvent is the part of a kube-apiserver audit event (audit.k8s.io/v1)
// that tests read.
type AuditEvent struct {
	// AuditID identifies the request.
	AuditID string `json:"auditID"`
	// Stage is ResponseComplete or Panic (RequestReceived is not logged).
	Stage string `json:"stage"`
	// Verb is the request's verb: create, update, patch, delete, ...
	Verb string `json:"verb"`
	// User is who sent the request.
	User struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	// ObjectRef names the object.
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	// ResponseStatus is the response's status; Code 2xx means it succeeded.
	ResponseStatus *metav1.Status `json:"responseStatus"`
	// ResponseObject is the deleted object for deletions, empty otherwise.
	ResponseObject *runtime.RawExtension `json:"responseObject"`
	// StageTimestamp is when the response completed.
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
}

// Succeeded reports whether the request succeeded.
func (e *AuditEvent) Succeeded() bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300
}

// ReadAuditLog reads the audit log of a control plane started with
// Options.AuditLog, oldest event first. A missing log reads as empty.
func (c *ControlPlane) ReadAuditLog() ([]AuditEvent, error) {
	if c.AuditLogPath == "" {
		return nil, fmt.Errorf("control plane %s has no audit log: start it with Options.AuditLog", c.Name)
	}
	f, err := os.Open(c.AuditLogPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var events []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var ev AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			// Note: a line being written while we read may be cut short.
			continue
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading audit log %s: %w", c.AuditLogPath, err)
	}
	return events, nil
}

// enableAudit makes the API server of env log every write to dir/audit.log
// (see auditPolicy) and returns the log's path.
func enableAudit(env *envtest.Environment, dir string) (string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return "", fmt.Errorf("writing the audit policy: %w", err)
	}
	path := filepath.Join(dir, "audit.log")
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", path).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	return path, nil
}
