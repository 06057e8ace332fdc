//go:build linux || darwin || freebsd

package native

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadCommand: the line reader never returns more than MaxCommand
// bytes, never a newline, and refuses a longer line wherever the reader
// splits it.
func FuzzReadCommand(f *testing.F) {
	f.Add([]byte("{\"command\":\"listen\"}\n{\"command\":\"stats\"}\n"), 16)
	f.Add(bytes.Repeat([]byte("x"), MaxCommand+1), 4096)
	f.Add(append(bytes.Repeat([]byte("x"), MaxCommand), '\n'), 17)
	f.Fuzz(func(t *testing.T, in []byte, size int) {
		r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(in)), max(16, size%8192))
		for {
			line, err := readCommand(r)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, errCommandTooLarge) {
					t.Fatalf("error %v", err)
				}
				return
			}
			if len(line) > MaxCommand || bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("line of %d bytes", len(line))
			}
		}
	})
}
