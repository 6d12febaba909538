/**
 * Preloaded into the service by ingest-memory.ts (NODE_OPTIONS `--expose-gc --require`), so the
 * result says where the memory is, which RSS alone does not: the main thread's JavaScript heap,
 * its ArrayBuffers (vector rows, keyword postings), PGlite's WebAssembly memory (it never shrinks)
 * and each worker thread's share (the HNSW graph's thread holds the rows posted to it until its
 * own collector runs).
 *
 * The main thread samples every 50 ms and keeps the sample taken at its highest RSS. On SIGUSR2
 * it writes, to MEMORY_PROBE_OUT, that sample, one taken now, and one after a full collection of
 * every thread (asked for over a BroadcastChannel), so what stays can be told from what is waiting
 * to be collected. CommonJS because --require loads it before the service's modules.
 */
const { BroadcastChannel, isMainThread, threadId } = require('node:worker_threads');
const { writeFileSync } = require('node:fs');

const output = process.env.MEMORY_PROBE_OUT;
const mib = (bytes) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const collect = () => {
  globalThis.gc?.();
  globalThis.gc?.();
};

/** WebAssembly memories created while the service runs: PGlite's is the large one. */
const memories = [];
WebAssembly.Memory = new Proxy(WebAssembly.Memory, {
  construct(target, args, newTarget) {
    const memory = Reflect.construct(target, args, newTarget);
    memories.push(memory);
    return memory;
  },
});

function usage() {
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  const wasm = memories.reduce((sum, memory) => sum + memory.buffer.byteLength, 0);
  return { rss_mib: mib(rss), heap_used_mib: mib(heapUsed), array_buffers_mib: mib(arrayBuffers), external_mib: mib(external), wasm_mib: mib(wasm) };
}

if (output) {
  const channel = new BroadcastChannel('ingest-memory-probe');
  channel.unref();
  if (isMainThread) {
    let atPeak = usage();
    setInterval(() => {
      const now = usage();
      if (now.rss_mib > atPeak.rss_mib) atPeak = now;
    }, 50).unref();
    const threads = [];
    channel.onmessage = ({ data }) => threads.push(data);
    process.on('SIGUSR2', () => {
      const beforeCollection = usage();
      channel.postMessage('collect');
      collect();
      setTimeout(() => {
        // Each thread's own heap and external memory; rss is the process's, as on the main thread.
        const afterCollection = { main: usage(), threads: threads.splice(0).map(({ rss_mib, wasm_mib, ...rest }) => rest) };
        writeFileSync(output, JSON.stringify({ at_peak: atPeak, before_collection: beforeCollection, after_collection: afterCollection }));
      }, 1000);
    });
  } else {
    channel.onmessage = ({ data }) => {
      // Other threads' answers reach every thread too.
      if (data !== 'collect') return;
      collect();
      channel.postMessage({ thread: threadId, ...usage() });
    };
  }
}
