import { FrameLog, type NumberedFrame } from '../streams/frameLog';
import type { AgentEvent } from '../protocol';

/** One numbered event, framed as `id: n\ndata: …\n\n`. */
export type AgentFrame = NumberedFrame;

/** A client following a session's events live. */
export interface AgentListener {
  push(frame: AgentFrame): void;
  /** The session is gone (deleted, dropped, the relay stopping): end the response. */
  close(): void;
}

export type AgentReplay = { frames: AgentFrame[]; missed?: string };

export const frameAgentEvent = (event: AgentEvent | object, id: number) => `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`;

/**
 * The numbered events of one agent session, for replay after `Last-Event-ID`, and the clients
 * listening live (the resumable door's EventLog, without a terminal event: a session's stream
 * stays open across turns). Memory is capped: past `capBytes` the oldest events are dropped;
 * a resume that needs one is told so, and the session's snapshot still has the transcript.
 */
export class AgentEventLog<E extends object = AgentEvent> extends FrameLog<AgentFrame, AgentListener> {
  /** Clients attached right now (a push goes out only when there are none). */
  get attached(): number {
    return this.listeners.size;
  }

  append(event: E): void {
    const id = this.nextId++;
    const framed = frameAgentEvent(event, id);
    this.keep({ id, framed, bytes: Buffer.byteLength(framed) });
  }

  /** The events after `after`; `missed` says when some were already dropped. */
  since(after: number): AgentReplay {
    const frames = this.frames.filter((f) => f.id > after);
    if (after >= this.droppedThrough) return { frames };
    return {
      frames,
      missed: `Events ${after + 1} to ${this.droppedThrough} were dropped (the desktop keeps ${this.capBytes} bytes of a session's events); GET the session for its whole transcript.`,
    };
  }

  /** The events held, with their ids (what a kept session saves). */
  entries(): { id: number; event: E }[] {
    return this.frames.map((f) => ({ id: f.id, event: JSON.parse(f.framed.slice(f.framed.indexOf('\ndata: ') + 7)) as E }));
  }

  /** A kept session's events read back, numbered as they were (ids before the first count as dropped). */
  restore(entries: readonly { id: number; event: E }[]): void {
    const first = entries[0]?.id ?? 1;
    this.nextId = first;
    this.droppedThrough = first - 1;
    for (const { event } of entries) this.append(event);
  }

  closeAll(): void {
    const all = [...this.listeners];
    this.listeners.clear();
    for (const listener of all) listener.close();
  }
}
