/**
 * @module client/kubeconfig-text
 * A kubeconfig given as text rather than found on disk: what a cluster provider reads from a Secret. It is read as
 * `loadConfig` reads a file (client/kubeconfig.ts).
 *
 * Guarantees: by default (`embeddedOnly`), nothing in the text reaches the operator's own machine: a kubeconfig that
 * names a file (a CA, a client certificate or key, a token file), runs an `exec` plugin or uses an `auth-provider` is
 * refused, naming the source and the field. Errors never include a credential.
 */
import yaml from 'js-yaml';
import { type ConnectionConfig, fromDocs, type KubeconfigDoc, KubeconfigError } from './kubeconfig.ts';

/** How `kubeconfigFromText` reads a kubeconfig it is given as text. */
export interface KubeconfigTextOptions {
  /** Where the text comes from, in errors (`Secret fleet/eu-1-kubeconfig, key value`). */
  readonly source: string;
  /** A context other than the current one. */
  readonly context?: string;
  /**
   * Refuse what would reach the operator's own machine: files named by the kubeconfig (a CA, a client certificate or
   * key, a token file), `exec` plugins and `auth-provider` users. For a kubeconfig whose author is not the operator's
   * (one read from a Secret): a token file could be the operator's own service account token, sent to the author's
   * server; an exec plugin runs a command. Credentials must then be data (`*-data`, `token`). Default true.
   */
  readonly embeddedOnly?: boolean;
  /** The environment to read the proxy variables from (default `process.env`). */
  readonly env?: NodeJS.ProcessEnv;
}

/** The fields that name files or run commands, by where they are. */
const LOCAL_FIELDS = {
  clusters: ['certificate-authority'],
  users: ['client-certificate', 'client-key', 'tokenFile', 'exec', 'auth-provider'],
} as const;

/**
 * The connection config of a kubeconfig given as text (one a cluster provider reads from a Secret), as `loadConfig`
 * reads a file. Errors name `source` and the field, never a credential.
 */
export function kubeconfigFromText(text: string, options: KubeconfigTextOptions): ConnectionConfig {
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (err) {
    // no cause and only the first line: the parser's error holds the input, and the input holds credentials
    throw new KubeconfigError(`${options.source} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new KubeconfigError(
      `${options.source} is not a kubeconfig (expected a mapping with clusters, users, contexts)`,
    );
  const kubeconfig = doc as KubeconfigDoc;
  if (options.embeddedOnly ?? true) {
    for (const [list, fields] of Object.entries(LOCAL_FIELDS) as [keyof typeof LOCAL_FIELDS, readonly string[]][]) {
      for (const named of (kubeconfig[list] ?? []) as { name?: string; cluster?: object; user?: object }[]) {
        const body = (list === 'clusters' ? named?.cluster : named?.user) as Record<string, unknown> | undefined;
        const used = fields.find((f) => body?.[f] !== undefined);
        if (used !== undefined)
          throw new KubeconfigError(
            `${options.source}: ${list}[${named.name}].${used} names a file or a command on the operator's machine; ` +
              'a kubeconfig from here must carry its credentials as data (certificate-authority-data, ' +
              'client-certificate-data, client-key-data, token)',
          );
      }
    }
  }
  const config = fromDocs(
    [{ file: options.source, doc: kubeconfig, raw: text }],
    options.context,
    options.env ?? process.env,
  );
  if (!URL.canParse(config.server)) throw new KubeconfigError(`${options.source}: its cluster's server is not a URL`);
  return config;
}
