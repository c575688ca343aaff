package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Usage: actions-service --state-dir DIR [--app-id ID --app-public-key PEM] [--pat TOKEN]
//
// Serves plain HTTP and HTTPS (a CA generated at start, written to DIR/ca.pem) on loopback and
// writes DIR/ready.json = {"http": URL, "https": URL, "ca": PATH} once both listen.
func main() {
	cfg := defaultSettings()
	stateDir := flag.String("state-dir", "", "where ca.pem and ready.json go")
	host := flag.String("listen-host", "127.0.0.1", "the address to listen on (a real node's pods reach the host's node-network address)")
	keyFile := flag.String("app-public-key", "", "PEM public key of the GitHub App whose JWTs are accepted")
	flag.StringVar(&cfg.AppID, "app-id", "", "GitHub App (client) id")
	flag.Int64Var(&cfg.InstallationID, "installation-id", cfg.InstallationID, "the App's installation id")
	installations := flag.String("installations", "", "more installations of the App: account=id,account=id")
	userAppID := flag.String("user-app-id", "", "a second GitHub App's id (one for personal accounts)")
	userKeyFile := flag.String("user-app-public-key", "", "PEM public key of the second App")
	userInstallations := flag.String("user-installations", "", "the second App's installations: account=id,account=id")
	flag.StringVar(&cfg.PAT, "pat", "", "a personal access token accepted as a credential")
	flag.StringVar(&cfg.HUDToken, "hud-token", "", "the x-hud-internal-bot value the fake HUD accepts")
	flag.DurationVar(&cfg.PollHold, "poll-hold", cfg.PollHold, "how long a message poll waits")
	flag.DurationVar(&cfg.RunTimeout, "run-timeout", cfg.RunTimeout, "re-queue a job no runner started within this")
	flag.Parse()
	if *stateDir == "" {
		log.Fatal("--state-dir is required")
	}
	cfg.Installations = parseInstallations("--installations", *installations)
	if *keyFile != "" {
		cfg.AppKey = readPublicKey("--app-public-key", *keyFile)
	}
	if *userAppID != "" {
		if *userKeyFile == "" {
			log.Fatal("--user-app-id needs --user-app-public-key")
		}
		cfg.UserApp = &appSettings{ID: *userAppID, Key: readPublicKey("--user-app-public-key", *userKeyFile),
			Installations: parseInstallations("--user-installations", *userInstallations)}
	}
	logger := log.New(os.Stderr, "actions-peer: ", log.Lmicroseconds)
	srv := newServer(cfg, logger)

	caPEM, tlsCert, err := generateTLS(*host)
	if err != nil {
		log.Fatalf("tls: %v", err)
	}
	caPath := *stateDir + "/ca.pem"
	if err := os.WriteFile(caPath, caPEM, 0o644); err != nil {
		log.Fatal(err)
	}
	plain, err := net.Listen("tcp", net.JoinHostPort(*host, "0"))
	if err != nil {
		log.Fatal(err)
	}
	secure, err := net.Listen("tcp", net.JoinHostPort(*host, "0"))
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	hss := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{tlsCert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = hs.Serve(plain) }()
	go func() { _ = hss.ServeTLS(secure, "", "") }()

	ready, _ := json.Marshal(map[string]string{
		"http":  "http://" + plain.Addr().String(),
		"https": "https://" + secure.Addr().String(),
		"ca":    caPath,
	})
	tmp := *stateDir + "/ready.json.tmp"
	if err := os.WriteFile(tmp, ready, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(tmp, *stateDir+"/ready.json"); err != nil {
		log.Fatal(err)
	}
	logger.Printf("serving %s", ready)

	// Stop with the test that started us, even when it crashed and sent no signal.
	parent := os.Getppid()
	go func() {
		for range time.Tick(500 * time.Millisecond) {
			if os.Getppid() != parent {
				logger.Printf("parent %d is gone: stopping", parent)
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

func parsePublicKey(raw []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
		if rk, ok := k.(*rsa.PublicKey); ok {
			return rk, nil
		}
		return nil, fmt.Errorf("not an RSA key")
	}
	return x509.ParsePKCS1PublicKey(block.Bytes)
}

// generateTLS makes a CA and a server certificate for 127.0.0.1, localhost and the address it
// listens on (a real node's pods reach it there) signed by it.
func generateTLS(host string) ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "headroom test actions-service CA"},
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
	if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
		leaf.IPAddresses = append(leaf.IPAddresses, ip)
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: leafKey}, nil
}

// parseInstallations: "account=id,account=id" → a map (nil for "").
func parseInstallations(flagName, value string) map[string]int64 {
	if value == "" {
		return nil
	}
	out := map[string]int64{}
	for _, pair := range strings.Split(value, ",") {
		account, id, found := strings.Cut(pair, "=")
		n, err := strconv.ParseInt(id, 10, 64)
		if !found || err != nil || account == "" {
			log.Fatalf("%s: expected account=id, found %q", flagName, pair)
		}
		out[account] = n
	}
	return out
}

func readPublicKey(flagName, file string) *rsa.PublicKey {
	raw, err := os.ReadFile(file)
	if err != nil {
		log.Fatalf("%s: %v", flagName, err)
	}
	key, err := parsePublicKey(raw)
	if err != nil {
		log.Fatalf("%s %s: %v", flagName, file, err)
	}
	return key
}
