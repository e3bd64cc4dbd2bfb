//go:build js && wasm

// Package main is the Kubernetes apiserver's own CustomResourceDefinition validation and custom-resource admission
// (pruning, defaulting, OpenAPI schema validation, list invariants and x-kubernetes-validations CEL rules), compiled
// to WebAssembly for @opkit/testenv/cel. Every function takes and returns JSON strings; a failure of the apiserver's
// checks is returned as the metav1.Status the apiserver would send (HTTP 422), never as a Go panic.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"syscall/js"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuralschemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/klog/v2"
)

// kind is one served version of a CRD, prepared once as the apiserver prepares it when the CRD is established.
type kind struct {
	gvk        schema.GroupVersionKind
	structural *structuralschema.Structural
	strategy   *strategy
	namespaced bool
}

var (
	mu    sync.Mutex
	kinds = map[string]*kind{}
	// order of insertion, to evict the oldest once maxKinds are prepared (a property test may make many CRDs)
	kindOrder []string
)

const maxKinds = 64

type typer struct{ gvk schema.GroupVersionKind }

func (t typer) ObjectKinds(runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	return []schema.GroupVersionKind{t.gvk}, false, nil
}
func (t typer) Recognizes(gvk schema.GroupVersionKind) bool { return gvk == t.gvk }

func decodeCRD(crdJSON string) (*apiextensionsv1.CustomResourceDefinition, *apiextensions.CustomResourceDefinition, error) {
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal([]byte(crdJSON), &v1); err != nil {
		return nil, nil, fmt.Errorf("the CustomResourceDefinition is not valid JSON for apiextensions.k8s.io/v1: %w", err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&v1)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &internal, nil); err != nil {
		return nil, nil, err
	}
	return &v1, &internal, nil
}

// checkCRD is what the apiserver answers to creating the CRD: nil, or the Status of its 422 with each error's type,
// field and detail.
func checkCRD(crdJSON string) (any, error) {
	_, internal, err := decodeCRD(crdJSON)
	if err != nil {
		return nil, err
	}
	errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal)
	if len(errs) == 0 {
		return nil, nil
	}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, internal.Name, errs)
	details := make([]map[string]string, len(errs))
	for i, e := range errs {
		details[i] = map[string]string{"type": string(e.Type), "field": e.Field, "detail": e.Detail}
	}
	return map[string]any{"status": invalid.Status(), "errors": details}, nil
}

// structuralOf is a served version's schema, internal and structural, with its defaults pruned as the apiserver
// prunes them when it serves the version.
func structuralOf(served *apiextensionsv1.CustomResourceDefinitionVersion) (*apiextensions.CustomResourceValidation, *structuralschema.Structural, error) {
	var internalValidation apiextensions.CustomResourceValidation
	if served.Schema != nil {
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(served.Schema, &internalValidation, nil); err != nil {
			return nil, nil, err
		}
	}
	s, err := structuralschema.NewStructural(internalValidation.OpenAPIV3Schema)
	if err != nil {
		return nil, nil, err
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, nil, err
	}
	return &internalValidation, s, nil
}

func prepare(crdJSON, version string) (*kind, error) {
	key := version + "\x00" + crdJSON
	mu.Lock()
	defer mu.Unlock()
	if k, ok := kinds[key]; ok {
		return k, nil
	}
	v1, internal, err := decodeCRD(crdJSON)
	if err != nil {
		return nil, err
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		return nil, fmt.Errorf("the apiserver refuses this CustomResourceDefinition: %s", errs.ToAggregate().Error())
	}
	var served *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range v1.Spec.Versions {
		if v1.Spec.Versions[i].Name == version {
			served = &v1.Spec.Versions[i]
		}
	}
	if served == nil || !served.Served {
		return nil, fmt.Errorf("the CustomResourceDefinition %s does not serve version %q", v1.Name, version)
	}
	internalValidation, s, err := structuralOf(served)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internalValidation.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	var status *apiextensions.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	var scale *apiextensions.CustomResourceSubresourceScale
	if sub := served.Subresources; sub != nil {
		if sub.Status != nil {
			status = &apiextensions.CustomResourceSubresourceStatus{}
			if p := internalValidation.OpenAPIV3Schema; p != nil && p.Properties != nil {
				if statusSchema, ok := p.Properties["status"]; ok {
					if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&statusSchema); err != nil {
						return nil, err
					}
				}
			}
		}
		if sub.Scale != nil {
			scale = &apiextensions.CustomResourceSubresourceScale{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(sub.Scale, scale, nil); err != nil {
				return nil, err
			}
		}
	}
	gvk := schema.GroupVersionKind{Group: v1.Spec.Group, Version: version, Kind: v1.Spec.Names.Kind}
	namespaced := v1.Spec.Scope == apiextensionsv1.NamespaceScoped
	k := &kind{
		gvk:        gvk,
		structural: s,
		namespaced: namespaced,
		strategy: &strategy{
			ObjectTyper: typer{gvk}, NameGenerator: names.SimpleNameGenerator, gvk: gvk, namespaced: namespaced,
			validator: validator, structural: s, status: status != nil, scale: scale,
			cel: structuralschemacel.NewValidator(s, true, celconfig.PerCallLimit),
		},
	}
	_ = statusValidator // the status subresource's validator serves PUT …/status, which admit does not model
	kinds[key] = k
	kindOrder = append(kindOrder, key)
	if len(kindOrder) > maxKinds {
		delete(kinds, kindOrder[0])
		kindOrder = kindOrder[1:]
	}
	return k, nil
}

// decode reads an object as the apiserver's request decoder does: integers as int64; metadata read as an ObjectMeta
// (malformed fields dropped) and written back, so unknown metadata fields are gone; unknown fields pruned, embedded
// objects' metadata coerced, nulls without a default dropped; then defaults applied.
func (k *kind) decode(objJSON string) (*unstructured.Unstructured, error) {
	var obj map[string]any
	if err := utiljson.Unmarshal([]byte(objJSON), &obj); err != nil {
		return nil, fmt.Errorf("the object is not valid JSON: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("the object must be a JSON object")
	}
	u := &unstructured.Unstructured{Object: obj}
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	meta, foundMeta, _, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{DropMalformedFields: true})
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	structuralpruning.Prune(obj, k.structural, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, k.structural)
	if ferr, _ := schemaobjectmeta.CoerceWithOptions(nil, obj, k.structural, false, schemaobjectmeta.CoerceOptions{DropInvalidFields: true}); ferr != nil {
		return nil, ferr
	}
	// the request's URL names the kind: a body without apiVersion or kind gets it from there
	if kind == "" {
		kind = k.gvk.Kind
	}
	if apiVersion == "" {
		apiVersion = k.gvk.GroupVersion().String()
	}
	u.SetKind(kind)
	u.SetAPIVersion(apiVersion)
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(obj, meta); err != nil {
			return nil, err
		}
	}
	structuraldefaulting.Default(obj, k.structural)
	return u, nil
}

// admit is a create (oldJSON "") or an update of a custom resource, as the apiserver admits it before storing: the
// object as it would be stored, and nil or the Status of the 422 it would answer.
func admit(crdJSON, version, objJSON, oldJSON string) (any, error) {
	k, err := prepare(crdJSON, version)
	if err != nil {
		return nil, err
	}
	obj, err := k.decode(objJSON)
	if err != nil {
		return nil, err
	}
	// the request's namespace: the object's (default "default") for a namespaced kind, "" for a cluster-scoped one
	ns := ""
	if k.namespaced {
		ns = defaultNamespace(obj)
	}
	ctx := genericapirequest.WithNamespace(genericapirequest.NewContext(), ns)
	given := systemFields(obj)
	if oldJSON == "" {
		rest.FillObjectMetaSystemFields(obj)
		if obj.GetName() == "" && obj.GetGenerateName() != "" {
			obj.SetName(k.strategy.GenerateName(obj.GetGenerateName()))
		}
		err = rest.BeforeCreate(k.strategy, ctx, obj)
	} else {
		old, derr := k.decode(oldJSON)
		if derr != nil {
			return nil, fmt.Errorf("old: %w", derr)
		}
		// the stored object: in the namespace of the request, with system fields and a generation
		if k.namespaced && old.GetNamespace() == "" {
			old.SetNamespace(obj.GetNamespace())
		}
		if old.GetUID() == "" {
			rest.FillObjectMetaSystemFields(old)
		}
		if old.GetGeneration() == 0 {
			old.SetGeneration(1)
		}
		if old.GetResourceVersion() == "" {
			old.SetResourceVersion("1")
		}
		if obj.GetResourceVersion() == "" {
			obj.SetResourceVersion(old.GetResourceVersion())
		}
		err = rest.BeforeUpdate(k.strategy, ctx, obj, old)
	}
	given.restore(obj)
	out := map[string]any{"object": obj.Object}
	if err != nil {
		status, ok := err.(apierrors.APIStatus)
		if !ok {
			return nil, err
		}
		out["status"] = status.Status()
	}
	return out, nil
}

func defaultNamespace(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	return obj.GetNamespace()
}

// given is what the caller set of the fields the apiserver fills in (uid, creationTimestamp).
type given struct {
	uid     bool
	created bool
}

func systemFields(obj *unstructured.Unstructured) given {
	created := obj.GetCreationTimestamp()
	return given{uid: obj.GetUID() != "", created: !created.IsZero()}
}

// restore removes the made-up uid and creation time from the result: they are random, not the caller's.
func (g given) restore(obj *unstructured.Unstructured) {
	if !g.uid {
		unstructured.RemoveNestedField(obj.Object, "metadata", "uid")
	}
	if !g.created {
		unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	}
}

// call runs f on the string arguments and returns {"result": …}, {"failure": "…"} (the input is not what the apiserver
// would take) or {"panic": "…"} (a bug here) as JSON.
func call(f func(args []string) (any, error)) js.Func {
	return js.FuncOf(func(_ js.Value, jsArgs []js.Value) (ret any) {
		defer func() {
			if r := recover(); r != nil {
				b, _ := json.Marshal(map[string]any{"panic": fmt.Sprintf("%v\n%s", r, debug.Stack())})
				ret = string(b)
			}
		}()
		args := make([]string, len(jsArgs))
		for i, a := range jsArgs {
			args[i] = a.String()
		}
		res, err := f(args)
		var b []byte
		if err != nil {
			b, _ = json.Marshal(map[string]any{"failure": err.Error()})
		} else {
			b, err = json.Marshal(map[string]any{"result": res})
			if err != nil {
				b, _ = json.Marshal(map[string]any{"failure": err.Error()})
			}
		}
		return string(b)
	})
}

func main() {
	// the apiserver's own log lines (klog) are not results: they are dropped
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	api := js.Global().Get("Object").New()
	api.Set("checkCRD", call(func(a []string) (any, error) { return checkCRD(a[0]) }))
	api.Set("admit", call(func(a []string) (any, error) { return admit(a[0], a[1], a[2], a[3]) }))
	api.Set("checkPolicy", call(func(a []string) (any, error) { return checkPolicy(a[0], a[1]) }))
	api.Set("evaluatePolicy", call(func(a []string) (any, error) { return evaluatePolicy(a[0], a[1], a[2]) }))
	api.Set("evaluateMutatingPolicy", call(func(a []string) (any, error) { return evaluateMutatingPolicy(a[0], a[1], a[2]) }))
	js.Global().Set("__opkitKubeValidation", api)
	select {}
}
