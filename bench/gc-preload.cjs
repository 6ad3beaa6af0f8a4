// Preloaded into a process under bench/idle.mjs (NODE_OPTIONS=--expose-gc --require …): on
// SIGUSR2 it runs a full GC and writes process.memoryUsage() to $BENCH_MEMORY_FILE, so the bench
// reads the memory the process holds live rather than whatever garbage it has not collected yet.
'use strict';
const { writeFileSync } = require('node:fs');
const file = process.env.BENCH_MEMORY_FILE;
if (file && typeof global.gc === 'function') {
  process.on('SIGUSR2', () => {
    global.gc();
    writeFileSync(file, JSON.stringify(process.memoryUsage()));
  });
}
