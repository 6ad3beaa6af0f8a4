import { createContext, Script } from 'node:vm';
import { WorkspaceError } from '../../workspace';

/** How long one search's regular expression may run in all (a pattern that backtracks without end). */
export const REGEX_BUDGET_MS = 5_000;

// The context's globals are read once into parameters: a global of a vm context is reached
// through an interceptor on every access, which made the loop ~25x slower (bench/NOTES.md, issue 28).
const MATCH = new Script('((re, lines, out) => { out.length = 0; for (let i = 0; i < lines.length; i++) if (re.test(lines[i])) out.push(i); })(re, lines, out);');

/**
 * Tests lines against a model's regular expression with a time budget. The search runs in the
 * relay's own process, and a pattern like `(a+)+$` can backtrack for ever on one line: V8 can
 * interrupt a regular expression only through vm's timeout, so the matching runs there.
 */
export class RegexLines {
  private readonly context: { re: RegExp; lines: string[]; out: number[] };
  private spent = 0;

  constructor(pattern: string) {
    let re: RegExp;
    try {
      re = new RegExp(pattern);
    } catch (err) {
      throw new WorkspaceError(`The regular expression is not valid: ${(err as Error).message}`);
    }
    this.context = createContext({ re, lines: [] as string[], out: [] as number[] }) as typeof this.context;
  }

  /** The indexes of the lines that match; a WorkspaceError once the budget is spent. */
  match(lines: string[]): number[] {
    const started = Date.now();
    this.context.lines = lines;
    try {
      MATCH.runInContext(this.context, { timeout: Math.max(1, REGEX_BUDGET_MS - this.spent) });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
        throw new WorkspaceError(`The regular expression took longer than ${REGEX_BUDGET_MS / 1000} s (it backtracks too much); use a simpler one or a plain string.`);
      }
      throw err;
    } finally {
      this.spent += Date.now() - started;
      this.context.lines = [];
    }
    return [...this.context.out];
  }
}
