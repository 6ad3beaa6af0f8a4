import { close, constants, fstat, open, read } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

// Non-blocking, so a FIFO that replaced a file since the walk saw it cannot hold a pool thread
// waiting for a writer (a regular file reads the same either way); Windows has no such flag.
const OPEN_FLAGS = constants.O_NONBLOCK === undefined ? 'r' : constants.O_RDONLY | constants.O_NONBLOCK;

/** What reading one file for the search gave: its bytes, or why it is skipped. */
export type SearchRead = { bytes: Buffer } | { skip: 'missing' | 'large' };

/** Most source files fit in one read of this size: open, read, close, and no fstat. */
const FIRST_READ = 64 * 1024;

/**
 * A file's bytes when it is at most `maxBytes`, through the callback API on libuv's pool: open,
 * one read of up to 64 KiB, close; a larger file costs an fstat and reads more. fs/promises'
 * stat + readFile took several times the CPU per small file (bench/agent.mjs, issue 28), and a
 * search reads every file of a tree. Never rejects.
 */
export function readSmallFile(path: string, maxBytes: number): Promise<SearchRead> {
  return new Promise((resolve) => {
    open(path, OPEN_FLAGS, (err, fd) => {
      if (err) return resolve({ skip: 'missing' });
      const done = (result: SearchRead) => close(fd, () => resolve(result));
      const first = Buffer.allocUnsafe(Math.min(FIRST_READ, maxBytes + 1));
      read(fd, first, 0, first.length, 0, (err, n) => {
        // EISDIR and the like: a folder or a device that took a file's place since the walk.
        if (err) return done({ skip: 'missing' });
        if (n < first.length) return done({ bytes: first.subarray(0, n) });
        fstat(fd, (err, info) => {
          if (err || !info.isFile()) return done({ skip: 'missing' });
          if (info.size > maxBytes) return done({ skip: 'large' });
          const bytes = Buffer.allocUnsafe(Math.max(info.size, n));
          first.copy(bytes, 0, 0, n);
          let got = n;
          // A file that grows meanwhile is read up to the size it had; one that shrinks, up to its end.
          const more = (): void => {
            if (got === bytes.length) return done({ bytes });
            read(fd, bytes, got, bytes.length - got, got, (err, m) => {
              if (err) return done({ skip: 'missing' });
              if (m === 0) return done({ bytes: bytes.subarray(0, got) });
              got += m;
              more();
            });
          };
          more();
        });
      });
    });
  });
}

/**
 * The items of `source` with `read(item)` for each, in the source's order, with up to `ahead`
 * reads in flight: the time of one file's round trips to the disk overlaps the others'. Stops
 * pulling from the source as soon as the consumer stops. `read` must not reject (a read still
 * in flight when the consumer stops is never awaited).
 */
export async function* readInOrder<T, R>(source: AsyncIterable<T>, ahead: number, read: (item: T) => Promise<R>): AsyncGenerator<[T, R]> {
  const it = source[Symbol.asyncIterator]();
  const queue: { item: T; result: Promise<R> }[] = [];
  let exhausted = false;
  const fill = async () => {
    while (!exhausted && queue.length < ahead) {
      const next = await it.next();
      if (next.done) exhausted = true;
      else queue.push({ item: next.value, result: read(next.value) });
    }
  };
  try {
    await fill();
    while (queue.length > 0) {
      const head = queue.shift()!;
      const result = await head.result;
      yield [head.item, result];
      await fill();
    }
  } finally {
    if (!exhausted) await it.return?.();
  }
}

/**
 * The source of the file reader thread (a script, so the bundle needs no second file). It reads
 * each path it is sent with synchronous calls, which cost a few microseconds a file against tens
 * for each round trip to libuv's pool, and sends back only what the search must look at: not a
 * missing, large or binary file, nor one whose bytes lack the needle (a plain query). A reply
 * holds at most REPLY_BYTES of file contents; the rest of the paths come back unread.
 */
const READER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { openSync, readSync, fstatSync, closeSync, constants } = require('node:fs');
const FLAGS = constants.O_NONBLOCK === undefined ? 'r' : constants.O_RDONLY | constants.O_NONBLOCK;
parentPort.on('message', ({ paths, maxBytes, needle, replyBytes }) => {
  const found = [];
  const transfer = [];
  let bytes = 0;
  let done = 0;
  for (const path of paths) {
    if (bytes >= replyBytes) break;
    done++;
    let fd;
    try {
      fd = openSync(path, FLAGS);
      const info = fstatSync(fd);
      if (!info.isFile() || info.size > maxBytes) continue;
      const buf = Buffer.allocUnsafeSlow(info.size);
      let got = 0;
      while (got < buf.length) {
        const n = readSync(fd, buf, got, buf.length - got, got);
        if (n === 0) break;
        got += n;
      }
      const content = buf.subarray(0, got);
      if (content.subarray(0, 8192).includes(0)) continue;
      if (needle && !content.includes(needle)) continue;
      found.push({ index: done - 1, bytes: content });
      transfer.push(buf.buffer);
      bytes += got;
    } catch {
      // Gone or unreadable since the walk: skipped, as before.
    } finally {
      if (fd !== undefined) try { closeSync(fd); } catch {}
    }
  }
  parentPort.postMessage({ found, done }, transfer);
});
`;

const BATCH_PATHS = 128;
const REPLY_BYTES = 8 * 1024 * 1024;

/**
 * The files of `paths` (folder-relative, under `root`) that a search must look at, in order, with
 * their bytes: at most `maxBytes` each, not binary (a NUL in the first 8 KiB), and containing
 * `needle` when one is given. They are read on a worker thread, a batch ahead of the caller, so
 * the relay's own thread neither blocks on the disk nor pays a pool round trip per call; memory
 * stays bounded (one batch of at most 8 MiB of contents in flight, one being searched). Without a
 * worker (one could not start) they are read on libuv's pool instead.
 */
export async function* searchableFiles(paths: AsyncIterable<string>, root: string, maxBytes: number, needle: Buffer | undefined): AsyncGenerator<[string, Buffer]> {
  let worker: Worker;
  try {
    worker = new Worker(READER_SOURCE, { eval: true });
  } catch {
    for await (const [file, got] of readInOrder(paths, 16, (f) => readSmallFile(join(root, f), maxBytes))) {
      if (!('bytes' in got)) continue;
      if (got.bytes.subarray(0, 8192).includes(0) || (needle && !got.bytes.includes(needle))) continue;
      yield [file, got.bytes];
    }
    return;
  }
  let failed: unknown;
  let waiting: { resolve: (reply: Reply) => void; reject: (err: unknown) => void } | undefined;
  worker.on('message', (reply: Reply) => waiting?.resolve(reply));
  worker.on('error', (err) => {
    failed = err;
    waiting?.reject(err);
  });
  const it = paths[Symbol.asyncIterator]();
  let exhausted = false;
  const queue: string[] = [];
  const ask = async (): Promise<{ sent: string[]; reply: Promise<Reply> } | undefined> => {
    while (!exhausted && queue.length < BATCH_PATHS) {
      const next = await it.next();
      if (next.done) exhausted = true;
      else queue.push(next.value);
    }
    if (queue.length === 0) return undefined;
    if (failed) throw failed;
    const sent = queue.splice(0, BATCH_PATHS);
    const reply = new Promise<Reply>((resolve, reject) => (waiting = { resolve, reject }));
    // Awaited later, maybe never (the caller stopped): a failure must not go unhandled meanwhile.
    reply.catch(() => {});
    worker.postMessage({ paths: sent.map((f) => join(root, f)), maxBytes, needle: needle ?? null, replyBytes: REPLY_BYTES });
    return { sent, reply };
  };
  try {
    let pending = await ask();
    while (pending) {
      const { sent, reply } = pending;
      const { found, done } = await reply;
      // What the reader did not get to goes first into the next batch, which is sent before this
      // one is searched: the thread reads while the caller matches.
      queue.unshift(...sent.slice(done));
      pending = await ask();
      for (const { index, bytes } of found) yield [sent[index]!, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)];
    }
  } finally {
    void worker.terminate();
    if (!exhausted) await it.return?.();
  }
}

interface Reply {
  found: { index: number; bytes: Uint8Array }[];
  done: number;
}
