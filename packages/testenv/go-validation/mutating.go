//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
)

// builtIn types the built-in kinds for apply configurations: client-go's schema of them, generated from the same
// OpenAPI models the apiserver serves and its admission plugin reads.
var builtIn = sync.OnceValue(func() managedfields.TypeConverter { return applyconfigurations.NewTypeConverter(scheme.Scheme) })

// converters serves the type converter of the kind written, as the apiserver's TypeConverterManager serves it from
// its OpenAPI: a built-in kind's, or the one built from the CRD as the apiserver publishes the CRD's OpenAPI v3.
type converters struct {
	custom schema.GroupVersionKind
	crd    managedfields.TypeConverter
}

// Run has nothing to refresh: the converters are built from what the request gives (the apiserver polls its OpenAPI).
func (c converters) Run(context.Context) {}

func (c converters) GetTypeConverter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	if c.crd != nil && gvk == c.custom {
		return c.crd
	}
	// client-go's converter serves exactly the kinds of its scheme
	if scheme.Scheme.Recognizes(gvk) {
		return builtIn()
	}
	return nil
}

// defaulter applies a custom kind's structural defaults after each mutation, as the apiserver's handler of the kind
// does; a built-in kind's object is left as the mutation made it.
type defaulter struct {
	admission.ObjectInterfaces
	kind *kind
}

func (d defaulter) GetObjectDefaulter() runtime.ObjectDefaulter { return d }

func (d defaulter) Default(in runtime.Object) {
	if u, ok := in.(runtime.Unstructured); ok && d.kind != nil && u.GetObjectKind().GroupVersionKind() == d.kind.gvk {
		structuraldefaulting.Default(u.UnstructuredContent(), d.kind.structural)
	}
}

// evaluateMutatingPolicy admits a write through a MutatingAdmissionPolicy and its binding as the apiserver's mutating
// admission plugin does: the object as the policy leaves it (nil when it is not mutated), else the Status of the
// refusal (an expression that errs under failurePolicy Fail, a patch the apiserver cannot apply), and the warnings.
func evaluateMutatingPolicy(policyJSON, bindingJSON, requestJSON string) (any, error) {
	var policy admissionregistrationv1.MutatingAdmissionPolicy
	var binding admissionregistrationv1.MutatingAdmissionPolicyBinding
	var req policyRequest
	if err := decodeInputs(policyJSON, bindingJSON, requestJSON, &policy, &binding, &req); err != nil {
		return nil, err
	}
	if binding.Spec.PolicyName != policy.Name {
		return nil, fmt.Errorf("the binding %q binds policy %q, not %q", binding.Name, binding.Spec.PolicyName, policy.Name)
	}
	defaultMutatingPolicy(&policy)
	if problems := mutationProblems(&policy); len(problems) > 0 {
		return nil, fmt.Errorf("the apiserver refuses this MutatingAdmissionPolicy: %s: %s", problems[0].Field, problems[0].Detail)
	}
	if binding.Spec.MatchResources != nil {
		defaultMatch(binding.Spec.MatchResources)
	}
	in, err := prepareAdmission(&req, policy.Spec.ParamKind)
	if err != nil {
		return nil, err
	}
	gvk := schema.GroupVersionKind{Group: req.Group, Version: req.Version, Kind: req.Kind}
	tc := converters{custom: gvk}
	o := defaulter{ObjectInterfaces: admission.NewObjectInterfacesFromScheme(runtime.NewScheme())}
	if len(req.CRD) > 0 && string(req.CRD) != "null" {
		if o.kind, tc.crd, err = crdConverter(string(req.CRD), gvk); err != nil {
			return nil, err
		}
	} else if tc.GetTypeConverter(gvk) == nil {
		return nil, fmt.Errorf("%s is not a built-in kind: pass its CustomResourceDefinition as the request's crd", gvk)
	}
	hook := mutating.PolicyHook{Policy: &policy, Bindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{&binding},
		Evaluator: compileMutating(&policy), ParamInformer: in.paramInformer, ParamScope: in.paramScope}
	rec := &recorder{}
	ctx := warning.WithWarningRecorder(context.Background(), rec)
	dispatcher := mutating.NewDispatcher(allowAll{}, in.matcher, tc)
	before := in.attrs.GetObject()
	if before != nil {
		before = before.DeepCopyObject()
	}
	out := map[string]any{}
	if err := dispatcher.Dispatch(ctx, in.attrs, o, []mutating.PolicyHook{hook}); err != nil {
		status, ok := err.(apierrors.APIStatus)
		if !ok {
			return nil, err
		}
		out["status"] = status.Status()
	} else if after := in.attrs.GetObject(); after != nil {
		out["object"] = after
		out["mutated"] = !equalObjects(before, after)
	}
	out["warnings"] = rec.warnings
	return out, nil
}

func equalObjects(a, b runtime.Object) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}

var converterMemo = map[string]managedfields.TypeConverter{}

// crdConverter is the custom kind's prepared schema (for its defaults) and the type converter the apiserver builds
// from the CRD's published OpenAPI v3.
func crdConverter(crdJSON string, gvk schema.GroupVersionKind) (*kind, managedfields.TypeConverter, error) {
	v1, _, err := decodeCRD(crdJSON)
	if err != nil {
		return nil, nil, err
	}
	if v1.Spec.Group != gvk.Group || v1.Spec.Names.Kind != gvk.Kind {
		return nil, nil, fmt.Errorf("the request's crd is %s of %s, not the kind written (%s)", v1.Spec.Names.Kind, v1.Spec.Group, gvk)
	}
	k, err := prepare(crdJSON, gvk.Version)
	if err != nil {
		return nil, nil, err
	}
	tc, err := memo(converterMemo, crdJSON+"\x00"+gvk.Version, func() (managedfields.TypeConverter, error) {
		openapi, err := crdOpenAPI(v1, gvk.Version)
		if err != nil {
			return nil, err
		}
		// preserveUnknownFields false, as the apiserver's TypeConverterManager builds it from the published OpenAPI
		tc, err := managedfields.NewTypeConverter(openapi.Components.Schemas, false)
		if err != nil {
			return nil, fmt.Errorf("the type converter of %s: %w", gvk, err)
		}
		return tc, nil
	})
	return k, tc, err
}

// compileMutating builds the policy's evaluator as the apiserver's mutating admission plugin does (its compilePolicy
// is not exported): variables, match conditions and each mutation in order, in the environment for stored
// expressions, with the patch types.
func compileMutating(policy *admissionregistrationv1.MutatingAdmissionPolicy) mutating.PolicyEvaluator {
	opts := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	compiler, matcher, err := compileShared(policy.Name, policy.Spec.Variables, policy.Spec.MatchConditions, policy.Spec.FailurePolicy, opts)
	if err != nil {
		return mutating.PolicyEvaluator{Error: err}
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	var patchers []patch.Patcher
	for _, m := range mutationsOf(policy) {
		e := compiler.CompileMutatingEvaluator(m.accessor, patchOpts, environment.StoredExpressions)
		if m.jsonPatch {
			patchers = append(patchers, patch.NewJSONPatcher(e))
		} else {
			patchers = append(patchers, patch.NewApplyConfigurationPatcher(e))
		}
	}
	return mutating.PolicyEvaluator{Matcher: matcher, Mutators: patchers, CompositedCompiler: compiler}
}

// mutationExpression is one mutation's expression, as the apiserver's patchers compile it.
type mutationExpression struct {
	path      *field.Path // spec.mutations[i].jsonPatch.expression, or ….applyConfiguration.expression
	accessor  plugincel.ExpressionAccessor
	jsonPatch bool
}

// mutationsOf is each mutation's expression, in order; mutationProblems has already refused a mutation whose body is
// not its patchType's.
func mutationsOf(policy *admissionregistrationv1.MutatingAdmissionPolicy) []mutationExpression {
	var out []mutationExpression
	for i, m := range policy.Spec.Mutations {
		p := field.NewPath("spec", "mutations").Index(i)
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			out = append(out, mutationExpression{p.Child("jsonPatch", "expression"), &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, true})
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			out = append(out, mutationExpression{p.Child("applyConfiguration", "expression"), &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, false})
		}
	}
	return out
}

// mutationProblems is what the apiserver refuses in a MutatingAdmissionPolicy besides its expressions: no
// reinvocationPolicy (it has no default), a mutation whose body is not its patchType's.
func mutationProblems(policy *admissionregistrationv1.MutatingAdmissionPolicy) []policyProblem {
	var problems []policyProblem
	switch policy.Spec.ReinvocationPolicy {
	case admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy:
	default:
		problems = append(problems, policyProblem{Field: "spec.reinvocationPolicy", Detail: fmt.Sprintf("must be Never or IfNeeded, not %q", policy.Spec.ReinvocationPolicy)})
	}
	for i, m := range policy.Spec.Mutations {
		p := field.NewPath("spec", "mutations").Index(i)
		jsonPatch := m.PatchType == admissionregistrationv1.PatchTypeJSONPatch
		apply := m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration
		switch {
		case !jsonPatch && !apply:
			problems = append(problems, policyProblem{Field: p.Child("patchType").String(), Detail: fmt.Sprintf("must be ApplyConfiguration or JSONPatch, not %q", m.PatchType)})
		case jsonPatch && (m.JSONPatch == nil || m.ApplyConfiguration != nil):
			problems = append(problems, policyProblem{Field: p.String(), Detail: "patchType JSONPatch needs jsonPatch, and no applyConfiguration"})
		case apply && (m.ApplyConfiguration == nil || m.JSONPatch != nil):
			problems = append(problems, policyProblem{Field: p.String(), Detail: "patchType ApplyConfiguration needs applyConfiguration, and no jsonPatch"})
		}
	}
	return problems
}

// defaultMutatingPolicy fills in what the apiserver defaults on a stored MutatingAdmissionPolicy.
func defaultMutatingPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		fail := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &fail
	}
	if p.Spec.MatchConstraints != nil {
		defaultMatch(p.Spec.MatchConstraints)
	}
}
