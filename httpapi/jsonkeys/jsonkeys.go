// Package jsonkeys checks that a JSON document spells the keys of its
// objects exactly as the Go type it is decoded into names its fields,
// repeats none, and leaves out none of the fields the type requires.
//
// encoding/json matches keys to fields case-insensitively and lets the last
// of repeated keys win, so {"Payment_Id":"a","payment_id":"b"} decodes
// without an error, and two readers of one signed body may disagree about
// what it says. Check, run beside the decoding, refuses such documents. The
// allowed keys have one source: the json tags of the Go type, found by
// reflection. A field the document must give is tagged jsonkeys:"required"
// (encoding/json cannot tell a missing key from its zero value, and "user_id
// is missing" says more to a client than the rule an empty id breaks).
package jsonkeys

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fastjson"
)

// Error is a key that Check refuses.
type Error struct {
	// Key is the key as the document spells it (escapes undone), or the
	// JSON name of a required field it leaves out.
	Key string
	// Repeated is true for a key that appears twice in one object.
	Repeated bool
	// Missing is true for a required field the object leaves out.
	Missing bool
	// Path is where the object holding the key is, "" at the top
	// ("skus[2]", "beacon").
	Path string
}

// Error renders the refusal as `unknown field "x"`, `field "x" repeated`
// or `x is missing`; below the top with where the object is:
// `skus[2]: unknown field "x"`, `skus[2]: field "x" repeated`,
// `skus[2].x is missing`.
func (e *Error) Error() string {
	var msg string
	switch {
	case e.Missing && e.Path != "":
		return e.Path + "." + e.Key + " is missing"
	case e.Missing:
		return e.Key + " is missing"
	case e.Repeated:
		msg = fmt.Sprintf("field %q repeated", e.Key)
	default:
		msg = fmt.Sprintf("unknown field %q", e.Key)
	}
	if e.Path != "" {
		return e.Path + ": " + msg
	}
	return msg
}

// within returns err with its path below step (a key, or an index "[2]");
// other errors as they are.
func within(err error, step string) error {
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	switch {
	case e.Path == "":
		e.Path = step
	case e.Path[0] == '[':
		e.Path = step + e.Path
	default:
		e.Path = step + "." + e.Path
	}
	return e
}

var parsers fastjson.ParserPool

// Check parses doc and checks every object in it against the type of v,
// the value doc is decoded into (a pointer, as for json.Unmarshal): an
// object decoded into a struct may only have keys spelled exactly as the
// struct's JSON field names (the json tag's name, else the Go field's
// name), and no object anywhere may repeat a key. It returns the first
// refused key as an *Error, or the parser's error for a document that is
// not JSON.
//
// A value of a type with its own UnmarshalJSON is not looked into: that
// method reads it and must check its keys itself. Embedded structs are not
// flattened (no body of the API embeds one).
func Check(doc []byte, v any) error {
	p := parsers.Get()
	defer parsers.Put(p)
	root, err := p.ParseBytes(doc)
	if err != nil {
		return err
	}
	return check(root, reflect.TypeOf(v))
}

// unmarshaler is the interface of types that decode themselves.
var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// check checks v, which is decoded into a value of type t.
func check(v *fastjson.Value, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return nil
	}
	switch v.Type() {
	case fastjson.TypeObject:
		return checkObject(v.GetObject(), t)
	case fastjson.TypeArray:
		elem := t
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			elem = t.Elem()
		}
		for i, item := range v.GetArray() {
			if err := check(item, elem); err != nil {
				return within(err, "["+strconv.Itoa(i)+"]")
			}
		}
	}
	return nil
}

// checkObject checks an object decoded into a value of type t: a struct
// takes only its fields' names; a map or an interface takes any key.
func checkObject(o *fastjson.Object, t reflect.Type) error {
	var fields map[string]reflect.Type
	var required []string
	values := t // an interface: what it holds is decoded as an interface again
	switch t.Kind() {
	case reflect.Struct:
		fields, required = fieldsOf(t)
	case reflect.Map:
		values = t.Elem()
	}
	seen := make(map[string]bool, o.Len())
	var err error
	o.Visit(func(k []byte, item *fastjson.Value) {
		if err != nil {
			return
		}
		key := string(k)
		into := values
		if fields != nil {
			ft, ok := fields[key]
			if !ok {
				err = &Error{Key: key}
				return
			}
			into = ft
		}
		if seen[key] {
			err = &Error{Key: key, Repeated: true}
			return
		}
		seen[key] = true
		err = within(check(item, into), key)
	})
	if err != nil {
		return err
	}
	for _, name := range required {
		if !seen[name] {
			return &Error{Key: name, Missing: true}
		}
	}
	return nil
}

// structFields are what Check needs of a struct type: its fields' JSON
// names and types, and the names of the required ones in field order.
type structFields struct {
	types    map[string]reflect.Type
	required []string
}

// fieldCache maps a struct type to its structFields.
var fieldCache sync.Map

// fieldsOf maps the JSON names of a struct's fields, as encoding/json
// names them, to their types (never nil), and lists the names of the
// fields tagged jsonkeys:"required".
func fieldsOf(t reflect.Type) (map[string]reflect.Type, []string) {
	if cached, ok := fieldCache.Load(t); ok {
		f := cached.(*structFields)
		return f.types, f.required
	}
	fields := make(map[string]reflect.Type, t.NumField())
	var required []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
		if f.Tag.Get("jsonkeys") == "required" {
			required = append(required, name)
		}
	}
	fieldCache.Store(t, &structFields{types: fields, required: required})
	return fields, required
}
