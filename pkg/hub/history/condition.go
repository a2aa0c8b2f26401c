package history

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// healthRetry is how long the recorder waits before writing the condition
// again after the API server refused it.
const healthRetry = 5 * time.Second

// reportHealth sets ConditionHistoryRecording on the hub's Deployment now
// and whenever the health changes, with an Event when it changes, until
// ctx is cancelled.
func (r *Recorder) reportHealth(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx).WithName(ControllerName)
	var last *healthState // what was reported last; nil before the first report
	for {
		s := r.health.state()
		if last == nil || s != *last {
			logHealth(ctx, s, last)
			if err := r.setCondition(ctx, s, last); err != nil {
				log.Error(err, "Setting the history condition on the hub's Deployment", "deployment", r.Deployment)
				select {
				case <-ctx.Done():
					return
				case <-time.After(healthRetry):
				}
				continue
			}
			last = &s
		}
		select {
		case <-ctx.Done():
			return
		case <-r.health.changed:
		}
	}
}

// logHealth logs a change of the health.
func logHealth(ctx context.Context, s healthState, last *healthState) {
	log := ctrl.LoggerFrom(ctx).WithName(ControllerName)
	switch {
	case !s.OK:
		log.Info("History recording failed", "reason", s.Reason, "message", s.Message)
	case last != nil && !last.OK:
		log.Info("History recording recovered")
	}
}

// setCondition writes s as ConditionHistoryRecording on the hub's
// Deployment, and an Event when it differs from last. A hub without a
// Deployment (run outside a cluster, or none named) only logs.
func (r *Recorder) setCondition(ctx context.Context, s healthState, last *healthState) error {
	if r.Deployment.Name == "" {
		return nil
	}
	d := &appsv1.Deployment{}
	if err := r.apiReader.Get(ctx, r.Deployment, d); err != nil {
		if apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).WithName(ControllerName).V(4).Info("No hub Deployment to set the history condition on", "deployment", r.Deployment)
			return nil
		}
		return fmt.Errorf("getting %s: %w", r.Deployment, err)
	}
	c := condition(s, d.Status.Conditions, metav1.Now())
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []appsv1.DeploymentCondition{c}}})
	if err != nil {
		return fmt.Errorf("encoding the history condition: %w", err)
	}
	// Note: a strategic merge patch merges conditions by type, so the
	// deployment controller's own conditions are left alone.
	if err := r.client.Status().Patch(ctx, d, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return fmt.Errorf("setting %s on %s: %w", ConditionHistoryRecording, r.Deployment, err)
	}
	switch {
	case !s.OK && (last == nil || last.OK || last.Reason != s.Reason):
		r.events.Eventf(d, nil, corev1.EventTypeWarning, s.Reason, "RecordHistory", "%s", s.Message)
	case s.OK && last != nil && !last.OK:
		r.events.Eventf(d, nil, corev1.EventTypeNormal, s.Reason, "RecordHistory", "Compliance history is recorded again.")
	}
	return nil
}

// condition returns ConditionHistoryRecording for s, keeping the
// transition time of the same status among conditions.
func condition(s healthState, conditions []appsv1.DeploymentCondition, now metav1.Time) appsv1.DeploymentCondition {
	c := appsv1.DeploymentCondition{
		Type: ConditionHistoryRecording, Status: corev1.ConditionFalse, Reason: s.Reason, Message: s.Message,
		LastUpdateTime: now, LastTransitionTime: now,
	}
	if s.OK {
		c.Status = corev1.ConditionTrue
	}
	for _, old := range conditions {
		if old.Type == ConditionHistoryRecording && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	return c
}
