import assert from "node:assert/strict";
import { ConfigError, loadAgentConfig } from "./mod.ts";
import { JOURNAL_DEFAULT_MAX_BYTES, JOURNAL_DEFAULT_MAX_UNACKED_EVENTS } from "../journal/mod.ts";

Deno.test("an empty config resolves to the defaults", () => {
  const c = loadAgentConfig("");
  assert.equal(c.dataDir, "/var/lib/bcd");
  assert.equal(c.journal.maxBytes, JOURNAL_DEFAULT_MAX_BYTES);
  assert.equal(c.journal.maxUnackedEvents, JOURNAL_DEFAULT_MAX_UNACKED_EVENTS);
  assert.equal(c.commands.unbatchedDestructivePerHour, 0);
  assert.equal(c.devices.cdiDir, "/etc/cdi");
  assert.equal(c.instances.balloonFloorPercent, 50);
  assert.equal(c.host.units, true);
  assert.equal(c.log.level, "info");
  assert.equal(c.helper.libvirtDynamicOwnership, false, "the seed's deployment: libvirt's dynamic_ownership = 0");
});

Deno.test("a full config resolves every key it sets", () => {
  const c = loadAgentConfig(`
data_dir = "/srv/bcd"
node_id = "n-1"
[gateway]
url = "wss://gw.example/session"
[log]
level = "debug"
[journal]
max_bytes = 1048576
max_unacked_events = 500
[commands]
unbatched_destructive_per_hour = 2
[devices]
cdi_dir = "/tmp/cdi"
[host]
units = false
[instances]
balloon_floor_percent = 70
[helper]
socket = "/run/bcd/helper.sock"
node_group = "bcd"
instance_bridges = ["br0"]
libvirt_dynamic_ownership = true
`);
  assert.equal(c.dataDir, "/srv/bcd");
  assert.equal(c.gateway.url, "wss://gw.example/session");
  assert.equal(c.journal.maxBytes, 1048576);
  assert.equal(c.journal.maxUnackedEvents, 500);
  assert.equal(c.commands.unbatchedDestructivePerHour, 2);
  assert.equal(c.devices.cdiDir, "/tmp/cdi");
  assert.equal(c.host.units, false);
  assert.equal(c.instances.balloonFloorPercent, 70);
  assert.deepEqual(c.helper.instanceBridges, ["br0"]);
  assert.equal(c.helper.socket, "/run/bcd/helper.sock");
  assert.equal(c.helper.nodeGroup, "bcd");
  assert.equal(c.helper.libvirtDynamicOwnership, true);
});

function refusal(source: string): ConfigError {
  try {
    loadAgentConfig(source);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  assert.fail(`config was accepted:\n${source}`);
}

Deno.test("every bad input gives its own clear error naming the key and line", async (t) => {
  const cases: { name: string; source: string; key: string | undefined; line: number | undefined; text: RegExp }[] = [
    { name: "unknown top-level key", source: `data_dir = "/x"\nbogus = 1`, key: "bogus", line: 2, text: /unknown key/ },
    {
      name: "unknown nested key",
      source: `[journal]\nmax_bytes = 10\nmax_evnts = 3`,
      key: "journal.max_evnts",
      line: 3,
      text: /unknown key/,
    },
    { name: "unknown table", source: `\n[gpus]\nx = 1`, key: "gpus", line: 2, text: /unknown key/ },
    {
      name: "raised max_bytes",
      source: `[journal]\nmax_bytes = 67108865`,
      key: "journal.max_bytes",
      line: 2,
      text: /raises the bound 67108864/,
    },
    {
      name: "raised max_unacked_events",
      source: `[journal]\n\nmax_unacked_events = 20000`,
      key: "journal.max_unacked_events",
      line: 3,
      text: /raises the bound 10000/,
    },
    {
      name: "relative data_dir",
      source: `data_dir = "var/lib/bcd"`,
      key: "data_dir",
      line: 1,
      text: /must be absolute/,
    },
    {
      name: "relative nested path",
      source: `[devices]\ncdi_dir = "./cdi"`,
      key: "devices.cdi_dir",
      line: 2,
      text: /must be absolute/,
    },
    { name: "wrong type string", source: `data_dir = 5`, key: "data_dir", line: 1, text: /expected a path string/ },
    {
      name: "wrong type int",
      source: `[journal]\nmax_bytes = "big"`,
      key: "journal.max_bytes",
      line: 2,
      text: /integer/,
    },
    { name: "wrong type bool", source: `[host]\nunits = "no"`, key: "host.units", line: 2, text: /true or false/ },
    { name: "table expected", source: `journal = 3`, key: "journal", line: 1, text: /expected a table/ },
    { name: "bad log level", source: `[log]\nlevel = "loud"`, key: "log.level", line: 2, text: /expected one of/ },
    { name: "negative", source: `[journal]\nmax_bytes = -1`, key: "journal.max_bytes", line: 2, text: /negative/ },
    { name: "bad URL", source: `[gateway]\nurl = "ftp://x"`, key: "gateway.url", line: 2, text: /scheme/ },
    {
      name: "balloon floor out of range",
      source: `[instances]\nballoon_floor_percent = 5`,
      key: "instances.balloon_floor_percent",
      line: 2,
      text: /between 10 and 100/,
    },
    {
      name: "fleet config URL in plain http to another host",
      source: `[instances]\nagent_config_url = "http://cp.example/v1/agent-config"`,
      key: "instances.agent_config_url",
      line: 2,
      text: /must be https/,
    },
    { name: "not TOML", source: `data_dir = `, key: undefined, line: 1, text: /not valid TOML/ },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const e = refusal(c.source);
      assert.equal(e.key, c.key);
      assert.equal(e.line, c.line);
      assert.match(e.message, c.text);
      if (c.key !== undefined) assert.ok(e.message.includes(c.key), e.message);
    });
  }
});

Deno.test("journal bounds may be lowered", () => {
  const c = loadAgentConfig(`[journal]\nmax_bytes = 1024\nmax_unacked_events = 1`);
  assert.equal(c.journal.maxBytes, 1024);
  assert.equal(c.journal.maxUnackedEvents, 1);
});

Deno.test("[helper] node_group takes a group name or a gid and refuses anything else, with its line", () => {
  assert.equal(loadAgentConfig('[helper]\nnode_group = "bcd-node"').helper.nodeGroup, "bcd-node");
  assert.equal(loadAgentConfig('[helper]\nnode_group = "998"').helper.nodeGroup, "998");
  assert.equal(loadAgentConfig("").helper.nodeGroup, undefined);
  for (const bad of ['"root:x"', '"../etc"', '""', '"a b"']) {
    assert.throws(
      () => loadAgentConfig(`[helper]\nnode_group = ${bad}`),
      (e) => e instanceof ConfigError && e.key === "helper.node_group" && e.line === 2,
      bad,
    );
  }
  assert.throws(() => loadAgentConfig("[helper]\nnode_group = 998"), ConfigError);
  assert.throws(() => loadAgentConfig('[helper]\nsocket = "helper.sock"'), /must be absolute/);
});

Deno.test("[helper] role names the agent role the helper serves: node, site or ramdisk, unset by default", () => {
  for (const role of ["node", "site", "ramdisk"]) {
    assert.equal(loadAgentConfig(`[helper]\nrole = "${role}"`).helper.role, role);
  }
  assert.equal(loadAgentConfig("").helper.role, undefined);
  for (const bad of ['"guest"', '"sim"', '"helper"', '""', '"Node"']) {
    assert.throws(
      () => loadAgentConfig(`[helper]\nrole = ${bad}`),
      (e) =>
        e instanceof ConfigError && e.key === "helper.role" && e.line === 2 && /node, site, ramdisk/.test(e.message),
      bad,
    );
  }
  assert.throws(() => loadAgentConfig("[helper]\nrole = 1"), ConfigError);
});

Deno.test("[site] boot_listen is host:port, boot_url a URL without its trailing slash, both unset by default", () => {
  const none = loadAgentConfig("").site;
  assert.deepEqual([none.bootListen, none.bootUrl, none.caFile], [undefined, undefined, undefined]);
  const s = loadAgentConfig(
    '[site]\nboot_listen = "[fd00::1]:8080"\nboot_url = "http://boot.site.example:8080/"\nca_file = "/etc/bcd/mirror-ca.pem"',
  ).site;
  assert.deepEqual([s.bootListen, s.bootUrl, s.caFile], [
    "[fd00::1]:8080",
    "http://boot.site.example:8080",
    "/etc/bcd/mirror-ca.pem",
  ]);
  for (const bad of ["10.0.0.1", "fd00::1:8080", ":8080", "10.0.0.1:port"]) {
    assert.throws(
      () => loadAgentConfig(`[site]\nboot_listen = "${bad}"`),
      (e) => e instanceof ConfigError && e.key === "site.boot_listen" && e.line === 2,
      bad,
    );
  }
});
