package tree

import (
	"testing"

	"github.com/fips-go/fips/control/config"
)

// node.tree converts directly, and the defaults agree.
func TestConfigMatchesNodeConfig(t *testing.T) {
	got := Config(config.Default().Node.Tree)
	if got != DefaultConfig() {
		t.Fatalf("config.Default().Node.Tree = %+v, DefaultConfig() = %+v", got, DefaultConfig())
	}
}
