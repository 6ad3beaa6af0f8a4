/**
 * The client's state, in one place: what it is paired with, the chat on screen, the saved chats,
 * the reply streaming (at most one) and the message being edited. The modules that act on it
 * (conversation, library, connection) share it here instead of each keeping its own `let`s.
 */
import type { RemoteInfo } from '../../server/src/protocol';
import { IdbStore, MemoryStore, newChat, type Chat, type ChatStore } from './chats';
import type { Pairing } from './pairing';
import { localStore } from './storage';
import type { Turn } from './turn';

export const KEEP_CHATS_KEY = 'deskrelay.keepChats';

export const app: {
  pairing: Pairing | null;
  /** What the desktop said about itself at the last connection. */
  info: RemoteInfo | null;
  /** The turn being streamed (at most one). */
  current: Turn | null;
  /** Where chats are kept: IndexedDB, or memory with "Keep chats on this phone" off. */
  store: ChatStore;
  /** The chat on screen. */
  chat: Chat;
  chats: Chat[];
  /** The index of the sent message being edited, if any: Send then resends the chat from there. */
  editing: number | null;
  /** Told after each connection attempt and on unpairing (the agent's screen checks the desk's agent). */
  onConnection: (() => void)[];
} = {
  pairing: null,
  info: null,
  current: null,
  store: localStore.read(KEEP_CHATS_KEY) === false ? new MemoryStore() : new IdbStore(),
  chat: newChat(),
  chats: [],
  editing: null,
  onConnection: [],
};
