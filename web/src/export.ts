/**
 * A chat as Markdown through the phone's share sheet (issue 30's export): the desktop's own
 * export (`GET /v1/conversations/<id>/export`) when it keeps the chat, else this phone's copy
 * written by the same function, so both read alike. Shared as a text/markdown file when the
 * browser can share files, else downloaded as a .md.
 */
import type { MarkdownConversation } from '../../server/src/protocol';
import { CONVERSATION_PATHS } from '../../server/src/protocol/conversations';
import { conversationMarkdown, markdownFileName } from '../../server/src/protocol/markdown';
import { pathTo } from '../../server/src/protocol/paths';
import { apiError, bearer } from './api';
import type { Chat } from './chats';
import { DesktopStore } from './desktopChats';

export interface ExportedChat {
  name: string;
  text: string;
}

/** This phone's copy as the desktop would export it. */
export function localMarkdown(chat: Chat): ExportedChat {
  const c: MarkdownConversation = {
    title: chat.title,
    system: chat.systemPrompt,
    updatedAt: chat.updated,
    messages: chat.messages.map((m) => ({
      role: m.role,
      content: m.content,
      // Only a photo's type is written: the export says a photo was there, not its bytes.
      ...(m.images?.length ? { photos: m.images.map((p) => ({ mediaType: p.mediaType })) } : {}),
    })),
  };
  return { name: markdownFileName(chat.title), text: conversationMarkdown(c) };
}

/** The desktop's export of a chat it keeps; this phone's copy for one it does not (or not yet: made offline). */
export async function chatMarkdown(chat: Chat, store: unknown): Promise<ExportedChat> {
  if (!(store instanceof DesktopStore) || !/^[0-9a-f-]{36}$/.test(chat.id)) return localMarkdown(chat);
  let res: Response;
  try {
    res = await fetch(pathTo(CONVERSATION_PATHS.conversationExport, { id: chat.id }), { headers: bearer(store.token), cache: 'no-store' });
  } catch {
    // The desktop cannot be reached: this phone's copy is the same conversation.
    return localMarkdown(chat);
  }
  if (!res.ok) throw await apiError(res);
  const name = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? markdownFileName(chat.title);
  return { name, text: await res.text() };
}

/** Offers the Markdown to the share sheet as a file, or downloads it where files cannot be shared. */
export async function shareMarkdown({ name, text }: ExportedChat, title: string): Promise<void> {
  const file = new File([text], name, { type: 'text/markdown' });
  if (typeof navigator.canShare === 'function' && navigator.canShare({ files: [file] })) {
    try {
      await navigator.share({ files: [file], title });
    } catch (err) {
      // Closing the share sheet is the user's choice, not a failure.
      if ((err as Error)?.name !== 'AbortError') throw err;
    }
    return;
  }
  const url = URL.createObjectURL(file);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
