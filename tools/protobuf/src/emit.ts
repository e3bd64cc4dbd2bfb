/**
 * @module tools/protobuf/emit
 * Turns the descriptor that tools/protobuf/go writes (every built-in kind's Go types: field numbers, JSON names,
 * omitempty, inlining) into TypeScript decoders: one module per API group version under
 * packages/runtime/src/client/protobuf/messages/, one function per message, and a table of the kinds.
 *
 * Guarantees: the output is a pure function of the descriptor (sorted, no dates), so `npm run protobuf` on an
 * unchanged descriptor rewrites identical files and the check in test/current.test.ts can compare them. Each
 * decoder builds the JSON the apiserver would send for the same object: fields in their JSON names, inlined
 * structs flattened, what encoding/json omits left out, and what it writes when empty (`""`, `0`, `false`, `null`,
 * an empty struct's own fields) filled in.
 */

export interface Field {
  readonly json: string;
  readonly num: number;
  readonly omit?: boolean;
  readonly inline?: boolean;
  readonly ptr?: boolean;
  readonly type: string;
  readonly list?: boolean;
  readonly map?: boolean;
}

export interface Message {
  readonly fields: readonly Field[];
  readonly wrapped?: boolean;
}

export interface Descriptor {
  readonly versions: Readonly<Record<string, string>>;
  readonly kinds: readonly { group: string; version: string; kind: string; message: string }[];
  readonly messages: Readonly<Record<string, Message>>;
}

/** The module a message lives in: `core/v1.Pod` → `core-v1`. */
export function moduleOf(message: string): string {
  return message.slice(0, message.lastIndexOf('.')).replaceAll('/', '-').replaceAll('.', '-');
}

/** The function name of a message in its module: `core/v1.Pod` → `Pod`. */
function localName(message: string): string {
  return message.slice(message.lastIndexOf('.') + 1);
}

const WIRE: Record<string, number> = { bool: 0, int32: 0, int64: 0, double: 1 };
const READ: Record<string, string> = {
  string: 'r.string()',
  bool: 'r.bool()',
  int32: 'r.int32()',
  int64: 'r.int64()',
  double: 'r.double()',
  bytes: 'r.base64()',
  time: 'r.time(r.end())',
  microtime: 'r.microTime(r.end())',
  duration: 'r.duration(r.end())',
  quantity: 'r.quantity(r.end())',
  intorstring: 'r.intOrString(r.end())',
  rawextension: 'r.rawJson(r.end())',
  fieldsv1: 'r.rawJson(r.end())',
};
/** What encoding/json writes for a Go zero value of a non-pointer type. */
const ZERO: Record<string, string> = {
  string: "''",
  bool: 'false',
  int32: '0',
  int64: '0',
  double: '0',
  bytes: 'null',
  time: 'null',
  microtime: 'null',
  duration: "'0s'",
  quantity: "'0'",
  intorstring: '0',
  rawextension: 'null',
  fieldsv1: 'null',
};
const SCALAR_EMPTY: Record<string, string> = { string: "''", bool: 'false', int32: '0', int64: '0', double: '0' };

/** A kind's list (its metadata is a ListMeta). */
function isList(msg: Message): boolean {
  return msg.fields.some((f) => f.json === 'metadata' && f.type === 'msg:meta/v1.ListMeta');
}

class ModuleWriter {
  readonly imports = new Map<string, Set<string>>();
  readonly lines: string[] = [];
  readonly name: string;
  readonly d: Descriptor;
  constructor(name: string, d: Descriptor) {
    this.name = name;
    this.d = d;
  }

  /** A reference to message `m`'s decoder from this module. */
  ref(m: string): string {
    const mod = moduleOf(m);
    if (mod === this.name) return localName(m);
    const alias = mod.replaceAll('-', '_');
    let set = this.imports.get(mod);
    if (!set) {
      set = new Set();
      this.imports.set(mod, set);
    }
    set.add(localName(m));
    return `${alias}.${localName(m)}`;
  }

  /** The expression reading one value of element type `type` (its tag read already). */
  read(type: string, mask: string): string {
    if (type.startsWith('msg:')) {
      const m = type.slice(4);
      return this.d.messages[m]?.wrapped ? `${this.ref(m)}(r, r.end())` : `${this.ref(m)}(r, r.end(), {}, ${mask})`;
    }
    const e = READ[type];
    if (!e) throw new Error(`no reader for ${type}`);
    return e;
  }

  message(name: string, msg: Message): void {
    const fn = localName(name);
    if (msg.wrapped) {
      const f = msg.fields[0] as Field;
      const tag = (1 << 3) | (WIRE[f.type] ?? 2);
      this.lines.push(
        `/** ${name}: a list encoded as a message of its items (JSON: the bare list). */`,
        `export function ${fn}(r: Reader, end: number): unknown[] {`,
        '  const a: unknown[] = [];',
        '  while (r.pos < end) {',
        '    const t = r.tag();',
        `    if (t === ${tag}) a.push(${this.read(f.type, 'undefined')});`,
        '    else r.skip(t);',
        '  }',
        '  return a;',
        '}',
        '',
      );
      return;
    }
    const body: string[] = [];
    const fin: string[] = [];
    const flags: string[] = [];
    for (const f of msg.fields) {
      const key = JSON.stringify(f.json);
      const prop = /^[A-Za-z_$][\w$]*$/.test(f.json) ? `o.${f.json}` : `o[${key}]`;
      const keepTest = `(m === undefined || keeps(m, ${key}))`;
      if (f.inline) {
        const sub = this.ref(f.type.slice(4));
        const inlined = this.d.messages[f.type.slice(4)] as Message;
        if (f.num === 0) {
          // not in the protobuf encoding (TypeMeta): only its non-omitted fields need their empty value
          if (inlined.fields.some((x) => !x.omit)) fin.push(`  ${sub}(r, 0, o, m);`);
          continue;
        }
        const flag = `i${f.num}`;
        flags.push(flag);
        body.push(
          `      case ${(f.num << 3) | 2}:`,
          `        ${sub}(r, r.end(), o, m);`,
          `        ${flag} = true;`,
          '        break;',
        );
        fin.push(`  if (!${flag}) ${sub}(r, 0, o, m);`);
        continue;
      }
      const mask = `inner(m, ${key})`;
      const isMsg = f.type.startsWith('msg:');
      const wrapped = isMsg && this.d.messages[f.type.slice(4)]?.wrapped === true;
      if (f.num !== 0) {
        const wire = f.map ? 2 : (WIRE[f.type] ?? 2);
        const tag = (f.num << 3) | wire;
        const skip = `if (m !== undefined && !keeps(m, ${key})) {\n          r.skip(t);\n          break;\n        }`;
        if (f.map) {
          const valType = f.type;
          const valTag = (2 << 3) | (WIRE[valType] ?? 2);
          const valZero = valType.startsWith('msg:')
            ? this.d.messages[valType.slice(4)]?.wrapped
              ? '[]'
              : `${this.ref(valType.slice(4))}(r, 0, {}, undefined)`
            : (ZERO[valType] ?? 'null');
          const valZeroJs = valType === 'bytes' ? "''" : valZero;
          body.push(
            `      case ${tag}: {`,
            `        ${skip}`,
            '        const e = r.end();',
            "        let k = '';",
            '        let v: unknown;',
            '        while (r.pos < e) {',
            '          const u = r.tag();',
            '          if (u === 10) k = r.string();',
            `          else if (u === ${valTag}) v = ${this.read(valType, 'undefined')};`,
            '          else r.skip(u);',
            '        }',
            `        setKey((${prop} ??= {}) as Obj, k, v === undefined ? ${valZeroJs} : v);`,
            '        break;',
            '      }',
          );
        } else if (f.list) {
          const packed = WIRE[f.type] === 0 || WIRE[f.type] === 1;
          body.push(
            `      case ${tag}: {`,
            `        ${skip}`,
            // a list's mask applies to each of its items
            `        const v = ${this.read(f.type, isMsg && !wrapped ? mask : 'undefined')};`,
            `        const a = ${prop} as unknown[] | undefined;`,
            `        if (a === undefined) ${prop} = [v];`,
            '        else a.push(v);',
            '        break;',
            '      }',
          );
          if (packed) {
            body.push(
              `      case ${(f.num << 3) | 2}: {`,
              `        ${skip}`,
              '        const e = r.end();',
              `        const a = (${prop} ??= []) as unknown[];`,
              `        while (r.pos < e) a.push(${this.read(f.type, 'undefined')});`,
              '        break;',
              '      }',
            );
          }
        } else {
          const value = this.read(f.type, mask);
          let assign: string[];
          if (f.ptr || !f.omit) assign = [`        ${prop} = ${value};`];
          else if (SCALAR_EMPTY[f.type] !== undefined)
            assign = [`        const v = ${value};`, `        if (v !== ${SCALAR_EMPTY[f.type]}) ${prop} = v;`];
          else if (f.type === 'bytes') assign = [`        const v = ${value};`, `        if (v !== '') ${prop} = v;`];
          else if (wrapped) assign = [`        const v = ${value};`, `        if (v.length > 0) ${prop} = v;`];
          else if (f.type === 'time' || f.type === 'microtime')
            assign = [`        const v = ${value};`, `        if (v !== null) ${prop} = v;`];
          else assign = [`        ${prop} = ${value};`];
          body.push(`      case ${tag}: {`, `        ${skip}`, ...assign, '        break;', '      }');
        }
      }
      if (!f.omit) {
        let zero: string;
        if (f.list && f.json === 'items' && isList(msg))
          zero = '[]'; // a list's items are [] in answers, never null
        else if (f.ptr || f.list || f.map || wrapped) zero = 'null';
        else if (isMsg) zero = `${this.ref(f.type.slice(4))}(r, 0, {}, ${mask})`;
        else zero = ZERO[f.type] ?? 'null';
        fin.push(`  if (${prop} === undefined && ${keepTest}) ${prop} = ${zero};`);
      }
    }
    this.lines.push(
      `/** ${name} */`,
      `export function ${fn}(r: Reader, end: number, o: Obj, m?: FieldMask): Obj {`,
      ...flags.map((f) => `  let ${f} = false;`),
    );
    if (body.length > 0) {
      this.lines.push('  while (r.pos < end) {', '    const t = r.tag();', '    switch (t) {', ...body);
      this.lines.push('      default:', '        r.unknown(t);', '    }', '  }');
    } else {
      this.lines.push('  while (r.pos < end) r.unknown(r.tag());');
    }
    this.lines.push(...fin, '  return o;', '}', '');
  }

  render(header: string): string {
    const out = [header];
    const used = this.lines.join('\n');
    const readerNames = ['type FieldMask', 'type Obj', 'type Reader'];
    if (used.includes('keeps(')) readerNames.push('keeps');
    if (used.includes('inner(')) readerNames.push('inner');
    if (used.includes('setKey(')) readerNames.push('setKey');
    readerNames.sort((a, b) => a.replace('type ', '').localeCompare(b.replace('type ', '')));
    out.push(`import { ${readerNames.join(', ')} } from '../reader.ts';`);
    for (const mod of [...this.imports.keys()].sort())
      out.push(`import * as ${mod.replaceAll('-', '_')} from './${mod}.ts';`);
    out.push('', ...this.lines);
    return `${out.join('\n').trimEnd()}\n`;
  }
}

/** Every generated file: path (relative to the runtime's src/client/protobuf/) → content. */
export function emit(d: Descriptor): Map<string, string> {
  const byModule = new Map<string, string[]>();
  for (const name of Object.keys(d.messages).sort()) {
    const mod = moduleOf(name);
    let list = byModule.get(mod);
    if (!list) {
      list = [];
      byModule.set(mod, list);
    }
    list.push(name);
  }
  const files = new Map<string, string>();
  const versions = Object.entries(d.versions)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  for (const [mod, names] of [...byModule].sort(([a], [b]) => a.localeCompare(b))) {
    const w = new ModuleWriter(mod, d);
    for (const n of names) w.message(n, d.messages[n] as Message);
    const header = [
      GENERATED_LINE,
      '/**',
      ` * @module client/protobuf/messages/${mod}`,
      ` * Generated by \`npm run protobuf\` from ${versions}: decoders of the ${mod.replace('-', '/')} messages into their JSON`,
      ' * form. Regenerate with `npm run protobuf`.',
      ' */',
    ].join('\n');
    files.set(`messages/${mod}.ts`, w.render(header));
  }
  files.set('kinds.ts', kindsTable(d, versions));
  return files;
}

/** The first line of every generated file (test/source-rules.test.ts lets such files be long). */
const GENERATED_LINE = '// generated by opkit - do not edit';

function kindsTable(d: Descriptor, versions: string): string {
  const lines = [
    GENERATED_LINE,
    '/**',
    ' * @module client/protobuf/kinds',
    ` * Generated by \`npm run protobuf\` from ${versions}: for each built-in kind (and list) with a protobuf encoding,`,
    ' * the module and function that decode it. Regenerate with `npm run protobuf`.',
    ' */',
    '',
    "/** `apiVersion` + ' ' + `kind` -> [module under ./messages/, its decoder]. */",
    'export const KINDS: ReadonlyMap<string, readonly [string, string]> = new Map([',
  ];
  const seen = new Set<string>();
  for (const k of d.kinds) {
    const apiVersion = k.group === '' ? k.version : `${k.group}/${k.version}`;
    const key = `${apiVersion} ${k.kind}`;
    if (seen.has(key)) continue;
    seen.add(key);
    lines.push(
      `  [${JSON.stringify(key)}, [${JSON.stringify(moduleOf(k.message))}, ${JSON.stringify(localName(k.message))}]],`,
    );
  }
  lines.push(']);', '');
  const modules = [...new Set(d.kinds.map((k) => moduleOf(k.message)))].sort();
  lines.push(
    '/** Loads a module of decoders (each one only when a kind of it is first read). */',
    'export const MODULES: Readonly<Record<string, () => Promise<object>>> = {',
    ...modules.map((m) => `  ${JSON.stringify(m)}: () => import(${JSON.stringify(`./messages/${m}.ts`)}),`),
    '};',
    '',
  );
  return lines.join('\n');
}
