// The runner simulator: plays GitHub's runner and its Kubernetes container hooks for headroom's
// end-to-end tests, on a real control plane whose nodes are kwok's.
//
// For every runner pod headroom made (label headroom.dev/role=runner) that is Running on a node, it
// plays the runner under the real runner's contract (hook.go): the JIT configuration from the runner
// container's env (its secretKeyRef), a connection to the Actions Service peer with it, the job the
// peer assigns; then, when the runner container names a container hook, the hook's work with the
// pod's own ServiceAccount token (its permission checks, the workflow pod built as the hook builds
// it, the mounted hook template merged in, made and waited for, deleted at the end), or, with no
// hook, the job run in the runner container itself. The job finishes after --job-duration.
//
// With --arc-controller it also plays ARC's controller (arc.go): EphemeralRunnerSets' replicas become
// EphemeralRunners and their runner pods, which it then runs like headroom's.
//
// It also watches the placeholder pairs and keeps a timeline of how many pairs had both
// placeholders Running, so a test can check every poll's advertised capacity against what the
// scheduler had really placed, and when each placeholder was first seen going. GET /state returns
// {timeline, runners, placeholdersGone}.
//
//	runner-sim --state-dir DIR --kubeconfig F --namespace NS --peer URL [--job-duration 5s]
//
// On the test cluster's real node the runner is not played from outside: `runner-sim runner` is the
// runner image's own process, in its pod (inpod.go), and this process, with --runners-in-pods,
// only watches.
//
// Writes DIR/ready.json = {"http": URL} once it serves and its informer has synced.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type sample struct {
	At         time.Time `json:"at"`
	ReadyPairs int       `json:"readyPairs"`
	Runners    int       `json:"runnersRunning"`
}

type runnerRecord struct {
	Pod             string    `json:"pod"`
	RunnerID        int       `json:"runnerId"`
	JobRequest      int64     `json:"jobRequestId"`
	PodRunningAt    time.Time `json:"podRunningAt"`
	WorkflowCreated time.Time `json:"workflowCreatedAt"`
	WorkflowRunning time.Time `json:"workflowRunningAt"`
	Node            string    `json:"node"`                   // the runner pod's
	WorkflowNode    string    `json:"workflowNode,omitempty"` // the workflow pod's, once Running
	InRunner        bool      `json:"inRunner,omitempty"`     // no container hook: the job ran in the runner container
	Dind            bool      `json:"dind,omitempty"`         // … with its containers in the pod's Docker daemon
	Finished        time.Time `json:"finishedAt"`
	Error           string    `json:"error,omitempty"`
	LostMidJob      string    `json:"lostMidJob,omitempty"` // the pod went (preempted, evicted) while the job ran: why
}

type sim struct {
	mu       sync.Mutex
	timeline []sample
	runners  map[string]*runnerRecord
	// When each placeholder was first seen going (a preemption victim, being deleted, or deleted):
	// how long a workflow pod took to take its workflow placeholder's room.
	gone        map[string]time.Time
	runnerGone  map[string]string // runner pod → why it went (a runner process dies with its pod)
	client      *kubernetes.Clientset
	config      *rest.Config
	ns, peer    string
	duration    time.Duration
	wfDelay     time.Duration
	exitPods    bool // the runner container exits after its job (an ephemeral runner): pod Succeeded
	provisioned int  // work volumes made for this namespace's claims (volumes.go)
	lister      cache.Indexer
	logger      *log.Logger
}

// A runner pod: headroom's, or ARC's (an EphemeralRunner's, arc.go).
func isRunner(p *corev1.Pod) bool {
	return p.Labels["headroom.dev/role"] == "runner" || p.Labels["actions-ephemeral-runner"] == "True"
}

// Placed and staying: Running on a node, not being deleted, not marked as a preemption victim.
func running(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return false
		}
	}
	return true
}

// notePlaceholderGone records the first moment a placeholder was seen going, and a runner pod's
// (runnerPodGone: the runner process dies with its pod).
func (s *sim) notePlaceholderGone(p *corev1.Pod, deleted bool) {
	role := p.Labels["headroom.dev/role"]
	if role != "runner-placeholder" && role != "workflow-placeholder" && !isRunner(p) {
		return
	}
	going, why := deleted || p.DeletionTimestamp != nil, "deleted"
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			going, why = true, c.Reason+": "+c.Message // PreemptionByScheduler, EvictionByEvictionAPI, …
		}
	}
	if !going {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if isRunner(p) {
		if _, seen := s.runnerGone[p.Name]; !seen {
			s.runnerGone[p.Name] = why
		}
		return
	}
	if _, seen := s.gone[p.Name]; !seen {
		s.gone[p.Name] = time.Now()
	}
}

// runnerPodGone: why the runner pod is going (deleted, preempted, evicted), or "".
func (s *sim) runnerPodGone(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runnerGone[name]
}

// Called on every pod event: the number of fully placed pairs now.
func (s *sim) observe() {
	placed := map[string]int{}
	runners := 0
	for _, o := range s.lister.List() {
		p := o.(*corev1.Pod)
		role := p.Labels["headroom.dev/role"]
		if isRunner(p) && running(p) {
			runners++
		}
		if (role == "runner-placeholder" || role == "workflow-placeholder") && running(p) {
			placed[p.Labels["headroom.dev/slot"]]++
		}
	}
	ready := 0
	for _, n := range placed {
		if n == 2 {
			ready++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.timeline); n > 0 && s.timeline[n-1].ReadyPairs == ready && s.timeline[n-1].Runners == runners {
		return
	}
	s.timeline = append(s.timeline, sample{At: time.Now(), ReadyPairs: ready, Runners: runners})
}

// One runner's life: connect, take the job, run the workflow pod, finish.
func (s *sim) run(ctx context.Context, pod *corev1.Pod, rec *runnerRecord) {
	fail := func(format string, args ...any) {
		s.mu.Lock()
		rec.Error = fmt.Sprintf(format, args...)
		s.mu.Unlock()
		s.logger.Printf("runner %s: %s", pod.Name, rec.Error)
	}
	// The runner's JIT configuration, as the kubelet gives it: the runner container's env.
	var view *runnerView
	for deadline := time.Now().Add(30 * time.Second); ; {
		v, err := s.viewOf(ctx, pod)
		if err == nil {
			view = v
			break
		}
		if _, final := err.(jobFailure); final || time.Now().After(deadline) {
			fail("the runner container cannot start: %v", err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	jit := view.env["ACTIONS_RUNNER_INPUT_JITCONFIG"]
	if jit == "" {
		fail("no ACTIONS_RUNNER_INPUT_JITCONFIG in the runner container's env")
		return
	}
	p := actionsPeer{s.peer}
	runnerID, err := p.connect(jit)
	if err != nil {
		fail("%v", err)
		return
	}
	s.mu.Lock()
	rec.RunnerID = runnerID
	s.mu.Unlock()
	jobID, spec, err := p.waitForJob(ctx, runnerID, func() {
		s.logger.Printf("runner %s (id %d): connected, no job handed to it for a minute", pod.Name, runnerID)
	})
	if err != nil {
		return
	}
	s.mu.Lock()
	rec.JobRequest = jobID
	s.mu.Unlock()
	// A real runner sets up (downloads actions, pulls images) before its hook makes the workflow pod.
	time.Sleep(s.wfDelay)
	result := "succeeded"
	switch hook := view.env["ACTIONS_RUNNER_CONTAINER_HOOKS"]; hook {
	case "":
		// No container hook: the job runs in the runner container, its containers (if any) through
		// the Docker daemon DOCKER_HOST names (dind.go).
		if host := view.env["DOCKER_HOST"]; host != "" {
			if err := dockerDaemon(pod, view, host); err != nil {
				fail("%v", err)
				result = "failed"
				break
			}
			s.mu.Lock()
			rec.Dind = true
			s.mu.Unlock()
		}
		s.mu.Lock()
		rec.InRunner = true
		rec.WorkflowRunning = time.Now()
		s.mu.Unlock()
		time.Sleep(s.duration)
	case hookNoVolume, hookKubernetes:
		err := hookJob(ctx, view, hook, spec, s.duration,
			func() { s.mu.Lock(); rec.WorkflowCreated = time.Now(); s.mu.Unlock() },
			func(node string) {
				s.mu.Lock()
				rec.WorkflowRunning = time.Now()
				rec.WorkflowNode = node
				s.mu.Unlock()
			})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fail("container hook: %v", err)
			result = "failed"
		}
	default:
		fail("container hook: Cannot find module '%s' (not a hook the runner image ships)", hook)
		result = "failed"
	}
	// The pod went while the job ran (preempted, evicted, deleted): a real runner process dies with
	// it and GitHub fails the job. Recorded (the tests report it) rather than failed: kubernetes
	// mode's workflow pod, pinned to its runner's node, still preempts a running runner there when
	// the runner's workflow room is not on that node (see the e2e tests' "[lost]" lines).
	if why := s.runnerPodGone(pod.Name); why != "" && result == "succeeded" {
		s.mu.Lock()
		rec.LostMidJob = why
		s.mu.Unlock()
		s.logger.Printf("runner %s: its pod went while its job ran (%s)", pod.Name, why)
	}
	if err := p.finish(runnerID, result); err != nil {
		fail("%v", err)
	}
	if s.exitPods {
		s.exitRunnerPod(ctx, pod.Name)
	}
	s.mu.Lock()
	rec.Finished = time.Now()
	s.mu.Unlock()
}

// exitRunnerPod plays the runner process exiting 0 after its one job: kwok has no container to
// stop, so the pod's status says it (kwok's stages leave a Succeeded pod alone).
// Retried for a minute (an API server restart, a conflict with kwok's own status writes).
func (s *sim) exitRunnerPod(ctx context.Context, name string) {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		p, err := s.client.CoreV1().Pods(s.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			continue
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodSucceeded
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].Ready = false
			p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}
		}
		if _, err = s.client.CoreV1().Pods(s.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err == nil || apierrors.IsNotFound(err) {
			return
		}
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "runner" {
		os.Exit(runInPod(os.Args[2:])) // the runner process itself, in its pod on a real node (inpod.go)
	}
	stateDir := flag.String("state-dir", "", "where ready.json goes")
	kubeconfig := flag.String("kubeconfig", "", "the cluster")
	ns := flag.String("namespace", "runners", "the runners' namespace")
	peer := flag.String("peer", "", "the Actions Service peer's base URL")
	duration := flag.Duration("job-duration", 5*time.Second, "how long each job runs")
	wfDelay := flag.Duration("workflow-delay", 0, "from the job's start to the workflow pod's creation")
	skip := flag.Int("skip-runners", 0, "leave the first N runner pods alone (a runner that never registers)")
	exitPods := flag.Bool("exit-runner-pods", false, "after its job, the runner pod goes Succeeded (its runner exited)")
	inPods := flag.Bool("runners-in-pods", false, "the runners run in their own containers (a real node: `runner-sim runner`); only watch them")
	arcMode := flag.Bool("arc-controller", false, "play ARC's EphemeralRunnerSet and EphemeralRunner controllers (arc.go)")
	flag.Parse()
	logger := log.New(os.Stderr, "runner-sim ", log.LstdFlags|log.Lmicroseconds)
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		logger.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	client := kubernetes.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(*ns))
	pods := newPodWatch()
	s := &sim{timeline: []sample{}, runners: map[string]*runnerRecord{}, gone: map[string]time.Time{}, runnerGone: map[string]string{}, client: client, config: cfg, ns: *ns, peer: *peer, duration: *duration,
		wfDelay: *wfDelay, exitPods: *exitPods, lister: pods.Indexer, logger: logger}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	handle := func(o any) {
		s.observe()
		p, ok := o.(*corev1.Pod)
		if ok {
			s.notePlaceholderGone(p, false)
		}
		if !ok || !isRunner(p) || !running(p) {
			return
		}
		s.mu.Lock()
		_, seen := s.runners[p.Name]
		var rec *runnerRecord
		if !seen {
			rec = &runnerRecord{Pod: p.Name, PodRunningAt: time.Now(), Node: p.Spec.NodeName}
			s.runners[p.Name] = rec
			if *skip > 0 {
				*skip--
				rec.Error = "skipped: never registers"
				seen = true
			}
			seen = seen || *inPods
		}
		s.mu.Unlock()
		if !seen {
			go s.run(ctx, p.DeepCopy(), rec)
		}
	}
	handlers := cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, n any) { handle(n) },
		DeleteFunc: func(o any) {
			s.observe()
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if p, ok := o.(*corev1.Pod); ok {
				s.notePlaceholderGone(p, true)
			}
		},
	}
	var arc *arcController
	if *arcMode {
		arc = &arcController{s: s, dyn: dynamic.NewForConfigOrDie(cfg)}
		go arc.run(ctx)
	}
	cluster := informers.NewSharedInformerFactory(client, 0)
	s.startKubeletLabels(ctx, cluster)
	if err := s.startProvisioner(ctx, factory, cluster); err != nil {
		logger.Fatalf("the e2e-work StorageClass: %v", err)
	}
	pods.run(ctx, client, *ns, handlers)
	factory.Start(ctx.Done())
	cluster.Start(ctx.Done())
	pods.waitSynced(ctx)
	factory.WaitForCacheSync(ctx.Done())
	cluster.WaitForCacheSync(ctx.Done())

	mux := http.NewServeMux()
	mux.HandleFunc("/state", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		runners := []*runnerRecord{}
		for _, r := range s.runners {
			runners = append(runners, r)
		}
		out := map[string]any{"timeline": s.timeline, "runners": runners, "placeholdersGone": s.gone,
			"volumesProvisioned": s.provisioned}
		if arc != nil {
			out["arc"] = arc.state()
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		logger.Fatal(err)
	}
	go func() { _ = http.Serve(ln, mux) }()
	ready, _ := json.Marshal(map[string]string{"http": "http://" + ln.Addr().String()})
	_ = os.WriteFile(*stateDir+"/ready.json.tmp", ready, 0o644)
	_ = os.Rename(*stateDir+"/ready.json.tmp", *stateDir+"/ready.json")
	logger.Printf("serving %s", ready)
	parent := os.Getppid()
	for {
		time.Sleep(500 * time.Millisecond)
		if os.Getppid() != parent {
			return
		}
	}
}
