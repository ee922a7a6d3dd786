// Command tlsfix is the HTTPS client and server that bindtrace's probe tests trace.
//
// The client POSTs known pseudo-random payloads (package payload: seedable, 1 byte to 1 MiB) to
// the server over one TLS connection, HTTP/2 or HTTP/1.1; the server answers each with another
// known payload of the same size. Both sides verify every byte and print one line per payload
// with its length and SHA-256, so a test can compare what a tracer captured with what was sent.
// The client can stop after the TLS handshake (or after a first request) until a file appears
// or SIGUSR1 arrives, so that a tracer can be started on an established connection.
//
//	tlsfix server [-listen 127.0.0.1:0] [-addr-file F] [-exit-after N]
//	tlsfix client -addr HOST:PORT [-proto h2|h1] [-sizes 1,100,...] [-seed N] [-count N]
//	              [-wait-file F | -wait-signal] [-wait-after handshake|request] [-ready-file F]
//	              [-heap-mb N]
//	tlsfix selftest [-proto h2|h1] [-sizes ...]
//	tlsfix bench [-n N] [-size S]
//	tlsfix keylog -out DIR [-sizes ...] [-seed N]   (keylog.go)
//	tlsfix layout                                   (keylog.go)
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"bindtrace.test/payload"
)

const defaultSizes = "1,2,100,1000,4096,16384,16385,65536,100000,1048576"

const maxSize = 64 << 20

func usage() {
	fmt.Fprintf(os.Stderr, "usage: tlsfix server|client|selftest|bench|keylog|layout [flags]; tlsfix CMD -h for flags\n")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "server":
		err = serverMain(os.Args[2:])
	case "client":
		err = clientMain(os.Args[2:])
	case "selftest":
		err = selftestMain(os.Args[2:])
	case "bench":
		err = benchMain(os.Args[2:])
	case "keylog":
		err = keylogMain(os.Args[2:])
	case "layout":
		err = layoutMain()
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tlsfix %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// selfSignedCert makes a throwaway ECDSA certificate for 127.0.0.1, ::1 and localhost.
func selfSignedCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "tlsfix"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

type server struct {
	uploads   atomic.Int64
	bytesIn   atomic.Int64
	bytesOut  atomic.Int64
	failures  atomic.Int64
	exitAfter int64
	done      chan struct{}
	doneOnce  sync.Once
	out       sync.Mutex
}

func (s *server) printf(format string, args ...any) {
	s.out.Lock()
	defer s.out.Unlock()
	fmt.Printf(format, args...)
}

func queryInt(r *http.Request, name string, def uint64) (uint64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	return strconv.ParseUint(v, 10, 64)
}

// upload reads a request body, checks it against the payload the client claims to have sent,
// and answers with the matching download payload.
func (s *server) upload(w http.ResponseWriter, r *http.Request) {
	seed, err1 := queryInt(r, "seed", 1)
	index, err2 := queryInt(r, "i", 0)
	down, err3 := queryInt(r, "down", 0)
	if err := errors.Join(err1, err2, err3); err != nil || down > maxSize {
		http.Error(w, "bad query", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSize+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	want := payload.Bytes(seed, payload.Up, int(index), len(body))
	verdict := "ok"
	if !bytes.Equal(body, want) {
		verdict = "MISMATCH"
		s.failures.Add(1)
	}
	s.bytesIn.Add(int64(len(body)))
	s.printf("server recv proto=%s i=%d len=%d sha256=%s %s\n", r.Proto, index, len(body),
		payload.Sum(body), verdict)

	resp := payload.Bytes(seed, payload.Down, int(index), int(down))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(resp)))
	if _, err := w.Write(resp); err != nil {
		s.printf("server send proto=%s i=%d error: %v\n", r.Proto, index, err)
		s.failures.Add(1)
		return
	}
	s.bytesOut.Add(int64(len(resp)))
	s.printf("server sent proto=%s i=%d len=%d sha256=%s\n", r.Proto, index, len(resp),
		payload.Sum(resp))
	if n := s.uploads.Add(1); s.exitAfter > 0 && n >= s.exitAfter {
		s.doneOnce.Do(func() { close(s.done) })
	}
}

func newServer(exitAfter int64) (*server, *http.Server, error) {
	cert, err := selfSignedCert()
	if err != nil {
		return nil, nil, err
	}
	s := &server{exitAfter: exitAfter, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/upload", s.upload)
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from tlsfix\n")
	})
	hs := &http.Server{
		Handler: mux,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			NextProtos:   []string{"h2", "http/1.1"},
		},
		ReadHeaderTimeout: 30 * time.Second,
	}
	return s, hs, nil
}

func serverMain(args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	addrFile := fs.String("addr-file", "", "write the listening address to this file")
	exitAfter := fs.Int64("exit-after", 0, "exit after this many uploads (0: run until SIGTERM)")
	fs.Parse(args)

	s, hs, err := newServer(*exitAfter)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	s.printf("server listening %s pid=%d\n", addr, os.Getpid())
	if *addrFile != "" {
		tmp := *addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, *addrFile); err != nil {
			return err
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.ServeTLS(ln, "", "") }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-errc:
		return err
	case <-sigs:
	case <-s.done:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(ctx)
	s.printf("server done uploads=%d bytes_in=%d bytes_out=%d failures=%d\n", s.uploads.Load(),
		s.bytesIn.Load(), s.bytesOut.Load(), s.failures.Load())
	if s.failures.Load() > 0 {
		return fmt.Errorf("%d payloads did not verify", s.failures.Load())
	}
	return nil
}

func parseSizes(list string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > maxSize {
			return nil, fmt.Errorf("bad size %q (0..%d)", f, maxSize)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

type clientOpts struct {
	addr      string
	proto     string
	sizes     []int
	seed      uint64
	count     int
	waitFile  string
	waitSig   bool
	waitAfter string
	readyFile string
	heapMB    int
}

// ballast keeps -heap-mb's memory live (and resident: every page written) while the client runs,
// so that a tracer searching its heap has that much to read.
var ballast [][]byte

func fillHeap(mb int) {
	for i := 0; i < mb; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i + j>>12 | 1)
		}
		ballast = append(ballast, b)
	}
}

// waitForGo blocks until the wait file exists or SIGUSR1 arrives, whichever was asked for.
func waitForGo(o *clientOpts, sigs chan os.Signal) {
	if o.waitSig {
		<-sigs
		return
	}
	if o.waitFile == "" {
		return
	}
	for {
		if _, err := os.Stat(o.waitFile); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func runClient(o *clientOpts) error {
	var sigs chan os.Signal
	if o.waitSig {
		// Registered before announcing readiness, so an early signal is not lost.
		sigs = make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGUSR1)
	}
	tlsConf := &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}
	switch o.proto {
	case "h2":
		tlsConf.NextProtos = []string{"h2"}
	case "h1":
		tlsConf.NextProtos = []string{"http/1.1"}
	default:
		return fmt.Errorf("bad -proto %q (h2 or h1)", o.proto)
	}

	// Exactly one connection: a second dial would mean the test is not tracing what it thinks.
	var dials atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) > 1 {
			return nil, errors.New("tlsfix client: refusing a second connection")
		}
		d := tls.Dialer{Config: tlsConf}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := c.(*tls.Conn)
		st := tc.ConnectionState()
		fmt.Printf("client connected local=%s remote=%s alpn=%s pid=%d\n", c.LocalAddr(),
			c.RemoteAddr(), st.NegotiatedProtocol, os.Getpid())
		return c, nil
	}
	var pre net.Conn
	tr := &http.Transport{
		TLSClientConfig:   tlsConf,
		ForceAttemptHTTP2: o.proto == "h2",
		MaxConnsPerHost:   1,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if pre != nil {
				c := pre
				pre = nil
				return c, nil
			}
			return dial(ctx, network, addr)
		},
	}
	if o.proto == "h1" {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	base := "https://" + o.addr

	ready := func() error {
		fillHeap(o.heapMB)
		fmt.Printf("client ready pid=%d\n", os.Getpid())
		if o.readyFile != "" {
			if err := os.WriteFile(o.readyFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
				return err
			}
		}
		waitForGo(o, sigs)
		return nil
	}

	switch o.waitAfter {
	case "handshake":
		c, err := dial(context.Background(), "tcp", o.addr)
		if err != nil {
			return err
		}
		pre = c
		if err := ready(); err != nil {
			return err
		}
	case "request":
		resp, err := client.Get(base + "/hello")
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err := ready(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("bad -wait-after %q (handshake or request)", o.waitAfter)
	}

	failures := 0
	index := 0
	for round := 0; round < o.count; round++ {
		for _, size := range o.sizes {
			up := payload.Bytes(o.seed, payload.Up, index, size)
			url := fmt.Sprintf("%s/upload?seed=%d&i=%d&down=%d", base, o.seed, index, size)
			resp, err := client.Post(url, "application/octet-stream", bytes.NewReader(up))
			if err != nil {
				return err
			}
			fmt.Printf("client sent proto=%s i=%d len=%d sha256=%s\n", resp.Proto, index, len(up),
				payload.Sum(up))
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("upload %d: %s", index, resp.Status)
			}
			verdict := "ok"
			if !bytes.Equal(got, payload.Bytes(o.seed, payload.Down, index, size)) {
				verdict = "MISMATCH"
				failures++
			}
			fmt.Printf("client recv proto=%s i=%d len=%d sha256=%s %s\n", resp.Proto, index,
				len(got), payload.Sum(got), verdict)
			index++
		}
	}
	fmt.Printf("client done requests=%d failures=%d\n", index, failures)
	if failures > 0 {
		return fmt.Errorf("%d payloads did not verify", failures)
	}
	return nil
}

func clientFlags(fs *flag.FlagSet, o *clientOpts) *string {
	fs.StringVar(&o.proto, "proto", "h2", "h2 or h1 (HTTP/1.1)")
	sizes := fs.String("sizes", defaultSizes, "comma-separated payload sizes in bytes")
	fs.Uint64Var(&o.seed, "seed", 1, "payload seed")
	fs.IntVar(&o.count, "count", 1, "send the size list this many times")
	fs.StringVar(&o.waitFile, "wait-file", "", "after connecting, wait until this file exists")
	fs.BoolVar(&o.waitSig, "wait-signal", false, "after connecting, wait for SIGUSR1")
	fs.StringVar(&o.waitAfter, "wait-after", "handshake",
		"where to wait: after the TLS handshake, or after a first GET /hello request")
	fs.StringVar(&o.readyFile, "ready-file", "", "write the pid here once connected")
	fs.IntVar(&o.heapMB, "heap-mb", 0, "before saying ready, hold this many MiB of live, resident heap")
	return sizes
}

func clientMain(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	var o clientOpts
	fs.StringVar(&o.addr, "addr", "", "server address HOST:PORT")
	sizes := clientFlags(fs, &o)
	fs.Parse(args)
	if o.addr == "" {
		return errors.New("-addr is required")
	}
	var err error
	if o.sizes, err = parseSizes(*sizes); err != nil {
		return err
	}
	return runClient(&o)
}

func selftestMain(args []string) error {
	fs := flag.NewFlagSet("selftest", flag.ExitOnError)
	var o clientOpts
	sizes := clientFlags(fs, &o)
	fs.Parse(args)
	var err error
	if o.sizes, err = parseSizes(*sizes); err != nil {
		return err
	}
	s, hs, err := newServer(0)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go hs.ServeTLS(ln, "", "")
	defer hs.Close()
	o.addr = ln.Addr().String()
	if err := runClient(&o); err != nil {
		return err
	}
	if s.failures.Load() > 0 {
		return fmt.Errorf("server: %d payloads did not verify", s.failures.Load())
	}
	return nil
}

// benchMain measures raw tls.Conn Write+Read round trips over loopback, the calls bindtrace hooks.
func benchMain(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	n := fs.Int("n", 20000, "round trips")
	size := fs.Int("size", 1024, "bytes per write")
	fs.Parse(args)
	if *n <= 0 || *size <= 0 || *size > maxSize {
		return errors.New("-n and -size must be positive")
	}
	cert, err := selfSignedCert()
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return err
	}
	defer c.Close()
	buf := payload.Bytes(1, payload.Up, 0, *size)
	back := make([]byte, *size)
	start := time.Now()
	for i := 0; i < *n; i++ {
		if _, err := c.Write(buf); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, back); err != nil {
			return err
		}
	}
	el := time.Since(start)
	fmt.Printf("bench roundtrips=%d size=%d ns/op=%d pid=%d\n", *n, *size,
		el.Nanoseconds()/int64(*n), os.Getpid())
	return nil
}
