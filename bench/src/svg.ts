/**
 * @module svg
 * The two chart shapes the benchmark page needs, as self-contained SVG: horizontal bars (one group per system, one
 * bar per figure) and lines (one series per system over a numeric x axis).
 */
const PALETTE = ['#2b6cb0', '#a0aec0', '#718096', '#cbd5e0', '#d69e2e'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export interface BarGroup {
  readonly label: string;
  readonly bars: readonly { readonly name: string; readonly value: number }[];
}

export function barChart(title: string, unit: string, groups: readonly BarGroup[]): string {
  const max = Math.max(...groups.flatMap((g) => g.bars.map((b) => b.value)), 1e-9);
  const perGroup = Math.max(1, ...groups.map((g) => g.bars.length));
  const groupH = perGroup * 22 + 14;
  const body = groups
    .map((g, i) => {
      const y0 = 40 + i * groupH;
      const bars = g.bars
        .map((b, j) => {
          const w = Math.max(1, Math.round((b.value / max) * 400));
          const y = y0 + j * 22;
          const fill = i === 0 ? (PALETTE[0] as string) : (PALETTE[1 + (j % 3)] as string);
          const name = g.bars.length > 1 ? `${esc(b.name)} ` : '';
          return `<rect x="180" y="${y}" width="${w}" height="18" fill="${fill}"/><text x="${186 + w}" y="${y + 14}" font-size="12">${name}${b.value} ${esc(unit)}</text>`;
        })
        .join('');
      return `<text x="10" y="${y0 + 14}" font-size="13">${esc(g.label)}</text>${bars}`;
    })
    .join('');
  return svg(title, 60 + groups.length * groupH, body);
}

export interface Series {
  readonly label: string;
  readonly points: readonly (readonly [number, number])[];
}

export function lineChart(title: string, xLabel: string, yLabel: string, series: readonly Series[]): string {
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const xMax = Math.max(...xs, 1);
  const yMax = Math.max(...ys, 1) * 1.1;
  const [left, top, w, h] = [70, 40, 460, 240];
  const px = (x: number) => left + (x / xMax) * w;
  const py = (y: number) => top + h - (y / yMax) * h;
  const ticks = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => {
      const yv = Math.round(yMax * f);
      const xv = Math.round(xMax * f);
      return `<text x="${left - 6}" y="${py(yv) + 4}" font-size="11" text-anchor="end">${yv}</text><line x1="${left}" x2="${left + w}" y1="${py(yv)}" y2="${py(yv)}" stroke="#edf2f7"/><text x="${px(xv)}" y="${top + h + 16}" font-size="11" text-anchor="middle">${xv.toLocaleString('en-US')}</text>`;
    })
    .join('');
  const lines = series
    .map((s, i) => {
      const color = PALETTE[i % PALETTE.length] as string;
      const d = s.points.map((p, j) => `${j === 0 ? 'M' : 'L'}${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(' ');
      const dots = s.points
        .map((p) => `<circle cx="${px(p[0]).toFixed(1)}" cy="${py(p[1]).toFixed(1)}" r="3" fill="${color}"/>`)
        .join('');
      return `<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>${dots}<rect x="${left + w + 16}" y="${top + i * 20}" width="12" height="12" fill="${color}"/><text x="${left + w + 34}" y="${top + i * 20 + 11}" font-size="12">${esc(s.label)}</text>`;
    })
    .join('');
  const axes = `<line x1="${left}" x2="${left}" y1="${top}" y2="${top + h}" stroke="#4a5568"/><line x1="${left}" x2="${left + w}" y1="${top + h}" y2="${top + h}" stroke="#4a5568"/><text x="${left + w / 2}" y="${top + h + 36}" font-size="12" text-anchor="middle">${esc(xLabel)}</text><text x="16" y="${top + h / 2}" font-size="12" transform="rotate(-90 16 ${top + h / 2})" text-anchor="middle">${esc(yLabel)}</text>`;
  return svg(title, top + h + 50, ticks + axes + lines, 720);
}

function svg(title: string, height: number, body: string, width = 680): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" role="img" aria-label="${esc(title)}"><title>${esc(title)}</title><text x="10" y="22" font-size="15">${esc(title)}</text>${body}</svg>\n`;
}
