package snapshot

import (
	"fmt"

	"github.com/seckill/seckill/actors/sku"
)

// Loaded is the snapshot LoadNewest chose.
type Loaded struct {
	File
	Header  Header
	Machine *sku.Machine
}

// Refused is a snapshot LoadNewest passed over, and why.
type Refused struct {
	File
	Err error
}

// LoadNewest returns the newest snapshot of dir that accept takes (given
// its header; nil accept takes any) and that reads back whole: a corrupt,
// truncated or unknown-version file, or one accept refuses, is listed in
// refused and the next older one is tried. loaded is nil when none is
// usable. err is an I/O error listing dir; a missing dir has no snapshots.
func LoadNewest(dir string, accept func(Header) error) (loaded *Loaded, refused []Refused, err error) {
	files, err := List(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: list %s: %w", dir, err)
	}
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		h, err := ReadHeader(f.Path)
		if err == nil && h.Index != f.Index {
			err = fmt.Errorf("%w: %s holds index %d", ErrCorrupt, f.Path, h.Index)
		}
		if err == nil && accept != nil {
			err = accept(h)
		}
		if err == nil {
			var m *sku.Machine
			if h, m, err = Read(f.Path); err == nil {
				return &Loaded{File: f, Header: h, Machine: m}, refused, nil
			}
		}
		refused = append(refused, Refused{File: f, Err: err})
	}
	return nil, refused, nil
}
