//go:build planted_alloc_no_create_guard

package clustertest

func init() { plantedTags = append(plantedTags, "planted_alloc_no_create_guard") }
