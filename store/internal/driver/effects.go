package driver

import "context"

// Effects is the effect ledger: one row per side effect on an outside
// system, keyed by tenant and key. The store decides every step (which
// state may follow which, approvals, expiry); a driver reads and writes
// rows. A step reads a row and writes it back changed: ReserveEffect and
// UpdateEffect run the store's decision between the read and the write,
// and a driver whose writers do not serialize locks the row as it reads
// it (SELECT ... FOR UPDATE), so that two steps on one effect never both
// start from the same state.
type Effects interface {
	// Effect reads one effect; false when there is none.
	Effect(ctx context.Context, q ReadQuerier, tenant, key string) (EffectRow, bool, error)
	// ListEffects lists the effects of tenant (every tenant's for "") in
	// one of states (every state for none), oldest update first, then by
	// tenant and key.
	ListEffects(ctx context.Context, q ReadQuerier, tenant string, states []string) ([]EffectRow, error)
	// ReserveEffect inserts e unless its tenant and key exist (created
	// reports which), reads the row as stored, and passes it to decide
	// (nil: nothing to decide). When decide returns true, the row's
	// mutable columns are written as decide left them (see UpdateEffect);
	// when it returns an error, the call returns it as it is, and the
	// caller undoes the insert by ending its transaction. It returns the
	// row as it stands at the end.
	ReserveEffect(ctx context.Context, q Querier, e EffectRow, decide func(cur *EffectRow) (bool, error)) (row EffectRow, created bool, err error)
	// UpdateEffect reads the effect, passes it to decide, and, when decide
	// returns true, writes its mutable columns as decide left them: state,
	// provider reference, attempts, last error, updated, started,
	// requested and decided times, decider and reason. The rest (kind,
	// resource, arguments, approval settings) never change. An error from
	// decide is returned as it is, nothing written. found is false, decide
	// not called, when there is no such effect.
	UpdateEffect(ctx context.Context, q Querier, tenant, key string, decide func(cur *EffectRow) (bool, error)) (row EffectRow, found bool, err error)
}

// EffectRow is one row of the effect ledger. Times are unix nanoseconds,
// 0 for none; ApprovalValidFor is in nanoseconds, 0 for forever; Args is
// the canonical JSON, "" for none.
type EffectRow struct {
	Tenant, Key      string
	State            string
	ProviderRef      string
	Attempts         int
	LastError        string
	CreatedAt        int64
	UpdatedAt        int64
	StartedAt        int64
	Kind             string
	Resource         string
	Summary          string
	Args             string
	NeedsApproval    bool
	ApprovalValidFor int64
	RequestedBy      string
	RequestedAt      int64
	DecidedBy        string
	DecidedAt        int64
	Reason           string
}
