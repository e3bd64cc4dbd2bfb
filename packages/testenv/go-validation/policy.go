//go:build js && wasm

package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	celgo "github.com/google/cel-go/cel"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// policyProblem is one expression of a policy the apiserver would refuse (compile) or warn about (typeCheck: checked
// against the schema of a matched kind, as the apiserver records in the policy's status.typeChecking).
type policyProblem struct {
	Field     string `json:"field"`
	Detail    string `json:"detail"`
	TypeCheck bool   `json:"typeCheck"`
}

type expression struct {
	path       *field.Path
	expression string
	named      string
	returns    []*celgo.Type
}

func (e expression) GetExpression() string      { return e.expression }
func (e expression) GetName() string            { return e.named }
func (e expression) ReturnTypes() []*celgo.Type { return e.returns }

var (
	boolean    = []*celgo.Type{celgo.BoolType}
	text       = []*celgo.Type{celgo.StringType}
	textOrNull = []*celgo.Type{celgo.StringType, celgo.NullType}
	anything   = []*celgo.Type{celgo.AnyType}
)

// checkPolicy compiles every expression of a ValidatingAdmissionPolicy as the apiserver does on create (its
// variables first, each in the composition environment), then type-checks its validations against the schemas of the
// matched custom kinds among crds, as the apiserver's type checker does. A MutatingAdmissionPolicy is checked by
// checkMutatingPolicy.
func checkPolicy(policyJSON, crdsJSON string) (any, error) {
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(policyJSON), &kind); err != nil {
		return nil, fmt.Errorf("the policy is not valid JSON: %w", err)
	}
	known, err := crdKinds(crdsJSON)
	if err != nil {
		return nil, err
	}
	if kind.Kind == "MutatingAdmissionPolicy" {
		return checkMutatingPolicy(policyJSON, known)
	}
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	if err := json.Unmarshal([]byte(policyJSON), &policy); err != nil {
		return nil, fmt.Errorf("the policy is not a ValidatingAdmissionPolicy of admissionregistration.k8s.io/v1: %w", err)
	}
	defaultPolicy(&policy)
	problems := compileProblems(&policy)
	checker := &validating.TypeChecker{SchemaResolver: known.schemas, RestMapper: known.mapper}
	for _, w := range checker.Check(&policy) {
		problems = append(problems, policyProblem{Field: w.FieldRef, Detail: w.Warning, TypeCheck: true})
	}
	return problems, nil
}

// knownKinds are the served versions of the project's CRDs: their schemas, as the type checkers resolve them.
type knownKinds struct {
	mapper      *meta.DefaultRESTMapper
	schemas     crdSchemas
	structurals map[schema.GroupVersionKind]*structuralschema.Structural
	plurals     map[schema.GroupVersionKind]string
}

func crdKinds(crdsJSON string) (*knownKinds, error) {
	var crds []json.RawMessage
	if err := json.Unmarshal([]byte(crdsJSON), &crds); err != nil {
		return nil, fmt.Errorf("the CRDs are not a JSON array: %w", err)
	}
	known := &knownKinds{mapper: meta.NewDefaultRESTMapper(nil), schemas: crdSchemas{},
		structurals: map[schema.GroupVersionKind]*structuralschema.Structural{}, plurals: map[schema.GroupVersionKind]string{}}
	for _, raw := range crds {
		v1, _, err := decodeCRD(string(raw))
		if err != nil {
			return nil, err
		}
		for i := range v1.Spec.Versions {
			v := &v1.Spec.Versions[i]
			if !v.Served || v.Schema == nil {
				continue
			}
			// the schema only: the CRD itself is checkCRD's to validate, and its rules are not compiled here
			_, s, err := structuralOf(v)
			if err != nil {
				return nil, err
			}
			gvk := schema.GroupVersionKind{Group: v1.Spec.Group, Version: v.Name, Kind: v1.Spec.Names.Kind}
			scope := meta.RESTScopeRoot
			if v1.Spec.Scope == apiextensionsv1.NamespaceScoped {
				scope = meta.RESTScopeNamespace
			}
			known.mapper.AddSpecific(gvk, gvk.GroupVersion().WithResource(v1.Spec.Names.Plural),
				gvk.GroupVersion().WithResource(v1.Spec.Names.Singular), scope)
			if known.schemas[gvk], err = memo(schemaMemo, string(raw)+"\x00"+v.Name, func() (*spec.Schema, error) {
				openapi, err := crdOpenAPI(v1, v.Name)
				if err != nil {
					return nil, err
				}
				return resolvedSchema(openapi, gvk)
			}); err != nil {
				return nil, err
			}
			known.structurals[gvk] = s
			known.plurals[gvk] = v1.Spec.Names.Plural
		}
	}
	return known, nil
}

var schemaMemo = map[string]*spec.Schema{}

// memo is f's result, kept by key (a CRD's JSON and a version: building its OpenAPI is what a check of a policy spends
// most on) for the next calls; at most maxKinds results are kept.
func memo[T any](m map[string]T, key string, f func() (T, error)) (T, error) {
	mu.Lock()
	if v, ok := m[key]; ok {
		mu.Unlock()
		return v, nil
	}
	mu.Unlock()
	v, err := f()
	if err != nil {
		return v, err
	}
	mu.Lock()
	if len(m) >= maxKinds {
		clear(m)
	}
	m[key] = v
	mu.Unlock()
	return v, nil
}

// crdOpenAPI is a served version's OpenAPI v3 as the apiserver publishes it (ObjectMeta and the other types it
// refers to among its components).
func crdOpenAPI(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec3.OpenAPI, error) {
	openapi, err := builder.BuildOpenAPIV3(crd, version, builder.Options{V2: false, IncludeSelectableFields: true})
	if err != nil {
		return nil, fmt.Errorf("the OpenAPI of %s, version %s: %w", crd.Name, version, err)
	}
	return openapi, nil
}

// resolvedSchema is a kind's schema as the apiserver's type checker resolves it from the published OpenAPI: the
// component of that kind, its references filled in (so metadata is all of ObjectMeta).
func resolvedSchema(openapi *spec3.OpenAPI, gvk schema.GroupVersionKind) (*spec.Schema, error) {
	for ref, s := range openapi.Components.Schemas {
		var gvks []schema.GroupVersionKind
		if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &gvks); err != nil {
			return nil, err
		}
		for _, g := range gvks {
			if g == gvk {
				return resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
					s, ok := openapi.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
					return s, ok
				}, ref)
			}
		}
	}
	return nil, fmt.Errorf("%v: %w", gvk, resolver.ErrSchemaNotFound)
}

type crdSchemas map[schema.GroupVersionKind]*spec.Schema

func (c crdSchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if s, ok := c[gvk]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("%v: %w", gvk, resolver.ErrSchemaNotFound)
}

// checked is one expression to compile, and what its environment has beyond the policy's variables.
type checked struct {
	e            expression
	patchTypes   bool // JSONPatch and Object (a mutation)
	noAuthorizer bool // a message expression
}

// compileProblems compiles each expression of a ValidatingAdmissionPolicy untyped, in the environment for new
// expressions.
func compileProblems(policy *admissionregistrationv1.ValidatingAdmissionPolicy) []policyProblem {
	spec := field.NewPath("spec")
	var items []checked
	for i, v := range policy.Spec.Validations {
		p := spec.Child("validations").Index(i)
		items = append(items, checked{e: expression{path: p.Child("expression"), expression: v.Expression, returns: boolean}})
		if v.MessageExpression != "" {
			items = append(items, checked{e: expression{path: p.Child("messageExpression"), expression: v.MessageExpression, returns: text}, noAuthorizer: true})
		}
	}
	for i, a := range policy.Spec.AuditAnnotations {
		items = append(items, checked{e: expression{path: spec.Child("auditAnnotations").Index(i).Child("valueExpression"), expression: a.ValueExpression, returns: textOrNull}})
	}
	return compileExpressions(policy.Spec.ParamKind != nil, policy.Spec.Variables, policy.Spec.MatchConditions, items)
}

// compileExpressions compiles a policy's variables (each in the composition environment), its match conditions
// (without the variables, as the apiserver's validation of a policy does) and the items, as the apiserver does when the
// policy is created.
func compileExpressions(hasParams bool, variables []admissionregistrationv1.Variable, conditions []admissionregistrationv1.MatchCondition, items []checked) []policyProblem {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return []policyProblem{{Field: "spec", Detail: err.Error()}}
	}
	spec := field.NewPath("spec")
	options := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	var problems []policyProblem
	compile := func(e expression, opts plugincel.OptionalVariableDeclarations) {
		if r := compiler.CompileCELExpression(e, opts, environment.NewExpressions); r.Error != nil {
			problems = append(problems, policyProblem{Field: e.path.String(), Detail: r.Error.Error()})
		}
	}
	for i, v := range variables {
		e := expression{path: spec.Child("variables").Index(i).Child("expression"), expression: v.Expression, named: v.Name, returns: anything}
		compile(e, options)
		compiler.CompileAndStoreVariables([]plugincel.NamedExpressionAccessor{e}, options, environment.NewExpressions)
	}
	stateless := plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	for i, c := range conditions {
		e := expression{path: spec.Child("matchConditions").Index(i).Child("expression"), expression: strings.TrimSpace(c.Expression), returns: boolean}
		if r := stateless.CompileCELExpression(e, options, environment.NewExpressions); r.Error != nil {
			problems = append(problems, policyProblem{Field: e.path.String(), Detail: r.Error.Error()})
		}
	}
	for _, item := range items {
		opts := options
		opts.HasPatchTypes = item.patchTypes
		opts.HasAuthorizer = !item.noAuthorizer
		compile(item.e, opts)
	}
	return problems
}

// sorted is the known kinds in a stable order.
func (k *knownKinds) sorted() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(k.structurals))
	for gvk := range k.structurals {
		out = append(out, gvk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
