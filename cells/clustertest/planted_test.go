package clustertest

// plantedTags are the planted-bug build tags this test binary was built
// with (planted_*_test.go): the children are built with the same ones.
var plantedTags []string
