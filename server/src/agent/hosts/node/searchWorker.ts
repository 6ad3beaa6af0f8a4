import { sep } from 'node:path';
import { Worker } from 'node:worker_threads';
import { WorkspaceError, type SearchResult } from '../../workspace';

/** How long one search's regular expression may run in all (a pattern that backtracks without end). */
export const REGEX_BUDGET_MS = 5_000;

export interface SearchJob {
  query: string;
  regex: boolean;
  /** Files larger than this are skipped. */
  maxBytes: number;
  maxMatches: number;
  signal?: AbortSignal;
}

/**
 * The source of the search thread (a script, so the bundle needs no second file). It is sent the
 * job once, then batches of paths in the walk's order, and for each batch reads every file with
 * synchronous calls (a few microseconds a file, against tens for each round trip to libuv's pool),
 * skips a missing, large or binary one and, for a plain query, one whose bytes lack it (no decode,
 * no split), tests the lines of the rest and answers only the matches: the relay's own thread
 * neither reads, decodes nor matches, so every other stream keeps flowing while a search runs.
 * It counts the matches of the whole search and stops at the cap, saying whether there were more.
 *
 * Lines are tested on their first 10,000 characters (minified code, data); a match's text is cut
 * at 300. A regular expression runs over about 1 MiB of lines per vm call: V8 can interrupt one
 * only through vm's timeout (a pattern like `(a+)+$` backtracks for ever on one line), and each
 * call starts vm's watchdog, which one call per file paid ~50,000 times on a large tree. The
 * context's globals are read once into parameters: a global of a vm context is reached through
 * an interceptor on every access, which made the loop ~25x slower (bench/NOTES.md, issue 28).
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { openSync, readSync, fstatSync, closeSync, constants } = require('node:fs');
const { createContext, Script } = require('node:vm');
// Non-blocking, so a FIFO that took a file's place since the walk cannot hold the thread waiting for a writer.
const FLAGS = constants.O_NONBLOCK === undefined ? 'r' : constants.O_RDONLY | constants.O_NONBLOCK;
const LINE_TEST_CHARS = 10000;
const MATCH_CHARS = 300;
const REGEX_BATCH_CHARS = 1024 * 1024;
const MATCH = new Script('((re, lines, out) => { out.length = 0; for (let i = 0; i < lines.length; i++) if (re.test(lines[i])) out.push(i); })(re, lines, out);');
let job;
const clip = (line) => (line.length > LINE_TEST_CHARS ? line.slice(0, LINE_TEST_CHARS) : line);
const shown = (line) => (line.length > MATCH_CHARS ? line.slice(0, MATCH_CHARS) + '\\u2026' : line.replace(/\\r$/, ''));

// Most source files fit in one read of this size: open, fstat, read, close; the buffer is
// reused (a file's lines are strings, copied out of it, before the next file is read).
const FIRST = Buffer.allocUnsafe(64 * 1024);

function read(path) {
  let fd;
  try {
    fd = openSync(path, FLAGS);
    // Only a regular file with one name: a hard link may be a secret or an outside file under
    // another name (read_file refuses it too), and a FIFO is never read.
    const info = fstatSync(fd);
    if (!info.isFile() || info.nlink > 1 || info.size > job.maxBytes) return undefined;
    const want = Math.min(FIRST.length, job.maxBytes + 1);
    const first = readSync(fd, FIRST, 0, want, 0);
    let content = FIRST.subarray(0, first);
    if (first === want) {
      if (first > job.maxBytes) return undefined; // grew past the cap since fstat
      const buf = Buffer.allocUnsafe(Math.max(info.size, first));
      FIRST.copy(buf, 0, 0, first);
      let got = first;
      // A file that grows meanwhile is read up to the size it had; one that shrinks, up to its end.
      while (got < buf.length) {
        const n = readSync(fd, buf, got, buf.length - got, got);
        if (n === 0) break;
        got += n;
      }
      content = buf.subarray(0, got);
    }
    if (content.subarray(0, 8192).includes(0)) return undefined;
    return content;
  } catch {
    return undefined; // gone, unreadable, or no longer a file since the walk: skipped
  } finally {
    if (fd !== undefined) try { closeSync(fd); } catch {}
  }
}

/** Adds a file's hit lines to out; false once the cap is passed (job.full). */
function take(out, index, lines, hits) {
  for (const i of hits) {
    if (job.count >= job.maxMatches) {
      job.full = true;
      return false;
    }
    job.count++;
    out.push({ index, line: i + 1, text: shown(lines[i]) });
  }
  return true;
}

function runRegex(out, pending) {
  if (pending.length === 0) return true;
  const all = [];
  for (const p of pending) for (const line of p.lines) all.push(clip(line));
  const started = Date.now();
  job.context.lines = all;
  try {
    MATCH.runInContext(job.context, { timeout: Math.max(1, job.budgetMs - job.spent) });
  } catch (err) {
    if (err && err.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      job.timedOut = true;
      return false;
    }
    throw err;
  } finally {
    job.spent += Date.now() - started;
    job.context.lines = [];
  }
  const hits = job.context.out;
  let h = 0;
  let offset = 0;
  for (const p of pending.splice(0)) {
    const mine = [];
    while (h < hits.length && hits[h] < offset + p.lines.length) mine.push(hits[h++] - offset);
    offset += p.lines.length;
    if (!take(out, p.index, p.lines, mine)) return false;
  }
  return true;
}

parentPort.on('message', (msg) => {
  if (msg.job) {
    const { query, regex, maxBytes, maxMatches, budgetMs } = msg.job;
    job = { query, maxBytes, maxMatches, budgetMs, count: 0, full: false, timedOut: false, spent: 0 };
    if (regex) job.context = createContext({ re: new RegExp(query), lines: [], out: [] });
    // A plain query absent from a file's bytes is absent from its text; not so for one with
    // U+FFFD, which the decoder also makes of bytes that are not UTF-8.
    else if (!query.includes('\\uFFFD')) job.needle = Buffer.from(query, 'utf8');
    return;
  }
  const out = [];
  if (!job.full && !job.timedOut) {
    const pending = [];
    let chars = 0;
    for (let index = 0; index < msg.paths.length; index++) {
      const content = read(msg.paths[index]);
      if (content === undefined || (job.needle && !content.includes(job.needle))) continue;
      const lines = content.toString('utf8').split('\\n');
      if (job.context) {
        pending.push({ index, lines });
        chars += content.length;
        if (chars >= REGEX_BATCH_CHARS) {
          chars = 0;
          if (!runRegex(out, pending)) break;
        }
        continue;
      }
      const hits = [];
      for (let i = 0; i < lines.length; i++) if (clip(lines[i]).includes(job.query)) hits.push(i);
      if (!take(out, index, lines, hits)) break;
    }
    if (job.context && !job.full && !job.timedOut) runRegex(out, pending);
  }
  parentPort.postMessage({ matches: out, full: job.full, timedOut: job.timedOut });
});
`;

/** Paths sent to the thread at once; two batches are in flight, so it reads one while the walk finds the next. */
const BATCH_PATHS = 256;
const IN_FLIGHT = 2;

interface Reply {
  matches: { index: number; line: number; text: string }[];
  full: boolean;
  timedOut: boolean;
}

/**
 * Searches the files of `paths` (folder-relative, under `root`, in the walk's order) on a thread of
 * its own: the matches in that order, at most `maxMatches`, truncated when there were more. The
 * relay's thread only walks the folder and passes paths on; memory stays bounded (the thread
 * holds one file, or ~1 MiB of lines for a regular expression, and the capped matches). A
 * regular expression that runs past its budget is a WorkspaceError, as is a thread that cannot
 * start or dies.
 */
export async function searchFiles(paths: AsyncIterable<string>, root: string, job: SearchJob): Promise<SearchResult> {
  if (job.regex) {
    try {
      new RegExp(job.query);
    } catch (err) {
      throw new WorkspaceError(`The regular expression is not valid: ${(err as Error).message}`);
    }
  }
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, { eval: true });
  } catch (err) {
    throw new WorkspaceError(`The search could not start its thread (${(err as Error).message}).`);
  }
  const waiting: { resolve: (reply: Reply) => void; reject: (err: unknown) => void }[] = [];
  let failed: unknown;
  const fail = (err: unknown) => {
    failed ??= err;
    for (const w of waiting.splice(0)) w.reject(failed);
  };
  worker.on('message', (reply: Reply) => waiting.shift()?.resolve(reply));
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new WorkspaceError(`The search's thread stopped (exit code ${code}).`)));
  worker.postMessage({ job: { query: job.query, regex: job.regex, maxBytes: job.maxBytes, maxMatches: job.maxMatches, budgetMs: REGEX_BUDGET_MS } });

  // The walk's paths are already relative and normalised: a join per file would only cost time.
  const prefix = root.endsWith(sep) ? root : root + sep;
  const it = paths[Symbol.asyncIterator]();
  let exhausted = false;
  const inFlight: { sent: string[]; reply: Promise<Reply> }[] = [];
  const send = async () => {
    const sent: string[] = [];
    while (!exhausted && sent.length < BATCH_PATHS) {
      const next = await it.next();
      if (next.done) exhausted = true;
      else sent.push(next.value);
    }
    if (sent.length === 0) return;
    if (failed) throw failed;
    const reply = new Promise<Reply>((resolve, reject) => waiting.push({ resolve, reject }));
    // Awaited later, maybe never (the search stopped first): a failure must not go unhandled meanwhile.
    reply.catch(() => {});
    worker.postMessage({ paths: sent.map((f) => prefix + f) });
    inFlight.push({ sent, reply });
  };
  const matches: SearchResult['matches'] = [];
  try {
    while (inFlight.length < IN_FLIGHT && !exhausted) await send();
    while (inFlight.length > 0) {
      const { sent, reply } = inFlight.shift()!;
      const got = await reply;
      for (const m of got.matches) matches.push({ path: sent[m.index]!, line: m.line, text: m.text });
      if (got.timedOut) throw new WorkspaceError(`The regular expression took longer than ${REGEX_BUDGET_MS / 1000} s (it backtracks too much); use a simpler one or a plain string.`);
      if (got.full) return { matches, truncated: true };
      if (job.signal?.aborted) break;
      await send();
    }
    return { matches, truncated: false };
  } finally {
    worker.removeAllListeners('exit');
    worker.on('error', () => {});
    void worker.terminate();
    if (!exhausted) await it.return?.();
  }
}
