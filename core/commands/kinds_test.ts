import assert from "node:assert/strict";
import { BCD_KINDS, DEFAULT_KIND_TIMEOUT_MS, KINDS, kindsForRole, lookupKind, ROLES, SEED_KINDS } from "./kinds.ts";

const SEED_URL = new URL("../../../shared/seeds/000_8770da62ed1e7f43.readable.md", import.meta.url);
const FIXTURE_URL = new URL("../../fixtures/seed/kinds_by_lane.md", import.meta.url);

/** The "Kinds by lane" section of the node daemon seed: from `### Kinds by lane` up to the next section. */
function kindsSection(text: string): string {
  const start = text.indexOf("### Kinds by lane");
  const end = text.indexOf("### Results and acknowledgements");
  assert.ok(start >= 0, "the text has a Kinds by lane section");
  return end > start ? text.slice(start, end) : text.slice(start);
}

/** The seed's "Kinds by lane" table, parsed from the repo's copy of it (fixtures/seed/), which a test below keeps
 * equal to the seed in ../shared when that checkout is present. */
function seedKindRows(): { lane: string; kinds: string[]; roles: string[]; flags: string[] }[] {
  const rows = [];
  for (const line of kindsSection(Deno.readTextFileSync(FIXTURE_URL)).split("\n")) {
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

let seedText: string | undefined;
try {
  seedText = Deno.readTextFileSync(SEED_URL);
} catch (e) {
  if (!(e instanceof Deno.errors.NotFound)) throw e;
}

Deno.test({
  name: "fixtures/seed/kinds_by_lane.md is the seed's Kinds by lane section, word for word",
  ignore: seedText === undefined,
  fn() {
    assert.equal(Deno.readTextFileSync(FIXTURE_URL), kindsSection(seedText!));
  },
});
if (seedText === undefined) {
  console.log(`kinds_test: ${SEED_URL.pathname} is absent; the kinds table is checked against the repo's copy only`);
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

Deno.test("the registry is the seed's table word for word, then bcd's own kinds, which the seed's table lacks", () => {
  const seedKinds = rows.flatMap((r) => r.kinds).sort();
  assert.deepEqual(SEED_KINDS.map((k) => k.kind).sort(), seedKinds);
  assert.deepEqual(KINDS.map((k) => k.kind), [...SEED_KINDS, ...BCD_KINDS].map((k) => k.kind));
  for (const k of BCD_KINDS) assert.ok(!seedKinds.includes(k.kind), `${k.kind} has a seed row`);
});

Deno.test("instance.migrate: bulk lane, node role, no flags (not retry-safe, not destructive), the default timeout", () => {
  const k = lookupKind("instance.migrate");
  assert.ok(k);
  assert.equal(k.lane, "bulk");
  assert.deepEqual(k.roles, ["node"]);
  assert.deepEqual(k.flags, []);
  assert.equal(k.retrySafe, false);
  assert.equal(k.destructive, false);
  assert.equal(k.timeoutMs, DEFAULT_KIND_TIMEOUT_MS);
});
