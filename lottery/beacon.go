package lottery

import (
	"errors"
	"fmt"
)

// Beacon sources. drand's quicknet (League of Entropy) publishes round R at
// QuicknetGenesis + (R-1) × QuicknetPeriod seconds Unix time; its
// randomness is SHA-256 of the round's BLS signature, 32 bytes
// (https://drand.love/docs/specification, chain info of quicknet).
const (
	SourceDrandQuicknet = "drand-quicknet"
	QuicknetGenesis     = 1692803367 // s, Unix time of round 1
	QuicknetPeriod      = 3          // s between rounds
)

// FallbackRounds is how many rounds after the named round the stated
// fallback round comes: 1200 quicknet rounds, one hour. If round R is not
// published in time the draw may use round R+FallbackRounds instead
// (RFC 3797, section 5.2, states such a fallback in advance); the evidence says which
// round was used, and an auditor can see on drand's public record whether
// round R was in fact out.
const FallbackRounds = 1200

// MaxRound bounds a beacon round so round times stay far inside int64 ms.
const MaxRound = 1 << 40

// Errors of the beacon rules.
var (
	// ErrUnknownSource: the beacon source is not one the rules know.
	ErrUnknownSource = errors.New("unknown beacon source")
	// ErrBadRound: the round is 0 or above MaxRound.
	ErrBadRound = errors.New("beacon round out of range")
	// ErrBeaconLength: the randomness is not Size bytes.
	ErrBeaconLength = errors.New("beacon randomness must be 32 bytes")
	// ErrWrongRound: the round given at the draw is neither the named round
	// nor its fallback.
	ErrWrongRound = errors.New("beacon round is neither the named round nor its fallback")
)

// Beacon names the public randomness round a draw uses.
type Beacon struct {
	Source string
	Round  uint64
}

// TimeMs returns when the round is published, in Unix ms, or an error
// wrapping ErrUnknownSource or ErrBadRound.
func (b Beacon) TimeMs() (int64, error) {
	return RoundTimeMs(b.Source, b.Round)
}

// Fallback returns the stated fallback round of b.
func (b Beacon) Fallback() Beacon { return Beacon{Source: b.Source, Round: b.Round + FallbackRounds} }

// Accepts reports whether round is b's round or its fallback (ErrWrongRound
// otherwise).
func (b Beacon) Accepts(round uint64) error {
	if round != b.Round && round != b.Fallback().Round {
		return fmt.Errorf("%w: got %d, want %d or %d", ErrWrongRound, round, b.Round, b.Fallback().Round)
	}
	return nil
}

// RoundTimeMs returns when round of source is published, in Unix ms.
func RoundTimeMs(source string, round uint64) (int64, error) {
	if source != SourceDrandQuicknet {
		return 0, fmt.Errorf("%w: %q (known: %s)", ErrUnknownSource, source, SourceDrandQuicknet)
	}
	if round == 0 || round > MaxRound {
		return 0, fmt.Errorf("%w: %d (1..%d)", ErrBadRound, round, uint64(MaxRound))
	}
	return (QuicknetGenesis + int64(round-1)*QuicknetPeriod) * 1000, nil
}
