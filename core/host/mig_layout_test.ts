import assert from "node:assert/strict";
import { MigLayoutRefused, type MigObserved, parseMigLayoutSettings, planMigLayout } from "./mig_layout.ts";
import { HostSettingsError } from "./units.ts";

const A = "GPU-aaaaaaaa-0000-4000-8000-000000000001";
const B = "GPU-bbbbbbbb-0000-4000-8000-000000000002";

const host = (a: MigObserved["gpus"][number]["instances"], managed: MigObserved["managed"] = []): MigObserved => ({
  gpus: [{ uuid: A, migEnabled: true, instances: a }, { uuid: B, migEnabled: true, instances: [] }],
  managed,
});

const rows: {
  name: string;
  want?: Record<string, string[]>;
  observed: MigObserved;
  holds?: Record<string, string>;
  steps?: unknown[];
  refused?: RegExp;
}[] = [
  {
    name: "unchanged layout: no steps",
    want: { [A]: ["3g.40gb", "1g.10gb"] },
    observed: host([{ gi: 1, profile: "3g.40gb", cis: [0] }, { gi: 9, profile: "1g.10gb", cis: [0] }]),
    steps: [],
  },
  {
    name: "an empty GPU: each instance made",
    want: { [A]: ["3g.40gb", "1g.10gb", "1g.10gb"] },
    observed: host([]),
    steps: [
      { op: "create", gpu: A, profile: "3g.40gb" },
      { op: "create", gpu: A, profile: "1g.10gb" },
      { op: "create", gpu: A, profile: "1g.10gb" },
    ],
  },
  {
    name: "one profile changed: only that instance removed and the new one made, removal first",
    want: { [A]: ["3g.40gb", "2g.20gb"] },
    observed: host([{ gi: 1, profile: "3g.40gb", cis: [0] }, { gi: 9, profile: "1g.10gb", cis: [0] }]),
    holds: { [`${A}/gi1/ci0`]: "alloc-kept" },
    steps: [{ op: "destroy", gpu: A, gi: 9, cis: [0] }, { op: "create", gpu: A, profile: "2g.20gb" }],
  },
  {
    name: "an instance to remove that a bound hold uses: refused, naming the hold",
    want: { [A]: ["3g.40gb"] },
    observed: host([{ gi: 1, profile: "3g.40gb", cis: [0] }, { gi: 9, profile: "1g.10gb", cis: [0] }]),
    holds: { [`${A}/gi9/ci0`]: "alloc-7" },
    refused: /gi9 \(1g\.10gb\) would be removed, but hold alloc-7 uses it/,
  },
  {
    name: "a GPU dropped from the list: the instances bcd made go, the others stay",
    want: { [B]: [] },
    observed: host([{ gi: 1, profile: "3g.40gb", cis: [0] }, { gi: 9, profile: "1g.10gb", cis: [0, 1] }], [
      { gpu: A, gi: 9 },
    ]),
    steps: [{ op: "destroy", gpu: A, gi: 9, cis: [0, 1] }],
  },
  {
    name: "the unit removed: exactly what bcd made is removed",
    observed: host([{ gi: 1, profile: "3g.40gb", cis: [0] }, { gi: 9, profile: "1g.10gb", cis: [0] }], [
      { gpu: A, gi: 1 },
    ]),
    steps: [{ op: "destroy", gpu: A, gi: 1, cis: [0] }],
  },
  {
    name: "the unit removed while a hold uses what bcd made: refused, naming the hold",
    observed: host([{ gi: 1, profile: "3g.40gb", cis: [0] }], [{ gpu: A, gi: 1 }]),
    holds: { [`${A}/gi1/ci0`]: "alloc-9" },
    refused: /hold alloc-9 uses it/,
  },
  {
    name: "a change on a GPU a hold uses whole: refused, naming the hold",
    want: { [A]: ["1g.10gb"] },
    observed: host([]),
    holds: { [A]: "alloc-whole" },
    refused: /hold alloc-whole uses it whole/,
  },
  {
    name: "a GPU this host lacks",
    want: { "GPU-cccccccc-0000-4000-8000-000000000003": ["1g.10gb"] },
    observed: host([]),
    refused: /is not on this host/,
  },
  {
    name: "a GPU with MIG mode off",
    want: { [A]: ["1g.10gb"] },
    observed: { gpus: [{ uuid: A, migEnabled: false, instances: [] }], managed: [] },
    refused: /MIG mode is off on GPU/,
  },
];

Deno.test("planMigLayout(): the minimal steps, row by row", async (t) => {
  for (const r of rows) {
    await t.step(r.name, () => {
      const desired = r.want === undefined ? undefined : parseMigLayoutSettings({
        gpus: Object.entries(r.want).map(([gpu, instances]) => ({ gpu, instances })),
      });
      const holds = new Map(Object.entries(r.holds ?? {}));
      if (r.refused) {
        assert.throws(
          () => planMigLayout(desired, r.observed, holds),
          (e) => e instanceof MigLayoutRefused && r.refused!.test(e.message),
        );
      } else assert.deepEqual(planMigLayout(desired, r.observed, holds), r.steps);
    });
  }
});

Deno.test("mig-layout settings: refused with the key named", async (t) => {
  const bad: [unknown, RegExp][] = [
    [{ gpus: [{ gpu: "0", instances: [] }] }, /settings\.gpus\[0\]\.gpu "0" is not a GPU UUID/],
    [{ gpus: [{ gpu: A, instances: ["3g.40gb; reboot"] }] }, /instances\[0\] .* is not a MIG profile/],
    [{ gpus: [{ gpu: A, instances: Array(8).fill("1g.10gb") }] }, /at most 7 profiles/],
    [{ gpus: [{ gpu: A, instances: [] }, { gpu: A, instances: [] }] }, /is listed twice/],
    [{ gpus: [{ gpu: A, instances: [], mode: "on" }] }, /unknown key settings\.gpus\[0\]\.mode/],
  ];
  for (const [raw, msg] of bad) {
    await t.step(JSON.stringify(raw).slice(0, 60), () => {
      assert.throws(
        () => parseMigLayoutSettings(raw as Record<string, unknown>),
        (e) => e instanceof HostSettingsError && msg.test(e.message),
      );
    });
  }
});
