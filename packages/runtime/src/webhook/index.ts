/**
 * @module webhook
 * Admission and conversion webhooks: the HTTPS `WebhookServer` a Manager runs, typed defaulters and validators, the
 * conversion handler for kinds with several versions (`defineKind({ versions })`, crd/versions), and self-managed
 * certificates. Served as `@opkit/runtime/webhook`; the kinds' version and conversion types are in `@opkit/runtime/crd`,
 * the serving certificate's sources and issuing functions in `@opkit/runtime/tls`.
 */
export {
  type AdmissionContext,
  type AdmissionHandler,
  type AdmissionRequest,
  type AdmissionResponse,
  type AdmissionStatus,
  type DefaultFunc,
  defaulter,
  type FieldError,
  type FieldErrorType,
  fieldErrors,
  formatFieldError,
  type Operation,
  type ValidationResult,
  type Validator,
  validator,
} from './admission.ts';
export {
  type ConversionHandler,
  type ConversionRequest,
  type ConversionResponse,
  type Convertible,
  converter,
} from './conversion.ts';
export { WebhookServerError, type WebhookServerErrorCode } from './errors.ts';
export {
  CONVERSION_PATH,
  pointWebhooksAt,
  serveWebhooks,
  type WebhookDefinition,
  type WebhookEndpoint,
  webhookConfigurations,
  webhookOperations,
  webhookPath,
} from './manifests.ts';
export {
  CertificateRotator,
  SecretCertificates,
  type SelfManagedOptions,
  selfManagedRbac,
} from './selfmanaged.ts';
export { WebhookServer, type WebhookServerOptions } from './server.ts';
