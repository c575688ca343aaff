// ARC's controller, the part arc mode depends on (--arc-controller): a stand-in for
// gha-runner-scale-set-controller 0.14's EphemeralRunnerSet and EphemeralRunner controllers, written
// from their code (controllers/actions.github.com/ephemeralrunnerset_controller.go,
// ephemeralrunner_controller.go, resourcebuilder.go), over ARC's CRDs (tests/e2e/fixtures):
//
//   - An EphemeralRunnerSet acts on its spec only when spec.patchID is 0 or differs from the
//     newest `actions.github.com/patch-id` annotation of its EphemeralRunners. Then finished
//     runners are cleaned up; fewer than spec.replicas runners (pending + running + failed) makes
//     more, each annotated with the patchID; with patchID 0 more than spec.replicas deletes idle
//     ones: registered, without a job, removed at the Actions Service first (which refuses a
//     runner a job was assigned to; the runner then stays).
//   - An EphemeralRunner gets a JIT configuration from the Actions Service for its scale set
//     (spec.runnerScaleSetId, with the credentials of the Secret spec.githubConfigSecret names, as
//     ARC reads them), a Secret `<runner>` holding it under `jitToken`, and a pod of the same name:
//     spec.spec with the runner container's ACTIONS_RUNNER_INPUT_JITCONFIG from that Secret, ARC's
//     labels (the runner's, and `actions-ephemeral-runner: "True"`), owned by the EphemeralRunner.
//     Its status.phase follows the pod's; a pod Succeeded (the runner exited after its job) ends the
//     EphemeralRunner, its pod and Secret.
//
// The simulator then plays each such pod's runner like any other (main.go: the label). Listing
// every 250 ms stands in for the controllers' watches.
package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/actions/scaleset"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

var (
	ersGVR = schema.GroupVersionResource{Group: "actions.github.com", Version: "v1alpha1", Resource: "ephemeralrunnersets"}
	erGVR  = schema.GroupVersionResource{Group: "actions.github.com", Version: "v1alpha1", Resource: "ephemeralrunners"}
)

const patchIDKey = "actions.github.com/patch-id"

type arcController struct {
	s         *sim
	dyn       dynamic.Interface
	configURL string
	mu        sync.Mutex
	created   int // EphemeralRunners made
	deleted   int // idle EphemeralRunners deleted on a scale-down
	refused   int // idle runners the service refused to remove
}

func (a *arcController) state() map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return map[string]any{"created": a.created, "deletedIdle": a.deleted, "removeRefused": a.refused}
}

func (a *arcController) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := a.reconcile(ctx); err != nil && ctx.Err() == nil {
			a.s.logger.Printf("arc: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// The Actions Service as ARC's controller reaches it: the GitHub configuration URL of the runner
// spec, the token of the Secret it names (key github_token, as ARC's chart documents).
func (a *arcController) actions(ctx context.Context, spec map[string]any) (*scaleset.Client, error) {
	secretName, _ := spec["githubConfigSecret"].(string)
	url, _ := spec["githubConfigUrl"].(string)
	sec, err := a.s.client.CoreV1().Secrets(a.s.ns).Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("githubConfigSecret %q: %w", secretName, err)
	}
	return scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL: url, PersonalAccessToken: string(sec.Data["github_token"]),
	})
}

func (a *arcController) reconcile(ctx context.Context) error {
	sets, err := a.dyn.Resource(ersGVR).Namespace(a.s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	runners, err := a.dyn.Resource(erGVR).Namespace(a.s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range runners.Items {
		if err := a.reconcileRunner(ctx, &runners.Items[i]); err != nil {
			a.s.logger.Printf("arc: runner %s: %v", runners.Items[i].GetName(), err)
		}
	}
	for i := range sets.Items {
		if err := a.reconcileSet(ctx, &sets.Items[i], runners.Items); err != nil {
			a.s.logger.Printf("arc: set %s: %v", sets.Items[i].GetName(), err)
		}
	}
	return nil
}

func ownedBy(o *unstructured.Unstructured, uid types.UID) bool {
	for _, r := range o.GetOwnerReferences() {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func (a *arcController) reconcileSet(ctx context.Context, set *unstructured.Unstructured, all []unstructured.Unstructured) error {
	if set.GetDeletionTimestamp() != nil {
		return nil
	}
	replicas, _, _ := unstructured.NestedInt64(set.Object, "spec", "replicas")
	patchID, _, _ := unstructured.NestedInt64(set.Object, "spec", "patchID")
	var pending, running, failed, finished []*unstructured.Unstructured
	latest := int64(0)
	for i := range all {
		r := &all[i]
		if !ownedBy(r, set.GetUID()) {
			continue
		}
		if id, err := strconv.ParseInt(r.GetAnnotations()[patchIDKey], 10, 64); err == nil && id > latest {
			latest = id
		}
		if r.GetDeletionTimestamp() != nil {
			continue
		}
		switch phase, _, _ := unstructured.NestedString(r.Object, "status", "phase"); phase {
		case "Running":
			running = append(running, r)
		case "Succeeded":
			finished = append(finished, r)
		case "Failed":
			failed = append(failed, r)
		case "Outdated":
		default:
			pending = append(pending, r)
		}
	}
	total := int64(len(pending) + len(running) + len(failed))
	if patchID != 0 && patchID == latest {
		return nil
	}
	for _, r := range finished {
		_ = a.dyn.Resource(erGVR).Namespace(a.s.ns).Delete(ctx, r.GetName(), metav1.DeleteOptions{})
	}
	switch {
	case total < replicas:
		spec, _, _ := unstructured.NestedMap(set.Object, "spec", "ephemeralRunnerSpec")
		labels := map[string]string{}
		for k, v := range set.GetLabels() {
			labels[k] = v
		}
		labels["app.kubernetes.io/component"] = "runner"
		for n := total; n < replicas; n++ {
			er := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "actions.github.com/v1alpha1", "kind": "EphemeralRunner",
				"spec": spec}}
			er.SetGenerateName(set.GetName() + "-runner-")
			er.SetLabels(labels)
			er.SetAnnotations(map[string]string{patchIDKey: strconv.FormatInt(patchID, 10)})
			yes := true
			er.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "actions.github.com/v1alpha1", Kind: "EphemeralRunnerSet",
				Name: set.GetName(), UID: set.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}})
			if _, err := a.dyn.Resource(erGVR).Namespace(a.s.ns).Create(ctx, er, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create EphemeralRunner: %w", err)
			}
			a.mu.Lock()
			a.created++
			a.mu.Unlock()
		}
	case patchID == 0 && total > replicas:
		// Oldest first, pending before running, as ARC's stepper walks them.
		idle := append(append([]*unstructured.Unstructured{}, pending...), running...)
		sort.SliceStable(idle, func(i, j int) bool {
			return idle[i].GetCreationTimestamp().Time.Before(idle[j].GetCreationTimestamp().Time)
		})
		excess := total - replicas
		for _, r := range idle {
			if excess == 0 {
				break
			}
			id, _, _ := unstructured.NestedInt64(r.Object, "status", "runnerId")
			job, _, _ := unstructured.NestedInt64(r.Object, "status", "jobRequestId")
			if id == 0 || job > 0 {
				continue // not registered yet, or running a job
			}
			spec, _, _ := unstructured.NestedMap(r.Object, "spec")
			c, err := a.actions(ctx, spec)
			if err != nil {
				return err
			}
			if err := c.RemoveRunner(ctx, id); err != nil {
				a.mu.Lock()
				a.refused++
				a.mu.Unlock()
				continue // a job was assigned to it meanwhile: it stays
			}
			a.endRunner(ctx, r.GetName())
			a.mu.Lock()
			a.deleted++
			a.mu.Unlock()
			excess--
		}
	}
	status := map[string]any{"currentReplicas": total, "pendingEphemeralRunners": int64(len(pending)),
		"runningEphemeralRunners": int64(len(running)), "failedEphemeralRunners": int64(len(failed)), "phase": "Running"}
	_ = unstructured.SetNestedMap(set.Object, status, "status")
	_, err := a.dyn.Resource(ersGVR).Namespace(a.s.ns).UpdateStatus(ctx, set, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil // the next pass reads it again
	}
	return err
}

// endRunner deletes an EphemeralRunner with its pod and its Secret (ARC's finalizers do the two).
func (a *arcController) endRunner(ctx context.Context, name string) {
	_ = a.s.client.CoreV1().Pods(a.s.ns).Delete(ctx, name, metav1.DeleteOptions{})
	_ = a.s.client.CoreV1().Secrets(a.s.ns).Delete(ctx, name, metav1.DeleteOptions{})
	_ = a.dyn.Resource(erGVR).Namespace(a.s.ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (a *arcController) setStatus(ctx context.Context, r *unstructured.Unstructured, fields map[string]any) error {
	for k, v := range fields {
		_ = unstructured.SetNestedField(r.Object, v, "status", k)
	}
	updated, err := a.dyn.Resource(erGVR).Namespace(a.s.ns).UpdateStatus(ctx, r, metav1.UpdateOptions{})
	if err == nil {
		*r = *updated
	}
	return err
}

func (a *arcController) reconcileRunner(ctx context.Context, r *unstructured.Unstructured) error {
	if r.GetDeletionTimestamp() != nil {
		return nil
	}
	name := r.GetName()
	pod, err := a.s.client.CoreV1().Pods(a.s.ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		phase, _, _ := unstructured.NestedString(r.Object, "status", "phase")
		switch {
		case pod.Status.Phase == corev1.PodSucceeded:
			a.endRunner(ctx, name) // the runner exited 0 after its job
		case string(pod.Status.Phase) != phase && pod.Status.Phase != "":
			return a.setStatus(ctx, r, map[string]any{"phase": string(pod.Status.Phase)})
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	spec, _, _ := unstructured.NestedMap(r.Object, "spec")
	secret, err := a.s.client.CoreV1().Secrets(a.s.ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		setID, _, _ := unstructured.NestedInt64(r.Object, "spec", "runnerScaleSetId")
		c, err := a.actions(ctx, spec)
		if err != nil {
			return err
		}
		jit, err := c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: name, WorkFolder: "/home/runner/_work"}, int(setID))
		if err != nil {
			return fmt.Errorf("JIT config: %w", err)
		}
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.s.ns},
			Data: map[string][]byte{"jitToken": []byte(jit.EncodedJITConfig)}}
		if secret, err = a.s.client.CoreV1().Secrets(a.s.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := a.setStatus(ctx, r, map[string]any{"runnerId": int64(jit.Runner.ID), "runnerName": jit.Runner.Name}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	var podSpec corev1.PodSpec
	if raw, ok := spec["spec"].(map[string]any); !ok {
		return fmt.Errorf("spec.spec is not a pod spec")
	} else if err := fromUnstructured(raw, &podSpec); err != nil {
		return fmt.Errorf("spec.spec: %w", err)
	}
	for i := range podSpec.Containers {
		if podSpec.Containers[i].Name == "runner" {
			podSpec.Containers[i].Env = append(podSpec.Containers[i].Env,
				corev1.EnvVar{Name: "ACTIONS_RUNNER_INPUT_JITCONFIG", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: "jitToken"}}},
				corev1.EnvVar{Name: "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT", Value: "actions-runner-controller/stand-in"},
				corev1.EnvVar{Name: "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE", Value: "1"})
		}
	}
	labels := map[string]string{}
	for k, v := range r.GetLabels() {
		labels[k] = v
	}
	labels["actions-ephemeral-runner"] = string(corev1.ConditionTrue)
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.s.ns, Labels: labels, Annotations: r.GetAnnotations(),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "actions.github.com/v1alpha1", Kind: "EphemeralRunner", Name: name,
			UID: r.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}}}, Spec: podSpec}
	if _, err := a.s.client.CoreV1().Pods(a.s.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pod: %w", err)
	}
	return nil
}

func fromUnstructured(raw map[string]any, out *corev1.PodSpec) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(raw, out)
}
