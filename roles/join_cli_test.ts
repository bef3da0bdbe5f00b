import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;

Deno.test("`join` that cannot reach the gateway exits 1 with one line naming the reason, not an internal error", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/config.toml`, "");
    // Port 1 on loopback: nothing listens there, so the connection is refused.
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}roles/ramdisk.ts`,
        "join",
        "--config",
        `${dir}/config.toml`,
        "--data-dir",
        `${dir}/data`,
        "--token",
        "join-1",
        "--join-url",
        "http://127.0.0.1:1/v1/join",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, err);
    assert.match(err, /^bcd-ramdisk: join: join-unreachable: cannot reach http:\/\/127\.0\.0\.1:1\/v1\/join \(/);
    assert.ok(!/internal error|\n {4}at /.test(err), err);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
