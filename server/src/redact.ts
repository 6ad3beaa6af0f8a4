/**
 * Takes secrets (API keys, tunnel tokens) out of text the relay passes on: provider error text
 * that reaches the phone, agent lines that reach the log. Any run of MIN_RUN or more characters
 * of a secret is taken out, wherever in the secret it starts: providers echo keys cut short and
 * from the middle ("…key provided: proj-Qm7vT2…"), and a text cut short may end inside one.
 * A secret shorter than MIN_RUN is taken out only whole.
 *
 * This runs on error and log paths only, never per token of a reply. The secrets'
 * MIN_RUN-character windows are indexed once (a Map from window to where it occurs; the last
 * few indexes are kept, as the same key is redacted again and again); the text is then scanned
 * once, and at each position one lookup says whether a secret piece starts there.
 */
export const MIN_RUN = 8;
export const REDACTED = '[redacted]';

interface Index {
  windows: Map<string, [form: string, offset: number][]>;
  short: string[];
}

/** The last few secrets' indexes: the same key is redacted from each of its provider's errors. */
const indexes = new Map<string, Index>();
const KEPT_INDEXES = 8;

function indexOf(forms: readonly string[]): Index {
  const id = forms.join('\0');
  const kept = indexes.get(id);
  if (kept) return kept;
  const windows = new Map<string, [form: string, offset: number][]>();
  const short: string[] = [];
  for (const form of forms) {
    if (form.length < MIN_RUN) {
      short.push(form);
      continue;
    }
    for (let i = 0; i + MIN_RUN <= form.length; i++) {
      const w = form.slice(i, i + MIN_RUN);
      const at = windows.get(w);
      if (at) at.push([form, i]);
      else windows.set(w, [[form, i]]);
    }
  }
  if (indexes.size >= KEPT_INDEXES) indexes.delete(indexes.keys().next().value!);
  const index = { windows, short };
  indexes.set(id, index);
  return index;
}

export function redactSecrets(text: string, secrets: readonly string[]): string {
  const forms = secrets.filter((s) => s.length >= 4);
  if (forms.length === 0 || text.length === 0) return text;
  const { windows, short } = indexOf(forms);
  let out = '';
  let from = 0;
  let i = 0;
  while (i + MIN_RUN <= text.length) {
    const hits = windows.get(text.slice(i, i + MIN_RUN));
    if (!hits) {
      i++;
      continue;
    }
    // The longest run from here of any occurrence of this window.
    let end = i + MIN_RUN;
    for (const [form, offset] of hits) {
      let e = i + MIN_RUN;
      while (offset + (e - i) < form.length && e < text.length && text.charCodeAt(e) === form.charCodeAt(offset + (e - i))) e++;
      if (e > end) end = e;
    }
    out += text.slice(from, i) + REDACTED;
    from = i = end;
  }
  out += text.slice(from);
  for (const form of short) out = out.split(form).join(REDACTED);
  return out;
}
