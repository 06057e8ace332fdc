//go:build linux

package packaging

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fips-go/fips/control/identity"
)

var debTools = map[string]string{
	"make": "make", "git": "git", "dpkg": "dpkg", "dpkg-deb": "dpkg", "lintian": "lintian",
	"systemd-analyze": "systemd", "ip": "iproute2", "nft": "nftables", "dnsmasq": "dnsmasq-base",
	"dig": "dnsutils", "getent": "libc-bin",
}

var units = []string{"fips.service", "fips-dns.service", "fips-firewall.service"}

// TestDeb builds the package twice, lints it, installs it, runs it and
// removes it again. One test, in order: each step needs the one before.
func TestDeb(t *testing.T) {
	needTools(t, debTools)
	if out, err := runErr("dpkg-query", "-W", "-f", "${db:Status-Status}", "fips"); err == nil &&
		strings.TrimSpace(out) != "not-installed" && strings.TrimSpace(out) != "" {
		t.Fatalf("package fips is already on this machine (%s): the test would replace and purge it; remove it first", out)
	}
	root := repoRoot(t)
	cmds := commandNames(t, root)
	out := t.TempDir()

	// Two builds of the same commit: one in this tree, one from scratch
	// (see fromScratch). The same nfpm binary packages both.
	nfpmBin := t.TempDir()
	inst := exec.Command("go", "install", "github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0")
	inst.Env = append(os.Environ(), "GOBIN="+nfpmBin, "GOFLAGS=")
	if b, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("go install nfpm: %v\n%s", err, b)
	}
	var debs [2]string
	var sums [2]string
	// The commit build a is made from: a commit landing meanwhile must
	// not become build b's.
	head := strings.TrimSpace(run(t, "git", "-C", root, "rev-parse", "HEAD"))
	dirty := strings.TrimSpace(run(t, "git", "-C", root, "status", "--porcelain")) != ""
	for i, dir := range []string{"a", "b"} {
		o := filepath.Join(out, dir)
		src, env := root, os.Environ()
		if i == 1 {
			src, env = fromScratch(t, root, head, dirty)
		}
		cmd := exec.Command("make", "-C", src, "deb", "DEB_OUT="+o, "NFPM="+filepath.Join(nfpmBin, "nfpm"))
		cmd.Env = env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make deb (%s): %v\n%s", dir, err, b)
		}
		m, _ := filepath.Glob(filepath.Join(o, "fips_*.deb"))
		if len(m) != 1 {
			t.Fatalf("make deb (%s) made %v", dir, m)
		}
		debs[i] = m[0]
		b, err := os.ReadFile(m[0])
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		sums[i] = hex.EncodeToString(s[:])
		t.Logf("build %s (in %s): %s sha256 %s", dir, src, filepath.Base(m[0]), sums[i])
	}
	if filepath.Base(debs[0]) != filepath.Base(debs[1]) || sums[0] != sums[1] {
		t.Fatalf("two builds differ: %s %s / %s %s", debs[0], sums[0], debs[1], sums[1])
	}
	deb := debs[0]
	version := strings.TrimSpace(run(t, "dpkg-deb", "-f", deb, "Version"))

	t.Run("lintian", func(t *testing.T) {
		o, err := runErr("lintian", "--pedantic", "--display-info", "--fail-on", "error,warning,info,pedantic", deb)
		o = strings.TrimSpace(strings.ReplaceAll(o, "running with root privileges is not recommended!", ""))
		t.Logf("lintian: %q", o)
		if err != nil || o != "" {
			t.Fatalf("lintian: %v\n%s", err, o)
		}
	})

	t.Run("contents", func(t *testing.T) {
		c := run(t, "dpkg-deb", "-c", deb)
		want := []string{"./etc/fips/fips.yaml", "./etc/fips/hosts",
			"./etc/fips/fips.nft", "./lib/systemd/system/fips.service", "./lib/systemd/system/fips-dns.service",
			"./lib/systemd/system/fips-firewall.service", "./lib/systemd/system/fips-gateway.service", "./usr/lib/tmpfiles.d/fips.conf",
			"./usr/lib/fips/fips-dns-setup", "./usr/lib/fips/fips-dns-teardown", "./usr/share/doc/fips/copyright",
			"./usr/share/bash-completion/completions/fipsctl", "./usr/share/zsh/vendor-completions/_fipsctl"}
		for _, b := range cmds {
			want = append(want, "./usr/bin/"+b, "./usr/share/man/man1/"+b+".1.gz")
		}
		for _, p := range want {
			if !strings.Contains(c, " "+p+"\n") {
				t.Errorf("package lacks %s", p)
			}
		}
		x := t.TempDir()
		run(t, "dpkg-deb", "-e", deb, x)
		conf, _ := os.ReadFile(filepath.Join(x, "conffiles"))
		wantConf := "/etc/fips/fips.nft\n/etc/fips/fips.yaml\n/etc/fips/hosts\n"
		if got := sortLines(string(conf)); got != wantConf {
			t.Errorf("conffiles = %q, want %q", got, wantConf)
		}
	})

	before := snapshot(t)
	installed := false
	t.Cleanup(func() {
		if installed { // a failure part-way: do not leave the package behind
			_, _ = runErr("dpkg", "-P", "fips")
		}
	})
	run(t, "dpkg", "-i", deb)
	installed = true

	t.Run("installed", func(t *testing.T) {
		if o := run(t, "getent", "group", "fips"); !strings.HasPrefix(o, "fips:") {
			t.Fatalf("group fips: %q", o)
		}
		gid := groupID(t, "fips")
		st := statT(t, "/run/fips")
		if st.Mode&0o7777 != 0o750 || st.Uid != 0 || st.Gid != gid {
			t.Errorf("/run/fips: mode %o uid %d gid %d, want 0750 root:fips(%d)", st.Mode&0o7777, st.Uid, st.Gid, gid)
		}
		if st := statT(t, "/etc/fips/fips.yaml"); st.Mode&0o777 != 0o600 {
			t.Errorf("/etc/fips/fips.yaml mode %o, want 0600", st.Mode&0o777)
		}
		wants := "/etc/systemd/system/multi-user.target.wants/"
		for _, u := range []string{"fips.service", "fips-dns.service"} {
			if l, err := os.Readlink(wants + u); err != nil || l != "/lib/systemd/system/"+u {
				t.Errorf("%s not enabled: %q %v", u, l, err)
			}
		}
		if _, err := os.Lstat(wants + "fips-firewall.service"); err == nil {
			t.Error("fips-firewall.service is enabled; the package must leave it to the operator")
		}
	})

	t.Run("systemd-analyze", func(t *testing.T) {
		for _, u := range units {
			o, err := runErr("systemd-analyze", "verify", "/lib/systemd/system/"+u)
			t.Logf("systemd-analyze verify %s: %q", u, strings.TrimSpace(o))
			if err != nil || strings.TrimSpace(o) != "" {
				t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, o)
			}
		}
	})

	t.Run("versions", func(t *testing.T) {
		for _, b := range cmds {
			o := strings.TrimSpace(run(t, "/usr/bin/"+b, "--version"))
			t.Logf("%s --version: %s", b, o)
			if o != b+" "+version {
				t.Errorf("%s --version = %q, want %q", b, o, b+" "+version)
			}
		}
	})

	t.Run("firewall", func(t *testing.T) {
		ns := newNetns(t)
		for range 2 { // loading it again replaces the table, not adds to it
			run(t, "ip", "netns", "exec", ns, "nft", "-f", "/etc/fips/fips.nft")
		}
		l := run(t, "ip", "netns", "exec", ns, "nft", "list", "table", "inet", "fips")
		for _, want := range []string{`iifname != "fips0" return`, "ct state established,related accept",
			"icmpv6 type echo-request accept", "counter packets 0 bytes 0 drop", "hook input priority filter; policy accept;"} {
			if !strings.Contains(l, want) {
				t.Errorf("loaded table lacks %q:\n%s", want, l)
			}
		}
		if n := strings.Count(l, "counter packets"); n != 1 {
			t.Errorf("after loading twice the table has %d drop rules:\n%s", n, l)
		}
	})

	t.Run("daemon", func(t *testing.T) { smokeDaemon(t, version, "/usr/bin", "/usr/lib/fips") })

	run(t, "dpkg", "-r", "fips")
	t.Run("removed", func(t *testing.T) {
		for _, p := range []string{"/usr/bin/fips", "/usr/bin/fipsctl", "/usr/bin/fipstop", "/lib/systemd/system/fips.service", "/run/fips"} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("dpkg -r left %s", p)
			}
		}
		if _, err := os.Stat("/etc/fips/fips.yaml"); err != nil {
			t.Errorf("dpkg -r removed the conffile: %v", err)
		}
	})
	run(t, "dpkg", "-P", "fips")
	installed = false

	sameAsBefore(t, "dpkg -i, -r, -P", before, snapshot(t))
	if o, _ := runErr("getent", "group", "fips"); o != "" {
		t.Fatalf("group fips survived purge: %q", o)
	}
	if o, _ := runErr("getent", "passwd", "fips"); o != "" {
		t.Fatalf("a user fips exists after purge: %q", o)
	}
}

// smokeDaemon starts the installed fips (in bin; the DNS helpers in lib)
// from the installed configuration in a fresh network namespace, queries it with the installed fipsctl through
// its default socket, routes .fips through a real dnsmasq configured by the
// installed fips-dns-setup, then stops it. The installed configuration
// needs no changes: the control socket defaults to /run/fips/control.sock,
// which the package made, and the identity is ephemeral.
func smokeDaemon(t *testing.T, version, bin, lib string) {
	ns := newNetns(t)
	var logBuf bytes.Buffer
	d := exec.Command("ip", "netns", "exec", ns, bin+"/fips", "--config", "/etc/fips/fips.yaml")
	d.Stdout, d.Stderr = &logBuf, &logBuf
	d.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- d.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = syscall.Kill(-d.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-d.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("fips did not stop on SIGTERM within 10s")
		}
	}
	defer func() {
		stop()
		if t.Failed() {
			t.Logf("daemon log:\n%s", logBuf.String())
		}
	}()

	var status map[string]any
	err := eventually(10*time.Second, func() error {
		o, err := runErr("ip", "netns", "exec", ns, bin+"/fipsctl", "show", "status")
		if err != nil {
			return fmt.Errorf("%v: %s", err, o)
		}
		status = nil
		if err := json.Unmarshal([]byte(o), &status); err != nil {
			return err
		}
		// The socket answers while the node is still starting (state
		// "created", no fips0 yet): wait for it to be up.
		if status["state"] != "running" || status["tun_state"] != "active" {
			return fmt.Errorf("node not up yet: state %v, tun_state %v", status["state"], status["tun_state"])
		}
		return nil
	})
	if err != nil {
		t.Errorf("fipsctl show status: %v", err)
	}
	t.Logf("show status: state=%v version=%v control_socket=%v tun=%v/%v transports=%v npub=%v",
		status["state"], status["version"], status["control_socket"], status["tun_name"], status["tun_state"],
		status["transport_count"], status["npub"])
	for k, want := range map[string]any{"state": "running", "version": version, "control_socket": "/run/fips/control.sock",
		"tun_name": "fips0", "tun_state": "active", "transport_count": float64(2), "exe_path": bin + "/fips"} {
		if status[k] != want {
			t.Errorf("show status %s = %v, want %v", k, status[k], want)
		}
	}
	st := statT(t, "/run/fips/control.sock")
	if st.Mode&0o777 != 0o770 || st.Gid != groupID(t, "fips") {
		t.Errorf("control socket mode %o gid %d, want 0770 group fips", st.Mode&0o777, st.Gid)
	}

	// .fips DNS through dnsmasq, the way fips-dns.service sets it up on a
	// dnsmasq host: the installed script, a dnsmasq configuration
	// directory under a temporary root, systemctl stubbed to say dnsmasq
	// is running.
	dnsRoot, stubs := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(dnsRoot, "etc/dnsmasq.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeStub(t, stubs, "systemctl", `case "$1" in is-active) [ "$3" = dnsmasq.service ] && exit 0; exit 3 ;; esac; echo "systemctl $*" >> `+stubs+"/log\n")
	setup := exec.Command("ip", "netns", "exec", ns, lib+"/fips-dns-setup")
	setup.Env = append(os.Environ(), "PATH="+stubs+":/usr/sbin:/usr/bin:/sbin:/bin", "FIPS_DNS_ROOT="+dnsRoot, "FIPS_DNS_WAIT=5")
	if o, err := setup.CombinedOutput(); err != nil || !strings.Contains(string(o), "via dnsmasq") {
		t.Fatalf("fips-dns-setup: %v\n%s", err, o)
	}
	dm := exec.Command("ip", "netns", "exec", ns, "dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts",
		"--conf-dir="+filepath.Join(dnsRoot, "etc/dnsmasq.d"), "--listen-address=127.0.0.1", "--bind-interfaces",
		"--port=5300", "--user=root", "--pid-file=", "--log-facility=-")
	var dmLog bytes.Buffer
	dm.Stdout, dm.Stderr = &dmLog, &dmLog
	if err := dm.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dm.Process.Kill(); _ = dm.Wait() }()
	pk, err := identity.DecodeNpub("npub1qmc3cvfz0yu2hx96nq3gp55zdan2qclealn7xshgr448d3nh6lks7zel98") // test-us01 in /etc/fips/hosts
	if err != nil {
		t.Fatal(err)
	}
	want := pk.NodeAddr().IPv6().String()
	var got string
	err = eventually(5*time.Second, func() error {
		o, err := runErr("ip", "netns", "exec", ns, "dig", "+short", "+time=1", "+tries=1", "@127.0.0.1", "-p", "5300",
			"test-us01.fips", "AAAA")
		got = strings.TrimSpace(o)
		if err != nil || got != want {
			return fmt.Errorf("dig: %v %q", err, got)
		}
		return nil
	})
	t.Logf("dig test-us01.fips AAAA via dnsmasq: %q (want %s)", got, want)
	if err != nil {
		t.Errorf("%v; dnsmasq log:\n%s", err, dmLog.String())
	}
	teardown := exec.Command(lib + "/fips-dns-teardown")
	teardown.Env = setup.Env
	if o, err := teardown.CombinedOutput(); err != nil {
		t.Fatalf("fips-dns-teardown: %v\n%s", err, o)
	}
	if _, err := os.Stat(filepath.Join(dnsRoot, "etc/dnsmasq.d/fips.conf")); err == nil {
		t.Error("fips-dns-teardown left the dnsmasq file")
	}

	stop()
	if _, err := os.Lstat("/run/fips/control.sock"); err == nil {
		t.Error("the daemon left its control socket behind")
	}
	if !strings.Contains(logBuf.String(), "INFO fips: FIPS shutdown complete") {
		t.Errorf("no clean stop in the daemon log")
	}
}

// fromScratch prepares the second of two reproducibility builds: a fresh
// clone of the commit under another path (so nothing of this tree's
// location can leak in) and an empty Go build cache (so every package,
// the standard library included, is compiled again rather than taken from
// the first build). A tree with uncommitted changes is rebuilt in place,
// still with an empty cache: a clone would lack the changes.
func fromScratch(t *testing.T, root, head string, dirty bool) (string, []string) {
	t.Helper()
	env := append(os.Environ(), "GOCACHE="+t.TempDir(), "GOFLAGS=")
	if dirty {
		t.Logf("uncommitted changes: the second build is in %s, with an empty build cache", root)
		return root, env
	}
	src := filepath.Join(t.TempDir(), "elsewhere", "fips-go")
	run(t, "git", "clone", "-q", "--no-checkout", root, src)
	run(t, "git", "-C", src, "checkout", "-q", head)
	return src, env
}

// sameAsBefore fails the test unless two snapshots are equal.
func sameAsBefore(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	var diffs []string
	for p, v := range before {
		if w, ok := after[p]; !ok {
			diffs = append(diffs, "gone:    "+p+" "+v)
		} else if w != v {
			diffs = append(diffs, "changed: "+p+" "+v+" -> "+w)
		}
	}
	for p, w := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, "left:    "+p+" "+w)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%s did not leave the machine as it was:\n%s", what, strings.Join(diffs, "\n"))
	}
	t.Logf("%s left nothing behind (%d paths compared)", what, len(after))
}

// snapshot lists every path under the directories a package can touch, with
// type, mode and owner (and a content hash for the account databases).
func snapshot(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	// Backups and locks that shadow's groupadd/groupdel rewrite by design.
	skip := []string{"/etc/group-", "/etc/gshadow-", "/etc/passwd-", "/etc/shadow-", "/etc/subgid-", "/etc/subuid-", "/etc/.pwd.lock"}
	hash := []string{"/etc/group", "/etc/gshadow", "/etc/passwd", "/etc/shadow"}
	for _, r := range []string{"/etc", "/usr/bin", "/usr/sbin", "/usr/lib/fips", "/usr/lib/tmpfiles.d", "/usr/lib/sysusers.d",
		"/lib/systemd/system", "/usr/share/doc/fips", "/usr/share/man/man1", "/usr/share/lintian/overrides",
		"/var/lib/systemd", "/var/lib/fips", "/var/log/fips", "/run/fips",
		"/usr/local/bin", "/usr/local/lib", "/usr/local/share/man", "/opt"} {
		_ = filepath.WalkDir(r, func(p string, de fs.DirEntry, err error) error {
			if err != nil || slices.Contains(skip, p) {
				return nil
			}
			if p == "/etc/netns" && de.IsDir() {
				// ip netns: other tests' namespaces come and go meanwhile.
				return filepath.SkipDir
			}
			info, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			st := info.Sys().(*syscall.Stat_t)
			v := fmt.Sprintf("%v uid=%d gid=%d", info.Mode(), st.Uid, st.Gid)
			if info.Mode()&fs.ModeSymlink != 0 {
				l, _ := os.Readlink(p)
				v += " -> " + l
			}
			if slices.Contains(hash, p) {
				b, _ := os.ReadFile(p)
				s := sha256.Sum256(b)
				v += " sha256=" + hex.EncodeToString(s[:8])
			}
			m[p] = v
			return nil
		})
	}
	// dpkg's record of the package.
	info, _ := filepath.Glob("/var/lib/dpkg/info/fips.*")
	for _, p := range info {
		m[p] = "dpkg info"
	}
	return m
}

func statT(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatalf("stat %s: %v", p, err)
	}
	return info.Sys().(*syscall.Stat_t)
}

func groupID(t *testing.T, name string) uint32 {
	t.Helper()
	o := strings.TrimSpace(run(t, "getent", "group", name))
	f := strings.Split(o, ":")
	var gid uint32
	if len(f) < 3 {
		t.Fatalf("getent group %s: %q", name, o)
	}
	if _, err := fmt.Sscan(f[2], &gid); err != nil {
		t.Fatal(err)
	}
	return gid
}

func sortLines(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(l)
	return strings.Join(l, "\n") + "\n"
}
