import type { ContextSlice } from '../context';
import type { DoorFactory } from '../door';
import { chatSocketRoute } from './chatSocket';

/** What the WebSocket door reads of the relay: the chat service, request state and its log line, its deadlines, the log for socket errors. */
export type SocketContext = ContextSlice<'chat' | 'state' | 'logRequest', 'logger' | 'keepAliveMs' | 'bodyTimeoutMs'>;

/** The WebSocket fallback for networks that hold streamed HTTP responses back. */
export const socketDoor: DoorFactory<SocketContext> = () => ({ routes: [chatSocketRoute] });
