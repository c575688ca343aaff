// What a node's kubelet does that kwok's nodes lack: it labels its node kubernetes.io/hostname with
// its hostname, the node's name (kubelet --hostname-override aside). Karpenter's kwok provider
// leaves the NodeClaim's name there, which a real node's kubelet replaces when it registers; the
// container hook (k8s, ACTIONS_RUNNER_USE_KUBE_SCHEDULER) pins a workflow pod to its runner's node
// by that label and the node's name, so without this no workflow pod could be placed.
package main

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

const hostnameLabel = "kubernetes.io/hostname"

func (s *sim) labelHostname(ctx context.Context, n *corev1.Node) {
	if n.Labels[hostnameLabel] == n.Name {
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{hostnameLabel: n.Name}}})
	if _, err := s.client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		s.logger.Printf("node %s: its hostname label: %v", n.Name, err)
	}
}

func (s *sim) startKubeletLabels(ctx context.Context, cluster informers.SharedInformerFactory) {
	on := func(o any) {
		if n, ok := o.(*corev1.Node); ok {
			go s.labelHostname(ctx, n.DeepCopy())
		}
	}
	_, _ = cluster.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: on, UpdateFunc: func(_, n any) { on(n) },
	})
}
