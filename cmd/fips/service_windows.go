//go:build windows

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// serviceName is the Windows service's name, as upstream registers it.
const serviceName = "fips"

const (
	serviceDisplayName = "FIPS Mesh Network Daemon"
	serviceDescription = "FIPS mesh networking daemon (fips-go)"
	// configEnv names the configuration the service reads, as upstream's
	// install script sets it machine-wide.
	configEnv = "FIPS_CONFIG"
)

func serviceCommand(f serviceFlags, cfgPath string, stdout, stderr io.Writer) error {
	switch {
	case f.install:
		return installService(cfgPath, stdout)
	case f.uninstall:
		return uninstallService(stdout)
	default:
		if cfgPath == "" {
			cfgPath = os.Getenv(configEnv)
		}
		return svc.Run(serviceName, &handler{cfgPath: cfgPath, stderr: stderr})
	}
}

// installService registers this executable, started with --service (and
// -c FILE when given), to start automatically. Installing over an existing
// registration updates it, as upstream does.
func installService(cfgPath string, stdout io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	exe, err = filepath.Abs(exe)
	if err != nil {
		return err
	}
	args := []string{"--service"}
	if cfgPath != "" {
		abs, err := filepath.Abs(cfgPath)
		if err != nil {
			return err
		}
		args = append(args, "--config", abs)
	}
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("connect to the service manager (run as Administrator): %w", err)
	}
	defer m.Disconnect()
	cfg := mgr.Config{DisplayName: serviceDisplayName, Description: serviceDescription,
		StartType: mgr.StartAutomatic, ErrorControl: mgr.ErrorNormal}
	s, err := m.OpenService(serviceName)
	if err == nil {
		defer s.Close()
		fmt.Fprintf(stdout, "Service %q already exists, updating its configuration.\n", serviceName)
		cfg.BinaryPathName = windows.EscapeArg(exe)
		for _, a := range args {
			cfg.BinaryPathName += " " + windows.EscapeArg(a)
		}
		if err := s.UpdateConfig(cfg); err != nil {
			return fmt.Errorf("update service: %w", err)
		}
	} else {
		s, err = m.CreateService(serviceName, exe, cfg, args...)
		if err != nil {
			return fmt.Errorf("create service: %w", err)
		}
		defer s.Close()
	}
	fmt.Fprintf(stdout, "Service %q installed. Start it with: sc start %s\n", serviceName, serviceName)
	if cfgPath == "" {
		fmt.Fprintf(stdout, "It reads %%%s%% (set by install-service.ps1), else the standard search paths.\n", configEnv)
	}
	return nil
}

// uninstallService stops the service if it runs and deletes it.
func uninstallService(stdout io.Writer) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("connect to the service manager (run as Administrator): %w", err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(serviceName)
	if err != nil {
		return fmt.Errorf("open service %q: %w", serviceName, err)
	}
	defer s.Close()
	if st, err := s.Query(); err == nil && st.State != svc.Stopped {
		fmt.Fprintln(stdout, "Stopping service...")
		if _, err := s.Control(svc.Stop); err == nil {
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
				if st, err := s.Query(); err != nil || st.State == svc.Stopped {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	if err := s.Delete(); err != nil {
		return fmt.Errorf("delete service: %w", err)
	}
	fmt.Fprintf(stdout, "Service %q uninstalled.\n", serviceName)
	return nil
}

// handler runs the daemon under the service control manager until Stop or
// Shutdown.
type handler struct {
	cfgPath string
	stderr  io.Writer
}

func (h *handler) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runDaemon(ctx, h.cfgPath, h.stderr) }()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case err := <-done:
			status <- svc.Status{State: svc.StopPending}
			if err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintf(h.stderr, "fips: %v\n", err)
				return false, 1
			}
			return false, 0
		case r := <-req:
			switch r.Cmd {
			case svc.Interrogate:
				status <- r.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending}
				cancel()
			}
		}
	}
}
