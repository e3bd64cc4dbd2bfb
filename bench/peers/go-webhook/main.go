// The Go controller-runtime side of `npm run bench -- webhook`: a validating webhook doing the same check as
// bench/peers/opkit-webhook.ts — spec.replicas at most 100 (a field error), a warning for an image without a tag —
// served by controller-runtime's webhook server (HTTPS, tls.crt/tls.key from --cert-dir). HTTP/1.1 only unless
// --http2, as kubebuilder's scaffolded main.go serves webhooks (its --enable-http2 defaults to false since
// CVE-2023-44487); the apiserver speaks HTTP/2 to a webhook only when its URL is a loopback address and the server
// offers it, HTTP/1.1 otherwise (every Service reference).
package main

import (
	"context"
	"crypto/tls"
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
	http2 := flag.Bool("http2", false, "offer HTTP/2 (ALPN h2) as well as HTTP/1.1")
	flag.Parse()
	options := webhook.Options{Host: "127.0.0.1", Port: *port, CertDir: *certDir}
	if !*http2 {
		options.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	}
	srv := webhook.NewServer(options)
	srv.Register("/validate", &webhook.Admission{Handler: admission.HandlerFunc(validate)})
	if err := srv.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
