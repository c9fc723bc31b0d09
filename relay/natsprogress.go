package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ProgressBucket is the JetStream key-value bucket where the NATS sink
// keeps each relay's progress past its last message (Advance): one key
// per relayed stream (ProgressKey), beside the consumers' state NATS
// keeps, not in the stream's config, which an operator owns and whose
// every change a clustered JetStream replicates through its meta layer.
// The first relay that records a progress creates it (file storage, one
// value per key); an operator may create it first (e.g. with replicas).
const ProgressBucket = "SECKILL_RELAY_PROGRESS"

// ProgressKey returns the key of stream's progress in ProgressBucket:
// the stream name, each byte other than [A-Za-z0-9_-] written "=" and two
// hex digits (a stream name may hold characters a key may not: "%", "@").
func ProgressKey(stream string) string {
	var b strings.Builder
	for i := 0; i < len(stream); i++ {
		switch c := stream[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "=%02X", c)
		}
	}
	return b.String()
}

// Progress is the value of a stream's key in ProgressBucket: the relay
// read the feed to Cursor while the stream, created at StreamCreated,
// held LastSeq as its last sequence. A message stored since (a later last
// sequence) or another stream under the same name (a later creation)
// makes it stale: Resume then goes on from the stream's last message.
type Progress struct {
	StreamCreated time.Time `json:"stream_created"`
	LastSeq       uint64    `json:"last_seq"`
	Cursor        string    `json:"cursor"`
}

// MetadataProgress is the key of a stream's config metadata that holds a
// progress as "<last sequence> <cursor>" (how a relay recorded it before
// ProgressBucket). Resume reads it when the bucket has no progress for
// the stream, so that a relay of chosen types moved to the bucket does not
// read again the records it left out; the sink never writes it.
const MetadataProgress = "seckill_relay_progress"

// ErrSinkMoved is what a sink's error wraps when another relay changed
// the sink since this one's Resume (NATSSink.Advance: the progress's
// revision is not the one it read): the relay resumes from the sink
// instead of overwriting what the other recorded.
var ErrSinkMoved = errors.New("relay: another relay changed the sink")

// readProgress returns the progress ProgressBucket holds for the stream
// described by info (nil: no stream), "" when none applies, and
// remembers the key's revision for Advance (0: no key). A value that is
// no Progress (written by hand) is not used, and Advance replaces it.
func (s *NATSSink) readProgress(ctx context.Context, info *jetstream.StreamInfo) (string, error) {
	s.progressRev = 0
	kv, err := s.js.KeyValue(ctx, ProgressBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return s.metadataProgress(info), nil
	}
	if err != nil {
		return "", fmt.Errorf("progress bucket %s: %w", ProgressBucket, err)
	}
	s.kv = kv
	entry, err := kv.Get(ctx, ProgressKey(s.name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return s.metadataProgress(info), nil
	}
	if err != nil {
		return "", fmt.Errorf("progress of stream %s in bucket %s: %w", s.name, ProgressBucket, err)
	}
	s.progressRev = entry.Revision()
	var p Progress
	if info == nil || json.Unmarshal(entry.Value(), &p) != nil || !p.StreamCreated.Equal(info.Created) || p.LastSeq != info.State.LastSeq {
		return "", nil
	}
	return p.Cursor, nil
}

// metadataProgress returns the progress the stream's config metadata
// holds (MetadataProgress) if no message was stored after it, else "".
func (s *NATSSink) metadataProgress(info *jetstream.StreamInfo) string {
	if info == nil {
		return ""
	}
	seq, cursor, ok := strings.Cut(info.Config.Metadata[MetadataProgress], " ")
	if !ok || seq != strconv.FormatUint(info.State.LastSeq, 10) {
		return ""
	}
	return cursor
}

// Advance records cursor in ProgressBucket (created if missing) with the
// stream's last sequence as the relay knows it and the stream's creation:
// a message stored since makes Resume read that message instead. It
// writes only over the revision Resume read (or it wrote since): when
// another relay recorded a progress in between, it returns an error
// wrapping ErrSinkMoved and records nothing. One key-value write, which
// the relay makes at most once a second (advanceEvery).
func (s *NATSSink) Advance(ctx context.Context, cursor string) error {
	if err := s.find(ctx); err != nil || s.stream == nil {
		return err
	}
	if s.kv == nil {
		kv, err := s.progressBucket(ctx)
		if err != nil {
			return err
		}
		s.kv = kv
	}
	value, err := json.Marshal(Progress{StreamCreated: s.created, LastSeq: s.lastSeq, Cursor: cursor})
	if err != nil {
		return err
	}
	key := ProgressKey(s.name)
	var rev uint64
	if s.progressRev == 0 {
		rev, err = s.kv.Create(ctx, key, value)
	} else {
		rev, err = s.kv.Update(ctx, key, value, s.progressRev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("%w: the progress of stream %s in bucket %s is not at the revision this relay read (%d): is the stream this relay's alone?",
			ErrSinkMoved, s.name, ProgressBucket, s.progressRev)
	}
	if err != nil {
		return fmt.Errorf("recording the relay's progress in bucket %s: %w", ProgressBucket, err)
	}
	s.progressRev = rev
	return nil
}

// progressBucket returns ProgressBucket, creating it if it does not
// exist. It never changes the config of a bucket that exists.
func (s *NATSSink) progressBucket(ctx context.Context) (jetstream.KeyValue, error) {
	kv, err := s.js.KeyValue(ctx, ProgressBucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	kv, err = s.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ProgressBucket, History: 1, Storage: jetstream.FileStorage,
		Description: "seckill-relay: each relayed stream's progress past its last message"})
	if errors.Is(err, jetstream.ErrBucketExists) { // another relay created it first
		return s.js.KeyValue(ctx, ProgressBucket)
	}
	if err != nil {
		return nil, fmt.Errorf("creating bucket %s: %w", ProgressBucket, err)
	}
	return kv, nil
}
