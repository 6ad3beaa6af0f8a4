import type { StoredConversation } from '../../store/conversations';

/** A conversation as Markdown (issue 30's export): the title, the system prompt, then each message under its speaker. */
export function conversationMarkdown(c: StoredConversation, live?: string): string {
  const lines = [`# ${c.title.trim() || 'Untitled conversation'}`, '', `_Exported from DeskRelay, last updated ${new Date(c.updatedAt).toISOString()}._`, ''];
  if (c.system) lines.push('## System', '', c.system, '');
  for (const m of c.messages) {
    lines.push(m.role === 'user' ? '## You' : '## Assistant', '');
    if (m.content) lines.push(m.content, '');
    for (const p of m.photos ?? []) lines.push(`_(photo, ${p.mediaType})_`, '');
    if (m.error) lines.push(`> The reply failed: ${m.error}`, '');
  }
  if (live !== undefined) lines.push('## Assistant (still replying)', '', live, '');
  return lines.join('\n');
}
