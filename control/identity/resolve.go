package identity

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// Source says where a resolved identity came from.
type Source string

// Identity sources, as reported in logs and `show_status`.
const (
	SourceConfig    Source = "config"    // node.identity.nsec
	SourceKeyFile   Source = "key_file"  // loaded from fips.key
	SourceGenerated Source = "generated" // new key, persisted to fips.key
	SourceEphemeral Source = "ephemeral" // new key every start
)

// ResolveOptions are the node.identity settings plus where key files live.
type ResolveOptions struct {
	Nsec       string // node.identity.nsec: nsec1… or 64 hex; wins when set
	Persistent bool   // node.identity.persistent
	KeyDir     string // directory of the last loaded config file
	// LegacyKeyDir, when set, is checked for a fips.key before a persistent
	// node generates a new one (macOS and FreeBSD moved their default
	// directory from /etc/fips to /usr/local/etc/fips).
	LegacyKeyDir string
	Rand         io.Reader    // nil: crypto/rand
	Log          *slog.Logger // nil: slog.Default(); upstream logs these under fips::config
}

// Resolved is the outcome of Resolve.
type Resolved struct {
	*Identity
	Source  Source
	KeyPath string // the key file read or written, if any
}

// Resolve applies upstream's node.identity rules:
//   - an explicit nsec always wins and touches no files;
//   - persistent: load fips.key from KeyDir (or LegacyKeyDir, with a
//     warning), else generate one and persist it (fips.key 0600, fips.pub
//     0644); a failed write leaves the node ephemeral, with a warning;
//   - otherwise a fresh key every start, still written to fips.key/fips.pub
//     so an operator can see it.
//
// Only an unusable explicit nsec or an unreadable, invalid or unprotected
// (see ReadKeyFile) existing key file is an error: the node must not
// silently change identity then.
func Resolve(o ResolveOptions) (*Resolved, error) {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	if o.Nsec != "" {
		sk, err := ParseSecretKey(o.Nsec)
		if err != nil {
			return nil, fmt.Errorf("node.identity.nsec: %w", err)
		}
		return &Resolved{Identity: New(sk), Source: SourceConfig}, nil
	}
	keyPath, pubPath := KeyPaths(o.KeyDir)

	if o.Persistent {
		for _, p := range candidateKeyPaths(keyPath, o.LegacyKeyDir) {
			if _, err := os.Lstat(p); err != nil {
				continue
			}
			sk, err := ReadKeyFile(p)
			if err != nil {
				return nil, err
			}
			if p != keyPath {
				log.Warn("Identity key found at the legacy path but not at the current default; using it so the node keeps its identity — move it to the current path",
					"legacy", p, "current", keyPath)
			}
			id := New(sk)
			if err := WritePubFile(pubPath, id.PublicKey()); err != nil {
				log.Warn("Failed to write the public key file", "path", pubPath, "error", err)
			}
			return &Resolved{Identity: id, Source: SourceKeyFile, KeyPath: p}, nil
		}
		id, err := Generate(o.Rand)
		if err != nil {
			return nil, err
		}
		_ = os.MkdirAll(filepath.Dir(keyPath), 0o755)
		if err := WriteKeyFile(keyPath, id.Secret()); err != nil {
			log.Warn("Failed to persist the generated identity key; this node is starting with an ephemeral identity and its npub will change on every start",
				"path", keyPath, "error", err)
			return &Resolved{Identity: id, Source: SourceEphemeral}, nil
		}
		if err := WritePubFile(pubPath, id.PublicKey()); err != nil {
			log.Warn("Failed to write the public key file", "path", pubPath, "error", err)
		}
		return &Resolved{Identity: id, Source: SourceGenerated, KeyPath: keyPath}, nil
	}

	id, err := Generate(o.Rand)
	if err != nil {
		return nil, err
	}
	_ = os.MkdirAll(filepath.Dir(keyPath), 0o755)
	if _, err := os.Lstat(keyPath); err == nil {
		log.Warn("An existing key file at this path is being replaced by a fresh ephemeral identity; set node.identity.persistent: true to keep the existing identity",
			"path", keyPath, "config_key", "node.identity.persistent")
	}
	if err := WriteKeyFile(keyPath, id.Secret()); err != nil {
		log.Warn("Failed to write the ephemeral key file", "path", keyPath, "error", err)
	}
	if err := WritePubFile(pubPath, id.PublicKey()); err != nil {
		log.Warn("Failed to write the public key file", "path", pubPath, "error", err)
	}
	return &Resolved{Identity: id, Source: SourceEphemeral, KeyPath: keyPath}, nil
}

func candidateKeyPaths(keyPath, legacyDir string) []string {
	if legacyDir == "" {
		return []string{keyPath}
	}
	legacy, _ := KeyPaths(legacyDir)
	if legacy == keyPath {
		return []string{keyPath}
	}
	return []string{keyPath, legacy}
}
