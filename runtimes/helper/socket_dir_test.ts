/** The helper's socket directory is its own or the helper does not start (issue 27, item 7), with nothing changed. */
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import type { HelperBackends } from "./backends.ts";
import { HelperServer } from "./server.ts";
import { prepareSocketDir, SocketDirRefused } from "./socket_dir.ts";

const root = Deno.uid() === 0;
const server = () =>
  new HelperServer({ bootId: () => Promise.resolve("b") } as unknown as HelperBackends, { log: silentLogger() });

async function withTemp(f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-helper-sockdir-" });
  try {
    await f(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("listen refuses a shared world-writable (1777) directory and leaves its mode alone", async () => {
  await withTemp(async (dir) => {
    const shared = `${dir}/shared`;
    await Deno.mkdir(shared);
    await Deno.chmod(shared, 0o1777);
    await assert.rejects(
      server().listen(`${shared}/h.sock`),
      (e) => e instanceof SocketDirRefused && /not the helper's own: .*mode 1777/.test(e.message),
    );
    assert.equal((await Deno.stat(shared)).mode! & 0o7777, 0o1777, "the directory's mode is unchanged");
    await assert.rejects(Deno.lstat(`${shared}/h.sock`), Deno.errors.NotFound, "no socket was made");
  });
});

Deno.test({
  name: "listen refuses a directory another user owns (who could swap the socket), and changes nothing",
  ignore: !root && (console.error("skipped: chown to another uid needs root"), true),
  fn: async () => {
    await withTemp(async (dir) => {
      const theirs = `${dir}/theirs`;
      await Deno.mkdir(theirs, { mode: 0o750 });
      await Deno.chown(theirs, 4242, 4242);
      await assert.rejects(
        server().listen(`${theirs}/h.sock`),
        (e) => e instanceof SocketDirRefused && /owned by uid 4242/.test(e.message),
      );
      const st = await Deno.stat(theirs);
      assert.equal(st.uid, 4242);
      assert.equal(st.gid, 4242);
    });
  },
});

Deno.test("listen refuses a socket directory that is a link, or under a world-writable directory without the sticky bit", async () => {
  await withTemp(async (dir) => {
    await Deno.mkdir(`${dir}/real`, { mode: 0o750 });
    await Deno.symlink(`${dir}/real`, `${dir}/link`);
    await assert.rejects(
      server().listen(`${dir}/link/h.sock`),
      (e) => e instanceof SocketDirRefused && /link is a symbolic link/.test(e.message),
    );
    await Deno.mkdir(`${dir}/open`);
    await Deno.chmod(`${dir}/open`, 0o777);
    await assert.rejects(
      prepareSocketDir(`${dir}/open/sock`),
      (e) => e instanceof SocketDirRefused && /open is world-writable and not sticky/.test(e.message),
    );
    await assert.rejects(Deno.lstat(`${dir}/open/sock`), Deno.errors.NotFound, "nothing was made under it");
  });
});

Deno.test("the helper makes its own directory 0750 and takes it again after a restart", async () => {
  await withTemp(async (dir) => {
    const s = server();
    const first = await s.listen(`${dir}/run/sock/h.sock`);
    await first.close();
    assert.equal((await Deno.stat(`${dir}/run/sock`)).mode! & 0o7777, 0o750);
    const again = await s.listen(`${dir}/run/sock/h.sock`);
    await again.close();
  });
});
