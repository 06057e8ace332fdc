//go:build !linux

package main

import (
	"context"
	"errors"

	"github.com/fips-go/fips/testing/bench"
)

func execute(context.Context, bench.Config) (bench.Run, error) {
	return bench.Run{}, errors.New("the benchmark suite needs Linux network namespaces")
}
