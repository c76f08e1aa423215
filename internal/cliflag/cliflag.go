// Package cliflag holds the command-line parsing that eventlite's CLI and
// the replay subcommand a service mounts (replay/replaycmd) share, so that
// both accept flags in the same places.
//
// It knows no engine.
package cliflag

import "flag"

// ParseInterleaved parses args with fs and returns the positional
// arguments, letting flags come before, between and after them
// ("append STREAM --type T" and "append --type T STREAM"). A FlagSet stops
// at the first positional argument, so it parses again after each one.
// "--" ends the flags: what follows is positional even if it starts with
// "-".
func ParseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// Parse consumed a "--" when the argument before rest is one. (A
		// flag whose value is "--", as in "--db -- x", looks the same and
		// also ends the flags; "--db=--" does not.)
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
