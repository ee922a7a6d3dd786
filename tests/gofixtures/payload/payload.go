// Package payload makes the deterministic pseudo-random payloads that the TLS fixtures exchange.
//
// The generator is splitmix64, so any test harness (C, Python, shell) can regenerate the exact
// bytes: state = seed ^ (0x9E3779B97F4A7C15 * (stream*2^32 + index + 1)); each step adds
// 0x9E3779B97F4A7C15 to state and mixes it; the 8 output bytes are taken little-endian.
package payload

import (
	"crypto/sha256"
	"encoding/hex"
)

// Stream identifiers: which direction a payload travels.
const (
	Up   = 1 // client to server (request body)
	Down = 2 // server to client (response body)
)

const golden = 0x9E3779B97F4A7C15

// Bytes returns size bytes of the payload number index of the given stream for seed.
func Bytes(seed uint64, stream, index, size int) []byte {
	state := seed ^ (golden * (uint64(stream)<<32 + uint64(index) + 1))
	out := make([]byte, size)
	for i := 0; i < size; i += 8 {
		state += golden
		z := state
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		for j := 0; j < 8 && i+j < size; j++ {
			out[i+j] = byte(z >> (8 * j))
		}
	}
	return out
}

// Sum is the hex SHA-256 of b, as the fixtures print it.
func Sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
