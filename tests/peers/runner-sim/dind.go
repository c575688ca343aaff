package main

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// dockerDaemon is what the runner finds at DOCKER_HOST (unix://PATH) in a dind runner pod, as ARC's
// chart makes it: a privileged container of the pod running dockerd (a sidecar: an init container
// restarted Always, or a plain container), with the socket's directory a volume both it and the
// runner container mount there. Anything else, the runner's `docker` fails as it would for real.
func dockerDaemon(pod *corev1.Pod, v *runnerView, host string) error {
	refused := fmt.Errorf("Cannot connect to the Docker daemon at %s. Is the docker daemon running?", host)
	sock, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		return fmt.Errorf("DOCKER_HOST %s: the simulator plays a unix socket only", host)
	}
	dir := path.Dir(sock)
	volume := ""
	for _, m := range v.container.VolumeMounts {
		if path.Clean(m.MountPath) == dir {
			volume = m.Name
		}
	}
	if volume == "" {
		return refused
	}
	var candidates []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			candidates = append(candidates, c)
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != "runner" {
			candidates = append(candidates, c)
		}
	}
	for _, c := range candidates {
		daemon := false
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			daemon = daemon || a == "dockerd"
		}
		shared := false
		for _, m := range c.VolumeMounts {
			shared = shared || (m.Name == volume && path.Clean(m.MountPath) == dir)
		}
		if !daemon || !shared {
			continue
		}
		if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
			return fmt.Errorf("%s: dockerd in container %s exited: it needs a privileged container", host, c.Name)
		}
		return nil
	}
	return refused
}
