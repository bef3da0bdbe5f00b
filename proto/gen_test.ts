import assert from "node:assert/strict";
import { diffGenerated } from "./gen.ts";

// Regenerates proto/gen/ from the .proto sources with the pinned protobufjs CLI (fetched from npm on first use) and
// compares it with the committed code, so a .proto edit without `deno task proto` fails CI.
Deno.test("the committed proto/gen/ is what the .proto sources generate", async () => {
  const differ = await diffGenerated();
  assert.deepEqual(differ, [], `stale: ${differ.join(", ")}; run \`deno task proto\` and commit proto/gen/`);
});
