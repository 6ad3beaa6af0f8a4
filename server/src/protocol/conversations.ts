/** Conversations kept on the desktop (issue 30, docs/conversations.md). */
import type { ContentPart } from './chat';
import type { ReplyStatus } from './events';

/** The door's paths. */
export const CONVERSATION_PATHS = /* @__PURE__ */ Object.freeze({
  conversations: '/v1/conversations',
  /** The change feed: which conversation to fetch again (or drop). */
  conversationChanges: '/v1/conversations/events',
  conversation: '/v1/conversations/:id',
  conversationEvents: '/v1/conversations/:id/events',
  conversationMessages: '/v1/conversations/:id/messages',
  conversationReply: '/v1/conversations/:id/reply',
  conversationStop: '/v1/conversations/:id/stop',
  conversationExport: '/v1/conversations/:id/export',
});

/** Every path of every door. */

/** One entry of `GET /v1/conversations`: a kept chat, or one of the agent's sessions of this run. */
export interface ConversationSummary {
  id: string;
  title: string;
  updatedAt: string;
  kind: 'chat' | 'agent';
  preview: string;
}

/** The answer to `POST /v1/conversations` (201). */
export interface ConversationCreated {
  id: string;
}

/** The answer to `PUT /v1/conversations/:id`: what the desktop now has, its time included. */
export interface ConversationUpdated {
  id: string;
  title: string;
  system: string;
  updatedAt: string;
}

/** The answer to `POST /v1/conversations/:id/messages` and `…/reply` (202): follow the reply from this event id. */
export interface ReplyStarted {
  lastEventId: number;
}

/** `GET /v1/conversations/:id`. A reply in progress is its last message, `pending`; follow it from `lastEventId`. */
export interface KeptConversation {
  id: string;
  kind: 'chat';
  title: string;
  system: string;
  createdAt: string;
  updatedAt: string;
  status: ReplyStatus;
  messages: { role: 'user' | 'assistant'; content: string | ContentPart[]; error?: string; pending?: boolean }[];
  lastEventId: number;
}
