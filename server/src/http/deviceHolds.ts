import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { requestState } from './request';

/** A removed device's socket gets this long to take its close frame (the chat's 1001) before it is cut. */
const SOCKET_GRACE_MS = 300;

/**
 * Every response and upgraded socket a device holds open right now, on every door, so that
 * removing the device ends them all at once (issue 35 finding 3): chats end through the chat
 * service (each door words its own end), and everything else a device follows — the agent's
 * and the conversations' event streams, a resumable reply attached to, a request still being
 * read — ends here. The funnel adds each device request as it is admitted; a response leaves
 * when it closes (the funnel's one shared `close` listener), a socket when it closes.
 */
export class DeviceHolds {
  private readonly responses = new Map<string, Set<ServerResponse>>();
  private readonly sockets = new Map<string, Set<Duplex>>();

  add(device: string, res: ServerResponse): void {
    let set = this.responses.get(device);
    if (!set) this.responses.set(device, (set = new Set()));
    set.add(res);
  }

  /** Called from the response's close: it no longer holds anything. */
  delete(device: string, res: ServerResponse): void {
    const set = this.responses.get(device);
    if (!set) return;
    set.delete(res);
    if (set.size === 0) this.responses.delete(device);
  }

  addSocket(device: string, socket: Duplex): void {
    let set = this.sockets.get(device);
    if (!set) this.sockets.set(device, (set = new Set()));
    set.add(socket);
    socket.once('close', () => {
      set.delete(socket);
      if (set.size === 0 && this.sockets.get(device) === set) this.sockets.delete(device);
    });
  }

  /** How many responses and sockets the device holds open. */
  countOf(device: string): number {
    return (this.responses.get(device)?.size ?? 0) + (this.sockets.get(device)?.size ?? 0);
  }

  /**
   * What the device holds right now, to end once its chats have written their end (`end`):
   * an event stream with its one terminal `error` event (`message`), any other unfinished
   * request at once. A response whose chat the chat service is ending is left to it (it ends
   * with its door's own wording); so is the request that removed the device itself (a phone's
   * Unpair), which still gets its answer. Sockets get a short grace for their close frame, then
   * are cut. Taken at once, so a phone that pairs again under the same id keeps its new requests.
   */
  take(device: string): { end(message: string): number } {
    const responses = [...(this.responses.get(device) ?? [])];
    const sockets = [...(this.sockets.get(device) ?? [])];
    return {
      end(message: string): number {
        let ended = 0;
        for (const res of responses) {
          const state = requestState(res.req);
          if (state.removesItsDevice || state.abortOnClose !== undefined || res.writableEnded || res.destroyed) continue;
          ended++;
          if (res.headersSent && state.writer?.error) state.writer.error(message);
          else res.destroy();
        }
        for (const socket of sockets) {
          if (socket.destroyed) continue;
          ended++;
          setTimeout(() => socket.destroy(), SOCKET_GRACE_MS).unref();
        }
        return ended;
      },
    };
  }
}
