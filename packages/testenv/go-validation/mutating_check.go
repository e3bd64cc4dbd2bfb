//go:build js && wasm

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	celgo "github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
	"k8s.io/apiserver/pkg/cel/mutation"
	"k8s.io/apiserver/pkg/cel/openapi"
)

// checkMutatingPolicy compiles every expression of a MutatingAdmissionPolicy as the apiserver does on create, then
// type-checks them against the schema of each matched custom kind among crds. The apiserver has no type checker for
// mutations; this one is the validating policies' (object, oldObject and params typed by their schemas) with the
// `Object` types of apply configurations typed too, so a field an apply configuration sets that the schema does not
// have, or a value of the wrong type, is found; and a JSON patch's constant `path` is held to the schema.
func checkMutatingPolicy(policyJSON string, known *knownKinds) (any, error) {
	var policy admissionregistrationv1.MutatingAdmissionPolicy
	if err := json.Unmarshal([]byte(policyJSON), &policy); err != nil {
		return nil, fmt.Errorf("the policy is not a MutatingAdmissionPolicy of admissionregistration.k8s.io/v1: %w", err)
	}
	defaultMutatingPolicy(&policy)
	var items []checked
	for _, m := range mutationsOf(&policy) {
		items = append(items, checked{e: expression{path: m.path, expression: m.accessor.GetExpression(), returns: m.accessor.ReturnTypes()}, patchTypes: true})
	}
	problems := append(mutationProblems(&policy), compileExpressions(policy.Spec.ParamKind != nil, policy.Spec.Variables, policy.Spec.MatchConditions, items)...)
	// an expression that does not compile is not type-checked: that would only repeat its error
	failed := map[string]bool{}
	for _, p := range problems {
		failed[p.Field] = true
	}
	params := known.paramKind(policy.Spec.ParamKind)
	for _, gvk := range known.matched(policy.Spec.MatchConstraints) {
		for _, p := range typeCheckMutations(&policy, gvk, known, params, items) {
			if !failed[p.Field] {
				problems = append(problems, p)
			}
		}
	}
	return problems, nil
}

// matched is each served version of a known kind that the rules match, in a stable order.
func (k *knownKinds) matched(m *admissionregistrationv1.MatchResources) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	if m == nil {
		return out
	}
	in := func(list []string, v string) bool {
		for _, x := range list {
			if x == "*" || x == v {
				return true
			}
		}
		return false
	}
	for _, gvk := range k.sorted() {
		for _, r := range m.ResourceRules {
			if in(r.APIGroups, gvk.Group) && in(r.APIVersions, gvk.Version) && in(r.Resources, k.plurals[gvk]) {
				out = append(out, gvk)
				break
			}
		}
	}
	return out
}

// paramKind is the params' kind when it is a known kind, else the empty kind (params are then dynamic).
func (k *knownKinds) paramKind(p *admissionregistrationv1.ParamKind) schema.GroupVersionKind {
	if p == nil {
		return schema.GroupVersionKind{}
	}
	gv, err := schema.ParseGroupVersion(p.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}
	}
	gvk := gv.WithKind(p.Kind)
	if _, ok := k.structurals[gvk]; !ok {
		return schema.GroupVersionKind{}
	}
	return gvk
}

// typeCheckMutations compiles each variable, match condition and mutation with the types of one matched kind.
func typeCheckMutations(policy *admissionregistrationv1.MutatingAdmissionPolicy, gvk schema.GroupVersionKind,
	known *knownKinds, params schema.GroupVersionKind, items []checked) []policyProblem {
	object := declTypeOf(known, gvk)
	var paramsType *apiservercel.DeclType
	if !params.Empty() {
		paramsType = declTypeOf(known, params)
	}
	hasParams := policy.Spec.ParamKind != nil
	resolver := &schemaResolver{root: known.structurals[gvk]}
	env, err := typedEnv(object, paramsType, hasParams, resolver)
	if err != nil {
		return []policyProblem{{Field: "spec", Detail: err.Error(), TypeCheck: true}}
	}
	compiler, err := plugincel.NewCompositedCompilerForTypeChecking(env)
	if err != nil {
		return []policyProblem{{Field: "spec", Detail: err.Error(), TypeCheck: true}}
	}
	compiler.Compiler = typedCompiler{compiler}
	options := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	var problems []policyProblem
	report := func(path *field.Path, detail string) {
		problems = append(problems, policyProblem{Field: path.String(), Detail: fmt.Sprintf("%v: %s", gvk, detail), TypeCheck: true})
	}
	spec := field.NewPath("spec")
	for i, v := range policy.Spec.Variables {
		e := expression{path: spec.Child("variables").Index(i).Child("expression"), expression: v.Expression, named: v.Name, returns: anything}
		if r := compiler.CompileAndStoreVariable(e, options, environment.StoredExpressions); r.Error != nil {
			report(e.path, r.Error.Detail)
		}
	}
	for i, c := range policy.Spec.MatchConditions {
		e := expression{path: spec.Child("matchConditions").Index(i).Child("expression"), expression: c.Expression, returns: boolean}
		if r := compiler.CompileCELExpression(e, options, environment.StoredExpressions); r.Error != nil {
			report(e.path, r.Error.Detail)
		}
	}
	cel, err := compiler.Env(environment.StoredExpressions)
	if err != nil {
		return append(problems, policyProblem{Field: "spec", Detail: err.Error(), TypeCheck: true})
	}
	for _, item := range items {
		ast, issues := cel.Compile(item.e.expression)
		if issues != nil && issues.Err() != nil {
			report(item.e.path, issues.String())
			continue
		}
		for _, p := range jsonPatchPaths(ast) {
			if detail := checkPointer(known.structurals[gvk], p); detail != "" {
				report(item.e.path, detail)
			}
		}
		for _, detail := range objectLiteralNames(ast) {
			report(item.e.path, detail)
		}
		for _, f := range atomicFields(ast, resolver) {
			report(item.e.path, fmt.Sprintf("%s is atomic (a list without x-kubernetes-list-type map or set, or a map or struct marked atomic): "+
				"the apiserver refuses an apply configuration that sets it; set it with a JSON patch, or give it a list type", f))
		}
	}
	return problems
}

func declTypeOf(known *knownKinds, gvk schema.GroupVersionKind) *apiservercel.DeclType {
	t := common.SchemaDeclType(&openapi.Schema{Schema: known.schemas[gvk]}, true)
	if t == nil {
		return nil
	}
	return t.MaybeAssignTypeName(strings.NewReplacer(".", "_", "-", "_").Replace(gvk.Kind + "_" + gvk.Group + "_" + gvk.Version))
}

// typedEnv is the apiserver's environment for policy expressions with object, oldObject and params typed, and the
// patch types: `JSONPatch`, and `Object` types resolved against the schema.
func typedEnv(object, params *apiservercel.DeclType, hasParams bool, objects common.TypeResolver) (*environment.EnvSet, error) {
	requestType, namespaceType := plugincel.BuildRequestType(), plugincel.BuildNamespaceType()
	declTypes := []*apiservercel.DeclType{namespaceType, requestType}
	typed := func(t *apiservercel.DeclType) *types.Type {
		if t == nil {
			return types.DynType
		}
		declTypes = append(declTypes, t)
		return t.CelType()
	}
	objectType := typed(object)
	opts := []celgo.EnvOption{
		celgo.Variable(plugincel.ObjectVarName, objectType),
		celgo.Variable(plugincel.OldObjectVarName, objectType),
		celgo.Variable(plugincel.NamespaceVarName, namespaceType.CelType()),
		celgo.Variable(plugincel.RequestVarName, requestType.CelType()),
		celgo.Variable(plugincel.AuthorizerVarName, library.AuthorizerType),
		celgo.Variable(plugincel.RequestResourceAuthorizerVarName, library.ResourceCheckType),
	}
	if hasParams {
		opts = append(opts, celgo.Variable(plugincel.ParamsVarName, typed(params)))
	}
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	env, err := base.Extend(environment.VersionedOptions{IntroducedVersion: version.MajorMinor(1, 0), EnvOptions: opts, DeclTypes: declTypes})
	if err != nil {
		return nil, err
	}
	return env.Extend(environment.VersionedOptions{IntroducedVersion: version.MajorMinor(1, 0), EnvOptions: []celgo.EnvOption{
		common.ResolverEnvOption(objects), environment.UnversionedLib(library.JSONPatch),
	}})
}

// typedCompiler compiles without a program and without holding the output to a type, as the apiserver's type checker
// does: only what the types show is reported.
type typedCompiler struct{ compiler *plugincel.CompositedCompiler }

func (c typedCompiler) CompileCELExpression(e plugincel.ExpressionAccessor, _ plugincel.OptionalVariableDeclarations, mode environment.Type) plugincel.CompilationResult {
	env, err := c.compiler.Env(mode)
	if err != nil {
		return plugincel.CompilationResult{Error: &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: err.Error()}}
	}
	ast, issues := env.Compile(e.GetExpression())
	if issues != nil && issues.Err() != nil {
		return plugincel.CompilationResult{Error: &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: issues.String()}, ExpressionAccessor: e}
	}
	return plugincel.CompilationResult{OutputType: ast.OutputType(), ExpressionAccessor: e}
}

// structFields calls f with each field of each struct literal of the expression: its type's name, the field's name
// and its value.
func structFields(a *celgo.Ast, f func(typeName, name string, value celast.Expr)) {
	celast.PostOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.StructKind {
			return
		}
		for _, entry := range e.AsStruct().Fields() {
			sf := entry.AsStructField()
			f(e.AsStruct().TypeName(), sf.Name(), sf.Value())
		}
	}))
}

// jsonPatchPaths are the constant `path` and `from` strings of the expression's JSONPatch values.
func jsonPatchPaths(a *celgo.Ast) []string {
	var paths []string
	structFields(a, func(typeName, name string, v celast.Expr) {
		if typeName == mutation.JSONPatchTypeName && (name == "path" || name == "from") && v.Kind() == celast.LiteralKind {
			if s, ok := v.AsLiteral().(types.String); ok {
				paths = append(paths, string(s))
			}
		}
	})
	return paths
}

// objectLiteralNames are the nested `Object…` literals whose type name is not their field's path, which the apiserver
// refuses at run time ("unexpected type name"): `Object.spec{template: Object.spec.templat{…}}`. A list's items and a
// map's values carry the name of the list or map.
func objectLiteralNames(a *celgo.Ast) []string {
	var found []string
	var check func(want string, v celast.Expr)
	check = func(want string, v celast.Expr) {
		switch v.Kind() {
		case celast.StructKind:
			if got := v.AsStruct().TypeName(); strings.HasPrefix(got, mutation.ObjectTypeName) && got != want {
				found = append(found, fmt.Sprintf("%s{…} is set as %s: its type must be %s{…}", got, strings.TrimPrefix(want, mutation.ObjectTypeName+"."), want))
			}
		case celast.ListKind:
			for _, e := range v.AsList().Elements() {
				check(want, e)
			}
		case celast.MapKind:
			for _, e := range v.AsMap().Entries() {
				check(want, e.AsMapEntry().Value())
			}
		}
	}
	structFields(a, func(typeName, name string, v celast.Expr) {
		if typeName == mutation.ObjectTypeName || strings.HasPrefix(typeName, mutation.ObjectTypeName+".") {
			check(typeName+"."+name, v)
		}
	})
	return found
}

// atomicFields are the fields an apply configuration of the expression sets that the schema makes atomic: the
// apiserver refuses every such patch ("may not mutate atomic arrays, maps or structs").
func atomicFields(a *celgo.Ast, r *schemaResolver) []string {
	var found []string
	structFields(a, func(typeName, name string, _ celast.Expr) {
		if t, ok := r.Resolve(typeName); ok {
			if o, ok := t.(*objectType); ok && o.node != nil && !o.node.XPreserveUnknownFields && !o.node.XEmbeddedResource {
				if p, ok := o.node.Properties[name]; ok && atomic(&p) {
					found = append(found, strings.TrimPrefix(typeName+"."+name, mutation.ObjectTypeName+"."))
				}
			}
		}
	})
	return found
}

// atomic is a node that server-side apply replaces whole: a list without a list type other than atomic (a CRD's
// lists are atomic unless they say otherwise), or a map or struct marked atomic.
func atomic(s *structuralschema.Structural) bool {
	if s.XPreserveUnknownFields || s.XEmbeddedResource || s.XIntOrString {
		return false
	}
	switch s.Type {
	case "array":
		return s.XListType == nil || *s.XListType == "atomic"
	case "object":
		return s.XMapType != nil && *s.XMapType == "atomic"
	}
	return false
}

// checkPointer holds a JSON pointer to the schema: each field must be one the schema has (below a list, an index or
// `-`). Empty when it fits, or when the schema says nothing of where it leads.
func checkPointer(root *structuralschema.Structural, pointer string) string {
	if pointer == "" || !strings.HasPrefix(pointer, "/") {
		return fmt.Sprintf("the JSON patch path %q must start with /", pointer)
	}
	node := root
	parts := strings.Split(pointer[1:], "/")
	for i, raw := range parts {
		name := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		if node == nil || node.XPreserveUnknownFields || node.XEmbeddedResource || (i == 0 && name == "metadata") {
			return ""
		}
		switch {
		case node.Items != nil:
			if _, err := strconv.Atoi(name); err != nil && name != "-" {
				return fmt.Sprintf("the JSON patch path %q: %q is a list: the next segment must be an index or -", pointer, "/"+strings.Join(parts[:i], "/"))
			}
			node = node.Items
		case node.AdditionalProperties != nil:
			node = node.AdditionalProperties.Structural
		default:
			p, ok := node.Properties[name]
			if !ok {
				return fmt.Sprintf("the JSON patch path %q: no field %q in the schema at %q", pointer, name, "/"+strings.Join(parts[:i], "/"))
			}
			node = &p
		}
	}
	return ""
}
