package tree

// Config is node.tree.*, in upstream's units. Its fields match
// config.TreeConfig one for one, so a value of that type converts directly.
type Config struct {
	// AnnounceMinIntervalMs is the least time between two TreeAnnounces to
	// one peer; a send inside it is marked pending and flushed by Tick.
	AnnounceMinIntervalMs uint64
	// ParentHysteresis is the fraction by which a candidate's effective
	// depth must undercut the current parent's before a discretionary
	// switch; clamped to [0, 1].
	ParentHysteresis float64
	// HoldDownSecs suppresses discretionary switches after any parent
	// (re)declaration; 0 disables.
	HoldDownSecs uint64
	// ReevalIntervalSecs is the period of the tick-driven re-evaluation and
	// re-broadcast (only with two or more peers); 0 disables.
	ReevalIntervalSecs uint64
	// FlapThreshold parent changes within FlapWindowSecs engage dampening
	// for FlapDampeningSecs (capped at one year).
	FlapThreshold     uint32
	FlapWindowSecs    uint64
	FlapDampeningSecs uint64
}

// DefaultConfig is upstream's default node.tree block.
func DefaultConfig() Config {
	return Config{
		AnnounceMinIntervalMs: 500,
		ParentHysteresis:      0.2,
		HoldDownSecs:          30,
		ReevalIntervalSecs:    60,
		FlapThreshold:         4,
		FlapWindowSecs:        60,
		FlapDampeningSecs:     120,
	}
}
