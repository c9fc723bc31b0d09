package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	yamlnode "go.yaml.in/yaml/v3"
)

// secondDocument refuses a campaign file whose YAML documents (separated
// by "---") after the first hold anything: the file is read as one list,
// and YAMLToJSONStrict converts the first document only, so the campaigns
// of the others would be dropped without a word. It names the line where
// that document's content starts. An empty document after the first (a
// trailing "---") holds nothing and passes; a file YAML cannot read is
// left to the decoder's message (nil).
func secondDocument(data []byte) error {
	dec := yamlnode.NewDecoder(bytes.NewReader(data))
	for n := 0; ; n++ {
		var doc yamlnode.Node
		if err := dec.Decode(&doc); err != nil {
			return nil // io.EOF: no more documents; else the decoder's error
		}
		if n == 0 || len(doc.Content) == 0 {
			continue
		}
		if c := doc.Content[0]; c.Kind != yamlnode.ScalarNode || c.Tag != "!!null" {
			return fmt.Errorf("line %d: a second YAML document (after \"---\"): a campaign file is one list; put every campaign in it", c.Line)
		}
	}
}

// explainCampaigns turns the error of decoding a campaign file into one
// that names the line, the campaign and the key, found in the file's YAML
// node tree (YAML is a superset of JSON: a JSON file has lines too):
//   - an unknown key;
//   - an unquoted value that YAML 1.1, which the file is read with, takes
//     for a boolean or a number where an id (a string) is expected, such
//     as campaign_id: y or sku_id: no; the fix is to quote it.
//
// When it finds nothing to add it returns nil, and the caller keeps the
// decoder's own message.
func explainCampaigns(data []byte, decodeErr error) error {
	var root yamlnode.Node
	if yamlnode.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	list := root.Content[0]
	if list.Kind != yamlnode.SequenceNode {
		return fmt.Errorf("line %d: a list of campaigns is expected (each one starting with \"- \")", list.Line)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(decodeErr, &typeErr) {
		if err := explainType(list, typeErr); err != nil {
			return err
		}
	}
	campaignKeys, skuKeys := jsonKeys(reflect.TypeFor[Campaign]()), jsonKeys(reflect.TypeFor[CampaignSKU]())
	for i, c := range list.Content {
		if c.Kind != yamlnode.MappingNode {
			return fmt.Errorf("line %d: campaign %d is not a mapping of keys (campaign_id: ..., skus: ...)", c.Line, i+1)
		}
		name := fmt.Sprintf("campaign %d", i+1)
		if id := value(c, "campaign_id"); id != nil {
			name = fmt.Sprintf("campaign %q", id.Value)
		}
		for k := 0; k+1 < len(c.Content); k += 2 {
			key, val := c.Content[k], c.Content[k+1]
			if !slices.Contains(campaignKeys, key.Value) {
				return fmt.Errorf("line %d: %s: unknown key %q (the keys are %s)", key.Line, name, key.Value, strings.Join(campaignKeys, ", "))
			}
			if key.Value != "skus" || val.Kind != yamlnode.SequenceNode {
				continue
			}
			for _, s := range val.Content {
				for j := 0; s.Kind == yamlnode.MappingNode && j+1 < len(s.Content); j += 2 {
					if sk := s.Content[j]; !slices.Contains(skuKeys, sk.Value) {
						return fmt.Errorf("line %d: %s, a SKU: unknown key %q (the keys are %s)", sk.Line, name, sk.Value, strings.Join(skuKeys, ", "))
					}
				}
			}
		}
	}
	return nil
}

// explainType finds the unquoted scalar behind a type error on a string
// field (campaign_id: y read as true) and says to quote it.
func explainType(list *yamlnode.Node, typeErr *json.UnmarshalTypeError) error {
	field := typeErr.Field
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	if typeErr.Type.Kind() != reflect.String {
		return nil
	}
	var found *yamlnode.Node
	var walk func(n *yamlnode.Node)
	walk = func(n *yamlnode.Node) {
		if found != nil {
			return
		}
		if n.Kind == yamlnode.MappingNode {
			for k := 0; k+1 < len(n.Content); k += 2 {
				if v := n.Content[k+1]; n.Content[k].Value == field && v.Kind == yamlnode.ScalarNode && v.Style == 0 && yaml11NotString(v.Value) {
					found = v
					return
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(list)
	if found == nil {
		return nil
	}
	return fmt.Errorf("line %d: %s: %s is read as a %s, not as the id %q (YAML 1.1): quote it, %s: %q",
		found.Line, field, found.Value, typeErr.Value, found.Value, field, found.Value)
}

// yaml11NotString reports whether YAML 1.1 reads the plain scalar s as
// something else than a string: a boolean (y, no, on, off, ...), a null or
// a number.
func yaml11NotString(s string) bool {
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "~", "null", "":
		return true
	}
	var f float64
	_, err := fmt.Sscan(s, &f)
	return err == nil
}

// value returns the value node of key in mapping m, or nil.
func value(m *yamlnode.Node, key string) *yamlnode.Node {
	for k := 0; k+1 < len(m.Content); k += 2 {
		if m.Content[k].Value == key {
			return m.Content[k+1]
		}
	}
	return nil
}

// jsonKeys lists the JSON keys of struct type t, in field order.
func jsonKeys(t reflect.Type) []string {
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}
