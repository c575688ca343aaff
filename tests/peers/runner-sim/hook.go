// The runner's side of a job, under the contract a real runner has: it sees only what its pod gives
// it (the runner container's env, the files its volumes mount, its ServiceAccount's token), and the
// container hook (actions/runner-container-hooks, packages/k8s) makes the workflow pod with that
// token. Anything the pod lacks fails the job the way it fails a real one: no JIT config, no hook
// in the image at the named path, no ACTIONS_RUNNER_POD_NAME, no token mounted, a permission the
// hook checks at start (SelfSubjectAccessReview) missing, a hook template that is not mounted.
//
// The "kubelet" part (env from fieldRef/secretKeyRef/configMapKeyRef, a ConfigMap volume's files, the
// projected token from the TokenRequest API) uses the cluster's admin client, as the kubelet has its
// own rights; everything the hook does goes through a client holding only the pod's token.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"path"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/yaml"
)

// The hooks the runner image ships (actions/runner images/Dockerfile): runner-container-hooks 0.7.0
// in k8s (ARC's `kubernetes` mode, a PVC shared with the runner), 0.8.x in k8s-novolume.
const (
	hookKubernetes = "/home/runner/k8s/index.js"
	hookNoVolume   = "/home/runner/k8s-novolume/index.js"
)

// jobFailure is a job the runner fails, with the reason a real runner's log would give.
type jobFailure struct{ why string }

func (f jobFailure) Error() string { return f.why }

func failf(format string, args ...any) error { return jobFailure{fmt.Sprintf(format, args...)} }

// denied: a permission the hook checks is refused. Final for a real hook; here retried for a minute
// first, since an API server just restarted (the chaos suite) refuses everything until its RBAC
// caches have synced, and a missing rule then still fails the job, a minute later.
type denied struct{ jobFailure }

func deniedf(format string, args ...any) error {
	return denied{jobFailure{fmt.Sprintf(format, args...)}}
}

// runnerView: what one runner process sees of its pod. Played from outside (viewOf: the pod's spec
// resolved as the kubelet would), or the runner's own container on a real node (inpod.go: its env,
// its files, its mounted token).
type runnerView struct {
	pod       *corev1.Pod // outside: the pod; in a pod: its name, namespace (and node, once read)
	container *corev1.Container
	env       map[string]string
	files     map[string]map[string]string // the ConfigMap volumes' files, by volume name (mountVolumes)
	logger    *log.Logger
	// How the hook reads a file of the runner container, gets a client holding the pod's token, and
	// learns that the runner's pod went (outside only: inside, the process dies with it).
	readFile func(path string) (string, error)
	client   func(ctx context.Context) (*rest.Config, error)
	gone     func() string
}

// jobSpec: what the job message tells the runner of the workflow's job: its container image (empty:
// the simulator's busybox:1.36) and the steps (shell commands) the hook runs in it.
type jobSpec struct {
	Container string   `json:"container"`
	Steps     []string `json:"steps"`
}

// viewOf resolves the runner container's env as the kubelet would (literal values, fieldRef,
// secretKeyRef, configMapKeyRef); a reference that cannot be resolved leaves the pod unstartable,
// which the kubelet retries: here, an error. The ConfigMap volumes are written then too.
func (s *sim) viewOf(ctx context.Context, pod *corev1.Pod) (*runnerView, error) {
	v := &runnerView{pod: pod, env: map[string]string{}, logger: s.logger}
	v.readFile = func(file string) (string, error) { return s.readMountedFile(v, file) }
	v.client = func(ctx context.Context) (*rest.Config, error) { return s.hookClient(ctx, pod) }
	v.gone = func() string { return s.runnerPodGone(pod.Name) }
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "runner" {
			v.container = &pod.Spec.Containers[i]
		}
	}
	if v.container == nil {
		return nil, failf("no container named runner")
	}
	for _, e := range v.container.Env {
		switch {
		case e.ValueFrom == nil:
			v.env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v.env[e.Name] = pod.Name
			case "metadata.namespace":
				v.env[e.Name] = pod.Namespace
			case "spec.nodeName":
				v.env[e.Name] = pod.Spec.NodeName
			case "spec.serviceAccountName":
				v.env[e.Name] = pod.Spec.ServiceAccountName
			default:
				return nil, failf("env %s: fieldRef %s is not one the simulator resolves", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			sec, err := s.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("env %s: secret %s: %w", e.Name, ref.Name, err)
			}
			val, ok := sec.Data[ref.Key]
			if !ok {
				return nil, failf("env %s: secret %s has no key %s", e.Name, ref.Name, ref.Key)
			}
			v.env[e.Name] = string(val)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, err := s.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("env %s: configmap %s: %w", e.Name, ref.Name, err)
			}
			v.env[e.Name] = cm.Data[ref.Key]
		}
	}
	if err := s.mountVolumes(ctx, v); err != nil {
		return nil, err
	}
	return v, nil
}

// mountVolumes materialises the runner container's ConfigMap volumes as the kubelet does before the
// container starts (volume name -> path in the volume -> content; `items` project chosen keys at
// chosen paths). A ConfigMap that cannot be read leaves the pod unstartable, which the kubelet
// retries (an error here; viewOf's caller retries); an optional one that is missing is an empty dir.
// After the start the files are local: reading them needs no API server.
func (s *sim) mountVolumes(ctx context.Context, v *runnerView) error {
	v.files = map[string]map[string]string{}
	for _, m := range v.container.VolumeMounts {
		for _, vol := range v.pod.Spec.Volumes {
			if vol.Name != m.Name || vol.ConfigMap == nil {
				continue
			}
			if _, done := v.files[vol.Name]; done {
				continue
			}
			files := map[string]string{}
			cm, err := s.client.CoreV1().ConfigMaps(v.pod.Namespace).Get(ctx, vol.ConfigMap.Name, metav1.GetOptions{})
			switch {
			case err != nil && apierrors.IsNotFound(err) && vol.ConfigMap.Optional != nil && *vol.ConfigMap.Optional:
			case err != nil:
				return fmt.Errorf("volume %s: configmap %s: %w", vol.Name, vol.ConfigMap.Name, err)
			case len(vol.ConfigMap.Items) == 0:
				for k, text := range cm.Data {
					files[k] = text
				}
			default:
				for _, it := range vol.ConfigMap.Items {
					text, ok := cm.Data[it.Key]
					if !ok {
						return fmt.Errorf("volume %s: configmap %s has no key %s", vol.Name, vol.ConfigMap.Name, it.Key)
					}
					files[it.Path] = text
				}
			}
			v.files[vol.Name] = files
		}
	}
	return nil
}

// readMountedFile: the content of `file` in the runner container, from the ConfigMap volume mounted
// over it (the only kind of volume a hook template comes from here; its files were written when the
// container started); an error when nothing mounts it.
func (s *sim) readMountedFile(v *runnerView, file string) (string, error) {
	for _, m := range v.container.VolumeMounts {
		dir := strings.TrimSuffix(m.MountPath, "/")
		var key string
		switch {
		case m.SubPath != "" && file == dir:
			key = m.SubPath
		case m.SubPath == "" && strings.HasPrefix(file, dir+"/"):
			key = strings.TrimPrefix(file, dir+"/")
		default:
			continue
		}
		files, ok := v.files[m.Name]
		if !ok {
			for _, vol := range v.pod.Spec.Volumes {
				if vol.Name == m.Name {
					return "", failf("%s: volume %s is not a ConfigMap (the simulator reads only those)", file, vol.Name)
				}
			}
			return "", failf("%s: mount %s names no volume of the pod", file, m.Name)
		}
		text, ok := files[key]
		if !ok {
			return "", failf("ENOENT: no such file or directory, open '%s' (volume %s has no file %s)", file, m.Name, key)
		}
		return text, nil
	}
	return "", failf("ENOENT: no such file or directory, open '%s' (no volume mounted there)", file)
}

// hookClient: a client configuration holding only the pod's ServiceAccount token, as the kubelet
// projects it (a TokenRequest bound to the pod). None when the pod mounts no token.
func (s *sim) hookClient(ctx context.Context, pod *corev1.Pod) (*rest.Config, error) {
	if pod.Spec.AutomountServiceAccountToken != nil && !*pod.Spec.AutomountServiceAccountToken {
		return nil, failf("no service account token at /var/run/secrets/kubernetes.io/serviceaccount/token (automountServiceAccountToken: false)")
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	expiry := int64(3600)
	tr, err := s.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for service account %s: %w", sa, err) // NotFound: the pod or the account is gone
	}
	return &rest.Config{Host: s.config.Host, BearerToken: tr.Status.Token, QPS: 50, Burst: 100,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.config.TLSClientConfig.CAData, CAFile: s.config.TLSClientConfig.CAFile}}, nil
}

type permission struct{ group, resource, subresource, verb string }

// requiredPermissions: what the hook checks with SelfSubjectAccessReviews before it does anything
// (runner-container-hooks packages/k8s/src/k8s/index.ts); v0.7.0 (k8s) also runs steps as Jobs.
func requiredPermissions(hook string) []permission {
	out := []permission{}
	for _, v := range []string{"get", "list", "create", "delete"} {
		out = append(out, permission{"", "pods", "", v})
	}
	out = append(out, permission{"", "pods", "exec", "get"}, permission{"", "pods", "exec", "create"})
	for _, v := range []string{"get", "list", "watch"} {
		out = append(out, permission{"", "pods", "log", v})
	}
	for _, v := range []string{"get", "list", "create", "delete"} {
		out = append(out, permission{"", "secrets", "", v})
	}
	if hook == hookKubernetes {
		for _, v := range []string{"get", "list", "create", "delete"} {
			out = append(out, permission{"batch", "jobs", "", v})
		}
	}
	return out
}

func checkPermissions(ctx context.Context, hc *kubernetes.Clientset, ns, hook string) error {
	for _, p := range requiredPermissions(hook) {
		r, err := hc.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Group: p.group, Resource: p.resource, Subresource: p.subresource, Verb: p.verb}},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("access review: %w", err)
		}
		if !r.Status.Allowed {
			what := p.resource
			if p.subresource != "" {
				what += "/" + p.subresource
			}
			return deniedf("The Service account needs the following permissions [{\"group\":%q,\"verb\":%q,\"resource\":%q}] on the pod resource in the '%s' namespace", p.group, p.verb, what, ns)
		}
	}
	return nil
}

// jobPod: the workflow pod as prepare_job builds it before the template is merged (name: the runner
// pod's cut to 54 characters + "-workflow", label runner-pod).
func jobPod(v *runnerView, podName, hook string, spec jobSpec) *corev1.Pod {
	name := podName
	if len(name) > 63-len("-workflow") {
		name = name[:63-len("-workflow")]
	}
	image := spec.Container
	if image == "" {
		image = "busybox:1.36"
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-workflow", Labels: map[string]string{"runner-pod": podName}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "job", Image: image, Command: []string{"tail"}, Args: []string{"-f", "/dev/null"},
				Env: []corev1.EnvVar{{Name: "GITHUB_ACTIONS", Value: "true"}, {Name: "CI", Value: "true"}}}},
		},
	}
	if hook == hookNoVolume {
		image := v.env["ACTIONS_RUNNER_IMAGE"]
		if image == "" {
			image = "ghcr.io/actions/actions-runner:latest"
		}
		fsGroup := int64(1001)
		p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &fsGroup}
		for _, n := range []string{"externals", "github", "work"} {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: n, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
		uid := int64(1001)
		p.Spec.InitContainers = []corev1.Container{{Name: "fs-init", Image: image, Command: []string{"sh", "-c", "mkdir -p /mnt/externals /mnt/work /mnt/github"},
			SecurityContext: &corev1.SecurityContext{RunAsUser: &uid, RunAsGroup: &uid},
			VolumeMounts:    []corev1.VolumeMount{{Name: "externals", MountPath: "/mnt/externals"}, {Name: "work", MountPath: "/mnt/work"}, {Name: "github", MountPath: "/mnt/github"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "externals", MountPath: "/__e"}, {Name: "work", MountPath: "/__w"}, {Name: "github", MountPath: "/github"}}
		return p
	}
	// v0.7.0 (k8s): the runner's work volume, and the runner's node unless told to use the scheduler.
	claim := v.env["ACTIONS_RUNNER_CLAIM_NAME"]
	if claim == "" {
		claim = podName + "-work"
	}
	p.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/__w"}}
	if v.env["ACTIONS_RUNNER_USE_KUBE_SCHEDULER"] == "true" {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{v.pod.Spec.NodeName}}}}}}}}
	} else {
		p.Spec.NodeName = v.pod.Spec.NodeName
	}
	return p
}

// mergeTemplate applies a hook template (a PodTemplateSpec) as the hook does: metadata labels and
// annotations added over the hook's; under spec, `containers` entries named `$job` patch the job
// container (env, volumeMounts and ports appended, image refused, name kept, the rest replaced) and
// entries not named `$…` are added; `volumes` appended; every other key replaces the hook's value.
func mergeTemplate(p *corev1.Pod, text string) (*corev1.Pod, error) {
	var tmpl map[string]any
	if err := yaml.Unmarshal([]byte(text), &tmpl); err != nil {
		return nil, failf("hook template: %v", err)
	}
	base, _ := json.Marshal(p)
	var pod map[string]any
	_ = json.Unmarshal(base, &pod)
	if md, ok := tmpl["metadata"].(map[string]any); ok {
		pmd, _ := pod["metadata"].(map[string]any)
		for _, k := range []string{"labels", "annotations"} {
			if from, ok := md[k].(map[string]any); ok {
				to, _ := pmd[k].(map[string]any)
				if to == nil {
					to = map[string]any{}
				}
				for kk, vv := range from {
					to[kk] = vv
				}
				pmd[k] = to
			}
		}
	}
	spec, _ := pod["spec"].(map[string]any)
	if ts, ok := tmpl["spec"].(map[string]any); ok {
		for k, val := range ts {
			switch k {
			case "containers":
				list, _ := val.([]any)
				cs, _ := spec["containers"].([]any)
				for _, c := range list {
					cm, _ := c.(map[string]any)
					name, _ := cm["name"].(string)
					if name == "$job" {
						job, _ := cs[0].(map[string]any)
						for ck, cv := range cm {
							switch ck {
							case "name", "image":
							case "env", "volumeMounts", "ports":
								have, _ := job[ck].([]any)
								add, _ := cv.([]any)
								job[ck] = append(have, add...)
							default:
								job[ck] = cv
							}
						}
					} else if !strings.HasPrefix(name, "$") {
						cs = append(cs, c)
					}
				}
				spec["containers"] = cs
			case "volumes":
				have, _ := spec["volumes"].([]any)
				add, _ := val.([]any)
				spec["volumes"] = append(have, add...)
			default:
				spec[k] = val
			}
		}
	}
	merged, _ := json.Marshal(pod)
	out := &corev1.Pod{}
	if err := json.Unmarshal(merged, out); err != nil {
		return nil, failf("hook template: the merged pod: %v", err)
	}
	return out, nil
}

// hookJob is one job through the container hook: prepare_job (the workflow pod, made and waited
// for Running with the pod's token), the job's run, cleanup_job (its pods deleted by label).
// `onRunning` is told when the workflow pod runs, and on which node; the job then runs `duration`.
func hookJob(ctx context.Context, v *runnerView, hook string, spec jobSpec, duration time.Duration, onCreated func(), onRunning func(node string)) error {
	podName := v.env["ACTIONS_RUNNER_POD_NAME"]
	if podName == "" {
		return failf("'ACTIONS_RUNNER_POD_NAME' env is required, please contact your self hosted runner administrator")
	}
	ns := v.env["ACTIONS_RUNNER_KUBERNETES_NAMESPACE"]
	if ns == "" {
		ns = v.pod.Namespace // the token's namespace file
	}
	// The token is the kubelet's (mounted before the runner starts); the permission checks are the
	// hook's. Both through an API server restart (the chaos suite restarts it mid-burst): retried for a
	// minute, as the workflow pod's create is; a refusal is final.
	var hc *kubernetes.Clientset
	var hcfg *rest.Config
	for deadline := time.Now().Add(60 * time.Second); ; {
		cfg, err := v.client(ctx)
		var c *kubernetes.Clientset
		if err == nil {
			c, err = kubernetes.NewForConfig(cfg)
		}
		if err == nil {
			err = checkPermissions(ctx, c, ns, hook)
		}
		if err == nil {
			hc, hcfg = c, cfg
			break
		}
		_, refused := err.(denied)
		if _, final := err.(jobFailure); (final && !refused) || apierrors.IsNotFound(err) || ctx.Err() != nil || time.Now().After(deadline) {
			if refused {
				return err.(denied).jobFailure
			}
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
	if hook == hookKubernetes && v.pod.Spec.NodeName == "" {
		// In a pod: the hook reads its own pod for the node its workflow pod must share.
		self, err := hc.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return failf("failed to get the runner's pod %s: %v", podName, err)
		}
		v.pod.Spec.NodeName = self.Spec.NodeName
	}
	wf := jobPod(v, podName, hook, spec)
	if file := v.env["ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"]; file != "" {
		text, err := v.readFile(file)
		if err != nil {
			return err
		}
		if wf, err = mergeTemplate(wf, text); err != nil {
			return err
		}
	}
	timeout := 600 * time.Second
	if t, err := strconv.Atoi(v.env["ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS"]); err == nil && t > 0 {
		timeout = time.Duration(t) * time.Second
	}
	// The API server may be restarting (the chaos suite restarts it mid-burst): retried for a minute.
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, err := hc.CoreV1().Pods(ns).Create(ctx, wf, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			break
		}
		// Forbidden too is retried (a restarted API server's RBAC caches), as the permission checks are.
		if apierrors.IsInvalid(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return failf("failed to create job pod: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	onCreated()
	defer cleanupJob(v.logger, hc, ns, podName)
	// The hook polls the pod's phase; Pending and Running are waited through, any other ends the job.
	node := ""
	for deadline := time.Now().Add(timeout); ; {
		p, err := hc.CoreV1().Pods(ns).Get(ctx, wf.Name, metav1.GetOptions{})
		if err == nil && running(p) {
			node = p.Spec.NodeName
			break
		}
		if err == nil && p.Status.Phase != corev1.PodPending && p.Status.Phase != corev1.PodRunning {
			return failf("pod failed to come online with error: phase %s", p.Status.Phase)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if why := v.gone(); why != "" {
			return failf("the runner's pod went while the hook waited for the job pod (%s): the runner process died with it", why)
		}
		if time.Now().After(deadline) {
			return failf("pod failed to come online with error: timed out after %s", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	onRunning(node)
	// run_script_step: each step through the pod's exec subresource, in the job container.
	for i, step := range spec.Steps {
		if err := execStep(ctx, v, hc, hcfg, ns, wf.Name, step); err != nil {
			return failf("step %d (%s): %v", i+1, step, err)
		}
	}
	time.Sleep(duration)
	return nil
}

// cleanupJob: the pods labelled runner-pod=<the runner pod>, deleted at once (prunePods), with the
// pod's token; retried for a minute through an API server restart.
func cleanupJob(logger *log.Logger, hc *kubernetes.Clientset, ns, podName string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	zero := int64(0)
	for ctx.Err() == nil {
		list, err := hc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "runner-pod=" + podName})
		if err == nil {
			failed := false
			for _, p := range list.Items {
				if err := hc.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
					failed = true
				}
			}
			if !failed {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	logger.Printf("runner %s: cleanup_job did not finish within a minute", path.Base(podName))
}

// execStep runs one step as the hook's run_script_step does: `sh -e -c STEP` in the job container,
// through the pod's exec subresource over a WebSocket (what the hook's JavaScript client speaks),
// with the pod's token; the step's output goes to the runner's log, a non-zero exit fails it.
func execStep(ctx context.Context, v *runnerView, hc *kubernetes.Clientset, cfg *rest.Config, ns, pod, step string) error {
	req := hc.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "job", Command: []string{"sh", "-e", "-c", step}, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	var stdout, stderr bytes.Buffer // two streams, written concurrently
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	for _, out := range []*bytes.Buffer{&stdout, &stderr} {
		if out.Len() > 0 {
			for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
				v.logger.Printf("step | %s", line)
			}
		}
	}
	return err
}
