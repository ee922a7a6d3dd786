// Command kubelets puts the API traffic of N kubelets on a test bed's kube-apiserver, without
// running any pod: each simulated node registers its Node, renews its Lease in kube-node-lease
// every 10 s, reports its status every 5 min when nothing changes (as kubelets do since node
// leases), and holds a watch on the pods bound to it (fieldSelector spec.nodeName=NODE). Each
// node has its own client certificate (CN=system:node:NODE, O=system:nodes, signed here with
// the bed's CA), so its own transport and TLS connection, like a real kubelet.
//
// Everything stops by itself: after -lifetime, when -stop-file disappears (the bed was taken
// down), when no request has succeeded for -max-outage, or on SIGTERM/SIGINT. With
// -delete-on-exit the nodes delete their Node and Lease on the way out.
//
// tests/controlplane/cluster runs one for the bed's own nodes (so kube-controller-manager does
// not taint them) and one for `cluster load N`.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

const leaseNamespace = "kube-node-lease"

type options struct {
	apiservers     []string
	caFile         string
	caKeyFile      string
	caPEM          []byte
	names          []string
	prefix         string
	count          int
	role           string
	sourceNet      string
	nodeAddress    string
	version        string
	leaseInterval  time.Duration
	leaseDuration  time.Duration
	statusInterval time.Duration
	lifetime       time.Duration
	maxOutage      time.Duration
	report         time.Duration
	rampRate       float64
	deleteOnExit   bool
	adminConfig    string
	readyFile      string
	stopFile       string
}

// counters, reported every -report and at exit.
type counters struct {
	registered, leaseRenewals, leaseFailures, statusUpdates, statusFailures atomic.Int64
	watchesOpen, podEvents, failovers                                       atomic.Int64
}

var (
	stats       counters
	lastSuccess atomic.Int64 // unix ns of the last request that succeeded
)

func succeeded() { lastSuccess.Store(time.Now().UnixNano()) }

type ca struct {
	cert    *x509.Certificate
	key     any
	certPEM []byte
}

type node struct {
	name    string
	index   int
	address string // InternalIP reported, and the source address of its connection (IPv4)
	opts    *options
	certPEM []byte
	keyPEM  []byte
	start   time.Time

	mu          sync.Mutex
	api         int // index into opts.apiservers
	client      kubernetes.Interface
	failures    int // consecutive failed requests to the current apiserver
	watchCancel context.CancelFunc
	uid         types.UID
	lease       *coordv1.Lease
}

func main() {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelets: %v\n", err)
		os.Exit(2)
	}
	os.Exit(run(o))
}

func parseFlags() (*options, error) {
	o := &options{}
	var apis, names string
	flag.StringVar(&apis, "apiservers", "", "comma-separated kube-apiserver URLs; node i uses the i-th (round robin) and fails over to the next")
	flag.StringVar(&o.caFile, "ca", "", "the bed's CA certificate (PEM): trusted for the apiservers, and signs the nodes' client certificates")
	flag.StringVar(&o.caKeyFile, "ca-key", "", "the CA's private key (PEM)")
	flag.StringVar(&names, "names", "", "comma-separated node names (instead of -prefix/-count)")
	flag.StringVar(&o.prefix, "prefix", "load-", "node name prefix with -count: PREFIX00001, PREFIX00002, ...")
	flag.IntVar(&o.count, "count", 0, "number of nodes named by -prefix")
	flag.StringVar(&o.role, "role", "load", "value of the bindtrace.io/simulated label on the nodes")
	flag.StringVar(&o.sourceNet, "source-net", "", "IPv4 /16 prefix like 127.1: node i connects from and reports 127.1.(i/250).(i%250+1); empty: the kernel picks the source and -node-address is reported")
	flag.StringVar(&o.nodeAddress, "node-address", "127.0.0.1", "InternalIP the nodes report without -source-net")
	flag.StringVar(&o.version, "kubelet-version", "v0.0.0", "version the nodes report (nodeInfo.kubeletVersion, User-Agent)")
	flag.DurationVar(&o.leaseInterval, "lease-interval", 10*time.Second, "Lease renewal interval (kubelet: a quarter of the lease duration)")
	flag.DurationVar(&o.leaseDuration, "lease-duration", 40*time.Second, "Lease duration")
	flag.DurationVar(&o.statusInterval, "status-interval", 5*time.Minute, "status report interval when nothing changes (kubelet's nodeStatusReportFrequency)")
	flag.DurationVar(&o.lifetime, "lifetime", time.Hour, "stop after this long")
	flag.DurationVar(&o.maxOutage, "max-outage", 2*time.Minute, "stop when no request has succeeded for this long")
	flag.DurationVar(&o.report, "report", time.Minute, "interval of the summary lines on stderr")
	flag.Float64Var(&o.rampRate, "ramp-rate", 20, "nodes started per second")
	flag.BoolVar(&o.deleteOnExit, "delete-on-exit", false, "delete each node's Lease and Node when stopping")
	flag.StringVar(&o.adminConfig, "admin-kubeconfig", "", "with -delete-on-exit: a kubeconfig allowed to delete Nodes (a node may delete its Lease, not its Node)")
	flag.StringVar(&o.readyFile, "ready-file", "", "written once every node is registered, Ready and holds its Lease")
	flag.StringVar(&o.stopFile, "stop-file", "", "stop when this file disappears")
	flag.Parse()
	if flag.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (see -h)", flag.Arg(0))
	}
	for _, a := range strings.Split(apis, ",") {
		if a = strings.TrimSpace(a); a != "" {
			o.apiservers = append(o.apiservers, a)
		}
	}
	switch {
	case len(o.apiservers) == 0:
		return nil, errors.New("-apiservers is required")
	case o.caFile == "" || o.caKeyFile == "":
		return nil, errors.New("-ca and -ca-key are required")
	case names != "" && o.count > 0:
		return nil, errors.New("give -names or -count, not both")
	case o.leaseInterval <= 0 || o.statusInterval <= 0 || o.lifetime <= 0 || o.rampRate <= 0:
		return nil, errors.New("intervals, -lifetime and -ramp-rate must be positive")
	case o.deleteOnExit && o.adminConfig == "":
		return nil, errors.New("-delete-on-exit needs -admin-kubeconfig")
	}
	if names != "" {
		o.names = strings.Split(names, ",")
	} else {
		if o.count <= 0 || o.count > 60000 {
			return nil, fmt.Errorf("-count %d is not in 1..60000", o.count)
		}
		for i := 1; i <= o.count; i++ {
			o.names = append(o.names, fmt.Sprintf("%s%05d", o.prefix, i))
		}
	}
	if o.sourceNet != "" {
		if ip := net.ParseIP(o.sourceNet + ".0.1"); ip == nil || ip.To4() == nil {
			return nil, fmt.Errorf("-source-net %q is not an IPv4 /16 prefix like 127.1", o.sourceNet)
		}
		if len(o.names) > 250*256 {
			return nil, errors.New("too many nodes for one -source-net")
		}
	} else if net.ParseIP(o.nodeAddress) == nil {
		return nil, fmt.Errorf("-node-address %q is not an IP address", o.nodeAddress)
	}
	return o, nil
}

func run(o *options) int {
	authority, err := loadCA(o.caFile, o.caKeyFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelets: %v\n", err)
		return 1
	}
	o.caPEM = authority.certPEM
	ctx, cancel := context.WithTimeout(context.Background(), o.lifetime)
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	var why atomic.Value
	why.Store("lifetime " + o.lifetime.String() + " reached")
	stop := func(reason string) {
		why.Store(reason)
		cancel()
	}
	go func() {
		select {
		case s := <-sigs:
			stop("signal " + s.String())
		case <-ctx.Done():
		}
	}()
	succeeded()
	go watchdog(ctx, o, stop)

	nodes := make([]*node, len(o.names))
	for i, name := range o.names {
		n, err := newNode(o, authority, name, i)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kubelets: node %s: %v\n", name, err)
			return 1
		}
		nodes[i] = n
	}
	fmt.Fprintf(os.Stderr, "kubelets: %d nodes (%s ... %s) on %s: lease every %s, status every %s, lifetime %s\n",
		len(nodes), nodes[0].name, nodes[len(nodes)-1].name, strings.Join(o.apiservers, ","),
		o.leaseInterval, o.statusInterval, o.lifetime)

	var wg sync.WaitGroup
	var ready sync.WaitGroup
	ready.Add(len(nodes))
	t0 := time.Now()
	gap := time.Duration(float64(time.Second) / o.rampRate)
	go func() {
		ready.Wait()
		if ctx.Err() != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "kubelets: all %d nodes registered, Ready and leased in %.1f s\n",
			len(nodes), time.Since(t0).Seconds())
		if o.readyFile != "" {
			if err := os.WriteFile(o.readyFile, []byte(fmt.Sprintf("%d\n", len(nodes))), 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "kubelets: %v\n", err)
			}
		}
	}()
	go reporter(ctx, o, len(nodes))
	for i, n := range nodes {
		if i > 0 {
			select {
			case <-time.After(gap):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			ready.Add(-(len(nodes) - i))
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.run(ctx, ready.Done)
		}()
	}
	wg.Wait()
	reason := why.Load().(string)
	fmt.Fprintf(os.Stderr, "kubelets: stopping: %s\n", reason)
	code := 0
	if strings.HasPrefix(reason, "no request") {
		code = 1
	}
	if o.deleteOnExit {
		if !deleteAll(o, nodes) {
			code = 1
		}
	}
	printStats(len(nodes), "at exit")
	return code
}

// watchdog stops everything when the bed is gone: its stop file removed, or no answer for long.
func watchdog(ctx context.Context, o *options, stop func(string)) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if o.stopFile != "" {
			if _, err := os.Stat(o.stopFile); errors.Is(err, os.ErrNotExist) {
				stop(o.stopFile + " is gone")
				return
			}
		}
		if idle := time.Since(time.Unix(0, lastSuccess.Load())); idle > o.maxOutage {
			stop(fmt.Sprintf("no request succeeded for %s", idle.Round(time.Second)))
			return
		}
	}
}

func reporter(ctx context.Context, o *options, total int) {
	t := time.NewTicker(o.report)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			printStats(total, "")
		}
	}
}

func printStats(total int, when string) {
	if when != "" {
		when = " " + when
	}
	fmt.Fprintf(os.Stderr, "kubelets%s: %d/%d nodes registered, %d watches open, lease renewals %d (%d failed), "+
		"status updates %d (%d failed), pod events %d, failovers %d\n", when,
		stats.registered.Load(), total, stats.watchesOpen.Load(), stats.leaseRenewals.Load(),
		stats.leaseFailures.Load(), stats.statusUpdates.Load(), stats.statusFailures.Load(),
		stats.podEvents.Load(), stats.failovers.Load())
}

func loadCA(certFile, keyFile string) (*ca, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, fmt.Errorf("%s: no PEM key", keyFile)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		if key, err = x509.ParseECPrivateKey(kb.Bytes); err != nil {
			return nil, fmt.Errorf("%s: not a PKCS#8 or EC private key", keyFile)
		}
	}
	return &ca{cert: cert, key: key, certPEM: certPEM}, nil
}

// A client certificate as kubelets get through TLS bootstrapping, for the Node authorizer.
func (c *ca) nodeCert(name string, lifetime time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(lifetime + 24*time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

func newNode(o *options, c *ca, name string, index int) (*node, error) {
	certPEM, keyPEM, err := c.nodeCert(name, o.lifetime)
	if err != nil {
		return nil, err
	}
	n := &node{name: name, index: index, opts: o, certPEM: certPEM, keyPEM: keyPEM,
		api: index % len(o.apiservers), address: o.nodeAddress}
	if o.sourceNet != "" {
		n.address = fmt.Sprintf("%s.%d.%d", o.sourceNet, index/250, index%250+1)
	}
	n.client, err = n.newClient()
	if err != nil {
		return nil, err
	}
	return n, nil
}

// newClient: a clientset of its own for the node's current apiserver. The node's own
// certificate gives it a transport (and so a TLS connection) of its own in client-go's
// transport cache; with -source-net it also dials from its own address.
func (n *node) newClient() (kubernetes.Interface, error) {
	cfg := &rest.Config{
		Host: n.opts.apiservers[n.api],
		TLSClientConfig: rest.TLSClientConfig{CAData: n.opts.caPEM, CertData: n.certPEM,
			KeyData: n.keyPEM},
		UserAgent: fmt.Sprintf("kubelet/%s (linux/amd64) bindtrace-kubelets", n.opts.version),
		ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf",
			AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json"},
		QPS:   50,
		Burst: 100,
	}
	if n.opts.sourceNet != "" {
		d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second,
			LocalAddr: &net.TCPAddr{IP: net.ParseIP(n.address)}}
		cfg.Dial = d.DialContext
	}
	return kubernetes.NewForConfig(cfg)
}

func (n *node) current() kubernetes.Interface {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.client
}

// result notes how a request went; after three failures in a row the node moves to the next
// apiserver, as a kubelet behind a load balancer would end up doing.
func (n *node) result(err error, restartWatch func()) {
	if err == nil {
		succeeded()
		n.mu.Lock()
		n.failures = 0
		n.mu.Unlock()
		return
	}
	if len(n.opts.apiservers) < 2 || !retriable(err) {
		return
	}
	n.mu.Lock()
	n.failures++
	if n.failures < 3 {
		n.mu.Unlock()
		return
	}
	n.failures = 0
	n.api = (n.api + 1) % len(n.opts.apiservers)
	c, cerr := n.newClient()
	if cerr == nil {
		n.client = c
	}
	n.mu.Unlock()
	stats.failovers.Add(1)
	if restartWatch != nil {
		restartWatch()
	}
}

// Errors the apiserver answered (conflicts, 4xx) are not its absence.
func retriable(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == 0 || code >= 500 || code == 429
	}
	return true
}

func (n *node) run(ctx context.Context, ready func()) {
	n.start = time.Now()
	// Registration retries back off as kubelet's do: 100 ms doubling up to 7 s.
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := n.register(ctx); err == nil {
			break
		} else if ctx.Err() == nil {
			n.result(err, nil)
			fmt.Fprintf(os.Stderr, "kubelets: %s: registering: %v\n", n.name, err)
			sleep(ctx, jitter(backoff))
			backoff = min(2*backoff, 7*time.Second)
		}
	}
	if ctx.Err() != nil {
		ready()
		return
	}
	stats.registered.Add(1)
	n.startWatch(ctx)
	leased := false
	for !leased && ctx.Err() == nil {
		leased = n.renewLease(ctx)
		if !leased {
			sleep(ctx, time.Second)
		}
	}
	ready()

	// Like kubelet's wait.JitterUntil with a small jitter: the nodes do not all renew at once.
	// The first status report comes at a uniformly random point of its interval: real kubelets
	// started at different times, so their reports are spread over the interval, while these
	// nodes all registered within a minute or so and would otherwise report in one bunch every
	// 5 min (a minute of 15 node PATCHes a second at 1000 nodes, which made a bench's bursts
	// cost more or less depending on whether they fell in it).
	leaseT := time.NewTimer(jitter(n.opts.leaseInterval))
	statusT := time.NewTimer(uniform(n.opts.statusInterval))
	defer leaseT.Stop()
	defer statusT.Stop()
	for {
		select {
		case <-ctx.Done():
			n.stopWatch()
			return
		case <-leaseT.C:
			n.renewLease(ctx)
			leaseT.Reset(jitter(n.opts.leaseInterval))
		case <-statusT.C:
			n.reportStatus(ctx)
			statusT.Reset(jitter(n.opts.statusInterval))
		}
	}
}

func jitter(d time.Duration) time.Duration {
	j, _ := rand.Int(rand.Reader, big.NewInt(int64(d)/25+1))
	return d + time.Duration(j.Int64())
}

// uniform: a duration uniformly distributed in [0, d).
func uniform(d time.Duration) time.Duration {
	j, _ := rand.Int(rand.Reader, big.NewInt(int64(d)))
	return time.Duration(j.Int64())
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

func reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 10*time.Second)
}

// register: create the Node with its status as kubelet's registerWithAPIServer does (nodes take
// their status on create); one that exists already is taken over and its status patched.
func (n *node) register(ctx context.Context) error {
	c := n.current()
	rctx, cancel := reqCtx(ctx)
	defer cancel()
	obj := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{
		"kubernetes.io/hostname": n.name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"bindtrace.io/simulated": n.opts.role,
	}}, Status: n.status(metav1.Now())}
	got, err := c.CoreV1().Nodes().Create(rctx, obj, metav1.CreateOptions{})
	if err == nil {
		n.uid = got.UID
		succeeded()
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	if got, err = c.CoreV1().Nodes().Get(rctx, n.name, metav1.GetOptions{}); err != nil {
		return err
	}
	n.uid = got.UID
	succeeded()
	status := n.status(metav1.Now())
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = c.CoreV1().Nodes().Patch(rctx, n.name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
	return err
}

var conditionTypes = []struct{ typ, status, reason, msg string }{
	{"MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
	{"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
	{"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
	{"Ready", "True", "KubeletReady", "kubelet is posting ready status (simulated by bindtrace)"},
}

func (n *node) conditions(now metav1.Time) []v1.NodeCondition {
	var out []v1.NodeCondition
	for _, c := range conditionTypes {
		out = append(out, v1.NodeCondition{Type: v1.NodeConditionType(c.typ),
			Status: v1.ConditionStatus(c.status), Reason: c.reason, Message: c.msg,
			LastHeartbeatTime: now, LastTransitionTime: metav1.NewTime(n.start)})
	}
	return out
}

// The whole status a kubelet reports: what the scheduler needs (allocatable pods, cpu,
// memory), addresses and the node's identity.
func (n *node) status(now metav1.Time) v1.NodeStatus {
	res := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("32"),
		v1.ResourceMemory:           resource.MustParse("256Gi"),
		v1.ResourcePods:             resource.MustParse("250"),
		v1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
	}
	return v1.NodeStatus{
		Capacity:    res,
		Allocatable: res,
		Conditions:  n.conditions(now),
		Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: n.address},
			{Type: v1.NodeHostName, Address: n.name}},
		DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10250}},
		NodeInfo: v1.NodeSystemInfo{MachineID: fmt.Sprintf("%032x", n.index+1),
			SystemUUID: fmt.Sprintf("%032x", n.index+1), BootID: fmt.Sprintf("%032x", n.start.UnixNano()),
			KernelVersion: kernel(), OSImage: "bindtrace simulated node",
			ContainerRuntimeVersion: "containerd://simulated", KubeletVersion: n.opts.version,
			OperatingSystem: "linux", Architecture: "amd64"},
	}
}

// patchStatus: the heartbeat as kubelet sends it when nothing changed: a strategic merge patch
// of nodes/NAME/status with the conditions' new lastHeartbeatTime.
func (n *node) patchStatus(ctx context.Context) error {
	status := map[string]any{
		"$setElementOrder/conditions": []map[string]string{{"type": "MemoryPressure"},
			{"type": "DiskPressure"}, {"type": "PIDPressure"}, {"type": "Ready"}},
		"conditions": n.conditions(metav1.Now()),
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = n.current().CoreV1().Nodes().Patch(ctx, n.name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status")
	return err
}

func (n *node) reportStatus(ctx context.Context) {
	rctx, cancel := reqCtx(ctx)
	defer cancel()
	err := n.patchStatus(rctx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		stats.statusFailures.Add(1)
	} else {
		stats.statusUpdates.Add(1)
	}
	n.result(err, func() { n.restartWatch(ctx) })
}

// renewLease: kubelet's node lease controller: update the lease it holds; when that fails get
// (or create) the current one and update that.
func (n *node) renewLease(ctx context.Context) bool {
	rctx, cancel := reqCtx(ctx)
	defer cancel()
	leases := n.current().CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	var err error
	if n.lease != nil {
		l := n.lease.DeepCopy()
		l.Spec.RenewTime = &now
		var got *coordv1.Lease
		if got, err = leases.Update(rctx, l, metav1.UpdateOptions{}); err == nil {
			n.lease = got
		}
	}
	if n.lease == nil || err != nil {
		var l *coordv1.Lease
		l, err = leases.Get(rctx, n.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			secs := int32(n.opts.leaseDuration / time.Second)
			l, err = leases.Create(rctx, &coordv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: leaseNamespace,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node",
						Name: n.name, UID: n.uid}}},
				Spec: coordv1.LeaseSpec{HolderIdentity: &n.name, LeaseDurationSeconds: &secs,
					RenewTime: &now}}, metav1.CreateOptions{})
		} else if err == nil {
			l.Spec.HolderIdentity = &n.name
			l.Spec.RenewTime = &now
			l, err = leases.Update(rctx, l, metav1.UpdateOptions{})
		}
		if err == nil {
			n.lease = l
		}
	}
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		stats.leaseFailures.Add(1)
	} else {
		stats.leaseRenewals.Add(1)
	}
	n.result(err, func() { n.restartWatch(ctx) })
	return err == nil
}

// startWatch: the pods bound to this node, as kubelet's config source watches them.
func (n *node) startWatch(ctx context.Context) {
	wctx, cancel := context.WithCancel(ctx)
	n.mu.Lock()
	n.watchCancel = cancel
	c := n.client
	n.mu.Unlock()
	lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		fields.OneTermEqualSelector("spec.nodeName", n.name))
	count := func(any) { stats.podEvents.Add(1) }
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    &v1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{AddFunc: count,
			UpdateFunc: func(_, o any) { count(o) }, DeleteFunc: count},
	})
	stats.watchesOpen.Add(1)
	go func() {
		ctrl.RunWithContext(wctx)
		stats.watchesOpen.Add(-1)
	}()
}

func (n *node) stopWatch() {
	n.mu.Lock()
	cancel := n.watchCancel
	n.watchCancel = nil
	n.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (n *node) restartWatch(ctx context.Context) {
	n.stopWatch()
	if ctx.Err() == nil {
		n.startWatch(ctx)
	}
}

// deleteAll: each node removes its Lease (the Node authorizer allows that), the admin client
// its Node (a node may not delete itself), 20 at a time, within 60 s.
func deleteAll(o *options, nodes []*node) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", o.adminConfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelets: %v\n", err)
		return false
	}
	cfg.QPS, cfg.Burst = 100, 200
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubelets: %v\n", err)
		return false
	}
	sem := make(chan struct{}, 20)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for _, n := range nodes {
		if n.uid == "" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := n.current().CoordinationV1().Leases(leaseNamespace).Delete(ctx, n.name,
				metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				failed.Add(1)
			}
			err = admin.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				failed.Add(1)
				fmt.Fprintf(os.Stderr, "kubelets: deleting node %s: %v\n", n.name, err)
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		fmt.Fprintf(os.Stderr, "kubelets: %d deletions failed\n", f)
		return false
	}
	fmt.Fprintf(os.Stderr, "kubelets: deleted the nodes and their leases\n")
	return true
}

func kernel() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return "unknown"
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}
