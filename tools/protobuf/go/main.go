// Command protobuf-describe reads the Go types of every built-in kind (client-go's scheme, so k8s.io/api and
// k8s.io/apimachinery at the versions go.mod pins) and writes what a decoder needs to turn their protobuf encoding into
// the JSON the apiserver would send: for each message, each field's number, its JSON name, whether encoding/json
// omits it when empty (omitempty, omitzero), whether it is inlined, and its type (scalars, messages, lists, maps and
// the seven types with their own JSON form: Time, MicroTime, Duration, Quantity, IntOrString, RawExtension, FieldsV1).
//
// With -fixtures it also writes random objects of every kind, each encoded by apimachinery's own protobuf and JSON
// serializers, for the decoder's differential test.
//
// It fails, naming the type and field, on anything it does not know how to describe (another type with its own JSON
// form, an unsupported Go kind), so the generated decoder never guesses.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	protoserializer "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"
)

// Field is one field of a message as the decoder sees it.
type Field struct {
	// JSON is the field's JSON name ("" for an inlined message).
	JSON string `json:"json"`
	// Num is the protobuf field number (0: the field is not in the protobuf encoding).
	Num int `json:"num"`
	// Omit: encoding/json leaves the field out when it is empty (omitempty) or zero (omitzero, for Time).
	Omit bool `json:"omit,omitempty"`
	// Inline: the field is an embedded struct whose fields are the parent's in JSON.
	Inline bool `json:"inline,omitempty"`
	// Ptr: a Go pointer (nil when absent, never "empty" for omitempty).
	Ptr bool `json:"ptr,omitempty"`
	// Type is the element's type: a scalar, a special type or "msg:NAME".
	Type string `json:"type"`
	// List: a Go slice of Type (repeated on the wire).
	List bool `json:"list,omitempty"`
	// Map: a Go map from string to Type (repeated key/value entries on the wire).
	Map bool `json:"map,omitempty"`
}

// Message is one Go struct (or named slice wrapped as a message, with Items).
type Message struct {
	Fields []Field `json:"fields"`
	// Wrapped: a named slice type (ExtraValue, Verbs) encoded as a message with its elements as field 1, "items";
	// its JSON is the bare list.
	Wrapped bool `json:"wrapped,omitempty"`
}

// Kind is a top-level type with its group, version and kind.
type Kind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type Descriptor struct {
	Generator string             `json:"generator"`
	Versions  map[string]string  `json:"versions"`
	Kinds     []Kind             `json:"kinds"`
	Messages  map[string]Message `json:"messages"`
}

var specials = map[reflect.Type]string{
	reflect.TypeFor[metav1.Time]():          "time",
	reflect.TypeFor[metav1.MicroTime]():     "microtime",
	reflect.TypeFor[metav1.Duration]():      "duration",
	reflect.TypeFor[resource.Quantity]():    "quantity",
	reflect.TypeFor[intstr.IntOrString]():   "intorstring",
	reflect.TypeFor[runtime.RawExtension](): "rawextension",
	reflect.TypeFor[metav1.FieldsV1]():      "fieldsv1",
}

var marshaler = reflect.TypeFor[json.Marshaler]()

type describer struct {
	messages map[string]Message
	errs     []string
}

// name is a message's stable name: "core/v1.Pod", "meta/v1.ObjectMeta", "apps/v1.Deployment".
func name(t reflect.Type) string {
	p := t.PkgPath()
	switch {
	case strings.HasPrefix(p, "k8s.io/api/"):
		p = strings.TrimPrefix(p, "k8s.io/api/")
	case strings.HasPrefix(p, "k8s.io/apimachinery/pkg/apis/"):
		p = strings.TrimPrefix(p, "k8s.io/apimachinery/pkg/apis/")
	case strings.HasPrefix(p, "k8s.io/apimachinery/pkg/"):
		p = strings.TrimPrefix(p, "k8s.io/apimachinery/pkg/")
	}
	return p + "." + t.Name()
}

func (d *describer) message(t reflect.Type) string {
	n := name(t)
	if _, seen := d.messages[n]; seen {
		return n
	}
	if t.Kind() == reflect.Slice {
		d.messages[n] = Message{Wrapped: true}
		el := d.elem(t.Elem(), n+".items")
		d.messages[n] = Message{Wrapped: true, Fields: []Field{{JSON: "items", Num: 1, Type: el, List: true}}}
		return n
	}
	d.messages[n] = Message{} // breaks cycles (JSONSchemaProps-like recursion)
	fields := []Field{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		jtag := sf.Tag.Get("json")
		if jtag == "-" {
			continue
		}
		parts := strings.Split(jtag, ",")
		omitempty, omitzero := false, false
		for _, o := range parts[1:] {
			omitempty = omitempty || o == "omitempty"
			omitzero = omitzero || o == "omitzero"
		}
		f := Field{JSON: parts[0]}
		if f.JSON == "" {
			f.JSON = sf.Name
		}
		if ptag := sf.Tag.Get("protobuf"); ptag != "" {
			pp := strings.Split(ptag, ",")
			num, err := strconv.Atoi(pp[1])
			if err != nil {
				d.errs = append(d.errs, fmt.Sprintf("%s.%s: protobuf tag %q", n, sf.Name, ptag))
			}
			f.Num = num
		}
		ft := sf.Type
		if sf.Anonymous && parts[0] == "" {
			if ft.Kind() != reflect.Struct {
				d.errs = append(d.errs, fmt.Sprintf("%s.%s: embedded non-struct", n, sf.Name))
				continue
			}
			f.Inline = true
			f.JSON = ""
			f.Type = "msg:" + d.message(ft)
			fields = append(fields, f)
			continue
		}
		if ft.Kind() == reflect.Pointer {
			f.Ptr = true
			ft = ft.Elem()
		}
		switch {
		case specials[ft] != "":
			f.Type = specials[ft]
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
			f.Type = "bytes"
		case ft.Kind() == reflect.Slice && ft.Name() != "" && isWrapped(ft):
			f.Type = "msg:" + d.message(ft)
		case ft.Kind() == reflect.Slice:
			f.List = true
			f.Type = d.elem(ft.Elem(), n+"."+sf.Name)
		case ft.Kind() == reflect.Map:
			if ft.Key().Kind() != reflect.String {
				d.errs = append(d.errs, fmt.Sprintf("%s.%s: map key %s", n, sf.Name, ft.Key()))
			}
			f.Map = true
			f.Type = d.elem(ft.Elem(), n+"."+sf.Name)
		default:
			f.Type = d.elem(ft, n+"."+sf.Name)
		}
		// what encoding/json leaves out: omitempty drops a nil pointer and an empty scalar, list or map, never a
		// struct; omitzero drops a nil pointer, a zero scalar, a nil list or map (decoded ones are never empty), and a
		// struct whose IsZero says so (Time, MicroTime: the only ones k8s.io/api marks)
		switch {
		case f.Ptr:
			f.Omit = omitempty || omitzero
		case f.List || f.Map || f.Type == "bytes" || isScalar(f.Type) || (ft.Kind() == reflect.Slice && isWrapped(ft)):
			f.Omit = omitempty || omitzero
		case omitzero && (f.Type == "time" || f.Type == "microtime"):
			f.Omit = true
		case omitzero:
			d.errs = append(d.errs, fmt.Sprintf("%s.%s: omitzero on %s is not supported", n, sf.Name, ft))
		}
		fields = append(fields, f)
	}
	if reflect.PointerTo(t).Implements(marshaler) || t.Implements(marshaler) {
		d.errs = append(d.errs, fmt.Sprintf("%s has its own JSON form, which this generator does not know", n))
	}
	d.messages[n] = Message{Fields: fields}
	return n
}

// isWrapped: a named slice that go-to-protobuf encodes as a message of its items (+protobuf.nullable).
func isWrapped(t reflect.Type) bool {
	switch name(t) {
	case "authentication/v1.ExtraValue", "authentication/v1beta1.ExtraValue", "authentication/v1.AttestationValue",
		"authorization/v1.ExtraValue", "authorization/v1beta1.ExtraValue",
		"certificates/v1.ExtraValue", "certificates/v1beta1.ExtraValue", "meta/v1.Verbs":
		return true
	}
	return false
}

func isScalar(t string) bool {
	return t == "string" || t == "bool" || t == "int32" || t == "int64" || t == "double"
}

func (d *describer) elem(t reflect.Type, where string) string {
	if s := specials[t]; s != "" {
		return s
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int32:
		return "int32"
	case reflect.Int64:
		return "int64"
	case reflect.Int:
		return "int64"
	case reflect.Float64:
		return "double"
	case reflect.Struct:
		return "msg:" + d.message(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		if t.Name() != "" && isWrapped(t) {
			return "msg:" + d.message(t)
		}
	}
	d.errs = append(d.errs, fmt.Sprintf("%s: unsupported type %s", where, t))
	return "?"
}

func main() {
	out := flag.String("out", "", "the descriptor JSON to write")
	fixtures := flag.String("fixtures", "", "also write random objects of every kind (gzipped JSON lines) here")
	perKind := flag.Int("per-kind", 3, "random objects per kind in -fixtures")
	seed := flag.Int64("seed", 29, "the fixtures' random seed")
	flag.Parse()

	d := &describer{messages: map[string]Message{}}
	var kinds []Kind
	for gvk, t := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || t.Kind() != reflect.Struct {
			continue
		}
		if _, ok := t.FieldByName("ObjectMeta"); !ok {
			if _, ok := t.FieldByName("ListMeta"); !ok {
				continue
			}
		}
		kinds = append(kinds, Kind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Message: d.message(t)})
	}
	// what every client of the protobuf encoding reads besides the kinds: errors and watch events
	for _, k := range []struct {
		kind string
		t    reflect.Type
	}{{"Status", reflect.TypeFor[metav1.Status]()}, {"WatchEvent", reflect.TypeFor[metav1.WatchEvent]()}} {
		kinds = append(kinds, Kind{Group: "", Version: "v1", Kind: k.kind, Message: d.message(k.t)})
	}
	sort.Slice(kinds, func(i, j int) bool {
		a, b := kinds[i], kinds[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
	if len(d.errs) > 0 {
		sort.Strings(d.errs)
		fmt.Fprintln(os.Stderr, "protobuf-describe: cannot describe:\n  "+strings.Join(d.errs, "\n  "))
		os.Exit(1)
	}
	desc := Descriptor{
		Generator: "tools/protobuf/go (go run . -out …)",
		Versions:  map[string]string{"k8s.io/api": "v0.37.2", "k8s.io/apimachinery": "v0.37.2"},
		Kinds:     kinds,
		Messages:  d.messages,
	}
	b, err := json.MarshalIndent(desc, "", " ")
	must(err)
	must(os.WriteFile(*out, append(b, '\n'), 0o644))
	if *fixtures != "" {
		writeFixtures(*fixtures, kinds, *perKind, *seed)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "protobuf-describe:", err)
		os.Exit(1)
	}
}

// Fixture is one random object in both encodings.
type Fixture struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Protobuf is the object as the apiserver sends it (k8s\0 envelope, Unknown wrapper), base64.
	Protobuf string `json:"protobuf"`
	// JSON is the same object as the apiserver sends it.
	JSON json.RawMessage `json:"json"`
}

func writeFixtures(path string, kinds []Kind, perKind int, seed int64) {
	filler := randfill.New().NilChance(.3).NumElements(0, 2).MaxDepth(12).RandSource(rand.NewSource(seed)).Funcs(fills()...)
	protos := protoserializer.NewSerializer(scheme.Scheme, scheme.Scheme)
	jsons := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, jsonserializer.SerializerOptions{})
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for _, k := range kinds {
		if k.Kind == "WatchEvent" || (k.Kind == "Status" && k.Group == "") {
			continue
		}
		gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
		for i := 0; i < perKind; i++ {
			obj, err := scheme.Scheme.New(gvk)
			must(err)
			filler.Fill(obj)
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			var pb, js bytes.Buffer
			must(protos.Encode(obj, &pb))
			// what the apiserver sends is what it read back from storage (protobuf): decode the bytes again, so
			// the JSON has nil where protobuf cannot tell nil from empty, as the apiserver's does
			back, _, err := protos.Decode(pb.Bytes(), &gvk, nil)
			must(err)
			if meta.IsListType(back) {
				items, err := meta.ExtractList(back)
				must(err)
				if items == nil {
					// a list's items are [] in the apiserver's answers, never null
					must(meta.SetList(back, []runtime.Object{}))
				}
			}
			back.GetObjectKind().SetGroupVersionKind(gvk)
			must(jsons.Encode(back, &js))
			must(enc.Encode(Fixture{
				APIVersion: gvk.GroupVersion().String(),
				Kind:       k.Kind,
				Protobuf:   base64.StdEncoding.EncodeToString(pb.Bytes()),
				JSON:       bytes.TrimSpace(js.Bytes()),
			}))
		}
	}
	must(zw.Close())
	must(os.WriteFile(path, buf.Bytes(), 0o644))
}

// fills: valid values for the types with their own JSON form (their protobuf and JSON must describe one value).
func fills() []any {
	suffixes := []string{"", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "e3", "E6", "n", "u"}
	return []any{
		func(q *resource.Quantity, c randfill.Continue) {
			s := strconv.FormatInt(c.Int63n(1_000_000), 10)
			if c.Intn(4) == 0 {
				s += "." + strconv.Itoa(c.Intn(1000))
			}
			if c.Intn(5) == 0 {
				s = "-" + s
			}
			*q = resource.MustParse(s + suffixes[c.Intn(len(suffixes))])
		},
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31() - 1<<30)
			} else {
				var s string
				c.Fill(&s)
				*v = intstr.FromString(s)
			}
		},
		func(t *metav1.Time, c randfill.Continue) {
			if c.Intn(8) == 0 {
				*t = metav1.Time{}
				return
			}
			*t = metav1.NewTime(time.Unix(c.Int63n(4_102_444_800), 0))
		},
		func(t *metav1.MicroTime, c randfill.Continue) {
			if c.Intn(8) == 0 {
				*t = metav1.MicroTime{}
				return
			}
			*t = metav1.NewMicroTime(time.Unix(c.Int63n(4_102_444_800), c.Int63n(1_000_000)*1000))
		},
		func(d *metav1.Duration, c randfill.Continue) {
			scales := []int64{1, 1000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000}
			d.Duration = time.Duration(c.Int63n(100_000) * scales[c.Intn(len(scales))])
			if c.Intn(6) == 0 {
				d.Duration = -d.Duration
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) {
			var s string
			c.Fill(&s)
			b, _ := json.Marshal(map[string]any{"apiVersion": "example.com/v1", "kind": "Thing", "name": s, "n": c.Intn(1000), "list": []any{true, nil, 1.5}})
			r.Raw = b
		},
		func(f *metav1.FieldsV1, c randfill.Continue) {
			var s string
			c.Fill(&s)
			b, _ := json.Marshal(map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{"f:" + s: map[string]any{}}}})
			f.Raw = b
		},
		func(t *runtime.TypeMeta, c randfill.Continue) {},
		func(t *metav1.TypeMeta, c randfill.Continue) {},
	}
}
