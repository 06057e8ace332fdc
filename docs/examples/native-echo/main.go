//go:build linux || darwin || freebsd

// Command native-echo is an example program of the native datagram API
// (docs/native-api.md): it serves an echo on a port, or sends a message
// to a peer's echo and prints the answer, addressed by npub:port with no
// TUN device.
//
//	go run ./docs/examples/native-echo -socket /run/fips/api.sock serve 4242
//	go run ./docs/examples/native-echo -socket /run/fips/api.sock send npub1...:4242 hello
//
// It is an example, not a shipped binary: it lives under docs/ so the
// packages carry only upstream's binary names.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fips-go/fips/control/native/client"
)

func main() {
	socket := flag.String("socket", client.DefaultSocket(), "the node's native API socket (node.native_api.socket_path)")
	wait := flag.Duration("wait", 10*time.Second, "send: how long to wait for the echo")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: native-echo [-socket PATH] serve PORT | send NPUB:PORT MESSAGE...")
		flag.PrintDefaults()
	}
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var err error
	switch args := flag.Args(); {
	case len(args) == 2 && args[0] == "serve":
		err = serve(log, *socket, args[1])
	case len(args) >= 3 && args[0] == "send":
		err = send(*socket, args[1], strings.Join(args[2:], " "), *wait)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		log.Error("native-echo failed", "error", err)
		os.Exit(1)
	}
}

// serve holds port and echoes every datagram of every flow that arrives.
func serve(log *slog.Logger, socket, port string) error {
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("port %q: %w", port, err)
	}
	l, err := client.Listen(socket, uint16(p))
	if err != nil {
		return fmt.Errorf("holding port %d: %w", p, err)
	}
	defer l.Close()
	fmt.Printf("native-echo: serving %s\n", l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			return fmt.Errorf("accepting: %w", err)
		}
		go func() {
			defer c.Close()
			buf := make([]byte, max(c.MaxPayload(), 1))
			for {
				// A peer that goes quiet for a minute is done.
				c.SetReadDeadline(time.Now().Add(time.Minute))
				n, err := c.Recv(buf)
				if err != nil {
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						log.Info("flow ended", "peer", c.RemoteAddr().String(), "error", err)
					}
					return
				}
				if err := c.Send(buf[:n]); err != nil {
					log.Info("echo failed", "peer", c.RemoteAddr().String(), "error", err)
					return
				}
				fmt.Printf("native-echo: returned %d bytes to %s\n", n, c.RemoteAddr())
			}
		}()
	}
}

// send sends msg to addr from an ephemeral port and prints the answer,
// resending once a second until it comes: the first datagrams wait for
// the session to the peer.
func send(socket, addr, msg string, wait time.Duration) error {
	peer, err := client.ParseAddr(addr)
	if err != nil {
		return err
	}
	c, err := client.Dial(socket, 0, peer)
	if err != nil {
		return fmt.Errorf("opening a flow to %s: %w", peer, err)
	}
	defer c.Close()
	buf := make([]byte, max(c.MaxPayload(), 1))
	for end := time.Now().Add(wait); time.Now().Before(end); {
		if err := c.Send([]byte(msg)); err != nil {
			return fmt.Errorf("sending: %w", err)
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		n, err := c.Recv(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("receiving: %w", err)
		}
		fmt.Printf("%s (from %s)\n", buf[:n], c.RemoteAddr())
		return nil
	}
	return fmt.Errorf("no answer from %s within %v", peer, wait)
}
