/**
 * @module @opkit/testenv/chaos
 * Find an operator's bugs before production: `runChaos` runs the operator as it ships (its CRDs, its RBAC, two
 * replicas with leader election, or three sharded) on a local control plane, drives scenarios (desired states, as a
 * user changes them: the samples, changes generated within each CRD's schema, your own), and puts one fault into each
 * trial: a crash right after a write, a stale view and a failover, events coalesced, a pause past the Lease, 409 and
 * 429 answers, an apiserver restart or an etcd compaction, dropped connections, the webhooks down. After every step
 * it checks invariants that need nothing from the user (it settles, one controller per object, no orphans, the same
 * children and status as a fault-free run, only the leader or the shard's owner writes, no crash loop, no stream of
 * Events, no token in the logs) and the user's own. `opkit chaos` runs it for a project; docs/chaos.md tells how.
 * `Replica` (a supervised replica process), `WebhookService` (a loopback Service in front of the replicas' webhook
 * servers) and `ApiFaultProxy` (an HTTPS proxy in front of the apiserver that answers, holds watches and drops
 * connections) are the building blocks of its system, for a harness of your own.
 */
export {
  ApiFaultProxy,
  type ApiFaultProxyOptions,
  type ApiFaultProxyStats,
  type ProxyAnswer,
} from './api-proxy.ts';
export type { Fault, FaultKind } from './faults.ts';
export { FAULT_KINDS } from './faults.ts';
export {
  type AdmissionAnswer,
  type AdmissionCheck,
  admissionCheck,
  type GeneratedScenario,
  type GenerateOptions,
  generatedScenarios,
  loadAdmissionCheck,
} from './generate.ts';
export type { Manifest, ObjectKey } from './objects.ts';
export { seeded } from './plan.ts';
export { type ProjectChaos, type ProjectChaosOptions, projectChaos } from './project.ts';
export { Replica, type ReplicaExit, type ReplicaOptions, type ReplicaSpec } from './replicas.ts';
export { formatReport, type ReportedViolation, reportJson, violations } from './report.ts';
export type { RequestInfo } from './request-info.ts';
export { type ChaosOptions, type ChaosReport, checkReplay, runChaos } from './run.ts';
export { type ChaosScenario, checkScenario, EDIT_LABEL, type ScenarioStep, samplesScenario } from './scenario.ts';
export { type EndpointEvents, type EndpointSpec, type ServiceStats, WebhookService } from './service.ts';
export type { OperatorCommand, OperatorWrite } from './system.ts';
export type { ChaosInvariant, InvariantView, StepResult, TrialResult, Violation } from './trial.ts';
