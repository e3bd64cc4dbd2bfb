/**
 * @module manager/client
 * The client `Manager.create` makes when it is given none, and the name of this replica.
 *
 * Guarantees: the client reads the kubeconfig (or the in-cluster config) as kubectl does; it reports each request to
 * the manager's `rest_client_*` metrics; its user agent names the operator and the replica
 * (`opkit/<v> (<operator>; <instance>)`), so audit logs tell replicas apart; every write it sends without a
 * `fieldValidation` of its own asks for the manager's (default `Strict`); each distinct warning of the apiserver is
 * logged once, at warn level (client/warnings.ts).
 */
import { hostname } from 'node:os';
import { Client } from '../client/client.ts';
import { loggedOnce } from '../client/warnings.ts';
import { defined } from '../internal/defined.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { ManagerOptions } from './options.ts';

/** This replica's name: `$POD_NAME` (the Deployment sets it from the downward API), else the hostname. */
export function instanceName(): string {
  return process.env.POD_NAME || hostname();
}

/** The manager's own client (see the module comment). */
export function managerClient(options: ManagerOptions, metrics: Metrics, log: Logger): Promise<Client> {
  const { kubeconfig, protobuf } = options;
  return Client.create({
    name: `${options.name}; ${instanceName()}`,
    metrics: metrics.requests(),
    ...defined({ path: kubeconfig?.path, context: kubeconfig?.context, protobuf }),
    fieldValidation: options.fieldValidation ?? 'Strict',
    onWarning: loggedOnce(log.child({ component: 'client' })),
  });
}
