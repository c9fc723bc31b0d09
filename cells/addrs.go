package cells

import (
	"fmt"
	"strings"
)

// ParseAddrs reads a list of cell=address entries, comma-separated (the
// router's and seckillctl's --cells), in their order. An entry without
// '=', without a cell or an address, or naming a cell twice is an error
// that quotes it: a list that dropped it silently would route, or audit,
// without that cell.
func ParseAddrs(list string) (cells []string, addrs map[string]string, err error) {
	addrs = map[string]string{}
	for _, kv := range strings.Split(list, ",") {
		cell, addr, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || cell == "" || addr == "" {
			return nil, nil, fmt.Errorf("--cells: %q is not cell=address", kv)
		}
		if _, dup := addrs[cell]; dup {
			return nil, nil, fmt.Errorf("--cells: cell %q is named twice", cell)
		}
		cells, addrs[cell] = append(cells, cell), addr
	}
	return cells, addrs, nil
}
