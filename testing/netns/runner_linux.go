//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Runner is a TB for programs (the demo, the benchmark suite) rather than
// tests: Logf prints with an indent, Fatalf unwinds the goroutine running
// Run, and Cleanup functions run, last first, when Run returns — also when
// it is interrupted or fails.
type Runner struct {
	// Log receives Logf lines; nil prints to standard output.
	Log func(string)

	mu       sync.Mutex
	cleanups []func()
	once     sync.Once
}

// fatal carries a Fatalf message up to Run.
type fatal struct{ msg string }

// Logf prints one line.
func (r *Runner) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if r.Log != nil {
		r.Log(line)
		return
	}
	fmt.Println("    " + line)
}

// Fatalf stops the body of Run with the message as its error.
func (r *Runner) Fatalf(format string, args ...any) {
	panic(fatal{fmt.Sprintf(format, args...)})
}

// Cleanup registers f to run when Run returns.
func (r *Runner) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// Check stops the body of Run if ctx is done (an interrupt).
func (r *Runner) Check(ctx context.Context) {
	if ctx.Err() != nil {
		panic(fatal{"interrupted"})
	}
}

// Run runs body on its own goroutine and returns its error, the message of
// a Fatalf, or "interrupted" as soon as ctx is done. Before returning it
// runs every registered cleanup exactly once; onCleanup (if not nil) is
// called first, to say so.
func (r *Runner) Run(ctx context.Context, onCleanup func(), body func() error) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				if f, ok := v.(fatal); ok {
					done <- errors.New(f.msg)
					return
				}
				done <- fmt.Errorf("panic: %v", v)
			}
		}()
		done <- body()
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = errors.New("interrupted")
	}
	if onCleanup != nil {
		onCleanup()
	}
	r.cleanup()
	return err
}

func (r *Runner) cleanup() {
	r.once.Do(func() {
		r.mu.Lock()
		fs := r.cleanups
		r.mu.Unlock()
		for i := len(fs) - 1; i >= 0; i-- {
			fs[i]()
		}
	})
}
