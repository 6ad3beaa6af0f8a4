/**
 * The on-screen keyboard: iOS (and Android with the default `resizes-visual`) shrink only the
 * visual viewport, so a composer stuck to the layout viewport's bottom would sit under the
 * keyboard. `--kb` on the root is how much of the layout viewport the keyboard covers; the CSS
 * lifts the composers by it. `--bar-h` is the header's height, for what sticks under it.
 */
export function initViewport(): void {
  const bar = document.querySelector('header.bar');
  if (bar && 'ResizeObserver' in window) {
    new ResizeObserver(() => document.documentElement.style.setProperty('--bar-h', `${Math.round(bar.getBoundingClientRect().height)}px`)).observe(bar);
  }
  const vv = window.visualViewport;
  if (!vv) return;
  let last = -1;
  const update = () => {
    const covered = Math.max(0, Math.round(window.innerHeight - vv.height - vv.offsetTop));
    if (covered === last) return;
    last = covered;
    document.documentElement.style.setProperty('--kb', `${covered}px`);
  };
  vv.addEventListener('resize', update);
  vv.addEventListener('scroll', update);
  update();
}
