/**
 * @module tools/kinds/tsdoc
 * Kubernetes' field descriptions as TSDoc: the first sentence (what an editor's hover shows), cleaned so it cannot end
 * the comment early (`*\/`) or be read as a tag (`@`), and wrapped to the line width.
 *
 * Guarantees: the sentence ends at the first full stop followed by a space or the end, not at the full stop of an
 * abbreviation (`e.g.`, `i.e.`, `etc.`, `vs.`) or of a number or name (`1.5`, `k8s.io`); a description with no full stop
 * is taken whole up to its first blank line.
 */

const ABBREVIATIONS = /(?:\b(?:e\.g|i\.e|etc|vs|approx|incl|Ex|ex|resp|cf|Mr|Dr|No|no))$/;

/** The first sentence of a description, on one line. */
export function firstSentence(description: string): string {
  const paragraph = (description.split(/\n\s*\n/)[0] ?? '').replace(/\s+/g, ' ').trim();
  const re = /\.(?=\s|$)/g;
  for (let m = re.exec(paragraph); m; m = re.exec(paragraph)) {
    if (!ABBREVIATIONS.test(paragraph.slice(0, m.index))) return paragraph.slice(0, m.index + 1);
  }
  return paragraph;
}

/** Text made safe inside a `/** … *\/` comment. */
export function escapeDoc(text: string): string {
  return text.replace(/\*\//g, '*\\/').replace(/@(?=\w)/g, '\\@');
}

/** A doc comment of `lines` (already escaped), indented by `indent`, wrapped at `width` columns. */
export function docComment(lines: readonly string[], indent: string, width = 120): string {
  const wrapped: string[] = [];
  for (const line of lines) {
    let rest = line;
    const room = width - indent.length - 3;
    while (rest.length > room) {
      const cut = rest.lastIndexOf(' ', room);
      if (cut <= 0) break;
      wrapped.push(rest.slice(0, cut));
      rest = rest.slice(cut + 1);
    }
    wrapped.push(rest);
  }
  const only = wrapped.length === 1 ? wrapped[0] : undefined;
  if (only !== undefined && indent.length + only.length + 7 <= width) return `${indent}/** ${only} */`;
  return [`${indent}/**`, ...wrapped.map((l) => `${indent} * ${l}`), `${indent} */`].join('\n');
}
