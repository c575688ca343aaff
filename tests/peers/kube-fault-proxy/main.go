// kube-fault-proxy: a TLS reverse proxy in front of the test control plane's kube-apiserver that
// breaks it on command, for the chaos suite (tests/chaos/). headroom's kubeconfig points at the
// proxy (its own CA, the same bearer token, passed through); everything else talks to the
// apiserver directly. Faults, all on the control port (plain HTTP, loopback):
//
//	POST /faults {"statuses":[429,503],"forMs":30000}
//	    every request in the window is answered with the next status of the list, a
//	    metav1.Status body as the apiserver writes it (Retry-After: 1 with 429). A 504 to a
//	    mutating request is answered after the request was forwarded: the apiserver's own
//	    "Timeout" (the write happened, the client was told it failed).
//	POST /stall
//	    every watch stream open now stops sending without closing: the proxy forwards nothing
//	    more on it until the client gives up. Watches opened later flow normally. A watch carries
//	    nothing while nothing changes, so a stream may have been silent a while before: the
//	    freshest stalled stream's silence up to the stall is kept (stallSilentMinMs, /state), and a
//	    client's stall timeout, counted from the last bytes it got, fires that much sooner. When the
//	    client gives a stalled stream up, the time from the last bytes it forwarded on it to the
//	    client's end is kept: the shortest (stallDroppedMinMs) and how many (stallDropped).
//	POST /expire
//	    every watch stream open now ends, and the next watch of each (path, selectors) within 30 s
//	    is answered with what the apiserver sends to a watch whose resourceVersion an etcd
//	    compaction overtook: 200, one ERROR event carrying a 410 Expired Status, and the end.
//	    (Resuming from an old resourceVersion does not get a 410 from the apiserver for every
//	    kind: its watch cache may still hold the history of a quiet one, such as nodes.)
//	GET /state
//	    {"requests":…, "faulted":…, "watchesOpen":…, "watchesFlowing":… (open, not stalled),
//	     "stalled":…, "ended":…, "expired":… (watches answered 410),
//	     "stallSilentMinMs":… (the last /stall: how long its freshest stream had been silent),
//	     "stallDropped":… (streams of the last /stall the client has ended),
//	     "stallDroppedMinMs":… (of those, the shortest time from last bytes to the client's end; -1: none)}
//
// Usage: kube-fault-proxy --state-dir DIR --upstream https://127.0.0.1:P --upstream-ca FILE
// Writes DIR/ca.pem and DIR/ready.json = {"url": "https://127.0.0.1:Q", "control": "http://…", "ca": PATH}.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type stream struct {
	stall  chan struct{} // closed: stop forwarding
	gen    atomic.Int64  // the /stall that closed it
	cancel context.CancelFunc
	last   atomic.Int64 // when it last forwarded bytes (or opened), UnixNano
}

func (s *stream) stalled() bool {
	select {
	case <-s.stall:
		return true
	default:
		return false
	}
}

type proxy struct {
	upstream *url.URL
	client   *http.Client
	logger   *log.Logger

	mu          sync.Mutex
	statuses    []int
	next        int
	until       time.Time
	streams     map[*stream]struct{}
	expireDone  map[string]bool // watch keys already resumed from resourceVersion 1 since /expire
	expireUntil time.Time

	requests, faulted, stalled, ended, expired atomic.Int64
	stallSilentMinMs                           atomic.Int64
	stallGen                                   int64 // which /stall; under mu
	stallDropped, stallDroppedMinMs            int64 // of stallGen's streams; under mu
}

// dropped notes the client ending stream s, stalled by /stall number gen: how long after the
// last bytes it forwarded on it.
func (p *proxy) dropped(s *stream, gen int64) {
	ms := (time.Now().UnixNano() - s.last.Load()) / int64(time.Millisecond)
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen != p.stallGen {
		return
	}
	p.stallDropped++
	if p.stallDroppedMinMs < 0 || ms < p.stallDroppedMinMs {
		p.stallDroppedMinMs = ms
	}
}

func isWatch(q url.Values) bool { return q.Get("watch") == "true" || q.Get("watch") == "1" }

func watchKey(r *http.Request) string {
	q := r.URL.Query()
	return r.URL.Path + "?" + q.Get("labelSelector") + "&" + q.Get("fieldSelector")
}

// fault returns the status to answer with, or 0 to forward.
func (p *proxy) fault() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.statuses) == 0 || time.Now().After(p.until) {
		return 0
	}
	s := p.statuses[p.next%len(p.statuses)]
	p.next++
	return s
}

var reasons = map[int]string{429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}

func writeStatus(w http.ResponseWriter, code int) {
	reason := reasons[code]
	if reason == "" {
		reason = "InternalError"
	}
	if code == 429 {
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected by kube-fault-proxy","reason":%q,"code":%d}`, reason, code)
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	q := r.URL.Query()
	watch := isWatch(q)
	mutating := r.Method != http.MethodGet && r.Method != http.MethodHead
	code := p.fault()
	if code != 0 && !(code == 504 && mutating) {
		p.faulted.Add(1)
		writeStatus(w, code)
		return
	}
	if watch && q.Get("resourceVersion") != "" {
		key := watchKey(r)
		p.mu.Lock()
		expire := time.Now().Before(p.expireUntil) && !p.expireDone[key]
		if expire {
			p.expireDone[key] = true
		}
		p.mu.Unlock()
		if expire {
			p.expired.Add(1)
			p.logger.Printf("watch %s from resourceVersion %s: 410 Expired", r.URL.Path, q.Get("resourceVersion"))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: %s (%s)","reason":"Expired","code":410}}`+"\n",
				q.Get("resourceVersion"), "999999999")
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out := r.Clone(ctx)
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.Host = p.upstream.Host
	out.RequestURI = ""
	resp, err := p.client.Do(out)
	if err != nil {
		writeStatus(w, 503)
		return
	}
	defer resp.Body.Close()
	if code == 504 {
		_, _ = io.Copy(io.Discard, resp.Body)
		p.faulted.Add(1)
		writeStatus(w, 504)
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if !watch {
		_, _ = io.Copy(w, resp.Body)
		return
	}
	s := &stream{stall: make(chan struct{}), cancel: cancel}
	s.last.Store(time.Now().UnixNano())
	p.mu.Lock()
	p.streams[s] = struct{}{}
	p.mu.Unlock()
	p.logger.Printf("watch %s?%s: %d", r.URL.Path, r.URL.RawQuery, resp.StatusCode)
	defer func() {
		p.mu.Lock()
		delete(p.streams, s)
		p.mu.Unlock()
		p.logger.Printf("watch %s ended", r.URL.Path)
	}()
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	chunks := make(chan []byte)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := resp.Body.Read(buf)
			if n > 0 {
				select {
				case chunks <- buf[:n]:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case <-s.stall:
			// Silent, open: only the client ending the request ends it.
			<-r.Context().Done()
			p.dropped(s, s.gen.Load())
			return
		case <-ctx.Done():
			return
		case b, ok := <-chunks:
			if !ok {
				return
			}
			if s.stalled() {
				<-r.Context().Done()
				p.dropped(s, s.gen.Load())
				return
			}
			if _, err := w.Write(b); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			s.last.Store(time.Now().UnixNano())
		}
	}
}

func (p *proxy) control() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /faults", func(w http.ResponseWriter, r *http.Request) {
		var f struct {
			Statuses []int `json:"statuses"`
			ForMs    int64 `json:"forMs"`
		}
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil || len(f.Statuses) == 0 || f.ForMs <= 0 {
			http.Error(w, "want {\"statuses\":[429,...],\"forMs\":N}", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.statuses, p.next, p.until = f.Statuses, 0, time.Now().Add(time.Duration(f.ForMs)*time.Millisecond)
		p.mu.Unlock()
		p.logger.Printf("faults %v for %d ms", f.Statuses, f.ForMs)
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST /stall", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		n, now, silentMin := 0, time.Now().UnixNano(), int64(-1)
		p.stallGen++
		p.stallDropped, p.stallDroppedMinMs = 0, -1
		for s := range p.streams {
			if !s.stalled() {
				s.gen.Store(p.stallGen)
				close(s.stall)
				n++
				if silent := (now - s.last.Load()) / int64(time.Millisecond); silentMin < 0 || silent < silentMin {
					silentMin = silent
				}
			}
		}
		p.mu.Unlock()
		p.stallSilentMinMs.Store(max(silentMin, 0))
		p.stalled.Add(int64(n))
		p.logger.Printf("stalled %d watch streams", n)
		fmt.Fprintln(w, n)
	})
	mux.HandleFunc("POST /expire", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		n := len(p.streams)
		for s := range p.streams {
			s.cancel()
		}
		// The next watch of each key within 30 s meets a 410.
		p.expireDone = map[string]bool{}
		p.expireUntil = time.Now().Add(30 * time.Second)
		p.mu.Unlock()
		p.ended.Add(int64(n))
		p.logger.Printf("ended %d watch streams; their next watches meet a 410", n)
		fmt.Fprintln(w, n)
	})
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		open, flowing := len(p.streams), 0
		for s := range p.streams {
			if !s.stalled() {
				flowing++
			}
		}
		dropped, droppedMin := p.stallDropped, p.stallDroppedMinMs
		p.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]int64{
			"requests": p.requests.Load(), "faulted": p.faulted.Load(), "watchesOpen": int64(open), "watchesFlowing": int64(flowing),
			"stalled": p.stalled.Load(), "ended": p.ended.Load(), "expired": p.expired.Load(),
			"stallSilentMinMs": p.stallSilentMinMs.Load(), "stallDropped": dropped, "stallDroppedMinMs": droppedMin,
		})
	})
	return mux
}

func main() {
	stateDir := flag.String("state-dir", "", "where ca.pem and ready.json go")
	upstream := flag.String("upstream", "", "the kube-apiserver's URL")
	upstreamCA := flag.String("upstream-ca", "", "the CA bundle that verifies the kube-apiserver")
	flag.Parse()
	if *stateDir == "" || *upstream == "" || *upstreamCA == "" {
		log.Fatal("--state-dir, --upstream and --upstream-ca are required")
	}
	up, err := url.Parse(*upstream)
	if err != nil {
		log.Fatalf("--upstream: %v", err)
	}
	caRaw, err := os.ReadFile(*upstreamCA)
	if err != nil {
		log.Fatalf("--upstream-ca: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caRaw) {
		log.Fatalf("--upstream-ca %s: no certificate", *upstreamCA)
	}
	logger := log.New(os.Stderr, "kube-fault-proxy: ", log.Lmicroseconds)
	p := &proxy{
		upstream: up, logger: logger, streams: map[*stream]struct{}{}, expireDone: map[string]bool{}, stallDroppedMinMs: -1,
		client: &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 64,
		}},
	}
	caPEM, cert, err := generateTLS()
	if err != nil {
		log.Fatalf("tls: %v", err)
	}
	caPath := *stateDir + "/ca.pem"
	if err := os.WriteFile(caPath, caPEM, 0o644); err != nil {
		log.Fatal(err)
	}
	secure, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	hss := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	hs := &http.Server{Handler: p.control(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hss.ServeTLS(secure, "", "") }()
	go func() { _ = hs.Serve(plain) }()
	ready, _ := json.Marshal(map[string]string{
		"url": "https://" + secure.Addr().String(), "control": "http://" + plain.Addr().String(), "ca": caPath,
	})
	tmp := *stateDir + "/ready.json.tmp"
	if err := os.WriteFile(tmp, ready, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(tmp, *stateDir+"/ready.json"); err != nil {
		log.Fatal(err)
	}
	logger.Printf("serving %s", ready)
	parent := os.Getppid()
	go func() {
		for range time.Tick(500 * time.Millisecond) {
			if os.Getppid() != parent {
				os.Exit(0)
			}
		}
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	_ = hs.Close()
	_ = hss.Close()
}

// generateTLS makes a CA and a server certificate for 127.0.0.1 and localhost signed by it.
func generateTLS() ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "headroom test kube-fault-proxy CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: leafKey}, nil
}
