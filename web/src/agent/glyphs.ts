/** The agent screens' two extra glyphs, drawn on the back arrow's frame. */
import { icon } from '../ui/icons';

export function arrowIcon(): SVGSVGElement {
  const svg = icon('back');
  svg.firstElementChild!.setAttribute('d', 'M12 19V5M5 12l7-7 7 7');
  return svg;
}

export function closeIcon(): SVGSVGElement {
  const svg = icon('back');
  svg.firstElementChild!.setAttribute('d', 'M6 6l12 12M18 6 6 18');
  return svg;
}
