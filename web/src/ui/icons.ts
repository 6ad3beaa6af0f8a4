/**
 * The page's icons, built as SVG elements (never from markup strings): stroked 24×24 paths in
 * currentColor, so they follow the theme. Shared by every screen (chat, and the agent's later).
 */
const PATHS = {
  // The agent's tool cards and header (issue 25).
  file: 'M6 3h8l4 4v14H6zM14 3v4h4',
  search: 'M10.5 17a6.5 6.5 0 1 0 0-13 6.5 6.5 0 0 0 0 13zM15.5 15.5 20 20',
  terminal: 'M4 5h16v14H4zM7 9l3 3-3 3M12 15h5',
  folder: 'M3 6h6l2 2h10v11H3z',
  tool: 'M14.7 6.3a4 4 0 0 0-5.4 5.4L4 17l3 3 5.3-5.3a4 4 0 0 0 5.4-5.4l-2.6 2.6-2.4-.6-.6-2.4z',
  back: 'M15 5l-7 7 7 7',
  plus: 'M12 5v14M5 12h14',
  copy: 'M9 9h10v10H9zM5 15V5h10',
  edit: 'M12 20h9M16.5 3.5a2.1 2.1 0 0 1 3 3L7 19l-4 1 1-4z',
  regenerate: 'M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7',
  check: 'M5 12.5l4.5 4.5L19 7',
  rename: 'M4 20h4L19 9l-4-4L4 16zM13.5 6.5l4 4',
  trash: 'M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13',
  share: 'M12 15V3M7 8l5-5 5 5M5 13v7h14v-7',
  mic: 'M12 3a3 3 0 0 1 3 3v6a3 3 0 0 1-6 0V6a3 3 0 0 1 3-3zM5 11a7 7 0 0 0 14 0M12 18v3',
  speaker: 'M4 9h4l5-4v14l-5-4H4zM16.5 8.5a5 5 0 0 1 0 7M19 6a8.5 8.5 0 0 1 0 12',
  wave: 'M4 10v4M8 7v10M12 4v16M16 7v10M20 10v4',
} as const;

export type IconName = keyof typeof PATHS;

const SVG = 'http://www.w3.org/2000/svg';

export function icon(name: IconName): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', PATHS[name]);
  svg.append(path);
  return svg;
}

/** A 44 px icon button with an accessible name (and the same words as its tooltip). */
export function iconButton(name: IconName, label: string, className: string, run: () => void): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = `icon ${className}`.trim();
  b.setAttribute('aria-label', label);
  b.title = label;
  b.append(icon(name));
  b.addEventListener('click', run);
  return b;
}
