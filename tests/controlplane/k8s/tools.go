//go:build tools

// Package tools keeps the control plane commands in go.mod for go mod tidy;
// tests/controlplane/cluster builds them, nothing imports this file.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
