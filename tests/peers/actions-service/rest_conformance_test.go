package main

// Conformance of the webhook-driven side: the real github.com/google/go-github client (REST calls
// headroom's scheduler makes) and its webhook helpers (signature check, event parsing) against
// this peer. If the peer's paths, statuses, error bodies, pagination or payload shapes drift from
// what GitHub's own Go library expects, these fail.

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v75/github"
)

const hookSecret = "conformance-webhook-secret"

type hookEvent struct {
	delivery string
	event    *github.WorkflowJobEvent
	err      error // the signature check or the parse failed
}

// hookReceiver is a webhook endpoint built only from go-github's helpers.
func hookReceiver(t *testing.T) (*httptest.Server, chan hookEvent) {
	t.Helper()
	events := make(chan hookEvent, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload, err := github.ValidatePayload(r, []byte(hookSecret))
		if err != nil {
			events <- hookEvent{delivery: github.DeliveryID(r), err: err}
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		parsed, err := github.ParseWebHook(github.WebHookType(r), payload)
		if err != nil {
			events <- hookEvent{delivery: github.DeliveryID(r), err: err}
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ev, ok := parsed.(*github.WorkflowJobEvent)
		if !ok {
			events <- hookEvent{delivery: github.DeliveryID(r), err: errors.New("not a workflow_job event")}
			http.Error(w, "unexpected event", http.StatusBadRequest)
			return
		}
		events <- hookEvent{delivery: github.DeliveryID(r), event: ev}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	return srv, events
}

func nextHook(t *testing.T, events chan hookEvent) hookEvent {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivery within 10 s")
	}
	return hookEvent{}
}

func wantAction(t *testing.T, events chan hookEvent, action string, jobID int64) *github.WorkflowJobEvent {
	t.Helper()
	e := nextHook(t, events)
	if e.err != nil {
		t.Fatalf("delivery %s rejected by go-github: %v", e.delivery, e.err)
	}
	if e.delivery == "" {
		t.Fatal("delivery without X-GitHub-Delivery")
	}
	if e.event.GetAction() != action || e.event.GetWorkflowJob().GetID() != jobID {
		t.Fatalf("want %s for job %d, got %s for %d", action, jobID, e.event.GetAction(), e.event.GetWorkflowJob().GetID())
	}
	return e.event
}

func restClient(t *testing.T, base, token string) *github.Client {
	t.Helper()
	c := github.NewClient(nil).WithAuthToken(token)
	u, err := url.Parse(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

func wantStatus(t *testing.T, what string, err error, status int) {
	t.Helper()
	var ge *github.ErrorResponse
	if !errors.As(err, &ge) {
		t.Fatalf("%s: want a GitHub error %d, got %v", what, status, err)
	}
	if ge.Response.StatusCode != status || ge.Message == "" {
		t.Fatalf("%s: want %d with a message, got %d %q", what, status, ge.Response.StatusCode, ge.Message)
	}
}

func TestGoGitHubWebhookDeliveries(t *testing.T) {
	p := startPeer(t)
	hooks, events := hookReceiver(t)
	p.post(t, "/webhooks/config", map[string]any{"url": hooks.URL, "secret": hookSecret}, nil)

	var made struct{ IDs []int64 }
	p.post(t, "/webhooks/jobs", map[string]any{"organization": "acme", "repository": "acme/app",
		"labels": []string{"self-hosted", "linux"}, "name": "build <x>"}, &made)
	ev := wantAction(t, events, "queued", made.IDs[0])
	job := ev.GetWorkflowJob()
	if job.GetStatus() != "queued" || job.GetName() != "build <x>" || len(job.Labels) != 2 || job.Labels[1] != "linux" ||
		job.GetRunID() == 0 || job.CreatedAt == nil || job.GetHTMLURL() == "" {
		t.Fatalf("queued job as go-github reads it: %+v", job)
	}
	if ev.GetRepo().GetFullName() != "acme/app" || ev.GetOrg().GetLogin() != "acme" || ev.GetInstallation().GetID() == 0 {
		t.Fatalf("envelope: repo %q org %q installation %d", ev.GetRepo().GetFullName(), ev.GetOrg().GetLogin(), ev.GetInstallation().GetID())
	}

	// The same delivery again carries the same X-GitHub-Delivery.
	var state struct {
		Deliveries []struct{ ID string } `json:"deliveries"`
	}
	p.post(t, "/webhooks/state", nil, &state)
	first := state.Deliveries[0].ID
	p.post(t, "/webhooks/redeliver", map[string]any{"deliveryId": first}, nil)
	if again := nextHook(t, events); again.err != nil || again.delivery != first {
		t.Fatalf("redelivery: %+v", again)
	}

	// A forged delivery fails go-github's own signature check.
	p.post(t, "/webhooks/forged", map[string]any{"count": 1}, nil)
	if forged := nextHook(t, events); forged.err == nil {
		t.Fatal("a forged delivery passed github.ValidatePayload")
	}

	// completed: the conclusion is spelled as GitHub does.
	p.post(t, "/webhooks/complete", map[string]any{"jobId": made.IDs[0], "conclusion": "cancelled"}, nil)
	done := wantAction(t, events, "completed", made.IDs[0]).GetWorkflowJob()
	if done.GetStatus() != "completed" || done.GetConclusion() != "cancelled" {
		t.Fatalf("completed job: status %q conclusion %q", done.GetStatus(), done.GetConclusion())
	}
}

func TestGoGitHubRESTCalls(t *testing.T) {
	p := startPeer(t)
	hooks, events := hookReceiver(t)
	p.post(t, "/webhooks/config", map[string]any{"url": hooks.URL, "secret": hookSecret}, nil)
	ctx := context.Background()
	for _, base := range []string{p.plain.URL, p.plain.URL + "/api/v3"} { // github.com and GHES paths
		t.Run(base, func(t *testing.T) {
			gh := restClient(t, base, p.pat)

			if _, _, err := restClient(t, base, "ghp_wrong").Actions.ListOrganizationRunnerGroups(ctx, "acme", nil); err == nil {
				t.Fatal("a wrong token was accepted")
			} else {
				wantStatus(t, "wrong token", err, 401)
			}

			// Runner groups: listed, created once, a second create is a 409.
			groups, _, err := gh.Actions.ListOrganizationRunnerGroups(ctx, "acme", &github.ListOrgRunnerGroupOptions{ListOptions: github.ListOptions{PerPage: 100}})
			if err != nil || groups.TotalCount < 1 || groups.RunnerGroups[0].GetName() != "Default" || !groups.RunnerGroups[0].GetDefault() {
				t.Fatalf("runner groups: %v %+v", err, groups)
			}
			name := "headroom-" + time.Now().Format("150405.000000")
			group, resp, err := gh.Actions.CreateOrganizationRunnerGroup(ctx, "acme", github.CreateRunnerGroupRequest{Name: github.Ptr(name), Visibility: github.Ptr("all")})
			if err != nil || resp.StatusCode != 201 || group.GetID() == 0 || group.GetName() != name {
				t.Fatalf("create runner group: %v %+v", err, group)
			}
			_, _, err = gh.Actions.CreateOrganizationRunnerGroup(ctx, "acme", github.CreateRunnerGroupRequest{Name: github.Ptr(name)})
			wantStatus(t, "duplicate runner group", err, 409)

			// A job, read back by the REST call syncJobsState makes, and its run.
			var made struct{ IDs []int64 }
			p.post(t, "/webhooks/jobs", map[string]any{"organization": "acme", "repository": "acme/app", "labels": []string{"self-hosted", "gpu"}}, &made)
			id := made.IDs[0]
			wantAction(t, events, "queued", id)
			job, _, err := gh.Actions.GetWorkflowJobByID(ctx, "acme", "app", id)
			if err != nil || job.GetID() != id || job.GetStatus() != "queued" || len(job.Labels) != 2 || job.GetRunID() == 0 {
				t.Fatalf("get job: %v %+v", err, job)
			}
			run, _, err := gh.Actions.GetWorkflowRunByID(ctx, "acme", "app", job.GetRunID())
			if err != nil || run.GetID() != job.GetRunID() || run.GetStatus() != "queued" {
				t.Fatalf("get run: %v %+v", err, run)
			}

			// An org JIT runner in the group; a second one of the same name is a 409.
			jit, resp, err := gh.Actions.GenerateOrgJITConfig(ctx, "acme", &github.GenerateJITConfigRequest{
				Name: "hr-" + name, RunnerGroupID: group.GetID(), Labels: []string{"self-hosted", "gpu"}})
			if err != nil || resp.StatusCode != 201 || jit.GetEncodedJITConfig() == "" || jit.GetRunner().GetID() == 0 || jit.GetRunner().GetName() != "hr-"+name {
				t.Fatalf("org JIT config: %v %+v", err, jit)
			}
			_, _, err = gh.Actions.GenerateOrgJITConfig(ctx, "acme", &github.GenerateJITConfigRequest{Name: "hr-" + name, RunnerGroupID: group.GetID(), Labels: []string{"x"}})
			wantStatus(t, "duplicate runner name", err, 409)
			_, _, err = gh.Actions.GenerateOrgJITConfig(ctx, "acme", &github.GenerateJITConfigRequest{Name: "hr-nogroup", RunnerGroupID: 987654, Labels: []string{"x"}})
			wantStatus(t, "unknown runner group", err, 404)
			// A group for chosen repositories only: the repository's id, then the group with it.
			repo, _, err := gh.Repositories.Get(ctx, "acme", "app")
			if err != nil || repo.GetID() == 0 || repo.GetFullName() != "acme/app" {
				t.Fatalf("repository: %v %+v", err, repo)
			}
			limited, resp, err := gh.Actions.CreateOrganizationRunnerGroup(ctx, "acme", github.CreateRunnerGroupRequest{
				Name: github.Ptr("limited-" + name), Visibility: github.Ptr("selected"), SelectedRepositoryIDs: []int64{repo.GetID()}})
			if err != nil || resp.StatusCode != 201 || limited.GetVisibility() != "selected" {
				t.Fatalf("create a selected runner group: %v %+v", err, limited)
			}
			// The group's runners: this one, not the Default group's.
			if _, _, err := gh.Actions.GenerateOrgJITConfig(ctx, "acme", &github.GenerateJITConfigRequest{
				Name: "default-" + name, RunnerGroupID: 1, Labels: []string{"x"}}); err != nil {
				t.Fatal(err)
			}
			inGroup, _, err := gh.Actions.ListRunnerGroupRunners(ctx, "acme", group.GetID(), &github.ListOptions{PerPage: 100})
			if err != nil || inGroup.TotalCount != 1 || inGroup.Runners[0].GetName() != "hr-"+name {
				t.Fatalf("runner group's runners: %v %+v", err, inGroup)
			}

			// The runner connects and takes the job: in_progress names it; it is busy, so removing it is a 422.
			p.post(t, "/runners/connect", map[string]any{"jitConfig": jit.GetEncodedJITConfig()}, nil)
			running := wantAction(t, events, "in_progress", id).GetWorkflowJob()
			if running.GetRunnerName() != "hr-"+name || running.GetRunnerID() != jit.GetRunner().GetID() {
				t.Fatalf("in_progress runner: %q %d", running.GetRunnerName(), running.GetRunnerID())
			}
			runnerID := jit.GetRunner().GetID()
			_, err = gh.Actions.RemoveOrganizationRunner(ctx, "acme", runnerID)
			wantStatus(t, "remove a busy runner", err, 422)

			// Runner lists page through Link headers as on GitHub.
			for i := 0; i < 3; i++ {
				if _, _, err := gh.Actions.GenerateOrgJITConfig(ctx, "acme", &github.GenerateJITConfigRequest{
					Name: "idle-" + name + "-" + string(rune('a'+i)), RunnerGroupID: group.GetID(), Labels: []string{"self-hosted"}}); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[int64]bool{}
			busy := false
			opts := &github.ListRunnersOptions{ListOptions: github.ListOptions{PerPage: 2}}
			pages := 0
			for {
				list, resp, err := gh.Actions.ListOrganizationRunners(ctx, "acme", opts)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, r := range list.Runners {
					if seen[r.GetID()] {
						t.Fatalf("runner %d listed twice", r.GetID())
					}
					seen[r.GetID()] = true
					if r.GetID() == runnerID {
						busy = r.GetBusy() && r.GetStatus() == "online" && len(r.Labels) == 2 && r.Labels[1].GetName() == "gpu"
					}
				}
				if resp.NextPage == 0 {
					if list.TotalCount != len(seen) {
						t.Fatalf("total_count %d, walked %d", list.TotalCount, len(seen))
					}
					break
				}
				opts.Page = resp.NextPage
			}
			if pages < 2 || !busy {
				t.Fatalf("runner list: %d pages, busy runner seen as busy+online+labels: %v", pages, busy)
			}

			// The job completes; the ephemeral runner is gone (404), an idle one is removed (204).
			p.post(t, "/runners/finish", map[string]any{"runnerId": runnerID}, nil)
			if c := wantAction(t, events, "completed", id).GetWorkflowJob(); c.GetConclusion() != "success" {
				t.Fatalf("finished job conclusion %q", c.GetConclusion())
			}
			_, err = gh.Actions.RemoveOrganizationRunner(ctx, "acme", runnerID)
			wantStatus(t, "remove a finished ephemeral runner", err, 404)
			for rid := range seen {
				if rid == runnerID {
					continue
				}
				if resp, err := gh.Actions.RemoveOrganizationRunner(ctx, "acme", rid); err != nil || resp.StatusCode != 204 {
					t.Fatalf("remove idle runner %d: %v", rid, err)
				}
			}

			// A job GitHub no longer knows is a 404.
			p.post(t, "/webhooks/forget", map[string]any{"jobId": id}, nil)
			_, _, err = gh.Actions.GetWorkflowJobByID(ctx, "acme", "app", id)
			wantStatus(t, "forgotten job", err, 404)
		})
	}

	// A repository-scoped runner: repo JIT config, repo list, repo delete.
	gh := restClient(t, p.plain.URL, p.pat)
	jit, _, err := gh.Actions.GenerateRepoJITConfig(ctx, "solo", "lib", &github.GenerateJITConfigRequest{Name: "repo-runner", RunnerGroupID: 1, Labels: []string{"self-hosted"}})
	if err != nil || jit.GetRunner().GetID() == 0 {
		t.Fatalf("repo JIT config: %v", err)
	}
	list, _, err := gh.Actions.ListRunners(ctx, "solo", "lib", nil)
	if err != nil || list.TotalCount != 1 || list.Runners[0].GetName() != "repo-runner" || list.Runners[0].GetStatus() != "offline" {
		t.Fatalf("repo runners: %v %+v", err, list)
	}
	if _, err := gh.Actions.RemoveRunner(ctx, "solo", "lib", jit.GetRunner().GetID()); err != nil {
		t.Fatalf("remove repo runner: %v", err)
	}
	if list, _, _ = gh.Actions.ListRunners(ctx, "solo", "lib", nil); list == nil || list.TotalCount != 0 {
		t.Fatalf("repo runner still listed: %+v", list)
	}
}

// An App installed in several accounts, as go-github finds and uses it: the installation of an
// organization and of a repository (App JWT), a token per installation, and a token that reaches
// only its own account (another account's paths answer 404, as GitHub's do).
func TestGoGitHubAppInstallations(t *testing.T) {
	p := startPeer(t)
	p.srv.mu.Lock()
	p.srv.cfg.Installations = map[string]int64{"org-one": 101, "org-two": 102}
	p.srv.mu.Unlock()
	key, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(p.keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer: p.appID, IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
	}).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	app := restClient(t, p.plain.URL, signed)
	one, _, err := app.Apps.FindOrganizationInstallation(ctx, "org-one")
	if err != nil || one.GetID() != 101 {
		t.Fatalf("org-one's installation: %v %+v", err, one)
	}
	two, _, err := app.Apps.FindRepositoryInstallation(ctx, "org-two", "app")
	if err != nil || two.GetID() != 102 {
		t.Fatalf("org-two/app's installation: %v %+v", err, two)
	}
	_, _, err = app.Apps.FindOrganizationInstallation(ctx, "not-installed")
	wantStatus(t, "an account the App is not installed in", err, 404)
	_, _, err = restClient(t, p.plain.URL, "not-a-jwt").Apps.FindOrganizationInstallation(ctx, "org-one")
	wantStatus(t, "no App JWT", err, 401)

	tok, _, err := app.Apps.CreateInstallationToken(ctx, 101, nil)
	if err != nil || tok.GetToken() == "" {
		t.Fatalf("installation token: %v", err)
	}
	_, _, err = app.Apps.CreateInstallationToken(ctx, 999, nil)
	wantStatus(t, "an unknown installation", err, 404)
	mine := restClient(t, p.plain.URL, tok.GetToken())
	if _, _, err := mine.Actions.ListOrganizationRunnerGroups(ctx, "org-one", nil); err != nil {
		t.Fatalf("org-one's token on org-one: %v", err)
	}
	_, _, err = mine.Actions.ListOrganizationRunnerGroups(ctx, "org-two", nil)
	wantStatus(t, "org-one's token on org-two", err, 404)
	_, _, err = mine.Actions.GenerateRepoJITConfig(ctx, "org-two", "app", &github.GenerateJITConfigRequest{Name: "r", Labels: []string{"x"}})
	wantStatus(t, "org-one's token on a repository of org-two", err, 404)
}

// Two Apps, one per account kind (seed 003), as go-github uses them: each App's JWT finds only its
// own installations and gets tokens only for them; the second App's token reaches its account.
func TestGoGitHubSecondApp(t *testing.T) {
	p := startPeer(t)
	userKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p.srv.mu.Lock()
	p.srv.cfg.Installations = map[string]int64{"org-one": 101}
	p.srv.cfg.UserApp = &appSettings{ID: "67890", Key: &userKey.PublicKey, Installations: map[string]int64{"dana": 501}}
	p.srv.mu.Unlock()
	orgKey, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(p.keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	sign := func(iss string, key *rsa.PrivateKey) string {
		now := time.Now()
		signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
			Issuer: iss, IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
		}).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return signed
	}
	ctx := context.Background()
	org := restClient(t, p.plain.URL, sign(p.appID, orgKey))
	user := restClient(t, p.plain.URL, sign("67890", userKey))
	_, _, err = org.Apps.FindRepositoryInstallation(ctx, "dana", "tool")
	wantStatus(t, "the first App in the second's account", err, 404)
	inst, _, err := user.Apps.FindRepositoryInstallation(ctx, "dana", "tool")
	if err != nil || inst.GetID() != 501 || inst.GetAppID() != 67890 {
		t.Fatalf("dana/tool's installation of the second App: %v %+v", err, inst)
	}
	_, _, err = user.Apps.FindOrganizationInstallation(ctx, "org-one")
	wantStatus(t, "the second App in the first's account", err, 404)
	_, _, err = user.Apps.CreateInstallationToken(ctx, 101, nil)
	wantStatus(t, "the second App's JWT for the first App's installation", err, 404)
	_, _, err = restClient(t, p.plain.URL, sign("67890", orgKey)).Apps.FindRepositoryInstallation(ctx, "dana", "tool")
	wantStatus(t, "the second App's iss signed with the first App's key", err, 401)
	tok, _, err := user.Apps.CreateInstallationToken(ctx, 501, nil)
	if err != nil || tok.GetToken() == "" {
		t.Fatalf("the second App's installation token: %v", err)
	}
	mine := restClient(t, p.plain.URL, tok.GetToken())
	if _, _, err := mine.Actions.GenerateRepoJITConfig(ctx, "dana", "tool", &github.GenerateJITConfigRequest{Name: "r", Labels: []string{"x"}}); err != nil {
		t.Fatalf("dana's token on dana/tool: %v", err)
	}
	_, _, err = mine.Actions.ListOrganizationRunnerGroups(ctx, "org-one", nil)
	wantStatus(t, "dana's token on org-one", err, 404)
}

// Enterprise runners as go-github makes them: an enterprise runner group, a JIT runner in it, the
// group's runners listed, and the runner removed.
func TestGoGitHubEnterpriseRunners(t *testing.T) {
	p := startPeer(t)
	ctx := context.Background()
	gh := restClient(t, p.plain.URL, p.pat)
	group, resp, err := gh.Enterprise.CreateEnterpriseRunnerGroup(ctx, "acme-ent", github.CreateEnterpriseRunnerGroupRequest{
		Name: github.Ptr("headroom"), Visibility: github.Ptr("all")})
	if err != nil || resp.StatusCode != 201 || group.GetID() == 0 {
		t.Fatalf("create an enterprise runner group: %v %+v", err, group)
	}
	groups, _, err := gh.Enterprise.ListRunnerGroups(ctx, "acme-ent", nil)
	if err != nil || groups.GetTotalCount() != 2 || groups.RunnerGroups[1].GetName() != "headroom" {
		t.Fatalf("enterprise runner groups: %v %+v", err, groups)
	}
	jit, resp, err := gh.Enterprise.GenerateEnterpriseJITConfig(ctx, "acme-ent", &github.GenerateJITConfigRequest{
		Name: "ent-runner", RunnerGroupID: group.GetID(), Labels: []string{"self-hosted"}})
	if err != nil || resp.StatusCode != 201 || jit.GetRunner().GetID() == 0 {
		t.Fatalf("enterprise JIT config: %v %+v", err, jit)
	}
	_, _, err = gh.Enterprise.GenerateEnterpriseJITConfig(ctx, "acme-ent", &github.GenerateJITConfigRequest{
		Name: "ent-nogroup", RunnerGroupID: 987654, Labels: []string{"x"}})
	wantStatus(t, "unknown enterprise runner group", err, 404)
	runners, _, err := gh.Enterprise.ListRunnerGroupRunners(ctx, "acme-ent", group.GetID(), nil)
	if err != nil || runners.TotalCount != 1 || runners.Runners[0].GetName() != "ent-runner" {
		t.Fatalf("enterprise group's runners: %v %+v", err, runners)
	}
	if _, err := gh.Enterprise.RemoveRunner(ctx, "acme-ent", jit.GetRunner().GetID()); err != nil {
		t.Fatalf("remove an enterprise runner: %v", err)
	}
}
