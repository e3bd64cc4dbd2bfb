/**
 * @module client/pager
 * Paginated lists, as client-go's pager: pages of at most `pageSize` items (default 500) with `limit`/`continue`, all
 * from one consistent snapshot.
 *
 * Guarantees: every item of a typed list has `apiVersion` and `kind` filled in (the apiserver omits them in lists; a
 * metadata-only list's items keep theirs: `PartialObjectMetadata`). When the continue token expires mid-way (410
 * `Gone`), the next page is the whole list, fetched unpaginated and marked `restart: true`: the caller drops the pages
 * it had. Any other failure ends the pages with that error.
 */
import { ApiError } from './errors.ts';
import type { Kind, KubeObject } from './resource.ts';
import type { ListOptions, ObjectList } from './types.ts';

/** The query of one list request: a page (`limit`, `continue`), or the whole list (both undefined). */
export type PageQuery = Readonly<Record<string, string | number | undefined>>;

/** The pages of a list of `r`, each fetched by `fetch` (one GET of the collection with that query). */
export async function* pages<T extends KubeObject>(
  r: Kind<T>,
  options: ListOptions,
  fetch: (query: PageQuery) => Promise<ObjectList<T>>,
): AsyncGenerator<ObjectList<T>> {
  let token: string | undefined;
  const query = (limit: number | undefined, cont: string | undefined): PageQuery => ({
    limit,
    continue: cont,
    labelSelector: options.labelSelector,
    fieldSelector: options.fieldSelector,
    shardSelector: options.shardSelector,
  });
  for (;;) {
    let page: ObjectList<T>;
    let restart = false;
    try {
      page = await fetch(query(options.pageSize ?? 500, token));
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 'Gone' && token !== undefined)) throw err;
      page = await fetch(query(undefined, undefined));
      restart = true;
    }
    // an empty PartialObjectMetadataList comes with `"items": null`
    if (!Array.isArray(page.items)) page = { ...page, items: [] };
    // (a metadata-only list's items say what they are: PartialObjectMetadata)
    if (!r.metadataOnly) {
      for (const item of page.items) {
        item.apiVersion = r.apiVersion;
        item.kind = r.kind;
      }
    }
    yield restart ? { items: page.items, metadata: { resourceVersion: page.metadata.resourceVersion }, restart } : page;
    token = restart ? undefined : page.metadata.continue || undefined;
    if (!token) return;
  }
}
