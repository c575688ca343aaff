// A minimal BigFleet shard for headroom's interop tests: the Shard.Session service from the same
// field list as the public API (headroom's messages/proto), on loopback, plaintext or mTLS.
//
// What it does, as a real shard does:
//   - the first frame must be Hello, else InvalidArgument;
//   - with mTLS (TLS 1.3, client certificates required and verified against one CA), the client
//     certificate must carry exactly one bigfleet:// URI SAN, equal to
//     bigfleet://cluster/<Hello.cluster_id>, else PermissionDenied;
//   - every roll-up is acknowledged and replaces the cluster's previous one;
//   - on (re)connect, the last node state of every machine bound to the cluster is replayed.
//
// A control API (HTTP, /state and POSTs) lets tests push NodeStateUpdates, reclaim instructions,
// bootstrap requests and available-capacity updates down the stream and read what arrived.
//
// Usage: bigfleet-shard --state-dir DIR [--tls]
// Writes DIR/ready.json = {"grpc": "127.0.0.1:P", "control": "http://127.0.0.1:Q"} and, with
// --tls, DIR/{ca,client,client-wrong-san}.{pem,key} for the tests.
package main

import (
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
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"headroom.test/bigfleet-shard/pb"
)

type session struct {
	ClusterID       string `json:"clusterId"`
	ProtocolVersion string `json:"protocolVersion"`
	TLSVersion      string `json:"tlsVersion"`
	Open            bool   `json:"open"`
	send            chan *pb.ShardMessage
	kill            chan struct{} // closed to end the stream from the shard's side
}

type shard struct {
	pb.UnimplementedShardServer
	mu         sync.Mutex
	tls        bool
	sessions   []*session
	rollups    int
	lastRollup json.RawMessage
	rollupAt   []time.Time
	acks       []json.RawMessage // ReclaimAcks
	bootstraps []json.RawMessage // BootstrapBlobResponses
	refused    []string          // why sessions were refused
	machines   map[string]map[string]*pb.NodeStateUpdate
	logger     *log.Logger
}

func (s *shard) Session(stream pb.Shard_SessionServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	hello := first.GetHello()
	if hello == nil {
		s.refuse("first frame was not Hello")
		return status.Error(codes.InvalidArgument, "the first frame must be Hello")
	}
	tlsVersion := ""
	if s.tls {
		p, _ := peer.FromContext(stream.Context())
		info, ok := p.AuthInfo.(credentials.TLSInfo)
		if !ok || len(info.State.PeerCertificates) == 0 {
			s.refuse("no client certificate")
			return status.Error(codes.PermissionDenied, "a client certificate is required")
		}
		var uris []*url.URL
		for _, u := range info.State.PeerCertificates[0].URIs {
			if u.Scheme == "bigfleet" {
				uris = append(uris, u)
			}
		}
		want := "bigfleet://cluster/" + hello.GetClusterId()
		if len(uris) != 1 || uris[0].String() != want {
			s.refuse(fmt.Sprintf("client certificate SANs %v, want exactly %s", uris, want))
			return status.Errorf(codes.PermissionDenied, "client certificate does not name %s", want)
		}
		tlsVersion = tls.VersionName(info.State.Version)
	}
	sess := &session{ClusterID: hello.GetClusterId(), ProtocolVersion: hello.GetProtocolVersion(),
		TLSVersion: tlsVersion, Open: true, send: make(chan *pb.ShardMessage, 100000), kill: make(chan struct{})}
	s.mu.Lock()
	s.sessions = append(s.sessions, sess)
	for _, m := range s.machines[sess.ClusterID] { // replay bound machines' state
		sess.send <- &pb.ShardMessage{Payload: &pb.ShardMessage_NodeStateUpdate{NodeStateUpdate: m}}
	}
	s.mu.Unlock()
	s.logger.Printf("session opened: cluster %s protocol %s tls %q", sess.ClusterID, sess.ProtocolVersion, tlsVersion)
	defer func() {
		s.mu.Lock()
		sess.Open = false
		s.mu.Unlock()
		s.logger.Printf("session closed: cluster %s", sess.ClusterID)
	}()

	errs := make(chan error, 2)
	go func() {
		for {
			select {
			case m := <-sess.send:
				if err := stream.Send(m); err != nil {
					errs <- err
					return
				}
			case <-stream.Context().Done():
				errs <- stream.Context().Err()
				return
			}
		}
	}()
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				errs <- err
				return
			}
			s.received(sess, m)
		}
	}()
	select {
	case err = <-errs:
	case <-sess.kill:
		return status.Error(codes.Unavailable, "the shard dropped the session")
	}
	if err == io.EOF {
		return nil
	}
	return err
}

func (s *shard) refuse(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, why)
	s.logger.Printf("session refused: %s", why)
}

func (s *shard) received(sess *session, m *pb.OperatorMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch p := m.Payload.(type) {
	case *pb.OperatorMessage_Rollup:
		s.rollups++
		s.rollupAt = append(s.rollupAt, time.Now())
		s.lastRollup, _ = protojson.Marshal(p.Rollup)
		sess.send <- &pb.ShardMessage{Payload: &pb.ShardMessage_Ack{Ack: &pb.Acknowledgement{Echo: "rollup",
			CoordinatorTerm: 1, ShardEpoch: 1}}}
	case *pb.OperatorMessage_ReclaimAck:
		raw, _ := protojson.Marshal(p.ReclaimAck)
		s.acks = append(s.acks, raw)
	case *pb.OperatorMessage_BootstrapResponse:
		raw, _ := protojson.Marshal(p.BootstrapResponse)
		s.bootstraps = append(s.bootstraps, raw)
	case *pb.OperatorMessage_Hello:
		s.logger.Printf("a second Hello on one stream (ignored)")
	}
}

// sendAll pushes one message to every open session of the cluster; false when none is open.
func (s *shard) sendAll(cluster string, m *pb.ShardMessage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := m.GetNodeStateUpdate(); u != nil {
		if s.machines[cluster] == nil {
			s.machines[cluster] = map[string]*pb.NodeStateUpdate{}
		}
		s.machines[cluster][u.GetMachineId()] = u
	}
	sent := false
	for _, sess := range s.sessions {
		if sess.Open && sess.ClusterID == cluster {
			sess.send <- m
			sent = true
		}
	}
	return sent
}

func (s *shard) control(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	cluster := r.URL.Query().Get("cluster")
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	push := func(m proto.Message, wrap func() *pb.ShardMessage) {
		if err := protojson.Unmarshal(body, m); err != nil {
			reply(400, map[string]string{"error": err.Error()})
			return
		}
		if !s.sendAll(cluster, wrap()) {
			reply(409, map[string]string{"error": "no open session for cluster " + cluster})
			return
		}
		reply(200, map[string]bool{"sent": true})
	}
	switch r.URL.Path {
	case "/state":
		s.mu.Lock()
		defer s.mu.Unlock()
		reply(200, map[string]any{"sessions": s.sessions, "rollups": s.rollups, "lastRollup": s.lastRollup,
			"reclaimAcks": s.acks, "bootstrapResponses": s.bootstraps, "refused": s.refused})
	case "/node-state":
		u := &pb.NodeStateUpdate{}
		push(u, func() *pb.ShardMessage {
			return &pb.ShardMessage{Payload: &pb.ShardMessage_NodeStateUpdate{NodeStateUpdate: u}}
		})
	case "/reclaim":
		u := &pb.ReclaimInstruction{}
		push(u, func() *pb.ShardMessage {
			return &pb.ShardMessage{Payload: &pb.ShardMessage_ReclaimInstruction{ReclaimInstruction: u}}
		})
	case "/bootstrap":
		u := &pb.BootstrapRequest{}
		push(u, func() *pb.ShardMessage {
			return &pb.ShardMessage{Payload: &pb.ShardMessage_BootstrapRequest{BootstrapRequest: u}}
		})
	case "/available":
		u := &pb.AvailableCapacityUpdate{}
		push(u, func() *pb.ShardMessage {
			return &pb.ShardMessage{Payload: &pb.ShardMessage_AvailableCapacity{AvailableCapacity: u}}
		})
	case "/drop": // ends every open session of the cluster from the shard's side
		s.mu.Lock()
		n := 0
		for _, sess := range s.sessions {
			if sess.Open && sess.ClusterID == cluster {
				close(sess.kill)
				sess.Open = false
				n++
			}
		}
		s.mu.Unlock()
		reply(200, map[string]int{"dropped": n})
	case "/burst": // {machines, updates[, prefix]}: NodeStateUpdates cycling through machines and states
		var req struct {
			Machines, Updates int
			Prefix            string
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Machines <= 0 {
			reply(400, map[string]string{"error": "want {machines, updates}"})
			return
		}
		states := []pb.MachineState{pb.MachineState_MACHINE_STATE_CREATING, pb.MachineState_MACHINE_STATE_IDLE,
			pb.MachineState_MACHINE_STATE_CONFIGURING, pb.MachineState_MACHINE_STATE_CONFIGURED}
		for i := 0; i < req.Updates; i++ {
			m := i % req.Machines
			st := states[(i/req.Machines)%len(states)]
			if i >= req.Updates-req.Machines { // every machine ends Ready
				st = pb.MachineState_MACHINE_STATE_CONFIGURED
			}
			prefix := req.Prefix
			if prefix == "" {
				prefix = "burst"
			}
			id := fmt.Sprintf("%s-%03d", prefix, m)
			u := &pb.NodeStateUpdate{SupersedesKey: "node:" + id, MachineId: id, ClusterId: cluster, State: st,
				Resources: &pb.Resources{Resources: map[string]string{"cpu": "16"}}}
			s.sendAll(cluster, &pb.ShardMessage{Payload: &pb.ShardMessage_NodeStateUpdate{NodeStateUpdate: u}})
		}
		reply(200, map[string]int{"sent": req.Updates})
	default:
		reply(404, map[string]string{"error": "no such endpoint"})
	}
}

func main() {
	stateDir := flag.String("state-dir", "", "where ready.json (and with --tls the certificates) go")
	useTLS := flag.Bool("tls", false, "mTLS: TLS 1.3, client certificates required")
	clusterID := flag.String("cluster-id", "headroom-test", "the cluster id the good client certificate names")
	grpcAddr := flag.String("grpc-addr", "127.0.0.1:0", "where the gRPC server listens (a restarted shard takes its old address again)")
	flag.Parse()
	if *stateDir == "" {
		log.Fatal("--state-dir is required")
	}
	logger := log.New(os.Stderr, "bigfleet-shard: ", log.Lmicroseconds)
	s := &shard{tls: *useTLS, machines: map[string]map[string]*pb.NodeStateUpdate{}, logger: logger}

	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(256 << 20), grpc.MaxSendMsgSize(256 << 20)}
	if *useTLS {
		cfg, err := makeTLS(*stateDir, *clusterID)
		if err != nil {
			log.Fatalf("tls: %v", err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	}
	server := grpc.NewServer(opts...)
	pb.RegisterShardServer(server, s)
	glis, err := net.Listen("tcp", *grpcAddr)
	if err != nil {
		log.Fatal(err)
	}
	clis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = server.Serve(glis) }()
	go func() { _ = http.Serve(clis, http.HandlerFunc(s.control)) }()
	ready, _ := json.Marshal(map[string]string{"grpc": glis.Addr().String(), "control": "http://" + clis.Addr().String()})
	if err := os.WriteFile(*stateDir+"/ready.json.tmp", ready, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(*stateDir+"/ready.json.tmp", *stateDir+"/ready.json"); err != nil {
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
	server.Stop()
}

// makeTLS writes a CA, the shard's certificate, a client certificate naming the cluster and one
// naming another cluster, and returns the shard's TLS 1.3 config requiring client certificates.
func makeTLS(dir, clusterID string) (*tls.Config, error) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "headroom test shard CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, uris []string, server bool) ([]byte, *ecdsa.PrivateKey, error) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		t := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
		if server {
			t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			t.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			t.DNSNames = []string{"localhost"}
		} else {
			t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		}
		for _, u := range uris {
			parsed, _ := url.Parse(u)
			t.URIs = append(t.URIs, parsed)
		}
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
		return der, key, err
	}
	write := func(name string, der []byte, key *ecdsa.PrivateKey) error {
		if err := os.WriteFile(dir+"/"+name+".pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
			return err
		}
		if key == nil {
			return nil
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		return os.WriteFile(dir+"/"+name+".key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	}
	if err := write("ca", caDER, nil); err != nil {
		return nil, err
	}
	for i, c := range []struct {
		name string
		uris []string
	}{{"client", []string{"bigfleet://cluster/" + clusterID}}, {"client-wrong-san", []string{"bigfleet://cluster/someone-else"}}} {
		der, key, err := issue(int64(10+i), c.name, c.uris, false)
		if err != nil {
			return nil, err
		}
		if err := write(c.name, der, key); err != nil {
			return nil, err
		}
	}
	serverDER, serverKey, err := issue(2, "127.0.0.1", nil, true)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tls.Config{MinVersion: tls.VersionTLS13, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		Certificates: []tls.Certificate{{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}}}, nil
}
