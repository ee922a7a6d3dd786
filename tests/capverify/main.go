// Command capverify checks a `bindtrace capture --json` recording against what the traced Go
// TLS fixture (tests/gofixtures/tlsfix) says it sent and received. It rebuilds every
// (pid, conn, dir) byte stream from the events, fails on any gap or overlap, decodes HTTP/2
// (golang.org/x/net/http2's framer and HPACK decoder) or HTTP/1.1 (net/http) from those bytes,
// and prints one line per message body in the fixture's own format:
//
//	server recv proto=HTTP/2.0 i=N len=L sha256=H
//
// so a test can compare the two outputs. It is an independent reference: it shares no code with
// bindtrace's decoders.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"

	"golang.org/x/net/http2"
)

type event struct {
	Pid    int    `json:"pid"`
	Conn   uint64 `json:"conn"`
	Dir    string `json:"dir"`
	Source string `json:"source"`
	Offset uint64 `json:"offset"`
	Len    uint64 `json:"len"`
	Data   string `json:"data"`
	Gap    uint64 `json:"gap"`
}

type key struct {
	pid  int
	conn uint64
	dir  string
}

type stream struct {
	buf  bytes.Buffer
	next uint64
}

func main() {
	pid := flag.Int("pid", 0, "only this process")
	role := flag.String("role", "", "label for output lines (client or server); default: detected")
	flag.Parse()
	if err := run(flag.Args(), *pid, *role); err != nil {
		fmt.Fprintln(os.Stderr, "capverify:", err)
		os.Exit(1)
	}
}

func run(files []string, onlyPid int, role string) error {
	var in io.Reader = os.Stdin
	if len(files) == 1 {
		f, err := os.Open(files[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	streams := map[key]*stream{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("bad line: %v", err)
		}
		if e.Gap != 0 {
			return fmt.Errorf("pid %d conn %d %s: gap of %d bytes", e.Pid, e.Conn, e.Dir, e.Gap)
		}
		if onlyPid != 0 && e.Pid != onlyPid {
			continue
		}
		k := key{e.Pid, e.Conn, e.Dir}
		s := streams[k]
		if s == nil {
			s = &stream{}
			streams[k] = s
		}
		if e.Offset != s.next {
			return fmt.Errorf("pid %d conn %d %s: event at offset %d, expected %d", e.Pid, e.Conn, e.Dir, e.Offset, s.next)
		}
		data, err := base64.StdEncoding.DecodeString(e.Data)
		if err != nil || uint64(len(data)) != e.Len {
			return fmt.Errorf("pid %d conn %d %s offset %d: data does not match len", e.Pid, e.Conn, e.Dir, e.Offset)
		}
		s.buf.Write(data)
		s.next += e.Len
	}
	if err := sc.Err(); err != nil {
		return err
	}
	conns := map[[2]uint64]bool{}
	for k := range streams {
		conns[[2]uint64{uint64(k.pid), k.conn}] = true
	}
	keys := make([][2]uint64, 0, len(conns))
	for c := range conns {
		keys = append(keys, c)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][1] < keys[j][1] })
	for _, c := range keys {
		out := streams[key{int(c[0]), c[1], "out"}]
		inn := streams[key{int(c[0]), c[1], "in"}]
		var outB, inB []byte
		if out != nil {
			outB = out.buf.Bytes()
		}
		if inn != nil {
			inB = inn.buf.Bytes()
		}
		if err := decodeConn(outB, inB, role); err != nil {
			return fmt.Errorf("pid %d conn %d: %v", c[0], c[1], err)
		}
	}
	return nil
}

func body(label, dir, proto string, i int, b []byte) {
	fmt.Printf("%s %s proto=%s i=%d len=%d sha256=%x\n", label, dir, proto, i, len(b), sha256.Sum256(b))
}

// decodeConn prints the bodies of one connection: requests then responses, in stream order.
func decodeConn(out, in []byte, role string) error {
	preface := []byte(http2.ClientPreface)
	switch {
	case bytes.HasPrefix(out, preface):
		return decodeH2(out[len(preface):], in, pick(role, "client"), true)
	case bytes.HasPrefix(in, preface):
		return decodeH2(out, in[len(preface):], pick(role, "server"), false)
	case len(out) > 0 && isRequestLine(out):
		return decodeH1(out, in, pick(role, "client"), true)
	case len(in) > 0 && isRequestLine(in):
		return decodeH1(out, in, pick(role, "server"), false)
	}
	return fmt.Errorf("neither HTTP/2 nor HTTP/1.1 (%d bytes out, %d in)", len(out), len(in))
}

func pick(role, detected string) string {
	if role != "" {
		return role
	}
	return detected
}

func isRequestLine(b []byte) bool {
	for _, m := range []string{"GET ", "POST ", "PUT ", "PATCH ", "DELETE ", "HEAD "} {
		if bytes.HasPrefix(b, []byte(m)) {
			return true
		}
	}
	return false
}

// h2Bodies returns the DATA of every stream in the order streams were opened.
func h2Bodies(b []byte) (map[uint32][]byte, []uint32, error) {
	fr := http2.NewFramer(nil, bytes.NewReader(b))
	fr.SetMaxReadFrameSize(1 << 24)
	bodies := map[uint32][]byte{}
	var order []uint32
	for {
		f, err := fr.ReadFrame()
		if errors.Is(err, io.EOF) {
			return bodies, order, nil
		}
		if err != nil {
			return nil, nil, err
		}
		switch f := f.(type) {
		case *http2.HeadersFrame:
			if _, ok := bodies[f.StreamID]; !ok {
				bodies[f.StreamID] = []byte{}
				order = append(order, f.StreamID)
			}
		case *http2.DataFrame:
			bodies[f.StreamID] = append(bodies[f.StreamID], f.Data()...)
		}
	}
}

func decodeH2(out, in []byte, label string, client bool) error {
	outBodies, outOrder, err := h2Bodies(out)
	if err != nil {
		return fmt.Errorf("HTTP/2 out: %v", err)
	}
	inBodies, inOrder, err := h2Bodies(in)
	if err != nil {
		return fmt.Errorf("HTTP/2 in: %v", err)
	}
	reqs, reqOrder, resps := outBodies, outOrder, inBodies
	if !client {
		reqs, reqOrder, resps = inBodies, inOrder, outBodies
	}
	_ = outOrder
	_ = inOrder
	for i, id := range reqOrder {
		if client {
			body(label, "sent", "HTTP/2.0", i, reqs[id])
			body(label, "recv", "HTTP/2.0", i, resps[id])
		} else {
			body(label, "recv", "HTTP/2.0", i, reqs[id])
			body(label, "sent", "HTTP/2.0", i, resps[id])
		}
	}
	return nil
}

func decodeH1(out, in []byte, label string, client bool) error {
	reqB, respB := out, in
	if !client {
		reqB, respB = in, out
	}
	rr := bufio.NewReader(bytes.NewReader(reqB))
	pr := bufio.NewReader(bytes.NewReader(respB))
	for i := 0; ; i++ {
		req, err := http.ReadRequest(rr)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("HTTP/1.1 request %d: %v", i, err)
		}
		reqBody, err := io.ReadAll(req.Body)
		if err != nil {
			return fmt.Errorf("HTTP/1.1 request %d body: %v", i, err)
		}
		resp, err := http.ReadResponse(pr, req)
		if err != nil {
			return fmt.Errorf("HTTP/1.1 response %d: %v", i, err)
		}
		respBody, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("HTTP/1.1 response %d body: %v", i, err)
		}
		if client {
			body(label, "sent", "HTTP/1.1", i, reqBody)
			body(label, "recv", "HTTP/1.1", i, respBody)
		} else {
			body(label, "recv", "HTTP/1.1", i, reqBody)
			body(label, "sent", "HTTP/1.1", i, respBody)
		}
	}
}
