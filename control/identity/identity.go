package identity

import (
	"io"
	"net/netip"
)

// Identity is a node's key pair with its derived addresses, computed once.
type Identity struct {
	secret   SecretKey
	public   PublicKey
	nodeAddr NodeAddr
}

// New derives an Identity from a secret key.
func New(sk SecretKey) *Identity {
	pk := sk.PublicKey()
	return &Identity{secret: sk, public: pk, nodeAddr: pk.NodeAddr()}
}

// Generate makes a fresh identity from rand (crypto/rand when nil).
func Generate(rnd io.Reader) (*Identity, error) {
	sk, err := GenerateSecretKey(rnd)
	if err != nil {
		return nil, err
	}
	return New(sk), nil
}

// Secret is the secret key.
func (id *Identity) Secret() SecretKey { return id.secret }

// PublicKey is the x-only public key.
func (id *Identity) PublicKey() PublicKey { return id.public }

// NodeAddr is the routing address.
func (id *Identity) NodeAddr() NodeAddr { return id.nodeAddr }

// IPv6 is the node's fd00::/8 address.
func (id *Identity) IPv6() netip.Addr { return id.nodeAddr.IPv6() }

// Npub is the NIP-19 public key.
func (id *Identity) Npub() string { return id.public.Npub() }

// Sign signs data as upstream does (see SecretKey.Sign).
func (id *Identity) Sign(data []byte, rnd io.Reader) ([SignatureSize]byte, error) {
	return id.secret.Sign(data, rnd)
}
