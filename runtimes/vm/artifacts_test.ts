import assert from "node:assert/strict";
import { join } from "node:path";
import { ArtifactsInvalid, identityDifferences, loadArtifacts, parseSums } from "./artifacts.ts";

const A = "a".repeat(64);
const B = "b".repeat(64);

Deno.test("the runtime identity names each artifact by its recorded digest, the initramfs with the guest agent's build", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "SHA256SUMS"), `${A}  vmlinuz\n${B} *initrd.img\n`);
    const one = await loadArtifacts(dir, "0.1.0");
    assert.deepEqual(one.identity, { kernel: `sha256:${A}`, initramfs: `sha256:${B}+bcd-guest/0.1.0` });
    const other = await loadArtifacts(dir, "0.2.0");
    assert.deepEqual(identityDifferences(one.identity, other.identity), ["initramfs"]);
    assert.deepEqual(identityDifferences(one.identity, one.identity), []);
    await assert.rejects(loadArtifacts(dir, "has space"), RangeError);
    await Deno.writeTextFile(join(dir, "SHA256SUMS"), `${A}  vmlinuz\n`);
    await assert.rejects(loadArtifacts(dir, "0.1.0"), /records no digest for initrd.img/);
    await Deno.remove(join(dir, "SHA256SUMS"));
    await assert.rejects(loadArtifacts(dir, "0.1.0"), ArtifactsInvalid);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseSums() refuses a malformed line", () => {
  assert.throws(() => parseSums("abc  vmlinuz\n"), ArtifactsInvalid);
});
