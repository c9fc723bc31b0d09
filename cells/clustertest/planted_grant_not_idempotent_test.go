//go:build planted_grant_not_idempotent

package clustertest

func init() { plantedTags = append(plantedTags, "planted_grant_not_idempotent") }
