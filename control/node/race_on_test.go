//go:build race

package node

// raceBuild: the race detector allocates on its own, so allocation
// counts are not asserted under it.
const raceBuild = true
