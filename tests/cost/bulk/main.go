// Command bulk: two TLS connections over loopback, each moving -size bytes both ways at once, for
// tests/cost/capture-drops (issue 15 item 3: `bindtrace capture --exe bulk --json > file` must
// keep up at default settings).
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"sync"
	"time"
)

func cert() tls.Certificate {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	t := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, _ := x509.CreateCertificate(rand.Reader, t, t, &k.PublicKey, k)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
}

func pump(c net.Conn, size, chunk int, wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	var inner sync.WaitGroup
	inner.Add(1)
	go func() {
		defer inner.Done()
		io.CopyN(io.Discard, c, int64(size))
	}()
	for sent := 0; sent < size; sent += chunk {
		n := chunk
		if size-sent < n {
			n = size - sent
		}
		if _, err := c.Write(buf[:n]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	inner.Wait()
}

func main() {
	size := flag.Int("size", 2400000, "bytes each way per connection")
	chunk := flag.Int("chunk", 32768, "bytes per Write")
	conns := flag.Int("conns", 2, "connections")
	wait := flag.String("wait-file", "", "start when this file exists")
	flag.Parse()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert()}})
	if err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	var cs []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			cs = append(cs, c)
		}
	}()
	var clients []*tls.Conn
	for i := 0; i < *conns; i++ {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			panic(err)
		}
		clients = append(clients, c)
	}
	for len(cs) < *conns {
		time.Sleep(time.Millisecond)
	}
	fmt.Printf("ready pid=%d\n", os.Getpid())
	for *wait != "" {
		if _, err := os.Stat(*wait); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t0 := time.Now()
	for i := 0; i < *conns; i++ {
		wg.Add(2)
		go pump(clients[i], *size, *chunk, &wg)
		go pump(cs[i], *size, *chunk, &wg)
	}
	wg.Wait()
	el := time.Since(t0)
	fmt.Printf("moved %d bytes in %v (%.0f MB/s of plaintext through Write)\n", 2*2**size**conns, el,
		float64(2*2**size**conns)/el.Seconds()/1e6)
}
