// The GitHub App webhook's deliveries, as GitHub's REST API serves them
// (https://docs.github.com/en/rest/apps/webhooks): every attempt the peer made to deliver a webhook,
// and asking for one again. Both take the App's JWT, as GitHub's do.
//
//	GET  /app/hook/deliveries?per_page=&cursor=&status=  newest first; the next page's cursor in the Link header
//	POST /app/hook/deliveries/{id}/attempts              202: the delivery is sent again (same guid, new id)
//
// GitHub does not redeliver a failed delivery by itself
// (https://docs.github.com/en/webhooks/using-webhooks/handling-failed-webhook-deliveries), so
// neither does the peer: a delivery refused during an outage stays refused until someone asks.
package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	reAppHookDeliveries = regexp.MustCompile(`^(/api/v3)?/app/hook/deliveries$`)
	reAppHookAttempts   = regexp.MustCompile(`^(/api/v3)?/app/hook/deliveries/(\d+)/attempts$`)
)

// deliveryStatus: the API's `status` of an attempt, "OK" when the receiver answered 2xx (any other
// answer is a failed delivery to GitHub), else GitHub's words for what went wrong.
func deliveryStatus(code int, err error) string {
	var ne net.Error
	switch {
	case err != nil && errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case err != nil:
		return "failed to connect to host"
	case code >= 200 && code < 300:
		return "OK"
	}
	return fmt.Sprintf("Invalid HTTP Response: %d", code)
}

// redeliver sends delivery d again as GitHub does: the same body and X-GitHub-Delivery (guid) as
// a new delivery with its own id and redelivery: true (s.mu held).
func (s *server) redeliver(h *hookState, d *delivery) *delivery {
	again := &delivery{ID: d.ID, HookID: h.newHookID(), JobID: d.JobID, Event: d.Event, Action: d.Action,
		Redelivery: true, body: d.body, repo: d.repo}
	h.deliveries = append(h.deliveries, again)
	if h.url != "" {
		h.queue <- again
	}
	return again
}

// appOf: the App whose webhook made delivery d: the user App when it is installed in the
// repository's owner account, else the first (each App has its own webhook and deliveries).
func (s *server) appOf(d *delivery) int {
	owner, _, _ := strings.Cut(d.repo, "/")
	if s.cfg.UserApp != nil {
		if _, ok := s.cfg.UserApp.Installations[owner]; ok {
			return 1
		}
	}
	return 0
}

// listed: a delivery the API shows: one GitHub made (not a forger's) and attempted already.
func listed(d *delivery) bool { return !d.Forged && !d.SentAt.IsZero() }

func (s *server) appHookAPI(r *http.Request, route string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notify()
	app, err := s.verifyAppJWT(bearer(r, "Bearer"))
	if err != nil {
		return ghError(401, "A JSON web token could not be decoded: "+err.Error())
	}
	h := s.hooks()
	if route == "rest_app_hook_deliveries" && r.Method == http.MethodGet {
		return s.listHookDeliveries(r, h, app)
	}
	if route != "rest_app_hook_attempts" || r.Method != http.MethodPost {
		return ghError(404, "Not Found")
	}
	id, _ := strconv.ParseInt(reAppHookAttempts.FindStringSubmatch(r.URL.Path)[2], 10, 64)
	for _, d := range h.deliveries {
		if d.HookID == id && listed(d) && s.appOf(d) == app {
			s.redeliver(h, d)
			return jsonReply(202, map[string]any{})
		}
	}
	return ghError(404, "Not Found")
}

// listHookDeliveries: per_page (default 30, at most 100) deliveries a page, newest first, from
// `cursor` on; status=success keeps those answered 200–399, status=failure 400–599, as documented.
func (s *server) listHookDeliveries(r *http.Request, h *hookState, app int) reply {
	q := r.URL.Query()
	perPage, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || perPage < 1 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	from := int64(math.MaxInt64)
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(c, "v1_"), 10, 64)
		if err != nil || !strings.HasPrefix(c, "v1_") {
			return ghError(400, "Bad request: cursor is not valid")
		}
		from = n
	}
	status := q.Get("status")
	if status != "" && status != "success" && status != "failure" {
		return ghError(422, "Validation Failed: status must be success or failure")
	}
	all := []*delivery{}
	for _, d := range h.deliveries {
		if listed(d) && d.HookID <= from && statusMatches(status, d.Status) && s.appOf(d) == app {
			all = append(all, d)
		}
	}
	sort.Slice(all, func(a, b int) bool { return all[a].HookID > all[b].HookID })
	page := all[:min(perPage, len(all))]
	items := make([]map[string]any, 0, len(page))
	for _, d := range page {
		items = append(items, s.deliveryItem(d))
	}
	rep := jsonReply(200, items)
	if len(all) > perPage { // the cursor is where the next page starts, opaque to clients
		next := *r.URL
		nq := next.Query()
		nq.Set("cursor", fmt.Sprintf("v1_%d", all[perPage].HookID))
		nq.Set("per_page", strconv.Itoa(perPage))
		next.RawQuery = nq.Encode()
		rep.link = fmt.Sprintf(`<%s%s>; rel="next"`, baseURL(r), next.RequestURI())
	}
	return rep
}

func statusMatches(filter string, code int) bool {
	switch filter {
	case "success":
		return code >= 200 && code <= 399
	case "failure":
		return code >= 400 && code <= 599
	}
	return true
}

// deliveryItem: a delivery as the list shows it (GitHub's hook-delivery-item).
func (s *server) deliveryItem(d *delivery) map[string]any {
	var action, repository any
	if d.Action != "" {
		action = d.Action
	}
	if d.repo != "" {
		repository = repoID(d.repo)
	}
	return map[string]any{
		"id": d.HookID, "guid": d.ID, "delivered_at": d.SentAt.UTC().Format(time.RFC3339), "redelivery": d.Redelivery,
		"duration": d.Latency / 1000, "status": d.StatusText, "status_code": max(d.Status, 0), "event": d.Event,
		"action": action, "installation_id": s.cfg.InstallationID, "repository_id": repository, "throttled_at": nil,
	}
}
