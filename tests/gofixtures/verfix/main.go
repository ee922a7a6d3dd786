// verfix prints what the two version packages Kubernetes stamps at link time say, as
// `kubectl version -o json` would: the oracle the release tests compare `bindtrace inspect` with.
// It is built with upstream's -X flags (tests/gofixtures/verfix/build), stripped and -trimpath.
package main

import (
	"encoding/json"
	"os"

	clientversion "k8s.io/client-go/pkg/version"
	baseversion "k8s.io/component-base/version"
)

func main() {
	out := map[string]any{
		"client-go":      clientversion.Get(),
		"component-base": baseversion.Get(),
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
