//go:build linux

package packaging

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var tarTools = map[string]string{
	"make": "make", "git": "git", "tar": "tar", "gzip": "gzip", "systemctl": "systemd",
	"systemd-analyze": "systemd", "systemd-tmpfiles": "systemd", "ip": "iproute2", "dnsmasq": "dnsmasq-base",
	"dig": "dnsutils", "getent": "libc-bin", "groupadd": "passwd",
}

const manifest = "/var/lib/fips/install.manifest"

// TestTarball builds the systemd tarball twice (byte-identical), checks
// its contents, installs it on this machine with its install.sh, checks
// what landed where, runs the installed daemon, upgrades over an edited
// configuration, uninstalls (configuration kept) and purges, and compares
// the machine with a list taken before the install; then installs and
// purges once more under another --prefix.
func TestTarball(t *testing.T) {
	needTools(t, tarTools)
	if o, err := runErr("dpkg-query", "-W", "-f", "${db:Status-Status}", "fips"); err == nil && strings.TrimSpace(o) == "installed" {
		t.Fatal("package fips is installed: install.sh refuses to run beside it; remove it first")
	}
	if _, err := os.Stat(manifest); err == nil {
		t.Fatalf("%s exists: a tarball install is on this machine; remove it first (uninstall.sh --purge)", manifest)
	}
	root := repoRoot(t)
	cmds := commandNames(t, root)
	out := t.TempDir()
	var files [2]string
	var sums [2]string
	for i, dir := range []string{"a", "b"} {
		o := filepath.Join(out, dir)
		run(t, "make", "-C", root, "tarball", "TAR_OUT="+o)
		m, _ := filepath.Glob(filepath.Join(o, "fips-*-linux-*.tar.gz"))
		if len(m) != 1 {
			t.Fatalf("make tarball (%s) made %v", dir, m)
		}
		files[i] = m[0]
		sums[i] = fileSHA256(t, m[0])
		t.Logf("build %s: %s sha256 %s", dir, filepath.Base(m[0]), sums[i])
	}
	if filepath.Base(files[0]) != filepath.Base(files[1]) || sums[0] != sums[1] {
		t.Fatalf("two builds differ: %s %s / %s %s", files[0], sums[0], files[1], sums[1])
	}
	name := strings.TrimSuffix(filepath.Base(files[0]), ".tar.gz")
	version := strings.TrimPrefix(name[:strings.LastIndex(name, "-linux-")], "fips-")
	epoch, err := strconv.ParseInt(strings.TrimSpace(run(t, "git", "-C", root, "log", "-1", "--format=%ct")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("contents", func(t *testing.T) {
		want := []string{"", "COPYRIGHT", "README.install.md", "install.sh", "uninstall.sh", "bin/", "man/",
			"etc/", "etc/fips.nft", "etc/fips.yaml", "etc/hosts", "lib/", "lib/fips-dns-setup", "lib/fips-dns-teardown",
			"systemd/", "systemd/fips-dns.service", "systemd/fips-firewall.service", "systemd/fips-gateway.service", "systemd/fips.service",
			"systemd/fips.tmpfiles"}
		for _, c := range cmds {
			want = append(want, "bin/"+c, "man/"+c+".1")
		}
		for i := range want {
			want[i] = name + "/" + want[i]
		}
		sort.Strings(want)
		var got []string
		for _, h := range tarHeaders(t, files[0]) {
			got = append(got, h.Name)
			if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != epoch {
				t.Errorf("%s: uid %d gid %d mtime %d, want 0 0 %d (the commit time)", h.Name, h.Uid, h.Gid, h.ModTime.Unix(), epoch)
			}
			exec := strings.HasPrefix(h.Name, name+"/bin/") || strings.HasPrefix(h.Name, name+"/lib/") ||
				strings.HasSuffix(h.Name, ".sh") || h.Typeflag == tar.TypeDir
			if wantMode := map[bool]int64{true: 0o755, false: 0o644}[exec]; h.Mode != wantMode {
				t.Errorf("%s: mode %o, want %o", h.Name, h.Mode, wantMode)
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("tarball holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	x := t.TempDir()
	run(t, "tar", "-xzf", files[0], "-C", x)
	dir := filepath.Join(x, name)

	before := snapshot(t)
	installed := false
	t.Cleanup(func() {
		if installed { // a failure part-way: do not leave the install behind
			_, _ = runErr(filepath.Join(dir, "uninstall.sh"), "--purge")
		}
	})
	installed = true
	o := run(t, filepath.Join(dir, "install.sh"))
	t.Logf("install.sh: %s", strings.TrimSpace(o))

	t.Run("installed", func(t *testing.T) {
		for _, c := range cmds {
			v := strings.TrimSpace(run(t, "/usr/local/bin/"+c, "--version"))
			if v != c+" "+version {
				t.Errorf("%s --version = %q, want %q", c, v, c+" "+version)
			}
			if _, err := os.Stat("/usr/local/share/man/man1/" + c + ".1"); err != nil {
				t.Errorf("man page: %v", err)
			}
		}
		unit, err := os.ReadFile("/etc/systemd/system/fips.service")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(unit), "\nExecStart=/usr/local/bin/fips --config /etc/fips/fips.yaml\n") {
			t.Errorf("fips.service does not run /usr/local/bin/fips:\n%s", unit)
		}
		dns, _ := os.ReadFile("/etc/systemd/system/fips-dns.service")
		if !strings.Contains(string(dns), "\nExecStart=/usr/local/lib/fips/fips-dns-setup\n") {
			t.Errorf("fips-dns.service does not run /usr/local/lib/fips/fips-dns-setup:\n%s", dns)
		}
		for _, u := range units {
			b, _ := os.ReadFile("/etc/systemd/system/" + u)
			if strings.Contains(string(b), "/usr/bin/") || strings.Contains(string(b), "/usr/lib/fips") {
				t.Errorf("%s still names the .deb's paths:\n%s", u, b)
			}
			o, err := runErr("systemd-analyze", "verify", "/etc/systemd/system/"+u)
			t.Logf("systemd-analyze verify %s: %q", u, strings.TrimSpace(o))
			if err != nil || strings.TrimSpace(o) != "" {
				t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, o)
			}
		}
		wants := "/etc/systemd/system/multi-user.target.wants/"
		for _, u := range []string{"fips.service", "fips-dns.service"} {
			if l, err := os.Readlink(wants + u); err != nil || l != "/etc/systemd/system/"+u {
				t.Errorf("%s not enabled: %q %v", u, l, err)
			}
		}
		if _, err := os.Lstat(wants + "fips-firewall.service"); err == nil {
			t.Error("fips-firewall.service is enabled; install.sh must leave it to the operator")
		}
		gid := groupID(t, "fips")
		st := statT(t, "/run/fips")
		if st.Mode&0o7777 != 0o750 || st.Uid != 0 || st.Gid != gid {
			t.Errorf("/run/fips: mode %o uid %d gid %d, want 0750 root:fips(%d)", st.Mode&0o7777, st.Uid, st.Gid, gid)
		}
		if st := statT(t, "/etc/fips/fips.yaml"); st.Mode&0o777 != 0o600 {
			t.Errorf("/etc/fips/fips.yaml mode %o, want 0600", st.Mode&0o777)
		}
		for _, f := range []string{"fips.yaml", "hosts", "fips.nft"} {
			if a, b := fileSHA256(t, filepath.Join(dir, "etc", f)), fileSHA256(t, "/etc/fips/"+f); a != b {
				t.Errorf("/etc/fips/%s is not the shipped file", f)
			}
		}
	})

	t.Run("daemon", func(t *testing.T) { smokeDaemon(t, version, "/usr/local/bin", "/usr/local/lib/fips") })

	t.Run("reinstall", func(t *testing.T) {
		mine := "# the operator's hosts\n"
		if err := os.WriteFile("/etc/fips/hosts", []byte(mine), 0o644); err != nil {
			t.Fatal(err)
		}
		m1, _ := os.ReadFile(manifest)
		run(t, filepath.Join(dir, "install.sh"))
		if b, _ := os.ReadFile("/etc/fips/hosts"); string(b) != mine {
			t.Errorf("install.sh replaced an edited /etc/fips/hosts: %q", b)
		}
		if a, b := fileSHA256(t, filepath.Join(dir, "etc/hosts")), fileSHA256(t, "/etc/fips/hosts.template"); a != b {
			t.Error("/etc/fips/hosts.template is not the shipped hosts")
		}
		m2, _ := os.ReadFile(manifest)
		lines := strings.Split(strings.TrimSpace(string(m2)), "\n")
		if len(lines) != len(strings.Split(strings.TrimSpace(string(m1)), "\n"))+1 {
			t.Errorf("manifest after the first install:\n%s\nafter the second (want one line more, the template):\n%s", m1, m2)
		}
		if !slices.Contains(lines, "file /etc/fips/hosts.template") || !slices.Contains(lines, "group fips") ||
			!slices.Contains(lines, "conf /etc/fips/hosts") {
			t.Errorf("manifest lacks the template, the group or the hosts file:\n%s", m2)
		}
	})

	run(t, "/usr/local/lib/fips/uninstall.sh")
	t.Run("uninstalled", func(t *testing.T) {
		for _, p := range []string{"/usr/local/bin/fips", "/usr/local/bin/fipsctl", "/usr/local/lib/fips",
			"/etc/systemd/system/fips.service", "/etc/systemd/system/multi-user.target.wants/fips.service",
			"/etc/tmpfiles.d/fips.conf", "/etc/fips/hosts.template", "/run/fips"} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("uninstall.sh left %s", p)
			}
		}
		for _, p := range []string{"/etc/fips/fips.yaml", "/etc/fips/hosts", "/etc/fips/fips.nft", manifest} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("uninstall.sh without --purge removed %s: %v", p, err)
			}
		}
		if o, _ := runErr("getent", "group", "fips"); o == "" {
			t.Error("uninstall.sh without --purge removed group fips")
		}
	})
	run(t, filepath.Join(dir, "uninstall.sh"), "--purge")
	installed = false
	if _, err := os.Stat(manifest); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the manifest survived --purge: %v", err)
	}
	sameAsBefore(t, "install.sh, install.sh again, uninstall.sh, uninstall.sh --purge", before, snapshot(t))
	if o, _ := runErr("getent", "group", "fips"); o != "" {
		t.Fatalf("group fips survived --purge: %q", o)
	}

	// Another prefix: everything under it, the units naming it.
	const prefix = "/opt/fips-go-test"
	installed = true
	run(t, filepath.Join(dir, "install.sh"), "--prefix", prefix)
	for _, c := range cmds {
		if v := strings.TrimSpace(run(t, prefix+"/bin/"+c, "--version")); v != c+" "+version {
			t.Errorf("%s --version = %q", c, v)
		}
	}
	for _, p := range []string{prefix + "/share/man/man1/fips.1", prefix + "/lib/fips/fips-dns-setup", prefix + "/lib/fips/uninstall.sh"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("--prefix %s: %v", prefix, err)
		}
	}
	unit, _ := os.ReadFile("/etc/systemd/system/fips.service")
	dns, _ := os.ReadFile("/etc/systemd/system/fips-dns.service")
	if !strings.Contains(string(unit), "\nExecStart="+prefix+"/bin/fips --config") ||
		!strings.Contains(string(dns), "\nExecStart="+prefix+"/lib/fips/fips-dns-setup\n") {
		t.Errorf("units do not name %s:\n%s\n%s", prefix, unit, dns)
	}
	if o, err := runErr("systemd-analyze", "verify", "/etc/systemd/system/fips.service"); err != nil || strings.TrimSpace(o) != "" {
		t.Errorf("systemd-analyze verify fips.service (--prefix): %v\n%s", err, o)
	}
	if _, err := os.Stat("/usr/local/bin/fips"); err == nil {
		t.Error("--prefix install wrote /usr/local/bin/fips")
	}
	run(t, prefix+"/lib/fips/uninstall.sh", "--purge")
	installed = false
	sameAsBefore(t, "install.sh --prefix "+prefix+", uninstall.sh --purge", before, snapshot(t))
}

func fileSHA256(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func tarHeaders(t *testing.T, p string) []*tar.Header {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	r := tar.NewReader(z)
	var hs []*tar.Header
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return hs
		}
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
}
