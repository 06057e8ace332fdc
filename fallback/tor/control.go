package tor

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// A client of Tor's control protocol (control-spec.txt): enough to
// authenticate and to run an ephemeral onion service (ADD_ONION) that
// lives as long as the control connection.

// Errors of the control protocol.
var (
	// ErrControlUnreachable: no connection to control_addr.
	ErrControlUnreachable = errors.New("tor control port unreachable (is Tor running with ControlPort or ControlSocket at control_addr?)")
	// ErrControlAuth: Tor refused AUTHENTICATE, or the cookie could not be read.
	ErrControlAuth = errors.New("tor control port authentication failed")
	// ErrControlSyntax: a reply that does not follow the protocol.
	ErrControlSyntax = errors.New("malformed Tor control reply")
	// ErrAuthConfig: control_auth is not cookie, cookie:PATH or password:SECRET.
	ErrAuthConfig = errors.New("invalid control_auth")
)

// Limits on one reply, so a confused peer cannot make us buffer without end.
const (
	maxControlLine  = 8 << 10
	maxControlLines = 512
	controlTimeout  = 30 * time.Second
	cookieLen       = 32
)

// StatusError is a reply whose status is not 2xx.
type StatusError struct {
	Code int
	Text string
}

func (e *StatusError) Error() string { return fmt.Sprintf("Tor control reply %d %s", e.Code, e.Text) }

// Reply is one control-port reply: its status, its final line's text, and
// every other line's (mid-reply "-" lines, and "+" data blocks with the
// dot-stuffing removed).
type Reply struct {
	Code  int
	Text  string
	Lines []string
}

// Values returns the KEY=VALUE pairs among the reply's lines.
func (r Reply) Values() map[string]string {
	m := map[string]string{}
	for _, l := range append(r.Lines, r.Text) {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// readLine reads one CRLF- (or LF-) terminated line of at most
// maxControlLine bytes.
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		frag, more, err := r.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", fmt.Errorf("%w: connection closed mid-reply", ErrControlSyntax)
			}
			return "", err
		}
		b = append(b, frag...)
		if len(b) > maxControlLine {
			return "", fmt.Errorf("%w: line longer than %d bytes", ErrControlSyntax, maxControlLine)
		}
		if !more {
			return string(b), nil
		}
	}
}

// ReadReply reads one reply.
func ReadReply(r *bufio.Reader) (Reply, error) {
	var rep Reply
	for n := 0; ; n++ {
		if n >= maxControlLines {
			return rep, fmt.Errorf("%w: more than %d lines", ErrControlSyntax, maxControlLines)
		}
		line, err := readLine(r)
		if err != nil {
			return rep, err
		}
		if len(line) < 4 {
			return rep, fmt.Errorf("%w: short line %q", ErrControlSyntax, line)
		}
		code, err := strconv.Atoi(line[:3])
		if err != nil || code < 100 || line[0] > '6' {
			return rep, fmt.Errorf("%w: status %q", ErrControlSyntax, line[:3])
		}
		if n > 0 && code != rep.Code {
			return rep, fmt.Errorf("%w: status %d within a %d reply", ErrControlSyntax, code, rep.Code)
		}
		rep.Code = code
		text := line[4:]
		switch line[3] {
		case ' ':
			rep.Text = text
			return rep, nil
		case '-':
			rep.Lines = append(rep.Lines, text)
		case '+':
			rep.Lines = append(rep.Lines, text)
			for {
				n++
				if n >= maxControlLines {
					return rep, fmt.Errorf("%w: more than %d lines", ErrControlSyntax, maxControlLines)
				}
				d, err := readLine(r)
				if err != nil {
					return rep, err
				}
				if d == "." {
					break
				}
				rep.Lines = append(rep.Lines, strings.TrimPrefix(d, "."))
			}
		default:
			return rep, fmt.Errorf("%w: separator %q", ErrControlSyntax, line[3])
		}
	}
}

// Auth is how we authenticate to the control port.
type Auth struct {
	CookiePath string // cookie authentication: the 32-byte cookie file
	Password   string // password authentication when CookiePath is ""
}

// ParseAuth reads control_auth as upstream does: "cookie" (the cookie at
// cookiePath), "cookie:PATH", or "password:SECRET".
func ParseAuth(s, cookiePath string) (Auth, error) {
	switch {
	case s == "cookie":
		return Auth{CookiePath: cookiePath}, nil
	case strings.HasPrefix(s, "cookie:") && len(s) > len("cookie:"):
		return Auth{CookiePath: s[len("cookie:"):]}, nil
	case strings.HasPrefix(s, "password:"):
		return Auth{Password: s[len("password:"):]}, nil
	}
	return Auth{}, fmt.Errorf("%w: want cookie, cookie:/path or password:secret", ErrAuthConfig)
}

// controlConn is an open control connection.
type controlConn struct {
	nc net.Conn
	r  *bufio.Reader
}

// isUnixPath says whether a control_addr names a Unix socket (upstream:
// it starts with / or ./).
func isUnixPath(addr string) bool {
	return strings.HasPrefix(addr, "/") || strings.HasPrefix(addr, "./")
}

// dialControl connects to the control port at addr: a Unix socket path or host:port.
func dialControl(ctx context.Context, addr string) (*controlConn, error) {
	network := "tcp"
	if isUnixPath(addr) {
		network = "unix"
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrControlUnreachable, addr, err)
	}
	return &controlConn{nc: nc, r: bufio.NewReaderSize(nc, 4096)}, nil
}

func (c *controlConn) Close() error { return c.nc.Close() }

// do sends one command line and reads its reply; a non-2xx status is a
// *StatusError.
func (c *controlConn) do(cmd string) (Reply, error) {
	_ = c.nc.SetDeadline(time.Now().Add(controlTimeout))
	defer c.nc.SetDeadline(time.Time{})
	if _, err := io.WriteString(c.nc, cmd+"\r\n"); err != nil {
		return Reply{}, fmt.Errorf("tor control: %w", err)
	}
	rep, err := ReadReply(c.r)
	if err != nil {
		return rep, fmt.Errorf("tor control: %w", err)
	}
	if rep.Code/100 != 2 {
		return rep, &StatusError{Code: rep.Code, Text: rep.Text}
	}
	return rep, nil
}

// authenticate runs AUTHENTICATE with a.
func (c *controlConn) authenticate(a Auth) error {
	var cmd string
	if a.CookiePath != "" {
		cookie, err := os.ReadFile(a.CookiePath)
		if err != nil {
			return fmt.Errorf("%w: read cookie: %w", ErrControlAuth, err)
		}
		if len(cookie) != cookieLen {
			return fmt.Errorf("%w: cookie file %s holds %d bytes, want %d", ErrControlAuth, a.CookiePath, len(cookie), cookieLen)
		}
		cmd = "AUTHENTICATE " + hex.EncodeToString(cookie)
	} else {
		cmd = "AUTHENTICATE " + quoteControl(a.Password)
	}
	if _, err := c.do(cmd); err != nil {
		var se *StatusError
		if errors.As(err, &se) {
			return fmt.Errorf("%w: %w", ErrControlAuth, err)
		}
		return err
	}
	return nil
}

// quoteControl is a control-protocol QuotedString.
func quoteControl(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", `\r`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// addOnion creates an ephemeral v3 onion service whose virtual port
// virtPort leads to target ("127.0.0.1:PORT"). key is "NEW:ED25519-V3"
// for a new service or a key an earlier call returned, so a service
// re-created after Tor restarts keeps its address. It returns the
// service's onion address and its key.
func (c *controlConn) addOnion(key string, virtPort uint16, target string) (string, string, error) {
	rep, err := c.do(fmt.Sprintf("ADD_ONION %s Port=%d,%s", key, virtPort, target))
	if err != nil {
		return "", "", err
	}
	v := rep.Values()
	id := v["ServiceID"]
	onion, _, err := ParseOnion(id + onionSuffix)
	if err != nil {
		return "", "", fmt.Errorf("ADD_ONION: %w", err)
	}
	if pk := v["PrivateKey"]; pk != "" {
		key = pk
	}
	return onion, key, nil
}
