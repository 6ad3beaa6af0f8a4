/**
 * What the export reads of a conversation: the desktop's stored one, or a phone's own copy (the
 * web client exports a chat the desktop does not keep with this same function). No Node here.
 */
export interface MarkdownConversation {
  title: string;
  system: string;
  updatedAt: number;
  messages: readonly { role: 'user' | 'assistant'; content: string; photos?: readonly { mediaType: string }[]; error?: string }[];
}

/** A conversation as Markdown (issue 30's export): the title, the system prompt, then each message under its speaker. */
export function conversationMarkdown(c: MarkdownConversation, live?: string): string {
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

/** The export's file name: the title's plain letters, digits and dashes, or "conversation". */
export function markdownFileName(title: string): string {
  return `${(title.replace(/[^A-Za-z0-9 _-]/g, '').trim().slice(0, 60) || 'conversation').replace(/ +/g, '-')}.md`;
}
