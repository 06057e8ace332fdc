//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fips-go/fips/control/ctl"
)

// syncBuffer is a bytes.Buffer the daemon's stderr copier and the test
// can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWarnConfigFiles runs `fips -c FILE` on every file of
// control/config/testdata/warn: configs upstream starts with a warning
// (a peer whose npub is invalid or a placeholder is skipped). Each must
// start and serve, log one warning naming the key the file's first line
// ("# warn: KEY") declares, dial the file's other peer, and exit 0 on
// SIGINT.
func TestWarnConfigFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "control", "config", "testdata", "warn", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("warn configs: %v %v", files, err)
	}
	const valid = "npub1qmc3cvfz0yu2hx96nq3gp55zdan2qclealn7xshgr448d3nh6lks7zel98"
	bin := buildFips(t)
	for _, src := range files {
		t.Run(filepath.Base(src), func(t *testing.T) {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := bytes.Cut(data, []byte("\n"))
			key, ok := strings.CutPrefix(string(first), "# warn: ")
			if !ok {
				t.Fatalf("first line %q is not # warn: KEY", first)
			}
			dir := t.TempDir()
			sock := filepath.Join(dir, "control.sock")
			data = append(data, fmt.Sprintf("node:\n  control: {socket_path: %q}\ndns: {enabled: false}\n", sock)...)
			cfg := filepath.Join(dir, "fips.yaml")
			if err := os.WriteFile(cfg, data, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "-c", cfg)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				if cmd.ProcessState == nil {
					cmd.Process.Kill()
					<-exited
				}
			}()
			var conns struct {
				Connections []struct {
					ExpectedPeer string `json:"expected_peer"`
				} `json:"connections"`
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				raw, err := ctl.Call(ctx, sock, "show_connections", nil)
				cancel()
				if err == nil && json.Unmarshal(raw, &conns) == nil && len(conns.Connections) > 0 {
					break
				}
				select {
				case err := <-exited:
					t.Fatalf("daemon exited (%v):\n%s", err, stderr.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("no dial of the valid peer in 10 s (%v):\n%s", err, stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if len(conns.Connections) != 1 || conns.Connections[0].ExpectedPeer != valid {
				t.Errorf("connections %+v, want one dial of %s", conns.Connections, valid)
			}
			var warned []string
			for _, line := range strings.Split(stderr.String(), "\n") {
				if strings.Contains(line, "key="+key) {
					warned = append(warned, line)
				}
			}
			if len(warned) != 1 || !strings.Contains(warned[0], "WARN") || !strings.Contains(warned[0], "this peer is skipped") ||
				!strings.Contains(warned[0], "line=7") {
				t.Errorf("want one warning for %s at line 7 saying the peer is skipped, got %q\nstderr:\n%s", key, warned, stderr.String())
			}
			cmd.Process.Signal(os.Interrupt)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("exit after SIGINT: %v\n%s", err, stderr.String())
				}
			case <-time.After(15 * time.Second):
				t.Fatal("no exit after SIGINT")
			}
		})
	}
}
