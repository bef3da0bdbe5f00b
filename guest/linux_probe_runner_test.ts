import assert from "node:assert/strict";
import { type NamespaceLinks, namespacesFact } from "./linux_probe_runner.ts";

/** /proc/1/ns and /proc/PID/ns as a table: a link is its target, or an error to throw. */
function fakeProc(links: Record<string, string | Error>): NamespaceLinks {
  return {
    async *readDir(path: string) {
      assert.equal(path, "/proc/1/ns");
      for (const k of Object.keys(links)) {
        const m = /^\/proc\/1\/ns\/(.+)$/.exec(k);
        if (m) yield { name: m[1]! };
      }
    },
    readLink(path: string) {
      const v = links[path];
      if (v === undefined) return Promise.reject(new Deno.errors.NotFound(path));
      return v instanceof Error ? Promise.reject(v) : Promise.resolve(v);
    },
  };
}

Deno.test("namespacesFact() is same when every link reads as PID 1's, else names the ones that differ", async () => {
  const same = fakeProc({
    "/proc/1/ns/mnt": "mnt:[1]",
    "/proc/1/ns/net": "net:[2]",
    "/proc/42/ns/mnt": "mnt:[1]",
    "/proc/42/ns/net": "net:[2]",
  });
  assert.equal(await namespacesFact(42, same), "same");
  const other = fakeProc({
    "/proc/1/ns/pid": "pid:[3]",
    "/proc/1/ns/mnt": "mnt:[1]",
    "/proc/1/ns/net": "net:[2]",
    "/proc/42/ns/mnt": "mnt:[9]",
    "/proc/42/ns/net": "net:[2]",
    "/proc/42/ns/pid": "pid:[8]",
  });
  assert.equal(await namespacesFact(42, other), "mnt pid");
});

Deno.test("namespacesFact() never calls two unreadable links the same namespace", async () => {
  const denied = fakeProc({
    "/proc/1/ns/mnt": new Deno.errors.PermissionDenied("/proc/1/ns/mnt"),
    "/proc/42/ns/mnt": new Deno.errors.PermissionDenied("/proc/42/ns/mnt"),
  });
  await assert.rejects(() => namespacesFact(42, denied), Deno.errors.PermissionDenied);
  // One side unreadable (the process left between the two reads) is not "same" either.
  const gone = fakeProc({ "/proc/1/ns/mnt": "mnt:[1]" });
  await assert.rejects(() => namespacesFact(42, gone), Deno.errors.NotFound);
});
