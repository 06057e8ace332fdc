package ctl

import (
	"strings"
	"testing"
)

func fakeEnv(dirs []string, xdg *string, policy VarRunPolicy) PathEnv {
	set := map[string]bool{}
	for _, d := range dirs {
		set[d] = true
	}
	return PathEnv{
		IsDir: func(p string) bool { return set[p] },
		LookupEnv: func(k string) (string, bool) {
			if k != "XDG_RUNTIME_DIR" || xdg == nil {
				return "", false
			}
			return *xdg, true
		},
		VarRun: policy,
	}
}

func TestResolveSocketPath(t *testing.T) {
	xdg, empty, stale := "/valid/xdg", "", "/gone"
	linux := VarRunPolicy{}
	macRoot := VarRunPolicy{ConsultExisting: true, CreatePrivateDir: true}
	macUser := VarRunPolicy{ConsultExisting: true}
	freebsd := VarRunPolicy{ConsultExisting: true}
	for _, tc := range []struct {
		name   string
		file   string
		dirs   []string
		xdg    *string
		policy VarRunPolicy
		want   string
	}{
		{"packaged linux", "control.sock", []string{"/run/fips", "/valid/xdg"}, &xdg, linux, "/run/fips/control.sock"},
		{"/run/fips wins on macOS too", "control.sock", []string{"/run/fips", "/var/run/fips"}, &xdg, macRoot, "/run/fips/control.sock"},
		{"linux ignores /var/run/fips", "control.sock", []string{"/var/run/fips", "/valid/xdg"}, &xdg, linux, "/valid/xdg/fips/control.sock"},
		{"root macOS bootstraps /var/run/fips", "control.sock", []string{"/var/run", "/valid/xdg"}, &xdg, macRoot, "/var/run/fips/control.sock"},
		{"non-root macOS before the daemon made it", "control.sock", []string{"/var/run", "/valid/xdg"}, &xdg, macUser, "/valid/xdg/fips/control.sock"},
		{"clients follow an existing /var/run/fips", "control.sock", []string{"/var/run/fips", "/valid/xdg"}, &xdg, macUser, "/var/run/fips/control.sock"},
		{"freebsd rc.d directory", "control.sock", []string{"/var/run", "/var/run/fips"}, nil, freebsd, "/var/run/fips/control.sock"},
		{"freebsd without it", "control.sock", []string{"/var/run"}, nil, freebsd, "/tmp/fips-control.sock"},
		{"xdg need not contain fips yet", "control.sock", []string{"/valid/xdg"}, &xdg, linux, "/valid/xdg/fips/control.sock"},
		{"stale xdg", "control.sock", nil, &stale, linux, "/tmp/fips-control.sock"},
		{"empty xdg", "control.sock", []string{""}, &empty, linux, "/tmp/fips-control.sock"},
		{"no xdg", "control.sock", nil, nil, linux, "/tmp/fips-control.sock"},
		{"gateway socket", "gateway.sock", []string{"/valid/xdg"}, &xdg, linux, "/valid/xdg/fips/gateway.sock"},
		{"xdg with trailing slash", "control.sock", []string{"/valid/xdg/"}, ptr("/valid/xdg/"), linux, "/valid/xdg/fips/control.sock"},
	} {
		if got := ResolveSocketPath(tc.file, fakeEnv(tc.dirs, tc.xdg, tc.policy)); got != tc.want {
			t.Errorf("%s: got %s want %s", tc.name, got, tc.want)
		}
	}
}

func ptr(s string) *string { return &s }

func TestIsManagedSocketParent(t *testing.T) {
	xdg := "/valid/xdg"
	mac := fakeEnv(nil, &xdg, VarRunPolicy{ConsultExisting: true, CreatePrivateDir: true})
	linux := fakeEnv(nil, nil, VarRunPolicy{})
	for _, tc := range []struct {
		dir  string
		env  PathEnv
		want bool
	}{
		{"/run/fips", mac, true},
		{"/run/fips/", linux, true},
		{"/var/run/fips", mac, true},
		{"/valid/xdg/fips", mac, true},
		{"/tmp", mac, false},
		{"/srv/application/fips", mac, false},
		{"/var/run/fips", linux, false},
		{"/valid/xdg/fips", linux, false},
	} {
		if got := IsManagedSocketParent(tc.dir, tc.env); got != tc.want {
			t.Errorf("%s: got %v", tc.dir, got)
		}
	}
}

func TestDefaultSocketPath(t *testing.T) {
	p := DefaultSocketPath()
	ok := p == "21210" || strings.HasSuffix(p, "/fips/control.sock") || p == "/tmp/fips-control.sock"
	if !ok {
		t.Errorf("default path %q", p)
	}
}
