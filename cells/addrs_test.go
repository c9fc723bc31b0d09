package cells

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseAddrs(t *testing.T) {
	ids, addrs, err := ParseAddrs("c2=127.0.0.1:2, c1=http://127.0.0.1:1")
	if err != nil || !slices.Equal(ids, []string{"c2", "c1"}) ||
		!maps.Equal(addrs, map[string]string{"c1": "http://127.0.0.1:1", "c2": "127.0.0.1:2"}) {
		t.Fatalf("%v %v %v", ids, addrs, err)
	}
	for list, want := range map[string]string{
		"":           `"" is not cell=address`,
		"c1":         `"c1" is not cell=address`,
		"c1=a,,c2=b": `"" is not cell=address`,
		"=a":         `"=a" is not cell=address`,
		"c1=":        `"c1=" is not cell=address`,
		"c1=a,c1=b":  `cell "c1" is named twice`,
		"c1=a,c2":    `"c2" is not cell=address`,
	} {
		_, _, err := ParseAddrs(list)
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", list, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %s", list, err, want)
		}
	}
}
