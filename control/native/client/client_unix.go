//go:build linux || darwin || freebsd

package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/fips-go/fips/control/ctl"
	"github.com/fips-go/fips/control/identity"
	"github.com/fips-go/fips/control/native"
	"golang.org/x/sys/unix"
)

// SetupTimeout bounds one setup call (connect or listen).
const SetupTimeout = 5 * time.Second

// maxReply bounds a reply line.
const maxReply = 64 << 10

// DefaultSocket is where a node binds the API socket by default:
// /run/fips/api.sock, /var/run/fips/api.sock (macOS, FreeBSD),
// $XDG_RUNTIME_DIR/fips/api.sock, else /tmp/fips-api.sock — the first
// whose directory exists. Programs should take the path as an option.
func DefaultSocket() string { return ctl.ResolveSocketPath("api.sock", ctl.HostPathEnv()) }

// Conn is one datagram flow: the descriptor the node handed over.
type Conn struct {
	pc         *native.PacketConn
	local      Addr
	remote     Addr
	maxPayload int
	flowID     uint64
}

// Dial opens a flow to peer from local (0: an ephemeral port), through
// the API socket at sock. It contacts no peer: the first Send starts the
// session.
func Dial(sock string, local uint16, peer Addr) (*Conn, error) {
	params := map[string]any{"peer": peer.Key.Npub(), "remote_port": peer.Port}
	if local != 0 {
		params["local_port"] = local
	}
	data, fd, err := setup(sock, "connect", params)
	if err != nil {
		return nil, err
	}
	var r native.ConnectReply
	if err := json.Unmarshal(data, &r); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: connect reply: %w", ErrProtocol, err)
	}
	node, err := identity.DecodeNpub(r.Node)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: connect reply node: %w", ErrProtocol, err)
	}
	pc, err := native.NewPacketConn(fd, "fips-native-flow")
	if err != nil {
		return nil, err
	}
	return &Conn{pc: pc, local: Addr{node, r.LocalPort}, remote: Addr{peer.Key, r.RemotePort},
		maxPayload: int(r.MaxPayload), flowID: r.FlowID}, nil
}

// Send writes one datagram; above MaxPayload it is syscall.EMSGSIZE.
// Success means only that the node's socket took it.
func (c *Conn) Send(b []byte) error {
	if len(b) > c.maxPayload {
		return &Error{Op: "send", Errno: syscall.EMSGSIZE,
			Message: fmt.Sprintf("%d bytes exceed the flow's maximum of %d", len(b), c.maxPayload)}
	}
	return c.pc.Send(b)
}

// Recv reads one datagram into b (a longer one is truncated) and returns
// its length; 0 is an empty datagram. io.EOF: the node closed the flow.
func (c *Conn) Recv(b []byte) (int, error) { return c.pc.Recv(b) }

// SetReadDeadline bounds Recv (zero: none); os.ErrDeadlineExceeded then.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.pc.SetReadDeadline(t) }

// SetWriteDeadline bounds Send (zero: none).
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.pc.SetWriteDeadline(t) }

// Close releases the flow (and the local port a dialled flow owns).
func (c *Conn) Close() error { return c.pc.Close() }

// LocalAddr is this node's key and the flow's local port.
func (c *Conn) LocalAddr() Addr { return c.local }

// RemoteAddr is the peer's key and port.
func (c *Conn) RemoteAddr() Addr { return c.remote }

// MaxPayload is the largest datagram the flow carried when it opened.
func (c *Conn) MaxPayload() int { return c.maxPayload }

// FlowID is the node's name for the flow (show_native_flows).
func (c *Conn) FlowID() uint64 { return c.flowID }

// Listener is a held local port; each peer that sends to it arrives as
// one Conn.
type Listener struct {
	pc    *native.PacketConn
	local Addr
}

// Listen holds port (0: an ephemeral one) through the API socket at sock.
func Listen(sock string, port uint16) (*Listener, error) {
	params := map[string]any{}
	if port != 0 {
		params["local_port"] = port
	}
	data, fd, err := setup(sock, "listen", params)
	if err != nil {
		return nil, err
	}
	var r native.ListenReply
	if err := json.Unmarshal(data, &r); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: listen reply: %w", ErrProtocol, err)
	}
	node, err := identity.DecodeNpub(r.Node)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: listen reply node: %w", ErrProtocol, err)
	}
	pc, err := native.NewPacketConn(fd, "fips-native-listener")
	if err != nil {
		return nil, err
	}
	return &Listener{pc: pc, local: Addr{node, r.LocalPort}}, nil
}

// Addr is this node's key and the held port.
func (l *Listener) Addr() Addr { return l.local }

// SetDeadline bounds Accept (zero: none).
func (l *Listener) SetDeadline(t time.Time) error { return l.pc.SetReadDeadline(t) }

// Close unbinds the port; flows already accepted stay open.
func (l *Listener) Close() error { return l.pc.Close() }

// Accept waits for the next arriving flow. What the peer sent before is
// already queued on it.
func (l *Listener) Accept() (*Conn, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4))
	var n, oobn int
	var rerr error
	rc, _ := l.pc.SyscallConn()
	err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, 0)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	fds := rights(oob[:oobn])
	if len(fds) == 0 {
		return nil, io.EOF // the node closed its half
	}
	for _, extra := range fds[1:] {
		unix.Close(extra)
	}
	fd := fds[0]
	unix.CloseOnExec(fd)
	pc, err := native.NewPacketConn(fd, "fips-native-flow")
	if err != nil {
		return nil, err
	}
	m, local, remote, err := decodeArrival(buf[:n])
	if err != nil {
		pc.Close() // refusing the flow rather than leaking it
		return nil, err
	}
	return &Conn{pc: pc, local: local, remote: remote, maxPayload: int(m.MaxPayload), flowID: m.FlowID}, nil
}

func rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// setup runs one command on a fresh connection and returns the reply's
// data and the descriptor that came with it (the connection owns
// nothing and is closed before returning).
func setup(sock, command string, params map[string]any) (json.RawMessage, int, error) {
	line, err := json.Marshal(map[string]any{"command": command, "params": params})
	if err != nil {
		return nil, -1, err
	}
	conn, err := net.DialTimeout("unix", sock, SetupTimeout)
	if err != nil {
		return nil, -1, fmt.Errorf("fips native %s: %w", command, err)
	}
	uc := conn.(*net.UnixConn)
	defer uc.Close()
	_ = uc.SetDeadline(time.Now().Add(SetupTimeout))
	if _, err := uc.Write(append(line, '\n')); err != nil {
		return nil, -1, fmt.Errorf("fips native %s: %w", command, err)
	}
	var reply []byte
	fd := -1
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for !bytes.Contains(reply, []byte{'\n'}) {
		n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
		for _, got := range rights(oob[:oobn]) {
			if fd < 0 {
				fd = got
				unix.CloseOnExec(fd)
			} else {
				unix.Close(got)
			}
		}
		reply = append(reply, buf[:n]...)
		if err != nil || len(reply) > maxReply {
			closeFD(fd)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil, -1, &Error{Op: command, Errno: syscall.ETIMEDOUT, Message: "no reply within five seconds"}
			}
			if err == nil || errors.Is(err, io.EOF) {
				return nil, -1, fmt.Errorf("%w: %s: connection ended before a reply", ErrProtocol, command)
			}
			return nil, -1, fmt.Errorf("fips native %s: %w", command, err)
		}
	}
	reply = reply[:bytes.IndexByte(reply, '\n')]
	data, err := decodeReply(command, reply)
	if err != nil {
		closeFD(fd)
		return nil, -1, err
	}
	if fd < 0 {
		return nil, -1, fmt.Errorf("%w: %s reply carried no descriptor", ErrProtocol, command)
	}
	return data, fd, nil
}

func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
