import { close, constants, fstat, open, read } from 'node:fs';

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
