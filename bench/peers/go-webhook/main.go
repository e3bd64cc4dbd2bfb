// The Go controller-runtime side of `npm run bench -- webhook`: a validating webhook doing the same check as
// bench/peers/opkit-webhook.ts — spec.replicas at most 100 (a field error), a warning for an image without a tag —
// served by controller-runtime's webhook server (HTTPS, tls.crt/tls.key from --cert-dir).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

type widget struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Replicas *int64 `json:"replicas"`
		Image    string `json:"image"`
	} `json:"spec"`
}

func validate(_ context.Context, req admission.Request) admission.Response {
	var w widget
	if err := json.Unmarshal(req.Object.Raw, &w); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	var errs field.ErrorList
	if w.Spec.Replicas != nil && *w.Spec.Replicas > 100 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), *w.Spec.Replicas, "must be at most 100"))
	}
	resp := admission.Allowed("")
	if len(errs) > 0 {
		status := apierrors.NewInvalid(schema.GroupKind{Group: "bench.opkit.dev", Kind: "Widget"}, w.Metadata.Name, errs)
		resp = admission.Response{AdmissionResponse: resp.AdmissionResponse}
		resp.Allowed = false
		resp.Result = &status.ErrStatus
	}
	if !strings.Contains(w.Spec.Image, ":") {
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("spec.image %q has no tag", w.Spec.Image))
	}
	return resp
}

func main() {
	port := flag.Int("port", 9443, "port")
	certDir := flag.String("cert-dir", "", "directory with tls.crt and tls.key")
	flag.Parse()
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: *port, CertDir: *certDir})
	srv.Register("/validate", &webhook.Admission{Handler: admission.HandlerFunc(validate)})
	if err := srv.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
