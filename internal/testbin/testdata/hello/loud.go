//go:build loud

package main

const flavour = "loud"
