package main

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// writeZip archives the regular files under dir, by name order, each with
// time t, mode 0644 or (executable) 0755, deflated: the same tree gives
// the same bytes.
func writeZip(out, dir string, t time.Time) (err error) {
	var names []string
	err = filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() {
			return nil
		}
		if !de.Type().IsRegular() {
			return fmt.Errorf("%s: only regular files go into the archive", p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("%s: nothing to archive", dir)
	}
	sort.Strings(names)

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(out)
		}
	}()
	w := zip.NewWriter(f)
	for _, n := range names {
		if err := addFile(w, filepath.Join(dir, filepath.FromSlash(n)), n, t); err != nil {
			return err
		}
	}
	return w.Close()
}

func addFile(w *zip.Writer, path, name string, t time.Time) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: t}
	mode := fs.FileMode(0o644)
	if info.Mode()&0o111 != 0 {
		mode = 0o755
	}
	h.SetMode(mode)
	dst, err := w.CreateHeader(h)
	if err != nil {
		return err
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	if _, err := io.Copy(dst, src); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
