//go:build planted_return_after_credit

package clustertest

func init() { plantedTags = append(plantedTags, "planted_return_after_credit") }
