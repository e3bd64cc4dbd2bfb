/**
 * @module crd/input
 * Input and output types of a custom kind, as zod's `z.input` and `z.output`: the apiserver fills in a field's schema
 * `default` before storing, so an object read back always has it (`ObjectOf`) while a create may leave it out
 * (`InputOf`). TypeBox does not record `default` in a schema's type, so a defaulted field is declared with
 * `Defaulted(schema, value)`: the same JSON schema with `default` set, typed so that `KindInput` makes it optional.
 */
import {
  CloneType,
  type Static,
  type TArray,
  type TObject,
  type TOptional,
  type TProperties,
  type TSchema,
} from '@sinclair/typebox';
import type { KindObject } from './kind.ts';

/** A schema whose `default` is known to the types (see the module comment). */
export type TDefaulted<S extends TSchema> = S & { readonly default: Static<S> };

/** `schema` with `default: value`: required on read (`ObjectOf`), optional on create (`InputOf`). */
export function Defaulted<S extends TSchema>(schema: S, value: Static<S>): TDefaulted<S> {
  return CloneType(schema, { default: value }) as TDefaulted<S>;
}

type OptionalOnInput<S> = S extends TOptional<TSchema> ? true : S extends { readonly default: unknown } ? true : false;
type Flatten<T> = { [K in keyof T]: T[K] } & {};
type InputProperties<P extends TProperties> = Flatten<
  { [K in keyof P as OptionalOnInput<P[K]> extends true ? never : K]: InputStatic<P[K]> } & {
    [K in keyof P as OptionalOnInput<P[K]> extends true ? K : never]?: InputStatic<P[K]>;
  }
>;

/** The static type a create may send for `S`: as `Static<S>`, with defaulted and optional properties optional. */
export type InputStatic<S extends TSchema> =
  S extends TObject<infer P> ? InputProperties<P> : S extends TArray<infer E> ? InputStatic<E>[] : Static<S>;

/** What a create of a custom kind takes: the object, with the spec's defaulted fields optional. */
export type KindInput<Spec extends TSchema, Status extends TSchema> = Omit<KindObject<Spec, Status>, 'spec'> & {
  spec: InputStatic<Spec>;
};
