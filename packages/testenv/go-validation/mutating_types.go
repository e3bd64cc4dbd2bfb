//go:build js && wasm

package main

import (
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/mutation/dynamic"
)

// schemaResolver resolves `Object` and `Object.<field>…` to the schema's node at that path (lists and maps are
// passed through, as the apiserver names their items), `JSONPatch` to the apiserver's type.
type schemaResolver struct{ root *structuralschema.Structural }

func (r *schemaResolver) Resolve(name string) (common.ResolvedType, bool) {
	if name == mutation.JSONPatchTypeName {
		return &mutation.JSONPatchType{}, true
	}
	if name != mutation.ObjectTypeName && !strings.HasPrefix(name, mutation.ObjectTypeName+".") {
		return nil, false
	}
	node := r.root
	for i, f := range strings.Split(name, ".")[1:] {
		if i == 0 && f == "metadata" {
			node = nil // ObjectMeta, whatever a CRD says of metadata: anything goes below it
			break
		}
		node = child(node, f)
	}
	return &objectType{ObjectType: dynamic.NewObjectType(name), node: node}, true
}

// child is the schema of a field of node, through lists and maps; nil when the schema says nothing of it (unknown
// fields preserved, metadata, an embedded object): then anything goes.
func child(node *structuralschema.Structural, name string) *structuralschema.Structural {
	if node == nil || node.XPreserveUnknownFields || node.XEmbeddedResource {
		return nil
	}
	p, ok := node.Properties[name]
	if !ok {
		return nil
	}
	return items(&p)
}

func items(s *structuralschema.Structural) *structuralschema.Structural {
	for s != nil {
		switch {
		case s.Items != nil:
			s = s.Items
		case s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil:
			s = s.AdditionalProperties.Structural
		default:
			return s
		}
	}
	return s
}

// objectType is an `Object…` type whose fields are the schema's: a field the schema does not have is undefined.
type objectType struct {
	*dynamic.ObjectType
	node *structuralschema.Structural
}

func (o *objectType) Field(name string) (*types.FieldType, bool) {
	f, _ := o.ObjectType.Field(name)
	n := o.node
	if n == nil || n.XPreserveUnknownFields || n.XEmbeddedResource || (o.TypeName() == mutation.ObjectTypeName && name == "metadata") {
		return f, true
	}
	p, ok := n.Properties[name]
	if !ok {
		return nil, false
	}
	typed := *f
	typed.Type = celTypeOf(&p)
	return &typed, true
}

func (o *objectType) FieldNames() ([]string, bool) {
	if o.node == nil || o.node.XPreserveUnknownFields || o.node.XEmbeddedResource {
		return nil, true
	}
	names := make([]string, 0, len(o.node.Properties))
	for n := range o.node.Properties {
		names = append(names, n)
	}
	return names, true
}

func (o *objectType) Val(fields map[string]ref.Val) ref.Val { return o.ObjectType.Val(fields) }

// celTypeOf is what a value of an apply configuration may be for a schema node: strings, integers and booleans as
// such, lists and maps of their items' types; anything else is dynamic. An object is dynamic because the apiserver
// takes any value that converts to it (an `Object…` literal, a map literal, `object.spec.template`, a typed param's
// field); the names of nested `Object…` literals are checked apart (objectLiteralNames). A number takes an integer
// too, and int-or-string, nullable, preserved and embedded nodes take anything.
func celTypeOf(s *structuralschema.Structural) *types.Type {
	if s.Nullable || s.XIntOrString || s.XPreserveUnknownFields || s.XEmbeddedResource {
		return types.DynType
	}
	switch s.Type {
	case "array":
		if s.Items == nil {
			return types.NewListType(types.DynType)
		}
		return types.NewListType(celTypeOf(s.Items))
	case "object":
		if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
			return types.NewMapType(types.StringType, celTypeOf(s.AdditionalProperties.Structural))
		}
	case "string":
		return types.StringType
	case "integer":
		return types.IntType
	case "boolean":
		return types.BoolType
	}
	return types.DynType
}
