/**
 * The other thread of the read-only race (map-checks' `read-only.*`): it opens a path for writing in a loop, as
 * fast as it can, and counts the opens that reached the watched file (by device and inode), until told to stop.
 *
 * @module
 */
/// <reference lib="deno.worker" />

self.onmessage = (ev: MessageEvent) => {
  const { path, dev, ino, stop } = ev.data as { path: string; dev: number; ino: number; stop: SharedArrayBuffer };
  const flag = new Int32Array(stop);
  let attempts = 0;
  let writable = 0;
  let denied = 0;
  self.postMessage("ready");
  while (Atomics.load(flag, 0) === 0) {
    attempts++;
    try {
      const f = Deno.openSync(path, { write: true });
      try {
        const st = f.statSync();
        if (st.dev === dev && st.ino === ino) writable++;
      } finally {
        f.close();
      }
    } catch (e) {
      // Refused (EROFS) or gone between attaches: not writable. Refused by Deno's permissions: no attempt at all.
      if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) denied++;
    }
  }
  self.postMessage({ attempts, writable, denied });
};
