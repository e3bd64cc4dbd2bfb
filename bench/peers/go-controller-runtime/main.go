// The AppService operator written with Go controller-runtime: the benchmark peer of opkit's operator. Same API, same
// behaviour (owner-referenced pods named by generateName with the same labels, Failed/Succeeded pods replaced,
// status replicas/readyReplicas/podNames/selector/observedGeneration and the conditions Available, Progressing and
// ReplicaFailure, with opkit's reasons and messages on the benchmark's paths (a failed delete is only retried, and
// failure texts are not cut to 500 characters), written only when changed; one Event per scaling action), same
// worker count, no client-side rate limit. Written the way kubebuilder users write it: conditions set with
// meta.SetStatusCondition, no expectations (controller-runtime has none).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var appGVK = schema.GroupVersionKind{Group: "app.example.com", Version: "v1alpha1", Kind: "AppService"}

const ownerIndex = ".metadata.controller"

type reconciler struct {
	client.Client
	recorder record.EventRecorder
}

func newApp() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(appGVK)
	return u
}

func active(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	return p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning || p.Status.Phase == "" || p.Status.Phase == corev1.PodUnknown
}

func ready(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := newApp()
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if app.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	desired, found, _ := unstructured.NestedInt64(app.Object, "spec", "replicas")
	if !found {
		desired = 1
	}
	image, _, _ := unstructured.NestedString(app.Object, "spec", "image")
	if image == "" {
		image = "busybox"
	}
	command, _, _ := unstructured.NestedStringSlice(app.Object, "spec", "command")
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(req.Namespace), client.MatchingFields{ownerIndex: string(app.GetUID())}); err != nil {
		return ctrl.Result{}, err
	}
	var live []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			if err := r.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
			continue
		}
		if active(p) {
			live = append(live, p)
		}
	}
	labels := map[string]string{
		"app.kubernetes.io/name":       "appservice",
		"app.kubernetes.io/instance":   app.GetName(),
		"app.kubernetes.io/managed-by": "appservice-operator",
	}
	created, deleted := 0, 0
	for int64(len(live)) < desired {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: app.GetName() + "-", Namespace: req.Namespace, Labels: labels},
			Spec: corev1.PodSpec{
				Containers:    []corev1.Container{{Name: "app", Image: image, Command: command}},
				RestartPolicy: corev1.RestartPolicyAlways,
			},
		}
		if err := controllerutil.SetControllerReference(app, pod, r.Scheme()); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, pod); err != nil {
			r.recorder.Event(app, corev1.EventTypeWarning, "FailedCreate", err.Error())
			// the status says so (ReplicaFailure), as opkit's does, before the error is retried
			_ = r.writeStatus(ctx, app, live, labels, desired, err)
			return ctrl.Result{}, err
		}
		live = append(live, pod)
		created++
	}
	if int64(len(live)) > desired {
		sort.Slice(live, func(i, j int) bool { return ready(live[i]) == false && ready(live[j]) })
		for _, p := range live[desired:] {
			if err := r.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
			deleted++
		}
		live = live[:desired]
	}
	if created > 0 {
		r.recorder.Event(app, corev1.EventTypeNormal, "ScalingUp", fmt.Sprintf("created %d pods (want %d)", created, desired))
	} else if deleted > 0 {
		r.recorder.Event(app, corev1.EventTypeNormal, "ScalingDown", fmt.Sprintf("deleted %d pods (want %d)", deleted, desired))
	}
	return ctrl.Result{}, r.writeStatus(ctx, app, live, labels, desired, nil)
}

// writeStatus updates the AppService's status when it changed: the counts, the pod names, and the three conditions.
func (r *reconciler) writeStatus(ctx context.Context, app *unstructured.Unstructured, live []*corev1.Pod, labels map[string]string, desired int64, failure error) error {
	names := make([]interface{}, 0, len(live))
	readyCount := int64(0)
	sorted := make([]string, 0, len(live))
	for _, p := range live {
		sorted = append(sorted, p.Name)
		if ready(p) {
			readyCount++
		}
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		names = append(names, n)
	}
	var sel []string
	for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by"} {
		sel = append(sel, k+"="+labels[k])
	}
	generation := app.GetGeneration()
	maxUnavailable, found, _ := unstructured.NestedInt64(app.Object, "spec", "maxUnavailable")
	if !found {
		maxUnavailable = 1
	}
	minAvailable := desired - max(1, maxUnavailable)
	if minAvailable < 0 {
		minAvailable = 0
	}
	count := int64(len(live))
	converged := count == desired && readyCount == desired
	var conditions []metav1.Condition
	if raw, ok, _ := unstructured.NestedSlice(app.Object, "status", "conditions"); ok {
		for _, c := range raw {
			var cond metav1.Condition
			if m, ok := c.(map[string]interface{}); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
				conditions = append(conditions, cond)
			}
		}
	}
	changed := false
	set := func(t string, ok bool, yes, no, message string) {
		status := metav1.ConditionFalse
		reason := no
		if ok {
			status, reason = metav1.ConditionTrue, yes
		}
		if meta.SetStatusCondition(&conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: generation}) {
			changed = true
		}
	}
	set("Available", readyCount >= minAvailable, "MinimumReplicasAvailable", "MinimumReplicasUnavailable",
		fmt.Sprintf("%d of %d pods ready (at least %d needed)", readyCount, desired, minAvailable))
	progress := fmt.Sprintf("%d of %d pods updated, %d ready", count, desired, readyCount)
	if converged {
		progress = fmt.Sprintf("%d pods of the current template are ready", desired)
	}
	set("Progressing", true, map[bool]string{true: "Complete", false: "Scaling"}[converged], "", progress)
	failureText := "pods are created and deleted as needed"
	if failure != nil {
		failureText = failure.Error()
	}
	set("ReplicaFailure", failure != nil, "FailedCreate", "NoFailure", failureText)
	status := map[string]interface{}{
		"replicas":           count,
		"readyReplicas":      readyCount,
		"updatedReplicas":    count,
		"podNames":           names,
		"selector":           strings.Join(sel, ","),
		"observedGeneration": generation,
	}
	current, _, _ := unstructured.NestedMap(app.Object, "status")
	if !changed && reflect.DeepEqual(normalize(current), normalize(status)) {
		return nil
	}
	list := make([]interface{}, 0, len(conditions))
	for i := range conditions {
		c, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conditions[i])
		if err != nil {
			return err
		}
		list = append(list, c)
	}
	status["conditions"] = list
	if err := unstructured.SetNestedMap(app.Object, status, "status"); err != nil {
		return err
	}
	return r.Status().Update(ctx, app)
}

// normalize makes a status's counts comparable: JSON numbers decode as int64 (conditions are compared by
// meta.SetStatusCondition).
func normalize(m map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for _, k := range []string{"replicas", "readyReplicas", "updatedReplicas", "podNames", "selector", "observedGeneration"} {
		if v, ok := m[k]; ok {
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

func main() {
	var workers int
	flag.IntVar(&workers, "max-concurrent-reconciles", 1, "workers")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse() // --kubeconfig is controller-runtime's own flag
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS = -1 // no client-side rate limit, as the other peers
	cfg.UserAgent = "appservice-go-controller-runtime"
	if os.Getenv("APPSERVICE_GO_JSON") == "1" {
		// an experiment (bench docs, "What issue 45 changed"): built-in kinds in JSON, as opkit wrote them before
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// read AppServices (unstructured) from the cache too, as typed objects are
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "appservice-go:", err)
		os.Exit(1)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, ownerIndex, func(o client.Object) []string {
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.Kind != "AppService" {
			return nil
		}
		return []string{string(ref.UID)}
	}); err != nil {
		fmt.Fprintln(os.Stderr, "appservice-go:", err)
		os.Exit(1)
	}
	r := &reconciler{Client: mgr.GetClient(), recorder: mgr.GetEventRecorderFor("appservice-operator")}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(newApp()).
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r); err != nil {
		fmt.Fprintln(os.Stderr, "appservice-go:", err)
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "appservice-go:", err)
		os.Exit(1)
	}
}
