package main

// keylog: one TLS connection over loopback whose wire bytes, plaintext and TLS 1.3 traffic
// secrets are written to files, so a test can decrypt the wire with the secrets (user/tls13.c)
// and compare with the plaintext. The secrets come from crypto/tls's key log
// (Config.KeyLogWriter), the same values its halfConn keeps in trafficSecret.
//
//	tlsfix keylog -out DIR [-sizes 1,100,...] [-seed N]
//
// DIR gets c2s.wire and s2c.wire (every byte each side wrote to its socket, handshake
// included), c2s.plain and s2c.plain (what each side wrote through tls.Conn.Write), keylog
// (NSS key log format) and suite (the negotiated cipher suite, 4 hex digits).
//
//	tlsfix layout
//
// prints the offsets of tls.Conn's TLS 1.3 state in this build (see layoutMain).

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"

	"bindtrace.test/payload"
)

// recorder copies every byte written to the connection to a file.
type recorder struct {
	net.Conn
	w io.Writer
}

func (r *recorder) Write(b []byte) (int, error) {
	n, err := r.Conn.Write(b)
	if n > 0 {
		if _, werr := r.w.Write(b[:n]); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

func keylogMain(args []string) error {
	fs := flag.NewFlagSet("keylog", flag.ExitOnError)
	out := fs.String("out", "", "directory for the files")
	sizes := fs.String("sizes", "1,100,1000,16383,16384,16385,65536,100000", "payload sizes")
	seed := fs.Uint64("seed", 1, "payload seed")
	fs.Parse(args)
	if *out == "" {
		return errors.New("-out DIR is required")
	}
	list, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	create := func(name string) (*os.File, error) { return os.Create(filepath.Join(*out, name)) }
	var files [5]*os.File
	for i, name := range []string{"c2s.wire", "s2c.wire", "c2s.plain", "s2c.plain", "keylog"} {
		if files[i], err = create(name); err != nil {
			return err
		}
		defer files[i].Close()
	}
	c2sWire, s2cWire, c2sPlain, s2cPlain, keylog := files[0], files[1], files[2], files[3], files[4]

	cert, err := selfSignedCert()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer raw.Close()
		conn := tls.Server(&recorder{raw, s2cWire}, &tls.Config{
			Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
		// The server answers each payload with another of the same size.
		for i, size := range list {
			buf := make([]byte, size)
			if _, err := io.ReadFull(conn, buf); err != nil {
				served <- err
				return
			}
			answer := payload.Bytes(*seed, 1, i, size)
			if _, err := conn.Write(answer); err != nil {
				served <- err
				return
			}
			s2cPlain.Write(answer)
		}
		served <- nil
	}()

	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	defer raw.Close()
	conn := tls.Client(&recorder{raw, c2sWire}, &tls.Config{
		InsecureSkipVerify: true, MinVersion: tls.VersionTLS13, KeyLogWriter: keylog})
	for i, size := range list {
		p := payload.Bytes(*seed, 0, i, size)
		if _, err := conn.Write(p); err != nil {
			return err
		}
		c2sPlain.Write(p)
		if _, err := io.ReadFull(conn, make([]byte, size)); err != nil {
			return err
		}
	}
	if err := <-served; err != nil {
		return fmt.Errorf("server: %w", err)
	}
	suite := fmt.Sprintf("%04x\n", conn.ConnectionState().CipherSuite)
	return os.WriteFile(filepath.Join(*out, "suite"), []byte(suite), 0o644)
}

// layoutMain prints where crypto/tls keeps a connection's TLS 1.3 state in this build, as the
// compiler laid it out (reflect): one JSON object, offsets in bytes.
func layoutMain() error {
	conn := reflect.TypeOf(tls.Conn{})
	field := func(t reflect.Type, name string) (reflect.StructField, error) {
		f, ok := t.FieldByName(name)
		if !ok {
			return f, fmt.Errorf("%s has no field %s", t, name)
		}
		return f, nil
	}
	in, err := field(conn, "in")
	if err != nil {
		return err
	}
	out, err := field(conn, "out")
	if err != nil {
		return err
	}
	layout := map[string]uintptr{
		"conn_size": conn.Size(), "in": in.Offset, "out": out.Offset,
		"half_conn_size": in.Type.Size(),
	}
	for _, name := range []string{"vers", "cipherSuite"} {
		f, err := field(conn, name)
		if err != nil {
			return err
		}
		layout[name] = f.Offset
	}
	for _, name := range []string{"version", "seq", "trafficSecret"} {
		f, err := field(in.Type, name)
		if err != nil {
			return err
		}
		layout["half_conn."+name] = f.Offset
	}
	return json.NewEncoder(os.Stdout).Encode(layout)
}
