//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// policyRequest is one write, as the caller describes it.
type policyRequest struct {
	Operation string          `json:"operation"`
	Object    json.RawMessage `json:"object"`
	OldObject json.RawMessage `json:"oldObject"`
	// the resource written: group, version, resource (plural), kind, and its scope
	Group      string `json:"group"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
	// the request's Namespace object (its labels for namespaceSelector), when namespaced
	Namespace json.RawMessage   `json:"namespace"`
	Params    []json.RawMessage `json:"params"`
	// the params' resource and scope, when the policy has a paramKind
	ParamResource   string   `json:"paramResource"`
	ParamNamespaced bool     `json:"paramNamespaced"`
	User            string   `json:"user"`
	Groups          []string `json:"groups"`
	DryRun          bool     `json:"dryRun"`
	// the CRD of a custom kind written, for a MutatingAdmissionPolicy (its schema types the apply configurations)
	CRD json.RawMessage `json:"crd"`
}

type recorder struct{ warnings []string }

func (r *recorder) AddWarning(_, text string) { r.warnings = append(r.warnings, text) }

// annotated captures the audit annotations the dispatcher adds to the request.
type annotated struct {
	admission.Attributes
	annotations map[string]string
}

func (a *annotated) AddAnnotation(key, value string) error {
	a.annotations[key] = value
	return nil
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// evaluatePolicy admits a write through a ValidatingAdmissionPolicy and its binding as the apiserver's admission
// plugin does: nil status when allowed, else the Status of the refusal; the warnings (Warn) and audit annotations.
func evaluatePolicy(policyJSON, bindingJSON, requestJSON string) (any, error) {
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	var req policyRequest
	if err := decodeInputs(policyJSON, bindingJSON, requestJSON, &policy, &binding, &req); err != nil {
		return nil, err
	}
	if binding.Spec.PolicyName != policy.Name {
		return nil, fmt.Errorf("the binding %q binds policy %q, not %q", binding.Name, binding.Spec.PolicyName, policy.Name)
	}
	defaultPolicy(&policy)
	defaultBinding(&binding)
	in, err := prepareAdmission(&req, policy.Spec.ParamKind)
	if err != nil {
		return nil, err
	}
	hook := validating.PolicyHook{Policy: &policy, Bindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{&binding},
		Evaluator: compile(&policy), ParamInformer: in.paramInformer, ParamScope: in.paramScope}
	attrs := in.attrs
	rec := &recorder{}
	ctx := warning.WithWarningRecorder(context.Background(), rec)
	matcher := generic.NewPolicyMatcher(in.matcher)
	dispatcher := validating.NewDispatcher(allowAll{}, matcher)
	o := admission.NewObjectInterfacesFromScheme(runtime.NewScheme())
	out := map[string]any{"warnings": rec.warnings, "auditAnnotations": attrs.annotations}
	if err := dispatcher.Dispatch(ctx, attrs, o, []validating.PolicyHook{hook}); err != nil {
		status, ok := err.(apierrors.APIStatus)
		if !ok {
			return nil, err
		}
		out["status"] = status.Status()
	}
	out["warnings"] = rec.warnings
	return out, nil
}

// decodeInputs reads a policy, its binding and a request.
func decodeInputs(policyJSON, bindingJSON, requestJSON string, policy, binding any, req *policyRequest) error {
	if err := json.Unmarshal([]byte(policyJSON), policy); err != nil {
		return fmt.Errorf("the policy is not a %s of admissionregistration.k8s.io/v1: %w", reflect.TypeOf(policy).Elem().Name(), err)
	}
	if err := json.Unmarshal([]byte(bindingJSON), binding); err != nil {
		return fmt.Errorf("the binding is not a %s of admissionregistration.k8s.io/v1: %w", reflect.TypeOf(binding).Elem().Name(), err)
	}
	if err := json.Unmarshal([]byte(requestJSON), req); err != nil {
		return fmt.Errorf("the request is not valid JSON: %w", err)
	}
	return nil
}

// admissionInput is a request as the admission plugins see it: its attributes, the namespace it is in, its params.
type admissionInput struct {
	attrs         *annotated
	matcher       *matching.Matcher
	paramInformer informers.GenericInformer
	paramScope    meta.RESTScope
}

// prepareAdmission decodes a request's objects as the apiserver decodes a body (integers are int64, never float64) and
// serves its Namespace and params as the apiserver's informers would.
func prepareAdmission(req *policyRequest, paramKind *admissionregistrationv1.ParamKind) (*admissionInput, error) {
	gvk := schema.GroupVersionKind{Group: req.Group, Version: req.Version, Kind: req.Kind}
	object, err := requestObject("object", req.Object, gvk)
	if err != nil {
		return nil, err
	}
	oldObject, err := requestObject("oldObject", req.OldObject, gvk)
	if err != nil {
		return nil, err
	}
	namespaces, nsName, err := requestNamespace(req, object, oldObject)
	if err != nil {
		return nil, err
	}
	in := &admissionInput{matcher: matching.NewMatcher(corelisters.NewNamespaceLister(namespaces), nil)}
	if paramKind != nil {
		if in.paramInformer, in.paramScope, err = paramInformer(paramKind, req); err != nil {
			return nil, err
		}
	}
	var obj, old runtime.Object
	name := ""
	if oldObject != nil {
		old, name = oldObject, oldObject.GetName()
	}
	if object != nil {
		obj, name = object, object.GetName()
	}
	options := map[string]runtime.Object{"CREATE": &metav1.CreateOptions{}, "UPDATE": &metav1.UpdateOptions{}, "DELETE": &metav1.DeleteOptions{}}[req.Operation]
	gvr := schema.GroupVersionResource{Group: req.Group, Version: req.Version, Resource: req.Resource}
	in.attrs = &annotated{
		Attributes: admission.NewAttributesRecord(obj, old, gvk, nsName, name, gvr, "", admission.Operation(req.Operation),
			options, req.DryRun, &user.DefaultInfo{Name: req.User, Groups: req.Groups}),
		annotations: map[string]string{},
	}
	return in, nil
}

// requestObject is an object of the request, with the kind written as its apiVersion and kind when it has none (the
// apiserver knows them from the URL); nil when absent.
func requestObject(what string, raw json.RawMessage, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	o, err := decodeObject(what, raw)
	if err != nil || o == nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: o}
	if u.GetAPIVersion() == "" && u.GetKind() == "" {
		u.SetGroupVersionKind(gvk)
	} else if u.GroupVersionKind() != gvk {
		return nil, fmt.Errorf("%s: is a %s, but the request writes %s", what, u.GroupVersionKind(), gvk)
	}
	return u, nil
}

// requestNamespace serves the request's Namespace as the apiserver's informer would: the Namespace given, else one
// named as the object's namespace, else the old object's, else default. Its name; empty for a cluster-scoped kind.
func requestNamespace(req *policyRequest, object, oldObject *unstructured.Unstructured) (cache.Indexer, string, error) {
	namespaces := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if !req.Namespaced {
		return namespaces, "", nil
	}
	namespaceObject, err := decodeObject("namespace", req.Namespace)
	if err != nil {
		return nil, "", err
	}
	var ns corev1.Namespace
	if namespaceObject != nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(namespaceObject, &ns); err != nil {
			return nil, "", fmt.Errorf("namespace: %w", err)
		}
	}
	for _, o := range []*unstructured.Unstructured{object, oldObject} {
		if ns.Name == "" && o != nil {
			ns.Name = o.GetNamespace()
		}
	}
	if ns.Name == "" {
		ns.Name = "default"
	}
	_ = namespaces.Add(&ns)
	return namespaces, ns.Name, nil
}

// decodeObject reads one object of the request as the apiserver decodes a body (integers as int64); nil when absent.
func decodeObject(what string, raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var out map[string]any
	if err := utiljson.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s: must be a JSON object: %w", what, err)
	}
	return out, nil
}

// compile builds the policy's evaluator as the apiserver's admission plugin does: its variables, match conditions,
// validations, audit annotations and message expressions, in the environment for stored expressions.
func compile(policy *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	hasParams := policy.Spec.ParamKind != nil
	options := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	messageOptions := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false}
	failurePolicy := policy.Spec.FailurePolicy
	compiler, matcher, err := compileShared(policy.Name, policy.Spec.Variables, policy.Spec.MatchConditions, failurePolicy, options)
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, failurePolicy, err)
	}
	validations := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	for i, v := range policy.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	annotations := make([]plugincel.ExpressionAccessor, len(policy.Spec.AuditAnnotations))
	for i, a := range policy.Spec.AuditAnnotations {
		annotations[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	return validating.NewValidator(
		compiler.CompileCondition(validations, options, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(annotations, options, environment.StoredExpressions),
		compiler.CompileCondition(messages, messageOptions, environment.StoredExpressions),
		failurePolicy,
		nil,
	)
}

// compileShared compiles what both kinds of policy have, as the apiserver's plugins do: the variables, each in the
// composition environment, then the match conditions (nil matcher without any), for stored expressions.
func compileShared(name string, variables []admissionregistrationv1.Variable, conditions []admissionregistrationv1.MatchCondition,
	failurePolicy *admissionregistrationv1.FailurePolicyType, options plugincel.OptionalVariableDeclarations) (*plugincel.CompositedCompiler, matchconditions.Matcher, error) {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, nil, err
	}
	named := make([]plugincel.NamedExpressionAccessor, len(variables))
	for i, v := range variables {
		named[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(named, options, environment.StoredExpressions)
	if len(conditions) == 0 {
		return compiler, nil, nil
	}
	accessors := make([]plugincel.ExpressionAccessor, len(conditions))
	for i := range conditions {
		accessors[i] = (*matchconditions.MatchCondition)(&conditions[i])
	}
	matcher := matchconditions.NewMatcher(compiler.CompileCondition(accessors, options, environment.StoredExpressions),
		failurePolicy, "policy", "validate", name)
	return compiler, matcher, nil
}

// paramInformer serves the request's params as the apiserver's informer of the param kind would.
func paramInformer(paramKind *admissionregistrationv1.ParamKind, req *policyRequest) (informers.GenericInformer, meta.RESTScope, error) {
	gv, err := schema.ParseGroupVersion(paramKind.APIVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("paramKind.apiVersion: %w", err)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for i, raw := range req.Params {
		p, err := decodeObject(fmt.Sprintf("params[%d]", i), raw)
		if err != nil || p == nil {
			return nil, nil, fmt.Errorf("params[%d]: must be an object: %v", i, err)
		}
		if err := indexer.Add(&unstructured.Unstructured{Object: p}); err != nil {
			return nil, nil, fmt.Errorf("params[%d]: %w", i, err)
		}
	}
	scope := meta.RESTScopeRoot
	if req.ParamNamespaced {
		scope = meta.RESTScopeNamespace
	}
	gr := gv.WithResource(req.ParamResource).GroupResource()
	return synced{lister: cache.NewGenericLister(indexer, gr)}, scope, nil
}

// synced is an informer that has listed its objects: only Lister and HasSynced are used by admission.
type synced struct {
	cache.SharedIndexInformer
	lister cache.GenericLister
}

func (s synced) Informer() cache.SharedIndexInformer { return s }
func (s synced) Lister() cache.GenericLister         { return s.lister }
func (s synced) HasSynced() bool                     { return true }

// defaultPolicy fills in what the apiserver defaults on a stored policy.
func defaultPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		fail := admissionregistrationv1.Fail
		p.Spec.FailurePolicy = &fail
	}
	if p.Spec.MatchConstraints != nil {
		defaultMatch(p.Spec.MatchConstraints)
	}
}

func defaultBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if b.Spec.MatchResources != nil {
		defaultMatch(b.Spec.MatchResources)
	}
}

func defaultMatch(m *admissionregistrationv1.MatchResources) {
	if m.MatchPolicy == nil {
		equivalent := admissionregistrationv1.Equivalent
		m.MatchPolicy = &equivalent
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				all := admissionregistrationv1.AllScopes
				rules[i].Scope = &all
			}
		}
	}
}
