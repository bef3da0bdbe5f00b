import assert from "node:assert/strict";
import { cleanName } from "./bundle_name.ts";
import { UnsafeBundle, type UnsafeReason } from "./errors.ts";

/** Names a member may carry, one row per rule of seed 004's "traversal and containment", with the outcome. */
const ROWS: Array<[string, string | UnsafeReason]> = [
  ["etc/app.toml", "etc/app.toml"],
  ["./etc/app.toml", "etc/app.toml"],
  ["etc//app.toml", "etc/app.toml"],
  ["etc/./app.toml", "etc/app.toml"],
  ["etc/", "etc"],
  ["./", "."],
  [".", "."],
  ["..", "traversal"],
  ["../x", "traversal"],
  ["a/../b", "traversal"],
  ["a/..", "traversal"],
  ["/etc/passwd", "absolute"],
  ["//x", "absolute"],
  ["C:x", "drive"],
  ["c:\\x", "backslash"],
  ["C:/x", "drive"],
  ["a\\b", "backslash"],
  ["\\\\server\\share", "backslash"],
  ["", "bad-name"],
  ["a\0b", "bad-name"],
  ["a/" + "x".repeat(256), "bad-name"],
  ["x".repeat(255), "x".repeat(255)],
  ["é/ü.toml", "é/ü.toml"],
  ["a:b", "drive"],
  ["ab:c", "ab:c"],
  ["x/C:y", "x/C:y"],
  ["...", "..."],
  [".hidden", ".hidden"],
];

Deno.test("cleanName() cleans or refuses each name with its reason", async (t) => {
  for (const [raw, want] of ROWS) {
    await t.step(`${JSON.stringify(raw.length > 40 ? raw.slice(0, 40) + "…" : raw)} → ${want.slice(0, 40)}`, () => {
      let got: string;
      try {
        got = cleanName(raw);
      } catch (e) {
        assert.ok(e instanceof UnsafeBundle);
        got = e.reason;
      }
      assert.equal(got, want);
    });
  }
});
