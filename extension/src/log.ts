import * as vscode from 'vscode';
import type { Logger, RequestLogEntry } from '../../server/src';

/**
 * The `DeskRelay` output channel: one line per request and tunnel event. Nothing written here
 * ever holds a token, a pairing payload or an API key.
 */
export class OutputLog implements Logger {
  constructor(readonly channel: vscode.OutputChannel) {}

  private line(level: string, message: string): void {
    this.channel.appendLine(`${new Date().toISOString()} ${level.padEnd(5)} ${message}`);
  }

  info(message: string): void {
    this.line('info', message);
  }
  warn(message: string): void {
    this.line('warn', message);
  }
  error(message: string): void {
    this.line('error', message);
  }

  request(e: RequestLogEntry): void {
    this.line('http', `${e.method} ${e.path} ${e.status} ${e.durationMs}ms${e.provider ? ` provider=${e.provider}` : ''}${e.device ? ` device=${e.device}` : ''}`);
  }

  show(): void {
    this.channel.show(true);
  }
}
