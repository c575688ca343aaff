// The runner process itself, in the runner container of a pod on the test cluster's real node
// (tests/testenv/node): `runner-sim runner` is the command of the runner image that
// tests/testenv/node push-runner builds (its /home/runner/run.sh). Nothing is played from outside:
// it has only what a real runner has in its pod:
//
//   - its env, resolved by the kubelet (ACTIONS_RUNNER_INPUT_JITCONFIG from the runner's Secret,
//     ACTIONS_RUNNER_POD_NAME, the hook's variables);
//   - the server named in its JIT configuration (`.runner`'s serverUrl), reached over the pod network;
//   - the container hook's file in its image, the hook template where its volume mounts it;
//   - the ServiceAccount token the kubelet mounted, and the API server through the `kubernetes`
//     Service (KUBERNETES_SERVICE_HOST), as client-go's in-cluster configuration finds them.
//
// A missing piece fails the job as it fails a real one (the reason in the container's log and the
// job's result "failed"); the process exits 0 after its one job (an ephemeral runner) either way,
// and 1 when it cannot even reach its server.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// actionsPeer: the runner's side of the Actions Service peer (tests/peers/actions-service): connect
// with the JIT configuration, wait for the job it is handed, report the job's result.
type actionsPeer struct{ base string }

func (p actionsPeer) post(path string, body any, out any) (int, error) {
	b, _ := json.Marshal(body)
	resp, err := http.Post(p.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		return resp.StatusCode, json.Unmarshal(data, out)
	}
	return resp.StatusCode, nil
}

func (p actionsPeer) connect(jit string) (int, error) {
	var rn struct {
		ID int `json:"id"`
	}
	if code, err := p.post("/_control/runners/connect", map[string]string{"jitConfig": jit}, &rn); err != nil || code != 200 {
		return 0, fmt.Errorf("connect: status %d %v", code, err)
	}
	return rn.ID, nil
}

// waitForJob: the job handed to this runner, and what its message says of the workflow's job.
// `slow` is called once after a minute without one; an error only when ctx ends.
func (p actionsPeer) waitForJob(ctx context.Context, runnerID int, slow func()) (int64, jobSpec, error) {
	since, told := time.Now(), false
	for {
		if ctx.Err() != nil {
			return 0, jobSpec{}, ctx.Err()
		}
		if !told && time.Since(since) > time.Minute {
			told = true
			slow()
		}
		if resp, err := http.Get(p.base + "/_control/state"); err == nil {
			var st struct {
				Runners []struct {
					ID         int   `json:"id"`
					JobRequest int64 `json:"jobRequestId"`
				} `json:"runners"`
				Jobs []struct {
					RequestID int64 `json:"runnerRequestId"`
					jobSpec
				} `json:"jobs"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			for _, r := range st.Runners {
				if r.ID != runnerID || r.JobRequest == 0 {
					continue
				}
				for _, j := range st.Jobs {
					if j.RequestID == r.JobRequest {
						return r.JobRequest, j.jobSpec, nil
					}
				}
				return r.JobRequest, jobSpec{}, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (p actionsPeer) finish(runnerID int, result string) error {
	if code, err := p.post("/_control/runners/finish", map[string]any{"runnerId": runnerID, "result": result}, nil); err != nil || code != 200 {
		return fmt.Errorf("finish: status %d %v", code, err)
	}
	return nil
}

// serverOf: the base URL of the server a JIT configuration names (`.runner`'s serverUrl, GitHub's
// shape: a base64 JSON map of base64 JSON files).
func serverOf(jit string) (string, error) {
	var files map[string]string
	var rn struct {
		ServerURL string `json:"serverUrl"`
	}
	raw, err := base64.StdEncoding.DecodeString(jit)
	if err == nil {
		err = json.Unmarshal(raw, &files)
	}
	if err == nil {
		raw, err = base64.StdEncoding.DecodeString(files[".runner"])
	}
	if err == nil {
		err = json.Unmarshal(raw, &rn)
	}
	if err != nil || rn.ServerURL == "" {
		return "", fmt.Errorf("the JIT configuration has no .runner serverUrl (%v)", err)
	}
	u, err := url.Parse(rn.ServerURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("the JIT configuration's serverUrl %q is not a URL", rn.ServerURL)
	}
	return u.Scheme + "://" + u.Host, nil
}

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func runInPod(args []string) int {
	fs := flag.NewFlagSet("runner", flag.ExitOnError)
	duration := fs.Duration("job-duration", 3*time.Second, "how long each job runs after its steps")
	_ = fs.Parse(args)
	logger := log.New(os.Stdout, "", log.LstdFlags|log.Lmicroseconds)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	jit := os.Getenv("ACTIONS_RUNNER_INPUT_JITCONFIG")
	if jit == "" {
		logger.Printf("An error occurred: no JIT configuration (ACTIONS_RUNNER_INPUT_JITCONFIG is not set)")
		return 1
	}
	server, err := serverOf(jit)
	if err != nil {
		logger.Printf("An error occurred: %v", err)
		return 1
	}
	p := actionsPeer{server}
	var runnerID int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if runnerID, err = p.connect(jit); err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			logger.Printf("An error occurred: %s: %v", server, err)
			return 1
		}
	}
	logger.Printf("Connected to GitHub (runner %d, %s)", runnerID, server)
	jobID, spec, err := p.waitForJob(ctx, runnerID, func() { logger.Printf("no job handed to this runner for a minute") })
	if err != nil {
		logger.Printf("stopped before a job: %v", err)
		return 0
	}
	logger.Printf("Running job: request %d", jobID)

	result := "succeeded"
	switch hook := os.Getenv("ACTIONS_RUNNER_CONTAINER_HOOKS"); hook {
	case "":
		logger.Printf("no container hook: the job runs in the runner container")
		time.Sleep(*duration)
	default:
		if _, err := os.Stat(hook); err != nil {
			logger.Printf("##[error]Error: Cannot find module '%s'", hook)
			result = "failed"
			break
		}
		if hook != hookNoVolume && hook != hookKubernetes {
			logger.Printf("##[error]%s is not a hook the simulator knows (%s, %s)", hook, hookNoVolume, hookKubernetes)
			result = "failed"
			break
		}
		v := inPodView(logger)
		err := hookJob(ctx, v, hook, spec, *duration,
			func() { logger.Printf("prepare_job: the workflow pod is made") },
			func(node string) { logger.Printf("prepare_job: the workflow pod runs on %s", node) })
		if err != nil {
			logger.Printf("##[error]%v", err)
			result = "failed"
		}
	}
	if err := p.finish(runnerID, result); err != nil {
		logger.Printf("An error occurred: %v", err)
	}
	logger.Printf("Job completed with result: %s", result)
	return 0
}

// inPodView: the runner's view from inside its container: the process's env, its files, its
// mounted token (client-go's in-cluster configuration, which re-reads the file as the kubelet
// rotates it).
func inPodView(logger *log.Logger) *runnerView {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, val, ok := strings.Cut(kv, "="); ok {
			env[k] = val
		}
	}
	pod := &corev1.Pod{}
	pod.Name = env["ACTIONS_RUNNER_POD_NAME"]
	if ns, err := os.ReadFile(saDir + "/namespace"); err == nil {
		pod.Namespace = strings.TrimSpace(string(ns))
	}
	return &runnerView{pod: pod, env: env, logger: logger,
		readFile: func(file string) (string, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return "", failf("%v", err) // ENOENT: no volume mounted there
			}
			return string(b), nil
		},
		client: func(context.Context) (*rest.Config, error) {
			if _, err := os.Stat(saDir + "/token"); err != nil {
				return nil, failf("no service account token at %s/token (%v)", saDir, err)
			}
			cfg, err := rest.InClusterConfig()
			if err != nil {
				return nil, failf("%v", err)
			}
			cfg.QPS, cfg.Burst = 50, 100
			return cfg, nil
		},
		gone: func() string { return "" },
	}
}
