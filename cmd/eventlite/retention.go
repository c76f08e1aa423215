package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/lifecycle"
)

var retentionCommand = &command{
	name:    "retention",
	maxArgs: 2,
	summary: "list, set or unset retention policies by stream-id prefix",
	usage:   "eventlite retention [list]\neventlite retention set PREFIX [--max-age D] [--max-count N]\neventlite retention unset PREFIX",
	about: `A retention policy keeps the streams whose id starts with PREFIX (in every
tenant; the longest matching prefix wins) only so long, so many, or both.
'eventlite scavenge' applies them: it truncates each stream a policy trims
(appending eventlite.stream.truncated, so projections see it), then removes
what lies before. A policy never trims a stream to nothing: its newest
event that is not eventlite's own stays.
  list (the default) a table of PREFIX, MAX_AGE, MAX_COUNT and UPDATED; with
                     --json one object per line:
  {"prefix":"cart-","max_age":"720h0m0s","max_age_seconds":2592000,"max_count":100,"updated":"2025-01-02T03:04:05Z"}
                     (a limit a policy does not set is omitted)
  set PREFIX         set PREFIX's policy, replacing the one it had (a limit not
                     given is no limit):
      --max-age D    keep events recorded within D: a Go duration (90m, 720h)
                     or a number of days (30d)
      --max-count N  keep the N newest events whose type does not start with
                     "eventlite." (eventlite's own events do not count)
                     Zero or negative values, or neither flag, exit 2.
  unset PREFIX       drop PREFIX's policy; a prefix without one exits 5.`,
	new: func() runner { return &retentionCmd{} },
}

type retentionCmd struct {
	maxAge   time.Duration
	maxCount int64
}

func (r *retentionCmd) flags(fs *flag.FlagSet) {
	fs.Func("max-age", "with set: keep events recorded within `D` (720h, 30d)", func(v string) error {
		d, err := parseAge(v)
		if err != nil {
			return err
		}
		r.maxAge = d
		return nil
	})
	fs.Func("max-count", "with set: keep the `N` newest events (eventlite.* not counted)", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return errors.New("want a whole number above 0")
		}
		r.maxCount = n
		return nil
	})
}

// parseAge reads a max age: a Go duration or a whole number of days
// ("30d"), above zero.
func parseAge(v string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n <= 0 || n > int64(time.Duration(1<<62)/(24*time.Hour)) {
			return 0, errors.New("want a duration above 0: a Go duration (90m, 720h) or a number of days (30d)")
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			return 0, errors.New("want a duration above 0: a Go duration (90m, 720h) or a number of days (30d)")
		}
	}
	return d, nil
}

// policyOutput is one line of retention --json.
type policyOutput struct {
	Prefix        string `json:"prefix"`
	MaxAge        string `json:"max_age,omitempty"`
	MaxAgeSeconds int64  `json:"max_age_seconds,omitempty"`
	MaxCount      int64  `json:"max_count,omitempty"`
	Updated       string `json:"updated"` // RFC 3339, UTC
}

func (r *retentionCmd) run(ctx context.Context, c *cli, args []string) error {
	usage := func(format string, a ...any) error {
		return &usageError{cmd: retentionCommand, err: fmt.Errorf("retention: "+format, a...)}
	}
	action := "list"
	if len(args) > 0 {
		action = args[0]
	}
	limits := r.maxAge != 0 || r.maxCount != 0
	switch action {
	case "list":
		if len(args) > 1 {
			return usage("list takes no prefix")
		}
		if limits {
			return usage("--max-age and --max-count go with set")
		}
		return r.list(ctx, c)
	case "set":
		if len(args) != 2 {
			return usage("set takes a PREFIX")
		}
		if !limits {
			return usage("set needs --max-age D, --max-count N or both")
		}
		return c.withStore(ctx, false, func(s *store.Store) error {
			return lifecycle.For(s).SetRetention(ctx, lifecycle.RetentionPolicy{Prefix: args[1], MaxAge: r.maxAge, MaxCount: r.maxCount})
		})
	case "unset":
		if len(args) != 2 {
			return usage("unset takes a PREFIX")
		}
		if limits {
			return usage("--max-age and --max-count go with set")
		}
		return c.withStore(ctx, false, func(s *store.Store) error {
			return lifecycle.For(s).UnsetRetention(ctx, args[1])
		})
	}
	return usage("unknown action %q: want list, set or unset", action)
}

func (r *retentionCmd) list(ctx context.Context, c *cli) error {
	var ps []lifecycle.RetentionPolicy
	err := c.withReader(ctx, func(s *store.Store) error {
		var err error
		ps, err = lifecycle.For(s).Retention(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if c.global.json {
		enc := json.NewEncoder(c.stdout)
		for _, p := range ps {
			o := policyOutput{Prefix: p.Prefix, MaxCount: p.MaxCount, Updated: p.UpdatedAt.UTC().Format(time.RFC3339Nano)}
			if p.MaxAge > 0 {
				o.MaxAge, o.MaxAgeSeconds = p.MaxAge.String(), int64(p.MaxAge/time.Second)
			}
			if err := enc.Encode(o); err != nil {
				return err
			}
		}
		return nil
	}
	if len(ps) == 0 {
		fmt.Fprintln(c.stdout, "no retention policies: events are kept until a stream is deleted or truncated")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tMAX_AGE\tMAX_COUNT\tUPDATED")
	for _, p := range ps {
		age, count := "-", "-"
		if p.MaxAge > 0 {
			age = p.MaxAge.String()
		}
		if p.MaxCount > 0 {
			count = strconv.FormatInt(p.MaxCount, 10)
		}
		fmt.Fprintf(tw, "%q\t%s\t%s\t%s\n", p.Prefix, age, count, p.UpdatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}
