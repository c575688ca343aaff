// The webhook-driven side of the peer (seed 003's GitHub): jobs that are announced by signed
// `workflow_job` webhooks instead of scale-set messages, and the REST calls a webhook-driven
// scheduler makes — job and run info, runner groups, org and repo JIT configs, runner lists and
// deletes (422 while the runner is busy).
//
// A JIT runner made here connects with /_control/runners/connect like a scale-set one; it is
// given the oldest queued webhook job of its entity whose labels it has, the peer sends
// `in_progress`, and /_control/runners/finish sends `completed`.
//
// Control:
//
//	POST /_control/webhooks/config    {url, secret}: where deliveries go and the HMAC key
//	POST /_control/webhooks/jobs      {organization, repository, labels, count, announce=true}
//	POST /_control/webhooks/complete  {jobId, conclusion}: completes a job (no runner needed)
//	POST /_control/webhooks/forget    {jobId}: the job disappears (REST 404)
//	POST /_control/webhooks/run-done  {jobId}: the job's run completes while the job is queued
//	POST /_control/webhooks/hold      {jobId}: no runner is given the job (an environment waiting for approval)
//	POST /_control/webhooks/announce  {jobId}: sends the job's queued delivery (after announce=false)
//	POST /_control/webhooks/redeliver {deliveryId}: sends it again, same X-GitHub-Delivery (the UI's "Redeliver")
//	POST /_control/webhooks/forged    {count}: queued deliveries with a wrong signature
//	GET  /_control/webhooks/state     {jobs, deliveries, redeliveries, runners}
//
// The App's webhook deliveries are also served as GitHub's REST API does (hook_deliveries.go):
// GET /app/hook/deliveries and POST /app/hook/deliveries/{id}/attempts. Like GitHub, the peer
// never sends a failed delivery again by itself.
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	reRestJob          = regexp.MustCompile(`^(/api/v3)?/repos/([^/]+/[^/]+)/actions/jobs/(\d+)$`)
	reRestRun          = regexp.MustCompile(`^(/api/v3)?/repos/([^/]+/[^/]+)/actions/runs/(\d+)$`)
	reRestGroups       = regexp.MustCompile(`^(/api/v3)?/(orgs/[^/]+|enterprises/[^/]+)/actions/runner-groups$`)
	reRestJIT          = regexp.MustCompile(`^(/api/v3)?/(orgs/[^/]+|enterprises/[^/]+|repos/[^/]+/[^/]+)/actions/runners/generate-jitconfig$`)
	reRestRunners      = regexp.MustCompile(`^(/api/v3)?/(orgs/[^/]+|enterprises/[^/]+|repos/[^/]+/[^/]+)/actions/runners$`)
	reRestRunner       = regexp.MustCompile(`^(/api/v3)?/(orgs/[^/]+|enterprises/[^/]+|repos/[^/]+/[^/]+)/actions/runners/(\d+)$`)
	reRestGroupRunners = regexp.MustCompile(`^(/api/v3)?/(orgs/[^/]+|enterprises/[^/]+)/actions/runner-groups/(\d+)/runners$`)
	reRestRepo         = regexp.MustCompile(`^(/api/v3)?/repos/([^/]+/[^/]+)$`)
)

// repoID: a repository's id, stable for its name (the peer keeps no repository table).
func repoID(fullName string) int64 {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(fullName)))
	return int64(h.Sum32()%1_000_000) + 1
}

// groupAllows: a runner of a group with visibility "selected" takes only its repositories' jobs.
func (s *server) groupAllows(h *hookState, r *runner, j *job) bool {
	if r.GroupID <= 1 || j.Org == "" {
		return true
	}
	for _, g := range h.groups[j.Org] {
		if g["id"] != r.GroupID || g["visibility"] != "selected" {
			continue
		}
		for _, id := range g["selected_repository_ids"].([]int64) {
			if id == repoID(j.Repository) {
				return true
			}
		}
		return false
	}
	return true
}

func restRouteOf(path string) string {
	switch {
	case reRestJob.MatchString(path):
		return "rest_job"
	case reRestRun.MatchString(path):
		return "rest_run"
	case reRestGroups.MatchString(path):
		return "rest_runner_groups"
	case reRestJIT.MatchString(path):
		return "rest_jit"
	case reRestRunners.MatchString(path), reRestGroupRunners.MatchString(path):
		return "rest_runners"
	case reRestRunner.MatchString(path):
		return "rest_runner"
	case reRestRepo.MatchString(path):
		return "rest_repo"
	case reAppHookDeliveries.MatchString(path):
		return "rest_app_hook_deliveries"
	case reAppHookAttempts.MatchString(path):
		return "rest_app_hook_attempts"
	}
	return ""
}

// One attempt to deliver a webhook. A redelivery is a new attempt: its own HookID, the same ID.
type delivery struct {
	ID         string    `json:"id"`     // X-GitHub-Delivery: the API's guid
	HookID     int64     `json:"hookId"` // the API's id: what POST /app/hook/deliveries/{id}/attempts names
	JobID      int64     `json:"jobId"`
	Event      string    `json:"event"`
	Action     string    `json:"action"`
	Redelivery bool      `json:"redelivery"`
	Forged     bool      `json:"forged,omitempty"`
	Status     int       `json:"status"`     // headroom's answer; 0 until delivered, -1 when it could not connect
	StatusText string    `json:"statusText"` // the API's status: "OK" for a 2xx, else what went wrong
	Answer     string    `json:"answer"`
	SentAt     time.Time `json:"sentAt"`
	Latency    float64   `json:"latencyMs"`
	body       []byte
	repo       string // owner/name, for the API's repository_id
}

type hookState struct {
	url, secret string
	deliveries  []*delivery
	queue       chan *delivery
	groups      map[string][]map[string]any // org → runner groups
	lastHookID  int64                       // delivery ids: GitHub's are large, past 32 bits
}

func (h *hookState) newHookID() int64 {
	h.lastHookID++
	return h.lastHookID
}

// The entity a webhook job's runners belong to: the organization, else the repository.
func (j *job) entity() string {
	if j.Org != "" {
		return j.Org
	}
	return j.Repository
}

func (s *server) hooks() *hookState {
	if s.hook == nil {
		s.hook = &hookState{queue: make(chan *delivery, 100000), groups: map[string][]map[string]any{}, deliveries: []*delivery{},
			lastHookID: 90_000_000_000}
		go s.deliverLoop(s.hook)
	}
	return s.hook
}

// deliverLoop posts deliveries one at a time, in the order they were made (as GitHub's sender
// does per hook; tests reorder on purpose with announce=false and /complete).
func (s *server) deliverLoop(h *hookState) {
	client := &http.Client{Timeout: 10 * time.Second}
	for d := range h.queue {
		s.mu.Lock()
		url, secret := h.url, h.secret
		s.mu.Unlock()
		sig := sign(secret, d.body)
		if d.Forged {
			sig = sign(secret+"-not-it", d.body)
		}
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(d.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", d.Event)
		req.Header.Set("X-GitHub-Delivery", d.ID)
		req.Header.Set("X-Hub-Signature-256", sig)
		req.Header.Set("User-Agent", "GitHub-Hookshot/peer")
		start := time.Now()
		status, answer := -1, ""
		resp, err := client.Do(req)
		if err == nil {
			b := make([]byte, 512)
			n, _ := resp.Body.Read(b)
			status, answer = resp.StatusCode, string(b[:n])
			resp.Body.Close()
		} else {
			answer = err.Error()
		}
		s.mu.Lock()
		d.Status, d.Answer, d.SentAt, d.Latency = status, answer, start, float64(time.Since(start).Microseconds())/1000
		d.StatusText = deliveryStatus(status, err)
		s.notify()
		s.mu.Unlock()
	}
}

func sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func ghStatus(j *job) string {
	switch j.State {
	case "running":
		return "in_progress"
	case "completed":
		return "completed"
	}
	return "queued"
}

// ghConclusion: the REST/webhook name of a job result the scale-set side spells its own way.
func ghConclusion(result string) string {
	switch result {
	case "succeeded":
		return "success"
	case "failed":
		return "failure"
	case "canceled":
		return "cancelled"
	}
	return result
}

func (s *server) restJob(j *job) map[string]any {
	out := map[string]any{
		"id": j.RequestID, "run_id": j.runID, "name": j.Name, "labels": j.Labels, "status": ghStatus(j),
		"conclusion": nil, "runner_id": nil, "runner_name": nil, "created_at": ts(j.QueueTime),
		"html_url": fmt.Sprintf("https://github.com/%s/actions/runs/%d/job/%d", j.Repository, j.runID, j.RequestID),
	}
	if j.State == "completed" {
		out["conclusion"] = ghConclusion(j.Result)
	}
	if j.RunnerID != 0 {
		out["runner_id"] = j.RunnerID
		out["runner_name"] = j.runnerName
	}
	return out
}

// announce queues one delivery of `action` for the job (s.mu held).
func (s *server) announce(j *job, action string, forged bool) *delivery {
	h := s.hooks()
	parts := strings.SplitN(j.Repository, "/", 2)
	payload := map[string]any{
		"action": action, "workflow_job": s.restJob(j),
		"repository":   map[string]any{"full_name": j.Repository, "name": parts[len(parts)-1], "owner": map[string]any{"login": parts[0]}},
		"installation": map[string]any{"id": s.cfg.InstallationID}, "sender": map[string]any{"login": "octocat"},
	}
	if j.Org != "" {
		payload["organization"] = map[string]any{"login": j.Org}
	}
	body, _ := json.Marshal(payload)
	d := &delivery{ID: uuid4(), HookID: h.newHookID(), JobID: j.RequestID, Event: "workflow_job", Action: action, Forged: forged,
		body: body, repo: j.Repository}
	h.deliveries = append(h.deliveries, d)
	if h.url != "" {
		h.queue <- d
	}
	return d
}

// scheduleWebhookJobs gives queued webhook jobs, oldest first, to idle connected JIT runners of
// the job's entity that carry every label the job asks for (s.mu held).
func (s *server) scheduleWebhookJobs() {
	ids := make([]int64, 0)
	for id, j := range s.jobs {
		if j.Webhook && j.State == "queued" && !j.runDone && !j.held {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	rids := make([]int, 0, len(s.runners))
	for id := range s.runners {
		rids = append(rids, id)
	}
	sort.Ints(rids)
	for _, id := range ids {
		j := s.jobs[id]
		for _, rid := range rids {
			r := s.runners[rid]
			// An enterprise's runner takes any of its organizations' jobs (every org here).
			enterprise := strings.HasPrefix(r.Entity, "enterprises/") && j.Org != ""
			if r.Entity == "" || (r.Entity != j.entity() && !enterprise) || !r.Connected || r.JobRequest != 0 || !subset(j.Labels, r.labels()) ||
				!s.groupAllows(s.hooks(), r, j) {
				continue
			}
			r.JobRequest, r.Busy = j.RequestID, true
			j.RunnerID, j.runnerName, j.State, j.runnerTime = r.ID, r.Name, "running", time.Now()
			s.announce(j, "in_progress", false)
			break
		}
	}
}

func (r *runner) labels() []label {
	out := make([]label, 0, len(r.Labels))
	for _, l := range r.Labels {
		out = append(out, label{Type: "User", Name: l})
	}
	return out
}

func (s *server) restAuthorized(r *http.Request) bool {
	tok := bearer(r, "Bearer")
	if tok == "" {
		tok = bearer(r, "token")
	}
	return (s.cfg.PAT != "" && tok == s.cfg.PAT) || s.validToken(tok, "installation")
}

// restForAccount: with several installations, an installation token reaches only its own
// account's paths (orgs/{org}/…, repos/{owner}/…), as GitHub answers another account's: 404.
func (s *server) restForAccount(r *http.Request) bool {
	if len(s.cfg.Installations) == 0 && s.cfg.UserApp == nil {
		return true
	}
	tok := bearer(r, "Bearer")
	if tok == "" {
		tok = bearer(r, "token")
	}
	t, ok := s.tokens[tok]
	if !ok || t.kind != "installation" {
		return true // a PAT reaches every account it may
	}
	parts := strings.Split(strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/api/v3"), "/"), "/")
	if len(parts) < 2 || (parts[0] != "orgs" && parts[0] != "repos") {
		return true
	}
	if len(s.cfg.Installations) == 0 && t.installation == s.cfg.InstallationID {
		return true // the first App's one installation reaches every account it may
	}
	want, known := s.accountInstallation(parts[1])
	return known && want == t.installation
}

func ghError(status int, msg string) reply {
	return jsonReply(status, map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

// scopeOf: "orgs/x" → entity x, org x; "enterprises/e" → entity and "org" enterprises/e (its
// runner groups are kept as an organization's); "repos/o/r" → entity o/r.
func scopeOf(path string) (entity string, org string) {
	if strings.HasPrefix(path, "orgs/") {
		return path[5:], path[5:]
	}
	if strings.HasPrefix(path, "enterprises/") {
		return path, path
	}
	return strings.TrimPrefix(path, "repos/"), ""
}

func (s *server) restAPI(r *http.Request, route string, body []byte) reply {
	if route == "rest_app_hook_deliveries" || route == "rest_app_hook_attempts" {
		return s.appHookAPI(r, route) // the App's own webhook: its JWT, not an installation token
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	if !s.restAuthorized(r) {
		return ghError(401, "Bad credentials")
	}
	if !s.restForAccount(r) {
		s.counts["wrong_installation"]++
		return ghError(404, "Not Found")
	}
	h := s.hooks()
	switch route {
	case "rest_job":
		m := reRestJob.FindStringSubmatch(r.URL.Path)
		id, _ := strconv.ParseInt(m[3], 10, 64)
		j := s.jobs[id]
		if j == nil || !j.Webhook || j.Repository != m[2] {
			return ghError(404, "Not Found")
		}
		return jsonReply(200, s.restJob(j))
	case "rest_run":
		m := reRestRun.FindStringSubmatch(r.URL.Path)
		id, _ := strconv.ParseInt(m[3], 10, 64)
		for _, j := range s.jobs {
			if j.Webhook && j.runID == id && j.Repository == m[2] {
				status := ghStatus(j)
				if j.runDone {
					status = "completed"
				}
				return jsonReply(200, map[string]any{"id": id, "status": status})
			}
		}
		return ghError(404, "Not Found")
	case "rest_runner_groups":
		_, org := scopeOf(reRestGroups.FindStringSubmatch(r.URL.Path)[2])
		if r.Method == http.MethodPost {
			var req struct {
				Name       string  `json:"name"`
				Visibility string  `json:"visibility"`
				Selected   []int64 `json:"selected_repository_ids"`
			}
			if err := json.Unmarshal(body, &req); err != nil || req.Name == "" {
				return ghError(422, "name is required")
			}
			for _, g := range h.groups[org] {
				if g["name"] == req.Name {
					return ghError(409, "Runner group already exists")
				}
			}
			if req.Visibility == "" {
				req.Visibility = "all"
			}
			if req.Visibility != "all" && req.Visibility != "selected" && req.Visibility != "private" {
				return ghError(422, "visibility must be all, selected or private")
			}
			if req.Selected == nil {
				req.Selected = []int64{}
			}
			g := map[string]any{"id": s.id(), "name": req.Name, "visibility": req.Visibility, "default": false,
				"selected_repository_ids": req.Selected}
			h.groups[org] = append(h.groups[org], g)
			return jsonReply(201, g)
		}
		all := append([]map[string]any{{"id": 1, "name": "Default", "visibility": "all", "default": true}}, h.groups[org]...)
		return jsonReply(200, map[string]any{"total_count": len(all), "runner_groups": all})
	case "rest_jit":
		m := reRestJIT.FindStringSubmatch(r.URL.Path)
		entity, org := scopeOf(m[2])
		var req struct {
			Name          string   `json:"name"`
			RunnerGroupID int64    `json:"runner_group_id"`
			Labels        []string `json:"labels"`
			WorkFolder    string   `json:"work_folder"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Name == "" || len(req.Labels) == 0 {
			return ghError(422, "Invalid request: name and labels are required")
		}
		if org != "" {
			found := req.RunnerGroupID == 1
			for _, g := range h.groups[org] {
				if g["id"] == req.RunnerGroupID {
					found = true
				}
			}
			if !found {
				return ghError(404, "Runner group not found")
			}
		}
		for _, rn := range s.runners {
			if rn.Name == req.Name && rn.Entity == entity {
				return ghError(409, "Already exists - A runner with the name "+req.Name+" already exists.")
			}
		}
		rn := &runner{ID: int(s.id()), Name: req.Name, Status: "offline", nonce: randomToken(""), Entity: entity, Labels: req.Labels}
		if org != "" {
			rn.GroupID = req.RunnerGroupID
		}
		s.runners[rn.ID] = rn
		return jsonReply(201, map[string]any{
			"runner":             map[string]any{"id": rn.ID, "name": rn.Name, "os": "linux", "status": "offline", "busy": false},
			"encoded_jit_config": encodeJIT(r, rn, 0),
		})
	case "rest_runners": // an entity's runners, or an organization runner group's
		var entity string
		group := int64(-1)
		if m := reRestGroupRunners.FindStringSubmatch(r.URL.Path); m != nil {
			entity, _ = scopeOf(m[2])
			group, _ = strconv.ParseInt(m[3], 10, 64)
		} else {
			entity, _ = scopeOf(reRestRunners.FindStringSubmatch(r.URL.Path)[2])
		}
		out := []map[string]any{}
		ids := []int{}
		for id, rn := range s.runners {
			if rn.Entity == entity && (group < 0 || rn.GroupID == group) {
				ids = append(ids, id)
			}
		}
		sort.Ints(ids)
		for _, id := range ids {
			rn := s.runners[id]
			ls := []map[string]any{}
			for _, l := range rn.Labels {
				ls = append(ls, map[string]any{"name": l, "type": "custom"})
			}
			out = append(out, map[string]any{"id": rn.ID, "name": rn.Name, "os": "linux", "status": rn.Status, "busy": rn.Busy, "labels": ls})
		}
		perPage, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if perPage <= 0 || perPage > 100 {
			perPage = 30
		}
		if page <= 0 {
			page = 1
		}
		total := len(out)
		lo, hi := (page-1)*perPage, page*perPage
		if lo > total {
			lo = total
		}
		if hi > total {
			hi = total
		}
		rep := jsonReply(200, map[string]any{"total_count": total, "runners": out[lo:hi]})
		if hi < total { // GitHub's pagination: the next page by Link as well as by total_count
			next := *r.URL
			q := next.Query()
			q.Set("page", strconv.Itoa(page+1))
			q.Set("per_page", strconv.Itoa(perPage))
			next.RawQuery = q.Encode()
			rep.link = fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.RequestURI())
		}
		return rep
	case "rest_repo":
		name := reRestRepo.FindStringSubmatch(r.URL.Path)[2]
		return jsonReply(200, map[string]any{"id": repoID(name), "full_name": name, "name": strings.SplitN(name, "/", 2)[1]})
	case "rest_runner":
		m := reRestRunner.FindStringSubmatch(r.URL.Path)
		entity, _ := scopeOf(m[2])
		id, _ := strconv.Atoi(m[3])
		rn := s.runners[id]
		if rn == nil || rn.Entity != entity {
			return ghError(404, "Not Found")
		}
		if r.Method != http.MethodDelete {
			return jsonReply(200, map[string]any{"id": rn.ID, "name": rn.Name, "status": rn.Status, "busy": rn.Busy})
		}
		if rn.Busy {
			return ghError(422, "Bad request - Runner \""+rn.Name+"\" is still running a job\"")
		}
		delete(s.runners, id)
		return reply{status: 204}
	}
	return ghError(404, "Not Found")
}

func (s *server) webhookControl(r *http.Request, body []byte) (reply, bool) {
	bad := func(err error) (reply, bool) { return textReply(400, err.Error()), false }
	h := s.hooks()
	jobOf := func() (*job, reply, bool) {
		var req struct {
			JobID      int64  `json:"jobId"`
			Conclusion string `json:"conclusion"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, textReply(400, err.Error()), false
		}
		j := s.jobs[req.JobID]
		if j == nil || !j.Webhook {
			return nil, textReply(404, "no such webhook job"), true
		}
		if req.Conclusion != "" {
			j.Result = req.Conclusion
		}
		return j, reply{}, true
	}
	switch r.URL.Path {
	case "/_control/webhooks/config":
		var req struct {
			URL    string `json:"url"`
			Secret string `json:"secret"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return bad(err)
		}
		h.url, h.secret = req.URL, req.Secret
		return jsonReply(200, map[string]any{"url": h.url}), false
	case "/_control/webhooks/jobs":
		req := struct {
			Organization string   `json:"organization"`
			Repository   string   `json:"repository"`
			Labels       []string `json:"labels"`
			Name         string   `json:"name"`
			Count        int      `json:"count"`
			Announce     *bool    `json:"announce"`
		}{}
		if err := json.Unmarshal(body, &req); err != nil {
			return bad(err)
		}
		if req.Count <= 0 {
			req.Count = 1
		}
		if req.Repository == "" {
			req.Repository = "headroom-org/app"
		}
		if req.Name == "" {
			req.Name = "build"
		}
		ids := []int64{}
		for i := 0; i < req.Count; i++ {
			id := s.id()
			j := &job{RequestID: id, JobID: uuid4(), Labels: req.Labels, Repository: req.Repository, State: "queued",
				QueueTime: time.Now(), runID: 9000 + id, Webhook: true, Org: req.Organization, Name: req.Name}
			s.jobs[id] = j
			if req.Announce == nil || *req.Announce {
				s.announce(j, "queued", false)
			}
			ids = append(ids, id)
		}
		return jsonReply(200, map[string]any{"ids": ids}), true
	case "/_control/webhooks/complete":
		j, rep, ok := jobOf()
		if j == nil {
			return rep, ok
		}
		if j.Result == "" {
			j.Result = "cancelled"
		}
		j.State, j.finishTime = "completed", time.Now()
		if rn := s.runners[j.RunnerID]; rn != nil {
			rn.JobRequest, rn.Busy = 0, false
		}
		d := s.announce(j, "completed", false)
		return jsonReply(200, map[string]any{"deliveryId": d.ID}), true
	case "/_control/webhooks/forget":
		j, rep, ok := jobOf()
		if j == nil {
			return rep, ok
		}
		delete(s.jobs, j.RequestID)
		return jsonReply(200, map[string]any{"forgotten": j.RequestID}), true
	case "/_control/webhooks/run-done":
		j, rep, ok := jobOf()
		if j == nil {
			return rep, ok
		}
		j.runDone = true
		return jsonReply(200, map[string]any{"runId": j.runID}), true
	case "/_control/webhooks/hold":
		j, rep, ok := jobOf()
		if j == nil {
			return rep, ok
		}
		j.held = true
		return jsonReply(200, map[string]any{"held": j.RequestID}), false
	case "/_control/webhooks/announce":
		j, rep, ok := jobOf()
		if j == nil {
			return rep, ok
		}
		d := s.announce(j, "queued", false)
		return jsonReply(200, map[string]any{"deliveryId": d.ID}), false
	case "/_control/webhooks/redeliver":
		var req struct {
			DeliveryID string `json:"deliveryId"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return bad(err)
		}
		for _, d := range h.deliveries {
			if d.ID == req.DeliveryID {
				s.redeliver(h, d)
				return jsonReply(200, map[string]any{"redelivered": d.ID}), false
			}
		}
		return textReply(404, "no such delivery"), false
	case "/_control/webhooks/forged":
		var req struct {
			Count int `json:"count"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return bad(err)
		}
		for i := 0; i < req.Count; i++ {
			id := s.id()
			j := &job{RequestID: id, Labels: []string{"self-hosted"}, Repository: "attacker/repo", State: "queued",
				QueueTime: time.Now(), runID: 9000 + id, Webhook: true, Name: "forged"}
			s.announce(j, "queued", true) // the job itself is never known to the peer
		}
		return jsonReply(200, map[string]any{"forged": req.Count}), false
	case "/_control/webhooks/state":
		jobs := []*job{}
		for _, j := range s.jobs {
			if j.Webhook {
				jobs = append(jobs, j)
			}
		}
		sort.Slice(jobs, func(a, b int) bool { return jobs[a].RequestID < jobs[b].RequestID })
		runners := []*runner{}
		for _, rn := range s.runners {
			if rn.Entity != "" {
				runners = append(runners, rn)
			}
		}
		sort.Slice(runners, func(a, b int) bool { return runners[a].ID < runners[b].ID })
		redeliveries := 0
		for _, d := range h.deliveries {
			if d.Redelivery {
				redeliveries++
			}
		}
		return jsonReply(200, map[string]any{"jobs": jobs, "deliveries": h.deliveries, "redeliveries": redeliveries,
			"runners": runners, "requests": s.counts, "undelivered": len(h.queue)}), false
	}
	return textReply(404, "no such control endpoint"), false
}
