/**
 * Every command line of README.md's `sh` blocks, as written, from source (`deno task …`, through the same task lines
 * `deno.json` holds) and from the bundled launchers (`dist/bcd-<role>/bcd-<role> …`, built by the test into a temp
 * dir). The lines are extracted from the README, so a README change that this table does not cover fails here.
 *
 * Each line is either run (its placeholder files made real: images by `qemu-img`, a bundle by GNU `tar`; a network
 * line against the testbed gateway on loopback) or, when it needs what a test must not take (the host's fixed system
 * paths, a root helper's socket at its fixed path, a listener outside loopback), checked up to argument parsing: the
 * line with `--help` appended, which parses every flag under the role's packaged permissions and stops there; the
 * row says why and which test runs it for real.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { hasQemuImg } from "../core/images/_qemu_img.ts";
import { TestbedGateway } from "../fixtures/testbed/gateway.ts";
import { readmeCommands } from "../fixtures/readme_commands.ts";
import { bundleRole } from "./build.ts";
import { type Executable, EXECUTABLES } from "./permissions.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DENO = Deno.execPath();
const PATH = `${dirname(DENO)}:${Deno.env.get("PATH") ?? ""}`;

/** How one README line is proved. */
type Plan =
  | { how: "run"; check: (r: Ran, ctx: Ctx) => void | Promise<void>; sub?: Record<string, string>; stdin?: "null" }
  | { how: "parse"; reason: string }
  | { how: "not-run"; reason: string };

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

interface Ctx {
  cwd: string;
  gw: TestbedGateway;
  env: Record<string, string>;
}

function _json(r: Ran): Record<string, unknown> {
  const lines = r.stdout.trim().split("\n");
  assert.equal(lines.length, 1, `one JSON object on stdout, got: ${r.stdout}\n${r.stderr}`);
  return JSON.parse(lines[0]!);
}

const DAEMON = "a daemon that needs a root helper on its fixed socket and the host's data dir";

/** One row per README command line. */
const PLANS: Record<string, Plan> = {
  "make demo": {
    how: "run",
    check: (r) => {
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout + r.stderr, /demo OK/);
    },
  },
  "make test": { how: "not-run", reason: "it runs this very test (every suite); CI runs it" },
  "make deb": {
    how: "not-run",
    reason: "builds three packages of ~45 MB with xz; deno task test:deb builds them (gzip -1) and installs them",
  },
  "sudo deno task helper serve --socket /run/bcd/helper.sock": {
    how: "parse",
    reason: "serves the fixed system socket /run/bcd/helper.sock; e2e_node_helper_test runs serve on a temp socket",
  },
  "deno task node run": { how: "parse", reason: `${DAEMON}; e2e_node_helper_test runs it beside a real helper` },
  "deno task node join --token TOKEN --join-url https://gateway.example/v1/join": {
    how: "parse",
    reason:
      "writes the host's /var/lib/bcd (the node's only data dir) and names a non-loopback gateway; the sim line " +
      "below joins the testbed for real",
  },
  "deno task node image check --format qcow2 disk.qcow2": {
    how: "run",
    check: (r) => {
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(_json(r), {
        ok: true,
        format: "qcow2",
        probed: true,
        version: 3,
        cluster_bits: 16,
        virtual_size: 1048576,
        backing_file: null,
        backing_format: null,
      });
    },
  },
  "deno task node image check-overlay --backing base.qcow2 --backing-format qcow2 overlay.qcow2": {
    how: "run",
    check: (r) => {
      assert.equal(r.code, 0, r.stderr);
      const j = _json(r);
      assert.deepEqual([j.ok, j.backing_file, j.backing_format], [true, "base.qcow2", "qcow2"]);
    },
  },
  "deno task node journal inspect --data-dir /var/lib/bcd": {
    how: "parse",
    reason: "reads the host's /var/lib/bcd; node_journal_cli_test inspects a real journal in a temp dir",
  },
  "deno task node journal reset-time-mark --data-dir /var/lib/bcd": {
    how: "parse",
    reason:
      "rewrites the host's /var/lib/bcd journal; node_journal_cli_test resets a real journal's mark in a temp dir",
  },
  "sudo deno task helper supervise --role node -- run": {
    how: "not-run",
    reason: "a supervisor of the host's /opt/bcd/current that runs until stopped (--help after -- is the agent's, " +
      "not its own); e2e_self_update_test runs supervise over a temp releases dir",
  },
  "deno task node doctor": {
    how: "parse",
    reason: "reads the host's /etc/bcd, /var/lib/bcd and helper socket; doctor_cli_test runs it beside a real helper",
  },
  "deno task site doctor --json": {
    how: "parse",
    reason: "reads the host's /var/lib/bcd-site and helper socket; doctor_cli_test runs it beside a real site helper",
  },
  "deno task sim join ...": {
    how: "run",
    sub: { "...": "--token {TOKEN} --join-url {JOIN_URL}" },
    check: (r) => {
      assert.equal(r.code, 0, r.stderr);
      assert.match(String(_json(r).node_id), /.+/);
    },
  },
  "deno task sim run": {
    how: "run",
    // Run until the testbed holds a session with the node the join line made (_runDaemon), then SIGTERM: a clean end.
    check: (r) => assert.equal(r.code, 0, r.stderr),
  },
  "deno task sim join --nodes 3 --tokens-file /tmp/bcd-sim/tokens.txt --join-url http://127.0.0.1:7410/v1/join": {
    how: "run",
    sub: { "/tmp/bcd-sim/tokens.txt": "{TOKENS}", "http://127.0.0.1:7410/v1/join": "{JOIN_URL}" },
    check: (r) => {
      assert.equal(r.code, 0, r.stderr);
      const j = _json(r);
      assert.equal(j.nodes, 3);
      assert.equal(new Set(j.node_ids as string[]).size, 3, "three nodes, three identities");
    },
  },
  "deno task sim run --nodes 3": {
    how: "run",
    // Run until the testbed holds a session with each node the fleet join made and the figures are out (_runFleet).
    check: (r) => {
      assert.equal(r.code, 0, r.stderr);
      const j = _json(r);
      assert.deepEqual([j.nodes, j.sessions], [3, 3]);
      assert.ok(Number(j.rss_per_node_bytes) > 0 && Number(j.rss_bytes) > Number(j.rss_base_bytes), r.stdout);
    },
  },
  "deno task site run": { how: "parse", reason: `${DAEMON}; e2e_roles_test runs it beside a real helper` },
  "deno task ramdisk run": { how: "parse", reason: `${DAEMON}; e2e_roles_test runs it beside a real helper` },
  "deno task guest serve": {
    how: "run",
    stdin: "null",
    check: (r) => assert.equal(r.code, 0, r.stderr), // the host closed the framing at once: a clean end
  },
  "deno task guest turns --unix /run/bcd-guest/turns.sock --vm-id UUID --turn-cmd ./turn.sh": {
    how: "parse",
    reason: "serves until stopped on the guest's fixed directory; agent_test serves turns on a temp unix socket",
  },
  "deno task guest turns --tcp 0.0.0.0:7070 --channel-key-file /etc/bcd/channel-key --vm-id UUID --turn-cmd ./turn.sh":
    {
      how: "parse",
      reason:
        "listens on 0.0.0.0 with the VM's key file (tests stay on loopback); guest_turns_cli_test runs turns on " +
        "127.0.0.1 port 0 with a key in a temp dir",
    },
  "deno task guest bundle check bundle.tar.gz": {
    how: "run",
    check: (r) => {
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(_json(r), { ok: true, members: 2, bytes: 4 });
    },
  },
  "deno task guest bundle install --root ./agent-config --version v1 bundle.tar.gz": {
    how: "run",
    check: async (r, ctx) => {
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(_json(r), { ok: true, root: "./agent-config", version: "v1" });
      assert.equal(await Deno.readTextFile(join(ctx.cwd, "agent-config/current/conf/a.toml")), "a=1\n");
    },
  },
  "deno task vm version": {
    how: "run",
    check: (r) => {
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual([_json(r).role, _json(r).kinds], ["vm", []]);
    },
  },
  ...Object.fromEntries(
    [
      "deno task vm stage /var/lib/bcd-vm/one --distro erofs:/images/distro.erofs --distro-identity UUID --upper scratch:/var/lib/bcd-vm/one/scratch.ext4",
      "deno task vm launch /var/lib/bcd-vm/one --guest-agent dist/bcd-guest/bcd-guest.js --distro erofs:/images/distro.erofs --distro-identity UUID --upper scratch:/var/lib/bcd-vm/one/scratch.ext4",
      "deno task vm probe /var/lib/bcd-vm/one mounts",
      "deno task vm stop /var/lib/bcd-vm/one",
    ].map((line) => [line, {
      how: "parse" as const,
      reason: "needs real images, a kernel and minutes of a VM under TCG; test:vm-layered runs each command for real",
    }]),
  ),
};

/** The argv a README line runs as, from source or from the bundle in `dist`. */
function _argv(line: string, dist: string | null, sub: Record<string, string>): string[] {
  let text = line;
  for (const [from, to] of Object.entries(sub)) text = text.replace(from, to);
  assert.ok(!/["'`$\\]/.test(text), `README line needs no shell quoting: ${line}`);
  let words = text.split(/\s+/);
  if (words[0] === "sudo") words = words.slice(1); // these tests run as root
  if (words[0] === "make") return ["make", ...words.slice(1)];
  assert.deepEqual(words.slice(0, 2), ["deno", "task"], line);
  const role = words[2] as Executable;
  assert.ok(EXECUTABLES.includes(role), line);
  if (dist === null) return [DENO, "task", "--quiet", `--config=${ROOT}deno.json`, role, ...words.slice(3)];
  return [`${dist}/bcd-${role}/bcd-${role}`, ...words.slice(3)];
}

async function _run(argv: string[], ctx: Ctx, stdin: "null" | "piped" = "null"): Promise<Ran> {
  const out = await new Deno.Command(argv[0]!, {
    args: argv.slice(1),
    cwd: argv[0] === "make" ? ROOT : ctx.cwd,
    env: ctx.env,
    stdin,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * Runs `sim run --nodes N` until the testbed holds a session with each of `nodeIds` and the fleet printed its figures,
 * then stops it with SIGTERM (a clean end).
 */
async function _runFleet(argv: string[], ctx: Ctx, nodeIds: readonly string[]): Promise<Ran> {
  const child = new Deno.Command(argv[0]!, {
    args: argv.slice(1),
    cwd: ctx.cwd,
    env: ctx.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const err = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  const line = (async () => {
    for (;;) {
      const r = await reader.read();
      if (r.done) return;
      out += r.value;
    }
  })();
  await ctx.gw.until(() => out.includes("\n"), "the fleet's figures on stdout");
  await ctx.gw.until(() => nodeIds.every((id) => ctx.gw.nodes.get(id)?.session !== undefined), "the fleet's sessions");
  child.kill("SIGTERM");
  const s = await child.status;
  await line;
  return { code: s.code, stdout: out, stderr: await err };
}

/** Runs the sim daemon until the testbed holds its session, then stops it with SIGTERM (a clean end). */
async function _runDaemon(argv: string[], ctx: Ctx, nodeId: string): Promise<Ran> {
  const child = new Deno.Command(argv[0]!, {
    args: argv.slice(1),
    cwd: ctx.cwd,
    env: ctx.env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const err = new Response(child.stderr).text();
  const ended = child.status.then((s) => s);
  const up = await Promise.race([
    ctx.gw.until(() => ctx.gw.nodes.get(nodeId)?.session !== undefined, `a session of ${nodeId}`).then(() => true),
    ended.then(() => false),
  ]);
  if (!up) assert.fail(`the daemon ended before the testbed held its session: ${await err}`);
  child.kill("SIGTERM");
  const s = await ended;
  return { code: s.code, stdout: "", stderr: await err };
}

async function _fixtures(cwd: string): Promise<void> {
  const qemu = (...args: string[]) => _run(["qemu-img", ...args], { cwd, env: { PATH }, gw: undefined! });
  for (
    const r of [
      await qemu("create", "-q", "-f", "qcow2", "disk.qcow2", "1M"),
      await qemu("create", "-q", "-f", "qcow2", "base.qcow2", "1M"),
      await qemu("create", "-q", "-f", "qcow2", "-u", "-b", "base.qcow2", "-F", "qcow2", "overlay.qcow2", "1M"),
    ]
  ) assert.equal(r.code, 0, r.stderr);
  await Deno.mkdir(join(cwd, "src/conf"), { recursive: true });
  await Deno.writeTextFile(join(cwd, "src/conf/a.toml"), "a=1\n");
  const tar = await _run(["tar", "-czf", "bundle.tar.gz", "-C", "src", "conf"], { cwd, env: { PATH }, gw: undefined! });
  assert.equal(tar.code, 0, tar.stderr);
}

const README = Deno.readTextFileSync(`${ROOT}README.md`);
const LINES = readmeCommands(README);
const HAS_QEMU_IMG = hasQemuImg();
const ROOT_USER = Deno.uid() === 0;
if (!HAS_QEMU_IMG) {
  console.log("skipping README command lines: `qemu-img` is not installed (Debian package `qemu-utils`)");
}
if (!ROOT_USER) console.log("skipping README command lines: the README runs the helper line with sudo; run as root");

Deno.test("every README command line has a row here, and every row is a README line", () => {
  assert.ok(LINES.length > 10, `the README's sh blocks hold ${LINES.length} command lines`);
  assert.deepEqual(LINES.filter((l) => !(l in PLANS)), [], "README lines without a row");
  assert.deepEqual(Object.keys(PLANS).filter((l) => !LINES.includes(l)), [], "rows that are no README line");
});

for (const variant of ["source", "bundle"] as const) {
  Deno.test({
    name: `README command lines work as written, ${
      variant === "source" ? "from source (deno task)" : "from the bundled launchers"
    }`,
    ignore: !HAS_QEMU_IMG || !ROOT_USER,
    async fn(t) {
      const cwd = await Deno.makeTempDir({ prefix: "bcd-readme-" });
      const dist = variant === "bundle" ? await Deno.makeTempDir({ prefix: "bcd-readme-dist-" }) : null;
      await Deno.mkdir("/tmp/bcd-sim", { recursive: true });
      const simDir = await Deno.makeTempDir({ dir: "/tmp/bcd-sim", prefix: "readme-" });
      const gw = await TestbedGateway.start();
      try {
        if (dist !== null) { for (const role of EXECUTABLES) await bundleRole(role, "readme-test", dist); }
        await _fixtures(cwd);
        await Deno.writeTextFile(join(simDir, "config.toml"), `data_dir = "${simDir}"\n`);
        await Deno.writeTextFile(join(simDir, "boot_id"), crypto.randomUUID() + "\n");
        // The sim's config and boot id live in its own write grant; BCD_CONFIG and BCD_BOOT_ID_PATH are in its flags.
        const ctx: Ctx = {
          cwd,
          gw,
          env: {
            PATH,
            BCD_CONFIG: join(simDir, "config.toml"),
            BCD_BOOT_ID_PATH: join(simDir, "boot_id"),
            // `deno task` keeps an INIT_CWD it inherits (as npm does); under `deno task test` that is the repository.
            INIT_CWD: cwd,
          },
        };
        let simNode = "";
        let fleetNodes: string[] = [];
        for (const line of LINES) {
          const plan = PLANS[line]!;
          if (plan.how === "not-run") {
            console.log(`README line not run: ${line} (${plan.reason})`);
            continue;
          }
          if (line.startsWith("make") && variant === "bundle") continue; // make lines are the same in both variants
          await t.step(line, async () => {
            if (plan.how === "parse") {
              const r = await _run([..._argv(line, dist, {}), "--help"], ctx);
              console.log(`README line checked up to argument parsing: ${line} (${plan.reason})`);
              assert.equal(r.code, 0, `${line} --help: ${r.stderr}`);
              const role = line.replace(/^sudo /, "").split(" ")[2];
              assert.match(r.stdout, new RegExp(`^bcd-${role} \\S+.*: `), r.stdout);
              return;
            }
            const sub: Record<string, string> = {};
            for (const [k, v] of Object.entries(plan.sub ?? {})) {
              sub[k] = v.replace("{TOKEN}", gw.ca.issueToken("node")).replace("{JOIN_URL}", gw.joinUrl);
              if (v === "{TOKENS}") {
                sub[k] = join(simDir, "tokens.txt");
                const tokens = [1, 2, 3].map(() => gw.ca.issueToken("node"));
                await Deno.writeTextFile(sub[k], tokens.join("\n") + "\n");
              }
            }
            const argv = _argv(line, dist, sub);
            const r = line === "deno task sim run"
              ? await _runDaemon(argv, ctx, simNode)
              : line === "deno task sim run --nodes 3"
              ? await _runFleet(argv, ctx, fleetNodes)
              : await _run(argv, ctx);
            if (line === "deno task sim join ...") simNode = String(_json(r).node_id);
            if (line.startsWith("deno task sim join --nodes")) fleetNodes = _json(r).node_ids as string[];
            await plan.check(r, ctx);
          });
        }
      } finally {
        await gw.stop();
        await Deno.remove(cwd, { recursive: true });
        await Deno.remove(simDir, { recursive: true });
        if (dist !== null) await Deno.remove(dist, { recursive: true });
      }
    },
  });
}
