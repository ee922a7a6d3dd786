// Command notls is a Go program that links no crypto/tls: inspect must say so, not guess.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("no tls here", len(os.Args))
}
