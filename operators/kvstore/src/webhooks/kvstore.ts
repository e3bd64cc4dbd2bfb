// scaffolded by opkit — this file is yours to edit
/**
 * @module webhooks/kvstore
 * The admission webhooks of KVStore (kv/v1alpha1), served by the manager's webhook server. `validateKVStoreUpdate`
 * refuses a change of `spec.replicas` while a restore is in progress (the restore writes a fixed set of volumes): it
 * reads the old object's status. What the schema can say is in the schema, as CEL rules the apiserver runs without a
 * webhook (api/v1alpha1/kvstore): `spec.storage` may grow, never shrink, and `spec.restoreFrom` cannot change.
 */

import {
  type FieldError,
  fieldErrors,
  type ValidationResult,
  validator,
  type WebhookDefinition,
} from '@opkit/runtime/webhook';
import { type KVStore, KVStores } from '../api/v1alpha1/kvstore.ts';

/** A KVStore's name becomes a label value of what it owns: at most 63 characters. */
export function validateKVStore(obj: KVStore): ValidationResult {
  const name = obj.metadata.name ?? '';
  return { errors: name.length > 63 ? [fieldErrors.tooLong('metadata.name', name, 63)] : [] };
}

/** True while `store`'s restore has not ended (asked for, not yet Succeeded or Failed). */
export function restoring(store: KVStore): boolean {
  const phase = store.status?.restore?.phase;
  return store.spec.restoreFrom !== undefined && phase !== 'Succeeded' && phase !== 'Failed';
}

/** The rules of an update (see the module comment). */
export function validateKVStoreUpdate(obj: KVStore, old: KVStore): ValidationResult {
  const errors: FieldError[] = [...(validateKVStore(obj).errors ?? [])];
  if (obj.spec.replicas !== old.spec.replicas && restoring(old))
    errors.push(
      fieldErrors.forbidden(
        'spec.replicas',
        `cannot change while the restore from ${old.spec.restoreFrom} is in progress`,
      ),
    );
  return { errors };
}

export function kvstoreWebhooks(): WebhookDefinition[] {
  return [
    {
      type: 'validating',
      resource: KVStores,
      handler: validator(KVStores, { create: validateKVStore, update: validateKVStoreUpdate }),
    },
  ];
}
