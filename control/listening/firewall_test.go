package listening

import (
	"os"
	"testing"
)

// testdata/fips-nft.json is `nft -j list table inet fips` (nftables 1.0.6)
// of the baseline ruleset with operator rules: tcp 22, udp {53, 5353} and
// tcp 8000-8100 accepted; tcp 9000 accepted from one source only; tcp
// 9100 sent to another chain.
func TestClassifyBaselineWithOperatorRules(t *testing.T) {
	data, err := os.ReadFile("testdata/fips-nft.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseRuleset(data)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Active() {
		t.Fatal("a parsed table is not active")
	}
	for _, tc := range []struct {
		proto string
		port  uint16
		want  Filter
	}{
		{"tcp", 22, Accept},
		{"udp", 22, Drop}, // the rule is for tcp
		{"udp", 53, Accept},
		{"udp", 5353, Accept},
		{"tcp", 53, Drop},
		{"tcp", 8000, Accept},
		{"tcp", 8100, Accept},
		{"tcp", 8101, Drop},
		{"tcp", 9000, Unknown}, // depends on the source address
		{"tcp", 9100, Unknown}, // decided in another chain
		{"tcp", 80, Drop},      // the final counter drop
	} {
		if got := c.Classify(tc.proto, tc.port); got != tc.want {
			t.Errorf("%s/%d: %s, want %s", tc.proto, tc.port, got, tc.want)
		}
	}
}

func TestNoFirewall(t *testing.T) {
	var c Classifier
	if c.Active() || c.Classify("tcp", 22) != NoFirewall {
		t.Fatal("zero classifier is not 'no firewall'")
	}
	if _, err := ParseRuleset([]byte("not json")); err == nil {
		t.Fatal("garbage parsed")
	}
	// An empty table: active, and everything falls to the drop.
	c, err := ParseRuleset([]byte(`{"nftables":[{"table":{"family":"inet","name":"fips"}}]}`))
	if err != nil || !c.Active() || c.Classify("udp", 5000) != Drop {
		t.Fatalf("empty table: %v %v %v", err, c.Active(), c.Classify("udp", 5000))
	}
}
