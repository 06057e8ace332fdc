package listening

import (
	"encoding/json"
	"fmt"
)

// Filter is how the baseline firewall treats a port arriving on fips0.
type Filter string

// Filter values (upstream's names).
const (
	NoFirewall Filter = "no_firewall" // no table inet fips: every listener is exposed
	Accept     Filter = "accept"      // a rule accepts the port
	Drop       Filter = "drop"        // the baseline's final drop applies
	Unknown    Filter = "unknown"     // a rule names the port in a way we cannot judge
)

// Classifier judges ports against the rules of chain inbound of table
// inet fips. The zero value means no firewall.
type Classifier struct {
	active bool
	rules  []rule
}

type verdict int

const (
	verdictOther verdict = iota // jump, return, reject, queue, or none
	verdictAccept
	verdictDrop
)

// match is one condition of a rule, reduced to what the classification
// needs.
type match struct {
	kind  matchKind
	proto string // l4proto / dport protocol
	ports func(uint16) bool
}

type matchKind int

const (
	matchOther   matchKind = iota // anything we do not model
	matchIifname                  // the interface test; neutral
	matchL4Proto
	matchDport
)

type rule struct {
	matches []match
	verdict verdict
}

// Active reports whether table inet fips exists.
func (c Classifier) Active() bool { return c.active }

// Classify judges proto/port. Rules are read in order; only rules with a
// destination-port match of this protocol covering the port decide. Such
// a rule whose other conditions are all ones we model and that agree
// decides accept or drop; one with a condition we cannot judge, or a
// verdict other than accept or drop, makes the answer unknown unless a
// later rule decides. With no deciding rule the baseline's final drop
// applies.
func (c Classifier) Classify(proto string, port uint16) Filter {
	if !c.active {
		return NoFirewall
	}
	unsure := false
	for _, r := range c.rules {
		names, clean := false, true
		for _, m := range r.matches {
			switch m.kind {
			case matchIifname:
			case matchL4Proto:
				clean = clean && m.proto == proto
			case matchDport:
				switch {
				case m.proto == proto && m.ports(port):
					names = true
				case m.ports(port):
					// the same port of the other protocol: no bearing
				default:
					clean = false
				}
			default:
				clean = false
			}
		}
		if !names {
			continue
		}
		if !clean {
			unsure = true
			continue
		}
		switch r.verdict {
		case verdictAccept:
			return Accept
		case verdictDrop:
			return Drop
		default:
			unsure = true
		}
	}
	if unsure {
		return Unknown
	}
	return Drop
}

// ParseRuleset reads `nft -j list table inet fips` output.
func ParseRuleset(data []byte) (Classifier, error) {
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Table string            `json:"table"`
				Chain string            `json:"chain"`
				Expr  []json.RawMessage `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return Classifier{}, fmt.Errorf("listening: nft ruleset: %w", err)
	}
	c := Classifier{active: true}
	for _, e := range doc.Nftables {
		if e.Rule == nil || e.Rule.Table != "fips" || e.Rule.Chain != "inbound" {
			continue
		}
		var r rule
		for _, raw := range e.Rule.Expr {
			var x map[string]json.RawMessage
			if json.Unmarshal(raw, &x) != nil {
				r.matches = append(r.matches, match{kind: matchOther})
				continue
			}
			switch {
			case x["match"] != nil:
				r.matches = append(r.matches, parseMatch(x["match"]))
			case x["accept"] != nil:
				r.verdict = verdictAccept
			case x["drop"] != nil:
				r.verdict = verdictDrop
			case x["return"] != nil, x["jump"] != nil, x["goto"] != nil, x["continue"] != nil,
				x["reject"] != nil, x["queue"] != nil:
				r.verdict = verdictOther
			}
		}
		c.rules = append(c.rules, r)
	}
	return c, nil
}

func parseMatch(raw json.RawMessage) match {
	var m struct {
		Op   string `json:"op"`
		Left struct {
			Meta *struct {
				Key string `json:"key"`
			} `json:"meta"`
			Payload *struct {
				Protocol string `json:"protocol"`
				Field    string `json:"field"`
			} `json:"payload"`
		} `json:"left"`
		Right json.RawMessage `json:"right"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return match{kind: matchOther}
	}
	eq := m.Op == "" || m.Op == "=="
	var word string
	isWord := json.Unmarshal(m.Right, &word) == nil
	switch {
	case m.Left.Meta != nil && m.Left.Meta.Key == "iifname" && isWord:
		return match{kind: matchIifname}
	case m.Left.Meta != nil && m.Left.Meta.Key == "l4proto" && isWord && eq && isProto(word):
		return match{kind: matchL4Proto, proto: word}
	case m.Left.Payload != nil && m.Left.Payload.Field == "dport" && isProto(m.Left.Payload.Protocol) && eq:
		if ports := parsePorts(m.Right); ports != nil {
			return match{kind: matchDport, proto: m.Left.Payload.Protocol, ports: ports}
		}
	}
	return match{kind: matchOther}
}

func isProto(s string) bool { return s == "tcp" || s == "udp" }

// parsePorts reads a single port, a set of ports or a range.
func parsePorts(raw json.RawMessage) func(uint16) bool {
	var one uint16
	if json.Unmarshal(raw, &one) == nil {
		return func(p uint16) bool { return p == one }
	}
	var obj struct {
		Set   []json.RawMessage `json:"set"`
		Range []uint16          `json:"range"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	if len(obj.Range) == 2 {
		lo, hi := obj.Range[0], obj.Range[1]
		return func(p uint16) bool { return lo <= p && p <= hi }
	}
	if obj.Set != nil {
		set := map[uint16]bool{}
		for _, v := range obj.Set {
			var n uint16
			if json.Unmarshal(v, &n) != nil {
				return nil // a set of ranges or names: not modelled
			}
			set[n] = true
		}
		return func(p uint16) bool { return set[p] }
	}
	return nil
}
