import type { DoorFactory } from '../door';
import { chatSocketRoute } from './chatSocket';

/** The WebSocket fallback for networks that hold streamed HTTP responses back. */
export const socketDoor: DoorFactory = () => ({ routes: [chatSocketRoute] });
