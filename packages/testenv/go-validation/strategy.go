//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"math"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuralschemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/storage/names"
)

// strategy admits a custom resource in the order the apiserver's custom-resource strategy does (type meta, object
// meta, the OpenAPI schema, the scale paths, embedded objects, list-type invariants, then the CEL rules unless an
// earlier error blocks them), with validation ratcheting on update; rest.BeforeCreate/BeforeUpdate call it.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	gvk        schema.GroupVersionKind
	namespaced bool
	validator  apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	status     bool
	scale      *apiextensions.CustomResourceSubresourceScale
	cel        *structuralschemacel.Validator
}

func (s *strategy) NamespaceScoped() bool                                     { return s.namespaced }
func (s *strategy) AllowCreateOnUpdate(context.Context) bool                  { return false }
func (s *strategy) AllowUnconditionalUpdate(context.Context) bool             { return false }
func (s *strategy) Canonicalize(runtime.Object)                               {}
func (s *strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }
func (s *strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (s *strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	u := obj.(*unstructured.Unstructured)
	if s.status {
		delete(u.Object, "status") // a create cannot set the status of a kind with a status subresource
	}
	u.SetGeneration(1)
}

func (s *strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	if s.status {
		if st, ok := o.Object["status"]; ok {
			u.Object["status"] = st
		} else {
			delete(u.Object, "status")
		}
	}
	if !equality.Semantic.DeepEqual(withoutMetadata(u.Object), withoutMetadata(o.Object)) {
		u.SetGeneration(o.GetGeneration() + 1)
	} else {
		u.SetGeneration(o.GetGeneration())
	}
}

func withoutMetadata(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

func (s *strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	u := obj.(*unstructured.Unstructured)
	if errs := s.typeMeta(u); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	meta, merrs := objectMeta(u)
	if len(merrs) > 0 {
		errs = append(errs, merrs...)
	} else {
		errs = append(errs, metavalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, meta, nil, s.namespaced,
			metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"), true)...)
	}
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, s.validator)...)
	errs = append(errs, s.scaleErrors(u)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, s.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	return s.withRules(ctx, errs, u.Object, nil)
}

func (s *strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	if errs := s.typeMeta(u); len(errs) > 0 {
		return errs
	}
	correlated := common.NewCorrelatedObject(u.Object, o.Object, &model.Structural{Structural: s.structural})
	var errs field.ErrorList
	meta, merrs := objectMeta(u)
	oldMeta, oerrs := objectMeta(o)
	switch {
	case len(merrs) > 0:
		errs = append(errs, merrs...)
	case len(oerrs) > 0:
		errs = append(errs, oerrs...)
	default:
		errs = append(errs, metavalidation.ValidateObjectMetaDeclaratively(ctx, operation.Update, meta, oldMeta, s.namespaced,
			nil, field.NewPath("metadata"), true)...)
	}
	errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u.Object, o.Object, s.validator,
		apiservervalidation.WithRatcheting(correlated))...)
	errs = append(errs, s.scaleErrors(u)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, s.structural, false)...)
	if len(structurallisttype.ValidateListSetsAndMaps(nil, s.structural, o.Object)) == 0 {
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	}
	return s.withRules(ctx, errs, u.Object, o.Object, structuralschemacel.WithRatcheting(correlated))
}

// withRules adds the CEL rules' errors, or, when an earlier error means the rules cannot run on this object, the
// apiserver's note saying so; a schema without rules adds nothing, as the apiserver's strategy has no CEL validator
// then.
func (s *strategy) withRules(ctx context.Context, errs field.ErrorList, obj, old any, opts ...structuralschemacel.Option) field.ErrorList {
	if s.cel == nil {
		return errs
	}
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany,
			field.ErrorTypeTypeInvalid:
			return append(errs, field.Invalid(nil, nil,
				"some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		}
	}
	ruleErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, old, celconfig.RuntimeCELCostBudget, opts...)
	return append(errs, ruleErrs...)
}

func (s *strategy) typeMeta(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if u.GetKind() != s.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), fmt.Sprintf("must be %v", s.gvk.Kind)))
	}
	if want := s.gvk.Group + "/" + s.gvk.Version; u.GetAPIVersion() != want {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), fmt.Sprintf("must be %v", want)))
	}
	return errs
}

func objectMeta(u *unstructured.Unstructured) (*metav1.ObjectMeta, field.ErrorList) {
	raw, ok := u.Object["metadata"]
	if !ok || raw == nil {
		return &metav1.ObjectMeta{}, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, fmt.Sprintf("expected map[string]interface{}, got %T", raw))}
	}
	meta := &metav1.ObjectMeta{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, meta); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, err.Error())}
	}
	return meta, nil
}

// scaleErrors checks the replica counts (and the selector's type) at the scale subresource's paths.
func (s *strategy) scaleErrors(u *unstructured.Unstructured) field.ErrorList {
	if s.scale == nil {
		return nil
	}
	errs := replicasAt(u, s.scale.SpecReplicasPath)
	errs = append(errs, replicasAt(u, s.scale.StatusReplicasPath)...)
	if p := s.scale.LabelSelectorPath; p != nil {
		v, _, err := unstructured.NestedString(u.Object, strings.Split(strings.TrimPrefix(*p, "."), ".")...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*p), v, err.Error()))
		}
	}
	return errs
}

func replicasAt(u *unstructured.Unstructured, path string) field.ErrorList {
	n, _, err := unstructured.NestedInt64(u.Object, strings.Split(strings.TrimPrefix(path, "."), ".")...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, err.Error())}
	case n < 0:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, "should be a non-negative integer")}
	case n > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}
