/**
 * @module api/v1alpha1/appservice
 * The AppService API as `app.example.com/v1alpha1`: its schema (./schema.ts), its Kind — reads and writes
 * in v1alpha1, converted from and to the stored v1 by the operator's conversion webhook — and the kind with both
 * versions (`AppServiceKind`, defined in api/appservice), which `opkit generate` turns into the CRD.
 */
import type { ObjectOf } from '@opkit/runtime';
import { AppServiceKind } from '../appservice.ts';

export * from './schema.ts';
export { AppServiceKind };

export const AppServices = AppServiceKind.versions.v1alpha1;
export type AppService = ObjectOf<typeof AppServices>;
