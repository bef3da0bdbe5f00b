/**
 * `deno task test:access`: the access section converged onto a real sshd, proven with a real ssh client.
 *
 * `ssh-keygen` makes a user CA and certificates; the access converger runs over the node's helper port
 * (`HelperAccessHost`) and an in-process helper whose `[access] ssh_dir` is a temp directory
 * (`SshdAccessFiles`, reload = SIGHUP to the pid in the test sshd's pid file); an sshd started by the test on a
 * loopback port (`-D`, stopped by its PID) reads that directory's config. Then: a certificate for this node's
 * principal logs in; one for another node's principal is refused; once its serial is revoked the same certificate is
 * refused (KRL); an empty section removes the trust and the login fails. sshd's reloads are counted from its own log
 * ("Received SIGHUP") and from the helper: one per drop-in change, none on an unchanged pass.
 *
 * @module
 */
import assert from "node:assert/strict";
import { AccessConverger } from "../../core/access/mod.ts";
import { ConditionSet } from "../../core/converge/conditions.ts";
import { ConvergenceEngine } from "../../core/converge/engine.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { HelperAccessHost } from "../helper/access_port.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { ignoreWithoutSshd, makeSshDir, SSHD, type SshDir } from "./sshd_testing.ts";
import { SshdAccessFiles } from "./sshd_files.ts";

const NODE = "n1";

async function _run(bin: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  const o = await new Deno.Command(bin, { args, stdin: "null", stdout: "piped", stderr: "piped" }).output();
  const d = new TextDecoder();
  return { code: o.code, out: d.decode(o.stdout), err: d.decode(o.stderr) };
}

async function _must(bin: string, args: string[]): Promise<void> {
  const r = await _run(bin, args);
  if (r.code !== 0) throw new Error(`${bin} ${args.join(" ")} exited ${r.code}: ${r.err}`);
}

/** A user key with a certificate signed by `ca` for `principal` with `serial`. */
async function _cert(dir: string, ca: string, name: string, principal: string, serial: number): Promise<string> {
  const key = `${dir}/${name}`;
  await _must("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key]);
  await _must("ssh-keygen", ["-q", "-s", ca, "-I", name, "-n", principal, "-z", String(serial), `${key}.pub`]);
  return key;
}

/** A free loopback port (bound, read, released). */
function _freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** The sshd under test, started with `-D` and stopped by its PID. */
class _Sshd {
  readonly #child: Deno.ChildProcess;
  constructor(readonly ssh: SshDir, readonly port: number, readonly log: string) {
    this.#child = new Deno.Command(SSHD, {
      args: ["-D", "-f", ssh.sshdConfig, "-o", `Port=${port}`, "-o", "ListenAddress=127.0.0.1", "-E", log],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  }
  get pid(): number {
    return this.#child.pid;
  }
  async lines(re: RegExp): Promise<number> {
    const t = await Deno.readTextFile(this.log).catch((e) => {
      if (e instanceof Deno.errors.NotFound) return "";
      throw e;
    });
    return t.split("\n").filter((l) => re.test(l)).length;
  }
  /** Waits until sshd has said it listens `n` times (once at start, once after each reload), or it exits. */
  async listening(n: number): Promise<void> {
    const deadline = Date.now() + 30_000;
    while ((await this.lines(/Server listening on 127\.0\.0\.1/)) < n) {
      if (Date.now() > deadline) {
        throw new Error(`sshd did not listen ${n} times: ${await Deno.readTextFile(this.log)}`);
      }
      await new Promise((r) => setTimeout(r, 20)); // polling sshd's log for its line: the event we wait on
    }
  }
  async stop(): Promise<void> {
    try {
      Deno.kill(this.#child.pid, "SIGTERM");
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    await this.#child.status;
  }
}

Deno.test({
  name: "test:access: a real sshd trusts exactly what the access section says, reloading only on drop-in changes",
  ignore: ignoreWithoutSshd("test:access"),
  async fn(t) {
    const ssh = await makeSshDir();
    const keys = await Deno.makeTempDir({ prefix: "bcd-access-keys-" });
    const files = new SshdAccessFiles({
      sshDir: ssh.dir,
      sshdConfig: ssh.sshdConfig,
      sshd: SSHD,
      reload: { pidFile: ssh.pidFile },
    });
    const helper = await startTestHelper({ access: files });
    const conv = new AccessConverger({ host: new HelperAccessHost(helper.client), nodeId: NODE });
    const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger(), conditions: new ConditionSet() });
    const sshd = new _Sshd(ssh, _freePort(), `${ssh.dir}/sshd.log`);
    let gen = 0;
    const converge = async (access: Record<string, unknown>) => {
      engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { access } });
      const s = (await engine.pass()).sections.find((x) => x.section === "access")!;
      assert.equal(s.state, "CONVERGED", `${s.reason}: ${s.message}`);
    };
    const login = async (key: string) => {
      const r = await _run("ssh", [
        "-F",
        "/dev/null",
        "-i",
        key,
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "ConnectTimeout=20",
        "-p",
        String(sshd.port),
        "root@127.0.0.1",
        "echo",
        "bcd-login-ok",
      ]);
      return r.code === 0 && r.out.trim() === "bcd-login-ok";
    };
    const sighups = () => sshd.lines(/Received SIGHUP/);
    try {
      await sshd.listening(1);
      await _must("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "bcd-test-ca", "-f", `${keys}/ca`]);
      const ca = (await Deno.readTextFile(`${keys}/ca.pub`)).trim();
      const mine = await _cert(keys, `${keys}/ca`, "mine", `root@${NODE}`, 11);
      const other = await _cert(keys, `${keys}/ca`, "other", "root@n2", 12);
      const section = { ssh_ca_keys: [ca], principals: [`root@${NODE}`, "root@n2"], revoked_serials: [5] };

      await t.step("before any section, the CA is not trusted", async () => {
        assert.equal(await login(mine), false);
      });
      await t.step("this node's principal logs in; another node's is refused; one reload", async () => {
        await converge(section);
        await sshd.listening(2);
        assert.equal(files.reloads, 1);
        assert.equal(await sighups(), 1);
        assert.equal(await login(mine), true, await Deno.readTextFile(sshd.log));
        assert.equal(await login(other), false);
      });
      await t.step("an unchanged pass reloads nothing", async () => {
        await converge(section);
        assert.equal(files.reloads, 1);
        assert.equal(await sighups(), 1);
        assert.equal(await login(mine), true);
      });
      await t.step("the certificate's serial revoked: the KRL refuses it, without a reload", async () => {
        await converge({ ...section, revoked_serials: [5, 11] });
        assert.equal(await login(mine), false);
        assert.match(await Deno.readTextFile(sshd.log), /revoked/i);
        assert.equal(files.reloads, 1);
        assert.equal(await sighups(), 1);
      });
      await t.step("an empty section removes the trust and reloads once", async () => {
        await converge({ ...section, revoked_serials: [] });
        assert.equal(await login(mine), true, "the serial unrevoked logs in again");
        await converge({});
        await sshd.listening(3);
        assert.equal(files.reloads, 2);
        assert.equal(await sighups(), 2);
        assert.equal(await login(mine), false);
        await converge({});
        assert.equal(files.reloads, 2, "nothing left to remove: no reload");
      });
    } finally {
      await sshd.stop();
      await helper.close();
      await ssh.cleanup();
      await Deno.remove(keys, { recursive: true });
    }
  },
});
