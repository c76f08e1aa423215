package pgdriver

import (
	"context"

	"github.com/eventlite/eventlite/store/internal/driver"
)

// Not yet built on PostgreSQL: every method of this file's areas
// answers driver.ErrUnsupported until it is.

func (Exec) Effect(_ context.Context, _ driver.ReadQuerier, _ string, _ string) (r0 driver.EffectRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ListEffects(_ context.Context, _ driver.ReadQuerier, _ string, _ []string) (r0 []driver.EffectRow, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) ReserveEffect(_ context.Context, _ driver.Querier, _ driver.EffectRow, _ func(cur *driver.EffectRow) (bool, error)) (r0 driver.EffectRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}

func (Exec) UpdateEffect(_ context.Context, _ driver.Querier, _ string, _ string, _ func(cur *driver.EffectRow) (bool, error)) (r0 driver.EffectRow, r1 bool, err error) {
	err = driver.ErrUnsupported
	return
}
