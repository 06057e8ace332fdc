//go:build linux

package packaging

import (
	"archive/zip"
	"bytes"
	"debug/pe"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestWindowsZip builds the Windows ZIP twice (byte-identical) and checks
// what it holds: an amd64 Windows executable of every command that runs on
// Windows, carrying the version; upstream's default fips.yaml and hosts;
// a README.txt with CRLF line ends that says where wintun.dll goes.
func TestWindowsZip(t *testing.T) {
	needTools(t, map[string]string{"make": "make", "git": "git"})
	root := repoRoot(t)
	var want []string
	for _, c := range commandNames(t, root) {
		if c != "fips-gateway" { // Linux only: nftables
			want = append(want, c+".exe")
		}
	}
	want = append(want, "README.txt", "fips.yaml", "hosts")
	sort.Strings(want)

	out := t.TempDir()
	var files, sums [2]string
	for i, dir := range []string{"a", "b"} {
		o := filepath.Join(out, dir)
		run(t, "make", "-C", root, "zip", "ZIP_OUT="+o)
		m, _ := filepath.Glob(filepath.Join(o, "fips-*-windows-amd64.zip"))
		if len(m) != 1 {
			t.Fatalf("make zip (%s) made %v", dir, m)
		}
		files[i], sums[i] = m[0], fileSHA256(t, m[0])
		t.Logf("build %s: %s sha256 %s", dir, filepath.Base(m[0]), sums[i])
	}
	if filepath.Base(files[0]) != filepath.Base(files[1]) || sums[0] != sums[1] {
		t.Fatalf("two builds differ: %s %s / %s %s", files[0], sums[0], files[1], sums[1])
	}
	name := filepath.Base(files[0])
	version := strings.TrimSuffix(strings.TrimPrefix(name, "fips-"), "-windows-amd64.zip")
	epoch, err := strconv.ParseInt(strings.TrimSpace(run(t, "git", "-C", root, "log", "-1", "--format=%ct")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	z, err := zip.OpenReader(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var got []string
	for _, f := range z.File {
		got = append(got, f.Name)
		if f.Modified.Unix() != epoch {
			t.Errorf("%s: time %v, want the commit time %d", f.Name, f.Modified, epoch)
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		switch {
		case strings.HasSuffix(f.Name, ".exe"):
			p, err := pe.NewFile(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s is not a PE executable: %v", f.Name, err)
			}
			if p.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
				t.Errorf("%s: machine %#x, want amd64", f.Name, p.Machine)
			}
			if !bytes.Contains(b, []byte(version)) {
				t.Errorf("%s does not carry version %s", f.Name, version)
			}
		case f.Name == "README.txt":
			s := string(b)
			if strings.Count(s, "\n") != strings.Count(s, "\r\n") {
				t.Error("README.txt has bare LF line ends; Notepad users get CRLF")
			}
			for _, w := range []string{version, "wintun.dll", "bin\\amd64\\wintun.dll", "same directory as\r\n   fips.exe",
				"--install-service", "--uninstall-service", "127.0.0.1:21210", `C:\ProgramData\fips`} {
				if !strings.Contains(s, w) {
					t.Errorf("README.txt does not say %q", w)
				}
			}
			if strings.Contains(s, "@") {
				t.Errorf("README.txt has an unexpanded @PLACEHOLDER@:\n%s", s)
			}
		default:
			shipped, err := os.ReadFile(filepath.Join(root, "cmd/fips/packaging/etc", f.Name))
			if err != nil || !bytes.Equal(shipped, b) {
				t.Errorf("%s is not cmd/fips/packaging/etc/%s (%v)", f.Name, f.Name, err)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("zip holds %v, want %v", got, want)
	}
}
