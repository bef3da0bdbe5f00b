import assert from "node:assert/strict";
import { DEFAULT_KIND_TIMEOUT_MS, kindsForRole, lookupKind, ROLES } from "./kinds.ts";

/** The seed's "Kinds by lane" table, parsed from the spec itself so a drift in either shows up here. */
function seedKindRows(): { lane: string; kinds: string[]; roles: string[]; flags: string[] }[] {
  const text = Deno.readTextFileSync(
    new URL("../../../shared/seeds/000_8770da62ed1e7f43.readable.md", import.meta.url),
  );
  const start = text.indexOf("### Kinds by lane");
  const end = text.indexOf("### Results and acknowledgements");
  assert.ok(start > 0 && end > start, "the seed has a Kinds by lane section");
  const rows = [];
  for (const line of text.slice(start, end).split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    // | lane | kind(s) | roles | flags |
    if (cells.length < 6 || !/^`(control|provision|bulk)`$/.test(cells[1]!)) continue;
    const kinds = [...cells[2]!.matchAll(/`([a-zA-Z.]+)`/g)].map((m) => m[1]!);
    const roles = cells[3]!.split(",").map((r) => r.trim());
    const flagText = cells[4]!.replace(/\(.*$/, "").replace(/;.*$/, "").trim();
    const flags = flagText === "none" ? [] : flagText.split(",").map((f) => f.trim()).filter((f) => f !== "");
    rows.push({ lane: cells[1]!.replaceAll("`", ""), kinds, roles, flags });
  }
  return rows;
}

const rows = seedKindRows();

Deno.test("the seed's kinds table parses into 17 rows naming 20 kinds", () => {
  assert.equal(rows.length, 17);
  assert.equal(rows.flatMap((r) => r.kinds).length, 20);
});

Deno.test("every row of the seed's kinds table is registered with its lane, roles and flags", async (t) => {
  for (const row of rows) {
    for (const kind of row.kinds) {
      await t.step(`${row.lane} ${kind}`, () => {
        const k = lookupKind(kind);
        assert.ok(k, `${kind} is registered`);
        assert.equal(k.lane, row.lane);
        assert.deepEqual([...k.roles].sort(), [...row.roles].sort());
        assert.deepEqual([...k.flags], row.flags);
        assert.equal(k.retrySafe, row.flags.includes("retry-safe"));
        assert.equal(k.attested, row.flags.includes("attested"));
        assert.equal(k.destructive, row.flags.includes("destructive"));
        assert.equal(k.selfTerminating, row.flags.includes("self-terminating"));
      });
    }
  }
});

Deno.test("the seed's not-retry-safe list agrees with the registry", () => {
  for (
    const kind of [
      "disk.wipe",
      "deploy.image",
      "boot.kexec",
      "bmc.power",
      "bmc.rotate",
      "bmc.firmware",
      "bmc.storage",
      "site.httpProxy",
      "instance.snapshot",
      "gpu.reset",
    ]
  ) {
    assert.equal(lookupKind(kind)?.retrySafe, false, kind);
  }
});

Deno.test("built-in timeouts follow §Timeouts", () => {
  const min = 60_000;
  const want: Record<string, number> = {
    "diag.nvml": 2 * min,
    "inventory.refresh": 2 * min,
    "gpu.reset": 5 * min,
    "logs.collect": 15 * min,
    "node.reboot": 15 * min,
    "site.httpProxy": min,
    "bmc.query": 2 * min,
    "bmc.boot": 2 * min,
    "boot.prepareRamdisk": 2 * min,
    "boot.cleanUp": 2 * min,
    "bmc.power": 5 * min,
    "bmc.rotate": 5 * min,
    "boot.kexec": 15 * min,
    "bmc.firmware": 60 * min,
    "bmc.storage": 60 * min,
    "diag.dcgm": 60 * min,
    "deploy.image": 60 * min,
    "disk.wipe": 360 * min,
  };
  for (const [kind, ms] of Object.entries(want)) assert.equal(lookupKind(kind)?.timeoutMs, ms, kind);
  assert.equal(DEFAULT_KIND_TIMEOUT_MS, 15 * min);
});

Deno.test("a kind outside a role is not registered for it; sim mirrors node; guest has none", () => {
  assert.ok(!kindsForRole("node").some((k) => k.kind === "disk.wipe"));
  assert.ok(kindsForRole("ramdisk").some((k) => k.kind === "disk.wipe"));
  assert.deepEqual(kindsForRole("sim"), kindsForRole("node"));
  assert.deepEqual(kindsForRole("guest"), []);
  assert.deepEqual([...ROLES], ["node", "site", "ramdisk", "guest", "sim"]);
});
