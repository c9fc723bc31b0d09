// Command hello prints its build's flavour: what testbin's tests build and
// run.
package main

import "fmt"

func main() { fmt.Println("hello", flavour) }
