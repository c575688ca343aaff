// A test peer for headroom: a fake GitHub API + Actions Service speaking the scale-set protocol
// (../../../../shared/reference/actions-scaleset-protocol.md is the contract; the conformance test
// in this folder runs the real github.com/actions/scaleset client against it).
//
// It keeps a job model: jobs queue with label sets; a scale set is offered jobs only up to the
// X-ScaleSetMaxCapacity of its latest poll; unacknowledged messages are redelivered; a job nobody
// runs in time is re-queued up to 3 times and then completed as canceled; JIT configs are issued
// and a runner "connects" with one (JobStarted) and finishes (JobCompleted). Fault knobs and a
// control API under /_control/ let tests drive it.
package main

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

type settings struct {
	AppID          string         // GitHub App (client) id the JWT's iss must carry
	AppKey         *rsa.PublicKey // verifies the App JWT's RS256 signature
	InstallationID int64
	// More installations of the App, by account (organization or user login): each serves only
	// its account's REST paths, as GitHub's do (GET /orgs/{org}/installation finds them).
	Installations map[string]int64
	// A second App (the design of seed 003 has one for organizations and one for personal
	// accounts): its own id, key and installations; a JWT's iss says which App it is.
	UserApp            *appSettings
	PAT                string        // a personal access token accepted instead of an App
	PollHold           time.Duration // how long a GetMessage waits for something to say
	RunTimeout         time.Duration // an offered/assigned job no runner starts within this is re-queued
	AdminTokenTTL      time.Duration
	QueueTokenTTL      time.Duration
	SessionIdleTimeout time.Duration // a session nobody polls for this long is dropped
	HUDToken           string        // x-hud-internal-bot value the fake HUD accepts
}

type appSettings struct {
	ID            string
	Key           *rsa.PublicKey
	Installations map[string]int64 // account → installation
}

func defaultSettings() settings {
	return settings{
		InstallationID: 42, PollHold: 50 * time.Second, RunTimeout: 120 * time.Second,
		AdminTokenTTL: time.Hour, QueueTokenTTL: time.Hour, SessionIdleTimeout: 2 * time.Minute,
	}
}

type label struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type statistics struct {
	TotalAvailableJobs     int `json:"totalAvailableJobs"`
	TotalAcquiredJobs      int `json:"totalAcquiredJobs"`
	TotalAssignedJobs      int `json:"totalAssignedJobs"`
	TotalRunningJobs       int `json:"totalRunningJobs"`
	TotalRegisteredRunners int `json:"totalRegisteredRunners"`
	TotalBusyRunners       int `json:"totalBusyRunners"`
	TotalIdleRunners       int `json:"totalIdleRunners"`
}

type scaleSet struct {
	ID            int     `json:"id"`
	Name          string  `json:"name"`
	RunnerGroupID int     `json:"runnerGroupId"`
	GroupName     string  `json:"runnerGroupName"`
	Labels        []label `json:"labels"`
	RunnerSetting struct {
		DisableUpdate bool `json:"disableUpdate,omitempty"`
	} `json:"RunnerSetting"`
	CreatedOn   time.Time        `json:"createdOn"`
	JitURL      string           `json:"runnerJitConfigUrl"`
	pending     []map[string]any // job messages not yet packed into a session message
	capacity    int              // X-ScaleSetMaxCapacity of the latest poll
	hasCapacity bool
}

type session struct {
	ID         string
	Owner      string
	ScaleSetID int
	Token      string
	TokenExp   time.Time
	messages   []*message // unacknowledged, oldest first
	lastActive time.Time
	polling    int
}

type message struct {
	ID    int64
	Body  string
	Stats statistics
}

type job struct {
	RequestID   int64     `json:"runnerRequestId"`
	JobID       string    `json:"jobId"`
	Labels      []string  `json:"labels"`
	Repository  string    `json:"repository"`
	State       string    `json:"state"` // queued | offered | acquired | running | completed
	ScaleSetID  int       `json:"scaleSetId"`
	Requeues    int       `json:"requeues"`
	RunnerID    int       `json:"runnerId"`
	Result      string    `json:"result"`
	Assignments []int     `json:"assignments"` // every scale set it was offered to, in order
	QueueTime   time.Time `json:"queueTime"`
	offeredAt   time.Time
	assignTime  time.Time
	runnerTime  time.Time
	finishTime  time.Time
	runID       int64
	// Webhook-driven jobs (webhooks.go): announced by workflow_job deliveries, run by JIT runners.
	Webhook bool `json:"webhook,omitempty"`
	// The workflow's job container and its steps (shell commands), as the job message gives them to
	// the runner; a runner with a container hook runs the steps in the workflow pod.
	Container  string   `json:"container,omitempty"`
	Steps      []string `json:"steps,omitempty"`
	Org        string   `json:"organization,omitempty"`
	Name       string   `json:"name,omitempty"`
	runDone    bool
	held       bool
	runnerName string
}

// The times tests need (job start latency, completions near a poll), exported as JSON.
func (j *job) MarshalJSON() ([]byte, error) {
	type plain job
	return json.Marshal(struct {
		*plain
		AssignTime time.Time `json:"assignTime"`
		RunnerTime time.Time `json:"runnerTime"`
		FinishTime time.Time `json:"finishTime"`
	}{(*plain)(j), j.assignTime, j.runnerTime, j.finishTime})
}

type runner struct {
	ID         int    `json:"id"`
	Name       string `json:"name"`
	ScaleSetID int    `json:"runnerScaleSetId"`
	Connected  bool   `json:"connected"`
	JobRequest int64  `json:"jobRequestId"`
	Status     string `json:"status"` // offline until the runner connects, then online (as GitHub says)
	Busy       bool   `json:"busy"`
	nonce      string
	Entity     string   `json:"entity,omitempty"` // REST JIT runners (webhooks.go): their org or repo
	Labels     []string `json:"labels,omitempty"`
	GroupID    int64    `json:"groupId,omitempty"` // an organization's JIT runner: its runner group
}

type pollRecord struct {
	Seq           int       `json:"seq"`
	ScaleSetID    int       `json:"scaleSetId"`
	SessionID     string    `json:"sessionId"`
	Capacity      int       `json:"capacity"`
	LastMessageID int64     `json:"lastMessageId"`
	At            time.Time `json:"at"`
	// When the request arrived: before `at` when a fault held it before the service looked
	// (delayMs), so the capacity it carries was decided then, not at `at`.
	ArrivedAt   time.Time `json:"arrivedAt"`
	Status      int       `json:"status"`      // filled when the poll answers
	Offered     int       `json:"offered"`     // jobs held by the scale set when it answered
	HeldAtStart int       `json:"heldAtStart"` // jobs held by the scale set when the poll arrived
	Client      string    `json:"client"`      // the client's address: one per connection
}

// A fault: the next `Count` requests on `Route` answer `Status` (0 = normal handling), after
// `DelayMs`, with a malformed JSON body or a byte-order mark when asked.
type fault struct {
	Route     string `json:"route"`
	Status    int    `json:"status"`
	Count     int    `json:"count"`
	DelayMs   int    `json:"delayMs"`
	Malformed bool   `json:"malformed"`
	BOM       bool   `json:"bom"`
	// RetryAfter: the Retry-After header of the faulted answer (GitHub's rate limits send one).
	RetryAfter string `json:"retryAfter"`
	// ForMs: in force for this long from arming, however many requests it answers (an outage or
	// a storm rather than a number of bad answers); Count is then ignored.
	ForMs int `json:"forMs"`
	until time.Time
}

type server struct {
	mu       sync.Mutex
	cfg      settings
	changed  chan struct{} // closed and replaced on every state change: wakes long polls
	hmacKey  []byte
	tokens   map[string]tokenInfo
	groups   []map[string]any
	sets     map[int]*scaleSet
	sessions map[string]*session
	jobs     map[int64]*job
	runners  map[int]*runner
	polls    []pollRecord
	faults   []*fault
	counts   map[string]int // requests served per route, for tests
	nextID   int64
	logger   *log.Logger
	hook     *hookState // webhooks.go
}

type tokenInfo struct {
	kind         string // installation | registration | admin
	exp          time.Time
	installation int64 // installation tokens: whose
}

func newServer(cfg settings, logger *log.Logger) *server {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &server{
		cfg: cfg, changed: make(chan struct{}), hmacKey: key, tokens: map[string]tokenInfo{},
		groups: []map[string]any{{"id": 1, "name": "default", "size": 0, "isDefaultGroup": true}},
		sets:   map[int]*scaleSet{}, sessions: map[string]*session{}, jobs: map[int64]*job{},
		runners: map[int]*runner{}, counts: map[string]int{}, polls: []pollRecord{}, nextID: 1000, logger: logger,
	}
}

// ---- plumbing ----

func (s *server) id() int64 { s.nextID++; return s.nextID }

func (s *server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func randomToken(prefix string) string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

type reply struct {
	status     int
	body       any    // marshalled as JSON unless raw is set
	raw        string // sent as is
	ctype      string
	link       string // a GitHub-style Link header (REST list pages)
	retryAfter string
}

func jsonReply(status int, body any) reply { return reply{status: status, body: body} }
func textReply(status int, text string) reply {
	return reply{status: status, raw: text, ctype: "text/plain; charset=utf-8"}
}
func exception(status int, typeName, msg string) reply {
	return jsonReply(status, map[string]string{"typeName": typeName, "message": msg})
}

func (s *server) write(w http.ResponseWriter, r reply, f *fault) {
	var body []byte
	if r.raw != "" || r.body == nil {
		body = []byte(r.raw)
	} else {
		body, _ = json.Marshal(r.body)
	}
	ctype := r.ctype
	if ctype == "" && len(body) > 0 {
		ctype = "application/json; charset=utf-8"
	}
	if f != nil && f.Malformed {
		body = []byte(`{"messageId": 7, "messageType": "RunnerScaleSetJobMessages", "body": "[{\"messageType\": `)
		ctype = "application/json"
	}
	if f != nil && f.BOM {
		body = append([]byte("\xef\xbb\xbf"), body...)
	}
	if ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	if r.link != "" {
		w.Header().Set("Link", r.link)
	}
	if r.retryAfter != "" {
		w.Header().Set("Retry-After", r.retryAfter)
	}
	w.Header().Set("ActivityId", randomToken("act-"))
	w.WriteHeader(r.status)
	_, _ = w.Write(body)
}

// The fault for this route, consumed; nil when none is armed.
func (s *server) takeFault(route string) *fault {
	now := time.Now()
	kept := s.faults[:0]
	for _, f := range s.faults {
		if f.until.IsZero() || now.Before(f.until) {
			kept = append(kept, f)
		}
	}
	s.faults = kept
	for i, f := range s.faults {
		if f.Route == route || f.Route == "any" {
			if !f.until.IsZero() {
				return f
			}
			f.Count--
			if f.Count <= 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
			return f
		}
	}
	return nil
}

// What an armed fault status answers on a route, in the shape the real service uses.
func faultReply(route string, status int) reply {
	switch {
	case status == 401:
		return textReply(401, "The access token expired or is invalid.")
	case status == 409 && route == "create_session":
		return exception(409, "GitHub.DistributedTask.WebApi.RunnerScaleSetSessionConflictException",
			"The actions runner scale set already has an active session for owner another-listener.")
	case status == 404 && (route == "refresh_session" || route == "get_message"):
		return exception(404, "GitHub.DistributedTask.WebApi.RunnerScaleSetSessionNotFoundException",
			"The requested operation refers to a session ID that doesn't exist.")
	case status == 400 && route == "get_message":
		return textReply(400, "capacity error: the scale set cannot accept jobs")
	case (status == 403 || status == 429) && strings.HasPrefix(route, "rest_"):
		return ghError(status, "API rate limit exceeded for installation ID 42. If you reach out to GitHub Support for help, please include the request ID.")
	case status == 422 && route == "rest_runner":
		return ghError(422, "Bad request - Runner is still running a job")
	case status >= 500:
		return textReply(status, "upstream service unavailable")
	}
	return textReply(status, http.StatusText(status))
}

// ---- tokens ----

// An admin token is a JWT (HS256 with the peer's key) so that clients can read its exp.
func (s *server) adminJWT(exp time.Time) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	payload, _ := json.Marshal(map[string]any{"exp": exp.Unix(), "iat": time.Now().Unix(), "sub": "headroom-peer",
		"jti": randomToken("")})
	unsigned := head + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, s.hmacKey)
	mac.Write([]byte(unsigned))
	return unsigned + "." + enc.EncodeToString(mac.Sum(nil))
}

// installationsOf: App `app`'s installations by account (0: the first App, 1: the user App).
func (s *server) installationsOf(app int) map[string]int64 {
	if app == 1 {
		return s.cfg.UserApp.Installations
	}
	return s.cfg.Installations
}

// knownInstallation: `id` is one of App `app`'s installations (an App's JWT gets tokens only for
// its own).
func (s *server) knownInstallation(app int, id int64) bool {
	if app == 0 && id == s.cfg.InstallationID {
		return true
	}
	for _, v := range s.installationsOf(app) {
		if v == id {
			return true
		}
	}
	return false
}

// accountInstallation: the installation (of either App) in `account`; false when none is.
func (s *server) accountInstallation(account string) (int64, bool) {
	if id, ok := s.cfg.Installations[account]; ok {
		return id, true
	}
	if s.cfg.UserApp != nil {
		id, ok := s.cfg.UserApp.Installations[account]
		return id, ok
	}
	return 0, false
}

func (s *server) validToken(tok, kind string) bool {
	t, ok := s.tokens[tok]
	return ok && t.kind == kind && time.Now().Before(t.exp)
}

func bearer(r *http.Request, scheme string) string {
	h := r.Header.Get("Authorization")
	if len(h) > len(scheme)+1 && strings.EqualFold(h[:len(scheme)], scheme) && h[len(scheme)] == ' ' {
		return h[len(scheme)+1:]
	}
	return ""
}

// verifyAppJWT checks an RS256 App JWT: its iss names a configured App, whose key verifies the
// signature; iat and exp in range. Which App (0, or 1: the user App) it is.
func (s *server) verifyAppJWT(tok string) (int, error) {
	if s.cfg.AppKey == nil && s.cfg.UserApp == nil {
		return 0, fmt.Errorf("no GitHub App is configured")
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return 0, fmt.Errorf("not a JWT")
	}
	enc := base64.RawURLEncoding
	var head struct{ Alg string }
	hb, err := enc.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &head) != nil || head.Alg != "RS256" {
		return 0, fmt.Errorf("JWT header must say RS256")
	}
	var claims struct {
		Iss any
		Iat int64
		Exp int64
	}
	pb, err := enc.DecodeString(parts[1])
	if err != nil || json.Unmarshal(pb, &claims) != nil {
		return 0, fmt.Errorf("JWT claims are not JSON")
	}
	app, key := 0, s.cfg.AppKey
	switch iss := fmt.Sprint(claims.Iss); {
	case s.cfg.AppKey != nil && iss == s.cfg.AppID:
	case s.cfg.UserApp != nil && iss == s.cfg.UserApp.ID:
		app, key = 1, s.cfg.UserApp.Key
	default:
		return 0, fmt.Errorf("JWT iss is not the App")
	}
	sig, err := enc.DecodeString(parts[2])
	if err != nil {
		return 0, fmt.Errorf("JWT signature is not base64url")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig); err != nil {
		return 0, fmt.Errorf("JWT signature does not verify")
	}
	now := time.Now().Unix()
	if claims.Iat > now+60 || claims.Exp <= now || claims.Exp-claims.Iat > 600 {
		return 0, fmt.Errorf("JWT iat/exp out of range")
	}
	return app, nil
}

// ---- statistics and scheduling (s.mu held) ----

func subset(need []string, have []label) bool {
	for _, n := range need {
		found := false
		for _, h := range have {
			if strings.EqualFold(n, h.Name) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (s *server) stats(ss *scaleSet) statistics {
	var st statistics
	for _, j := range s.jobs {
		switch {
		case j.Webhook:
		case j.State == "queued" && subset(j.Labels, ss.Labels):
			st.TotalAvailableJobs++
		case j.ScaleSetID != ss.ID:
		case j.State == "acquired":
			st.TotalAcquiredJobs++
			st.TotalAssignedJobs++
		case j.State == "running":
			st.TotalAssignedJobs++
			st.TotalRunningJobs++
		}
	}
	for _, r := range s.runners {
		if r.ScaleSetID == ss.ID && r.Connected {
			st.TotalRegisteredRunners++
			if r.JobRequest != 0 {
				st.TotalBusyRunners++
			}
		}
	}
	st.TotalIdleRunners = st.TotalRegisteredRunners - st.TotalBusyRunners
	return st
}

func (s *server) held(ssID int) int {
	n := 0
	for _, j := range s.jobs {
		if j.ScaleSetID == ssID && (j.State == "offered" || j.State == "acquired" || j.State == "running") {
			n++
		}
	}
	return n
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "0001-01-01T00:00:00Z"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (s *server) jobMessage(j *job, kind string) map[string]any {
	parts := strings.SplitN(j.Repository, "/", 2)
	owner, repo := parts[0], parts[len(parts)-1]
	m := map[string]any{
		"messageType": kind, "runnerRequestId": j.RequestID, "repositoryName": repo, "ownerName": owner,
		"jobId": j.JobID, "jobWorkflowRef": j.Repository + "/.github/workflows/ci.yaml@refs/heads/main",
		"jobDisplayName": "build", "workflowRunId": j.runID, "eventName": "push", "requestLabels": j.Labels,
		"queueTime": ts(j.QueueTime), "scaleSetAssignTime": ts(j.assignTime),
		"runnerAssignTime": ts(j.runnerTime), "finishTime": ts(j.finishTime),
	}
	if ss := s.sets[j.ScaleSetID]; kind == "JobAvailable" && ss != nil {
		m["acquireJobUrl"] = fmt.Sprintf("/_apis/runtime/runnerscalesets/%d/acquirejobs", ss.ID)
	}
	if kind == "JobStarted" || kind == "JobCompleted" {
		m["runnerId"] = j.RunnerID
		if r := s.runners[j.RunnerID]; r != nil {
			m["runnerName"] = r.Name
		}
	}
	if kind == "JobCompleted" {
		m["result"] = j.Result
	}
	return m
}

func (s *server) push(ssID int, m map[string]any) {
	if ss := s.sets[ssID]; ss != nil {
		ss.pending = append(ss.pending, m)
	}
}

func (s *server) activeSession(ssID int) *session {
	for _, se := range s.sessions {
		if se.ScaleSetID == ssID {
			return se
		}
	}
	return nil
}

// schedule moves the job model forward: expires idle sessions and stale offers, offers queued
// jobs to scale sets within their advertised capacity, and gives acquired jobs to idle runners.
func (s *server) schedule() {
	now := time.Now()
	for id, se := range s.sessions {
		if se.polling == 0 && now.Sub(se.lastActive) > s.cfg.SessionIdleTimeout {
			s.logger.Printf("session %s of scale set %d expired (idle)", id, se.ScaleSetID)
			s.dropSession(se)
		}
	}
	ids := make([]int64, 0, len(s.jobs))
	for id := range s.jobs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })

	for _, id := range ids {
		j := s.jobs[id]
		if (j.State == "offered" || j.State == "acquired") && now.Sub(j.offeredAt) > s.cfg.RunTimeout {
			s.requeue(j, "no runner started it in time")
		}
	}
	setIDs := make([]int, 0, len(s.sets))
	for id := range s.sets {
		setIDs = append(setIDs, id)
	}
	sort.Ints(setIDs)
	for _, id := range ids {
		j := s.jobs[id]
		if j.State != "queued" || j.Webhook {
			continue
		}
		for _, ssID := range setIDs {
			ss := s.sets[ssID]
			if !ss.hasCapacity || s.activeSession(ssID) == nil || !subset(j.Labels, ss.Labels) ||
				s.held(ssID) >= ss.capacity {
				continue
			}
			j.State, j.ScaleSetID, j.offeredAt = "offered", ssID, now
			j.Assignments = append(j.Assignments, ssID)
			s.push(ssID, s.jobMessage(j, "JobAvailable"))
			break
		}
	}
	for _, id := range ids {
		j := s.jobs[id]
		if j.State != "acquired" {
			continue
		}
		for _, r := range s.runners {
			if r.ScaleSetID == j.ScaleSetID && r.Connected && r.JobRequest == 0 {
				r.JobRequest, j.RunnerID, j.State, j.runnerTime = j.RequestID, r.ID, "running", now
				r.Busy = true
				s.push(j.ScaleSetID, s.jobMessage(j, "JobStarted"))
				break
			}
		}
	}
	s.scheduleWebhookJobs()
}

// requeue takes a job back from its scale set; the fourth time it is canceled instead.
func (s *server) requeue(j *job, why string) {
	if j.State == "acquired" {
		// The scale set saw JobAssigned; it now learns the assignment ended.
		j.Result = "canceled"
		s.push(j.ScaleSetID, s.jobMessage(j, "JobCompleted"))
		j.Result = ""
	}
	if j.Requeues >= 3 {
		j.State, j.Result, j.finishTime = "completed", "canceled", time.Now()
		s.logger.Printf("job %d canceled after %d re-queues (%s)", j.RequestID, j.Requeues, why)
		return
	}
	j.Requeues++
	s.logger.Printf("job %d re-queued (%d/3) from scale set %d: %s", j.RequestID, j.Requeues, j.ScaleSetID, why)
	j.State, j.ScaleSetID, j.assignTime = "queued", 0, time.Time{}
}

func (s *server) dropSession(se *session) {
	delete(s.sessions, se.ID)
	for _, j := range s.jobs {
		if j.ScaleSetID == se.ScaleSetID && j.State == "offered" {
			j.State, j.ScaleSetID = "queued", 0 // never acquired: back to the queue, no re-queue charged
		}
	}
	if ss := s.sets[se.ScaleSetID]; ss != nil {
		ss.pending, ss.hasCapacity = nil, false
	}
}

func (s *server) sessionJSON(se *session) map[string]any {
	ss := s.sets[se.ScaleSetID]
	st := s.stats(ss)
	return map[string]any{
		"sessionId": se.ID, "ownerName": se.Owner, "runnerScaleSet": ss,
		"messageQueueUrl": "", "messageQueueAccessToken": se.Token, "statistics": st,
	}
}

func uuid4() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ---- routing ----

var (
	reAccessToken = regexp.MustCompile(`^(/api/v3)?/app/installations/(\d+)/access_tokens$`)
	reInstallOf   = regexp.MustCompile(`^(/api/v3)?/(orgs|users)/([^/]+)/installation$|^(/api/v3)?/repos/([^/]+)/[^/]+/installation$`)
	reRegToken    = regexp.MustCompile(`^(/api/v3)?/(orgs/[^/]+|enterprises/[^/]+|repos/[^/]+/[^/]+)/actions/runners/registration-token$`)
	reAdminConn   = regexp.MustCompile(`^(/api/v3)?/actions/runner-registration$`)
	reScaleSets   = regexp.MustCompile(`^/tenant/_apis/runtime/runnerscalesets/?$`)
	reScaleSet    = regexp.MustCompile(`^/tenant/_apis/runtime/runnerscalesets/(\d+)$`)
	reSessions    = regexp.MustCompile(`^/tenant/_apis/runtime/runnerscalesets/(\d+)/sessions$`)
	reSession     = regexp.MustCompile(`^/tenant/_apis/runtime/runnerscalesets/(\d+)/sessions/([0-9a-f-]+)$`)
	reJIT         = regexp.MustCompile(`^/tenant/_apis/runtime/runnerscalesets/(\d+)/generatejitconfig$`)
	reAcquire     = regexp.MustCompile(`^/tenant/_apis/runtime/runnerscalesets/(\d+)/acquirejobs$`)
	reGroups      = regexp.MustCompile(`^/tenant/_apis/runtime/runnergroups/?$`)
	reAgents      = regexp.MustCompile(`^/tenant/_apis/distributedtask/pools/0/agents/?$`)
	reAgent       = regexp.MustCompile(`^/tenant/_apis/distributedtask/pools/0/agents/(\d+)$`)
	reQueue       = regexp.MustCompile(`^/queue/([0-9a-f-]+)$`)
	reQueueMsg    = regexp.MustCompile(`^/queue/([0-9a-f-]+)/(\d+)$`)
	reHUD         = regexp.MustCompile(`^/api/clickhouse/queued_jobs_aggregate$`)
)

func routeOf(method, path string) string {
	switch {
	case reAccessToken.MatchString(path):
		return "access_token"
	case reInstallOf.MatchString(path):
		return "installation_of"
	case reRegToken.MatchString(path):
		return "registration_token"
	case reAdminConn.MatchString(path):
		return "admin_connection"
	case reScaleSets.MatchString(path), reScaleSet.MatchString(path):
		return "scale_set"
	case reSessions.MatchString(path):
		return "create_session"
	case reSession.MatchString(path) && method == http.MethodPatch:
		return "refresh_session"
	case reSession.MatchString(path):
		return "delete_session"
	case reJIT.MatchString(path):
		return "generate_jit"
	case reAcquire.MatchString(path):
		return "acquire_jobs"
	case reGroups.MatchString(path):
		return "runner_group"
	case reAgents.MatchString(path), reAgent.MatchString(path):
		return "runner"
	case reQueue.MatchString(path):
		return "get_message"
	case reQueueMsg.MatchString(path):
		return "delete_message"
	case reHUD.MatchString(path):
		return "hud"
	}
	return restRouteOf(path)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_control/") {
		s.control(w, r)
		return
	}
	// Stamped before the service's one lock: every poll held open wakes for it on each change (a
	// thousand of them at once), and a poll's arrival must not include its wait behind them.
	arrived := time.Now()
	route := routeOf(r.Method, r.URL.Path)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))

	s.mu.Lock()
	s.counts[route]++
	f := s.takeFault(route)
	s.mu.Unlock()
	r = r.WithContext(context.WithValue(r.Context(), arrivedKey{}, arrived))
	if f != nil && f.DelayMs > 0 {
		select {
		case <-time.After(time.Duration(f.DelayMs) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
	var rep reply
	switch {
	case route == "":
		rep = textReply(404, "no such endpoint")
	case f != nil && f.Status != 0:
		rep = faultReply(route, f.Status)
		rep.retryAfter = f.RetryAfter
	default:
		rep = s.handle(r, route, body)
	}
	if rep.status == 0 { // the client went away during a long poll
		return
	}
	s.logger.Printf("%s %s -> %d", r.Method, r.URL.Path, rep.status)
	s.write(w, rep, f)
}

func (s *server) handle(r *http.Request, route string, body []byte) reply {
	switch route {
	case "access_token", "registration_token", "admin_connection", "installation_of":
		return s.githubAPI(r, route, body)
	case "get_message":
		return s.getMessage(r)
	case "hud":
		return s.hud(r)
	}
	if strings.HasPrefix(route, "rest_") {
		return s.restAPI(r, route, body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	if route == "delete_message" {
		return s.deleteMessage(r)
	}
	if route == "acquire_jobs" {
		return s.acquireJobs(r, body)
	}
	if !s.validToken(bearer(r, "Bearer"), "admin") {
		return textReply(401, "The admin token is missing, invalid or expired.")
	}
	if v := r.URL.Query().Get("api-version"); v != "6.0-preview" {
		return textReply(400, "api-version must be 6.0-preview")
	}
	switch route {
	case "scale_set":
		return s.scaleSets(r, body)
	case "runner_group":
		name := r.URL.Query().Get("groupName")
		var out []map[string]any
		for _, g := range s.groups {
			if g["name"] == name {
				out = append(out, g)
			}
		}
		return jsonReply(200, map[string]any{"count": len(out), "value": out})
	case "create_session":
		return s.createSession(r, body)
	case "refresh_session", "delete_session":
		m := reSession.FindStringSubmatch(r.URL.Path)
		se := s.sessions[m[2]]
		if se == nil || strconv.Itoa(se.ScaleSetID) != m[1] {
			return exception(404, "GitHub.DistributedTask.WebApi.RunnerScaleSetSessionNotFoundException",
				"The requested operation refers to a session ID that doesn't exist.")
		}
		if route == "delete_session" {
			s.dropSession(se)
			return reply{status: 204}
		}
		se.Token, se.TokenExp, se.lastActive = randomToken("mq-"), time.Now().Add(s.cfg.QueueTokenTTL), time.Now()
		return jsonReply(200, s.withQueueURL(r, se))
	case "generate_jit":
		return s.generateJIT(r, body)
	case "runner":
		return s.runnerRequest(r)
	}
	return textReply(404, "no such endpoint")
}

func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *server) withQueueURL(r *http.Request, se *session) map[string]any {
	out := s.sessionJSON(se)
	out["messageQueueUrl"] = baseURL(r) + "/queue/" + se.ID
	return out
}

func (s *server) githubAPI(r *http.Request, route string, body []byte) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch route {
	case "access_token":
		m := reAccessToken.FindStringSubmatch(r.URL.Path)
		app, err := s.verifyAppJWT(bearer(r, "Bearer"))
		if err != nil {
			return jsonReply(401, map[string]string{"message": "A JSON web token could not be decoded: " + err.Error()})
		}
		id, _ := strconv.ParseInt(m[2], 10, 64)
		if !s.knownInstallation(app, id) {
			return jsonReply(404, map[string]string{"message": "Not Found"})
		}
		s.counts["access_token:"+m[2]]++
		tok, exp := randomToken("ghs_"), time.Now().Add(time.Hour)
		s.tokens[tok] = tokenInfo{"installation", exp, id}
		return jsonReply(201, map[string]any{"token": tok, "expires_at": exp.UTC().Format(time.RFC3339)})
	case "installation_of":
		app, err := s.verifyAppJWT(bearer(r, "Bearer"))
		if err != nil {
			return jsonReply(401, map[string]string{"message": "A JSON web token could not be decoded: " + err.Error()})
		}
		m := reInstallOf.FindStringSubmatch(r.URL.Path)
		account := m[3] + m[5]
		id, ok := s.installationsOf(app)[account]
		if !ok {
			return jsonReply(404, map[string]string{"message": "Not Found"})
		}
		appName := s.cfg.AppID
		if app == 1 {
			appName = s.cfg.UserApp.ID
		}
		appID, _ := strconv.ParseInt(appName, 10, 64) // GitHub's is a number; a client id (Iv1…) is not
		return jsonReply(200, map[string]any{"id": id, "account": map[string]any{"login": account}, "app_id": appID})
	case "registration_token":
		tok := bearer(r, "Bearer")
		if !(s.cfg.PAT != "" && tok == s.cfg.PAT) && !s.validToken(tok, "installation") {
			return jsonReply(401, map[string]string{"message": "Bad credentials"})
		}
		reg, exp := randomToken("AAREG"), time.Now().Add(time.Hour)
		s.tokens[reg] = tokenInfo{"registration", exp, 0}
		return jsonReply(201, map[string]any{"token": reg, "expires_at": exp.UTC().Format(time.RFC3339)})
	default: // admin_connection
		if !s.validToken(bearer(r, "RemoteAuth"), "registration") {
			return jsonReply(401, map[string]string{"message": "registration token invalid"})
		}
		var req struct {
			URL         string `json:"url"`
			RunnerEvent string `json:"runner_event"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.URL == "" || req.RunnerEvent != "register" {
			return jsonReply(400, map[string]string{"message": "body must be {url, runner_event: register}"})
		}
		exp := time.Now().Add(s.cfg.AdminTokenTTL)
		tok := s.adminJWT(exp)
		s.tokens[tok] = tokenInfo{"admin", exp, 0}
		return jsonReply(200, map[string]any{"url": baseURL(r) + "/tenant/", "token": tok})
	}
}

// A scale set as the service returns it: with its statistics (totalAvailableJobs: jobs queued for
// its labels and not yet assigned), as the real object carries them.
type scaleSetReply struct {
	*scaleSet
	Statistics statistics `json:"statistics"`
}

func (s *server) withStats(ss *scaleSet) scaleSetReply { return scaleSetReply{ss, s.stats(ss)} }

func (s *server) scaleSets(r *http.Request, body []byte) reply {
	if m := reScaleSet.FindStringSubmatch(r.URL.Path); m != nil {
		id, _ := strconv.Atoi(m[1])
		ss := s.sets[id]
		if ss == nil {
			return exception(404, "RunnerScaleSetNotFoundException", "scale set not found")
		}
		switch r.Method {
		case http.MethodGet:
			return jsonReply(200, s.withStats(ss))
		case http.MethodDelete:
			if se := s.activeSession(id); se != nil {
				s.dropSession(se)
			}
			delete(s.sets, id)
			return reply{status: 204}
		case http.MethodPatch:
			var upd scaleSet
			if err := json.Unmarshal(body, &upd); err != nil {
				return exception(400, "ArgumentException", "body is not a scale set: "+err.Error())
			}
			if upd.Name != "" {
				ss.Name = upd.Name
			}
			if upd.RunnerGroupID != 0 {
				ss.RunnerGroupID = upd.RunnerGroupID
			}
			if len(upd.Labels) > 0 {
				ss.Labels = upd.Labels
			}
			ss.RunnerSetting = upd.RunnerSetting
			return jsonReply(200, s.withStats(ss))
		}
		return textReply(405, "method not allowed")
	}
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		var out []scaleSetReply
		for _, ss := range s.sets {
			if ss.Name == q.Get("name") && strconv.Itoa(ss.RunnerGroupID) == q.Get("runnerGroupId") {
				out = append(out, s.withStats(ss))
			}
		}
		return jsonReply(200, map[string]any{"count": len(out), "value": out})
	case http.MethodPost:
		var ss scaleSet
		if err := json.Unmarshal(body, &ss); err != nil || ss.Name == "" {
			return exception(400, "ArgumentException", "a scale set needs a name")
		}
		for _, o := range s.sets {
			if o.Name == ss.Name && o.RunnerGroupID == ss.RunnerGroupID {
				return exception(409, "RunnerScaleSetExistsException", "a scale set with this name exists")
			}
		}
		if ss.RunnerGroupID == 0 {
			ss.RunnerGroupID = 1
		}
		for _, g := range s.groups {
			if g["id"] == ss.RunnerGroupID {
				ss.GroupName = g["name"].(string)
			}
		}
		ss.ID = int(s.id())
		ss.CreatedOn = time.Now().UTC()
		ss.JitURL = fmt.Sprintf("%s/tenant/_apis/runtime/runnerscalesets/%d/generatejitconfig", baseURL(r), ss.ID)
		s.sets[ss.ID] = &ss
		s.logger.Printf("scale set %d %q created with labels %v", ss.ID, ss.Name, ss.Labels)
		return jsonReply(200, s.withStats(&ss))
	}
	return textReply(405, "method not allowed")
}

func (s *server) createSession(r *http.Request, body []byte) reply {
	m := reSessions.FindStringSubmatch(r.URL.Path)
	id, _ := strconv.Atoi(m[1])
	if s.sets[id] == nil {
		return exception(404, "RunnerScaleSetNotFoundException", "scale set not found")
	}
	var req struct {
		OwnerName string `json:"ownerName"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.OwnerName == "" {
		return exception(400, "ArgumentException", "a session needs an ownerName")
	}
	s.schedule() // expire an idle session first
	if se := s.activeSession(id); se != nil {
		return exception(409, "GitHub.DistributedTask.WebApi.RunnerScaleSetSessionConflictException",
			fmt.Sprintf("The actions runner scale set %s already has an active session for owner %s.",
				s.sets[id].Name, se.Owner))
	}
	se := &session{ID: uuid4(), Owner: req.OwnerName, ScaleSetID: id, Token: randomToken("mq-"),
		TokenExp: time.Now().Add(s.cfg.QueueTokenTTL), lastActive: time.Now()}
	s.sessions[se.ID] = se
	s.logger.Printf("session %s created for scale set %d by %s", se.ID, id, se.Owner)
	return jsonReply(200, s.withQueueURL(r, se))
}

// The request context's arrival time (ServeHTTP stamps it before any fault's delay).
type arrivedKey struct{}

func arrivedAt(r *http.Request) time.Time {
	if t, ok := r.Context().Value(arrivedKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

func (s *server) getMessage(r *http.Request) reply {
	m := reQueue.FindStringSubmatch(r.URL.Path)
	capacity, err := strconv.Atoi(r.Header.Get("X-ScaleSetMaxCapacity"))
	if err != nil || capacity < 0 {
		return textReply(400, "X-ScaleSetMaxCapacity must be a non-negative integer")
	}
	var lastID int64
	if v := r.URL.Query().Get("lastMessageId"); v != "" {
		if lastID, err = strconv.ParseInt(v, 10, 64); err != nil {
			return textReply(400, "lastMessageId must be an integer")
		}
	}
	s.mu.Lock()
	se := s.sessions[m[1]]
	if se == nil {
		s.mu.Unlock()
		return exception(404, "GitHub.DistributedTask.WebApi.RunnerScaleSetSessionNotFoundException",
			"The requested operation refers to a session ID that doesn't exist.")
	}
	if bearer(r, "Bearer") != se.Token || !time.Now().Before(se.TokenExp) {
		s.mu.Unlock()
		return textReply(401, "The message queue access token expired.")
	}
	ss := s.sets[se.ScaleSetID]
	seq := len(s.polls)
	s.polls = append(s.polls, pollRecord{Seq: seq, ScaleSetID: ss.ID, SessionID: se.ID, Capacity: capacity,
		LastMessageID: lastID, At: time.Now(), ArrivedAt: arrivedAt(r), HeldAtStart: s.held(ss.ID), Client: r.RemoteAddr})
	s.logger.Printf("poll scale set %d capacity=%d lastMessageId=%d", ss.ID, capacity, lastID)
	ss.capacity, ss.hasCapacity = capacity, true
	se.polling++
	s.notify()
	deadline := time.After(s.cfg.PollHold)
	finish := func(status int) {
		se.polling--
		se.lastActive = time.Now()
		s.polls[seq].Status, s.polls[seq].Offered = status, s.held(ss.ID)
	}
	for {
		s.schedule()
		if s.sessions[se.ID] != se {
			finish(404)
			s.mu.Unlock()
			return exception(404, "GitHub.DistributedTask.WebApi.RunnerScaleSetSessionNotFoundException",
				"The requested operation refers to a session ID that doesn't exist.")
		}
		if len(se.messages) == 0 && len(ss.pending) > 0 {
			n := min(len(ss.pending), 50)
			batch, _ := json.Marshal(ss.pending[:n])
			ss.pending = ss.pending[n:]
			se.messages = append(se.messages, &message{ID: s.id(), Body: string(batch)})
		}
		if len(se.messages) > 0 {
			msg := se.messages[0]
			msg.Stats = s.stats(ss)
			finish(200)
			s.mu.Unlock()
			return jsonReply(200, map[string]any{"messageId": msg.ID, "messageType": "RunnerScaleSetJobMessages",
				"body": msg.Body, "statistics": msg.Stats})
		}
		wake := s.changed
		s.mu.Unlock()
		select {
		case <-wake:
		case <-time.After(250 * time.Millisecond): // offers time out even when nothing else moves
		case <-deadline:
			s.mu.Lock()
			finish(202)
			s.mu.Unlock()
			return reply{status: 202}
		case <-r.Context().Done():
			s.mu.Lock()
			finish(499)
			s.mu.Unlock()
			return reply{}
		}
		s.mu.Lock()
	}
}

func (s *server) deleteMessage(r *http.Request) reply {
	m := reQueueMsg.FindStringSubmatch(r.URL.Path)
	se := s.sessions[m[1]]
	if se == nil {
		return exception(404, "GitHub.DistributedTask.WebApi.RunnerScaleSetSessionNotFoundException",
			"The requested operation refers to a session ID that doesn't exist.")
	}
	if bearer(r, "Bearer") != se.Token || !time.Now().Before(se.TokenExp) {
		return textReply(401, "The message queue access token expired.")
	}
	id, _ := strconv.ParseInt(m[2], 10, 64)
	for i, msg := range se.messages {
		if msg.ID == id {
			se.messages = append(se.messages[:i], se.messages[i+1:]...)
			break
		}
	}
	return reply{status: 204}
}

func (s *server) acquireJobs(r *http.Request, body []byte) reply {
	m := reAcquire.FindStringSubmatch(r.URL.Path)
	ssID, _ := strconv.Atoi(m[1])
	se := s.activeSession(ssID)
	if se == nil || bearer(r, "Bearer") != se.Token || !time.Now().Before(se.TokenExp) {
		return textReply(401, "The message queue access token expired.")
	}
	var ids []int64
	if err := json.Unmarshal(body, &ids); err != nil {
		return exception(400, "ArgumentException", "body must be an array of runner request ids")
	}
	acquired := []int64{}
	for _, id := range ids {
		j := s.jobs[id]
		if j == nil || j.ScaleSetID != ssID || j.State != "offered" {
			continue
		}
		j.State, j.assignTime = "acquired", time.Now()
		acquired = append(acquired, id)
		s.push(ssID, s.jobMessage(j, "JobAssigned"))
	}
	s.schedule()
	return jsonReply(200, map[string]any{"count": len(acquired), "value": acquired})
}

// encodeJIT: a JIT configuration shaped as GitHub's (the runner's `.runner` and `.credentials` files,
// each base64 JSON, in a base64 JSON map), so a runner in a pod finds its server there as a real one
// does: `.runner`'s serverUrl, the address the runner's own request came to this peer by (a real
// node's pods reach the host's node-network address, tests/testenv/node). The credential is the
// runner's nonce, which connect checks.
func encodeJIT(r *http.Request, rn *runner, ssID int) string {
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.StdEncoding.EncodeToString(b) }
	return enc(map[string]string{
		".runner": enc(map[string]any{"agentId": rn.ID, "agentName": rn.Name, "poolId": ssID, "poolName": "Default",
			"serverUrl": baseURL(r) + "/tenant/", "gitHubUrl": baseURL(r) + "/headroom-org", "workFolder": "_work", "useV2Flow": true}),
		".credentials": enc(map[string]any{"scheme": "OAuth", "data": map[string]string{"clientId": rn.nonce,
			"authorizationUrl": baseURL(r) + "/_apis/oauth2/token", "requireFipsCryptography": "False"}}),
	})
}

// decodeJIT: the runner ID and nonce of a configuration encodeJIT made; ok false for anything else.
func decodeJIT(text string) (id int, nonce string, ok bool) {
	var files map[string]string
	var rn struct {
		AgentID int `json:"agentId"`
	}
	var cred struct {
		Data struct {
			ClientID string `json:"clientId"`
		} `json:"data"`
	}
	dec := func(s string, out any) bool {
		b, err := base64.StdEncoding.DecodeString(s)
		return err == nil && json.Unmarshal(b, out) == nil
	}
	if !dec(text, &files) || !dec(files[".runner"], &rn) || !dec(files[".credentials"], &cred) {
		return 0, "", false
	}
	return rn.AgentID, cred.Data.ClientID, rn.AgentID != 0
}

func (s *server) generateJIT(r *http.Request, body []byte) reply {
	m := reJIT.FindStringSubmatch(r.URL.Path)
	ssID, _ := strconv.Atoi(m[1])
	if s.sets[ssID] == nil {
		return exception(404, "RunnerScaleSetNotFoundException", "scale set not found")
	}
	var req struct {
		Name       string `json:"name"`
		WorkFolder string `json:"workFolder"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Name == "" {
		return exception(400, "ArgumentException", "a JIT config needs a runner name")
	}
	for _, rn := range s.runners {
		if rn.Name == req.Name {
			return exception(409, "GitHub.DistributedTask.WebApi.AgentExistsException",
				fmt.Sprintf("A runner named %s already exists.", req.Name))
		}
	}
	rn := &runner{ID: int(s.id()), Name: req.Name, ScaleSetID: ssID, Status: "offline", nonce: randomToken("")}
	s.runners[rn.ID] = rn
	return jsonReply(200, map[string]any{
		"runner":           map[string]any{"id": rn.ID, "name": rn.Name, "runnerScaleSetId": ssID},
		"encodedJITConfig": encodeJIT(r, rn, ssID),
	})
}

func (s *server) runnerRequest(r *http.Request) reply {
	notFound := exception(404, "GitHub.DistributedTask.WebApi.AgentNotFoundException", "The runner does not exist.")
	if m := reAgent.FindStringSubmatch(r.URL.Path); m != nil {
		id, _ := strconv.Atoi(m[1])
		rn := s.runners[id]
		if rn == nil {
			return notFound
		}
		if r.Method == http.MethodDelete {
			if rn.JobRequest != 0 {
				return exception(400, "GitHub.DistributedTask.WebApi.JobStillRunningException",
					fmt.Sprintf("The runner %s is running job %d.", rn.Name, rn.JobRequest))
			}
			delete(s.runners, id)
			return reply{status: 204}
		}
		return jsonReply(200, rn)
	}
	// By name (?agentName=, what the scaleset client asks), or, without it, every runner of the
	// pool in id order: the pool's agent list as the service's distributedtask API serves it.
	name, byName := r.URL.Query()["agentName"]
	out := []*runner{}
	for _, rn := range s.runners {
		if !byName || rn.Name == name[0] {
			out = append(out, rn)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return jsonReply(200, map[string]any{"count": len(out), "value": out})
}

// The HUD's queued-jobs aggregate, derived from this peer's queue: one row per (label, repo).
func (s *server) hud(r *http.Request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.HUDToken == "" || r.Header.Get("x-hud-internal-bot") != s.cfg.HUDToken {
		return jsonReply(401, map[string]string{"error": "unauthorized"})
	}
	type row struct {
		Label    string  `json:"runner_label"`
		Org      string  `json:"org"`
		Repo     string  `json:"repo"`
		Queued   int     `json:"num_queued_jobs"`
		MinQueue float64 `json:"min_queue_time_minutes"`
		MaxQueue float64 `json:"max_queue_time_minutes"`
	}
	rows := map[string]*row{}
	var keys []string
	for _, j := range s.jobs {
		if j.State != "queued" {
			continue
		}
		parts := strings.SplitN(j.Repository, "/", 2)
		waited := time.Since(j.QueueTime).Minutes()
		for _, l := range j.Labels {
			k := l + "\x00" + j.Repository
			rw := rows[k]
			if rw == nil {
				rw = &row{Label: l, Org: parts[0], Repo: parts[len(parts)-1], MinQueue: waited}
				rows[k] = rw
				keys = append(keys, k)
			}
			rw.Queued++
			rw.MinQueue, rw.MaxQueue = min(rw.MinQueue, waited), max(rw.MaxQueue, waited)
		}
	}
	sort.Strings(keys)
	out := []*row{}
	for _, k := range keys {
		out = append(out, rows[k])
	}
	return jsonReply(200, out)
}

// ---- control API ----

func (s *server) control(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	defer s.mu.Unlock()
	rep, changed := s.controlRoute(r, body)
	if changed {
		s.schedule()
		s.notify()
	}
	s.write(w, rep, nil)
}

func (s *server) controlRoute(r *http.Request, body []byte) (reply, bool) {
	bad := func(err error) (reply, bool) { return textReply(400, err.Error()), false }
	if strings.HasPrefix(r.URL.Path, "/_control/webhooks/") {
		return s.webhookControl(r, body)
	}
	switch r.URL.Path {
	case "/_control/jobs": // POST {labels, count, repository, container, steps}
		var req struct {
			Labels     []string `json:"labels"`
			Count      int      `json:"count"`
			Repository string   `json:"repository"`
			Container  string   `json:"container"`
			Steps      []string `json:"steps"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return bad(err)
		}
		if req.Count <= 0 {
			req.Count = 1
		}
		if req.Repository == "" {
			req.Repository = "headroom-org/app"
		}
		ids := []int64{}
		for i := 0; i < req.Count; i++ {
			id := s.id()
			s.jobs[id] = &job{RequestID: id, JobID: uuid4(), Labels: req.Labels, Repository: req.Repository,
				State: "queued", QueueTime: time.Now(), runID: 9000 + id, Container: req.Container, Steps: req.Steps}
			ids = append(ids, id)
		}
		return jsonReply(200, map[string]any{"ids": ids}), true
	case "/_control/state":
		jobs := make([]*job, 0, len(s.jobs))
		for _, j := range s.jobs {
			jobs = append(jobs, j)
		}
		sort.Slice(jobs, func(a, b int) bool { return jobs[a].RequestID < jobs[b].RequestID })
		runners := make([]*runner, 0, len(s.runners))
		for _, rn := range s.runners {
			runners = append(runners, rn)
		}
		sort.Slice(runners, func(a, b int) bool { return runners[a].ID < runners[b].ID })
		sessions := []map[string]any{}
		for _, se := range s.sessions {
			sessions = append(sessions, map[string]any{"sessionId": se.ID, "scaleSetId": se.ScaleSetID,
				"ownerName": se.Owner, "unacked": len(se.messages), "polling": se.polling})
		}
		sets := []map[string]any{}
		for _, ss := range s.sets {
			sets = append(sets, map[string]any{"id": ss.ID, "name": ss.Name})
		}
		return jsonReply(200, map[string]any{"jobs": jobs, "runners": runners, "polls": s.polls,
			"sessions": sessions, "requests": s.counts, "scaleSets": sets}), false
	case "/_control/faults": // POST [fault…]
		var fs []*fault
		if err := json.Unmarshal(body, &fs); err != nil {
			return bad(err)
		}
		for _, f := range fs {
			if f.Count <= 0 {
				f.Count = 1
			}
			if f.ForMs > 0 {
				f.until = time.Now().Add(time.Duration(f.ForMs) * time.Millisecond)
			}
		}
		s.faults = append(s.faults, fs...)
		return jsonReply(200, map[string]any{"armed": len(s.faults)}), false
	case "/_control/expire": // POST {what: queue_tokens | admin_tokens | installation_tokens | sessions}
		var req struct{ What string }
		if err := json.Unmarshal(body, &req); err != nil {
			return bad(err)
		}
		past := time.Now().Add(-time.Second)
		switch req.What {
		case "queue_tokens":
			for _, se := range s.sessions {
				se.TokenExp = past
			}
		case "admin_tokens", "installation_tokens":
			kind := strings.TrimSuffix(strings.TrimSuffix(req.What, "_tokens"), "s")
			for k, t := range s.tokens {
				if t.kind == kind {
					s.tokens[k] = tokenInfo{t.kind, past, t.installation}
				}
			}
		case "sessions":
			for _, se := range s.sessions {
				s.dropSession(se)
			}
		default:
			return textReply(400, "what: queue_tokens | admin_tokens | installation_tokens | sessions"), false
		}
		return jsonReply(200, map[string]any{"expired": req.What}), true
	case "/_control/settings": // POST {pollHoldMs, runTimeoutMs, adminTokenTtlMs, sessionIdleTimeoutMs}
		var req map[string]int64
		if err := json.Unmarshal(body, &req); err != nil {
			return bad(err)
		}
		set := map[string]*time.Duration{"pollHoldMs": &s.cfg.PollHold, "runTimeoutMs": &s.cfg.RunTimeout,
			"adminTokenTtlMs": &s.cfg.AdminTokenTTL, "queueTokenTtlMs": &s.cfg.QueueTokenTTL,
			"sessionIdleTimeoutMs": &s.cfg.SessionIdleTimeout}
		for k, v := range req {
			d, ok := set[k]
			if !ok {
				return textReply(400, "unknown setting "+k), false
			}
			*d = time.Duration(v) * time.Millisecond
		}
		return jsonReply(200, req), true
	case "/_control/runners/register": // POST {scaleSetId, name, online}: a runner no pod will ever run
		var req struct {
			ScaleSetID int    `json:"scaleSetId"`
			Name       string `json:"name"`
			Online     bool   `json:"online"`  // connected: idle, and given an assigned job like any other
			Entity     string `json:"entity"`  // or a REST runner of this org or owner/repo …
			GroupID    int64  `json:"groupId"` // … in this runner group (organizations)
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Name == "" {
			return textReply(400, "want {scaleSetId, name, online} or {entity, groupId, name, online}"), false
		}
		rn := &runner{ID: int(s.id()), Name: req.Name, ScaleSetID: req.ScaleSetID, Status: "offline", nonce: randomToken(""),
			Entity: req.Entity, GroupID: req.GroupID}
		s.runners[rn.ID] = rn
		if req.Online {
			rn.Connected, rn.Status = true, "online"
			s.schedule()
		}
		return jsonReply(200, rn), true
	case "/_control/runners/forget": // POST {id}: a runner's registration deleted (as in GitHub's settings), busy or not
		var req struct {
			ID int `json:"id"`
		}
		if err := json.Unmarshal(body, &req); err != nil || s.runners[req.ID] == nil {
			return textReply(404, "no such runner"), false
		}
		delete(s.runners, req.ID)
		return jsonReply(200, map[string]any{"forgotten": req.ID}), true
	case "/_control/runners/connect": // POST {jitConfig}
		var req struct {
			JitConfig string `json:"jitConfig"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return bad(err)
		}
		id, nonce, ok := decodeJIT(req.JitConfig)
		if !ok {
			return textReply(400, "jitConfig is not one this peer issued"), false
		}
		rn := s.runners[id]
		if rn == nil || rn.nonce != nonce {
			return textReply(404, "no runner for this JIT config"), false
		}
		rn.Connected, rn.Status = true, "online"
		s.schedule()
		return jsonReply(200, rn), true
	case "/_control/runners/finish": // POST {runnerId, result}
		var req struct {
			RunnerID int    `json:"runnerId"`
			Result   string `json:"result"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return bad(err)
		}
		rn := s.runners[req.RunnerID]
		if rn == nil || rn.JobRequest == 0 {
			return textReply(409, "runner is not running a job"), false
		}
		if req.Result == "" {
			req.Result = "succeeded"
		}
		j := s.jobs[rn.JobRequest]
		if j == nil {
			delete(s.runners, rn.ID)
			return textReply(409, "the runner's job is gone"), true
		}
		j.State, j.Result, j.finishTime = "completed", req.Result, time.Now()
		s.push(j.ScaleSetID, s.jobMessage(j, "JobCompleted"))
		if j.Webhook {
			s.announce(j, "completed", false)
		}
		delete(s.runners, rn.ID) // ephemeral: a runner takes one job
		return jsonReply(200, j), true
	}
	return textReply(404, "no such control endpoint"), false
}

// For tests in this package.
func (s *server) snapshotPolls() []pollRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pollRecord(nil), s.polls...)
}

// waitUntil returns once cond (which takes s.mu itself as needed) holds, or ctx ends.
func (s *server) waitUntil(ctx context.Context, cond func() bool) bool {
	for {
		s.mu.Lock()
		wake := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-wake:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return false
		}
	}
}

func (s *server) jobCopy(id int64) job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[id]; j != nil {
		return *j
	}
	return job{}
}

func (s *server) requestCount(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[route]
}

func (s *server) sessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}
