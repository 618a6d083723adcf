package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// The users' activity logs (activity).

// Classes of activity entries (ActivityRecord.Class): each user's log is
// capped per class (TrimActivity), so that a noisy bot's trading entries
// never push out the account's own history.
const (
	// ActivityClassTrading: the trading doors' writes and refusals, the
	// budgets' refusals and the TradingView alerts received.
	ActivityClassTrading = "trading"
	// ActivityClassAccount: everything else (configuration, engines,
	// agent and broker links, alerts sent).
	ActivityClassAccount = "account"
)

// ActivityRecord is one stored entry of a user's activity log
// (protocol.ActivityEntry as the store keeps it).
type ActivityRecord struct {
	// Seq is the entry's place in the log, given by AppendActivity: it
	// grows with every entry of every user ("act_<seq>" is the entry's
	// id).
	Seq int64
	// At is when it happened (kept to the millisecond).
	At   time.Time
	Kind string
	// Class is ActivityClassTrading or ActivityClassAccount.
	Class   string
	Account string
	// SourceKind, SourceID and SourceName are the entry's source.
	SourceKind, SourceID, SourceName string
	Summary                          string
	// Detail is a JSON object; nil or empty is stored as {}.
	Detail []byte
	// Ref, when set, names the entry among the user's: a second record of
	// the same user and Ref is not written. "" records every entry.
	Ref string
}

// ActivityQuery selects entries of a user's log for ListActivity.
type ActivityQuery struct {
	// Before, when not 0, keeps the entries whose Seq is below it (the
	// next page); 0 starts at the newest.
	Before int64
	// Account, when set, keeps the entries of that account.
	Account string
	// Kinds, when set, keeps the entries of those kinds.
	Kinds []string
	// Limit bounds the entries returned; 0 or less returns none.
	Limit int
}

const activityColumns = `seq, at, kind, class, account, source_kind, source_id, source_name, summary, detail, ref`

var (
	// An entry of a user that exists, unless its ref is recorded: no
	// row is returned then, and no foreign key fails (which would end a
	// PostgreSQL transaction of several entries).
	qAppendActivity = sqlConst(`INSERT INTO activity (user_id, at, kind, class, account, source_kind, source_id, source_name,
		summary, detail, ref) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM users WHERE id = ?)
		ON CONFLICT DO NOTHING RETURNING seq`)
	qActivityByRef = sqlConst("SELECT seq FROM activity WHERE user_id = ? AND ref = ?")
	// The last seq of the chunk of pruneChunk entries after a seq, and
	// the deletion of its entries older than a time.
	qPruneChunkEnd  = sqlConst("SELECT MAX(seq) FROM (SELECT seq FROM activity WHERE seq > ? ORDER BY seq LIMIT ?) chunk")
	qPruneActivity  = sqlConst("DELETE FROM activity WHERE seq > ? AND seq <= ? AND at < ?")
	qLatestActivity = sqlConst("SELECT " + activityColumns + " FROM activity WHERE user_id = ? AND kind = ? ORDER BY seq DESC LIMIT 1")
	// The user's entries of the class from the keep+1-th newest on.
	qTrimActivity = sqlConst(`DELETE FROM activity WHERE user_id = ? AND class = ? AND seq <= (
		SELECT seq FROM activity WHERE user_id = ? AND class = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`)
)

// ActivityAppend is one entry of AppendActivities: a record for a user's
// log.
type ActivityAppend struct {
	UserID string
	Record ActivityRecord
}

// ActivityAppended is what AppendActivities did with one entry.
type ActivityAppended struct {
	// Seq is the entry's, or, when its Ref was recorded already, the
	// recorded entry's.
	Seq int64
	// Inserted is false when the entry's Ref was recorded already.
	Inserted bool
	// Err is ErrNotFound when the user does not exist (nothing written
	// for this entry).
	Err error
}

// AppendActivity implements Store.
func (s *sqlStore) AppendActivity(ctx context.Context, userID string, r ActivityRecord) (int64, bool, error) {
	got, err := s.AppendActivities(ctx, []ActivityAppend{{UserID: userID, Record: r}})
	if err != nil {
		return 0, false, err
	}
	return got[0].Seq, got[0].Inserted, got[0].Err
}

// AppendActivities implements Store: the entries are written in one
// transaction, in order.
func (s *sqlStore) AppendActivities(ctx context.Context, entries []ActivityAppend) ([]ActivityAppended, error) {
	for _, e := range entries {
		if r := e.Record; e.UserID == "" || r.Kind == "" || r.Class == "" || r.SourceKind == "" {
			return nil, errors.New("store: append activity: an entry needs a user, a kind, a class and a source kind")
		}
	}
	out := make([]ActivityAppended, len(entries))
	err := s.tx(ctx, func(tx conn) error {
		insert, err := tx.prepare(ctx, qAppendActivity)
		if err != nil {
			return err
		}
		defer insert.Close()
		for i, e := range entries {
			r := e.Record
			detail := "{}"
			if len(r.Detail) > 0 {
				detail = string(r.Detail)
			}
			var seq int64
			err := insert.QueryRowContext(ctx, e.UserID, millis(r.At), r.Kind, r.Class, r.Account, r.SourceKind, r.SourceID,
				r.SourceName, r.Summary, detail, nullable(r.Ref), e.UserID).Scan(&seq)
			switch {
			case err == nil:
				out[i] = ActivityAppended{Seq: seq, Inserted: true}
			case !errors.Is(err, sql.ErrNoRows):
				return err
			case r.Ref == "":
				out[i] = ActivityAppended{Err: ErrNotFound}
			default:
				// Its Ref is recorded already, or its user is unknown.
				err := tx.row(ctx, qActivityByRef, e.UserID, r.Ref).Scan(&seq)
				switch {
				case errors.Is(err, sql.ErrNoRows):
					out[i] = ActivityAppended{Err: ErrNotFound}
				case err != nil:
					return err
				default:
					out[i] = ActivityAppended{Seq: seq}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("append activity", err)
	}
	return out, nil
}

// ListActivity implements Store.
func (s *sqlStore) ListActivity(ctx context.Context, userID string, q ActivityQuery) ([]ActivityRecord, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("SELECT " + activityColumns + " FROM activity WHERE user_id = ?")
	args := []any{userID}
	if q.Before > 0 {
		b.WriteString(" AND seq < ?")
		args = append(args, q.Before)
	}
	if q.Account != "" {
		b.WriteString(" AND account = ?")
		args = append(args, q.Account)
	}
	if len(q.Kinds) > 0 {
		b.WriteString(" AND kind IN (?" + strings.Repeat(", ?", len(q.Kinds)-1) + ")")
		for _, k := range q.Kinds {
			args = append(args, k)
		}
	}
	b.WriteString(" ORDER BY seq DESC LIMIT ?")
	args = append(args, q.Limit)
	out, err := all(ctx, s.conn, scanActivity, sqlText(b.String()), args...)
	return out, wrap("list activity", err)
}

// LatestActivity implements Store.
func (s *sqlStore) LatestActivity(ctx context.Context, userID, kind string) (ActivityRecord, error) {
	r, err := scanActivity(s.row(ctx, qLatestActivity, userID, kind))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return ActivityRecord{}, wrap("read latest activity", err)
	}
	return r, nil
}

// PruneActivity implements Store.
//
// The log has no index by time: the entries are visited by seq from the
// oldest, pruneChunk at a time, until a chunk holds none older than
// before (an entry is written soon after it happens, so the entries after
// such a chunk are newer too).
func (s *sqlStore) PruneActivity(ctx context.Context, before time.Time) (int, error) {
	total := 0
	var after int64
	for {
		var end sql.NullInt64
		if err := s.row(ctx, qPruneChunkEnd, after, pruneChunk).Scan(&end); err != nil {
			return total, wrap("prune activity", err)
		}
		if !end.Valid {
			return total, nil
		}
		n, err := changed(s.exec(ctx, qPruneActivity, after, end.Int64, millis(before)))
		if err != nil {
			return total, wrap("prune activity", err)
		}
		total += n
		if n == 0 {
			return total, nil
		}
		after = end.Int64
	}
}

// pruneChunk is how many entries PruneActivity visits per statement.
const pruneChunk = 1000

// TrimActivity implements Store.
func (s *sqlStore) TrimActivity(ctx context.Context, userID, class string, keep int) (int, error) {
	if keep < 0 {
		return 0, errors.New("store: trim activity: keep must not be negative")
	}
	n, err := changed(s.exec(ctx, qTrimActivity, userID, class, userID, class, keep))
	return n, wrap("trim activity", err)
}

func scanActivity(row scanner) (ActivityRecord, error) {
	var r ActivityRecord
	var at int64
	var detail string
	var ref sql.NullString
	err := row.Scan(&r.Seq, &at, &r.Kind, &r.Class, &r.Account, &r.SourceKind, &r.SourceID, &r.SourceName, &r.Summary, &detail, &ref)
	r.At, r.Detail, r.Ref = fromMS(at), []byte(detail), ref.String
	return r, err
}
