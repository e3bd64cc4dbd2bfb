// scaffolded by opkit — this file is yours to edit
/**
 * @module webhooks/kvstore
 * The admission webhooks of KVStore (kv/v1alpha1), served by the manager's webhook server. `validateKVStoreUpdate`
 * refuses what the apiserver's schema cannot see, because it compares the new object with the old one and its status:
 * - `spec.storage` may grow, never shrink (a volume cannot give space back; sizes compare as quantities: `1Gi` is
 *   `1024Mi`);
 * - `spec.replicas` cannot change while a restore is in progress (the restore writes a fixed set of volumes);
 * - `spec.restoreFrom` cannot change (a store is restored once, when it is created).
 */

import { Quantity } from '@opkit/runtime/quantity';
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
  if (Quantity.parse(obj.spec.storage).cmp(old.spec.storage) < 0)
    errors.push(
      fieldErrors.invalid('spec.storage', obj.spec.storage, `storage cannot shrink (it is ${old.spec.storage})`),
    );
  if (obj.spec.replicas !== old.spec.replicas && restoring(old))
    errors.push(
      fieldErrors.forbidden(
        'spec.replicas',
        `cannot change while the restore from ${old.spec.restoreFrom} is in progress`,
      ),
    );
  if (obj.spec.restoreFrom !== old.spec.restoreFrom)
    errors.push(fieldErrors.forbidden('spec.restoreFrom', 'is set when the store is created, and cannot change'));
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
