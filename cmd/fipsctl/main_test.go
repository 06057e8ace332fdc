package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fips-go/fips/control/identity"
)

// fipsctl runs one in-process invocation and returns status, stdout, stderr.
// fipsctlWith runs one invocation resolving aliases through hostsFile.
func fipsctlWith(t *testing.T, hostsFile string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, hostsFile: hostsFile})
	return code, out.String(), errb.String()
}

func fipsctl(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb})
	return code, out.String(), errb.String()
}

func TestIdentityGolden(t *testing.T) {
	code, out, errs := fipsctl(t, "", "identity", strings.Repeat("ab", 32))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"npub":      "npub1sx42mj99aql52aklsg70y2jmr95u7uz2p40k769aw46ppjv302kqkhmu5r",
		"pubkey":    "81aaadc8a5e83f4576df823cf22a5b1969cf704a0d5f6f68bd757410c9917aac",
		"node_addr": "1b4788b7ab7a436a611fc59fb1e34c6e",
		"ipv6_addr": "fd1b:4788:b7ab:7a43:6a61:1fc5:9fb1:e34c",
		"nsec":      "nsec14w46h2at4w46h2at4w46h2at4w46h2at4w46h2at4w46h2at4w4s5l3rd9",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("extra fields: %v", got)
	}
}

func TestIdentityEveryInputForm(t *testing.T) {
	const npub = "npub1sx42mj99aql52aklsg70y2jmr95u7uz2p40k769aw46ppjv302kqkhmu5r"
	for _, args := range [][]string{
		{"identity", npub},
		{"identity", "nsec14w46h2at4w46h2at4w46h2at4w46h2at4w46h2at4w46h2at4w4s5l3rd9"},
		{"identity", "--pubkey", "81aaadc8a5e83f4576df823cf22a5b1969cf704a0d5f6f68bd757410c9917aac"},
		{"identity", "0381aaadc8a5e83f4576df823cf22a5b1969cf704a0d5f6f68bd757410c9917aac"},
	} {
		code, out, errs := fipsctl(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		var got map[string]string
		json.Unmarshal([]byte(out), &got)
		if got["npub"] != npub || got["node_addr"] != "1b4788b7ab7a436a611fc59fb1e34c6e" {
			t.Errorf("%v: %v", args, got)
		}
		_, hasNsec := got["nsec"]
		if wantNsec := strings.HasPrefix(args[1], "nsec"); hasNsec != wantNsec {
			t.Errorf("%v: nsec present %v", args, hasNsec)
		}
	}
}

// TestBadInputExitsOneWithOneLine: input a command cannot use is one
// "error: …" line and exit 1; a bad command line is clap's exit 2.
func TestBadInputExitsOneWithOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"identity", "npub1" + strings.Repeat("q", 58)},
		{"identity", "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5x"},
		{"identity", strings.Repeat("0", 64)},
		{"identity", "--pubkey", strings.Repeat("0", 64)},
		{"identity", "zz"},
		{"wire", "decode", "zz"},
		{"wire", "decode", "abc"},
	} {
		code, out, errs := fipsctl(t, "", args...)
		if code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
		if out != "" {
			t.Errorf("%v: stdout %q", args, out)
		}
		if n := strings.Count(errs, "\n"); n != 1 || !strings.HasPrefix(errs, "error: ") || strings.Contains(errs, "goroutine") {
			t.Errorf("%v: stderr %q, want exactly one line", args, errs)
		}
	}
	for _, args := range [][]string{
		{"identity"},
		{"wire", "decode", "--inner", "ip", "00"},
		{"wire", "frobnicate"},
		{"keygen", "-x"},
		{"keygen", "extra"},
		{"nonsense"},
	} {
		code, out, errs := fipsctl(t, "", args...)
		if code != 2 || out != "" || !strings.HasPrefix(errs, "error: ") || !strings.Contains(errs, "\nUsage: fipsctl ") {
			t.Errorf("%v: exit %d %q %q, want a usage error", args, code, out, errs)
		}
	}
}

func TestKeygen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etc", "fips")
	code, _, errs := fipsctl(t, "", "keygen", "-d", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	keyPath, pubPath := identity.KeyPaths(dir)
	sk, err := identity.ReadKeyFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := os.ReadFile(pubPath)
	if string(pub) != sk.PublicKey().Npub()+"\n" {
		t.Errorf("fips.pub %q does not match fips.key", pub)
	}
	if !strings.HasPrefix(errs, sk.PublicKey().Npub()+"\n") || !strings.Contains(errs, "node.identity.persistent: true") {
		t.Errorf("stderr %q", errs)
	}
	if fi, _ := os.Stat(keyPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("fips.key mode %o", fi.Mode().Perm())
	}

	// Refuses to overwrite without -f, and leaves the key alone.
	code, _, errs = fipsctl(t, "", "keygen", "--dir", dir)
	if code != 1 || !strings.Contains(errs, "already exists") {
		t.Errorf("overwrite without -f: exit %d, %q", code, errs)
	}
	if again, _ := identity.ReadKeyFile(keyPath); again.Hex() != sk.Hex() {
		t.Error("key changed without -f")
	}
	code, _, _ = fipsctl(t, "", "keygen", "-d", dir, "-f")
	if again, _ := identity.ReadKeyFile(keyPath); code != 0 || again.Hex() == sk.Hex() {
		t.Errorf("-f did not replace the key (exit %d)", code)
	}
}

func TestKeygenStdout(t *testing.T) {
	code, out, _ := fipsctl(t, "", "keygen", "-s")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("exit %d, output %q", code, out)
	}
	sk, err := identity.DecodeNsec(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	if sk.PublicKey().Npub() != lines[1] {
		t.Errorf("npub %s does not match nsec", lines[1])
	}
}

func TestParseHex(t *testing.T) {
	for in, want := range map[string]string{
		"0x0102":          "0102",
		"01 02\n03":       "010203",
		"01:02:03":        "010203",
		"  AbCd  ":        "abcd",
		"00-04-20-00\r\n": "00042000",
	} {
		b, err := parseHex(in)
		if err != nil || strings.ToLower(string(hexString(b))) != want {
			t.Errorf("parseHex(%q) = %x, %v; want %s", in, b, err, want)
		}
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	s := make([]byte, 0, 2*len(b))
	for _, c := range b {
		s = append(s, digits[c>>4], digits[c&15])
	}
	return string(s)
}
