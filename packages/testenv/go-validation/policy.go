//go:build js && wasm

package main

import (
	"encoding/json"
	"fmt"
	"strings"

	celgo "github.com/google/cel-go/cel"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
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
// matched custom kinds among crds, as the apiserver's type checker does.
func checkPolicy(policyJSON, crdsJSON string) (any, error) {
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	if err := json.Unmarshal([]byte(policyJSON), &policy); err != nil {
		return nil, fmt.Errorf("the policy is not a ValidatingAdmissionPolicy of admissionregistration.k8s.io/v1: %w", err)
	}
	var crds []json.RawMessage
	if err := json.Unmarshal([]byte(crdsJSON), &crds); err != nil {
		return nil, fmt.Errorf("the CRDs are not a JSON array: %w", err)
	}
	defaultPolicy(&policy)
	problems := compileProblems(&policy)
	mapper := meta.NewDefaultRESTMapper(nil)
	schemas := map[schema.GroupVersionKind]*spec.Schema{}
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
			mapper.AddSpecific(gvk, gvk.GroupVersion().WithResource(v1.Spec.Names.Plural),
				gvk.GroupVersion().WithResource(v1.Spec.Names.Singular), scope)
			schemas[gvk] = objectSchema(s)
		}
	}
	checker := &validating.TypeChecker{SchemaResolver: crdSchemas(schemas), RestMapper: mapper}
	for _, w := range checker.Check(&policy) {
		problems = append(problems, policyProblem{Field: w.FieldRef, Detail: w.Warning, TypeCheck: true})
	}
	return problems, nil
}

// objectSchema is a kind's schema as the type checker resolves it: the CRD's, with metadata an open object.
func objectSchema(s *structuralschema.Structural) *spec.Schema {
	out := s.ToKubeOpenAPI()
	if out.Properties == nil {
		out.Properties = map[string]spec.Schema{}
	}
	if _, ok := out.Properties["metadata"]; !ok || len(out.Properties["metadata"].Properties) == 0 {
		metadata := spec.Schema{}
		metadata.Type = []string{"object"}
		metadata.Extensions = spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}
		out.Properties["metadata"] = metadata
	}
	return out
}

type crdSchemas map[schema.GroupVersionKind]*spec.Schema

func (c crdSchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if s, ok := c[gvk]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("%v: %w", gvk, resolver.ErrSchemaNotFound)
}

// compileProblems compiles each expression untyped, in the environment for new expressions.
func compileProblems(policy *admissionregistrationv1.ValidatingAdmissionPolicy) []policyProblem {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return []policyProblem{{Field: "spec", Detail: err.Error()}}
	}
	spec := field.NewPath("spec")
	options := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	var problems []policyProblem
	compile := func(e expression, opts plugincel.OptionalVariableDeclarations) {
		if r := compiler.CompileCELExpression(e, opts, environment.NewExpressions); r.Error != nil {
			problems = append(problems, policyProblem{Field: e.path.String(), Detail: r.Error.Error()})
		}
	}
	for i, v := range policy.Spec.Variables {
		e := expression{path: spec.Child("variables").Index(i).Child("expression"), expression: v.Expression, named: v.Name, returns: anything}
		compile(e, options)
		compiler.CompileAndStoreVariables([]plugincel.NamedExpressionAccessor{e}, options, environment.NewExpressions)
	}
	// match conditions are compiled without the variables, as the apiserver's validation of a policy does
	stateless := plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	for i, c := range policy.Spec.MatchConditions {
		e := expression{path: spec.Child("matchConditions").Index(i).Child("expression"), expression: strings.TrimSpace(c.Expression), returns: boolean}
		if r := stateless.CompileCELExpression(e, plugincel.OptionalVariableDeclarations{HasParams: options.HasParams, HasAuthorizer: true}, environment.NewExpressions); r.Error != nil {
			problems = append(problems, policyProblem{Field: e.path.String(), Detail: r.Error.Error()})
		}
	}
	for i, v := range policy.Spec.Validations {
		p := spec.Child("validations").Index(i)
		compile(expression{path: p.Child("expression"), expression: v.Expression, returns: boolean}, options)
		if v.MessageExpression != "" {
			noAuthz := options
			noAuthz.HasAuthorizer = false
			compile(expression{path: p.Child("messageExpression"), expression: v.MessageExpression, returns: text}, noAuthz)
		}
	}
	for i, a := range policy.Spec.AuditAnnotations {
		compile(expression{path: spec.Child("auditAnnotations").Index(i).Child("valueExpression"), expression: a.ValueExpression, returns: textOrNull}, options)
	}
	return problems
}
