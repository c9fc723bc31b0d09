//go:build race

package testbin

const raceBuild = true
