package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/user"
	"text/tabwriter"
	"time"

	"github.com/eventlite/eventlite/internal/effectjson"
	"github.com/eventlite/eventlite/store"
	"github.com/eventlite/eventlite/store/effect"
)

var effectsCommand = &command{
	name:    "effects",
	args:    []string{"ACTION"},
	maxArgs: 2,
	summary: "list effects, approve or reject those that wait for a person",
	usage:   "eventlite effects list [--awaiting] [--json]\neventlite effects approve KEY --args-hash HASH [--by NAME]\neventlite effects reject KEY [--reason TEXT] [--by NAME]",
	about: `The effect ledger records each side effect a service makes on an outside
system (an email, a refund, a deletion) once per tenant and key. An effect
that needs a person's approval waits in AWAITING_APPROVAL with its exact
arguments; an approval names their hash, so it covers those arguments and no
others. Approval runs nothing: the service runs the effect on its next run of
the key (effect.Ledger.Do) or with ResumeApproved. Only --tenant's effects.
  list             the effects, oldest update first (with --awaiting only those
                   AWAITING_APPROVAL). It only reads and never creates a file.
                   With --json one object per line:
  {"tenant":"default","key":"refund:o-1","state":"AWAITING_APPROVAL","kind":"external",
   "resource":"order/o-1","summary":"refund 12.50","args":{"amount":1250},
   "args_hash":"<64 hex>","requested_by":"support-bot","requested_at":"2025-01-02T03:04:05Z",
   "decided_by":"","decided_at":"","reason":"","attempts":0,"last_error":"",
   "provider_ref":"","created":"2025-01-02T03:04:05Z","updated":"2025-01-02T03:04:05Z",
   "erasure_key":"","args_erased":false,"args_encrypted":false}
                   args are the stored RFC 8785 canonical JSON (null: none);
                   erasure_key names the subject whose data they hold
                   (stored encrypted with its key): after 'eventlite forget'
                   args_erased is true, args null and last_error "" for good;
                   without --master-key-file args_encrypted is true and they
                   are not shown;
                   args_hash is the SHA-256 of exactly those bytes, in 64
                   lowercase hex digits (printf '%s' ARGS | sha256sum). Times
                   are RFC 3339 UTC, "" when unset.
  approve KEY      approve the effect's arguments: --args-hash must be their
                   hash as listed. Approving an APPROVED effect again with the
                   right hash changes nothing and keeps the first approver.
  reject KEY       reject it for good (from AWAITING_APPROVAL or APPROVED),
                   with --reason.
--by names who decides (default: the OS user name). Names are declared, not
authenticated: anyone who can write the database file can approve.
'eventlite serve' offers the same over HTTP (GET /v1/tenants/T/effects, POST
.../effects/KEY/approve and .../reject; see docs/http.md#effects).
Exit codes, in the order checked: no database file, or no effect KEY in the
tenant, 5; an effect in a state other than AWAITING_APPROVAL or APPROVED, 4
(the message names the state); a hash other than the recorded one, malformed
included, 4, and nothing changes; a name or reason with control characters,
invalid UTF-8 or over 1024 bytes, 4.`,
	new: func() runner { return &effectsCmd{} },
}

type effectsCmd struct {
	awaiting bool
	argsHash string
	hashSet  bool
	by       string
	reason   string
	flagsSet map[string]bool
}

func (x *effectsCmd) flags(fs *flag.FlagSet) {
	x.flagsSet = map[string]bool{}
	fs.BoolVar(&x.awaiting, "awaiting", false, "with list: only the effects AWAITING_APPROVAL")
	fs.Func("args-hash", "with approve: the SHA-256 `HASH` of the arguments approved, as listed", func(v string) error {
		x.argsHash, x.hashSet = v, true
		return nil
	})
	fs.Func("by", "with approve and reject: who decides, `NAME` (default: the OS user name)", func(v string) error {
		x.by, x.flagsSet["by"] = v, true
		return nil
	})
	fs.Func("reason", "with reject: why, `TEXT`", func(v string) error {
		x.reason, x.flagsSet["reason"] = v, true
		return nil
	})
}

func (x *effectsCmd) run(ctx context.Context, c *cli, args []string) error {
	usage := func(format string, a ...any) error {
		return &usageError{cmd: effectsCommand, err: fmt.Errorf("effects: "+format, a...)}
	}
	action := args[0]
	switch {
	case action != "list" && action != "approve" && action != "reject":
		return usage("unknown action %q: want list, approve or reject", action)
	case action == "list" && len(args) > 1:
		return usage("list takes no arguments")
	case action != "list" && len(args) != 2:
		return usage("%s takes KEY", action)
	case action != "list" && x.awaiting:
		return usage("--awaiting goes with list")
	case action != "approve" && x.hashSet:
		return usage("--args-hash goes with approve")
	case action == "approve" && !x.hashSet:
		return usage("approve needs --args-hash HASH: the hash of the arguments you approve, from 'eventlite effects list'")
	case action != "reject" && x.flagsSet["reason"]:
		return usage("--reason goes with reject")
	case action == "list" && x.flagsSet["by"]:
		return usage("--by goes with approve and reject")
	}
	tenant := string(c.global.tenant)
	if action == "list" {
		return c.withReader(ctx, func(s *store.Store) error {
			f := effect.Filter{Tenant: tenant}
			if x.awaiting {
				f.States = []effect.State{effect.AwaitingApproval}
			}
			es, err := effect.For(s).List(ctx, f)
			if err != nil {
				return err
			}
			return x.print(c, es)
		})
	}
	key := args[1]
	by := x.by
	if !x.flagsSet["by"] {
		u, err := user.Current()
		if err != nil || u.Username == "" {
			return usage("cannot tell the OS user name (%v): pass --by NAME", err)
		}
		by = u.Username
	}
	var (
		e         effect.Effect
		unchanged bool
	)
	err := c.withStore(ctx, false, func(s *store.Store) error {
		before, _, err := effect.For(s).Get(ctx, tenant, key)
		if err != nil {
			return err
		}
		if action == "approve" {
			e, err = effect.For(s).Approve(ctx, effect.Approval{Tenant: tenant, Key: key, ArgsHash: x.argsHash, By: by})
			unchanged = before.State == effect.Approved
		} else {
			e, err = effect.For(s).Reject(ctx, effect.Rejection{Tenant: tenant, Key: key, Reason: x.reason, By: by})
		}
		return err
	})
	var (
		nf *effect.NotFoundError
		se *effect.StateError
	)
	switch {
	case errors.As(err, &nf):
		return &exitError{code: exitNotFound, err: fmt.Errorf("%w: list them with 'eventlite effects list' (and check --db and --tenant)", err)}
	case errors.As(err, &se):
		return &exitError{code: exitInvalid, err: fmt.Errorf("effect %q is %s: only an effect AWAITING_APPROVAL or APPROVED can be %s", key, se.State,
			map[string]string{"approve": "approved", "reject": "rejected"}[action])}
	case errors.Is(err, effect.ErrArgsHashMismatch):
		return &exitError{code: exitInvalid, err: err}
	case err != nil:
		return err
	}
	if c.global.json {
		return effectjson.Encode(c.stdout, effectjson.From(e))
	}
	switch {
	case action == "reject":
		_, err = fmt.Fprintf(c.stdout, "rejected %s by %s: it will never run\n", printable(key), printable(e.DecidedBy))
	case unchanged:
		_, err = fmt.Fprintf(c.stdout, "%s was already approved by %s at %s; nothing changed\n", printable(key), printable(e.DecidedBy), effectjson.Time(e.DecidedAt))
	default:
		_, err = fmt.Fprintf(c.stdout, "approved %s (args %s) by %s: it runs on the service's next run of its key, or effect.Ledger.ResumeApproved\n",
			printable(key), e.ArgsHash(), printable(e.DecidedBy))
	}
	return err
}

func (x *effectsCmd) print(c *cli, es []effect.Effect) error {
	if c.global.json {
		for _, e := range es {
			if err := effectjson.Encode(c.stdout, effectjson.From(e)); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	if len(es) == 0 {
		fmt.Fprintln(tw, "no effects")
		return tw.Flush()
	}
	fmt.Fprintln(tw, "KEY\tSTATE\tKIND\tRESOURCE\tREQUESTED_BY\tDECIDED_BY\tATTEMPTS\tUPDATED\tARGS_HASH\tSUMMARY")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", printable(e.Key), e.State, e.Kind, printable(e.Resource),
			printable(e.RequestedBy), printable(e.DecidedBy), e.Attempts, e.UpdatedAt.UTC().Format(time.RFC3339), e.ArgsHash(), oneLine(e.Summary))
	}
	return tw.Flush()
}
