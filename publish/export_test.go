package publish

// Clock is the relay's clock, for the tests' fake one.
type Clock = clock

// WithTestHooks returns o with the relay's clock and jitter seed set
// (seed 0: random).
func WithTestHooks(o Options, c Clock, seed uint64) Options {
	o.clock, o.seed = c, seed
	return o
}
