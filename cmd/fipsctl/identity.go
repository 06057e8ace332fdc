package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/fips-go/fips/control/identity"
)

type identityOut struct {
	Npub     string            `json:"npub"`
	Pubkey   string            `json:"pubkey"`
	NodeAddr identity.NodeAddr `json:"node_addr"`
	IPv6Addr string            `json:"ipv6_addr"`
	Nsec     string            `json:"nsec,omitempty"`
}

func runIdentity(e *env, args []string) error {
	fs := newFlags(e, "identity", "[--pubkey] <nsec | npub | 64-hex secret | 66-hex compressed pubkey>")
	asPub := fs.Bool("pubkey", false, "read a 64-hex argument as an x-only public key, not a secret")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{msg: "expects exactly one key argument (nsec, npub, hex secret, or hex public key with --pubkey)", usage: "identity " + fs.synopsis}
	}
	pk, sk, err := parseAnyKey(strings.TrimSpace(fs.Arg(0)), *asPub)
	if err != nil {
		return err
	}
	out := identityOut{
		Npub:     pk.Npub(),
		Pubkey:   pk.Hex(),
		NodeAddr: pk.NodeAddr(),
		IPv6Addr: pk.NodeAddr().IPv6().String(),
	}
	if !sk.IsZero() {
		out.Nsec = sk.Nsec()
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// parseAnyKey accepts every key form operators meet. A bare 64-hex string
// is a secret (as in fips.key and node.identity.nsec) unless asPub says it
// is an x-only public key; 66 hex characters are a compressed public key.
func parseAnyKey(s string, asPub bool) (identity.PublicKey, identity.SecretKey, error) {
	switch {
	case strings.HasPrefix(s, "npub1"):
		pk, err := identity.DecodeNpub(s)
		return pk, identity.SecretKey{}, err
	case strings.HasPrefix(s, "nsec1"):
		sk, err := identity.DecodeNsec(s)
		if err != nil {
			return identity.PublicKey{}, sk, err
		}
		return sk.PublicKey(), sk, nil
	case len(s) == 66:
		b, err := hex.DecodeString(s)
		if err != nil {
			return identity.PublicKey{}, identity.SecretKey{}, fmt.Errorf("%w: %v", identity.ErrInvalidHex, err)
		}
		p, err := secp256k1.ParsePubKey(b)
		if err != nil {
			return identity.PublicKey{}, identity.SecretKey{}, fmt.Errorf("%w: %v", identity.ErrInvalidPublicKey, err)
		}
		return identity.XOnly(p), identity.SecretKey{}, nil
	case asPub:
		pk, err := identity.ParsePublicKeyHex(s)
		return pk, identity.SecretKey{}, err
	default:
		sk, err := identity.ParseSecretKey(s)
		if err != nil {
			return identity.PublicKey{}, sk, err
		}
		return sk.PublicKey(), sk, nil
	}
}
