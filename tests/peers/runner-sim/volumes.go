// The cloud's disks, for containerMode kubernetes: a StorageClass (WaitForFirstConsumer, as a
// cloud's block storage class is) and its provisioner, in the test cluster, which has none. When the
// scheduler has picked a node for a pod whose claim is of that class (the ephemeral `work` volume
// ARC's chart gives a runner pod, PVC <pod>-work), it annotates the claim with the node; the
// provisioner then makes a PersistentVolume on that node (a local volume: kwok's nodes mount
// nothing) pre-bound to the claim, and kube-controller-manager's PV controller binds the two. The
// pod is bound to its node only then, as with a real disk. A released volume is deleted (reclaim
// policy Delete). Claims of other classes and other namespaces are not this simulator's.
package main

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

const (
	workClass       = "e2e-work"
	workProvisioner = "e2e.headroom.dev/work"
	selectedNode    = "volume.kubernetes.io/selected-node"
)

// ensureStorageClass makes the class once per cluster (the simulators of parallel tests race to it).
func (s *sim) ensureStorageClass(ctx context.Context) error {
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	del := corev1.PersistentVolumeReclaimDelete
	_, err := s.client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: workClass},
		Provisioner:       workProvisioner,
		VolumeBindingMode: &wait,
		ReclaimPolicy:     &del,
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// provision makes the volume of one claim the scheduler has given a node; a second call for the same
// claim finds the volume made (AlreadyExists) and does nothing.
func (s *sim) provision(ctx context.Context, c *corev1.PersistentVolumeClaim) {
	node := c.Annotations[selectedNode]
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != workClass || node == "" || c.Spec.VolumeName != "" ||
		c.DeletionTimestamp != nil {
		return
	}
	// The node's hostname label, which a local volume's node affinity names (Karpenter's kwok nodes'
	// differs from their name).
	hostname := node
	if n, err := s.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil && n.Labels["kubernetes.io/hostname"] != "" {
		hostname = n.Labels["kubernetes.io/hostname"]
	}
	size := c.Spec.Resources.Requests[corev1.ResourceStorage]
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(c.UID), Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": workProvisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   c.Spec.AccessModes,
			StorageClassName:              workClass,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/e2e-work/" + string(c.UID)}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{hostname}}}}}}},
		},
	}
	// The API server may be restarting (the chaos suite): tried again for a minute.
	for deadline := time.Now().Add(time.Minute); ctx.Err() == nil && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		_, err := s.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		if err == nil {
			s.mu.Lock()
			s.provisioned++
			s.mu.Unlock()
		}
		if err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		s.logger.Printf("volume for claim %s: %v", c.Name, err)
	}
}

// release deletes a volume of this class whose claim is gone (Released).
func (s *sim) release(ctx context.Context, pv *corev1.PersistentVolume) {
	if pv.Spec.StorageClassName != workClass || pv.Status.Phase != corev1.VolumeReleased || pv.Spec.ClaimRef == nil ||
		pv.Spec.ClaimRef.Namespace != s.ns {
		return
	}
	if err := s.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		s.logger.Printf("released volume %s: %v", pv.Name, err)
	}
}

// startProvisioner watches this namespace's claims and the cluster's volumes.
func (s *sim) startProvisioner(ctx context.Context, claims, volumes informers.SharedInformerFactory) error {
	if err := s.ensureStorageClass(ctx); err != nil {
		return err
	}
	onClaim := func(o any) {
		if c, ok := o.(*corev1.PersistentVolumeClaim); ok {
			go s.provision(ctx, c.DeepCopy())
		}
	}
	_, _ = claims.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onClaim, UpdateFunc: func(_, n any) { onClaim(n) },
	})
	onVolume := func(o any) {
		if pv, ok := o.(*corev1.PersistentVolume); ok {
			go s.release(ctx, pv.DeepCopy())
		}
	}
	_, _ = volumes.Core().V1().PersistentVolumes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onVolume, UpdateFunc: func(_, n any) { onVolume(n) },
	})
	return nil
}
