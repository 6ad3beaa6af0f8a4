/**
 * Code blocks in a finished reply: a Copy button each, and syntax highlighting by highlight.js,
 * which is fetched (vendor/highlight.js, same-origin) the first time a code block appears.
 * Highlighting reads the block's text and writes highlight.js's own escaped markup: nothing of
 * the model's becomes markup here either.
 */
import type { HLJSApi } from 'highlight.js';
import { el } from './dom';
import { markWide } from './wide';

/** Copies text to the clipboard; the older execCommand path for browsers without the API. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = el('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.className = 'visually-hidden';
    document.body.append(area);
    area.select();
    try {
      return document.execCommand('copy');
    } catch {
      return false;
    } finally {
      area.remove();
    }
  }
}

/** A button that copies `text()` and says so for a moment. */
export function copyButton(label: string, className: string, text: () => string, accessibleName = label): HTMLButtonElement {
  const button = el('button', className, label);
  button.type = 'button';
  button.setAttribute('aria-label', accessibleName);
  button.addEventListener('click', () => {
    void copyText(text()).then((ok) => {
      button.textContent = ok ? 'Copied' : 'Copy failed';
      setTimeout(() => (button.textContent = label), 1500);
    });
  });
  return button;
}

// A variable, so esbuild leaves the import to the browser instead of bundling the library. Taken
// from the page's address, not this module's: the build may put this code in media/web/chunks/.
const HIGHLIGHT_PATH = 'vendor/highlight.js';
let highlighter: Promise<HLJSApi | null> | undefined;

function loadHighlighter(): Promise<HLJSApi | null> {
  highlighter ??= (import(new URL(HIGHLIGHT_PATH, document.baseURI).href) as Promise<{ default: HLJSApi }>)
    .then((m) => {
      m.default.configure({ ignoreUnescapedHTML: true, throwUnescapedHTML: false });
      return m.default;
    })
    .catch(() => {
      highlighter = undefined; // offline the first time: try again with the next block
      return null;
    });
  return highlighter;
}

/** Adds the copy buttons and highlighting to the code blocks of a rendered (sanitised) reply. */
export function decorateCode(reply: HTMLElement): void {
  const blocks = [...reply.querySelectorAll('pre > code')] as HTMLElement[];
  if (!blocks.length) return markWide(reply);
  for (const code of blocks) {
    const pre = code.parentElement!;
    const wrap = el('div', 'code-block');
    pre.replaceWith(wrap);
    const lang = [...code.classList].find((c) => c.startsWith('language-'))?.slice('language-'.length) ?? '';
    const bar = el('div', 'code-bar');
    bar.append(el('span', 'code-lang', lang), copyButton('Copy code', 'copy-code', () => code.textContent ?? ''));
    wrap.append(bar, pre);
  }
  markWide(reply);
  void loadHighlighter().then((hljs) => {
    if (!hljs) return;
    for (const code of blocks) {
      const lang = [...code.classList].find((c) => c.startsWith('language-'))?.slice('language-'.length);
      if (!code.isConnected || (lang && !hljs.getLanguage(lang))) continue;
      hljs.highlightElement(code);
    }
  });
}
