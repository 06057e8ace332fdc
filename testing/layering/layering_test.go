package layering

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/fips-go/fips/"

// golist runs `go list args` from the module root for goos and returns
// the words it printed.
func golist(t *testing.T, goos string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	cmd.Env = append(cmd.Environ(), "GOOS="+goos)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		msg := ""
		if errors.As(err, &ee) {
			msg = string(ee.Stderr)
		}
		t.Fatalf("GOOS=%s go list %s: %v\n%s", goos, strings.Join(args, " "), err, msg)
	}
	return strings.Fields(string(out))
}

// TestLayering keeps the import rules docs/architecture.md draws, on
// every OS the daemon builds for. control/node runs the loop and the
// core and does no packet I/O: it imports neither the BPF loader, the
// AF_XDP sockets nor the TUN device (dataplane owns them); fipsctl links
// no daemon code; nothing in dataplane or fallback imports the node;
// fallback imports of the dataplane only the TUN reader and batch it
// shares; the core below the node depends on no dataplane.
func TestLayering(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			direct := func(pkg string) []string { return golist(t, goos, "-f", `{{join .Imports " "}}`, pkg) }
			deps := func(pkg string) []string { return golist(t, goos, "-deps", pkg) }
			for _, bad := range []string{"bpf", "dataplane/afxdp", "dataplane/tun"} {
				if slices.Contains(direct("./control/node"), mod+bad) {
					t.Errorf("control/node imports %s: packet I/O belongs to dataplane", bad)
				}
			}
			for _, d := range deps("./cmd/fipsctl") {
				if d == mod+"control/node" || d == mod+"bpf" || strings.HasPrefix(d, mod+"dataplane") {
					t.Errorf("fipsctl links %s: it needs only the control socket and its schema (control/ctl)", strings.TrimPrefix(d, mod))
				}
			}
			for _, p := range golist(t, goos, "./dataplane/...", "./fallback/...") {
				for _, d := range direct(p) {
					if d == mod+"control/node" {
						t.Errorf("%s imports control/node: the node drives the dataplane, never the reverse", strings.TrimPrefix(p, mod))
					}
					if strings.HasPrefix(p, mod+"fallback") && strings.HasPrefix(d, mod+"dataplane") && d != mod+"dataplane/tun" {
						t.Errorf("%s imports %s: fallback is the portable I/O the dataplane runs on, not its user", strings.TrimPrefix(p, mod), strings.TrimPrefix(d, mod))
					}
				}
			}
			for _, core := range []string{"peer", "session", "route", "tree", "bloom", "mmp", "wire", "noise", "ratelimit", "transport", "ctl"} {
				for _, d := range deps("./control/" + core) {
					if strings.HasPrefix(d, mod+"dataplane") || d == mod+"bpf" || d == mod+"control/node" {
						t.Errorf("control/%s depends on %s: the core sits below the node and the dataplane", core, strings.TrimPrefix(d, mod))
					}
				}
			}
		})
	}
}
