package lottery

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ParseEvidence reads published evidence: the JSON of GET
// /v1/campaigns/{c}/skus/{s}/lottery after the draw (httpapi renders it),
// as the auditors (seckillctl lottery verify, the load tool) read it.
// Hashes are 64 lowercase hex digits, times RFC 3339; a missing or
// malformed field is an error naming it.
func ParseEvidence(raw []byte) (Evidence, error) {
	var doc evidenceJSON
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Evidence{}, fmt.Errorf("evidence: %w", err)
	}
	return evidenceOf(doc)
}

// evidenceJSON is the part of the published evidence the auditor reads
// (GET /v1/campaigns/{c}/skus/{s}/lottery after the draw).
type evidenceJSON struct {
	CampaignID string `json:"campaign_id"`
	SKUID      string `json:"sku_id"`
	Rules      struct {
		SaleLimit      uint32 `json:"sale_limit"`
		EntriesCloseAt string `json:"entries_close_at"`
		Beacon         struct {
			Source string `json:"source"`
			Round  uint64 `json:"round"`
		} `json:"beacon"`
		Waitlist uint32 `json:"waitlist"`
		Tiers    []struct {
			Tier  uint8           `json:"tier"`
			Quota json.RawMessage `json:"quota"`
		} `json:"tiers"`
	} `json:"rules"`
	Commit       string `json:"commit"`
	CommittedAt  string `json:"committed_at"`
	EntryCount   uint32 `json:"entry_count"`
	EntriesRoot  string `json:"entries_root"`
	ClosedAt     string `json:"closed_at"`
	Round        uint64 `json:"round"`
	Randomness   string `json:"randomness"`
	Signature    string `json:"signature"` // optional
	DrawnAt      string `json:"drawn_at"`
	ServerSeed   string `json:"server_seed"`
	Seed         string `json:"seed"`
	WinnersRoot  string `json:"winners_root"`
	WaitlistRoot string `json:"waitlist_root"`
}

// evidenceOf reads the evidence's fields; a missing or malformed one is an error.
func evidenceOf(doc evidenceJSON) (Evidence, error) {
	ev := Evidence{CampaignID: doc.CampaignID, SKUID: doc.SKUID, SaleLimit: doc.Rules.SaleLimit,
		WaitlistSize: doc.Rules.Waitlist, Beacon: Beacon{Source: doc.Rules.Beacon.Source, Round: doc.Rules.Beacon.Round},
		EntryCount: doc.EntryCount, Round: doc.Round}
	var errs []error
	hash := func(name, s string, dst *Hash) {
		b, err := hex.DecodeString(s)
		if err != nil || len(b) != Size {
			errs = append(errs, fmt.Errorf("%s: want 64 hex digits, got %q", name, s))
			return
		}
		*dst = Hash(b)
	}
	hash("commit", doc.Commit, &ev.Commit)
	hash("entries_root", doc.EntriesRoot, &ev.EntriesRoot)
	hash("randomness", doc.Randomness, &ev.Randomness)
	hash("server_seed", doc.ServerSeed, &ev.ServerSeed)
	hash("seed", doc.Seed, &ev.Seed)
	hash("winners_root", doc.WinnersRoot, &ev.WinnersRoot)
	hash("waitlist_root", doc.WaitlistRoot, &ev.WaitlistRoot)
	if doc.Signature != "" {
		sig, err := hex.DecodeString(doc.Signature)
		if err != nil || len(sig) != SignatureSize {
			errs = append(errs, fmt.Errorf("signature: want %d hex digits, got %q", 2*SignatureSize, doc.Signature))
		}
		ev.Signature = sig
	}
	ms := func(name, s string, dst *int64) {
		v, err := parseTime(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", name, err))
		}
		*dst = v
	}
	ms("rules.entries_close_at", doc.Rules.EntriesCloseAt, &ev.EntriesCloseAtMs)
	ms("committed_at", doc.CommittedAt, &ev.CommittedAtMs)
	ms("closed_at", doc.ClosedAt, &ev.ClosedAtMs)
	ms("drawn_at", doc.DrawnAt, &ev.DrawnAtMs)
	for _, t := range doc.Rules.Tiers {
		q := Quota{Tier: t.Tier}
		if string(t.Quota) == `"rest"` {
			q.Rest = true
		} else if err := json.Unmarshal(t.Quota, &q.Count); err != nil {
			errs = append(errs, fmt.Errorf("tier %d: quota %s", t.Tier, t.Quota))
		}
		ev.Tiers = append(ev.Tiers, q)
	}
	return ev, errors.Join(errs...)
}

// parseTime reads an RFC 3339 time as Unix ms.
func parseTime(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an RFC 3339 time", s)
	}
	return t.UnixMilli(), nil
}
