package main

import (
	"context"
	"fmt"

	"github.com/fips-go/fips/testing/bench"
	"github.com/fips-go/fips/testing/netns"
)

func execute(ctx context.Context, cfg bench.Config) (bench.Run, error) {
	r := &netns.Runner{}
	var res bench.Run
	err := r.Run(ctx, func() { fmt.Println("cleaning up: daemons, namespaces, veths, files") }, func() error {
		var err error
		res, err = bench.Execute(ctx, r, cfg)
		return err
	})
	return res, err
}
