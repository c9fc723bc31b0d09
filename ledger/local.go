package ledger

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A campaign is either local to one cell (defined through that cell's
// admin API, uncelled: the router's default-cell path) or published across
// cells (Publish, by seckillctl cells publish), never both: the cell's
// claim (ClaimLocal) and Publish each check, in their etcd transaction,
// the keys the other creates, so of two racing, one commits and the other
// is refused. Both keys are created once and never deleted.

// ErrPublished: ClaimLocal found the campaign published across cells (its
// routing key or a SKU's keys exist). Nothing was written.
var ErrPublished = errors.New("ledger: the campaign is published across cells")

// LocalError is the refusal of a campaign another cell (or, for Publish,
// a cell) defined locally: Cell holds it. Nothing was written.
type LocalError struct {
	Campaign string
	Cell     string
}

func (e *LocalError) Error() string {
	return fmt.Sprintf("ledger: campaign %s is defined locally (uncelled, through its admin API) on cell %s: a campaign is either local to one cell or published across cells, never both",
		e.Campaign, e.Cell)
}

// LocalKey is the key a cell creates, holding its id, before it defines
// the campaign locally (ClaimLocal).
func (l *Ledger) LocalKey(campaign string) string {
	return l.prefix + "/campaigns/" + campaign + "/local"
}

// ClaimLocal records that cell defines campaign locally: it creates
// LocalKey = cell in one transaction that also checks that the campaign's
// routing key (CampaignKey) and every key of its published SKUs do not
// exist. nil when it did, or when cell claimed it before; a *LocalError
// when another cell holds it; ErrPublished (wrapped) when the campaign is
// published; any other error is etcd's (nothing is known: the caller
// defines nothing, and may ask again).
func (l *Ledger) ClaimLocal(ctx context.Context, campaign, cell string) error {
	local, routing := l.LocalKey(campaign), l.CampaignKey(campaign)
	skus := l.prefix + "/campaigns/" + campaign + "/skus/"
	resp, err := l.c.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(local), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(routing), "=", 0),
		// Over a range, etcd requires every key to pass; none passes.
		clientv3.Compare(clientv3.CreateRevision(skus), "=", 0).WithPrefix(),
	).Then(clientv3.OpPut(local, cell)).Else(clientv3.OpGet(local)).Commit()
	if err != nil {
		return err
	}
	if resp.Succeeded {
		return nil
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		if string(kvs[0].Value) == cell {
			return nil
		}
		return &LocalError{Campaign: campaign, Cell: string(kvs[0].Value)}
	}
	return fmt.Errorf("%w: campaign %s", ErrPublished, campaign)
}
