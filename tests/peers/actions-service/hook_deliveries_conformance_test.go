package main

// Conformance of the App webhook's delivery API (hook_deliveries.go) with go-github's client: the
// listing's shape and its cursor paging by Link header, a redelivery's 202, and GitHub's rule that
// nothing failed is delivered again unless someone asks.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v75/github"
)

func appJWT(t *testing.T, p *peerEnv) string {
	t.Helper()
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
	return signed
}

// allDeliveries reads every page, perPage at a time, as go-github pages (resp.Cursor).
func allDeliveries(t *testing.T, c *github.Client, perPage int) []*github.HookDelivery {
	t.Helper()
	var out []*github.HookDelivery
	opts := &github.ListCursorOptions{PerPage: perPage}
	for pages := 0; ; pages++ {
		page, resp, err := c.Apps.ListHookDeliveries(context.Background(), opts)
		if err != nil {
			t.Fatalf("list deliveries: %v", err)
		}
		if len(page) > perPage || pages > 100 {
			t.Fatalf("a page of %d (per_page %d), page %d", len(page), perPage, pages)
		}
		out = append(out, page...)
		if resp.Cursor == "" {
			return out
		}
		opts.Cursor = resp.Cursor
	}
}

func TestGoGitHubAppHookDeliveries(t *testing.T) {
	p := startPeer(t)
	var refusing atomic.Bool // the receiver's store is down: every delivery answered 503
	refusing.Store(true)
	accepted := make(chan string, 64) // X-GitHub-Delivery of each delivery taken
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusing.Load() {
			http.Error(w, "store unavailable", http.StatusServiceUnavailable)
			return
		}
		accepted <- github.DeliveryID(r)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(receiver.Close)
	p.post(t, "/webhooks/config", map[string]any{"url": receiver.URL, "secret": hookSecret}, nil)
	var made struct{ IDs []int64 }
	p.post(t, "/webhooks/jobs", map[string]any{"organization": "acme", "repository": "acme/app",
		"labels": []string{"self-hosted"}, "count": 3}, &made)
	app := restClient(t, p.plain.URL, appJWT(t, p))
	within(t, p, 10*time.Second, "three refused deliveries", func() bool {
		p.srv.mu.Lock()
		defer p.srv.mu.Unlock()
		n := 0
		for _, d := range p.srv.hooks().deliveries {
			if d.Status == 503 {
				n++
			}
		}
		return n == 3
	})

	failed := allDeliveries(t, app, 2) // two pages
	if len(failed) != 3 {
		t.Fatalf("want 3 deliveries, got %d", len(failed))
	}
	for i, d := range failed {
		if d.GetStatus() == "OK" || d.GetStatusCode() != 503 || d.GetRedelivery() || d.GetEvent() != "workflow_job" ||
			d.GetAction() != "queued" || d.GetGUID() == "" || d.DeliveredAt == nil || d.GetInstallationID() == 0 {
			t.Fatalf("delivery %d as go-github reads it: %v", i, d)
		}
		if i > 0 && d.GetID() >= failed[i-1].GetID() {
			t.Fatalf("not newest first: %d after %d", d.GetID(), failed[i-1].GetID())
		}
	}
	_, _, err := restClient(t, p.plain.URL, "ghs_not_a_jwt").Apps.ListHookDeliveries(context.Background(), nil)
	wantStatus(t, "an installation token on the App's deliveries", err, 401)

	// Nothing is delivered again by itself once the store is back: only what is asked for.
	refusing.Store(false)
	select {
	case g := <-accepted:
		t.Fatalf("delivery %s was sent again unasked", g)
	case <-time.After(500 * time.Millisecond):
	}
	for _, d := range failed {
		_, _, err := app.Apps.RedeliverHookDelivery(context.Background(), d.GetID())
		var acc *github.AcceptedError
		if !errors.As(err, &acc) {
			t.Fatalf("redeliver %d: want 202 Accepted, got %v", d.GetID(), err)
		}
	}
	guids := map[string]bool{}
	for range failed {
		select {
		case g := <-accepted:
			guids[g] = true
		case <-time.After(10 * time.Second):
			t.Fatal("a redelivery did not arrive")
		}
	}
	for _, d := range failed {
		if !guids[d.GetGUID()] {
			t.Fatalf("redelivery of %s did not carry its X-GitHub-Delivery", d.GetGUID())
		}
	}
	within(t, p, 10*time.Second, "the redeliveries listed", func() bool {
		p.srv.mu.Lock()
		defer p.srv.mu.Unlock()
		n := 0
		for _, d := range p.srv.hooks().deliveries {
			if d.Redelivery && d.StatusText == "OK" {
				n++
			}
		}
		return n == 3
	})
	again := allDeliveries(t, app, 100)
	if len(again) != 6 || !again[0].GetRedelivery() || again[0].GetStatus() != "OK" || again[0].GetStatusCode() != 202 {
		t.Fatalf("after the redeliveries: %v", again)
	}
	_, _, err = app.Apps.RedeliverHookDelivery(context.Background(), 1)
	wantStatus(t, "an unknown delivery", err, 404)
}
