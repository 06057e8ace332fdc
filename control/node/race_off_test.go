//go:build !race

package node

// raceBuild: see race_on_test.go.
const raceBuild = false
