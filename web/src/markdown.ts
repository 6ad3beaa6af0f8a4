/**
 * Model output → sanitised HTML: Markdown (marked) → DOMPurify with the strict profile below.
 * Pure: it touches no element of the page, so the desk's webviews load it too (as
 * media/markdown.js, built from markdown.entry.ts by scripts/build.mjs) and render a reply
 * exactly as the phone does.
 */
import DOMPurify from 'dompurify';
import { marked } from 'marked';

marked.setOptions({ gfm: true, breaks: true, async: false });

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
  // The page's own classes would let a reply dress up as a user message, a button or a status
  // line; Markdown only ever needs the highlighter's language-* on code.
  if (node.hasAttribute('class')) {
    const kept = [...node.classList].filter((c) => /^language-[\w+#.-]+$/.test(c));
    if (kept.length) node.setAttribute('class', kept.join(' '));
    else node.removeAttribute('class');
  }
});

/**
 * A reply shares the document with the page's controls, so it must not be able to name them or
 * reach them: ids and names are prefixed (`user-content-…`), which keeps them apart from the page's
 * ids and from window's and document's named properties, and the attributes that point at an
 * element by id (a label's `for`, `form`, `list`, popover and command targets, ARIA relations) go,
 * since the only ids they could still hit are the page's.
 */
const SANITIZE = Object.freeze({
  USE_PROFILES: { html: true },
  SANITIZE_NAMED_PROPS: true,
  FORBID_TAGS: [
    'img', 'style', 'iframe', 'video', 'audio', 'source', 'picture', 'svg', 'math',
    'form', 'input', 'button', 'textarea', 'select', 'option', 'optgroup', 'datalist',
    'label', 'fieldset', 'legend', 'output', 'meter', 'progress',
    'dialog', 'map', 'area', 'template', 'slot',
  ],
  FORBID_ATTR: [
    'style', 'srcset', 'action', 'formaction',
    'for', 'form', 'list', 'usemap', 'headers',
    'popover', 'popovertarget', 'popovertargetaction', 'command', 'commandfor',
    'tabindex', 'inert',
  ],
  ALLOW_ARIA_ATTR: false,
  ALLOW_DATA_ATTR: false,
});

export function renderMarkdown(text: string): string {
  return DOMPurify.sanitize(marked.parse(text) as string, SANITIZE) as unknown as string;
}
