// ARC's listener as ARC deploys it for one AutoscalingRunnerSet, with its scaler: the `listener`
// package of github.com/actions/scaleset (the library ARC's listener uses) holding the scale set's
// message session and advertising maxRunners, and a scaler written from gha-runner-scale-set
// 0.14's cmd/ghalistener/scaler that merge-patches the EphemeralRunnerSet's spec.replicas and
// spec.patchID after each batch of messages:
//
//   - replicas = min(minRunners + the service's count of assigned jobs, maxRunners);
//   - a new patchID for each patch (the controller acts on a patch only when it differs from the
//     newest its runners carry), and patchID 0 when nothing is assigned and no job completed in
//     the batch (the controller may then delete idle runners);
//   - no patch when the count did not change and no job completed (a completed job's runner is
//     deleted by ARC's controller and must be replaced up to the count).
//
// ARC's EphemeralRunnerSet and EphemeralRunner controllers are played by the runner simulator
// (tests/peers/runner-sim --arc-controller). The job-outcomes benchmark (bench/job_outcomes.cpp)
// runs this beside headroom on the same trace.
//
//	arc-listener --url http://127.0.0.1:PORT/org --token PAT --name NAME --kubeconfig F
//	             --namespace NS --runner-set ERS [--label L] [--min-runners 0] [--max-runners 10]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/actions/scaleset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"headroom.test/scaleset-listener/internal/listen"
)

var ersGVR = schema.GroupVersionResource{Group: "actions.github.com", Version: "v1alpha1", Resource: "ephemeralrunnersets"}

type scaler struct {
	dyn                    dynamic.Interface
	ns, set                string
	minRunners, maxRunners int
	mu                     sync.Mutex
	patchSeq               int64
	lastPatch              int
	completed              int // jobs completed since the last patch decision
}

func (s *scaler) HandleJobStarted(context.Context, *scaleset.JobStarted) error { return nil }
func (s *scaler) HandleJobCompleted(context.Context, *scaleset.JobCompleted) error {
	s.mu.Lock()
	s.completed++
	s.mu.Unlock()
	return nil
}

func (s *scaler) HandleDesiredRunnerCount(ctx context.Context, count int) (int, error) {
	s.mu.Lock()
	completed := s.completed
	s.completed = 0
	target := min(s.minRunners+count, s.maxRunners)
	if target == s.lastPatch && completed == 0 {
		s.mu.Unlock()
		return target, nil
	}
	s.patchSeq++
	patchID := s.patchSeq
	if count == 0 && completed == 0 {
		patchID = 0
	}
	s.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": target, "patchID": patchID}})
	if _, err := s.dyn.Resource(ersGVR).Namespace(s.ns).Patch(ctx, s.set, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return 0, fmt.Errorf("patch EphemeralRunnerSet %s/%s: %w", s.ns, s.set, err)
	}
	s.mu.Lock()
	s.lastPatch = target
	s.mu.Unlock()
	log.Printf("patched %s/%s: replicas %d, patchID %d (assigned %d, completed %d)", s.ns, s.set, target, patchID, count, completed)
	return target, nil
}

func main() {
	url := flag.String("url", "", "the GitHub configuration URL")
	token := flag.String("token", "", "a personal access token")
	name := flag.String("name", "", "the scale set's name (and its label)")
	label := flag.String("label", "", "a further label of the scale set's runners")
	kubeconfig := flag.String("kubeconfig", "", "the cluster")
	ns := flag.String("namespace", "", "the EphemeralRunnerSet's namespace")
	set := flag.String("runner-set", "", "the EphemeralRunnerSet's name")
	minRunners := flag.Int("min-runners", 0, "minRunners")
	maxRunners := flag.Int("max-runners", 10, "maxRunners")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("kubeconfig: %v", err)
	}
	s := &scaler{dyn: dynamic.NewForConfigOrDie(cfg), ns: *ns, set: *set, minRunners: *minRunners, maxRunners: *maxRunners, lastPatch: -1}
	labels := []scaleset.Label{{Name: *name}}
	if *label != "" {
		labels = append(labels, scaleset.Label{Name: *label})
	}
	if err := run(*url, *token, *name, labels, s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(url, token, name string, labels []scaleset.Label, s *scaler) error {
	return listen.Run(url, token, name, labels, s.maxRunners, s, func(id int) { fmt.Printf("scale set %d\n", id) })
}
