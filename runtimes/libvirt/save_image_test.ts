import assert from "node:assert/strict";
import {
  buildSaveImage,
  embeddedXml,
  parseSaveHeader,
  rewriteSaveImage,
  SAVE_HEADER_BYTES,
  SaveImageRefused,
} from "./save_image.ts";

const STREAM = new TextEncoder().encode("QEVM the migration stream");

function withField(img: Uint8Array, offset: number, value: number): Uint8Array {
  const out = img.slice();
  new DataView(out.buffer).setUint32(offset, value, true);
  return out;
}

Deno.test("parseSaveHeader() refuses what libvirt would read unsafely or bcd cannot rewrite, naming the field", async (t) => {
  const good = buildSaveImage("<domain><name>a</name></domain>", true, STREAM);
  const rows: Array<[string, Uint8Array, RegExp]> = [
    ["a short file", good.subarray(0, 40), /shorter than its header/],
    [
      "another magic (a partial save)",
      new Uint8Array([...new TextEncoder().encode("LibvirtQemudPart"), ...good.subarray(16)]),
      /magic/,
    ],
    ["version 3", withField(good, 16, 3), /version 3/],
    ["a compressed image (libvirt would run a decompressor)", withField(good, 28, 1), /compressed/],
    ["data beyond 16 MiB", withField(good, 20, 17 * 1024 * 1024), /data is/],
    ["a cookie past the data", withField(good, 32, 10 * 1024 * 1024), /cookie offset/],
  ];
  for (const [what, bytes, msg] of rows) {
    await t.step(what, () => {
      assert.throws(() => parseSaveHeader(bytes), (e) => e instanceof SaveImageRefused && msg.test(e.message));
    });
  }
});

Deno.test("rewriteSaveImage() replaces the embedded definition and cookie in place, never moving the stream", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/memory.save`;
    const img = buildSaveImage("<domain><name>source</name><qemu:commandline/></domain>", false, STREAM);
    // A cookie after the definition, as libvirt writes one.
    const cookie = new TextEncoder().encode("<cookie><cpu/></cookie>");
    img.set(cookie, SAVE_HEADER_BYTES + 60);
    new DataView(img.buffer).setUint32(32, 60, true);
    await Deno.writeFile(file, img);
    await rewriteSaveImage(file, "<domain><name>target</name></domain>");
    const out = await Deno.readFile(file);
    assert.equal(out.length, img.length);
    const h = parseSaveHeader(out);
    assert.equal(h.cookieOffset, 0);
    assert.equal(h.wasRunning, false);
    const data = out.subarray(SAVE_HEADER_BYTES, SAVE_HEADER_BYTES + h.dataLen);
    assert.equal(embeddedXml(h, data), "<domain><name>target</name></domain>");
    assert.ok(!new TextDecoder().decode(data).includes("cookie"), "the cookie is gone");
    assert.deepEqual(out.subarray(SAVE_HEADER_BYTES + h.dataLen), STREAM);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("rewriteSaveImage() refuses a link, and a definition that does not fit the file's data", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/memory.save`;
    await Deno.writeFile(file, buildSaveImage("<domain/>", true, STREAM));
    await Deno.symlink(file, `${dir}/link.save`);
    await assert.rejects(rewriteSaveImage(`${dir}/link.save`, "<domain/>"), SaveImageRefused);
    await assert.rejects(
      rewriteSaveImage(file, `<domain>${"x".repeat(80 * 1024)}</domain>`),
      (e) => e instanceof SaveImageRefused && /does not fit/.test(e.message),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
