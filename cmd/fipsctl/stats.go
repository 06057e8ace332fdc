package main

// runStats is `fipsctl stats metrics`: every counter family (show_metrics).
// Upstream's history commands (list, peers, history) need the stats
// recorder, which fips-go does not have yet.
func runStats(e *env, args []string) error {
	fs := newFlags(e, "stats", "metrics")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) != "metrics" {
		return usageError{"usage: fipsctl stats metrics"}
	}
	return query(e, "show_metrics", nil)
}
