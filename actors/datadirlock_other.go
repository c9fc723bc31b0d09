//go:build !linux

package actors

// lockedBelow returns "": only Linux lists the locks held (/proc/locks),
// so the error names the directory that holds an engine's data dir, not
// that data dir.
func lockedBelow(string) string { return "" }
