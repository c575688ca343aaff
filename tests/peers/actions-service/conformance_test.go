package main

// Conformance: the real github.com/actions/scaleset client and listener (from the Go module proxy)
// against this peer. If the peer and the library disagree on a path, a status, a header or a JSON
// shape, these fail.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/actions/scaleset/listener"
)

type peerEnv struct {
	srv     *server
	plain   *httptest.Server
	secure  *httptest.Server
	caPool  *x509.CertPool
	keyPEM  string
	appID   string
	pat     string
	control string
}

func startPeer(t *testing.T) *peerEnv {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	cfg := defaultSettings()
	cfg.AppID, cfg.AppKey, cfg.PAT = "12345", &key.PublicKey, "ghp_conformance_pat"
	cfg.PollHold = time.Second
	srv := newServer(cfg, log.New(os.Stderr, "peer: ", log.Lmicroseconds))

	caPEM, cert, err := generateTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	plain := httptest.NewServer(srv)
	secure := httptest.NewUnstartedServer(srv)
	secure.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	secure.StartTLS()
	t.Cleanup(func() { plain.Close(); secure.Close() })
	return &peerEnv{srv: srv, plain: plain, secure: secure, caPool: pool, keyPEM: keyPEM, appID: "12345",
		pat: cfg.PAT, control: plain.URL + "/_control"}
}

func (p *peerEnv) post(t *testing.T, path string, body any, out any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(p.control+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("control %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("control %s: %d %s", path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("control %s: %v", path, err)
		}
	}
}

func (p *peerEnv) appClient(t *testing.T) *scaleset.Client {
	t.Helper()
	c, err := scaleset.NewClientWithGitHubApp(scaleset.ClientWithGitHubAppConfig{
		GitHubConfigURL: p.plain.URL + "/headroom-org",
		GitHubAppAuth:   scaleset.GitHubAppAuth{ClientID: p.appID, InstallationID: 42, PrivateKey: p.keyPEM},
		SystemInfo:      scaleset.SystemInfo{System: "headroom-conformance"},
	}, scaleset.WithRetryMax(1), scaleset.WithRetryWaitMax(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (p *peerEnv) createScaleSet(t *testing.T, c *scaleset.Client, name string, labels ...string) *scaleset.RunnerScaleSet {
	t.Helper()
	ctx := context.Background()
	group, err := c.GetRunnerGroupByName(ctx, "default")
	if err != nil {
		t.Fatalf("runner group: %v", err)
	}
	ls := []scaleset.Label{{Name: name}}
	for _, l := range labels {
		ls = append(ls, scaleset.Label{Name: l})
	}
	created, err := c.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: name, RunnerGroupID: group.ID, Labels: ls})
	if err != nil {
		t.Fatalf("create scale set: %v", err)
	}
	got, err := c.GetRunnerScaleSet(ctx, group.ID, name)
	if err != nil || got == nil || got.ID != created.ID {
		t.Fatalf("get scale set by name: %v %+v", err, got)
	}
	byID, err := c.GetRunnerScaleSetByID(ctx, created.ID)
	if err != nil || byID.Name != name || len(byID.Labels) != len(ls) {
		t.Fatalf("get scale set by id: %v %+v", err, byID)
	}
	return created
}

// A scaler that behaves like a runner provisioner: JIT configs for the desired count, runners
// connect through the peer's control API and finish their job shortly after it starts.
type scaler struct {
	t        *testing.T
	p        *peerEnv
	c        *scaleset.Client
	setID    int
	mu       sync.Mutex
	live     int
	made     int
	started  []*scaleset.JobStarted
	done     []*scaleset.JobCompleted
	desired  []int
	finishes sync.WaitGroup
}

func (s *scaler) HandleJobStarted(ctx context.Context, j *scaleset.JobStarted) error {
	s.mu.Lock()
	s.started = append(s.started, j)
	s.mu.Unlock()
	s.finishes.Add(1)
	go func() {
		defer s.finishes.Done()
		time.Sleep(50 * time.Millisecond)
		s.p.post(s.t, "/runners/finish", map[string]any{"runnerId": j.RunnerID, "result": "succeeded"}, nil)
	}()
	return nil
}

func (s *scaler) HandleJobCompleted(ctx context.Context, j *scaleset.JobCompleted) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = append(s.done, j)
	if j.RunnerName != "" {
		s.live--
	}
	return nil
}

func (s *scaler) HandleDesiredRunnerCount(ctx context.Context, count int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.desired = append(s.desired, count)
	for s.live < count {
		s.made++
		cfg, err := s.c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{
			Name: fmt.Sprintf("conf-runner-%d", s.made), WorkFolder: "_work"}, s.setID)
		if err != nil {
			return 0, err
		}
		if cfg.Runner == nil || cfg.Runner.RunnerScaleSetID != s.setID || cfg.EncodedJITConfig == "" {
			return 0, fmt.Errorf("JIT config incomplete: %+v", cfg)
		}
		s.p.post(s.t, "/runners/connect", map[string]any{"jitConfig": cfg.EncodedJITConfig}, nil)
		s.live++
	}
	return count, nil
}

type recorder struct {
	mu    sync.Mutex
	stats []scaleset.RunnerScaleSetStatistic
}

func (r *recorder) RecordStatistics(st *scaleset.RunnerScaleSetStatistic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats = append(r.stats, *st)
}
func (r *recorder) RecordJobStarted(*scaleset.JobStarted)     {}
func (r *recorder) RecordJobCompleted(*scaleset.JobCompleted) {}
func (r *recorder) RecordDesiredRunners(int)                  {}

func (p *peerEnv) jobsIn(state string, ids []int64) int {
	p.srv.mu.Lock()
	defer p.srv.mu.Unlock()
	n := 0
	for _, id := range ids {
		if j := p.srv.jobs[id]; j != nil && j.State == state {
			n++
		}
	}
	return n
}

func within(t *testing.T, p *peerEnv, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if !p.srv.waitUntil(ctx, cond) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

// The whole chain with the library's own listener: App JWT → installation token → registration
// token → admin connection → scale set → session → polls gated by capacity → ack → acquire → JIT
// runners → JobStarted/JobCompleted → statistics; then capacity 0 stops assignment.
func TestConformanceListenerWithAppAuth(t *testing.T) {
	p := startPeer(t)
	c := p.appClient(t)
	set := p.createScaleSet(t, c, "conf-set", "linux")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	sess, err := c.MessageSessionClient(ctx, set.ID, "conformance-host")
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	if _, err := c.MessageSessionClient(ctx, set.ID, "someone-else"); err == nil ||
		!strings.Contains(err.Error(), "already has an active session") {
		t.Fatalf("second session for one scale set: want a 409 conflict, got %v", err)
	}

	rec := &recorder{}
	l, err := listener.New(sess, listener.Config{ScaleSetID: set.ID, MaxRunners: 2}, listener.WithMetricsRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	sc := &scaler{t: t, p: p, c: c, setID: set.ID}
	runErr := make(chan error, 1)
	go func() { runErr <- l.Run(ctx, sc) }()

	var first struct{ IDs []int64 }
	p.post(t, "/jobs", map[string]any{"labels": []string{"linux"}, "count": 5}, &first)
	within(t, p, 60*time.Second, "5 jobs to complete", func() bool { return p.jobsIn("completed", first.IDs) == 5 })
	sc.finishes.Wait()

	for _, id := range first.IDs {
		if j := p.srv.jobCopy(id); j.Result != "succeeded" || j.Requeues != 0 {
			t.Errorf("job %d: result %q after %d re-queues", id, j.Result, j.Requeues)
		}
	}
	maxHeld := 0
	for _, poll := range p.srv.snapshotPolls() {
		if poll.ScaleSetID == set.ID && poll.Status == 200 {
			if poll.Capacity != 2 {
				t.Errorf("poll %d advertised %d, listener had MaxRunners 2", poll.Seq, poll.Capacity)
			}
			maxHeld = max(maxHeld, poll.Offered)
		}
	}
	if maxHeld == 0 || maxHeld > 2 {
		t.Errorf("scale set held at most %d jobs at once; want 1..2 under capacity 2", maxHeld)
	}
	within(t, p, 10*time.Second, "JobCompleted for all 5 jobs at the scaler", func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return len(sc.done) >= 5
	})
	sc.mu.Lock()
	if len(sc.started) != 5 {
		t.Errorf("JobStarted seen %d times, want 5", len(sc.started))
	}
	for _, j := range sc.done {
		if j.Result != "succeeded" || j.RunnerName == "" || j.RunnerRequestID == 0 || len(j.RequestLabels) != 1 {
			t.Errorf("JobCompleted decoded badly: %+v", j)
		}
	}
	sc.mu.Unlock()
	rec.mu.Lock()
	sawAssigned := false
	for _, st := range rec.stats {
		sawAssigned = sawAssigned || st.TotalAssignedJobs > 0
	}
	rec.mu.Unlock()
	if !sawAssigned {
		t.Error("no statistics with totalAssignedJobs > 0 reached the listener")
	}

	// Capacity 0: the peer must offer nothing, however long the listener polls.
	// A poll already in flight keeps the capacity it started with, so wait until the listener's
	// polls carry the 0 before queueing.
	l.SetMaxRunners(0)
	mark := len(p.srv.snapshotPolls())
	within(t, p, 15*time.Second, "a poll carrying capacity 0", func() bool {
		for _, poll := range p.srv.snapshotPolls()[mark:] {
			if poll.Capacity == 0 {
				return true
			}
		}
		return false
	})
	mark = len(p.srv.snapshotPolls())
	var second struct{ IDs []int64 }
	p.post(t, "/jobs", map[string]any{"labels": []string{"linux"}, "count": 2}, &second)
	within(t, p, 15*time.Second, "three answered polls at capacity 0", func() bool {
		n := 0
		for _, poll := range p.srv.snapshotPolls()[mark:] {
			if poll.Capacity == 0 && poll.Status != 0 {
				n++
			}
		}
		return n >= 3
	})
	if q := p.jobsIn("queued", second.IDs); q != 2 {
		t.Fatalf("capacity 0 still assigned jobs: %d of 2 queued", q)
	}
	l.SetMaxRunners(2)
	within(t, p, 30*time.Second, "jobs to complete after capacity returns", func() bool {
		return p.jobsIn("completed", second.IDs) == 2
	})

	// An expired message-queue token: the library refreshes the session (PATCH) and goes on.
	p.post(t, "/expire", map[string]any{"what": "queue_tokens"}, nil)
	var third struct{ IDs []int64 }
	p.post(t, "/jobs", map[string]any{"labels": []string{"linux"}, "count": 1}, &third)
	within(t, p, 30*time.Second, "a job to complete after the token expired", func() bool {
		return p.jobsIn("completed", third.IDs) == 1
	})
	if p.srv.requestCount("refresh_session") == 0 {
		t.Error("the library never refreshed its session after a 401")
	}
	cancel()
	<-runErr
	sc.finishes.Wait()
	if err := sess.Close(context.Background()); err != nil {
		t.Errorf("delete session: %v", err)
	}
	if n := p.srv.sessionCount(); n != 0 {
		t.Errorf("%d sessions left after Close", n)
	}
}

// A job acquired but never started is re-queued 3 times and then canceled: the scale set sees
// JobAssigned then JobCompleted(canceled) each time. Driven with the library's session client.
func TestConformanceRequeueThenCancel(t *testing.T) {
	p := startPeer(t)
	c := p.appClient(t)
	set := p.createScaleSet(t, c, "requeue-set")
	p.post(t, "/settings", map[string]any{"runTimeoutMs": 300, "pollHoldMs": 500}, nil)
	ctx := context.Background()
	sess, err := c.MessageSessionClient(ctx, set.ID, "conformance-host")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	var jobs struct{ IDs []int64 }
	p.post(t, "/jobs", map[string]any{"labels": []string{"requeue-set"}}, &jobs)

	assigned, canceled, lastID := 0, 0, 0
	deadline := time.Now().Add(30 * time.Second)
	for p.jobsIn("completed", jobs.IDs) == 0 || canceled < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d JobAssigned, %d canceled, job state %+v", assigned, canceled, p.srv.jobCopy(jobs.IDs[0]))
		}
		msg, err := sess.GetMessage(ctx, lastID, 1)
		if err != nil {
			t.Fatalf("GetMessage: %v", err)
		}
		if msg == nil {
			continue
		}
		lastID = msg.MessageID
		if err := sess.DeleteMessage(ctx, msg.MessageID); err != nil {
			t.Fatalf("DeleteMessage: %v", err)
		}
		var ids []int64
		for _, a := range msg.JobAvailableMessages {
			ids = append(ids, a.RunnerRequestID)
		}
		if len(ids) > 0 {
			got, err := sess.AcquireJobs(ctx, ids)
			if err != nil || len(got) != len(ids) {
				t.Fatalf("AcquireJobs(%v) = %v, %v", ids, got, err)
			}
		}
		assigned += len(msg.JobAssignedMessages)
		for _, done := range msg.JobCompletedMessages {
			if done.Result == "canceled" {
				canceled++
			}
		}
	}
	j := p.srv.jobCopy(jobs.IDs[0])
	if assigned != 4 || canceled != 4 || j.Result != "canceled" || j.Requeues != 3 {
		t.Fatalf("want 4 assignments ending canceled after 3 re-queues; got %d assigned, %d canceled, %+v",
			assigned, canceled, j)
	}
}

// Runner operations and their typed errors, a PAT over HTTPS with a custom CA, and the admin
// token refreshed before its exp.
func TestConformanceRunnersTLSAndTokenRefresh(t *testing.T) {
	p := startPeer(t)
	ctx := context.Background()
	c, err := scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL: p.secure.URL + "/enterprises/headroom", PersonalAccessToken: p.pat,
	}, scaleset.WithRootCAs(p.caPool), scaleset.WithRetryMax(1))
	if err != nil {
		t.Fatal(err)
	}
	set := p.createScaleSet(t, c, "runner-set")

	untrusting, _ := scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL: p.secure.URL + "/enterprises/headroom", PersonalAccessToken: p.pat,
	}, scaleset.WithRetryMax(0))
	if _, err := untrusting.GetRunnerGroupByName(ctx, "default"); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client without the peer's CA must fail TLS verification, got %v", err)
	}

	jit, err := c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "r1"}, set.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "r1"}, set.ID); !errors.Is(err, scaleset.RunnerExistsError) {
		t.Fatalf("duplicate runner name: want RunnerExistsError, got %v", err)
	}
	if r, err := c.GetRunnerByName(ctx, "r1"); err != nil || r == nil || r.ID != jit.Runner.ID {
		t.Fatalf("GetRunnerByName: %+v %v", r, err)
	}
	if r, err := c.GetRunnerByName(ctx, "nobody"); err != nil || r != nil {
		t.Fatalf("GetRunnerByName(unknown) = %+v, %v; want nil, nil", r, err)
	}
	if _, err := c.GetRunner(ctx, 999999); !errors.Is(err, scaleset.RunnerNotFoundError) {
		t.Fatalf("GetRunner(unknown): want RunnerNotFoundError, got %v", err)
	}

	// r1 connects and runs a job: removing it must say the job is still running.
	p.post(t, "/runners/connect", map[string]any{"jitConfig": jit.EncodedJITConfig}, nil)
	sess, err := c.MessageSessionClient(ctx, set.ID, "conformance-host")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	var jobs struct{ IDs []int64 }
	p.post(t, "/jobs", map[string]any{"labels": []string{"runner-set"}}, &jobs)
	for p.jobsIn("running", jobs.IDs) == 0 {
		msg, err := sess.GetMessage(ctx, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if msg == nil {
			continue
		}
		_ = sess.DeleteMessage(ctx, msg.MessageID)
		for _, a := range msg.JobAvailableMessages {
			if _, err := sess.AcquireJobs(ctx, []int64{a.RunnerRequestID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.RemoveRunner(ctx, int64(jit.Runner.ID)); !errors.Is(err, scaleset.JobStillRunningError) {
		t.Fatalf("RemoveRunner(busy): want JobStillRunningError, got %v", err)
	}
	p.post(t, "/runners/finish", map[string]any{"runnerId": jit.Runner.ID}, nil)

	idle, err := c.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: "r2"}, set.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveRunner(ctx, int64(idle.Runner.ID)); err != nil {
		t.Fatalf("RemoveRunner(idle): %v", err)
	}

	// An admin token 61 s from expiry is refreshed (the whole chain again) before the next call.
	before := p.srv.requestCount("admin_connection")
	p.post(t, "/settings", map[string]any{"adminTokenTtlMs": 61_000}, nil)
	// A fresh client takes a 61 s token, which is inside the library's 60 s refresh margin after
	// a second: each later call must run the chain again.
	c2, _ := scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL: p.secure.URL + "/enterprises/headroom", PersonalAccessToken: p.pat,
	}, scaleset.WithRootCAs(p.caPool), scaleset.WithRetryMax(1))
	for i := 0; i < 2; i++ {
		if _, err := c2.GetRunnerScaleSetByID(ctx, set.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
	}
	if got := p.srv.requestCount("admin_connection") - before; got < 2 {
		t.Fatalf("admin connections after two calls with a 61 s token: %d, want a refresh per call", got)
	}
}
