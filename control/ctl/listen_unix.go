//go:build unix

package ctl

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Socket and managed-parent modes (upstream's sockbind policy).
const (
	socketMode fs.FileMode = 0o770
	parentMode fs.FileMode = 0o750
)

// SocketGroup is the group given access to the control socket.
const SocketGroup = "fips"

func listenPlatform(path string, log *slog.Logger, chown func(string)) (net.Listener, string, string, error) {
	parent := filepath.Dir(path)
	created, err := ensureSocketParent(parent)
	if err != nil {
		return nil, "", "", fmt.Errorf("control socket directory %s: %w", parent, err)
	}
	if created {
		log.Debug("Created private socket directory", "path", parent, "socket", "control")
	}
	managed := created || IsManagedSocketParent(parent, HostPathEnv())

	// The parent gets its mode and group before anything is bound in it.
	if managed {
		if err := os.Chmod(parent, parentMode); err != nil {
			return nil, "", "", err
		}
		chown(parent)
	}
	if err := removeStaleSocket(path, log); err != nil {
		return nil, "", "", err
	}
	ln, err := bindPrivate(path)
	if err != nil {
		return nil, "", "", err
	}
	chown(path)
	log.Info("Control socket listening", "path", path)
	return ln, path, path, nil
}

// bindPrivate binds a unix socket at path that nobody but this process
// can connect to before it has socketMode: the socket is bound in a fresh
// 0700 directory beside path, given its mode there, and then hard-linked
// into place. Binding at path and changing the mode afterwards would
// leave a window in which anyone the umask lets in could connect, and a
// connection made then stays in the backlog and is served later. The
// link fails rather than replace whatever appeared at path meanwhile
// (another daemon's socket): that is EADDRINUSE, as a live socket is.
// Where the temporary path would be too long for a socket address, or
// the filesystem has no hard links, it binds at path with umask-limited
// permissions first — the old way, with its window.
func bindPrivate(path string) (*net.UnixListener, error) {
	if len(path) >= maxSocketPath {
		// A link would put a socket at a path no client can connect
		// to; binding in place fails as such a path must (or works,
		// where the platform's sun_path is longer).
		return listenMode(path)
	}
	dir, err := os.MkdirTemp(filepath.Dir(path), ".fips-bind-")
	if err != nil {
		return listenMode(path) // in place, mode set afterwards
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	if len(tmp) >= maxSocketPath {
		return listenMode(path) // in place, mode set afterwards
	}
	ln, err := listenMode(tmp)
	if err != nil {
		return nil, err
	}
	switch err := os.Link(tmp, path); {
	case err == nil:
		return ln, nil
	case errors.Is(err, fs.ErrExist):
		ln.Close()
		return nil, fmt.Errorf("control socket already in use: %s: %w", path, syscall.EADDRINUSE)
	default:
		ln.Close()
		return listenMode(path) // in place, mode set afterwards
	}
}

// maxSocketPath is the longest path a unix socket address holds with its
// terminating NUL (sun_path is 104 bytes on the BSDs and macOS, 108 on
// Linux; the smaller bound serves both).
const maxSocketPath = 104

// listenMode binds a unix socket at path, which it leaves in place when
// closed (removal is explicit), and gives it socketMode; a socket it
// bound but could not give the mode is removed again.
func listenMode(path string) (*net.UnixListener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(path, socketMode); err != nil {
		ln.Close()
		os.Remove(path)
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return ln, nil
}

// ensureSocketParent creates parent (and missing ancestors) and reports
// whether this call created the leaf itself: only a leaf we created, or a
// canonical runtime directory, has its mode and group set.
func ensureSocketParent(parent string) (bool, error) {
	if parent == "" {
		return false, nil
	}
	err := os.Mkdir(parent, 0o777)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrExist):
		if fi, serr := os.Stat(parent); serr == nil && fi.IsDir() {
			return false, nil
		}
		return false, err
	case errors.Is(err, fs.ErrNotExist):
		ancestor := filepath.Dir(parent)
		if ancestor == parent {
			return false, err
		}
		if _, err := ensureSocketParent(ancestor); err != nil {
			return false, err
		}
		return ensureSocketParent(parent)
	}
	return false, err
}

// CheckSocketPath reports whether a control socket could be bound at path
// without disturbing anything there: nothing at all, or a socket file
// (whether stale or live is decided when binding). Anything else — a
// regular file, a directory, a symlink, a device — is an error wrapping
// ErrNotSocket, and is never removed.
func CheckSocketPath(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("control socket path %s: %w", path, err)
	case fi.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("control socket path %s is %s, not a socket; refusing to remove it (move it away or set node.control.socket_path): %w",
			path, describeFileType(fi.Mode()), ErrNotSocket)
	}
	return nil
}

func describeFileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a socket (" + m.Type().String() + ")"
}

// removeStaleSocket removes a socket file nobody listens on (an unclean
// exit). A live listener is an error, so two daemons cannot share a path;
// anything that is not a socket is left alone and refused (CheckSocketPath).
func removeStaleSocket(path string, log *slog.Logger) error {
	if err := CheckSocketPath(path); err != nil {
		return err
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("control socket already in use: %s: %w", path, syscall.EADDRINUSE)
	}
	// Between the check and here the path could have been replaced; look
	// once more, so only a socket is ever unlinked.
	if err := CheckSocketPath(path); err != nil {
		return err
	}
	log.Debug("Removing stale socket", "path", path, "socket", "control")
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale control socket %s: %w", path, err)
	}
	return nil
}

func removeSocketFile(path string, log *slog.Logger) {
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeSocket {
		return // gone, or replaced by something that is not ours to remove
	}
	if err := os.Remove(path); err != nil {
		log.Warn("Failed to remove socket file", "path", path, "socket", "control", "error", err)
		return
	}
	log.Debug("Socket file removed", "path", path, "socket", "control")
}

// chownFipsGroup gives path to group fips, best effort: no such group is
// normal on a developer machine (debug), a failing chown is a warning.
func chownFipsGroup(path string, log *slog.Logger) {
	g, err := user.LookupGroup(SocketGroup)
	if err != nil {
		log.Debug("'fips' group not found, skipping chown", "path", path)
		return
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return
	}
	if err := os.Chown(path, -1, gid); err != nil {
		log.Warn("Failed to chown socket to 'fips' group", "path", path, "error", err)
	}
}

func acceptPeer(net.Conn, *slog.Logger) bool { return true }

// ListenUnix binds another of the node's unix sockets (the native API's)
// under the control socket's policy: the parent created or managed as
// for the control socket, the socket mode 0770 with no window before it,
// group fips, a stale socket removed and a live one refused.
func ListenUnix(path, what string, log *slog.Logger) (*net.UnixListener, error) {
	parent := filepath.Dir(path)
	created, err := ensureSocketParent(parent)
	if err != nil {
		return nil, fmt.Errorf("%s socket directory %s: %w", what, parent, err)
	}
	if created || IsManagedSocketParent(parent, HostPathEnv()) {
		if err := os.Chmod(parent, parentMode); err != nil {
			return nil, fmt.Errorf("%s socket directory %s: %w", what, parent, err)
		}
		chownFipsGroup(parent, log)
	}
	if err := removeStaleSocket(path, log); err != nil {
		return nil, err
	}
	ln, err := bindPrivate(path)
	if err != nil {
		return nil, err
	}
	chownFipsGroup(path, log)
	return ln, nil
}

// RemoveUnix removes a socket ListenUnix bound, if it is still a socket.
func RemoveUnix(path string, log *slog.Logger) { removeSocketFile(path, log) }
