//go:build linux

package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fips-go/fips/control/config"
	"github.com/fips-go/fips/control/transport/transporttest"
	"github.com/fips-go/fips/testing/daemons"
)

// upstreamConfigs is what each file of testdata/upstream must do under
// fips-go: start (the control socket answers show_status), or, when its
// only transports are ones fips-go does not run yet, exit 1 after one line
// naming them.
var upstreamConfigs = map[string]string{
	"packaging_common_fips.yaml":                          "",
	"packaging_openwrt-ipk_files_etc_fips_fips.yaml":      "", // degraded: see upstreamDegraded
	"examples_wireguard-sidecar-macos_fips.yaml":          "", // hostname peers that do not resolve here
	"examples_k8s-sidecar_entrypoint.yaml":                "",
	"examples_sidecar-nostr-relay_entrypoint.yaml":        "",
	"examples_sidecar-nostr-mixnet-relay_entrypoint.yaml": "", // nym skipped
	"testing_native-api_node.yaml":                        "",
	"testing_tor_socks5-outbound_configs_node-a.yaml":     "", // no Tor here: dials warn and retry
	"testing_tor_directory-mode_configs_node-a.yaml":      "", // no hostname file: the service retries
}

// upstreamLogs are lines a file's daemon logs while it runs: the Tor
// configs find no Tor here, and say so, one line each, while the node
// runs on.
var upstreamLogs = map[string][]string{
	"testing_tor_directory-mode_configs_node-a.yaml": {"Tor onion service not up; retrying",
		"read onion hostname (is HiddenServiceDir in torrc, and has Tor started?)"},
	"testing_tor_socks5-outbound_configs_node-a.yaml": {"Tor SOCKS5 connection failed",
		"remote=test-us01.fips.network:443", "SOCKS5 proxy unreachable (is Tor running"},
}

// upstreamDegraded are the files that start degraded, as upstream's
// daemon does with them here: the OpenWrt file's Ethernet interfaces
// (eth0, phy0-sta0, br-lan) do not exist in the namespace, so those
// instances fail to start (warned) while udp and tcp run.
var upstreamDegraded = map[string]bool{"packaging_openwrt-ipk_files_etc_fips_fips.yaml": true}

// TestUpstreamConfigsStart runs fips on every upstream configuration kept
// in testdata/upstream, each in a fresh network namespace with nothing
// but loopback (so TUN, DNS on port 5354 and wildcard binds are the
// config's own), with the hosts and ACL directory and the key files in
// the test's directory.
func TestUpstreamConfigsStart(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "upstream", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(upstreamConfigs) {
		t.Fatalf("%d files in testdata/upstream, %d expected outcomes", len(files), len(upstreamConfigs))
	}
	m := New(t, Options{})
	for i, src := range files {
		base := filepath.Base(src)
		want, ok := upstreamConfigs[base]
		if !ok {
			t.Fatalf("no expected outcome for %s", base)
		}
		t.Run(strings.TrimSuffix(base, ".yaml"), func(t *testing.T) {
			n := m.AddNode(fmt.Sprintf("up%d", i))
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := withSocketPath(data, n.Socket)
			if err != nil {
				t.Fatalf("%s: %v", base, err)
			}
			if err := os.WriteFile(n.Config, cfg, 0o600); err != nil {
				t.Fatal(err)
			}
			// Locked: the Tor configs' log is read while the daemon runs.
			var out transporttest.LogBuffer
			cmd := exec.Command("ip", "netns", "exec", n.NS, "env", config.EtcDirEnv+"="+n.Dir,
				m.Binaries().Fips, "-c", n.Config)
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			})

			if want != "" {
				select {
				case <-exited:
					var ee *exec.ExitError
					if !asExit(waitErr, &ee) || ee.ExitCode() != 1 {
						t.Fatalf("exit %v, want status 1\n%s", waitErr, out.String())
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("still running after 20 s; want a refusal naming %s\n%s", want, out.String())
				}
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				if len(lines) != 1 || !strings.Contains(lines[0], want) || !strings.Contains(lines[0], "not implemented") {
					t.Errorf("want one line naming %s as not implemented, got:\n%s", want, out.String())
				}
				return
			}

			var st struct {
				State string `json:"state"`
				Npub  string `json:"npub"`
			}
			var callErr error
			if took, ok := daemons.WaitFor(20*time.Second, func() bool {
				select {
				case <-exited:
					return true
				default:
				}
				callErr = n.Call("show_status", nil, &st)
				return callErr == nil && st.State != "created" && st.State != "starting"
			}); !ok || callErr != nil {
				t.Fatalf("no show_status answer (%v)\n%s", callErr, out.String())
			} else {
				t.Logf("%s: show_status answered after %v", base, took)
			}
			wantState := "running"
			if upstreamDegraded[base] {
				wantState = "degraded"
			}
			if st.State != wantState || !strings.HasPrefix(st.Npub, "npub1") {
				t.Errorf("show_status: %+v\n%s", st, out.String())
			}
			for _, line := range upstreamLogs[base] {
				if _, ok := daemons.WaitFor(10*time.Second, func() bool { return strings.Contains(out.String(), line) }); !ok {
					t.Errorf("no line %q\n%s", line, out.String())
				}
			}
			stopAt := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
				if waitErr != nil {
					t.Errorf("exit after SIGTERM: %v\n%s", waitErr, out.String())
				}
			case <-time.After(15 * time.Second):
				t.Errorf("no exit 15 s after SIGTERM\n%s", out.String())
			}
			t.Logf("%s: stopped %v after SIGTERM; %d log lines", base, time.Since(stopAt).Round(time.Millisecond),
				strings.Count(out.String(), "\n"))
		})
	}
}

// withSocketPath sets node.control.socket_path in a YAML document to
// path, and node.native_api.socket_path, where the document has a
// native_api section, to api.sock beside it (its default is under
// /run/fips, which a test must not create), keeping everything else
// (comments included) as it was.
func withSocketPath(data []byte, path string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	node := mapChild(root, "node")
	setString(mapChild(node, "control"), "socket_path", path)
	if mapValue(node, "native_api") != nil {
		setString(mapChild(node, "native_api"), "socket_path", filepath.Join(filepath.Dir(path), "api.sock"))
	}
	return yaml.Marshal(&doc)
}

// setString sets m's key to the string v, added when absent.
func setString(m *yaml.Node, key, v string) {
	if n := mapValue(m, key); n != nil {
		n.Kind, n.Tag, n.Value, n.Style = yaml.ScalarNode, "!!str", v, yaml.DoubleQuotedStyle
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key},
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle})
}

// mapChild is m's mapping under key, created (or made a mapping from a
// null) when absent.
func mapChild(m *yaml.Node, key string) *yaml.Node {
	if v := mapValue(m, key); v != nil {
		if v.Kind != yaml.MappingNode {
			v.Kind, v.Tag, v.Value = yaml.MappingNode, "!!map", ""
		}
		return v
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	return v
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}
