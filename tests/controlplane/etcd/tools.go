//go:build tools

// Package tools keeps the control plane commands in go.mod for go mod tidy;
// tests/controlplane/cluster builds them, nothing imports this file.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
